/*
 * api_network.c: the PUT /sandboxes/{id}/network route (a create's network fields are read in the
 * net wing, network_request.c). Contract in network.h.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "util/util.h"
#include "net/net.h"

enum MHD_Result abx_api_sandbox_network(struct abx_api_req *r)
{
  enum MHD_Result sent = MHD_NO;
  char id[32], msg[300];
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  json_t *req = abx_api_body(r, 0, &sent);
  if (!req)
    return sent;
  struct abx_net_rules rules;
  json_t *proxy = json_object_get(req, "egressProxy");
  if (proxy && !json_is_null(proxy)) {
    json_decref(req);
    return abx_http_error(r->c, 400, "egressProxy is not supported by the local platform");
  }
  if (json_object_get(req, "maskRequestHost")) { /* not in SandboxNetworkUpdateConfig */
    json_decref(req);
    return abx_http_error(r->c, 400,
                          "maskRequestHost cannot be changed by PUT network (it is "
                          "set at create, in network.maskRequestHost)");
  }
  int rc = abx_network_parse_rules(req, req, &rules, msg, sizeof msg);
  json_decref(req);
  if (rc != 0)
    return abx_http_error(r->c, 400, msg);
  int netns = abx_registry_netns(id);
  if (netns < 0) { /* no namespace: unknown, or paused filesystem only (rules kept for its boot) */
    abx_registry_lock();
    int listed = abx_registry_find(id) != NULL;
    abx_registry_unlock();
    if (!listed) {
      json_decref(rules.allow);
      json_decref(rules.deny);
      return abx_api_not_found(r->c, id);
    }
  }
  int status = abx_network_update(id, netns, &rules, msg, sizeof msg);
  if (status == 404)
    return abx_api_not_found(r->c, id);
  if (status != 204)
    return abx_http_error(r->c, (unsigned)status, msg);
  return abx_http_json(r->c, 204, NULL);
}
