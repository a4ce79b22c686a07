/*
 * ingress.h: route data-plane requests into a sandbox port and proxy them, streaming the answer.
 *
 * Routing: Host `<port>-<id>.<anything>` (port before the first '-', id up to the first '.',
 *          any `:port` of the Host dropped), or Host localhost / 127.0.0.1 / an IP literal /
 *          `sandbox.<domain>` with both `E2b-Sandbox-Id` and `E2b-Sandbox-Port` headers
 *          (docs/protocol/e2b-control-plane.md §7.1, §7.4). Anything else goes to the control
 *          plane.
 * Proxy:   method, path+query and body (≤ ABX_INGRESS_MAX_BODY) are forwarded to 127.0.0.1:<port>
 *          inside the sandbox's network namespace; hop-by-hop headers are dropped and Host becomes
 *          `localhost:<port>`, or the sandbox's network.maskRequestHost with ${PORT} replaced (not
 *          on envd's port; the original Host then goes in X-Forwarded-Host; network.h). Status
 *          and headers come back as soon as upstream sends them; the body is streamed through a
 *          bounded buffer (ABX_INGRESS_BUF), so Connect server streams deliver events as they
 *          happen. No API key is needed.
 * Threads: every transfer runs on one libcurl multi handle on one thread (ingress_loop.c); the
 *          answer is fed to libmicrohttpd by a content reader that suspends the connection while
 *          nothing is buffered, and libcurl is paused while the buffer is full (a slow reader
 *          slows the sandbox's writer, never serve's memory). A client that leaves is noticed
 *          by libmicrohttpd while data flows, and within 2 s while its connection waits.
 * Paused:  a sandbox created with autoResume and paused with its memory is resumed by the
 *          request (every port, envd's too), then the request is proxied (lifecycle.h
 *          "Auto-resume": TTL now + max(create timeout, 300 s)); concurrent requests resume it
 *          once. The resume needs the credentials of the port: e2b-traffic-access-token when
 *          public traffic is off (other ports), X-Access-Token on envd's port of a secure sandbox.
 * Errors:  the edge's own answers, worded by the front of the API family served (front.h
 *          ingress_error). E2B's (abx_ingress_e2b_error) are told apart by status and fields
 *          (edge_kind in lib/abx/client/errmap.lua):
 *          unknown or killed sandbox: 502 {"sandboxId","message":"The sandbox was not found",
 *            "code":502} (docs/protocol/e2b-control-plane.md §7.4);
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
 *          The 403s, the 503 of too many upgrades and an upgrade's bad answer are E2B's shape for
 *          every family.
 * Mutants: with `serve --mutant` (util/mutant.h, docs/mutants.md) a request to envd's port
 *          (49983) of a running sandbox, once its traffic credentials passed, may be answered
 *          502 text/html ABX_MUT_BARE_502 and not forwarded: transient-502[:N] 1 in N such
 *          requests (drawn from one count for all sandboxes by a fixed mix, so the same order of
 *          requests gets the same answers), create-before-ready
 *          in the 2 s after the sandbox's create (or fork) answered.
 */
#ifndef ABX_INGRESS_INGRESS_H
#define ABX_INGRESS_INGRESS_H

#include <microhttpd.h>
#include <stddef.h>

#include "front.h"

#define ABX_INGRESS_MAX_BODY (256u * 1024 * 1024)
#define ABX_INGRESS_BUF (64u * 1024)
/* the size of one read from the sandbox (CURLOPT_BUFFERSIZE) and of one copy into
 * libmicrohttpd's send buffer: 64 KiB, a quarter of the syscalls libcurl's and libmicrohttpd's
 * 16 KiB defaults take on a large answer */
#define ABX_INGRESS_CHUNK (64u * 1024)

struct abx_route {
  char id[32];
  int port;
};

struct abx_stream; /* one proxied request in flight (ingress_int.h) */

/* Set once at startup: the platform's domain and the front served (both borrowed); starts the
 * proxy's loop thread (one libcurl multi handle for every transfer). 0, or -1 when that thread
 * cannot start. */
int abx_ingress_config(const char *domain, const struct abx_front *front);

/* E2B's routing by Host or E2b-Sandbox-* headers (above): 1 = ingress (route filled), 0 = control
 * plane, -1 = malformed routing information (msg filled, answer 400). */
int abx_ingress_route(struct MHD_Connection *c, struct abx_route *route, char *msg, size_t msglen);

/* E2B's wording of the ingress's own refusals ("Errors" above): the E2B front's ingress_error. */
enum MHD_Result abx_ingress_e2b_error(struct MHD_Connection *c, const struct abx_edge_error *e);

/* Set up the proxying of a request; called on a pool thread with `c` suspended (it may block:
 * the auto-resume of a paused sandbox). `raw_uri` is the request target as received (path and
 * query, undecoded). Takes ownership of `*body` (malloc'd, may be NULL) and sets *body to NULL.
 * Either the answer is queued here (an edge error; *pending NULL, the result is the access
 * handler's), or *pending is set to a transfer ready to go: the caller keeps it with the request
 * and then calls abx_ingress_start; once the head is there the connection is resumed and the
 * access handler calls abx_ingress_respond. */
enum MHD_Result abx_ingress_handle(struct MHD_Connection *c, const struct abx_route *route,
                                   const char *method, const char *raw_uri, char **body, size_t len,
                                   struct abx_stream **pending);

/* Hand the transfer to the loop thread; `c` stays suspended until its head (or failure). */
void abx_ingress_start(struct abx_stream *s, struct MHD_Connection *c);

/* On the daemon's thread, after the resume: queue the answer (status and headers as upstream
 * sent them, the body streamed through ABX_INGRESS_BUF), or an edge error (port closed,
 * sandbox gone, bad answer), or MHD_NO when the client left meanwhile. Consumes `s`. */
enum MHD_Result abx_ingress_respond(struct MHD_Connection *c, const struct abx_route *route,
                                    struct abx_stream *s);

/* The request ended before abx_ingress_respond took `s` (its connection closed): abort it. */
void abx_ingress_drop(struct abx_stream *s);

/* Shutdown, before the daemon stops: abort every transfer and resume every connection waiting on
 * one (libmicrohttpd must not stop with suspended connections); later requests answer 502 "The
 * sandbox was not found". Ends the loop thread. */
void abx_ingress_stop(void);

#endif
