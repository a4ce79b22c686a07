/*
 * template_disk.c: the built templates on disk, so that they outlive the serve that built them
 * (template_store.h "Disk"): one file per template name under <build cache>/templates.
 */
#include "template_store.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layer_cache.h"
#include "util/util.h"

#define DISK_FORMAT "abxlua-template-store/1"

static char g_dir[4096];

int abx_tstore_disk_init(char *err, size_t n)
{
  const char *cache = abx_lcache_dir();
  if (!cache || !*cache || strlen(cache) > 3000) {
    snprintf(err, n, "the template store needs the build cache dir (layer_cache.h), set first");
    return -1;
  }
  snprintf(g_dir, sizeof g_dir, "%s/templates", cache);
  if (mkdir(g_dir, 0700) != 0 && errno != EEXIST) {
    snprintf(err, n, "cannot create the template store %s: %s", g_dir, strerror(errno));
    g_dir[0] = 0;
    return -1;
  }
  return 0;
}

const char *abx_tstore_disk_dir(void)
{
  return g_dir;
}

/* The file of template name `name` ("ns/alias": '/' is written '~', no name has one). */
static void file_of(const char *name, char *out, size_t n)
{
  char fn[160];
  snprintf(fn, sizeof fn, "%s", name);
  for (char *p = fn; *p; p++)
    if (*p == '/')
      *p = '~';
  snprintf(out, n, "%s/%s.json", g_dir, fn);
}

/* 1 when `k` may name an image root dir (image_debian.h "Key": [a-z0-9-], not empty). */
static int image_key_ok(const char *k)
{
  if (!k || !*k || strlen(k) >= 96)
    return 0;
  for (const char *p = k; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
      return 0;
  return 1;
}

/* The key of the image root at the bottom of b's chain ("" when none: from a template): the
 * name of the image record's layer dir, <cache>/images/<key>. A restore that did not get ready
 * keeps the key it was stored with. */
static void image_key_of(const struct abx_tbuild *b, char *out, size_t n)
{
  out[0] = 0;
  if (b->status != ABX_BUILD_READY || !b->result) {
    snprintf(out, n, "%s", b->image_key);
    return;
  }
  const struct abx_template *t = b->result;
  while (t->parent)
    t = t->parent;
  const char *slash = t->image_root && t->layer ? strrchr(t->layer, '/') : NULL;
  if (slash && image_key_ok(slash + 1))
    snprintf(out, n, "%s", slash + 1);
}

/* The builds a sandbox may start from, each with its tags: the ready ones some tag points at,
 * and those restored from the store that did not get ready (their layers gone: kept, with the
 * tags they had, so that no record is lost by a failed restore). [{buildID, ..., tags, spec}] */
static json_t *tagged_builds(const struct abx_ttemplate *t)
{
  json_t *arr = json_array();
  for (const struct abx_tbuild *b = t->builds; b; b = b->next) {
    if (!b->spec || (b->status != ABX_BUILD_READY && !b->restore))
      continue;
    json_t *tags = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(t->tags, k, v)
    {
      const char *bid = json_string_value(json_object_get(v, "buildID"));
      if (bid && strcmp(bid, b->id) == 0)
        json_array_append_new(tags, json_string(k));
    }
    if (b->status != ABX_BUILD_READY) {
      json_decref(tags);
      tags = json_incref(b->tags);
    }
    if (json_array_size(tags) == 0) {
      json_decref(tags);
      continue;
    }
    json_t *o =
        json_pack("{s:s,s:i,s:i,s:I,s:I,s:o,s:O}", "buildID", b->id, "cpuCount", b->cpu_count,
                  "memoryMB", b->memory_mb, "createdNs", (json_int_t)b->created_ns, "finishedNs",
                  (json_int_t)b->finished_ns, "tags", tags, "spec", b->spec);
    char key[96];
    image_key_of(b, key, sizeof key);
    if (o && key[0])
      json_object_set_new(o, "imageKey", json_string(key));
    json_array_append_new(arr, o);
  }
  return arr;
}

void abx_tstore_save(const struct abx_ttemplate *t)
{
  if (!g_dir[0])
    return;
  char path[4400], tmp[4500];
  file_of(t->name, path, sizeof path);
  json_t *builds = tagged_builds(t);
  if (json_array_size(builds) == 0) { /* nothing a sandbox could start from */
    json_decref(builds);
    if (unlink(path) != 0 && errno != ENOENT)
      abx_slog("warning: template store: cannot remove %s: %s", path, strerror(errno));
    return;
  }
  json_t *doc = json_pack("{s:s,s:s,s:s,s:I,s:b,s:o}", "format", DISK_FORMAT, "templateID", t->id,
                          "name", t->name, "createdNs", (json_int_t)t->created_ns, "public",
                          t->is_public, "builds", builds);
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  /* written aside, then renamed: serves sharing the store never read half a file */
  if (!doc || json_dump_file(doc, tmp, JSON_INDENT(1) | JSON_SORT_KEYS) != 0 ||
      chmod(tmp, 0600) != 0 || rename(tmp, path) != 0) {
    abx_slog("warning: template store: cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
  }
  json_decref(doc);
}

void abx_tstore_forget(const char *name)
{
  if (!g_dir[0])
    return;
  char path[4400];
  file_of(name, path, sizeof path);
  if (unlink(path) != 0 && errno != ENOENT)
    abx_slog("warning: template store: cannot remove %s: %s", path, strerror(errno));
}

/* One build of a store file as a build record to replay (status waiting, started, restore), or
 * NULL with why. */
static struct abx_tbuild *load_build(json_t *o, char *why, size_t n)
{
  const char *id = json_string_value(json_object_get(o, "buildID"));
  json_t *spec = json_object_get(o, "spec"), *tags = json_object_get(o, "tags");
  json_int_t cpu = json_integer_value(json_object_get(o, "cpuCount"));
  json_int_t mem = json_integer_value(json_object_get(o, "memoryMB"));
  if (!id || strlen(id) >= 40 || !json_is_object(spec) || !json_is_array(tags) ||
      !json_array_size(tags) || cpu <= 0 || cpu > 1024 || mem <= 0 || mem > (1 << 24)) {
    snprintf(why, n, "a build lacks buildID, spec, tags, cpuCount or memoryMB");
    return NULL;
  }
  char tm[200];
  json_t *clean = abx_tstore_clean_tags(tags, tm, sizeof tm);
  if (!clean) {
    snprintf(why, n, "build %s: %s", id, tm);
    return NULL;
  }
  struct abx_tbuild *b = calloc(1, sizeof *b);
  if (!b) {
    json_decref(clean);
    snprintf(why, n, "out of memory");
    return NULL;
  }
  snprintf(b->id, sizeof b->id, "%s", id);
  b->cpu_count = (int)cpu;
  b->memory_mb = (int)mem;
  b->created_ns = json_integer_value(json_object_get(o, "createdNs"));
  b->updated_ns = abx_now_ns();
  b->finished_ns = json_integer_value(json_object_get(o, "finishedNs")); /* the replay order */
  b->spec = json_deep_copy(spec);
  b->tags = clean;
  b->logs = json_array();
  b->status = ABX_BUILD_WAITING;
  b->started = 1;
  b->restore = 1;
  const char *ik = json_string_value(json_object_get(o, "imageKey"));
  if (image_key_ok(ik))
    snprintf(b->image_key, sizeof b->image_key, "%s", ik);
  return b;
}

/* The template of store file `path` with its builds (not yet in the store), or NULL with why. */
static struct abx_ttemplate *load_file(const char *path, char *why, size_t n)
{
  json_error_t je;
  json_t *doc = json_load_file(path, 0, &je);
  const char *id = json_string_value(json_object_get(doc, "templateID"));
  const char *name = json_string_value(json_object_get(doc, "name"));
  const char *fmt = json_string_value(json_object_get(doc, "format"));
  json_t *builds = json_object_get(doc, "builds");
  struct abx_ttemplate *t = NULL;
  if (!doc)
    snprintf(why, n, "not JSON: %s (line %d)", je.text, je.line);
  else if (!fmt || strcmp(fmt, DISK_FORMAT) != 0)
    snprintf(why, n, "format is not %s", DISK_FORMAT);
  else if (!id || !*id || strlen(id) >= sizeof t->id || !name || !*name ||
           strlen(name) >= sizeof t->name || !json_is_array(builds))
    snprintf(why, n, "it lacks templateID, name or builds");
  else if (!(t = calloc(1, sizeof *t)))
    snprintf(why, n, "out of memory");
  if (!t) {
    json_decref(doc);
    return NULL;
  }
  snprintf(t->id, sizeof t->id, "%s", id);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->created_ns = json_integer_value(json_object_get(doc, "createdNs"));
  t->is_public = json_is_true(json_object_get(doc, "public")); /* absent in older files: private */
  t->updated_ns = abx_now_ns();
  t->tags = json_object();
  size_t i;
  json_t *o;
  json_array_foreach(builds, i, o)
  {
    struct abx_tbuild *b = load_build(o, why, n);
    if (!b) {
      abx_tstore_free_template(t);
      json_decref(doc);
      return NULL;
    }
    b->tmpl = t;
    b->next = t->builds;
    t->builds = b;
  }
  json_decref(doc);
  return t;
}

static int by_finished(const void *a, const void *b)
{
  const struct abx_tbuild *x = *(struct abx_tbuild *const *)a, *y = *(struct abx_tbuild *const *)b;
  return (x->finished_ns > y->finished_ns) - (x->finished_ns < y->finished_ns);
}

/* Adds t's builds to the list *bs (*nb of them, *cap room). 0, or -1 out of memory. */
static int collect(struct abx_ttemplate *t, struct abx_tbuild ***bs, size_t *nb, size_t *cap)
{
  for (struct abx_tbuild *b = t->builds; b; b = b->next) {
    if (*nb == *cap) {
      size_t c = *cap ? *cap * 2 : 16;
      struct abx_tbuild **nbs = realloc(*bs, c * sizeof *nbs);
      if (!nbs)
        return -1;
      *bs = nbs, *cap = c;
    }
    (*bs)[(*nb)++] = b;
  }
  return 0;
}

size_t abx_tstore_load(struct abx_tbuild ***out)
{
  *out = NULL;
  DIR *d = g_dir[0] ? opendir(g_dir) : NULL;
  if (!d)
    return 0;
  struct abx_tbuild **bs = NULL;
  size_t nb = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json") != 0)
      continue;
    char path[4400], why[300] = "";
    snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
    struct abx_ttemplate *t = load_file(path, why, sizeof why);
    if (t && abx_tstore_insert(t) != 0) {
      snprintf(why, sizeof why, "template '%s' (%s) is already in this serve's store", t->name,
               t->id);
      abx_tstore_free_template(t);
      t = NULL;
    }
    if (!t) {
      abx_slog("warning: template store: %s skipped: %s", path, why);
      continue;
    }
    abx_tstore_lock();
    for (struct abx_tbuild *b = t->builds; b; b = b->next)
      abx_tstore_log(b, "info", "base",
                     "Restoring from the template store (%s): the build is "
                     "replayed from the build cache",
                     path);
    int rc = collect(t, &bs, &nb, &cap);
    abx_tstore_unlock();
    if (rc != 0) {
      abx_slog("warning: template store: out of memory");
      break;
    }
  }
  closedir(d);
  if (nb > 1) /* a template built from another one is restored after it */
    qsort(bs, nb, sizeof *bs, by_finished);
  *out = bs;
  return nb;
}
