/*
 * os_ingress.c: the opensandbox flavour's ingress routing (header OpenSandbox-Ingress-To and URI
 * mode /sandboxes/<id>/port/<port>/...) and the ingress's own refusals. Contract in opensandbox.h;
 * the proxying itself is ingress.c's.
 */
#include "opensandbox/opensandbox.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "ingress.h"

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

int abx_opensandbox_route(struct MHD_Connection *c, char *raw_uri, struct abx_route *route,
                         char *msg, size_t n)
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
    return 1;
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

enum MHD_Result abx_opensandbox_ingress_error(struct MHD_Connection *c, unsigned status,
                                              const char *msg)
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
