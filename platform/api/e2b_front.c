/*
 * e2b_front.c: the E2B front (ingress/front.h), the one front of every flavour of E2B's family:
 * where a request goes, read from the flavour table as data (flavor.h path_route), and who
 * answers it. Contract in api.h.
 */
#include "api.h"

#include <string.h>

#include "util/util.h"
#include "ingress/ingress.h"
#include "template/template.h"

/* E2B's routing (Host `<port>-<id>.<domain>` or the E2b-Sandbox-* headers, ingress.h), then the
 * flavour's path route DOMAIN/kruise/<id>/<port>/... (OpenKruise, flavor.h), whose rest is
 * forwarded ("/" when there is none); a build file's PUT is streamed to a file, not buffered. */
static enum abx_dest route(struct MHD_Connection *c, const char *method, const char *url,
                           char *raw_uri, struct abx_route *route, char *msg, size_t n)
{
  int kind = abx_ingress_route(c, route, msg, n);
  if (kind == 0) {
    size_t off = 0;
    kind = abx_flavor_path_route(raw_uri, route->id, &route->port, &off, msg, n);
    if (kind == 1) {
      const char *rest = raw_uri + off + (raw_uri[off] == '/');
      memmove(raw_uri + 1, rest, strlen(rest) + 1); /* with its NUL, nothing past it */
      raw_uri[0] = '/';
    }
  }
  if (kind < 0)
    return ABX_DEST_REFUSED;
  if (kind == 1)
    return ABX_DEST_SANDBOX;
  return abx_upload_match(method, url) ? ABX_DEST_UPLOAD : ABX_DEST_CONTROL;
}

const struct abx_front abx_e2b_front = {
    .name = "e2b",
    .route = route,
    .control = abx_api_handle,
    .ingress_error = abx_ingress_e2b_error,
};
