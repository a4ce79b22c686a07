/*
 * api_sandboxes.c: the sandbox routes of the control plane: create (template, autoPause,
 * volumeMounts), list (v1 and v2: state, metadata, template, order, pagination), get, kill,
 * timeout. The lifecycle routes are in api_lifecycle.c. Contract in api.h; shapes §3.2-§3.4 of
 * docs/protocol/e2b-control-plane.md.
 */
#include <inttypes.h>
#include <pthread.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_internal.h"
#include "base64.h"
#include "util/util.h"
#include "sandbox/sandbox.h"
#include "net/net.h"
#include "template/template.h"

/* ---- handlers ----------------------------------------------------------------------------- */

/* A volume mount path: absolute, not "/", no "." or ".." component, no empty component, not
 * under /proc, /dev or /opt/abx (the sandbox's own mounts). */
static int mount_path_ok(const char *p)
{
  size_t n = strlen(p);
  if (n < 2 || n > 255 || p[0] != '/' || p[n - 1] == '/')
    return 0;
  for (const char *s = p; *s;) {
    s++;
    size_t k = strcspn(s, "/");
    if (k == 0 || (k == 1 && s[0] == '.') || (k == 2 && s[0] == '.' && s[1] == '.'))
      return 0;
    s += k;
  }
  static const char *const reserved[] = {"/proc", "/dev", "/opt/abx"};
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
    size_t k = strlen(reserved[i]);
    if (strncmp(p, reserved[i], k) == 0 && (p[k] == 0 || p[k] == '/'))
      return 0;
  }
  return 1;
}

/* volumeMounts [{name, path, readOnly?}] (§3.2, §5): check each mount, and give them as
 * [{name, path, readOnly}] in *out (new; NULL when absent) for abx_sandbox_new, which takes a use
 * of each volume. 0, 400 or 500 with msg. */
static int check_volumes(json_t *vm, json_t **out, char *msg, size_t n)
{
  *out = NULL;
  if (!vm || json_is_null(vm))
    return 0;
  if (!json_is_array(vm) || json_array_size(vm) > 16) {
    snprintf(msg, n,
             "validation error: field 'volumeMounts' must be an array of at most 16 mounts");
    return 400;
  }
  size_t i;
  json_t *m;
  json_array_foreach(vm, i, m)
  {
    json_t *name = json_object_get(m, "name"), *path = json_object_get(m, "path");
    json_t *ro = json_object_get(m, "readOnly");
    if (!json_is_object(m) || !json_is_string(name) || !json_is_string(path) ||
        (ro && !json_is_boolean(ro) && !json_is_null(ro))) {
      snprintf(msg, n,
               "validation error: volumeMounts[%zu] must be {name: string, path: string, "
               "readOnly?: boolean}",
               i);
      return 400;
    }
    if (!mount_path_ok(json_string_value(path))) {
      snprintf(msg, n,
               "invalid volume mount path '%.100s': it must be absolute, not '/', without "
               "'.' or '..' components, and not under /proc, /dev or /opt/abx",
               json_string_value(path));
      return 400;
    }
    for (size_t k = 0; k < i; k++)
      if (strcmp(json_string_value(json_object_get(json_array_get(vm, k), "path")),
                 json_string_value(path)) == 0) {
        snprintf(msg, n, "volume mount path '%.100s' is used twice", json_string_value(path));
        return 400;
      }
  }
  *out = json_array();
  json_array_foreach(vm, i, m)
  {
    json_t *one = json_pack("{s:s,s:s,s:b}", "name", json_string_value(json_object_get(m, "name")),
                            "path", json_string_value(json_object_get(m, "path")), "readOnly",
                            json_is_true(json_object_get(m, "readOnly")));
    if (!*out || json_array_append_new(*out, one) != 0) {
      snprintf(msg, n, "out of memory");
      return 500;
    }
  }
  return 0;
}

/* autoPause, autoPauseMemory and autoResume {enabled} (§3.2 NewSandbox;
 * docs/protocol/e2b-v2-and-peers.md §1.2 NewSandboxV2: the same fields in both). autoPauseMemory
 * false is only valid with autoPause true and not together with autoResume. 0, or -1 with a 400
 * message. */
static int parse_lifecycle(json_t *req, struct abx_sandbox_spec *sb, char *msg, size_t n)
{
  if (abx_api_check_bool(req, "autoPause", msg, n) ||
      abx_api_check_bool(req, "autoPauseMemory", msg, n))
    return -1;
  json_t *ar = json_object_get(req, "autoResume");
  json_t *en = json_is_object(ar) ? json_object_get(ar, "enabled") : NULL;
  if (ar && !json_is_null(ar) &&
      (!json_is_object(ar) || (en && !json_is_boolean(en) && !json_is_null(en)))) {
    snprintf(msg, n, "validation error: field 'autoResume' must be an object {enabled: boolean}");
    return -1;
  }
  json_t *apm = json_object_get(req, "autoPauseMemory");
  sb->auto_pause = json_is_true(json_object_get(req, "autoPause"));
  sb->auto_pause_memory = !json_is_false(apm);
  sb->auto_resume = json_is_true(en);
  if (!sb->auto_pause_memory && !sb->auto_pause) {
    snprintf(msg, n, "autoPauseMemory can only be set when autoPause is true");
    return -1;
  }
  if (!sb->auto_pause_memory && sb->auto_resume) {
    snprintf(msg, n,
             "autoPauseMemory false (a filesystem-only pause) cannot be combined with "
             "autoResume");
    return -1;
  }
  return 0;
}

/* The fields of a create request (§3.2; v2: docs/protocol/e2b-v2-and-peers.md §1.2), checked
 * before anything is made, into `spec` (its borrowed json points into req) and *timeout (s).
 * 0, or 400 with msg. */
static int read_create(json_t *req, int v2, struct abx_sandbox_spec *spec, long long *timeout,
                       char *msg, size_t n)
{
  const struct abx_flavor *fl = abx_flavor();
  *timeout = v2 ? ABX_V2_TIMEOUT_S : fl->v1_default;
  int ti = abx_api_get_int(req, "timeout", timeout);
  if (ti > 0 && *timeout == 0 && fl->zero_is_default)
    /* OpenKruise: timeout 0 → 300 (docs/protocol/e2b-v2-and-peers.md §5) */
    *timeout = fl->v1_default;
  if (!json_is_string(json_object_get(req, "templateID"))) {
    snprintf(msg, n, "validation error: field 'templateID' is required and must be a string");
    return 400;
  }
  if (ti < 0) {
    snprintf(msg, n, "validation error: field 'timeout' must be an integer");
    return 400;
  }
  if (abx_api_check_str_map(req, "metadata", msg, n) ||
      abx_api_check_str_map(req, "envVars", msg, n) || abx_api_check_bool(req, "secure", msg, n) ||
      abx_api_check_bool(req, "allow_internet_access", msg, n) ||
      abx_api_check_bool(req, "allowInternetAccess", msg, n) ||
      abx_api_check_timeout(*timeout, msg, n) != 0)
    return 400;
  /* CubeSandbox parses and drops autoPause, envVars, volumeMounts, secure, mcp
   * (docs/protocol/e2b-v2-and-peers.md §5): none of them reaches the sandbox. */
  int extras = !fl->create_ignores_extras;
  if (extras && parse_lifecycle(req, spec, msg, n) != 0)
    return 400;
  json_t *vmreq = extras ? json_object_get(req, "volumeMounts") : NULL;
  if (fl->no_volumes && vmreq && !json_is_null(vmreq)) {
    /* Alibaba: volumes "not compatible" (docs/protocol/e2b-control-plane.md §8.1); the status and
     * message are ours, the reference gives none (flavor.h). */
    snprintf(msg, n,
             "validation error: field 'volumeMounts' is not supported by the %s flavor "
             "(volumes are not compatible there)",
             fl->name);
    return 400;
  }
  spec->volume_mounts = vmreq; /* checked by check_volumes, after the template is found */
  /* mutant metadata-dropped (util/mutant.h): checked above, stored nowhere */
  spec->metadata =
      abx_mutant_on(ABX_MUT_METADATA_DROPPED) ? NULL : json_object_get(req, "metadata");
  spec->secure = extras && (v2 || json_is_true(json_object_get(req, "secure")));
  spec->network = req;
  spec->env_vars = extras ? json_object_get(req, "envVars") : NULL;
  spec->start_failed = "failed to start sandbox";
  return 0;
}

/* POST /sandboxes (v1, §3.2) and POST /v2/sandboxes (docs/protocol/e2b-v2-and-peers.md §1.2). They
 * differ in the server-side defaults the 2.51 SDK leaves to the server: v1 timeout 15 s and
 * `secure` as sent; v2 timeout 300 s and every sandbox secured (the v2 schema has no `secure`: a
 * key sent anyway is ignored, as E2B ignores unknown keys). */
static enum MHD_Result create(struct abx_api_req *r, int v2)
{
  enum MHD_Result sent = MHD_NO;
  json_t *req = abx_api_body(r, 1, &sent);
  if (!req)
    return sent;
  char msg[ABX_START_ERR_MAX + 64];
  long long timeout = 0;
  struct abx_sandbox_spec spec = {.auto_pause_memory = 1};
  json_t *volumes = NULL;
  int st = read_create(req, v2, &spec, &timeout, msg, sizeof msg);
  const char *tid = json_string_value(json_object_get(req, "templateID"));
  if (st == 0 && !(spec.tmpl = abx_template_get(tid, 1))) {
    snprintf(msg, sizeof msg, "template '%.200s' not found", tid);
    st = 404;
  }
  if (st == 0)
    st = check_volumes(spec.volume_mounts, &volumes, msg, sizeof msg);
  spec.volume_mounts = volumes;
  /* a ready sandbox of the warm pool when there is one (sandbox/warm_pool.h), else a new one */
  struct abx_sandbox *sb = st == 0 ? abx_warm_pool_claim(&spec, req, &st, msg, sizeof msg) : NULL;
  if (!sb && st == 0)
    sb = abx_sandbox_new(&spec, &st, msg, sizeof msg);
  abx_template_put(spec.tmpl, 1); /* the sandbox holds its own */
  json_decref(volumes);
  json_decref(req);
  if (!sb)
    return abx_http_error(r->c, (unsigned)st, msg);
  sb->started_ns = abx_now_ns();
  sb->end_ns = sb->started_ns + (int64_t)timeout * 1000000000LL;
  sb->timeout_s = timeout; /* an auto-resume's TTL is max(this, 300 s): lifecycle.h */
  json_t *out = abx_api_sandbox_json(sb);
  abx_registry_add(sb);
  return abx_http_json(r->c, 201, out);
}

enum MHD_Result abx_api_sandbox_create(struct abx_api_req *r)
{
  return create(r, 0);
}
enum MHD_Result abx_api_sandbox_create_v2(struct abx_api_req *r)
{
  return create(r, 1);
}

json_t *abx_api_parse_metadata_filter(const char *q)
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

/* A list request's query (§3.4; v1 reads only metadata), read and checked. */
struct list_query {
  int v2;
  json_t *want; /* metadata filter, owned */
  int want_running, want_paused;
  int64_t started_after; /* CLOCK_REALTIME ns; INT64_MIN: none */
  int dir;               /* 1: newest first (desc, the default), -1: oldest first */
  char tpl[64];          /* template id or alias ("" any), its ":tag" cut */
  long limit;
  int have_cursor; /* nextToken: the last row of the previous page */
  int64_t cur_started;
  char cur_id[32];
};

static const char *query_arg(struct MHD_Connection *c, const char *name)
{
  return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* state=running,paused. 0, or -1 for an unknown state. */
static int read_states(const char *sq, struct list_query *q)
{
  q->want_running = q->want_paused = 0;
  int rc = 0;
  char *dup = strdup(sq), *save = NULL;
  for (char *s = dup ? strtok_r(dup, ",", &save) : NULL; s && rc == 0;
       s = strtok_r(NULL, ",", &save)) {
    if (strcmp(s, "running") == 0)
      q->want_running = 1;
    else if (strcmp(s, "paused") == 0)
      q->want_paused = 1;
    else
      rc = -1;
  }
  free(dup);
  return rc;
}

/* limit: 1 to 100. 0, or -1. */
static int read_limit(const char *lq, long *limit)
{
  char *end = NULL;
  *limit = strtol(lq, &end, 10);
  return !*lq || *end || *limit < 1 || *limit > 100 ? -1 : 0;
}

/* nextToken: base64url of "<startedNs>__<id>" (+ "__asc" for an ascending list). 0, or -1. */
static int read_cursor(const char *tq, struct list_query *q)
{
  size_t n = 0;
  unsigned char *raw = abx_b64_decode_alloc(tq, ABX_B64_URL_ONLY, &n);
  char *sep = raw ? strstr((char *)raw, "__") : NULL;
  char *end = NULL;
  size_t rl = raw ? strlen((char *)raw) : 0;
  if (rl > 5 && strcmp((char *)raw + rl - 5, "__asc") == 0)
    raw[rl - 5] = 0;
  if (sep) {
    *sep = 0;
    q->cur_started = strtoll((char *)raw, &end, 10);
  }
  int ok = sep && end && !*end && end != (char *)raw && abx_api_parse_id(sep + 2, q->cur_id) == 0 &&
           strlen(sep + 2) == strlen(q->cur_id);
  free(raw);
  q->have_cursor = ok;
  return ok ? 0 : -1;
}

/* The query of GET /sandboxes (v1) or GET /v2/sandboxes into q. NULL, or the 400 message (q->want
 * is then freed). */
static const char *read_list_query(struct MHD_Connection *c, int v2, struct list_query *q)
{
  const char *sq = query_arg(c, "state"), *lq = query_arg(c, "limit"),
             *tq = query_arg(c, "nextToken");
  const char *oq = query_arg(c, "order"), *tpq = query_arg(c, "template");
  const char *saq = query_arg(c, "startedAfter");
  *q = (struct list_query){.v2 = v2,
                           .started_after = INT64_MIN,
                           .dir = 1,
                           .limit = 100,
                           .want_running = 1,
                           .want_paused = v2};
  if (v2 && saq && abx_rfc3339_parse(saq, &q->started_after) != 0)
    return "validation error: startedAfter must be an RFC3339 date-time";
  if (v2 && oq && strcmp(oq, "desc") != 0) {
    if (strcmp(oq, "asc") != 0)
      return "validation error: order must be 'asc' or 'desc'";
    q->dir = -1;
  }
  if (v2 && tpq && *tpq)
    snprintf(q->tpl, sizeof q->tpl, "%.*s", (int)strcspn(tpq, ":"), tpq);
  q->want = abx_api_parse_metadata_filter(query_arg(c, "metadata"));
  if (!q->want)
    return "Invalid metadata";
  if (abx_mutant_on(ABX_MUT_METADATA_FILTER_IGNORED)) /* mutant: checked, then not applied */
    json_object_clear(q->want);
  const char *bad = NULL;
  if (v2 && sq && *sq && read_states(sq, q) != 0)
    bad = "validation error: invalid state value";
  else if (v2 && lq && read_limit(lq, &q->limit) != 0)
    bad = "validation error: limit must be between 1 and 100";
  else if (v2 && tq && *tq && read_cursor(tq, q) != 0)
    bad = "Invalid next token";
  /* mutants state-filter-ignored and next-token-ignored (util/mutant.h): checked, not applied */
  if (v2 && sq && *sq && abx_mutant_on(ABX_MUT_STATE_FILTER_IGNORED))
    q->want_running = q->want_paused = 1; /* as without a state: v2's default */
  if (abx_mutant_on(ABX_MUT_NEXT_TOKEN_IGNORED))
    q->have_cursor = 0; /* every page is the first */
  if (bad) {
    json_decref(q->want);
    q->want = NULL;
  }
  return bad;
}

/* The listed sandboxes that match q, as rows newest first (q->dir -1: oldest first); *running
 * counts the running ones (X-Total-Running). NULL when out of memory. */
static struct row *collect_rows(const struct list_query *q, size_t *nrows, long *running)
{
  size_t n = 0, cap = 16;
  struct row *rows = malloc(cap * sizeof *rows);
  *running = 0;
  abx_registry_lock();
  for (struct abx_sandbox *s = abx_registry_head(); s && rows; s = s->next) {
    if (!(s->paused ? q->want_paused : q->want_running) ||
        !metadata_matches(s->metadata, q->want) || s->started_ns <= q->started_after ||
        (q->tpl[0] && strcmp(s->template_id, q->tpl) != 0 && strcmp(s->alias, q->tpl) != 0))
      continue;
    if (n == cap) {
      struct row *nr = realloc(rows, (cap *= 2) * sizeof *rows);
      if (!nr)
        break;
      rows = nr;
    }
    *running += !s->paused;
    rows[n].started = s->started_ns;
    memcpy(rows[n].id, s->id, sizeof s->id);
    rows[n].obj = abx_api_listed_json(s, 0);
    n++;
  }
  abx_registry_unlock();
  if (rows)
    qsort(rows, n, sizeof *rows, row_cmp);
  for (size_t k = 0; rows && q->dir < 0 && k < n / 2; k++) {
    struct row tmp = rows[k];
    rows[k] = rows[n - 1 - k];
    rows[n - 1 - k] = tmp;
  }
  *nrows = n;
  return rows;
}

/* The page after q's cursor: at most q->limit rows (v2), with *next the token of the page after
 * it (malloc'd) when more rows follow. */
static json_t *one_page(const struct row *rows, size_t nrows, const struct list_query *q,
                        char **next)
{
  json_t *arr = json_array();
  size_t i = 0, taken = 0;
  *next = NULL;
  if (q->have_cursor) {
    struct row key = {q->cur_started, "", NULL};
    memcpy(key.id, q->cur_id, sizeof key.id);
    while (i < nrows && q->dir * row_cmp(&rows[i], &key) <= 0)
      i++;
  }
  for (; i < nrows; i++) {
    if (q->v2 && taken == (size_t)q->limit) {
      char buf[64];
      snprintf(buf, sizeof buf, "%" PRId64 "__%s%s", rows[i - 1].started, rows[i - 1].id,
               q->dir < 0 ? "__asc" : "");
      *next = abx_b64_encode_alloc(buf, strlen(buf), ABX_B64_URL);
      break;
    }
    json_array_append(arr, rows[i].obj);
    taken++;
  }
  return arr;
}

static enum MHD_Result list(struct MHD_Connection *c, int v2)
{
  struct list_query q;
  const char *bad = read_list_query(c, v2, &q);
  if (bad)
    return abx_http_error(c, 400, bad);
  size_t nrows = 0;
  long running = 0; /* matches before pagination, for X-Total-Running */
  struct row *rows = collect_rows(&q, &nrows, &running);
  json_decref(q.want);
  if (!rows)
    return abx_http_error(c, 500, "out of memory");
  char *next = NULL;
  json_t *arr = one_page(rows, nrows, &q, &next);
  for (size_t k = 0; k < nrows; k++)
    json_decref(rows[k].obj);
  free(rows);
  enum MHD_Result ret = abx_api_page(c, arr, next, v2 && q.want_running ? running : -1);
  free(next);
  return ret;
}

enum MHD_Result abx_api_sandbox_list(struct abx_api_req *r)
{
  return list(r->c, 0);
}
enum MHD_Result abx_api_sandbox_list_v2(struct abx_api_req *r)
{
  return list(r->c, 1);
}

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
  char id[32];
  enum MHD_Result sent = MHD_NO;
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  struct abx_sandbox *s = abx_sandbox_get(id);
  /* a paused sandbox is thawed and killed; mutant kill-noop: answered as killed, left alone */
  int rc = !s ? 404 : abx_mutant_on(ABX_MUT_KILL_NOOP) ? 0 : abx_lifecycle_kill(s, "killed by API");
  if (s)
    abx_sandbox_put(s);
  return rc == 0 ? abx_http_json(r->c, 204, NULL) : abx_api_not_found(r->c, id);
}

/* POST /sandboxes/{id}/timeout {timeout}: TTL = now + timeout, may shorten; 404 unless running
 * (§3.4). OpenKruise never shortens (flavor.h timeout_extends_only). */
enum MHD_Result abx_api_sandbox_timeout(struct abx_api_req *r)
{
  char id[32];
  enum MHD_Result sent = MHD_NO;
  long long t = 0;
  if (abx_api_sandbox_id(r, id, &sent) != 0 || abx_api_timeout_body(r, 1, &t, &sent) != 0)
    return sent;
  int64_t end = abx_now_ns() + (int64_t)t * 1000000000LL;
  abx_registry_lock();
  struct abx_sandbox *s = abx_registry_find(id);
  int ok = s && !s->paused;
  if (ok && (!abx_flavor()->timeout_extends_only || end > s->end_ns) &&
      !abx_mutant_on(ABX_MUT_SET_TIMEOUT_NOOP)) /* mutant set-timeout-noop: 204, TTL kept */
    s->end_ns = end;
  abx_registry_unlock();
  return ok ? abx_http_json(r->c, 204, NULL) : abx_api_not_found(r->c, id);
}
