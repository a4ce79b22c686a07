/*
 * flavor.h: `abxlua serve --flavor NAME`: the wire differences of the E2B-compatible platforms
 * the local platform can reproduce, as one table the route handlers consult.
 *
 * Facts and their sources:
 *   e2b              today's behaviour (docs/protocol/e2b-control-plane.md,
 *                    docs/protocol/e2b-v2-and-peers.md §1).
 *   alicloud-fc      Alibaba FC Agent Sandbox: docs/protocol/e2b-control-plane.md §8.1
 *                    compatibility table.
 *   alicloud-express Alibaba Agent Sandbox Flash edition: docs/protocol/e2b-control-plane.md §8.1.
 *   acs              ACS agent sandbox = OpenKruise sandbox-manager:
 *                    docs/protocol/e2b-v2-and-peers.md §5 "OpenKruise agents",
 *                    docs/protocol/e2b-control-plane.md §8.1 (path route).
 *   cubesandbox      CubeSandbox CubeAPI: docs/protocol/e2b-v2-and-peers.md §5 "CubeSandbox".
 *   opensandbox      OpenSandbox: not E2B-compatible; its own lifecycle API under /v1
 *                    (opensandbox.h; opensandbox-group/OpenSandbox
 *                    specs/sandbox-lifecycle.yml @3bb6fad; docs/protocol/e2b-v2-and-peers.md §4)
 *                    and OpenSandbox's execd (envd's execd, platform/envd/execd.c).
 * Where the reference gives no status or body (Alibaba's allowlist refusal, every platform's
 * credential refusal except E2B's), the local answer is E2B's {code, message} shape with the
 * status named in the field's comment, and docs/PLATFORM.md "Flavours" says it is ours.
 */
#ifndef ABX_UTIL_FLAVOR_H
#define ABX_UTIL_FLAVOR_H

#include <stddef.h>

/* The port of OpenSandbox's execd (OpenSandbox components/execd/pkg/flag/parser.go ServerPort =
 * 44772). */
#define ABX_EXECD_PORT_STR "44772"

/* The API families a flavour can serve: E2B's wire, or OpenSandbox's own (not a variant of
 * E2B's). */
enum abx_api_family { ABX_FAMILY_E2B, ABX_FAMILY_OPENSANDBOX };

struct abx_flavor {
  const char *name;
  /* "METHOD /pattern" entries of the route table (api.c) this platform does not serve: 404. */
  const char *const *missing;
  /* A second path prefix the control plane is also served under, or NULL
   * (OpenKruise "/kruise/api", CubeSandbox "/cubeapi/v1"; docs/protocol/e2b-v2-and-peers.md §5). */
  const char *prefix;
  /* 1: X-API-Key checked (E2B's 401s); 0: any key and none accepted (CubeSandbox quickstart:
   * "any E2B_API_KEY", docs/protocol/e2b-v2-and-peers.md §5). */
  int check_key;
  /* TTL of create and POST /timeout, seconds: valid min..max, else 400; v1 create default;
   * timeout 0 on create means the default (OpenKruise: 0 → 300). */
  long long ttl_min, ttl_max, v1_default, zero_is_default;
  /* POST /timeout never shortens the TTL (OpenKruise AGENTS.md "deadline-extending operations
   * must not shorten"). */
  int timeout_extends_only;
  /* A resume (or connect of a paused sandbox) lives at least this long, s (OpenKruise: 300). */
  long long resume_min_ttl;
  /* connect of a running sandbox extends its TTL (E2B yes; CubeSandbox no). */
  int connect_extends;
  /* connect that resumed a paused sandbox: 201 (E2B) or 200 (CubeSandbox). */
  unsigned connect_resumed_status;
  /* POST /resume: 201 with the Sandbox (E2B, CubeSandbox) or 204 without a body (OpenKruise). */
  unsigned resume_status;
  /* Create passes only templateID, timeout, metadata and network; envVars, autoPause(+Memory),
   * autoResume, volumeMounts, secure and mcp are parsed and dropped (CubeSandbox). */
  int create_ignores_extras;
  /* Tokens in create/connect answers always null and envdVersion this constant, or NULL
   * (CubeSandbox "0.2.0"). */
  const char *const_envd_version;
  /* Pause and resume need an allowlist the local account is not on: 403 (Alibaba; the status
   * and message are ours, the reference gives none). */
  int pause_needs_allowlist;
  /* POST /sandboxes/{id}/snapshots needs the same allowlist (Flash: "allowlist and microVM
   * runtime only"). */
  int snapshot_needs_allowlist;
  /* volumeMounts on create refused with 400 (Alibaba: volumes "not compatible"; the message is
   * ours). */
  int no_volumes;
  /* Metrics rows carry CPU and memory only; disk fields are 0 placeholders (FC). */
  int metrics_cpu_mem_only;
  /* Serve the path route DOMAIN/kruise/<id>/<port>/... into the sandbox (OpenKruise). */
  int path_route;
  /* The API family served, and so the front serve picks at start (ingress/front.h): E2B's (the
   * fields above say how this flavour varies it) or OpenSandbox's lifecycle API under /v1
   * (opensandbox.h), where every E2B route is 404 in OpenSandbox's error shape and the ingress
   * routes OpenSandbox's way (/sandboxes/<id>/port/<port>/..., OpenSandbox-Ingress-To), not by
   * E2B's Host or headers. */
  enum abx_api_family family;
  /* Each sandbox's envd also serves OpenSandbox's execd API (envd's execd*.c) on
   * 127.0.0.1:44772 (envd started with --execd-port 44772 by sandbox.c; port from OpenSandbox
   * specs/execd-api.yaml and docs/protocol/e2b-v2-and-peers.md §4; auth X-EXECD-ACCESS-TOKEN = the sandbox's envd access
   * token when it has one). */
  int execd;
};

/* Select the flavour by name. 0, or -1 with `msg` naming the valid ones. Call before serving. */
int abx_flavor_set(const char *name, char *msg, size_t n);

/* The selected flavour (e2b until abx_flavor_set). Never NULL. */
const struct abx_flavor *abx_flavor(void);

/* 1 when the flavour serves route `method pattern` (a pattern of api.c's table), else 0. */
int abx_flavor_serves(const char *method, const char *pattern);

/* `url` without the flavour's extra prefix when it starts with it (the rest begins with '/'),
 * else `url` unchanged. */
const char *abx_flavor_strip_prefix(const char *url);

/* The OpenKruise path route "/kruise/<id>/<port>[/rest]" (docs/protocol/e2b-control-plane.md §8.1,
 * ACS "private protocol" DOMAIN/kruise/<SANDBOX_ID>/<PORT>), only when the flavour has path_route.
 * 1 with id (NUL-terminated), port (1..65535) and *rest_off = offset in raw_uri of the path to
 * forward ("/..." or "" for "/"); 0 when raw_uri is not such a path (e.g. "/kruise/api/...");
 * -1 with msg when it is one but the id or port is malformed. */
int abx_flavor_path_route(const char *raw_uri, char id[32], int *port, size_t *rest_off, char *msg,
                          size_t n);

/* The valid names, "e2b|alicloud-fc|...", for usage text and errors. */
const char *abx_flavor_names(void);

#endif
