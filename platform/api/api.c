/*
 * api.c: E2B control-plane dispatch of `abxlua serve`: the route table, API-key auth and the
 * helpers the route files share. Contract in api.h and api_internal.h.
 */
#include "api.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "api_internal.h"
#include "apikeys.h"
#include "e2b.h"
#include "util/util.h"
#include "net/net.h"
#include "sandbox/sandbox.h"

static const char *g_key;
static const char *g_domain;

void abx_api_config(const char *api_key, const char *domain)
{
  g_key = api_key;
  g_domain = domain;
}

/* ---- route table -------------------------------------------------------------------------- */

/* Patterns are matched segment by segment; "{x}" matches one non-empty segment into params[]. */
const struct abx_api_route abx_api_routes[] = {
    {"POST", "/sandboxes", abx_api_sandbox_create},
    {"POST", "/v2/sandboxes", abx_api_sandbox_create_v2},
    {"POST", "/v2/sandboxes/{id}/connect", abx_api_sandbox_connect_v2},
    {"GET", "/sandboxes", abx_api_sandbox_list},
    {"GET", "/v2/sandboxes", abx_api_sandbox_list_v2},
    {"GET", "/sandboxes/{id}", abx_api_sandbox_get},
    {"DELETE", "/sandboxes/{id}", abx_api_sandbox_kill},
    {"POST", "/sandboxes/{id}/timeout", abx_api_sandbox_timeout},
    {"POST", "/sandboxes/{id}/connect", abx_api_sandbox_connect},
    {"POST", "/sandboxes/{id}/resume", abx_api_sandbox_resume},
    {"POST", "/sandboxes/{id}/pause", abx_api_sandbox_pause},
    {"POST", "/sandboxes/{id}/refreshes", abx_api_sandbox_refreshes},
    {"GET", "/sandboxes/{id}/metrics", abx_api_sandbox_metrics},
    {"GET", "/sandboxes/{id}/logs", abx_api_sandbox_logs},
    {"GET", "/v2/sandboxes/{id}/logs", abx_api_sandbox_logs_v2},
    {"POST", "/sandboxes/{id}/snapshots", abx_api_snapshot_create},
    {"POST", "/sandboxes/{id}/fork", abx_api_sandbox_fork},
    {"GET", "/snapshots", abx_api_snapshot_list},
    /* templates: builds, tags, aliases (api_templates.c); DELETE also takes snapshots */
    {"POST", "/v3/templates", abx_api_template_request},
    {"GET", "/templates/{id}/files/{hash}", abx_api_template_files},
    {"POST", "/v2/templates/{id}/builds/{build}", abx_api_template_build_start},
    {"GET", "/templates/{id}/builds/{build}/status", abx_api_template_build_status},
    {"GET", "/templates/{id}/builds/{build}/logs", abx_api_template_build_logs},
    {"POST", "/templates/tags", abx_api_template_tags_assign},
    {"DELETE", "/templates/tags", abx_api_template_tags_delete},
    {"GET", "/templates/aliases/{alias}", abx_api_template_alias},
    {"GET", "/templates/{id}/tags", abx_api_template_tags_list},
    {"GET", "/v2/templates", abx_api_template_list},
    {"GET", "/templates", abx_api_template_list},
    {"GET", "/templates/{id}", abx_api_template_get},
    {"DELETE", "/templates/{id}", abx_api_template_delete},
    {"PATCH", "/templates/{id}", abx_api_template_update},
    {"PATCH", "/v2/templates/{id}", abx_api_template_update_v2},
    {"POST", "/volumes", abx_api_volume_create},
    {"GET", "/volumes", abx_api_volume_list},
    {"GET", "/volumes/{id}", abx_api_volume_get},
    {"DELETE", "/volumes/{id}", abx_api_volume_delete},
    {"PUT", "/sandboxes/{id}/network", abx_api_sandbox_network},
    /* managed API keys (apikeys.h): the access token, not X-API-Key, authorizes these */
    {"GET", "/api-keys", abx_api_keys_list},
    {"POST", "/api-keys", abx_api_keys_create},
    {"PATCH", "/api-keys/{id}", abx_api_keys_rename},
    {"DELETE", "/api-keys/{id}", abx_api_keys_delete},
};
const size_t abx_api_nroutes = sizeof abx_api_routes / sizeof abx_api_routes[0];

int abx_api_match(const char *pattern, const char *url, struct abx_api_req *r)
{
  int np = 0;
  const char *p = pattern, *u = url;
  while (*p && *u) {
    if (*p != '/' || *u != '/')
      return 0;
    p++, u++;
    size_t pl = strcspn(p, "/"), ul = strcspn(u, "/");
    if (pl > 1 && p[0] == '{') {
      if (ul == 0 || np >= ABX_API_MAX_PARAMS)
        return 0;
      if (ul >= sizeof r->params[0])
        return -1;
      memcpy(r->params[np], u, ul);
      r->params[np++][ul] = 0;
    } else if (pl != ul || strncmp(p, u, pl) != 0) {
      return 0;
    }
    p += pl, u += ul;
  }
  return *p == 0 && *u == 0;
}

static int key_ok(struct MHD_Connection *c)
{
  const char *k = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key");
  if (!k || strlen(k) != strlen(g_key))
    return 0;
  unsigned diff = 0; /* constant time over the key length */
  for (size_t i = 0; g_key[i]; i++)
    diff |= (unsigned char)k[i] ^ (unsigned char)g_key[i];
  return diff == 0;
}

/* serve's own key, or a managed key that was not deleted (apikeys.h) */
static int any_key_ok(struct MHD_Connection *c)
{
  if (key_ok(c))
    return 1;
  const char *k = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key");
  return k && abx_apikeys_check(k);
}

enum MHD_Result abx_api_handle(struct MHD_Connection *c, const char *method, const char *url,
                               const char *body, size_t len)
{
  if (strcmp(method, "HEAD") == 0)
    method = "GET";
  if (strcmp(url, "/health") == 0 && strcmp(method, "GET") == 0)
    return abx_http_text(c, 200, "text/plain; charset=utf-8", "Health check successful", 23);
  const struct abx_flavor *fl = abx_flavor();
  url = abx_flavor_strip_prefix(url); /* OpenKruise /kruise/api, CubeSandbox /cubeapi/v1 */
  /* E2B's refusals (docs/protocol/e2b-control-plane.md §1.2, §6.1). OpenKruise and Alibaba: the
   * reference gives no refusal body, so E2B's is kept (flavor.h); CubeSandbox takes any key
   * (check_key 0). */
  enum MHD_Result sent;
  if (abx_apikeys_path(url) && abx_flavor_serves("GET", "/api-keys")) {
    if (!abx_apikeys_authorized(c, &sent)) /* the admin credential, never an API key */
      return sent;
  } else {
    if (fl->check_key && !MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key"))
      return abx_http_error(c, 401, "authorization header is missing");
    if (fl->check_key && !any_key_ok(c))
      return abx_http_error(c, 401, "Invalid API key");
  }
  struct abx_api_req r = {.c = c, .method = method, .url = url, .body = body, .len = len};
  const struct abx_api_route *route = NULL;
  int st = abx_api_lookup(method, url, &r, &route);
  (void)sent;
  for (int i = 0; st == 0 && i < ABX_API_MAX_PARAMS; i++)
    if (abx_percent_decode(r.params[i], 0) != 0)
      return abx_http_error(c, 400, "validation error: path parameter has a bad %-escape");
  if (st == 0 && !abx_flavor_serves(route->method, route->pattern))
    st = 404; /* a route this platform does not have (flavor.h) */
  if (route && abx_mutant_on(ABX_MUT_V2_ROUTES_405) && strcmp(route->pattern, "/v2/sandboxes") == 0)
    st = 405; /* mutant v2-routes-405: POST and GET /v2/sandboxes, served or not */
  switch (st) {
  case 0: return route->fn(&r);
  case 400: return abx_http_error(c, 400, "validation error: path parameter is too long");
  case 405: return abx_http_error(c, 405, "method not allowed");
  default: return abx_http_error(c, 404, "not found");
  }
}

int abx_api_lookup(const char *method, const char *url, struct abx_api_req *r,
                   const struct abx_api_route **route)
{
  int path_known = 0;
  for (size_t i = 0; i < abx_api_nroutes; i++) {
    int m = abx_api_match(abx_api_routes[i].pattern, url, r);
    if (m < 0)
      return 400;
    if (m == 0)
      continue;
    path_known = 1;
    if (strcmp(abx_api_routes[i].method, method) == 0) {
      *route = &abx_api_routes[i];
      return 0;
    }
  }
  return path_known ? 405 : 404;
}

/* ---- shared helpers ----------------------------------------------------------------------- */

json_t *abx_api_body(struct abx_api_req *r, int required, enum MHD_Result *sent)
{
  if (!r->body || r->len == 0) {
    if (!required)
      return json_object();
    *sent = abx_http_error(r->c, 400, "validation error: request body is required");
    return NULL;
  }
  json_error_t je;
  json_t *j = json_loadb(r->body, r->len, 0, &je);
  if (!j || !json_is_object(j)) {
    char msg[300];
    snprintf(msg, sizeof msg, "validation error: request body has an error: %s",
             j ? "value must be an object" : je.text);
    json_decref(j);
    *sent = abx_http_error(r->c, 400, msg);
    return NULL;
  }
  return j;
}

int abx_api_timeout_body(struct abx_api_req *r, int required, long long *t, enum MHD_Result *sent)
{
  json_t *req = abx_api_body(r, required, sent);
  if (!req)
    return -1;
  int ri = abx_api_get_int(req, "timeout", t);
  json_decref(req);
  if (ri < 0 || (ri == 0 && required)) {
    *sent = abx_http_error(r->c, 400,
                           "validation error: field 'timeout' is required and must be an integer");
    return -1;
  }
  if (*t < 0)
    *t = 0;
  char msg[96];
  if (*t > 0 && abx_api_check_timeout(*t, msg, sizeof msg) != 0) {
    *sent = abx_http_error(r->c, 400, msg);
    return -1;
  }
  return 0;
}

int abx_api_check_timeout(long long t, char *msg, size_t n)
{
  const struct abx_flavor *fl = abx_flavor();
  if (fl->ttl_min != 1 && (t < fl->ttl_min || t > fl->ttl_max)) /* OpenKruise's own range */
    snprintf(msg, n, "timeout must be between %lld and %lld seconds, got %lld", fl->ttl_min,
             fl->ttl_max, t);
  else if (t <= 0)
    snprintf(msg, n, "Timeout must be greater than 0");
  else if (t > ABX_MAX_TIMEOUT_S)
    snprintf(msg, n, "Timeout cannot be greater than %d hours", ABX_MAX_TIMEOUT_S / 3600);
  else
    return 0;
  return -1;
}

int abx_api_check_str_map(json_t *o, const char *key, char *msg, size_t n)
{
  json_t *m = json_object_get(o, key);
  if (!m || json_is_null(m))
    return 0;
  const char *k;
  json_t *v;
  if (json_is_object(m)) {
    int ok = 1;
    json_object_foreach(m, k, v) ok = ok && json_is_string(v);
    if (ok)
      return 0;
  }
  snprintf(msg, n, "validation error: field '%s' must be an object of strings", key);
  return -1;
}

int abx_api_check_bool(json_t *o, const char *key, char *msg, size_t n)
{
  json_t *v = json_object_get(o, key);
  if (!v || json_is_boolean(v) || json_is_null(v))
    return 0;
  snprintf(msg, n, "validation error: field '%s' must be a boolean", key);
  return -1;
}

int abx_api_get_int(json_t *o, const char *key, long long *out)
{
  json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v))
    return 0;
  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return 1;
  }
  if (json_is_real(v) && json_real_value(v) == (double)(long long)json_real_value(v)) {
    *out = (long long)json_real_value(v);
    return 1;
  }
  return -1;
}

int abx_api_parse_id(const char *seg, char out[32])
{
  size_t n = strcspn(seg, "-"); /* the legacy `<sandboxID>-<clientID>` form */
  if (!abx_e2b_sandbox_id_valid(seg, n))
    return -1;
  memcpy(out, seg, n);
  out[n] = 0;
  return 0;
}

int abx_api_sandbox_id(struct abx_api_req *r, char out[32], enum MHD_Result *sent)
{
  if (abx_api_parse_id(r->params[0], out) == 0)
    return 0;
  *sent = abx_http_error(r->c, 400, "Invalid sandbox ID");
  return -1;
}

enum MHD_Result abx_api_not_found(struct MHD_Connection *c, const char *id)
{
  char msg[128];
  snprintf(msg, sizeof msg, "Sandbox \"%s\" doesn't exist or you don't have access to it", id);
  return abx_http_error(c, 404, msg);
}

enum MHD_Result abx_api_page(struct MHD_Connection *c, json_t *arr, const char *next,
                             long total_running)
{
  char *s = json_dumps(arr, JSON_COMPACT);
  json_decref(arr);
  struct MHD_Response *r = s ? abx_faults_response(s, strlen(s)) : NULL; /* copies */
  free(s);
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, "Content-Type", "application/json");
  if (next)
    MHD_add_response_header(r, "X-Next-Token", next);
  if (total_running >= 0) {
    char n[24];
    snprintf(n, sizeof n, "%ld", total_running);
    MHD_add_response_header(r, "X-Total-Running", n);
  }
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

/* ---- shapes (§3.3) ------------------------------------------------------------------------ */

/* What the answers report as envdVersion: ours, or the flavour's constant (CubeSandbox). */
static const char *envd_version(void)
{
  const char *v = abx_flavor()->const_envd_version;
  return v ? v : ABX_E2B_ENVD_VERSION;
}

static long disk_mb(void)
{
  struct statvfs v;
  if (statvfs("/", &v) != 0)
    return 1024;
  return (long)((unsigned long long)v.f_blocks * v.f_frsize / (1024 * 1024));
}

json_t *abx_api_sandbox_json(const struct abx_sandbox *sb)
{
  json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:n,s:s,s:s}", "templateID", sb->template_id, "sandboxID",
                        sb->id, "clientID", ABX_CLIENT_ID, "envdVersion", envd_version(),
                        "trafficAccessToken", "domain", g_domain, "alias", sb->alias);
  if (o && sb->secure)
    json_object_set_new(o, "envdAccessToken", json_string(sb->token));
  else if (o && abx_flavor()->const_envd_version) /* CubeSandbox: envdAccessToken null */
    json_object_set_new(o, "envdAccessToken", json_null());
  if (o)
    abx_network_json(sb->id, o, 0);
  return o;
}

json_t *abx_api_listed_json(const struct abx_sandbox *sb, int detail)
{
  char started[32], end[32];
  abx_rfc3339(sb->started_ns, started);
  abx_rfc3339(sb->paused ? sb->paused_ns : sb->end_ns, end);
  json_t *o = json_pack(
      "{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:s,s:s,s:O}", "templateID", sb->template_id, "alias",
      sb->alias, "sandboxID", sb->id, "clientID", ABX_CLIENT_ID, "startedAt", started, "endAt", end,
      "cpuCount", (json_int_t)sb->cpu_count, "memoryMB", (json_int_t)sb->memory_mb, "diskSizeMB",
      (json_int_t)disk_mb(), "state", sb->paused ? "paused" : "running", "envdVersion",
      envd_version(), "metadata", sb->metadata);
  if (o && abx_mutant_on(ABX_MUT_END_AT_MISSING)) /* mutant end-at-missing (util/mutant.h) */
    json_object_del(o, "endAt");
  if (o && sb->volume_mounts)
    json_object_set_new(o, "volumeMounts", json_deep_copy(sb->volume_mounts));
  if (o && detail) {
    json_object_set_new(o, "domain", sb->paused ? json_null() : json_string(g_domain));
    /* SandboxLifecycle (§3.3; e2b-dev/infra handlers/sandbox_get.go sandboxLifecycleToAPI) */
    json_object_set_new(o, "lifecycle",
                        json_pack("{s:b,s:s}", "autoResume", sb->auto_resume != 0, "onTimeout",
                                  sb->auto_pause ? "pause" : "kill"));
    if (sb->secure)
      json_object_set_new(o, "envdAccessToken", json_string(sb->token));
    abx_network_json(sb->id, o, 1);
  }
  return o;
}
