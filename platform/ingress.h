/*
 * ingress.h: route data-plane requests into a sandbox port and proxy them, streaming the answer.
 *
 * Routing: Host `<port>-<id>.<anything>` (port before the first '-', id up to the first '.',
 *          any `:port` of the Host dropped), or Host localhost / 127.0.0.1 / an IP literal /
 *          `sandbox.<domain>` with both `E2b-Sandbox-Id` and `E2b-Sandbox-Port` headers
 *          (reference/e2b-control-plane.md §7.1, §7.4). Anything else goes to the control plane.
 * Proxy:   method, path+query and body (≤ ABX_INGRESS_MAX_BODY) are forwarded to 127.0.0.1:<port>
 *          inside the sandbox's network namespace; hop-by-hop headers are dropped and Host becomes
 *          `localhost:<port>`, or the sandbox's network.maskRequestHost with ${PORT} replaced (not
 *          on envd's port; the original Host then goes in X-Forwarded-Host; network.h). Status
 *          and headers come back as soon as upstream sends them; the body is streamed through a
 *          bounded buffer (ABX_INGRESS_BUF), so Connect server streams deliver events as they
 *          happen. No API key is needed.
 * Paused:  a sandbox created with autoResume and paused with its memory is resumed by the
 *          request (every port, envd's too), then the request is proxied (lifecycle.h
 *          "Auto-resume": TTL now + max(create timeout, 300 s)); concurrent requests resume it
 *          once. The resume needs the credentials of the port: e2b-traffic-access-token when
 *          public traffic is off (other ports), X-Access-Token on envd's port of a secure sandbox.
 * Errors:  the edge's own answers, told apart by status and fields (lib/abx/errmap.lua edge_kind):
 *          unknown or killed sandbox: 502 {"sandboxId","message":"The sandbox was not found",
 *            "code":502} (reference/e2b-control-plane.md §7.4);
 *          paused sandbox, no auto-resume (not enabled, or paused filesystem only): 502
 *            {"sandboxId","message":"The sandbox is paused","code":502,"canAutoResume":false}:
 *            the status of E2B's main line (502 "The sandbox was not found"; the official SDK's
 *            isRunning() reads only a 502 as not running, and E2B's tests assert it false after
 *            a pause), the canAutoResume field of e2b-dev/infra commit dae914ff5
 *            proxy/template/sandbox_paused.go (a branch that answers 409, never merged) so that
 *            clients tell paused from gone; the same with "canAutoResume":true when the
 *            auto-resume failed;
 *          auto-resume without the credentials: 403 {"sandboxId","message":"This sandbox can't be
 *            resumed with the credentials provided. Check your access token and try again.",
 *            "code":403} (shared/pkg/proxy/template/sandbox_resume_permission_denied.go);
 *          running sandbox, connection to the port refused: 502 {"sandboxId","message":"The
 *            sandbox is running but port is not open","port":<port>,"code":502} (port_closed.go);
 *          400 for half or malformed routing info; 413 for bodies over the limit (serve.c).
 */
#ifndef ABX_LOCAL_INGRESS_H
#define ABX_LOCAL_INGRESS_H

#include <microhttpd.h>
#include <stddef.h>

#define ABX_INGRESS_MAX_BODY (256u * 1024 * 1024)
#define ABX_INGRESS_BUF (64u * 1024)

struct abx_route {
  char id[32];
  int port;
};

/* Set once at startup: the platform's domain (borrowed). */
void abx_ingress_config(const char *domain);

/* Decide where a request goes: 1 = ingress (route filled), 0 = control plane, -1 = malformed
 * routing information (msg filled, answer 400). */
int abx_ingress_route(struct MHD_Connection *c, struct abx_route *route, char *msg, size_t msglen);

/* Proxy the request. `raw_uri` is the request target as received (path and query, undecoded).
 * Takes ownership of `*body` (malloc'd, may be NULL) and sets *body to NULL. */
enum MHD_Result abx_ingress_handle(struct MHD_Connection *c, const struct abx_route *route,
                                   const char *method, const char *raw_uri, char **body, size_t len);

/* Wait up to `ms` milliseconds for running upstream transfers to finish (shutdown). */
void abx_ingress_drain(int ms);

#endif
