/*
 * flavor.c: the flavour table of `abxlua serve --flavor` (contract and sources in flavor.h).
 */
#include "flavor.h"

#include <stdio.h>
#include <string.h>

#include "e2b.h"

#define END NULL

/* Volumes and the routes every non-E2B flavour lacks: E2B's own volume API
 * (docs/protocol/e2b-control-plane.md §5) is "not compatible" on Alibaba (§8.1) and absent from
 * CubeAPI and OpenKruise route lists (docs/protocol/e2b-v2-and-peers.md §5; CubeSandbox's CUBEi
 * fork adds /volumes, the base CubeAPI does not). */
#define VOLUMES "POST /volumes", "GET /volumes", "GET /volumes/{id}", "DELETE /volumes/{id}"

/* Managed API keys (apikeys.h): E2B's /api-keys routes are absent from the Alibaba tables
 * (docs/protocol/e2b-control-plane.md §8.1: "access tokens, teams: not compatible") and the
 * OpenKruise route list (docs/protocol/e2b-v2-and-peers.md §5); CubeAPI lists api-keys as optional
 * with no auth scheme given (§5), so the flavour leaves them out. */
#define API_KEYS "GET /api-keys", "POST /api-keys", "PATCH /api-keys/{id}", "DELETE /api-keys/{id}"

static const char *const none[] = {END};

/* FC: snapshots "not compatible"; volumes not compatible (§8.1). */
static const char *const fc_missing[] = {"POST /sandboxes/{id}/snapshots", "GET /snapshots",
                                         VOLUMES, API_KEYS, END};
/* Flash: metrics "not supported"; volumes not compatible (§8.1). */
static const char *const express_missing[] = {"GET /sandboxes/{id}/metrics", VOLUMES, API_KEYS,
                                              END};

/* OpenKruise routes (docs/protocol/e2b-v2-and-peers.md §5): POST /sandboxes (v1 only), GET
 * /v2/sandboxes, GET|DELETE /sandboxes/{id}, PUT network, pause, resume, connect, timeout,
 * snapshots, GET /snapshots, GET /templates, GET|DELETE /templates/{id}. Everything else is
 * missing, the sandbox logs routes too (CubeAPI lists "logs v1/v2", OpenKruise does not). */
static const char *const acs_missing[] = {"POST /v2/sandboxes",
                                          "POST /v2/sandboxes/{id}/connect",
                                          "GET /sandboxes",
                                          "POST /sandboxes/{id}/refreshes",
                                          "GET /sandboxes/{id}/metrics",
                                          "POST /sandboxes/{id}/fork",
                                          "POST /v3/templates",
                                          "GET /templates/{id}/files/{hash}",
                                          "POST /v2/templates/{id}/builds/{build}",
                                          "GET /templates/{id}/builds/{build}/status",
                                          "GET /templates/{id}/builds/{build}/logs",
                                          "POST /templates/tags",
                                          "DELETE /templates/tags",
                                          "GET /templates/aliases/{alias}",
                                          "GET /templates/{id}/tags",
                                          "GET /v2/templates",
                                          "PATCH /templates/{id}",
                                          "PATCH /v2/templates/{id}",
                                          "GET /sandboxes/{id}/logs",
                                          "GET /v2/sandboxes/{id}/logs",
                                          VOLUMES,
                                          API_KEYS,
                                          END};

/* CubeAPI (docs/protocol/e2b-v2-and-peers.md §5): "Missing in both: POST /v2/sandboxes,
 * /v2/sandboxes/{id}/ connect, /v3/templates, /templates/{id}/files/{hash},
 * /v2/templates/.../builds/..., fork, network PUT"; also absent from its route list: metrics, GET
 * /snapshots, tags, aliases (CUBEi only), GET /v2/templates, PATCH of a template (publish),
 * volumes (CUBEi only). */
static const char *const cube_missing[] = {"POST /v2/sandboxes",
                                           "POST /v2/sandboxes/{id}/connect",
                                           "GET /sandboxes/{id}/metrics",
                                           "POST /sandboxes/{id}/fork",
                                           "PUT /sandboxes/{id}/network",
                                           "GET /snapshots",
                                           "POST /v3/templates",
                                           "GET /templates/{id}/files/{hash}",
                                           "POST /v2/templates/{id}/builds/{build}",
                                           "POST /templates/tags",
                                           "DELETE /templates/tags",
                                           "GET /templates/aliases/{alias}",
                                           "GET /templates/{id}/tags",
                                           "GET /v2/templates",
                                           "PATCH /templates/{id}",
                                           "PATCH /v2/templates/{id}",
                                           VOLUMES,
                                           API_KEYS,
                                           END};

/* e2b: v1 create default 15 s, 1 s .. 24 h (docs/protocol/e2b-control-plane.md §3.4; api.h). */
static const struct abx_flavor flavors[] = {
    {.name = "e2b",
     .missing = none,
     .check_key = 1,
     .ttl_min = 1,
     .ttl_max = ABX_MAX_TIMEOUT_S,
     .v1_default = 15,
     .connect_extends = 1,
     .connect_resumed_status = 201,
     .resume_status = 201},
    {.name = "alicloud-fc",
     .missing = fc_missing,
     .check_key = 1,
     .ttl_min = 1,
     .ttl_max = ABX_MAX_TIMEOUT_S,
     .v1_default = 15,
     .connect_extends = 1,
     .connect_resumed_status = 201,
     .resume_status = 201,
     .pause_needs_allowlist = 1,
     .no_volumes = 1,
     .metrics_cpu_mem_only = 1},
    {.name = "alicloud-express",
     .missing = express_missing,
     .check_key = 1,
     .ttl_min = 1,
     .ttl_max = ABX_MAX_TIMEOUT_S,
     .v1_default = 15,
     .connect_extends = 1,
     .connect_resumed_status = 201,
     .resume_status = 201,
     .pause_needs_allowlist = 1,
     .snapshot_needs_allowlist = 1,
     .no_volumes = 1},
    /* OpenKruise TTL: "timeout 0 → 300 default, valid range 30 … 2 592 000 s → 400 otherwise;
   * min resume timeout 300"; resume 204; connect 200/201 (docs/protocol/e2b-v2-and-peers.md §5). */
    {.name = "acs",
     .missing = acs_missing,
     .prefix = "/kruise/api",
     .check_key = 1,
     .ttl_min = 30,
     .ttl_max = 2592000,
     .v1_default = 300,
     .zero_is_default = 1,
     .timeout_extends_only = 1,
     .resume_min_ttl = 300,
     .connect_extends = 1,
     .connect_resumed_status = 201,
     .resume_status = 204,
     .path_route = 1},
    /* CubeSandbox: "timeout default 15, min 0" (0 is kept as E2B's 400 here: what a 0 s sandbox
   * does there is not in the reference); connect does not extend, 200 even after resume;
   * resume 201 (docs/protocol/e2b-v2-and-peers.md §5). */
    {.name = "cubesandbox",
     .missing = cube_missing,
     .prefix = "/cubeapi/v1",
     .check_key = 0,
     .ttl_min = 1,
     .ttl_max = ABX_MAX_TIMEOUT_S,
     .v1_default = 15,
     .connect_extends = 0,
     .connect_resumed_status = 200,
     .resume_status = 201,
     .create_ignores_extras = 1,
     .const_envd_version = "0.2.0"},
    /* OpenSandbox: none of E2B's routes is reached (abx_api_handle is not called: its front sends
   * the control plane to platform/opensandbox/control.c, whose rules are in opensandbox.h); the
   * TTL fields record its create timeout range, >= 60 s (specs/sandbox-lifecycle.yml CreateSandboxRequest.timeout) and
   * at most 86400 s here (server.max_sandbox_timeout_seconds, whose examples use 86400). */
    {.name = "opensandbox",
     .missing = none,
     .ttl_min = 60,
     .ttl_max = ABX_MAX_TIMEOUT_S,
     .family = ABX_FAMILY_OPENSANDBOX,
     .execd = 1},
};

static const struct abx_flavor *g_flavor = &flavors[0];

int abx_flavor_set(const char *name, char *msg, size_t n)
{
  for (size_t i = 0; i < sizeof flavors / sizeof flavors[0]; i++)
    if (strcmp(flavors[i].name, name) == 0) {
      g_flavor = &flavors[i];
      return 0;
    }
  snprintf(msg, n, "unknown flavor '%.64s': valid flavors are %s", name, abx_flavor_names());
  return -1;
}

const struct abx_flavor *abx_flavor(void)
{
  return g_flavor;
}

const char *abx_flavor_names(void)
{
  return "e2b|alicloud-fc|alicloud-express|acs|cubesandbox|opensandbox";
}

int abx_flavor_serves(const char *method, const char *pattern)
{
  size_t ml = strlen(method);
  for (const char *const *m = g_flavor->missing; *m; m++)
    if (strncmp(*m, method, ml) == 0 && (*m)[ml] == ' ' && strcmp(*m + ml + 1, pattern) == 0)
      return 0;
  return 1;
}

const char *abx_flavor_strip_prefix(const char *url)
{
  const char *p = g_flavor->prefix;
  size_t n = p ? strlen(p) : 0;
  if (n && strncmp(url, p, n) == 0 && url[n] == '/')
    return url + n;
  return url;
}

int abx_flavor_path_route(const char *raw_uri, char id[32], int *port, size_t *rest_off, char *msg,
                          size_t n)
{
  static const char pre[] = "/kruise/";
  if (!g_flavor->path_route || strncmp(raw_uri, pre, sizeof pre - 1) != 0)
    return 0;
  const char *idp = raw_uri + sizeof pre - 1;
  size_t il = strcspn(idp, "/?#");
  if (il == 3 && strncmp(idp, "api", 3) == 0 && (idp[3] == '/' || !idp[3]))
    return 0; /* the control plane's /kruise/api prefix */
  const char *pp = idp + il;
  size_t pl = *pp == '/' ? strcspn(pp + 1, "/?#") : 0;
  int p = 0;
  for (size_t i = 0; i < pl && i < 6; i++)
    p = (pp[1 + i] >= '0' && pp[1 + i] <= '9') ? p * 10 + (pp[1 + i] - '0') : -1000000;
  if (il >= 32 || !abx_e2b_sandbox_id_valid(idp, il) || pl == 0 || pl > 5 || p < 1 || p > 65535) {
    snprintf(msg, n, "path route must be /kruise/<sandboxID>/<port>[/path]");
    return -1;
  }
  memcpy(id, idp, il);
  id[il] = 0;
  *port = p;
  *rest_off = (size_t)(pp + 1 + pl - raw_uri);
  return 1;
}
