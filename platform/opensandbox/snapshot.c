/*
 * snapshot.c: the opensandbox flavour's snapshots (spec tag Snapshots: POST
 * /v1/sandboxes/{id}/snapshots, GET /v1/snapshots, GET|DELETE /v1/snapshots/{snapshotId}; create
 * from snapshotId in create.c), on the platform's own snapshots (template/rootfs.h
 * abx_snapshot_create: the sandbox frozen while its upper layer is copied, as E2B's
 * api_snapshots.c does). Shapes and refusals from OpenSandbox @3bb6fad specs/sandbox-lifecycle.yml
 * (Snapshot, ListSnapshotsResponse, CreateSnapshotRequest) and server/opensandbox_server/
 * services/snapshot_service.py (PersistedSnapshotService: uuid4 ids, SNAPSHOT::NOT_FOUND,
 * SNAPSHOT::INVALID_SOURCE_STATE, SNAPSHOT::INVALID_STATE) and api/lifecycle.py (pageSize <= 200,
 * Location /v1/snapshots/{id}).
 * Differences (docs/PLATFORM.md "Flavours"): the copy is done before the answer, so the 202
 * already says Ready (the real server answers Creating and copies on a worker); a snapshot still
 * used by a sandbox is refused with 409 (the real Docker runtime removes its image regardless);
 * records live as long as serve (names are not kept across restarts).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "opensandbox_int.h"
#include "sandbox/sandbox.h"
#include "template/template.h"

struct snap {
  char id[40];         /* uuid4, as snapshot_service.py str(uuid4()) */
  char sandbox_id[32]; /* the source */
  char name[128];      /* "" when none was asked for */
  int64_t created_ns;
  struct snap *next;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct snap *g_snaps; /* newest first */

static json_t *snap_json(const struct snap *s)
{
  json_t *o =
      json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:o},s:o}", "id", s->id, "sandboxId", s->sandbox_id,
                "status", "state", "Ready", "reason", "snapshot_ready", "message",
                "Snapshot is ready.", "lastTransitionAt", opensandbox_time_json(s->created_ns),
                "createdAt", opensandbox_time_json(s->created_ns));
  if (o && s->name[0])
    json_object_set_new(o, "name", json_string(s->name));
  return o;
}

static enum MHD_Result snap_not_found(struct MHD_Connection *c, const char *id)
{
  char msg[128];
  snprintf(msg, sizeof msg, "Snapshot %.64s not found", id); /* snapshot_service.py */
  return opensandbox_error(c, 404, OPENSANDBOX_E_SNAP_NOT_FOUND, msg);
}

int opensandbox_snapshot_exists(const char *id)
{
  pthread_mutex_lock(&g_mu);
  struct snap *s = g_snaps;
  while (s && strcmp(s->id, id) != 0)
    s = s->next;
  pthread_mutex_unlock(&g_mu);
  return s != NULL;
}

/* "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" into out[37]; 0, or -1 without randomness. */
static int uuid4(char *out)
{
  unsigned char b[16];
  if (abx_rand_bytes(b, sizeof b) != 0)
    return -1;
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  size_t w = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      out[w++] = '-';
    w += (size_t)snprintf(out + w, 3, "%02x", b[i]);
  }
  return 0;
}

/* CreateSnapshotRequest (additionalProperties false, name minLength 1) into name[128]; 0, or -1
 * with msg. An absent body is {} (the spec's requestBody is not required). */
static int parse_create(const char *body, size_t len, char *name, char *msg, size_t n)
{
  name[0] = 0;
  if (!body || !len)
    return 0;
  json_error_t je;
  json_t *j = json_loadb(body, len, 0, &je), *v;
  const char *k;
  int rc = json_is_object(j) ? 0 : -1;
  if (rc)
    snprintf(msg, n, "request body must be a JSON object (CreateSnapshotRequest)");
  json_object_foreach(j, k, v)
  {
    if (rc)
      break;
    if (strcmp(k, "name") != 0) {
      snprintf(msg, n, "unknown field '%.64s': CreateSnapshotRequest has name", k);
      rc = -1;
    } else if (!json_is_null(v) &&
               (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= 128)) {
      snprintf(msg, n, "field 'name' must be a non-empty string of at most 127 bytes");
      rc = -1;
    } else if (json_is_string(v)) {
      snprintf(name, 128, "%s", json_string_value(v));
    }
  }
  json_decref(j);
  return rc;
}

/* The source's state as GET /v1/sandboxes/{id} says it: 0 Running, 404 unknown or gone, 409
 * any other state. */
static int source_state(const char *id)
{
  opensandbox_lock();
  struct opensandbox_rec *r = opensandbox_find(id);
  json_t *o = r ? opensandbox_sandbox_json(r, 0) : NULL;
  const char *st = json_string_value(json_object_get(json_object_get(o, "status"), "state"));
  int rc = !o ? 404 : st && strcmp(st, "Running") == 0 ? 0 : 409;
  json_decref(o);
  opensandbox_unlock();
  return rc;
}

/* Copy sandbox `id` into snapshot template `sid` with the sandbox frozen (api_snapshots.c's
 * way); 0, 404 (gone meanwhile) or another status with err. */
static int copy_sandbox(const char *id, const char *sid, char *err, size_t n)
{
  struct abx_sandbox *s = abx_sandbox_get(id);
  if (!s)
    return 404;
  int status = 0;
  pthread_mutex_lock(&s->op);
  if (!s->listed) {
    status = 404;
  } else if (abx_cgroup_freeze(s->id, abx_mono_ns() + ABX_FREEZE_DEADLINE_NS) != 0) {
    status = 500;
    snprintf(err, n, "the sandbox's freezer cgroup did not answer");
  } else {
    if (abx_snapshot_create(s->tmpl, s->dir, sid, s->id, &status, err, n) == 0)
      status = 0;
    abx_cgroup_thaw(s->id);
  }
  pthread_mutex_unlock(&s->op);
  abx_sandbox_put(s);
  return status;
}

/* POST /v1/sandboxes/{id}/snapshots */
enum MHD_Result opensandbox_snapshot_create(struct MHD_Connection *c, const char *id,
                                            const char *body, size_t len)
{
  char msg[300];
  struct snap *s = calloc(1, sizeof *s);
  if (!s)
    return opensandbox_error(c, 500, OPENSANDBOX_E_INTERNAL, "out of memory");
  if (parse_create(body, len, s->name, msg, sizeof msg) != 0) {
    free(s);
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID, msg);
  }
  int st = source_state(id);
  if (st == 0 && uuid4(s->id) != 0) {
    st = 500;
    snprintf(msg, sizeof msg, "no randomness available");
  }
  if (st == 0)
    st = copy_sandbox(id, s->id, msg, sizeof msg);
  if (st != 0) {
    free(s);
    if (st == 404) {
      snprintf(msg, sizeof msg, "Sandbox %.64s not found.", id); /* docker_service.py */
      return opensandbox_error(c, 404, OPENSANDBOX_E_NOT_FOUND, msg);
    }
    if (st == 409)
      return opensandbox_error(c, 409, OPENSANDBOX_E_SNAP_SOURCE,
                               "Snapshot can only be created from a Running sandbox.");
    return opensandbox_error(c, 500, OPENSANDBOX_E_INTERNAL, msg);
  }
  snprintf(s->sandbox_id, sizeof s->sandbox_id, "%s", id);
  s->created_ns = abx_now_ns();
  pthread_mutex_lock(&g_mu);
  s->next = g_snaps;
  g_snaps = s;
  json_t *o = snap_json(s);
  pthread_mutex_unlock(&g_mu);
  char loc[64];
  snprintf(loc, sizeof loc, "/v1/snapshots/%s", s->id);
  return opensandbox_send(c, 202, o, loc);
}

/* The state filter: every `state` value must be one of the SnapshotState names; 1 when Ready is
 * among them or none was given (every snapshot here is Ready), 0 when it is not, -1 bad. */
struct state_q {
  int any, ready, bad;
};

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
  (void)kind;
  struct state_q *q = cls;
  if (strcmp(key, "state") != 0)
    return MHD_YES;
  q->any = 1;
  if (!value || (strcmp(value, "Creating") && strcmp(value, "Deleting") && strcmp(value, "Ready") &&
                 strcmp(value, "Failed")))
    q->bad = 1;
  else if (strcmp(value, "Ready") == 0)
    q->ready = 1;
  return MHD_YES;
}

/* GET /v1/snapshots?sandboxId=&state=&page=&pageSize= (newest first) */
static enum MHD_Result list(struct MHD_Connection *c)
{
  struct state_q q = {0};
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect, &q);
  long page, size;
  if (q.bad)
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID,
                             "query 'state' must be one of Creating, Deleting, Ready, Failed");
  if (opensandbox_query_int(c, "page", 1, 1000000, &page) != 0)
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID, "query 'page' must be an integer >= 1");
  if (opensandbox_query_int(c, "pageSize", 20, 200, &size) != 0)
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID,
                             "query 'pageSize' must be an integer from 1 to 200");
  const char *sid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sandboxId");
  json_t *items = json_array();
  size_t total = 0, from = (size_t)(page - 1) * (size_t)size;
  pthread_mutex_lock(&g_mu);
  for (struct snap *s = g_snaps; s && items; s = s->next) {
    if ((sid && strcmp(sid, s->sandbox_id) != 0) || (q.any && !q.ready))
      continue;
    if (total >= from && total < from + (size_t)size)
      json_array_append_new(items, snap_json(s));
    total++;
  }
  pthread_mutex_unlock(&g_mu);
  if (!items)
    return opensandbox_error(c, 500, OPENSANDBOX_E_INTERNAL, "out of memory");
  long pages = (long)((total + (size_t)size - 1) / (size_t)size);
  return opensandbox_send(c, 200,
                          json_pack("{s:o,s:{s:i,s:i,s:i,s:i,s:b}}", "items", items, "pagination",
                                    "page", (int)page, "pageSize", (int)size, "totalItems",
                                    (int)total, "totalPages", (int)pages, "hasNextPage",
                                    page < pages),
                          NULL);
}

static enum MHD_Result get_one(struct MHD_Connection *c, const char *id)
{
  pthread_mutex_lock(&g_mu);
  struct snap *s = g_snaps;
  while (s && strcmp(s->id, id) != 0)
    s = s->next;
  json_t *o = s ? snap_json(s) : NULL;
  pthread_mutex_unlock(&g_mu);
  return o ? opensandbox_send(c, 200, o, NULL) : snap_not_found(c, id);
}

/* DELETE: the template goes first (refused while a sandbox uses it), then the record. */
static enum MHD_Result delete_one(struct MHD_Connection *c, const char *id)
{
  if (!opensandbox_snapshot_exists(id))
    return snap_not_found(c, id);
  char msg[200], out[300];
  int rc = abx_template_delete(id, msg, sizeof msg);
  if (rc == 400) {
    snprintf(out, sizeof out, "Snapshot %.64s cannot be deleted: %s", id, msg);
    return opensandbox_error(c, 409, OPENSANDBOX_E_SNAP_STATE, out);
  }
  if (rc != 0 && rc != 404)
    return opensandbox_error(c, 500, OPENSANDBOX_E_INTERNAL, msg);
  pthread_mutex_lock(&g_mu);
  for (struct snap **p = &g_snaps; *p; p = &(*p)->next)
    if (strcmp((*p)->id, id) == 0) {
      struct snap *dead = *p;
      *p = dead->next;
      free(dead);
      break;
    }
  pthread_mutex_unlock(&g_mu);
  return opensandbox_send(c, 204, NULL, NULL);
}

enum MHD_Result opensandbox_snapshot_route(struct MHD_Connection *c, const char *method,
                                           const char *rest)
{
  int get = strcmp(method, "GET") == 0;
  if (!*rest) {
    if (get)
      return list(c);
  } else if (rest[0] == '/' && rest[1] && !strchr(rest + 1, '/') && strlen(rest + 1) < 64) {
    if (get)
      return get_one(c, rest + 1);
    if (strcmp(method, "DELETE") == 0)
      return delete_one(c, rest + 1);
  } else {
    return opensandbox_error(c, 404, "NOT_FOUND",
                             "Not Found: this route is not part of OpenSandbox's "
                             "lifecycle API as the local opensandbox flavor serves it");
  }
  return opensandbox_error(c, 405, "METHOD_NOT_ALLOWED", "Method Not Allowed");
}
