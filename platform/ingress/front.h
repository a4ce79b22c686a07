/*
 * front.h: one front per API family. Serve's one port answers one family's wire: E2B's (the
 * e2b, alicloud-*, acs and cubesandbox flavours, whose differences are the flavour table's data,
 * flavor.h) or OpenSandbox's (a different API, not a variant of E2B's). A front is what differs:
 * where a request goes, who answers the control plane, how the ingress words its own refusals,
 * and what runs on the main loop's tick and at shutdown. serve.c picks the flavour's front once
 * at start (flavor.h `family`) and never asks the flavour which family it serves again.
 *
 * Fronts:  abx_e2b_front (api/api.h) and abx_opensandbox_front (opensandbox/opensandbox.h).
 * Threads: route on the daemon's thread when the request's head is in; control on a pool thread
 *          (it may block); ingress_error wherever the ingress answers (pool or daemon thread);
 *          tick on the main thread; listening and drain on the main thread, at start and stop.
 */
#ifndef ABX_INGRESS_FRONT_H
#define ABX_INGRESS_FRONT_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

struct abx_route; /* ingress.h */

/* Where a request goes, decided once from its head (front->route). */
enum abx_dest {
  ABX_DEST_CONTROL, /* the control plane (front->control), the body buffered up to 1 MiB */
  ABX_DEST_UPLOAD,  /* the control plane's streamed upload (a build file, layer_cache.h) */
  ABX_DEST_SANDBOX, /* a port of a sandbox (the route filled): the ingress proxies it */
  ABX_DEST_REFUSED, /* malformed routing information: a 400 through front->ingress_error */
};

/* The ingress's own refusals (ingress.h "Errors"), which each family words its own way. */
enum abx_edge_error_kind {
  ABX_EDGE_BAD_ROUTE,   /* half or malformed routing information: 400 */
  ABX_EDGE_NOT_FOUND,   /* the sandbox is unknown or gone, or its port answered badly */
  ABX_EDGE_PAUSED,      /* paused, and no auto-resume (or the auto-resume failed) */
  ABX_EDGE_PORT_CLOSED, /* running, but nothing listens on the port */
};

struct abx_edge_error {
  enum abx_edge_error_kind kind;
  const char *id;      /* the sandbox's id; NULL for ABX_EDGE_BAD_ROUTE */
  int port;            /* the port asked for (ABX_EDGE_PORT_CLOSED) */
  const char *message; /* what happened, in E2B's words (ABX_EDGE_BAD_ROUTE: the reason) */
  int can_resume;      /* ABX_EDGE_PAUSED: 1 when an auto-resume was tried and failed */
};

struct abx_front {
  const char *name; /* the family: "e2b", "opensandbox" */
  /* Where the request goes. `raw_uri` is the request target as received; a route into a sandbox
   * may rewrite it in place to the path to forward (never longer). ABX_DEST_SANDBOX fills
   * `route`; ABX_DEST_REFUSED writes the reason into msg (n bytes). */
  enum abx_dest (*route)(struct MHD_Connection *c, const char *method, const char *url,
                         char *raw_uri, struct abx_route *route, char *msg, size_t n);
  /* Answer a control-plane request: `path` is the raw path (no query, undecoded), `body` the
   * whole body (`len` bytes, may be NULL). Returns the access handler's result. */
  enum MHD_Result (*control)(struct MHD_Connection *c, const char *method, const char *path,
                             const char *body, size_t len);
  /* Queue one of the ingress's own refusals. Returns the access handler's result. */
  enum MHD_Result (*ingress_error)(struct MHD_Connection *c, const struct abx_edge_error *e);
  /* A request header that carries the routing and is not forwarded into the sandbox, or NULL. */
  const char *route_header;
  /* Serve listens: the API key and the "host:port" clients reach it at (both borrowed, valid
   * until serve stops), before the ready line. NULL: nothing to learn. */
  void (*listening)(const char *api_key, const char *host_port);
  /* The main loop's tick (about every 100 ms), after lifecycle.h's. NULL: none. */
  void (*tick)(int64_t now_ns);
  /* Shutdown, once the daemon has stopped and before the last abx_lifecycle_shutdown: wait for
   * the front's own threads. NULL: it has none. */
  void (*drain)(void);
};

#endif
