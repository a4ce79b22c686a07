/*
 * front.c: the OpenSandbox front (ingress/front.h): OpenSandbox's ingress routing (header
 * OpenSandbox-Ingress-To and URI mode /sandboxes/<id>/port/<port>/...) and the ingress's own
 * refusals in OpenSandbox's words, tied to the lifecycle API of control.c. Contract in
 * opensandbox.h; the proxying itself is the ingress's (ingress/ingress.h).
 */
#include "opensandbox.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "ingress/ingress.h"
#include "opensandbox_int.h"

/* 1..65535 from exactly `n` digits, else -1 (ingress signature.ParsePortSegment). */
static int port_of(const char *s, size_t n)
{
  int p = 0;
  if (n == 0 || n > 5)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    p = p * 10 + (s[i] - '0');
  }
  return p >= 1 && p <= 65535 ? p : -1;
}

/* An id as the route carries it: ours are 21 bytes; a longer or stranger one cannot be a
 * sandbox, and is kept cut so that the proxy answers it "sandbox not found". */
static void set_id(struct abx_route *route, const char *id, size_t l)
{
  if (l >= sizeof route->id)
    l = sizeof route->id - 1;
  memcpy(route->id, id, l);
  route->id[l] = 0;
}

/* OpenSandbox ingress routing (components/ingress pkg/proxy host.go, host_route_parse.go): header
 * `OpenSandbox-Ingress-To: <id>-<port>` (or the deprecated `OPEN-SANDBOX-INGRESS`; the first DNS
 * label of the value, split at its last '-'), the path forwarded as it came; or URI mode
 * `/sandboxes/<id>/port/<port>[/rest]` (the spec's Endpoint format), `raw_uri` then rewritten in
 * place to "/rest" (query kept) or "/". 1 with `route` filled; 2 the same for the egress
 * sidecar's port (raw_uri left alone: egress.c answers it); 0 not an ingress request; -1
 * malformed (msg: the 400's text). */
static int parse_route(struct MHD_Connection *c, char *raw_uri, struct abx_route *route, char *msg,
                       size_t n)
{
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "OpenSandbox-Ingress-To");
  if (!h || !*h)
    h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "OPEN-SANDBOX-INGRESS");
  if (h && *h) { /* host_route_parse.go parseHostRoute: "<id>-<port>" as the first label */
    const char *v = h;
    if (strncmp(v, "https://", 8) == 0)
      v += 8;
    else if (strncmp(v, "http://", 7) == 0)
      v += 7;
    size_t label = strcspn(v, ".");
    const char *dash = NULL;
    for (const char *p = v; p < v + label; p++)
      if (*p == '-')
        dash = p;
    if (!dash || dash == v) {
      snprintf(msg, n, "invalid ingress route: invalid host: %.100s", h);
      return -1;
    }
    int port = port_of(dash + 1, (size_t)(v + label - dash - 1));
    if (port < 0) {
      snprintf(msg, n, "invalid ingress route: invalid port format: %.100s", h);
      return -1;
    }
    set_id(route, v, (size_t)(dash - v));
    route->port = port;
    return port == OPENSANDBOX_EGRESS_PORT ? 2 : 1;
  }
  static const char pre[] = "/sandboxes/";
  if (strncmp(raw_uri, pre, sizeof pre - 1) != 0)
    return 0;
  const char *id = raw_uri + sizeof pre - 1;
  size_t il = strcspn(id, "/?#");
  if (il == 0 || strncmp(id + il, "/port/", 6) != 0)
    return 0; /* not the Endpoint shape: the control plane answers it (404) */
  const char *ps = id + il + 6;
  size_t pl = strcspn(ps, "/?#");
  int port = port_of(ps, pl);
  if (port < 0) {
    snprintf(msg, n, "invalid ingress route: invalid port format: %.*s", (int)(pl < 40 ? pl : 40),
             ps);
    return -1;
  }
  set_id(route, id, il);
  route->port = port;
  if (port == OPENSANDBOX_EGRESS_PORT)
    return 2; /* the sidecar: served by the control plane, the path left as it came */
  /* forward the rest: "/rest?q" as it came, "?q" as "/?q", nothing as "/" */
  char *rest = (char *)ps + pl;
  size_t rl = strlen(rest);
  if (*rest == '/') {
    memmove(raw_uri, rest, rl + 1);
  } else {
    memmove(raw_uri + 1, rest, rl + 1);
    raw_uri[0] = '/';
  }
  return 1;
}

/* The ingress's own refusal, as OpenSandbox's ingress writes it (Go http.Error): text/plain
 * "OpenSandbox Ingress: <msg>\n" with `status`. `msg` NULL: an empty body. */
static enum MHD_Result ingress_text(struct MHD_Connection *c, unsigned status, const char *msg)
{
  char body[300] = "";
  if (msg)
    snprintf(body, sizeof body, "OpenSandbox Ingress: %.250s\n", msg);
  struct MHD_Response *r = abx_faults_response(body, strlen(body));
  if (!r)
    return MHD_NO;
  if (msg) { /* Go's http.Error */
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  }
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum abx_dest route(struct MHD_Connection *c, const char *method, const char *url,
                           char *raw_uri, struct abx_route *route, char *msg, size_t n)
{
  (void)method, (void)url;
  int kind = parse_route(c, raw_uri, route, msg, n);
  return kind < 0 ? ABX_DEST_REFUSED : kind == 1 ? ABX_DEST_SANDBOX : ABX_DEST_CONTROL;
}

int opensandbox_egress_target(struct MHD_Connection *c, const char *path, char *id, size_t idn,
                              const char **rest)
{
  char buf[256], m[160];
  struct abx_route r;
  snprintf(buf, sizeof buf, "%s", path);
  if (strlen(path) >= sizeof buf || parse_route(c, buf, &r, m, sizeof m) != 2)
    return 0;
  snprintf(id, idn, "%s", r.id);
  *rest = path;
  const char *h1 = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "OpenSandbox-Ingress-To");
  const char *h2 = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "OPEN-SANDBOX-INGRESS");
  if (!(h1 && *h1) && !(h2 && *h2)) { /* URI mode: the path inside follows the port */
    const char *p = strstr(path + 11, "/port/");
    *rest = p ? p + 6 + strcspn(p + 6, "/") : "";
  }
  return 1;
}

/* OpenSandbox's ingress refusals (errors.go, sandbox/provider.go): 400 for a malformed route, 404
 * "sandbox not found: <id>" (for a port that answered badly too: the sandbox is what the ingress
 * reports), 503 "sandbox not ready: <id>" for a paused one (ErrSandboxNotReady), and a 502 with
 * an empty body for a port nothing listens on (httputil.ReverseProxy's default error handler). */
static enum MHD_Result ingress_error(struct MHD_Connection *c, const struct abx_edge_error *e)
{
  char m[64];
  switch (e->kind) {
  case ABX_EDGE_BAD_ROUTE: return ingress_text(c, 400, e->message);
  case ABX_EDGE_PAUSED:
    snprintf(m, sizeof m, "sandbox not ready: %s", e->id);
    return ingress_text(c, 503, m);
  case ABX_EDGE_PORT_CLOSED: return ingress_text(c, 502, NULL);
  case ABX_EDGE_NOT_FOUND: break;
  }
  snprintf(m, sizeof m, "sandbox not found: %s", e->id);
  return ingress_text(c, 404, m);
}

const struct abx_front abx_opensandbox_front = {
    .name = "opensandbox",
    .route = route,
    .control = abx_opensandbox_control,
    .ingress_error = ingress_error,
    .route_header = "OpenSandbox-Ingress-To", /* proxy.go removes it before proxying */
    .listening = abx_opensandbox_config,
    .tick = abx_opensandbox_tick,
    .drain = abx_opensandbox_drain,
};
