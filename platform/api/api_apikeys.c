/*
 * api_apikeys.c: the /api-keys routes (contract, sources and auth in apikeys.h; the access token
 * is checked by abx_api_handle before these run).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "apikeys.h"
#include "util/util.h"

/* E2B's handler answers a missing id with c.String(404, "id not found") (handlers/apikey.go). */
static enum MHD_Result not_found(struct abx_api_req *r)
{
  return abx_http_text(r->c, 404, "text/plain; charset=utf-8", "id not found", 12);
}

/* The {name} body of POST and PATCH: the name (borrowed from *req), or NULL with 400 queued. */
static const char *body_name(struct abx_api_req *r, json_t **req, enum MHD_Result *sent)
{
  *req = abx_api_body(r, 1, sent);
  if (!*req)
    return NULL;
  json_t *name = json_object_get(*req, "name");
  if (!json_is_string(name)) {
    json_decref(*req);
    *req = NULL;
    *sent = abx_http_error(r->c, 400,
                           "validation error: field 'name' is required and must be a string");
    return NULL;
  }
  return json_string_value(name);
}

/* The {apiKeyID} path parameter must be a UUID (handlers/apikey.go uuid.Parse). */
static int id_ok(struct abx_api_req *r, enum MHD_Result *sent)
{
  if (abx_apikeys_uuid_ok(r->params[0]))
    return 1;
  *sent = abx_http_error(r->c, 400, "Error when parsing API key ID: invalid UUID format");
  return 0;
}

enum MHD_Result abx_api_keys_list(struct abx_api_req *r)
{
  json_t *arr = abx_apikeys_list();
  return arr ? abx_http_json(r->c, 200, arr)
             : abx_http_error(r->c, 500, "Error when getting team API keys");
}

enum MHD_Result abx_api_keys_create(struct abx_api_req *r)
{
  enum MHD_Result sent = MHD_NO;
  json_t *req;
  const char *name = body_name(r, &req, &sent);
  if (!name)
    return sent;
  char msg[200];
  json_t *out = NULL;
  int rc = abx_apikeys_create(name, &out, msg, sizeof msg);
  json_decref(req);
  return rc == 0 ? abx_http_json(r->c, 201, out) : abx_http_error(r->c, (unsigned)rc, msg);
}

enum MHD_Result abx_api_keys_rename(struct abx_api_req *r)
{
  enum MHD_Result sent = MHD_NO;
  if (!id_ok(r, &sent))
    return sent;
  json_t *req;
  const char *name = body_name(r, &req, &sent);
  if (!name)
    return sent;
  char msg[200];
  int rc = abx_apikeys_rename(r->params[0], name, msg, sizeof msg);
  json_decref(req);
  if (rc == 404)
    return not_found(r);
  return rc == 0 ? abx_http_json(r->c, 202, NULL) : abx_http_error(r->c, (unsigned)rc, msg);
}

enum MHD_Result abx_api_keys_delete(struct abx_api_req *r)
{
  enum MHD_Result sent = MHD_NO;
  if (!id_ok(r, &sent))
    return sent;
  char msg[200];
  int rc = abx_apikeys_delete(r->params[0], msg, sizeof msg);
  if (rc == 404)
    return not_found(r);
  return rc == 0 ? abx_http_json(r->c, 204, NULL) : abx_http_error(r->c, (unsigned)rc, msg);
}
