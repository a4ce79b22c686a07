/*
 * template_store.c: built templates, their builds, names and tags. Contract in template_build.h.
 */
#include "template_store.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b.h"
#include "util/util.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct abx_ttemplate *g_head;

void abx_tstore_lock(void)
{
  pthread_mutex_lock(&mu);
}
void abx_tstore_unlock(void)
{
  pthread_mutex_unlock(&mu);
}
struct abx_ttemplate *abx_tstore_head(void)
{
  return g_head;
}

struct abx_ttemplate *abx_tstore_find(const char *x)
{
  for (struct abx_ttemplate *t = g_head; t; t = t->next)
    if (strcmp(t->id, x) == 0 || strcmp(t->name, x) == 0)
      return t;
  return NULL;
}

struct abx_tbuild *abx_tstore_build(struct abx_ttemplate *t, const char *id)
{
  for (struct abx_tbuild *b = t ? t->builds : NULL; b; b = b->next)
    if (strcmp(b->id, id) == 0)
      return b;
  return NULL;
}

/* E2B's cleanAndValidate: trim, lower-case, then the regex (set = extra allowed chars). */
static int clean(const char *in, size_t len, const char *extra, char *out, size_t outn)
{
  while (len && isspace((unsigned char)*in))
    in++, len--;
  while (len && isspace((unsigned char)in[len - 1]))
    len--;
  if (len == 0 || len >= outn)
    return -1;
  for (size_t i = 0; i < len; i++) {
    char c = (char)tolower((unsigned char)in[i]);
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr(extra, c)))
      return -1;
    out[i] = c;
  }
  out[len] = 0;
  return 0;
}

static int is_uuid(const char *s)
{
  if (strlen(s) != 36)
    return 0;
  for (int i = 0; i < 36; i++) {
    int dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
      return 0;
  }
  return 1;
}

static int valid_tag(const char *in, char *out, size_t n, char *msg, size_t mn)
{
  if (clean(in, strlen(in), "-_.", out, n) != 0) {
    snprintf(msg, mn, "invalid tag '%.64s': must match ^[a-z0-9-_.]+$", in);
    return -1;
  }
  if (is_uuid(out)) {
    snprintf(msg, mn, "invalid tag '%.64s': tag cannot be a UUID", in);
    return -1;
  }
  return 0;
}

/* "ns/alias[:tag]" → name (ns/alias) and tag ("" when none or "default"). */
static int parse_name(const char *in, char *name, size_t nn, char *tag, size_t tn, char *msg,
                      size_t mn)
{
  const char *colon = strchr(in, ':');
  size_t idlen = colon ? (size_t)(colon - in) : strlen(in);
  tag[0] = 0;
  if (colon) {
    if (clean(colon + 1, strlen(colon + 1), "-_.", tag, tn) != 0) {
      snprintf(msg, mn, "Invalid name: invalid tag: %.64s", colon + 1);
      return -1;
    }
    if (strcmp(tag, "default") == 0)
      tag[0] = 0;
  }
  const char *slash = memchr(in, '/', idlen);
  char ns[64] = "", alias[128];
  if (slash && clean(in, (size_t)(slash - in), "-_", ns, sizeof ns) != 0) {
    snprintf(msg, mn, "Invalid name: invalid namespace: %.*s", (int)(slash - in), in);
    return -1;
  }
  const char *a = slash ? slash + 1 : in;
  size_t al = idlen - (size_t)(a - in);
  if (clean(a, al, "-_", alias, sizeof alias) != 0) {
    snprintf(msg, mn, "Invalid name: invalid template ID: %.*s", (int)(al < 128 ? al : 128), a);
    return -1;
  }
  snprintf(name, nn, "%s%s%s", ns, ns[0] ? "/" : "", alias);
  return 0;
}

int abx_tstore_split_ref(const char *ref, char *x, size_t xn, char *tag, size_t tn)
{
  const char *colon = strchr(ref, ':');
  size_t l = colon ? (size_t)(colon - ref) : strlen(ref);
  if (l == 0 || l >= xn)
    return -1;
  memcpy(x, ref, l);
  x[l] = 0;
  snprintf(tag, tn, "%s", colon && colon[1] ? colon + 1 : "default");
  return 0;
}

json_t *abx_tstore_clean_tags(json_t *tags, char *msg, size_t n)
{
  json_t *out = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(tags, i, v)
  {
    char t[136];
    if (!json_is_string(v)) {
      snprintf(msg, n, "validation error: field 'tags' must be an array of strings");
      json_decref(out);
      return NULL;
    }
    if (valid_tag(json_string_value(v), t, sizeof t, msg, n) != 0) {
      json_decref(out);
      return NULL;
    }
    int dup = 0;
    size_t j;
    json_t *w;
    json_array_foreach(out, j, w) dup |= strcmp(json_string_value(w), t) == 0;
    if (!dup)
      json_array_append_new(out, json_string(t));
  }
  return out;
}

static void uuid4(char out[40])
{
  char h[33];
  if (abx_rand_hex(h, 32) != 0)
    snprintf(h, sizeof h, "%032llx", (unsigned long long)abx_now_ns());
  h[12] = '4';
  h[16] = "89ab"[h[16] % 4];
  snprintf(out, 40, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
}

int abx_tstore_request(const char *name, json_t *tags, int cpu_count, int memory_mb, json_t **out,
                       char *msg, size_t n)
{
  char nm[136], tag[136];
  if (!name) {
    snprintf(msg, n, "Name is required");
    return 400;
  }
  if (strlen(name) > 128) {
    snprintf(msg, n, "Invalid name: longer than 128 characters");
    return 400;
  }
  if (parse_name(name, nm, sizeof nm, tag, sizeof tag, msg, n) != 0)
    return 400;
  json_t *all = json_array();
  if (tag[0])
    json_array_append_new(all, json_string(tag));
  size_t i;
  json_t *v;
  json_array_foreach(tags, i, v) json_array_append(all, v);
  char tm[200];
  json_t *clean_tags = abx_tstore_clean_tags(all, tm, sizeof tm);
  json_decref(all);
  if (!clean_tags) {
    snprintf(msg, n, "Invalid tag: %s", tm);
    return 400;
  }
  if (json_array_size(clean_tags) == 0)
    json_array_append_new(clean_tags, json_string("default"));
  struct abx_template *builtin = NULL;
  if (abx_template_valid_id(nm) && (builtin = abx_template_get(nm, 0)) &&
      (builtin->builtin || builtin->is_snapshot)) { /* one name space with them */
    snprintf(msg, n, "'%s' is the name of a %s of this platform", nm,
             builtin->builtin ? "built-in template" : "snapshot");
    abx_template_put(builtin, 0);
    json_decref(clean_tags);
    return 400;
  }
  abx_template_put(builtin, 0);
  struct abx_tbuild *b = calloc(1, sizeof *b);
  if (!b) {
    json_decref(clean_tags);
    snprintf(msg, n, "out of memory");
    return 500;
  }
  uuid4(b->id);
  b->cpu_count = cpu_count;
  b->memory_mb = memory_mb;
  b->created_ns = b->updated_ns = abx_now_ns();
  b->tags = clean_tags;
  b->logs = json_array();
  b->status = ABX_BUILD_WAITING;
  abx_tstore_lock();
  struct abx_ttemplate *t = NULL;
  for (t = g_head; t && strcmp(t->name, nm) != 0;)
    t = t->next;
  if (!t && (t = calloc(1, sizeof *t))) {
    t->id[0] = 0;
    if (abx_rand_alnum(t->id, 20) != 0)
      snprintf(t->id, sizeof t->id, "t%019lld", (long long)(abx_now_ns() % 1000000000000000000LL));
    snprintf(t->name, sizeof t->name, "%s", nm);
    t->created_ns = abx_now_ns();
    t->tags = json_object();
    t->next = g_head;
    g_head = t;
  }
  if (!t) {
    abx_tstore_unlock();
    json_decref(b->tags);
    json_decref(b->logs);
    free(b);
    snprintf(msg, n, "out of memory");
    return 500;
  }
  t->updated_ns = abx_now_ns();
  b->tmpl = t;
  b->next = t->builds;
  t->builds = b;
  *out = json_pack("{s:s,s:s,s:[s],s:O,s:[s],s:b}", "templateID", t->id, "buildID", b->id, "names",
                   t->name, "tags", clean_tags, "aliases", t->name, "public", 0);
  abx_tstore_unlock();
  return 0;
}

struct abx_template *abx_tstore_resolve(const char *ref, int sandbox)
{
  char x[136], tag[136];
  if (abx_tstore_split_ref(ref, x, sizeof x, tag, sizeof tag) != 0)
    return NULL;
  for (char *p = x; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  abx_tstore_lock();
  struct abx_ttemplate *t = abx_tstore_find(x);
  json_t *tg = t ? json_object_get(t->tags, tag) : NULL;
  struct abx_tbuild *b =
      tg ? abx_tstore_build(t, json_string_value(json_object_get(tg, "buildID"))) : NULL;
  struct abx_template *r = b && b->status == ABX_BUILD_READY ? b->result : NULL;
  if (r) {
    abx_template_ref(r, sandbox);
    if (sandbox) {
      t->spawn_count++;
      t->last_spawned_ns = abx_now_ns();
    }
  }
  abx_tstore_unlock();
  return r;
}

void abx_tstore_log(struct abx_tbuild *b, const char *level, const char *step, const char *fmt, ...)
{
  char msg[4200], ts[32];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int64_t now = abx_now_ns();
  abx_rfc3339(now, ts);
  json_t *e = json_pack("{s:s,s:s,s:s}", "timestamp", ts, "level", level, "message", msg);
  if (!e) /* not UTF-8: keep the entry, say so */
    e = json_pack("{s:s,s:s,s:s}", "timestamp", ts, "level", level, "message",
                  "(output line that is not UTF-8)");
  if (e && step)
    json_object_set_new(e, "step", json_string(step));
  json_array_append_new(b->logs, e);
  b->updated_ns = now;
}

static const char *status_name(enum abx_build_status s)
{
  static const char *const names[] = {"waiting", "building", "ready", "error"};
  return names[s];
}

static const struct abx_tbuild *latest_ready(const struct abx_ttemplate *t)
{
  json_t *d = json_object_get(t->tags, "default");
  const char *bid = json_string_value(json_object_get(d, "buildID"));
  for (const struct abx_tbuild *b = t->builds; b; b = b->next)
    if (bid ? strcmp(b->id, bid) == 0 : b->status == ABX_BUILD_READY)
      return b;
  return t->builds;
}

static json_t *rfc(int64_t ns)
{
  char s[32];
  abx_rfc3339(ns, s);
  return json_string(s);
}

json_t *abx_tstore_template_json(const struct abx_ttemplate *t)
{
  const struct abx_tbuild *b = latest_ready(t);
  long count = 0;
  for (const struct abx_tbuild *x = t->builds; x; x = x->next)
    count++;
  json_t *o = json_pack("{s:s,s:s,s:[s],s:[s],s:b,s:i,s:i,s:i,s:s,s:s,s:o,s:o,s:n,s:i,s:i}",
                        "templateID", t->id, "buildID", b ? b->id : "", "names", t->name, "aliases",
                        t->name, "public", t->is_public, "cpuCount", b ? b->cpu_count : 0,
                        "memoryMB", b ? b->memory_mb : 0, "diskSizeMB", 0, "envdVersion",
                        ABX_E2B_ENVD_VERSION, "buildStatus", b ? status_name(b->status) : "waiting",
                        "createdAt", rfc(t->created_ns), "updatedAt", rfc(t->updated_ns),
                        "createdBy", "spawnCount", (int)t->spawn_count, "buildCount", (int)count);
  if (o)
    json_object_set_new(o, "lastSpawnedAt", t->spawn_count ? rfc(t->last_spawned_ns) : json_null());
  return o;
}

json_t *abx_tstore_template_builds_json(const struct abx_ttemplate *t)
{
  json_t *builds = json_array();
  for (const struct abx_tbuild *b = t->builds; b; b = b->next) {
    json_t *o = json_pack("{s:s,s:s,s:i,s:i,s:o,s:o,s:s}", "buildID", b->id, "status",
                          status_name(b->status), "cpuCount", b->cpu_count, "memoryMB",
                          b->memory_mb, "createdAt", rfc(b->created_ns), "updatedAt",
                          rfc(b->updated_ns), "envdVersion", ABX_E2B_ENVD_VERSION);
    if (o && b->finished_ns)
      json_object_set_new(o, "finishedAt", rfc(b->finished_ns));
    json_array_append_new(builds, o);
  }
  json_t *o =
      json_pack("{s:s,s:[s],s:[s],s:b,s:o,s:o,s:i,s:o}", "templateID", t->id, "names", t->name,
                "aliases", t->name, "public", 0, "createdAt", rfc(t->created_ns), "updatedAt",
                rfc(t->updated_ns), "spawnCount", (int)t->spawn_count, "builds", builds);
  if (o)
    json_object_set_new(o, "lastSpawnedAt", t->spawn_count ? rfc(t->last_spawned_ns) : json_null());
  return o;
}

static int level_rank(const char *l)
{
  static const char *const names[] = {"debug", "info", "warn", "error"};
  for (int i = 0; i < 4; i++)
    if (l && strcmp(l, names[i]) == 0)
      return i;
  return -1;
}

json_t *abx_tstore_status_json(const struct abx_tbuild *b, size_t offset, size_t limit,
                               const char *level)
{
  json_t *entries = json_array();
  int min = level ? level_rank(level) : 0;
  size_t i, seen = 0;
  json_t *e;
  json_array_foreach(b->logs, i, e)
  {
    if (level_rank(json_string_value(json_object_get(e, "level"))) < min)
      continue;
    if (seen++ < offset)
      continue;
    if (json_array_size(entries) >= limit)
      break;
    json_array_append(entries, e);
  }
  json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:[]}", "templateID", b->tmpl->id, "buildID", b->id,
                        "status", status_name(b->status), "logEntries", entries, "logs");
  if (o && b->status == ABX_BUILD_ERROR) {
    json_t *rl = json_array();
    for (size_t k = b->reason_from; k < json_array_size(b->logs); k++)
      json_array_append(rl, json_array_get(b->logs, k));
    json_t *r =
        json_pack("{s:s,s:o}", "message", b->reason ? b->reason : "build failed", "logEntries", rl);
    if (r && b->reason_step[0])
      json_object_set_new(r, "step", json_string(b->reason_step));
    json_object_set_new(o, "reason", r);
  }
  return o;
}

void abx_tstore_tag(struct abx_ttemplate *t, const struct abx_tbuild *b, const char *tag)
{
  json_object_set_new(t->tags, tag,
                      json_pack("{s:s,s:o}", "buildID", b->id, "createdAt", rfc(abx_now_ns())));
  t->updated_ns = abx_now_ns();
}

void abx_tstore_free_template(struct abx_ttemplate *t)
{
  struct abx_tbuild *b = t->builds;
  while (b) {
    struct abx_tbuild *next = b->next;
    abx_template_put(b->result, 0);
    json_decref(b->spec);
    json_decref(b->tags);
    json_decref(b->logs);
    free(b->reason);
    free(b);
    b = next;
  }
  json_decref(t->tags);
  free(t);
}

int abx_tstore_delete(const char *x, char *msg, size_t n)
{
  char id[136], tag[136];
  if (abx_tstore_split_ref(x, id, sizeof id, tag, sizeof tag) != 0) {
    snprintf(msg, n, "template '%.64s' not found", x);
    return 404;
  }
  abx_tstore_lock();
  struct abx_ttemplate **pp = &g_head;
  while (*pp && strcmp((*pp)->id, id) != 0 && strcmp((*pp)->name, id) != 0)
    pp = &(*pp)->next;
  struct abx_ttemplate *t = *pp;
  int rc = 0, uses = 0, busy = 0;
  for (struct abx_tbuild *b = t ? t->builds : NULL; b; b = b->next) {
    uses += b->result ? b->result->sandboxes
                      : 0; /* read under the store lock: creates resolve under it */
    busy |= b->started && (b->status == ABX_BUILD_WAITING || b->status == ABX_BUILD_BUILDING);
  }
  if (!t) {
    snprintf(msg, n, "template '%.64s' not found", id);
    rc = 404;
  } else if (uses > 0) {
    snprintf(msg, n, "cannot delete template '%s': %d sandbox(es) still use it", t->name, uses);
    rc = 400;
  } else if (busy) {
    snprintf(msg, n, "cannot delete template '%s' while one of its builds runs", t->name);
    rc = 400;
  } else {
    *pp = t->next;
  }
  abx_tstore_unlock();
  if (rc == 0) {
    abx_tstore_forget(t->name);
    abx_tstore_free_template(t);
  }
  return rc;
}

int abx_tstore_insert(struct abx_ttemplate *t)
{
  abx_tstore_lock();
  int taken = abx_tstore_find(t->id) || abx_tstore_find(t->name);
  if (!taken) {
    t->next = g_head;
    g_head = t;
  }
  abx_tstore_unlock();
  return taken ? -1 : 0;
}

void abx_tstore_shutdown(void)
{
  abx_tstore_lock();
  struct abx_ttemplate *t = g_head;
  g_head = NULL;
  abx_tstore_unlock();
  while (t) {
    struct abx_ttemplate *next = t->next;
    abx_tstore_free_template(t);
    t = next;
  }
}
