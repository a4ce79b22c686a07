/*
 * api_snapshots.c: POST /sandboxes/{id}/snapshots, GET /snapshots and DELETE /templates/{id}.
 *
 * Shapes:  SnapshotInfo {snapshotID, names[]} (docs/protocol/e2b-control-plane.md §3.3); snapshotID
 *          is the template id: the request's name (^[a-z0-9][a-z0-9_-]{0,62}$, else 400) or
 *          "snap-" + 16 chars [a-z0-9]; names = ["<snapshotID>:default"]. POST /sandboxes with
 *          templateID = snapshotID (or a name) restores it (§3.1 notes).
 * Paging:  GET /snapshots, newest first, limit 1..100 (default 100), X-Next-Token =
 *          base64url("<created ns>__<snapshotID>") only when more remain (§2 Pagination).
 * Errors:  create 400 bad name / 404 unknown sandbox / 500 copy; delete 204, 404 unknown, 400 while
 *          sandboxes use it (and for the base template).
 */
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "util/util.h"
#include "template/template.h"
#include "base64.h"
#include "sandbox/sandbox.h"

enum MHD_Result abx_api_snapshot_create(struct abx_api_req *r)
{
  char id[32], name[64], err[300];
  enum MHD_Result sent = MHD_NO;
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  if (abx_flavor()->snapshot_needs_allowlist)
    return abx_api_allowlist_refusal(r, "snapshots");
  json_t *req = abx_api_body(r, 0, &sent);
  if (!req)
    return sent;
  json_t *jn = json_object_get(req, "name");
  if (jn && !json_is_null(jn) &&
      (!json_is_string(jn) || !abx_template_valid_id(json_string_value(jn)))) {
    json_decref(req);
    return abx_http_error(r->c, 400,
                          "invalid snapshot name: must match ^[a-z0-9][a-z0-9_-]{0,62}$");
  }
  if (json_is_string(jn)) {
    snprintf(name, sizeof name, "%s", json_string_value(jn));
    abx_tstore_lock();
    int taken = abx_tstore_find(name) != NULL; /* one name space with built templates */
    abx_tstore_unlock();
    if (taken) {
      json_decref(req);
      return abx_http_error(r->c, 400, "invalid snapshot name: it is the name of a built template");
    }
  } else {
    memcpy(name, "snap-", 5);
    if (abx_rand_alnum(name + 5, 16) != 0) {
      json_decref(req);
      return abx_http_error(r->c, 500, "no randomness available");
    }
  }
  json_decref(req);
  struct abx_sandbox *s = abx_sandbox_get(id);
  if (!s)
    return abx_api_not_found(r->c, id);
  int status = 0;
  pthread_mutex_lock(&s->op);
  if (!s->listed) {
    status = 404;
  } else {
    int was_paused = s->paused; /* a running sandbox is frozen while its upper layer is copied */
    if (!was_paused && abx_cgroup_freeze(s->id, abx_mono_ns() + ABX_FREEZE_DEADLINE_NS) != 0) {
      status = 500;
      snprintf(err, sizeof err, "the sandbox's freezer cgroup did not answer");
    } else {
      if (abx_snapshot_create(s->tmpl, s->dir, name, s->id, &status, err, sizeof err) == 0)
        status = 0;
      if (!was_paused)
        abx_cgroup_thaw(s->id);
    }
  }
  pthread_mutex_unlock(&s->op);
  abx_sandbox_put(s);
  if (status == 404)
    return abx_api_not_found(r->c, id);
  if (status != 0)
    return abx_http_error(r->c, (unsigned)status, err);
  char full[80];
  snprintf(full, sizeof full, "%s:default", name);
  return abx_http_json(r->c, 201, json_pack("{s:s,s:[s]}", "snapshotID", name, "names", full));
}

/* Order of the list: newest first, then id. */
static int cmp(int64_t ns_a, const char *id_a, int64_t ns_b, const char *id_b)
{
  if (ns_a != ns_b)
    return ns_a > ns_b ? -1 : 1;
  return strcmp(id_a, id_b);
}

enum MHD_Result abx_api_snapshot_list(struct abx_api_req *r)
{
  struct MHD_Connection *c = r->c;
  const char *sq = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sandboxID");
  const char *nq = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
  const char *lq = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
  const char *tq = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "nextToken");
  long limit = 100;
  if (lq) {
    char *end = NULL;
    limit = strtol(lq, &end, 10);
    if (!*lq || *end || limit < 1 || limit > 100)
      return abx_http_error(c, 400, "validation error: limit must be between 1 and 100");
  }
  int64_t cur_ns = 0;
  char cur_id[64] = "";
  if (tq && *tq) {
    size_t n = 0;
    char *raw = (char *)abx_b64_decode_alloc(tq, ABX_B64_URL_ONLY, &n), *end = NULL;
    char *sep = raw ? strstr(raw, "__") : NULL;
    if (sep) {
      *sep = 0;
      cur_ns = strtoll(raw, &end, 10);
    }
    int ok = sep && end && !*end && end != raw && abx_template_valid_id(sep + 2);
    if (ok)
      snprintf(cur_id, sizeof cur_id, "%s", sep + 2);
    free(raw);
    if (!ok)
      return abx_http_error(c, 400, "Invalid next token");
  }
  json_t *all = abx_snapshot_list(sq, nq), *page = json_array();
  if (!all || !page) {
    json_decref(all);
    json_decref(page);
    return abx_http_error(c, 500, "out of memory");
  }
  size_t i;
  json_t *e;
  char *next = NULL;
  json_array_foreach(all, i, e)
  {
    const char *sid = json_string_value(json_object_get(e, "snapshotID"));
    int64_t ns = json_integer_value(json_object_get(e, "createdNs"));
    if (cur_id[0] && cmp(ns, sid, cur_ns, cur_id) <= 0)
      continue;
    if (json_array_size(page) == (size_t)limit) {
      json_t *last = json_array_get(page, json_array_size(page) - 1);
      char buf[128];
      snprintf(buf, sizeof buf, "%" PRId64 "__%s",
               (int64_t)json_integer_value(json_object_get(last, "createdNs")),
               json_string_value(json_object_get(last, "snapshotID")));
      next = abx_b64_encode_alloc(buf, strlen(buf), ABX_B64_URL);
      break;
    }
    json_array_append(page, e);
  }
  json_array_foreach(page, i, e)
  {
    json_object_del(e, "createdNs");
    json_object_del(e, "sandboxID");
  }
  json_decref(all);
  enum MHD_Result ret = abx_api_page(c, page, next, -1);
  free(next);
  return ret;
}

enum MHD_Result abx_api_template_delete(struct abx_api_req *r)
{
  char msg[200];
  /* the warm pool's sandboxes of it are no use of it (sandbox/warm_pool.h) */
  abx_warm_pool_release(r->params[0]);
  /* a built template (template_build.h) by id or name, else a snapshot or a built-in */
  int rc = abx_tstore_delete(r->params[0], msg, sizeof msg);
  if (rc == 404)
    rc = abx_template_delete(r->params[0], msg, sizeof msg);
  return rc == 0 ? abx_http_json(r->c, 204, NULL) : abx_http_error(r->c, (unsigned)rc, msg);
}
