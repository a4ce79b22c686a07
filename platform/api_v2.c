/*
 * api_v2.c: POST /v2/sandboxes/{id}/connect, the connect route of the E2B SDK ≥ 2.51
 * (e2b-v2-and-peers.md §1.3; POST /v2/sandboxes is create() in api_sandboxes.c). Contract in
 * api_internal.h.
 */
#include <jansson.h>
#include <stdio.h>

#include "api.h"
#include "api_internal.h"
#include "http_util.h"
#include "lifecycle.h"
#include "registry.h"

/* Body optional: {timeout?: int s (default 300, ≥ 1), memory?: bool (default true)}. A running
 * sandbox's TTL is only extended (200); a paused one is resumed (201). 2.51 sends {} unless the
 * caller gave timeoutMs, and memory:false only for onResume 'reboot'. */
enum MHD_Result abx_api_sandbox_connect_v2(struct abx_api_req *r)
{
  char id[32], msg[160];
  enum MHD_Result sent = MHD_NO;
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  json_t *req = abx_api_body(r, 0, &sent);
  if (!req)
    return sent;
  long long t = ABX_V2_TIMEOUT_S;
  int ti = abx_api_get_int(req, "timeout", &t);
  json_t *mem = json_object_get(req, "memory");
  int bad_mem = mem && !json_is_null(mem) && !json_is_boolean(mem);
  int keep_memory = !json_is_false(mem);
  json_decref(req);
  if (ti < 0 || bad_mem) {
    snprintf(msg, sizeof msg, "validation error: field '%s' must be %s", ti < 0 ? "timeout" : "memory",
             ti < 0 ? "an integer" : "a boolean");
    return abx_http_error(r->c, 400, msg);
  }
  if (abx_api_check_timeout(t, msg, sizeof msg) != 0)
    return abx_http_error(r->c, 400, msg);
  struct abx_sandbox *s = abx_registry_get(id);
  if (!s)
    return abx_api_not_found(r->c, id);
  int resumed = 0;
  int rc = abx_lifecycle_connect(s, t, keep_memory, &resumed);
  json_t *out = NULL;
  if (rc == 0) {
    abx_registry_lock();
    out = abx_api_sandbox_json(s);
    abx_registry_unlock();
  }
  abx_registry_put(s);
  if (rc == 0)
    return abx_http_json(r->c, resumed ? 201 : 200, out);
  if (rc == 404)
    return abx_api_not_found(r->c, id);
  if (rc == 409) {
    snprintf(msg, sizeof msg, "Sandbox %s is changing state, try again", id);
    return abx_http_error(r->c, 409, msg);
  }
  return abx_http_error(r->c, 500, "the sandbox could not be resumed");
}
