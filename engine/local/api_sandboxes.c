/*
 * api_sandboxes.c: the sandbox routes of the control plane: create, list (v1 and v2), get, kill,
 * timeout, connect. Contract in api.h; shapes §3.2-§3.4 of reference/e2b-control-plane.md.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "local/api.h"
#include "local/api_internal.h"
#include "local/http_util.h"
#include "local/registry.h"
#include "local/sandbox.h"

/* ---- handlers ----------------------------------------------------------------------------- */

enum MHD_Result abx_api_sandbox_create(struct abx_api_req *r)
{
  struct MHD_Connection *c = r->c;
  enum MHD_Result sent = MHD_NO;
  json_t *req = abx_api_body(r, 1, &sent);
  if (!req)
    return sent;
  char msg[300];
  json_t *tid = json_object_get(req, "templateID");
  long long timeout = 15;
  int ti = abx_api_get_int(req, "timeout", &timeout);
  if (!json_is_string(tid)) {
    snprintf(msg, sizeof msg, "validation error: field 'templateID' is required and must be a string");
    goto bad;
  }
  if (ti < 0) {
    snprintf(msg, sizeof msg, "validation error: field 'timeout' must be an integer");
    goto bad;
  }
  if (abx_api_check_str_map(req, "metadata", msg, sizeof msg) ||
      abx_api_check_str_map(req, "envVars", msg, sizeof msg) || abx_api_check_bool(req, "secure", msg, sizeof msg) ||
      abx_api_check_bool(req, "allow_internet_access", msg, sizeof msg) ||
      abx_api_check_bool(req, "allowInternetAccess", msg, sizeof msg) ||
      abx_api_check_bool(req, "autoPause", msg, sizeof msg))
    goto bad;
  if (timeout <= 0) {
    snprintf(msg, sizeof msg, "Timeout must be greater than 0");
    goto bad;
  }
  if (timeout > ABX_MAX_TIMEOUT_S)
    timeout = ABX_MAX_TIMEOUT_S;
  const struct abx_template *t = abx_template_find(json_string_value(tid));
  if (!t) {
    snprintf(msg, sizeof msg, "template '%.200s' not found", json_string_value(tid));
    json_decref(req);
    return abx_http_error(c, 404, msg);
  }
  struct abx_sandbox *sb = calloc(1, sizeof *sb);
  if (!sb) {
    json_decref(req);
    return abx_http_error(c, 500, "out of memory");
  }
  sb->netns_fd = -1;
  snprintf(sb->template_id, sizeof sb->template_id, "%s", t->id);
  snprintf(sb->alias, sizeof sb->alias, "%s", t->alias);
  json_t *md = json_object_get(req, "metadata");
  sb->metadata = json_is_object(md) ? json_deep_copy(md) : json_object();
  sb->secure = json_is_true(json_object_get(req, "secure"));
  sb->id[0] = 'i';
  int rnd = abx_rand_alnum(sb->id + 1, 20);
  if (rnd == 0 && sb->secure)
    rnd = abx_rand_hex(sb->token, 32);
  if (rnd != 0) {
    json_decref(req);
    abx_sandbox_destroy(sb);
    return abx_http_error(c, 500, "no randomness available");
  }
  json_t *env = json_object_get(req, "envVars");
  json_t *env_obj = json_is_object(env) ? json_incref(env) : json_object();
  char err[512];
  int rc = abx_sandbox_start(sb, env_obj, err, sizeof err);
  json_decref(env_obj);
  json_decref(req);
  if (rc != 0) {
    char m[600];
    snprintf(m, sizeof m, "failed to start sandbox: %s", err);
    fprintf(stderr, "abxlua serve: %s\n", m);
    abx_sandbox_destroy(sb);
    return abx_http_error(c, 500, m);
  }
  sb->started_ns = abx_now_ns();
  sb->end_ns = sb->started_ns + (int64_t)timeout * 1000000000LL;
  json_t *out = abx_api_sandbox_json(sb);
  abx_registry_add(sb);
  return abx_http_json(c, 201, out);
bad:
  json_decref(req);
  return abx_http_error(c, 400, msg);
}

/* Parse the `metadata` filter (a query string, keys and values percent-encoded) into an object.
 * NULL on a malformed string. */
static json_t *parse_metadata_filter(const char *q)
{
  json_t *o = json_object();
  char *dup = strdup(q ? q : ""), *save = NULL;
  if (!o || !dup) {
    json_decref(o);
    free(dup);
    return NULL;
  }
  for (char *pair = strtok_r(dup, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
    char *eq = strchr(pair, '=');
    if (!eq)
      goto bad;
    *eq = 0;
    char *k = pair, *v = eq + 1;
    if (abx_percent_decode(k, 1) || abx_percent_decode(v, 1) || !*k)
      goto bad;
    /* The SDKs quote() keys and values before urlencode(); undo that layer when it parses. */
    char *k2 = strdup(k), *v2 = strdup(v);
    if (k2 && v2 && abx_percent_decode(k2, 0) == 0 && abx_percent_decode(v2, 0) == 0)
      json_object_set_new(o, k2, json_string(v2));
    else
      json_object_set_new(o, k, json_string(v));
    free(k2);
    free(v2);
  }
  free(dup);
  return o;
bad:
  free(dup);
  json_decref(o);
  return NULL;
}

static int metadata_matches(json_t *have, json_t *want)
{
  const char *k;
  json_t *v;
  json_object_foreach(want, k, v)
  {
    json_t *h = json_object_get(have, k);
    if (!json_is_string(h) || strcmp(json_string_value(h), json_string_value(v)) != 0)
      return 0;
  }
  return 1;
}

struct row {
  int64_t started;
  char id[32];
  json_t *obj;
};

static int row_cmp(const void *a, const void *b)
{
  const struct row *x = a, *y = b;
  if (x->started != y->started)
    return x->started > y->started ? -1 : 1; /* newest first */
  return strcmp(x->id, y->id);
}

static enum MHD_Result list(struct MHD_Connection *c, int v2)
{
  const char *mq = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "metadata");
  const char *sq = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
  const char *lq = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
  const char *tq = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "nextToken");
  json_t *want = parse_metadata_filter(mq);
  if (!want)
    return abx_http_error(c, 400, "Invalid metadata");
  int want_running = 1;
  long limit = 100;
  int64_t cur_started = 0;
  char cur_id[32] = "";
  int have_cursor = 0;
  if (v2 && sq && *sq) {
    want_running = 0;
    char *dup = strdup(sq), *save = NULL;
    for (char *s = dup ? strtok_r(dup, ",", &save) : NULL; s; s = strtok_r(NULL, ",", &save)) {
      if (strcmp(s, "running") == 0)
        want_running = 1;
      else if (strcmp(s, "paused") != 0) {
        free(dup);
        json_decref(want);
        return abx_http_error(c, 400, "validation error: invalid state value");
      }
    }
    free(dup);
  }
  if (v2 && lq) {
    char *end = NULL;
    limit = strtol(lq, &end, 10);
    if (!*lq || *end || limit < 1 || limit > 100) {
      json_decref(want);
      return abx_http_error(c, 400, "validation error: limit must be between 1 and 100");
    }
  }
  if (v2 && tq && *tq) {
    size_t n = 0;
    unsigned char *raw = abx_b64url_decode(tq, &n);
    char *sep = raw ? strstr((char *)raw, "__") : NULL;
    char *end = NULL;
    if (sep) {
      *sep = 0;
      cur_started = strtoll((char *)raw, &end, 10);
    }
    if (!sep || !end || *end || end == (char *)raw || abx_api_parse_id(sep + 2, cur_id) != 0 ||
        strlen(sep + 2) != strlen(cur_id)) {
      free(raw);
      json_decref(want);
      return abx_http_error(c, 400, "Invalid next token");
    }
    free(raw);
    have_cursor = 1;
  }
  size_t nrows = 0, cap = 16;
  struct row *rows = malloc(cap * sizeof *rows);
  abx_registry_lock();
  for (struct abx_sandbox *s = abx_registry_head(); s && rows && want_running; s = s->next) {
    if (!metadata_matches(s->metadata, want))
      continue;
    if (nrows == cap) {
      struct row *nr = realloc(rows, (cap *= 2) * sizeof *rows);
      if (!nr)
        break;
      rows = nr;
    }
    rows[nrows].started = s->started_ns;
    memcpy(rows[nrows].id, s->id, sizeof s->id);
    rows[nrows].obj = abx_api_listed_json(s, 0);
    nrows++;
  }
  abx_registry_unlock();
  json_decref(want);
  if (!rows)
    return abx_http_error(c, 500, "out of memory");
  qsort(rows, nrows, sizeof *rows, row_cmp);
  json_t *arr = json_array();
  size_t i = 0, taken = 0;
  if (have_cursor) {
    struct row key = {cur_started, "", NULL};
    memcpy(key.id, cur_id, sizeof key.id);
    while (i < nrows && row_cmp(&rows[i], &key) <= 0)
      i++;
  }
  char *next = NULL;
  for (; i < nrows; i++) {
    if (v2 && taken == (size_t)limit) {
      char buf[64];
      snprintf(buf, sizeof buf, "%" PRId64 "__%s", rows[i - 1].started, rows[i - 1].id);
      next = abx_b64url_encode((unsigned char *)buf, strlen(buf));
      break;
    }
    json_array_append(arr, rows[i].obj);
    taken++;
  }
  for (size_t k = 0; k < nrows; k++)
    json_decref(rows[k].obj);
  free(rows);
  enum MHD_Result ret = abx_api_page(c, arr, next);
  free(next);
  return ret;
}

enum MHD_Result abx_api_sandbox_list(struct abx_api_req *r) { return list(r->c, 0); }
enum MHD_Result abx_api_sandbox_list_v2(struct abx_api_req *r) { return list(r->c, 1); }

enum MHD_Result abx_api_sandbox_get(struct abx_api_req *r)
{
  struct MHD_Connection *c = r->c;
  char id[32];
  enum MHD_Result sent = MHD_NO;
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  abx_registry_lock();
  struct abx_sandbox *s = abx_registry_find(id);
  json_t *o = s ? abx_api_listed_json(s, 1) : NULL;
  abx_registry_unlock();
  return o ? abx_http_json(c, 200, o) : abx_api_not_found(c, id);
}

enum MHD_Result abx_api_sandbox_kill(struct abx_api_req *r)
{
  struct MHD_Connection *c = r->c;
  char id[32];
  enum MHD_Result sent = MHD_NO;
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  struct abx_sandbox *s = abx_registry_take(id);
  if (!s)
    return abx_api_not_found(c, id);
  abx_sandbox_destroy(s);
  return abx_http_json(c, 204, NULL);
}

/* POST /timeout (connect == 0) and /connect (connect == 1). */
static enum MHD_Result set_timeout(struct abx_api_req *r, int connect)
{
  struct MHD_Connection *c = r->c;
  char id[32];
  enum MHD_Result sent = MHD_NO;
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  json_t *req = abx_api_body(r, 1, &sent);
  if (!req)
    return sent;
  long long t = 0;
  int ri = abx_api_get_int(req, "timeout", &t);
  json_decref(req);
  if (ri <= 0)
    return abx_http_error(c, 400, "validation error: field 'timeout' is required and must be an integer");
  if (t < 0)
    t = 0;
  if (t > ABX_MAX_TIMEOUT_S)
    t = ABX_MAX_TIMEOUT_S;
  int64_t end = abx_now_ns() + (int64_t)t * 1000000000LL;
  abx_registry_lock();
  struct abx_sandbox *s = abx_registry_find(id);
  json_t *out = NULL;
  if (s) {
    if (!connect || end > s->end_ns)
      s->end_ns = end;
    if (connect)
      out = abx_api_sandbox_json(s);
  }
  abx_registry_unlock();
  if (!s)
    return abx_api_not_found(c, id);
  return connect ? abx_http_json(c, 200, out) : abx_http_json(c, 204, NULL);
}

enum MHD_Result abx_api_sandbox_timeout(struct abx_api_req *r) { return set_timeout(r, 0); }
enum MHD_Result abx_api_sandbox_connect(struct abx_api_req *r) { return set_timeout(r, 1); }
