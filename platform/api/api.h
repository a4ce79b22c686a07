/*
 * api.h: the E2B control plane of the local platform (REST, JSON).
 *
 * Routes:  GET /health (no key, 200 "Health check successful"); with header X-API-Key (table in
 *          api.c): POST /sandboxes, POST /v2/sandboxes, POST /v2/sandboxes/{id}/connect,
 *          GET /v2/sandboxes, GET /sandboxes (deprecated), GET|DELETE
 *          /sandboxes/{id}, POST /sandboxes/{id}/{timeout,connect,resume,pause,refreshes,snapshots},
 *          GET /sandboxes/{id}/metrics, PUT /sandboxes/{id}/network, GET /snapshots,
 *          DELETE /templates/{id}, POST|GET /volumes, GET|DELETE /volumes/{id}. X-API-Key is
 *          serve's key or a managed key (apikeys.h). With "Authorization: Bearer <access token>"
 *          instead: GET|POST /api-keys, PATCH|DELETE /api-keys/{apiKeyID} (apikeys.h).
 * Shapes:  docs/protocol/e2b-control-plane.md §3.2 (NewSandbox), §3.3 (Sandbox, ListedSandbox,
 *          SandboxDetail), §3.4 (per-endpoint behaviour); errors {"code":<status>,"message"} (§2).
 * Units:   timeouts in seconds (TTL), times RFC3339 UTC.
 * Errors:  400 validation / bad id / bad token, 401 key, 404 unknown, 405 method, 409 wrong state
 *          (pause of a paused sandbox, resume of a running one, duplicate volume), 500 start failure.
 * Mutants: with `serve --mutant` (util/mutant.h, docs/mutants.md) the control plane lies as the
 *          api rows say, each where its route is answered: resume-noop and connect-shortens-ttl
 *          (api_lifecycle.c), kill-noop, set-timeout-noop, the list's next-token-ignored,
 *          metadata-filter-ignored and state-filter-ignored, metadata-dropped (api_sandboxes.c),
 *          end-at-missing (abx_api_listed_json) and v2-routes-405 (abx_api_handle).
 *          create-before-ready is answered by the ingress (ingress.h "Mutants").
 */
#ifndef ABX_API_API_H
#define ABX_API_API_H

#include <microhttpd.h>
#include <stddef.h>

#include "e2b.h" /* ABX_CLIENT_ID, ABX_MAX_TIMEOUT_S, ABX_V2_TIMEOUT_S */

/* Set once at startup (strings borrowed for the life of the process). */
void abx_api_config(const char *api_key, const char *domain);

/* Answer one control-plane request whose body (`len` bytes, may be NULL) is fully received.
 * `url` is the raw path without the query: routes are matched on it segment by segment, then the
 * path parameters are percent-decoded (so "/templates/ns%2Fname%3Av1" has the one parameter
 * "ns/name:v1"; a bad escape is a 400). */
enum MHD_Result abx_api_handle(struct MHD_Connection *c, const char *method, const char *url,
                               const char *body, size_t len);

struct abx_front; /* ingress/front.h */

/* The E2B front, for every flavour of E2B's family (e2b_front.c): routing by Host or
 * E2b-Sandbox-* headers (ingress.h) and the flavour's path route (flavor.h path_route), a build
 * file's upload streamed (layer_cache.h), the rest answered by abx_api_handle; the ingress's
 * refusals in E2B's words (abx_ingress_e2b_error). No listening, tick or drain of its own. */
extern const struct abx_front abx_e2b_front;

/* The rest of the wing's contract: platform/api/ is reached through this header alone
 * (tests/layout/wings.py). */
#include "apikeys.h"

#endif
