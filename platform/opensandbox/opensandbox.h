/*
 * opensandbox.h: `abxlua serve --flavor opensandbox`: OpenSandbox's lifecycle API and ingress, on the
 * local platform's sandboxes (flavor.h os_api). OpenSandbox is not E2B-compatible; this is its
 * own wire, from OpenSandbox (github.com/opensandbox-group/OpenSandbox) specs/sandbox-lifecycle.yml (
 * @3bb6fad, "spec" below), its server (server/opensandbox_server/: api/lifecycle.py, schema.py,
 * middleware/auth.py and request_id.py, services/validators.py, services/constants.py
 * SandboxErrorCodes, services/docker/docker_service.py: the runtime closest to ours) and its
 * ingress (components/ingress/pkg/proxy/), summarized in docs/protocol/e2b-v2-and-peers.md §4.
 *
 * Routes:  under /v1 only (the real server also mounts them at /): POST|GET /sandboxes,
 *          GET|DELETE /sandboxes/{id}, POST /sandboxes/{id}/{pause,resume,renew-expiration},
 *          GET /sandboxes/{id}/endpoints/{port}; GET /health {"status":"healthy"} without a key.
 *          Anything else (E2B's routes, PATCH metadata, snapshots) is 404 NOT_FOUND.
 * Auth:    header OPEN-SANDBOX-API-KEY = serve's API key (the ready line's api_key); missing:
 *          401 MISSING_API_KEY, wrong: 401 INVALID_API_KEY (middleware/auth.py, messages too).
 * Answers: every one carries X-Request-ID: the request's own (trimmed) or 32 random hex digits
 *          (request_id.py uuid4().hex). Errors are {code: string, message} (spec ErrorResponse).
 * States:  create answers 202 Pending at once and starts the sandbox on a worker thread; GET shows
 *          Pending, then Running (or Failed, kept an hour as docker_service.py
 *          PENDING_FAILURE_TTL_SECONDS). pause/resume answer 202 and work on a worker: Pausing ->
 *          Paused, Resuming -> Running. A deleted or expired sandbox is gone (404), as a removed
 *          container is in the Docker runtime. Details: docs/PLATFORM.md "Flavours".
 */
#ifndef ABX_OPENSANDBOX_OPENSANDBOX_H
#define ABX_OPENSANDBOX_OPENSANDBOX_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

struct abx_route;

/* Set once at startup: the API key and the "host:port" endpoints name (no scheme, as the spec's
 * Endpoint example "endpoint.opensandbox.io/sandboxes/abc123/port/8080"). Both borrowed. */
void abx_opensandbox_config(const char *api_key, const char *endpoint_host);

/* Answer one control-plane request of the opensandbox flavour. `path` is the raw path (no query),
 * `body` the whole body (`len` bytes, may be NULL). */
enum MHD_Result abx_opensandbox_control(struct MHD_Connection *c, const char *method,
                                        const char *path, const char *body, size_t len);

/* The main loop's tick: paused sandboxes past their expiresAt are killed (running ones are killed
 * by lifecycle.h's TTL: their end_ns is the expiresAt), and records of sandboxes that are gone
 * are dropped. Never blocks on a sandbox (the kill runs on a worker). */
void abx_opensandbox_tick(int64_t now_ns);

/* Wait for every worker (create, pause, resume, kill) to finish: after abx_spawner_stop (so
 * starts fail fast) and before the last abx_lifecycle_shutdown (which kills what they started). */
void abx_opensandbox_drain(void);

/* OpenSandbox ingress routing (components/ingress pkg/proxy host.go, host_route_parse.go), only
 * with the flavour's os_api: header `OpenSandbox-Ingress-To: <id>-<port>` (or the deprecated
 * `OPEN-SANDBOX-INGRESS`; the first DNS label of the value, split at its last '-'), the path
 * forwarded as it came; or URI mode `/sandboxes/<id>/port/<port>[/rest]` (the spec's Endpoint
 * format), `raw_uri` then rewritten in place to "/rest" (query kept) or "/". 1 with `route`
 * filled; 0 not an ingress request; -1 malformed (msg: answer with abx_opensandbox_ingress_error 400). */
int abx_opensandbox_route(struct MHD_Connection *c, char *raw_uri, struct abx_route *route,
                         char *msg, size_t n);

/* The ingress's own refusal, as OpenSandbox's ingress writes it (Go http.Error): text/plain
 * "OpenSandbox Ingress: <msg>\n" with `status` (400 malformed route, 404 "sandbox not found:
 * <id>", 503 "sandbox not ready: <id>" for a paused one). `msg` NULL: an empty body (502 for a
 * port nothing listens on: httputil.ReverseProxy's default error handler). */
enum MHD_Result abx_opensandbox_ingress_error(struct MHD_Connection *c, unsigned status,
                                              const char *msg);

#endif
