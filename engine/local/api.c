/*
 * api.c: E2B control-plane routes of `abxlua serve`. Contract in api.h.
 */
#include "local/api.h"

#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "local/http_util.h"
#include "local/registry.h"
#include "local/sandbox.h"

static const char *g_key;
static const char *g_domain;

void abx_api_config(const char *api_key, const char *domain)
{
  g_key = api_key;
  g_domain = domain;
}

/* ---- shapes (§3.3) ------------------------------------------------------------------------ */

static long cpu_count(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

static long memory_mb(void)
{
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  long mb = (pages > 0 && psz > 0) ? (long)((long long)pages * psz / (1024 * 1024)) : 0;
  return mb < 128 ? 128 : mb;
}

static long disk_mb(void)
{
  struct statvfs v;
  if (statvfs("/", &v) != 0)
    return 1024;
  return (long)((unsigned long long)v.f_blocks * v.f_frsize / (1024 * 1024));
}

/* Sandbox (create/connect). Under the registry lock or on an unlisted sandbox. */
static json_t *sandbox_json(const struct abx_sandbox *sb)
{
  json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:n,s:s,s:s}", "templateID", sb->template_id,
                        "sandboxID", sb->id, "clientID", ABX_CLIENT_ID, "envdVersion",
                        ABX_ENVD_VERSION, "trafficAccessToken", "domain", g_domain, "alias",
                        sb->alias);
  if (o && sb->secure)
    json_object_set_new(o, "envdAccessToken", json_string(sb->token));
  return o;
}

/* ListedSandbox, plus the SandboxDetail extras when `detail`. Under the registry lock. */
static json_t *listed_json(const struct abx_sandbox *sb, int detail)
{
  char started[32], end[32];
  abx_rfc3339(sb->started_ns, started);
  abx_rfc3339(sb->end_ns, end);
  json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:s,s:s,s:O}", "templateID",
                        sb->template_id, "alias", sb->alias, "sandboxID", sb->id, "clientID",
                        ABX_CLIENT_ID, "startedAt", started, "endAt", end, "cpuCount",
                        (json_int_t)cpu_count(), "memoryMB", (json_int_t)memory_mb(), "diskSizeMB",
                        (json_int_t)disk_mb(), "state", "running", "envdVersion", ABX_ENVD_VERSION,
                        "metadata", sb->metadata);
  if (o && detail) {
    json_object_set_new(o, "domain", json_string(g_domain));
    if (sb->secure)
      json_object_set_new(o, "envdAccessToken", json_string(sb->token));
  }
  return o;
}

/* ---- request parsing ---------------------------------------------------------------------- */

/* Parse a JSON object body; on failure queue 400 and return NULL with *sent set. */
static json_t *parse_body(struct MHD_Connection *c, const char *body, size_t len, int required,
                          enum MHD_Result *sent)
{
  if (!body || len == 0) {
    if (!required)
      return json_object();
    *sent = abx_http_error(c, 400, "validation error: request body is required");
    return NULL;
  }
  json_error_t je;
  json_t *j = json_loadb(body, len, 0, &je);
  if (!j || !json_is_object(j)) {
    char msg[300];
    snprintf(msg, sizeof msg, "validation error: request body has an error: %s",
             j ? "value must be an object" : je.text);
    json_decref(j);
    *sent = abx_http_error(c, 400, msg);
    return NULL;
  }
  return j;
}

/* Check that `key` of `o` is absent or an object of strings. Returns 0 or -1 (msg filled). */
static int check_str_map(json_t *o, const char *key, char *msg, size_t n)
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

static int check_bool(json_t *o, const char *key, char *msg, size_t n)
{
  json_t *v = json_object_get(o, key);
  if (!v || json_is_boolean(v) || json_is_null(v))
    return 0;
  snprintf(msg, n, "validation error: field '%s' must be a boolean", key);
  return -1;
}

/* Read an integer field; 1 when present (value in *out), 0 when absent, -1 on a wrong type. */
static int get_int(json_t *o, const char *key, long long *out)
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

/* Sandbox id from a path segment: drop a legacy "-<clientID>" suffix, require ^[a-z0-9]+$. */
static int parse_id(const char *seg, char out[32])
{
  size_t n = strcspn(seg, "-");
  if (n == 0 || n >= 32)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (!(islower((unsigned char)seg[i]) || isdigit((unsigned char)seg[i])))
      return -1;
  memcpy(out, seg, n);
  out[n] = 0;
  return 0;
}

static enum MHD_Result not_found(struct MHD_Connection *c, const char *id)
{
  char msg[128];
  snprintf(msg, sizeof msg, "Sandbox \"%s\" doesn't exist or you don't have access to it", id);
  return abx_http_error(c, 404, msg);
}

/* ---- handlers ----------------------------------------------------------------------------- */

static enum MHD_Result create(struct MHD_Connection *c, const char *body, size_t len)
{
  enum MHD_Result sent = MHD_NO;
  json_t *req = parse_body(c, body, len, 1, &sent);
  if (!req)
    return sent;
  char msg[300];
  json_t *tid = json_object_get(req, "templateID");
  long long timeout = 15;
  int ti = get_int(req, "timeout", &timeout);
  if (!json_is_string(tid)) {
    snprintf(msg, sizeof msg, "validation error: field 'templateID' is required and must be a string");
    goto bad;
  }
  if (ti < 0) {
    snprintf(msg, sizeof msg, "validation error: field 'timeout' must be an integer");
    goto bad;
  }
  if (check_str_map(req, "metadata", msg, sizeof msg) ||
      check_str_map(req, "envVars", msg, sizeof msg) || check_bool(req, "secure", msg, sizeof msg) ||
      check_bool(req, "allow_internet_access", msg, sizeof msg) ||
      check_bool(req, "allowInternetAccess", msg, sizeof msg) ||
      check_bool(req, "autoPause", msg, sizeof msg))
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
  json_t *out = sandbox_json(sb);
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
    if (!sep || !end || *end || end == (char *)raw || parse_id(sep + 2, cur_id) != 0 ||
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
    rows[nrows].obj = listed_json(s, 0);
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
  char *s = json_dumps(arr, JSON_COMPACT);
  json_decref(arr);
  struct MHD_Response *r =
    s ? MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE) : NULL;
  if (!r) {
    free(s);
    free(next);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "application/json");
  if (next)
    MHD_add_response_header(r, "X-Next-Token", next);
  free(next);
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result get_one(struct MHD_Connection *c, const char *id)
{
  abx_registry_lock();
  struct abx_sandbox *s = abx_registry_find(id);
  json_t *o = s ? listed_json(s, 1) : NULL;
  abx_registry_unlock();
  return o ? abx_http_json(c, 200, o) : not_found(c, id);
}

static enum MHD_Result kill_one(struct MHD_Connection *c, const char *id)
{
  struct abx_sandbox *s = abx_registry_take(id);
  if (!s)
    return not_found(c, id);
  abx_sandbox_destroy(s);
  return abx_http_json(c, 204, NULL);
}

/* POST /timeout (connect == 0) and /connect (connect == 1). */
static enum MHD_Result set_timeout(struct MHD_Connection *c, const char *id, const char *body,
                                   size_t len, int connect)
{
  enum MHD_Result sent = MHD_NO;
  json_t *req = parse_body(c, body, len, 1, &sent);
  if (!req)
    return sent;
  long long t = 0;
  int r = get_int(req, "timeout", &t);
  json_decref(req);
  if (r <= 0)
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
      out = sandbox_json(s);
  }
  abx_registry_unlock();
  if (!s)
    return not_found(c, id);
  return connect ? abx_http_json(c, 200, out) : abx_http_json(c, 204, NULL);
}

/* ---- routing ------------------------------------------------------------------------------ */

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

enum MHD_Result abx_api_handle(struct MHD_Connection *c, const char *method, const char *url,
                               const char *body, size_t len)
{
  int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  int post = strcmp(method, "POST") == 0, del = strcmp(method, "DELETE") == 0;
  if (strcmp(url, "/health") == 0 && get)
    return abx_http_text(c, 200, "text/plain; charset=utf-8", "Health check successful", 23);
  if (!MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key"))
    return abx_http_error(c, 401, "authorization header is missing");
  if (!key_ok(c))
    return abx_http_error(c, 401, "Invalid API key");
  if (strcmp(url, "/sandboxes") == 0) {
    if (post)
      return create(c, body, len);
    if (get)
      return list(c, 0);
    return abx_http_error(c, 405, "method not allowed");
  }
  if (strcmp(url, "/v2/sandboxes") == 0)
    return get ? list(c, 1) : abx_http_error(c, 405, "method not allowed");
  if (strncmp(url, "/sandboxes/", 11) == 0) {
    const char *seg = url + 11;
    const char *slash = strchr(seg, '/');
    char idseg[128], id[32];
    size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
    if (n >= sizeof idseg)
      return abx_http_error(c, 400, "Invalid sandbox ID");
    memcpy(idseg, seg, n);
    idseg[n] = 0;
    const char *rest = slash ? slash : "";
    int known = !*rest || strcmp(rest, "/timeout") == 0 || strcmp(rest, "/connect") == 0;
    if (!known)
      return abx_http_error(c, 404, "not found");
    if (parse_id(idseg, id) != 0)
      return abx_http_error(c, 400, "Invalid sandbox ID");
    if (!*rest && get)
      return get_one(c, id);
    if (!*rest && del)
      return kill_one(c, id);
    if (strcmp(rest, "/timeout") == 0 && post)
      return set_timeout(c, id, body, len, 0);
    if (strcmp(rest, "/connect") == 0 && post)
      return set_timeout(c, id, body, len, 1);
    return abx_http_error(c, 405, "method not allowed");
  }
  return abx_http_error(c, 404, "not found");
}
