/*
 * api_volumes.c: the volume routes (docs/protocol/e2b-control-plane.md §5): POST /volumes {name} →
 * 201 {volumeID,name,token} (400 bad name, 409 duplicate), GET /volumes → [{volumeID,name}],
 * GET /volumes/{id} → {volumeID,name,token} / 404, DELETE /volumes/{id} → 204 / 404 / 400 while
 * mounted by a live sandbox. Mounting is volumeMounts at create (api_sandboxes.c).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "util/util.h"
#include "sandbox/sandbox.h"

static enum MHD_Result volume_not_found(struct abx_api_req *r)
{
  char msg[200];
  snprintf(msg, sizeof msg, "volume '%.64s' not found", r->params[0]);
  return abx_http_error(r->c, 404, msg);
}

enum MHD_Result abx_api_volume_create(struct abx_api_req *r)
{
  enum MHD_Result sent = MHD_NO;
  json_t *req = abx_api_body(r, 1, &sent);
  if (!req)
    return sent;
  json_t *name = json_object_get(req, "name");
  if (!json_is_string(name)) {
    json_decref(req);
    return abx_http_error(r->c, 400,
                          "validation error: field 'name' is required and must be a string");
  }
  char msg[200];
  json_t *out = NULL;
  int rc = abx_volume_create(json_string_value(name), &out, msg, sizeof msg);
  json_decref(req);
  return rc == 0 ? abx_http_json(r->c, 201, out) : abx_http_error(r->c, (unsigned)rc, msg);
}

enum MHD_Result abx_api_volume_list(struct abx_api_req *r)
{
  json_t *arr = abx_volume_list();
  return arr ? abx_http_json(r->c, 200, arr) : abx_http_error(r->c, 500, "out of memory");
}

enum MHD_Result abx_api_volume_get(struct abx_api_req *r)
{
  json_t *o = abx_volume_get(r->params[0]);
  return o ? abx_http_json(r->c, 200, o) : volume_not_found(r);
}

enum MHD_Result abx_api_volume_delete(struct abx_api_req *r)
{
  char msg[200];
  int rc = abx_volume_delete(r->params[0], msg, sizeof msg);
  return rc == 0 ? abx_http_json(r->c, 204, NULL) : abx_http_error(r->c, (unsigned)rc, msg);
}
