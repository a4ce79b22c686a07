/*
 * api_templates.c: E2B's template build API routes (docs/protocol/e2b-v2-and-peers.md §2,
 * docs/protocol/e2b-control-plane.md §4); the store and the runner are template_build.h's, the
 * files cache layer_cache.h's. Template path parameters are one percent-decoded segment
 * ("name:tag").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "util/util.h"
#include "template/template.h"
#include "build/build.h"

static const char *qarg(struct abx_api_req *r, const char *k)
{
  return MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, k);
}

static int int_field(json_t *o, const char *k, int lo, int hi, int *out, char *msg, size_t n)
{
  long long v = 0;
  int ri = abx_api_get_int(o, k, &v);
  if (ri == 0)
    return 0;
  if (ri < 0 || v < lo || v > hi) {
    snprintf(msg, n, "validation error: field '%s' must be an integer from %d to %d", k, lo, hi);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* POST /v3/templates (TemplateBuildRequestV3) → 202 TemplateRequestResponseV3. */
enum MHD_Result abx_api_template_request(struct abx_api_req *r)
{
  enum MHD_Result sent;
  json_t *req = abx_api_body(r, 1, &sent);
  if (!req)
    return sent;
  static const char *const keys[] = {"name",          "tags",  "cpuCount", "memoryMB",
                                     "minFreeDiskMb", "alias", "teamID"};
  char msg[300];
  int cpu = ABX_BASE_CPU_COUNT, mem = ABX_BASE_MEMORY_MB, disk = 0;
  json_t *name = json_object_get(req, "name"), *alias = json_object_get(req, "alias");
  json_t *tags = json_object_get(req, "tags"), *out = NULL;
  int st = 400;
  if (abx_tbuild_only_keys(req, keys, sizeof keys / sizeof keys[0], "", msg, sizeof msg) ||
      int_field(req, "cpuCount", 1, 64, &cpu, msg, sizeof msg) ||
      int_field(req, "memoryMB", 128, 65536, &mem, msg, sizeof msg) ||
      int_field(req, "minFreeDiskMb", 0, 1 << 30, &disk, msg, sizeof msg))
    goto done;
  if ((name && !json_is_null(name) && !json_is_string(name)) ||
      (alias && !json_is_null(alias) && !json_is_string(alias))) {
    snprintf(msg, sizeof msg, "validation error: field '%s' must be a string",
             name && !json_is_string(name) ? "name" : "alias");
    goto done;
  }
  if (tags && !json_is_null(tags) && !json_is_array(tags)) {
    snprintf(msg, sizeof msg, "validation error: field 'tags' must be an array of strings");
    goto done;
  }
  const char *nm = json_string_value(name) ? json_string_value(name) : json_string_value(alias);
  st = abx_tstore_request(nm, json_is_array(tags) ? tags : NULL, cpu, mem, &out, msg, sizeof msg);
done:
  json_decref(req);
  return st == 0 ? abx_http_json(r->c, 202, out) : abx_http_error(r->c, (unsigned)st, msg);
}

/* GET /templates/{templateID}/files/{hash} → 201 {present, url}. */
enum MHD_Result abx_api_template_files(struct abx_api_req *r)
{
  const char *hash = r->params[1];
  if (!abx_lcache_valid_hash(hash))
    return abx_http_error(r->c, 400,
                          "invalid files hash: must be 64 lowercase hex digits (sha256)");
  abx_tstore_lock();
  int known = abx_tstore_find(r->params[0]) != NULL;
  abx_tstore_unlock();
  if (!known) {
    char msg[200];
    snprintf(msg, sizeof msg, "template '%.64s' not found", r->params[0]);
    return abx_http_error(r->c, 404, msg);
  }
  char url[600];
  abx_lcache_upload_url(r->c, hash, url, sizeof url);
  return abx_http_json(
      r->c, 201, json_pack("{s:b,s:s}", "present", abx_lcache_files_present(hash), "url", url));
}

/* Under the lock: template params[0] and build params[1], or NULL with a 404 queued. */
static struct abx_tbuild *find_build(struct abx_api_req *r, enum MHD_Result *sent)
{
  struct abx_ttemplate *t = abx_tstore_find(r->params[0]);
  struct abx_tbuild *b = abx_tstore_build(t, r->params[1]);
  if (!b) {
    char msg[300];
    snprintf(msg, sizeof msg,
             t ? "build '%.64s' of template '%.64s' not found" : "template '%.64s' not found",
             t ? r->params[1] : r->params[0], r->params[0]);
    *sent = abx_http_error(r->c, 404, msg);
  }
  return b;
}

/* POST /v2/templates/{templateID}/builds/{buildID} (TemplateBuildStartV2) → 202. */
enum MHD_Result abx_api_template_build_start(struct abx_api_req *r)
{
  enum MHD_Result sent;
  json_t *spec = abx_api_body(r, 1, &sent);
  if (!spec)
    return sent;
  char msg[400];
  if (abx_tbuild_validate(spec, msg, sizeof msg) != 0) {
    json_decref(spec);
    return abx_http_error(r->c, 400, msg);
  }
  abx_tstore_lock();
  struct abx_tbuild *b = find_build(r, &sent);
  if (b && b->started) {
    abx_tstore_unlock();
    json_decref(spec);
    return abx_http_error(r->c, 409, "this build was already started");
  }
  if (b) {
    b->started = 1;
    b->spec = spec;
    spec = NULL;
    abx_tbuild_enqueue(b);
  }
  abx_tstore_unlock();
  json_decref(spec);
  return b ? abx_http_json(r->c, 202, NULL) : sent;
}

static int query_size(struct abx_api_req *r, const char *k, size_t def, size_t max, size_t *out)
{
  const char *v = qarg(r, k);
  *out = def;
  if (!v)
    return 0;
  char *end;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || x < 0 || (unsigned long long)x > (unsigned long long)max)
    return -1; /* above the spec's maximum: a 400, never a silent clamp */
  *out = (size_t)x;
  return 0;
}

/* GET /templates/{templateID}/builds/{buildID}/status?logsOffset&limit&level. */
enum MHD_Result abx_api_template_build_status(struct abx_api_req *r)
{
  size_t off, lim;
  const char *level = qarg(r, "level");
  if (query_size(r, "logsOffset", 0, (size_t)1 << 40, &off) != 0)
    return abx_http_error(
        r->c, 400, "validation error: query parameter 'logsOffset' must be a non-negative integer");
  if (query_size(r, "limit", ABX_BUILD_LOGS_PAGE, ABX_BUILD_LOGS_PAGE, &lim) != 0)
    return abx_http_error(
        r->c, 400, "validation error: query parameter 'limit' must be an integer from 0 to 100");
  if (level && strcmp(level, "debug") && strcmp(level, "info") && strcmp(level, "warn") &&
      strcmp(level, "error"))
    return abx_http_error(
        r->c, 400,
        "validation error: query parameter 'level' must be one of debug, info, warn, error");
  enum MHD_Result sent;
  abx_tstore_lock();
  struct abx_tbuild *b = find_build(r, &sent);
  json_t *o = b ? abx_tstore_status_json(b, off, lim, level) : NULL;
  abx_tstore_unlock();
  return b ? abx_http_json(r->c, 200, o) : sent;
}

/* GET /templates/{templateID}/builds/{buildID}/logs?cursor&limit&direction&level → {logs}. */
enum MHD_Result abx_api_template_build_logs(struct abx_api_req *r)
{
  size_t lim;
  if (query_size(r, "limit", 100, 100, &lim) != 0)
    return abx_http_error(
        r->c, 400, "validation error: query parameter 'limit' must be an integer from 0 to 100");
  const char *dir = qarg(r, "direction"), *level = qarg(r, "level");
  int backward = dir && strcmp(dir, "backward") == 0;
  if (dir && !backward && strcmp(dir, "forward") != 0)
    return abx_http_error(
        r->c, 400, "validation error: query parameter 'direction' must be forward or backward");
  int64_t cursor = 0;
  const char *cs = qarg(r, "cursor");
  if (cs)
    cursor = strtoll(cs, NULL, 10) * 1000000LL; /* ms since the epoch */
  enum MHD_Result sent;
  abx_tstore_lock();
  struct abx_tbuild *b = find_build(r, &sent);
  json_t *all = b ? abx_tstore_status_json(b, 0, (size_t)-1, level) : NULL;
  abx_tstore_unlock();
  if (!b)
    return sent;
  json_t *src = json_object_get(all, "logEntries"), *logs = json_array();
  size_t n = json_array_size(src);
  for (size_t k = 0; k < n && json_array_size(logs) < lim; k++) {
    json_t *e = json_array_get(src, backward ? n - 1 - k : k);
    int64_t ns = 0;
    abx_rfc3339_parse(json_string_value(json_object_get(e, "timestamp")), &ns);
    if (cs && (backward ? ns > cursor : ns < cursor))
      continue;
    json_array_append(logs, e);
  }
  json_decref(all);
  return abx_http_json(r->c, 200, json_pack("{s:o}", "logs", logs));
}

/* POST /templates/tags {target: "name:tag", tags[]} → 201 {buildID, tags}. */
enum MHD_Result abx_api_template_tags_assign(struct abx_api_req *r)
{
  enum MHD_Result sent;
  json_t *req = abx_api_body(r, 1, &sent);
  if (!req)
    return sent;
  static const char *const keys[] = {"target", "tags"};
  char msg[300], x[136], tag[136];
  const char *target = json_string_value(json_object_get(req, "target"));
  json_t *tags = NULL, *out = NULL;
  int st = 400;
  if (abx_tbuild_only_keys(req, keys, 2, "", msg, sizeof msg))
    goto done;
  if (!target || abx_tstore_split_ref(target, x, sizeof x, tag, sizeof tag) != 0) {
    snprintf(msg, sizeof msg, "validation error: field 'target' is required: \"name:tag\"");
    goto done;
  }
  if (!json_is_array(json_object_get(req, "tags")) ||
      !json_array_size(json_object_get(req, "tags"))) {
    snprintf(msg, sizeof msg,
             "validation error: field 'tags' is required: a non-empty array of strings");
    goto done;
  }
  if (!(tags = abx_tstore_clean_tags(json_object_get(req, "tags"), msg, sizeof msg)))
    goto done;
  abx_tstore_lock();
  struct abx_ttemplate *t = abx_tstore_find(x);
  json_t *tg = t ? json_object_get(t->tags, tag) : NULL;
  struct abx_tbuild *b =
      tg ? abx_tstore_build(t, json_string_value(json_object_get(tg, "buildID"))) : NULL;
  if (!b) {
    st = 404;
    snprintf(msg, sizeof msg, t ? "tag '%s' of template '%s' not found" : "template '%s' not found",
             t ? tag : x, x);
  } else {
    size_t i;
    json_t *v;
    json_array_foreach(tags, i, v) abx_tstore_tag(t, b, json_string_value(v));
    abx_tstore_save(t);
    out = json_pack("{s:s,s:O}", "buildID", b->id, "tags", tags);
    st = 0;
  }
  abx_tstore_unlock();
done:
  json_decref(tags);
  json_decref(req);
  return st == 0 ? abx_http_json(r->c, 201, out) : abx_http_error(r->c, (unsigned)st, msg);
}

/* DELETE /templates/tags {name, tags[]} → 204. */
enum MHD_Result abx_api_template_tags_delete(struct abx_api_req *r)
{
  enum MHD_Result sent;
  json_t *req = abx_api_body(r, 1, &sent);
  if (!req)
    return sent;
  static const char *const keys[] = {"name", "tags"};
  char msg[300];
  const char *name = json_string_value(json_object_get(req, "name"));
  json_t *tags = json_object_get(req, "tags");
  int st = 400;
  if (abx_tbuild_only_keys(req, keys, 2, "", msg, sizeof msg))
    goto done;
  if (!name || !*name) {
    snprintf(msg, sizeof msg, "validation error: field 'name' is required and must be a string");
    goto done;
  }
  if (!json_is_array(tags) || !json_array_size(tags)) {
    snprintf(msg, sizeof msg,
             "validation error: field 'tags' is required: a non-empty array of strings");
    goto done;
  }
  json_t *clean = abx_tstore_clean_tags(tags, msg, sizeof msg);
  if (!clean)
    goto done;
  abx_tstore_lock();
  struct abx_ttemplate *t = abx_tstore_find(name);
  st = t ? 0 : 404;
  size_t i;
  json_t *v;
  json_array_foreach(clean, i, v)
  {
    if (t && !json_object_get(t->tags, json_string_value(v))) { /* all or none are removed */
      snprintf(msg, sizeof msg, "tag '%s' of template '%s' not found", json_string_value(v), name);
      st = 404;
    }
  }
  if (st == 0) {
    json_array_foreach(clean, i, v) json_object_del(t->tags, json_string_value(v));
    abx_tstore_save(t);
  } else if (!t)
    snprintf(msg, sizeof msg, "template '%.64s' not found", name);
  abx_tstore_unlock();
  json_decref(clean);
done:
  json_decref(req);
  return st == 0 ? abx_http_json(r->c, 204, NULL) : abx_http_error(r->c, (unsigned)st, msg);
}

/* GET /templates/{templateID}/tags → [{tag, buildID, createdAt}]. */
enum MHD_Result abx_api_template_tags_list(struct abx_api_req *r)
{
  abx_tstore_lock();
  struct abx_ttemplate *t = abx_tstore_find(r->params[0]);
  json_t *arr = t ? json_array() : NULL;
  const char *k;
  json_t *v;
  if (t)
    json_object_foreach(t->tags, k, v) json_array_append_new(
        arr, json_pack("{s:s,s:O,s:O}", "tag", k, "buildID", json_object_get(v, "buildID"),
                       "createdAt", json_object_get(v, "createdAt")));
  abx_tstore_unlock();
  if (!t) {
    char msg[200];
    snprintf(msg, sizeof msg, "template '%.64s' not found", r->params[0]);
    return abx_http_error(r->c, 404, msg);
  }
  return abx_http_json(r->c, 200, arr);
}

/* GET /templates/aliases/{alias} → 200 {templateID, public} | 404. Built-ins answer too. */
enum MHD_Result abx_api_template_alias(struct abx_api_req *r)
{
  /* "name" or "name:tag" (an explicit tag must exist: infra handlers/template_alias.go) */
  char x[136], tag[136], msg[300] = "";
  if (abx_tstore_split_ref(r->params[0], x, sizeof x, tag, sizeof tag) != 0)
    return abx_http_error(r->c, 400, "Invalid alias format");
  for (char *p = x; *p; p++)
    *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
  int has_tag = strchr(r->params[0], ':') != NULL;
  abx_tstore_lock();
  struct abx_ttemplate *t = abx_tstore_find(x);
  json_t *o = NULL;
  if (t && has_tag && !json_object_get(t->tags, tag))
    snprintf(msg, sizeof msg, "tag '%.64s' does not exist for template '%.64s'", tag, x);
  else if (t)
    o = json_pack("{s:s,s:b}", "templateID", t->id, "public", t->is_public);
  abx_tstore_unlock();
  if (msg[0])
    return abx_http_error(r->c, 404, msg);
  if (!o && !t && abx_template_valid_id(x)) {
    struct abx_template *bt = abx_template_get(r->params[0], 0);
    if (bt && bt->builtin)
      o = json_pack("{s:s,s:b}", "templateID", bt->id, "public", 1);
    abx_template_put(bt, 0);
  }
  if (!o) {
    char msg[200];
    snprintf(msg, sizeof msg, "template alias '%.64s' not found", r->params[0]);
    return abx_http_error(r->c, 404, msg);
  }
  return abx_http_json(r->c, 200, o);
}

/* GET /templates and GET /v2/templates: every built template (v2: one page, no token). */
enum MHD_Result abx_api_template_list(struct abx_api_req *r)
{
  json_t *arr = json_array();
  abx_tstore_lock();
  for (struct abx_ttemplate *t = abx_tstore_head(); t; t = t->next)
    json_array_append_new(arr, abx_tstore_template_json(t));
  abx_tstore_unlock();
  return abx_http_json(r->c, 200, arr);
}

/* GET /templates/{templateID} → TemplateWithBuilds. */
enum MHD_Result abx_api_template_get(struct abx_api_req *r)
{
  abx_tstore_lock();
  struct abx_ttemplate *t = abx_tstore_find(r->params[0]);
  json_t *o = t ? abx_tstore_template_builds_json(t) : NULL;
  abx_tstore_unlock();
  if (!o) {
    char msg[200];
    snprintf(msg, sizeof msg, "template '%.64s' not found", r->params[0]);
    return abx_http_error(r->c, 404, msg);
  }
  return abx_http_json(r->c, 200, o);
}

/* PATCH /templates/{templateID} (deprecated: 200, no body) and PATCH /v2/templates/{templateID}
 * (200 TemplateUpdateResponse {names}): TemplateUpdateRequest {public?: boolean}, what `e2b
 * template publish|unpublish` sends (e2b-dev/E2B spec/openapi.yml and packages/cli
 * src/commands/template/publish.ts @ b8029973). serve has one team, so `public` changes only what
 * the template list and GET /templates/aliases answer. 400 for a body that is not that object
 * (unknown keys named), 404 for an unknown template (id or name). */
static enum MHD_Result template_update(struct abx_api_req *r, int v2)
{
  enum MHD_Result sent;
  json_t *req = abx_api_body(r, 1, &sent);
  if (!req)
    return sent;
  static const char *const keys[] = {"public"};
  char msg[300];
  json_t *out = NULL;
  int st = 400;
  if (abx_tbuild_only_keys(req, keys, 1, "", msg, sizeof msg) == 0 &&
      abx_api_check_bool(req, "public", msg, sizeof msg) == 0) {
    json_t *pub = json_object_get(req, "public");
    abx_tstore_lock();
    struct abx_ttemplate *t = abx_tstore_find(r->params[0]);
    if (t && json_is_boolean(pub)) {
      t->is_public = json_is_true(pub);
      abx_tstore_save(t); /* the flag outlives this serve, as the template does */
    }
    if (t)
      st = 200, out = json_pack("{s:[s]}", "names", t->name);
    else
      st = 404, snprintf(msg, sizeof msg, "template '%.64s' not found", r->params[0]);
    abx_tstore_unlock();
  }
  json_decref(req);
  if (st != 200)
    return abx_http_error(r->c, (unsigned)st, msg);
  if (!v2) {
    json_decref(out);
    out = NULL;
  }
  return abx_http_json(r->c, 200, out);
}

enum MHD_Result abx_api_template_update(struct abx_api_req *r)
{
  return template_update(r, 0);
}

enum MHD_Result abx_api_template_update_v2(struct abx_api_req *r)
{
  return template_update(r, 1);
}
