/*
 * opensandbox.h: `abxlua serve --flavor opensandbox`: OpenSandbox's lifecycle API and ingress, on
 * the local platform's sandboxes: the OpenSandbox front (ingress/front.h). OpenSandbox is not
 * E2B-compatible; this is its own wire, from OpenSandbox (github.com/opensandbox-group/OpenSandbox)
 * specs/sandbox-lifecycle.yml (@3bb6fad, "spec" below), its server (server/opensandbox_server/:
 * api/lifecycle.py, schema.py, middleware/auth.py and request_id.py, services/validators.py,
 * services/constants.py SandboxErrorCodes, services/docker/docker_service.py: the runtime
 * closest to ours) and its ingress (components/ingress/pkg/proxy/), summarized in
 * docs/protocol/e2b-v2-and-peers.md §4.
 *
 * Routes:  under /v1 only (the real server also mounts them at /): POST|GET /sandboxes,
 *          GET|DELETE /sandboxes/{id}, POST /sandboxes/{id}/{pause,resume,renew-expiration},
 *          GET /sandboxes/{id}/endpoints/{port}, POST /sandboxes/{id}/snapshots, GET /snapshots,
 *          GET|DELETE /snapshots/{id} (snapshot.c; create takes snapshotId); GET /health
 *          {"status":"healthy"} without a key. Anything else (E2B's routes, PATCH metadata) is
 *          404 NOT_FOUND.
 * Auth:    header OPEN-SANDBOX-API-KEY = serve's API key (the ready line's api_key); missing:
 *          401 MISSING_API_KEY, wrong: 401 INVALID_API_KEY (middleware/auth.py, messages too).
 * Answers: every one carries X-Request-ID: the request's own (trimmed) or 32 random hex digits
 *          (request_id.py uuid4().hex). Errors are {code: string, message} (spec ErrorResponse).
 * States:  create answers 202 Pending at once and starts the sandbox on a worker thread; GET shows
 *          Pending, then Running (or Failed, kept an hour as docker_service.py
 *          PENDING_FAILURE_TTL_SECONDS). pause/resume answer 202 and work on a worker: Pausing ->
 *          Paused, Resuming -> Running. A deleted or expired sandbox is gone (404), as a removed
 *          container is in the Docker runtime. Details: docs/PLATFORM.md "Flavours".
 * Ingress: header `OpenSandbox-Ingress-To: <id>-<port>` (or the deprecated `OPEN-SANDBOX-INGRESS`),
 *          the path forwarded as it came and the header not forwarded; or URI mode
 *          `/sandboxes/<id>/port/<port>[/rest]` (the spec's Endpoint format), forwarded as
 *          "/rest". E2B's Host and E2b-Sandbox-* routing is off. Refusals as OpenSandbox's ingress
 *          writes them (Go http.Error, text/plain "OpenSandbox Ingress: <msg>"): 400 malformed
 *          route, 404 "sandbox not found: <id>", 503 "sandbox not ready: <id>" for a paused one,
 *          and 502 with an empty body for a port nothing listens on (httputil.ReverseProxy).
 * Egress:  port 18080 of every sandbox (through the ingress, no API key) is OpenSandbox's egress
 *          sidecar policy API, GET|POST|PUT|PATCH|DELETE /policy (egress.c), on the platform's
 *          outbound rules; create's networkPolicy is its starting policy (none: allow-all).
 * Execd:   each sandbox's envd also serves OpenSandbox's execd API (flavor.h `execd`;
 *          platform/envd/execd.c), reached through the ingress on port 44772.
 */
#ifndef ABX_OPENSANDBOX_OPENSANDBOX_H
#define ABX_OPENSANDBOX_OPENSANDBOX_H

struct abx_front; /* ingress/front.h */

/* The OpenSandbox front: its routing and refusals (front.c), its lifecycle API (control.c), its
 * tick (paused sandboxes past expiresAt are killed, records of gone sandboxes dropped) and its
 * drain (every create, pause, resume and kill worker awaited). Its `listening` takes the API key
 * and the "host:port" endpoints name. */
extern const struct abx_front abx_opensandbox_front;

#endif
