/*
 * control.c: the opensandbox flavour's control plane: dispatch under /v1, the API key, answers
 * with X-Request-ID, the records, and every route but create (create.c). Contract in opensandbox.h,
 * shared parts in opensandbox_int.h.
 */
#include "opensandbox.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "e2b.h"
#include "util/util.h"
#include "net/net.h"
#include "sandbox/sandbox.h"
#include "opensandbox_int.h"

static const char *g_key;
static const char *g_host;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct opensandbox_rec *g_recs;

void abx_opensandbox_config(const char *api_key, const char *endpoint_host)
{
  g_key = api_key;
  g_host = endpoint_host;
}

/* ---- records ------------------------------------------------------------------------------ */

void opensandbox_lock(void)
{
  pthread_mutex_lock(&g_mu);
}
void opensandbox_unlock(void)
{
  pthread_mutex_unlock(&g_mu);
}

struct opensandbox_rec *opensandbox_find(const char *id)
{
  for (struct opensandbox_rec *r = g_recs; r; r = r->next)
    if (strcmp(r->id, id) == 0)
      return r;
  return NULL;
}

void opensandbox_add(struct opensandbox_rec *r)
{
  opensandbox_lock();
  r->next = g_recs;
  g_recs = r;
  opensandbox_unlock();
}

void opensandbox_drop(struct opensandbox_rec *r)
{
  for (struct opensandbox_rec **p = &g_recs; *p; p = &(*p)->next)
    if (*p == r) {
      *p = r->next;
      break;
    }
  json_decref(r->entrypoint);
  json_decref(r->metadata);
  json_decref(r->platform);
  json_decref(r->egress);
  free(r);
}

/* ---- answers ------------------------------------------------------------------------------ */

enum MHD_Result opensandbox_send(struct MHD_Connection *c, unsigned status, json_t *body,
                                 const char *location)
{
  char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  struct MHD_Response *r = abx_faults_response(s ? s : "", s ? strlen(s) : 0); /* copies */
  free(s);
  if (!r)
    return MHD_NO;
  if (body)
    MHD_add_response_header(r, "Content-Type", "application/json");
  /* request_id.py: the client's X-Request-ID (stripped) or uuid4().hex */
  const char *rid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-ID");
  char gen[33], own[128];
  while (rid && (*rid == ' ' || *rid == '\t'))
    rid++;
  size_t rl = rid ? strlen(rid) : 0;
  while (rl && (rid[rl - 1] == ' ' || rid[rl - 1] == '\t'))
    rl--;
  if (rl && rl < sizeof own) {
    memcpy(own, rid, rl);
    own[rl] = 0;
    rid = own;
  } else {
    rid = abx_rand_hex(gen, 32) == 0 ? gen : "00000000000000000000000000000000";
  }
  MHD_add_response_header(r, "X-Request-ID", rid);
  if (location)
    MHD_add_response_header(r, "Location", location);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

enum MHD_Result opensandbox_error(struct MHD_Connection *c, unsigned status, const char *code,
                                  const char *msg)
{
  return opensandbox_send(c, status, json_pack("{s:s,s:s}", "code", code, "message", msg), NULL);
}

static enum MHD_Result not_found(struct MHD_Connection *c, const char *id)
{
  char msg[128];
  snprintf(msg, sizeof msg, "Sandbox %.64s not found.", id); /* docker_service.py */
  return opensandbox_error(c, 404, OPENSANDBOX_E_NOT_FOUND, msg);
}

json_t *opensandbox_time_json(int64_t ns)
{
  if (ns == OPENSANDBOX_NEVER)
    return json_null();
  char t[32];
  abx_rfc3339(ns, t);
  return json_string(t);
}

json_t *opensandbox_sandbox_json(const struct opensandbox_rec *r, int created)
{
  const char *state = "Pending", *reason = "SANDBOX_STARTING", *msg = "Sandbox is starting.";
  if (r->state == OPENSANDBOX_FAILED) {
    state = "Failed";
    reason = r->reason;
    msg = r->message;
  } else if (r->state == OPENSANDBOX_LIVE) {
    abx_registry_lock();
    struct abx_sandbox *s = abx_registry_find(r->id);
    int paused = s ? s->paused : 0;
    abx_registry_unlock();
    if (!s)
      return NULL;
    if (r->op == OPENSANDBOX_OP_PAUSING)
      state = "Pausing", reason = "SANDBOX_PAUSING", msg = "Sandbox is pausing.";
    else if (r->op == OPENSANDBOX_OP_RESUMING)
      state = "Resuming", reason = "SANDBOX_RESUMING", msg = "Sandbox is resuming.";
    else if (r->op == OPENSANDBOX_OP_KILLING)
      state = "Stopping", reason = "TTL_EXPIRY", msg = "Sandbox expired and is being removed.";
    else if (paused)
      state = "Paused", reason = "SANDBOX_PAUSED", msg = "Sandbox is paused.";
    else
      state = "Running", reason = "SANDBOX_RUNNING", msg = "Sandbox is running.";
    if (r->reason[0] && r->op == OPENSANDBOX_OP_NONE) /* the last state change failed: say so */
      reason = r->reason, msg = r->message;
  }
  json_t *o =
      json_pack("{s:s,s:{s:s,s:s,s:s,s:o},s:O,s:O,s:o}", "id", r->id, "status", "state", state,
                "reason", reason, "message", msg, "lastTransitionAt",
                opensandbox_time_json(r->transition_ns), "metadata", r->metadata, "entrypoint",
                r->entrypoint, "createdAt", opensandbox_time_json(r->created_ns));
  if (o && r->expires_ns != OPENSANDBOX_NEVER) /* "Omitted when manual cleanup is enabled" */
    json_object_set_new(o, "expiresAt", opensandbox_time_json(r->expires_ns));
  if (o && !created && r->snapshot_id[0])
    json_object_set_new(o, "snapshotId", json_string(r->snapshot_id));
  else if (o && !created)
    json_object_set_new(o, "image", json_pack("{s:s}", "uri", r->image));
  if (o && r->platform)
    json_object_set_new(o, "platform", json_deep_copy(r->platform));
  if (o && !created && r->state == OPENSANDBOX_LIVE) { /* the local platform's extension */
    json_t *net = json_object();
    abx_network_json(r->id, net, 1);
    json_t *ab = json_object_get(net, "abxNetwork");
    if (ab)
      json_object_set(o, "abxNetwork", ab);
    json_decref(net);
  }
  return o;
}

/* ---- routes ------------------------------------------------------------------------------- */

static enum MHD_Result get_one(struct MHD_Connection *c, const char *id)
{
  opensandbox_lock();
  struct opensandbox_rec *r = opensandbox_find(id);
  json_t *o = r ? opensandbox_sandbox_json(r, 0) : NULL;
  opensandbox_unlock();
  return o ? opensandbox_send(c, 200, o, NULL) : not_found(c, id);
}

struct list_q {
  char states[8][16];
  int nstates, bad;
};

static enum MHD_Result collect_state(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
  (void)kind;
  struct list_q *q = cls;
  if (key && strcmp(key, "state") == 0 && value) {
    if (q->nstates == 8 || strlen(value) >= sizeof q->states[0])
      q->bad = 1;
    else
      snprintf(q->states[q->nstates++], sizeof q->states[0], "%s", value);
  }
  return MHD_YES;
}

/* The metadata filter as api/lifecycle.py reads it: parse_qsl(value, keep_blank_values=True,
 * strict_parsing=True) of the (already URL-decoded) query value; a piece without '=' (empty
 * ones too) is an error. NULL on error. */
static json_t *metadata_filter(const char *q)
{
  json_t *o = json_object();
  char *dup = strdup(q), *p = dup;
  while (o && dup) {
    char *amp = strchr(p, '&');
    if (amp)
      *amp = 0;
    char *eq = strchr(p, '=');
    if (!eq) {
      json_decref(o);
      o = NULL;
      break;
    }
    *eq = 0;
    if (abx_percent_decode(p, 1) != 0 || abx_percent_decode(eq + 1, 1) != 0) {
      json_decref(o);
      o = NULL;
      break;
    }
    json_object_set_new(o, p, json_string(eq + 1));
    if (!amp)
      break;
    p = amp + 1;
  }
  free(dup);
  return dup ? o : NULL;
}

int opensandbox_query_int(struct MHD_Connection *c, const char *name, long dflt, long max,
                          long *out)
{
  const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
  *out = dflt;
  if (!v)
    return 0;
  char *end = NULL;
  long n = strtol(v, &end, 10);
  if (!*v || *end || n < 1 || n > max)
    return -1;
  *out = n;
  return 0;
}

struct row {
  int64_t created;
  json_t *obj;
};

static int row_cmp(const void *a, const void *b)
{
  const struct row *x = a, *y = b; /* newest first (docker_service.py list_sandboxes) */
  return x->created == y->created ? 0 : x->created > y->created ? -1 : 1;
}

/* GET /v1/sandboxes?state=&state=&metadata=&page=1&pageSize=20 (pageSize at most 200:
 * api/lifecycle.py Query(le=200)); states compared case-insensitively (helpers.py
 * matches_filter). */
static enum MHD_Result list(struct MHD_Connection *c)
{
  struct list_q q = {0};
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_state, &q);
  long page, size;
  if (q.bad)
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID,
                             "query 'state': at most 8 values of at most 15 bytes");
  if (opensandbox_query_int(c, "page", 1, 1000000, &page) != 0)
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID, "query 'page' must be an integer >= 1");
  if (opensandbox_query_int(c, "pageSize", 20, 200, &size) != 0)
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID,
                             "query 'pageSize' must be an integer from 1 to 200");
  const char *mq = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "metadata");
  json_t *want = metadata_filter(mq ? mq : "");
  if (mq && *mq && !want)
    return opensandbox_error(
        c, 400, "INVALID_METADATA_FORMAT",
        "Invalid metadata format: bad query field (every piece must be key=value)");
  if (!want)
    want = json_object();
  size_t n = 0, cap = 16;
  struct row *rows = malloc(cap * sizeof *rows);
  opensandbox_lock();
  for (struct opensandbox_rec *r = g_recs; r && rows; r = r->next) {
    json_t *o = opensandbox_sandbox_json(r, 0);
    if (!o)
      continue;
    const char *st = json_string_value(json_object_get(json_object_get(o, "status"), "state"));
    int ok = q.nstates == 0;
    for (int i = 0; i < q.nstates; i++)
      ok = ok || strcasecmp(q.states[i], st) == 0;
    const char *k;
    json_t *v;
    json_object_foreach(want, k, v)
    {
      json_t *h = json_object_get(r->metadata, k);
      ok = ok && json_is_string(h) && strcmp(json_string_value(h), json_string_value(v)) == 0;
    }
    if (!ok || (n == cap && !(rows = realloc(rows, (cap *= 2) * sizeof *rows)))) {
      json_decref(o);
      continue;
    }
    rows[n].created = r->created_ns;
    rows[n++].obj = o;
  }
  opensandbox_unlock();
  json_decref(want);
  if (!rows)
    return opensandbox_error(c, 500, OPENSANDBOX_E_INTERNAL, "out of memory");
  qsort(rows, n, sizeof *rows, row_cmp);
  json_t *items = json_array();
  size_t from = (size_t)(page - 1) * (size_t)size;
  for (size_t i = 0; i < n; i++) {
    if (i >= from && i < from + (size_t)size)
      json_array_append(items, rows[i].obj);
    json_decref(rows[i].obj);
  }
  free(rows);
  long pages = (long)((n + (size_t)size - 1) / (size_t)size);
  return opensandbox_send(c, 200,
                          json_pack("{s:o,s:{s:i,s:i,s:i,s:i,s:b}}", "items", items, "pagination",
                                    "page", (int)page, "pageSize", (int)size, "totalItems", (int)n,
                                    "totalPages", (int)pages, "hasNextPage", page < pages),
                          NULL);
}

/* DELETE: 204. A Pending sandbox is killed once its start ends; a Failed one's record goes. */
static enum MHD_Result delete_one(struct MHD_Connection *c, const char *id)
{
  opensandbox_lock();
  struct opensandbox_rec *r = opensandbox_find(id);
  int live = r && r->state == OPENSANDBOX_LIVE;
  if (r && r->state == OPENSANDBOX_PENDING)
    r->deleted = 1;
  else if (r && r->state == OPENSANDBOX_FAILED)
    opensandbox_drop(r);
  opensandbox_unlock();
  if (!r)
    return not_found(c, id);
  if (live) {
    struct abx_sandbox *s = abx_sandbox_get(id);
    int rc = s ? abx_lifecycle_kill(s, "killed by API") : 404;
    if (s)
      abx_sandbox_put(s);
    opensandbox_lock();
    if ((r = opensandbox_find(id)) != NULL)
      opensandbox_drop(r);
    opensandbox_unlock();
    if (rc != 0)
      return not_found(c, id);
  }
  return opensandbox_send(c, 204, NULL, NULL);
}

/* pause (want_paused 0) and resume (1): 202 and a worker; 409 in any other state
 * (docker_service.py pause_sandbox / resume_sandbox codes and messages). */
static enum MHD_Result change(struct MHD_Connection *c, const char *id, int resume)
{
  opensandbox_lock();
  struct opensandbox_rec *r = opensandbox_find(id);
  int found = 0, ok = 0;
  if (r && r->state == OPENSANDBOX_LIVE) {
    abx_registry_lock();
    struct abx_sandbox *s = abx_registry_find(id);
    found = s != NULL;
    ok = s && r->op == OPENSANDBOX_OP_NONE && s->paused == resume;
    abx_registry_unlock();
  } else {
    found = r != NULL;
  }
  if (ok) {
    r->op = resume ? OPENSANDBOX_OP_RESUMING : OPENSANDBOX_OP_PAUSING;
    r->transition_ns = abx_now_ns();
    r->reason[0] = 0;
  }
  opensandbox_unlock();
  if (!found)
    return not_found(c, id);
  if (!ok)
    return resume ? opensandbox_error(c, 409, OPENSANDBOX_E_NOT_PAUSED,
                                      "Sandbox is not in a paused state.")
                  : opensandbox_error(c, 409, OPENSANDBOX_E_NOT_RUNNING,
                                      "Sandbox is not in a running state.");
  if (opensandbox_worker_op(id, resume ? OPENSANDBOX_OP_RESUMING : OPENSANDBOX_OP_PAUSING) != 0)
    return opensandbox_error(c, 500, OPENSANDBOX_E_INTERNAL, "cannot start a worker thread");
  return opensandbox_send(c, 202, NULL, NULL);
}

/* renew-expiration {expiresAt} (RenewSandboxExpirationRequest, additionalProperties false): the
 * new absolute expiry, in the future (validators.py ensure_future_expiration) and after the
 * current one (the spec: "Must be in the future and after the current expiresAt time"). */
static enum MHD_Result renew(struct MHD_Connection *c, const char *id, const char *body, size_t len)
{
  json_error_t je;
  json_t *j = body && len ? json_loadb(body, len, 0, &je) : NULL;
  json_t *ea = json_is_object(j) ? json_object_get(j, "expiresAt") : NULL;
  int64_t ns = 0;
  char msg[200];
  if (!json_is_object(j) || json_object_size(j) != 1 || !json_is_string(ea) ||
      abx_rfc3339_parse(json_string_value(ea), &ns) != 0) {
    json_decref(j);
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID,
                             "request body must be {\"expiresAt\": <RFC 3339 "
                             "date-time>} and nothing else: field 'expiresAt' is required");
  }
  json_decref(j);
  if (ns <= abx_now_ns())
    return opensandbox_error(c, 400, OPENSANDBOX_E_EXPIRATION,
                             "New expiration time must be in the future.");
  opensandbox_lock();
  struct opensandbox_rec *r = opensandbox_find(id);
  int st = !r || (r->state == OPENSANDBOX_LIVE && !opensandbox_sandbox_json_alive(r)) ? 404
           : r->state == OPENSANDBOX_FAILED                                           ? 409
           : r->expires_ns == OPENSANDBOX_NEVER                                       ? 410
           : ns <= r->expires_ns                                                      ? 411
                                                                                      : 0;
  if (st == 0) {
    r->expires_ns = ns;
    abx_registry_lock();
    struct abx_sandbox *s = abx_registry_find(id);
    if (s && !s->paused &&
        r->op != OPENSANDBOX_OP_PAUSING) /* a paused one's expiry is the tick's */
      s->end_ns = ns;
    abx_registry_unlock();
  }
  char cur[32] = "";
  if (r && st == 411)
    abx_rfc3339(r->expires_ns, cur);
  opensandbox_unlock();
  switch (st) {
  case 0:
    return opensandbox_send(c, 200, json_pack("{s:o}", "expiresAt", opensandbox_time_json(ns)),
                            NULL);
  case 404: return not_found(c, id);
  case 409:
    return opensandbox_error(c, 409, OPENSANDBOX_E_NOT_RUNNING,
                             "Sandbox failed to start; it has no expiration to renew.");
  case 410:
    snprintf(msg, sizeof msg, "Sandbox %s does not have automatic expiration enabled.", id);
    return opensandbox_error(c, 409, OPENSANDBOX_E_EXPIRATION, msg);
  default:
    snprintf(msg, sizeof msg, "New expiration time must be after the current expiresAt %s.", cur);
    return opensandbox_error(c, 400, "DOCKER::EXPIRATION_NOT_EXTENDED", msg);
  }
}

/* GET endpoints/{port}: {endpoint: "<serve host:port>/sandboxes/<id>/port/<port>"}, plus
 * X-EXECD-ACCESS-TOKEN for execd's port of a secureAccess sandbox. `expires` (signed routes)
 * and use_server_proxy=true are refused: the local ingress has neither. */
static enum MHD_Result endpoint(struct MHD_Connection *c, const char *id, const char *port_s)
{
  char *end = NULL;
  long port = strtol(port_s, &end, 10);
  if (!*port_s || *end)
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID,
                             "path parameter 'port' must be an integer");
  if (port < 1 || port > 65535)
    return opensandbox_error(c, 400, OPENSANDBOX_E_PORT, "Port must be between 1 and 65535.");
  if (MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "expires"))
    return opensandbox_error(c, 400, OPENSANDBOX_E_NOT_SUPPORTED,
                             "Signed routes (expires parameter) are not "
                             "supported by the local opensandbox flavor.");
  const char *usp = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "use_server_proxy");
  if (usp && strcasecmp(usp, "false") != 0 && strcmp(usp, "0") != 0)
    return opensandbox_error(c, 400,
                             strcasecmp(usp, "true") == 0 || strcmp(usp, "1") == 0
                                 ? OPENSANDBOX_E_NOT_SUPPORTED
                                 : OPENSANDBOX_E_INVALID,
                             "query 'use_server_proxy': only false is served here (the endpoint is "
                             "serve's own ingress already)");
  opensandbox_lock();
  struct opensandbox_rec *r = opensandbox_find(id);
  int ok = r && r->state != OPENSANDBOX_FAILED &&
           (r->state == OPENSANDBOX_PENDING || opensandbox_sandbox_json_alive(r));
  int secure = ok && r->secure;
  char token[48];
  if (secure)
    memcpy(token, r->token, sizeof token);
  opensandbox_unlock();
  if (!ok)
    return not_found(c, id);
  char url[400];
  snprintf(url, sizeof url, "%s/sandboxes/%s/port/%ld", g_host, id, port);
  json_t *o = json_pack("{s:s}", "endpoint", url);
  if (secure && port == 44772)
    json_object_set_new(o, "headers", json_pack("{s:s}", "X-EXECD-ACCESS-TOKEN", token));
  return opensandbox_send(c, 200, o, NULL);
}

int opensandbox_sandbox_json_alive(const struct opensandbox_rec *r)
{
  abx_registry_lock();
  int alive = abx_registry_find(r->id) != NULL;
  abx_registry_unlock();
  return alive;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

static int key_ok(const char *k)
{
  size_t n = strlen(g_key);
  unsigned diff = strlen(k) != n;
  const char *t = diff ? g_key : k; /* constant time over the key's length */
  for (size_t i = 0; i < n; i++)
    diff |= (unsigned char)t[i] ^ (unsigned char)g_key[i];
  return diff == 0;
}

enum MHD_Result abx_opensandbox_control(struct MHD_Connection *c, const char *method,
                                        const char *path, const char *body, size_t len)
{
  if (strcmp(method, "HEAD") == 0)
    method = "GET";
  char eid[32];
  const char *erest;
  if (opensandbox_egress_target(c, path, eid, sizeof eid, &erest)) /* the sidecar, no API key */
    return opensandbox_egress(c, method, eid, erest, body, len);
  if (strcmp(path, "/health") == 0 && strcmp(method, "GET") == 0) /* main.py, no key */
    return opensandbox_send(c, 200, json_pack("{s:s}", "status", "healthy"), NULL);
  const char *k = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "OPEN-SANDBOX-API-KEY");
  if (!k || !*k)
    return opensandbox_error(c, 401, "MISSING_API_KEY",
                             "Authentication credentials are missing. "
                             "Provide API key via OPEN-SANDBOX-API-KEY header.");
  if (!key_ok(k))
    return opensandbox_error(c, 401, "INVALID_API_KEY",
                             "Authentication credentials are invalid. "
                             "Check your API key and try again.");
  /* segments after /v1/sandboxes: [id [, action [, port]]] */
  static const char pre[] = "/v1/sandboxes";
  char seg[3][72] = {"", "", ""};
  int nseg = -1;
  if (strncmp(path, pre, sizeof pre - 1) == 0 &&
      (!path[sizeof pre - 1] || path[sizeof pre - 1] == '/')) {
    nseg = 0;
    for (const char *p = path + sizeof pre - 1; *p == '/' && nseg <= 3; nseg++) {
      size_t l = strcspn(++p, "/");
      if (l == 0 || l >= sizeof seg[0] || nseg == 3) {
        nseg = -1;
        break;
      }
      memcpy(seg[nseg], p, l);
      seg[nseg][l] = 0;
      p += l;
    }
  }
  static const char snaps[] = "/v1/snapshots";
  if (nseg < 0 && strncmp(path, snaps, sizeof snaps - 1) == 0 &&
      (!path[sizeof snaps - 1] || path[sizeof snaps - 1] == '/'))
    return opensandbox_snapshot_route(c, method, path + sizeof snaps - 1);
  int get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
  int known = 1;
  const char *id = seg[0], *act = seg[1];
  if (nseg == 0) {
    if (post)
      return opensandbox_create(c, body, len);
    if (get)
      return list(c);
  } else if (nseg == 1) {
    if (get)
      return get_one(c, id);
    if (strcmp(method, "DELETE") == 0)
      return delete_one(c, id);
  } else if (nseg == 2 && (!strcmp(act, "pause") || !strcmp(act, "resume"))) {
    if (post)
      return change(c, id, act[0] == 'r');
  } else if (nseg == 2 && !strcmp(act, "renew-expiration")) {
    if (post)
      return renew(c, id, body, len);
  } else if (nseg == 2 && !strcmp(act, "snapshots")) {
    if (post)
      return opensandbox_snapshot_create(c, id, body, len);
  } else if (nseg == 3 && !strcmp(act, "endpoints")) {
    if (get)
      return endpoint(c, id, seg[2]);
  } else {
    known = 0;
  }
  /* an unknown path: the real server (FastAPI) answers 404 {"detail":"Not Found"}; the shape
   * here is the spec's ErrorResponse with its example code NOT_FOUND (docs/PLATFORM.md) */
  if (!known)
    return opensandbox_error(c, 404, "NOT_FOUND",
                             "Not Found: this route is not part of OpenSandbox's "
                             "lifecycle API as the local opensandbox flavor serves it");
  return opensandbox_error(c, 405, "METHOD_NOT_ALLOWED", "Method Not Allowed");
}

/* ---- tick --------------------------------------------------------------------------------- */

void abx_opensandbox_tick(int64_t now_ns)
{
  char due[16][32];
  int ndue = 0;
  opensandbox_lock();
  for (struct opensandbox_rec *r = g_recs, *next; r; r = next) {
    next = r->next;
    if (r->state == OPENSANDBOX_FAILED &&
        now_ns - r->transition_ns > OPENSANDBOX_FAILED_KEEP_S * 1000000000LL) {
      opensandbox_drop(r);
      continue;
    }
    if (r->state != OPENSANDBOX_LIVE || r->op != OPENSANDBOX_OP_NONE)
      continue;
    abx_registry_lock();
    struct abx_sandbox *s = abx_registry_find(r->id);
    int paused = s ? s->paused : 0;
    abx_registry_unlock();
    if (!s) { /* killed: TTL (lifecycle.h) or its processes died */
      opensandbox_drop(r);
    } else if (paused && r->expires_ns <= now_ns && ndue < 16) {
      r->op = OPENSANDBOX_OP_KILLING;
      r->transition_ns = now_ns;
      memcpy(due[ndue++], r->id, sizeof r->id);
    }
  }
  opensandbox_unlock();
  for (int i = 0; i < ndue; i++)
    opensandbox_worker_op(due[i], OPENSANDBOX_OP_KILLING);
}

void abx_opensandbox_drain(void)
{
  opensandbox_workers_drain();
}
