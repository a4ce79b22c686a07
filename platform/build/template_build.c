/*
 * template_build.c: validation, the build queue and the build runner. Contract in
 * template_build.h; the step semantics are E2B's orchestrator's (infra orchestrator/pkg/
 * template/build/commands/{run,copy,user,workdir,env}.go, phases/steps/builder.go).
 */
#include "template_build.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_steps.h"
#include "util/util.h"
#include "template/template.h"
#include "sandbox/sandbox.h"

int abx_tbuild_only_keys(json_t *o, const char *const *keys, size_t nk, const char *what, char *msg,
                         size_t n)
{
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v)
  {
    size_t i = 0;
    while (i < nk && strcmp(keys[i], k) != 0)
      i++;
    if (i == nk) {
      char valid[400] = "";
      for (size_t j = 0; j < nk; j++)
        snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s%s", j ? ", " : "",
                 keys[j]);
      snprintf(msg, n, "validation error: unknown field '%s%s' (valid: %s)", what, k, valid);
      return -1;
    }
  }
  return 0;
}

static int opt_type(json_t *o, const char *key, int (*is)(const json_t *), const char *tname,
                    const char *what, char *msg, size_t n)
{
  json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v) || is(v))
    return 0;
  snprintf(msg, n, "validation error: field '%s%s' must be %s", what, key, tname);
  return -1;
}

static int is_str(const json_t *v)
{
  return json_is_string(v);
}
static int is_bool(const json_t *v)
{
  return json_is_boolean(v);
}
static int is_arr(const json_t *v)
{
  return json_is_array(v);
}
static int is_obj(const json_t *v)
{
  return json_is_object(v);
}

/* readyTimeout (template_build.h): absent, or a whole number of seconds in 1..MAX */
static int ready_timeout_ok(json_t *spec, char *msg, size_t n)
{
  json_t *v = json_object_get(spec, "readyTimeout");
  if (!v || json_is_null(v))
    return 0;
  if (json_is_integer(v) && json_integer_value(v) >= 1 &&
      json_integer_value(v) <= ABX_READY_TIMEOUT_MAX_S)
    return 0;
  snprintf(msg, n,
           "validation error: field 'readyTimeout' must be a whole number of seconds "
           "from 1 to %d (how long the template's ready_cmd may take)",
           ABX_READY_TIMEOUT_MAX_S);
  return -1;
}

int abx_tbuild_validate(json_t *spec, char *msg, size_t n)
{
  static const char *const keys[] = {"fromImage", "fromTemplate", "fromImageRegistry",
                                     "startCmd",  "readyCmd",     "readyTimeout",
                                     "force",     "steps"};
  if (abx_tbuild_only_keys(spec, keys, sizeof keys / sizeof keys[0], "", msg, n) ||
      opt_type(spec, "fromImage", is_str, "a string", "", msg, n) ||
      opt_type(spec, "fromTemplate", is_str, "a string", "", msg, n) ||
      opt_type(spec, "fromImageRegistry", is_obj, "an object", "", msg, n) ||
      opt_type(spec, "startCmd", is_str, "a string", "", msg, n) ||
      opt_type(spec, "readyCmd", is_str, "a string", "", msg, n) ||
      opt_type(spec, "force", is_bool, "a boolean", "", msg, n) ||
      opt_type(spec, "steps", is_arr, "an array", "", msg, n) || ready_timeout_ok(spec, msg, n))
    return -1;
  const char *img = json_string_value(json_object_get(spec, "fromImage"));
  const char *tpl = json_string_value(json_object_get(spec, "fromTemplate"));
  if ((img && *img) == (tpl && *tpl)) {
    snprintf(msg, n, "validation error: exactly one of 'fromImage' and 'fromTemplate' is required");
    return -1;
  }
  if (json_object_get(spec, "fromImageRegistry") &&
      !json_is_null(json_object_get(spec, "fromImageRegistry"))) {
    snprintf(msg, n,
             "fromImageRegistry is not supported by the local platform: no image registry is "
             "reachable from here");
    return -1;
  }
  size_t i;
  json_t *st;
  json_array_foreach(json_object_get(spec, "steps"), i, st)
  {
    static const char *const skeys[] = {
        "type", "args", "filesHash", "force", "forceUpload", "resolveSymlinks", "gzip"};
    char what[32];
    snprintf(what, sizeof what, "steps[%zu].", i);
    if (!json_is_object(st)) {
      snprintf(msg, n, "validation error: field 'steps[%zu]' must be an object", i);
      return -1;
    }
    if (abx_tbuild_only_keys(st, skeys, 4, what, msg, n) != 0) {
      const char *ty = json_string_value(json_object_get(st, "type"));
      int copy = ty && (strcasecmp(ty, "COPY") == 0 || strcasecmp(ty, "ADD") == 0);
      if (!copy ||
          abx_tbuild_only_keys(st, skeys, sizeof skeys / sizeof skeys[0], what, msg, n) != 0)
        return -1;
    }
    json_t *ty = json_object_get(st, "type"), *args = json_object_get(st, "args");
    if (!json_is_string(ty) || !*json_string_value(ty)) {
      snprintf(msg, n, "validation error: field '%stype' is required and must be a string", what);
      return -1;
    }
    if (args && !json_is_null(args)) {
      size_t j;
      json_t *a;
      int ok = json_is_array(args);
      json_array_foreach(args, j, a) ok = ok && json_is_string(a);
      if (!ok) {
        snprintf(msg, n, "validation error: field '%sargs' must be an array of strings", what);
        return -1;
      }
    }
    if (opt_type(st, "filesHash", is_str, "a string", what, msg, n) ||
        opt_type(st, "force", is_bool, "a boolean", what, msg, n) ||
        opt_type(st, "forceUpload", is_bool, "a boolean", what, msg, n) ||
        opt_type(st, "resolveSymlinks", is_bool, "a boolean", what, msg, n) ||
        opt_type(st, "gzip", is_bool, "a boolean", what, msg, n))
      return -1;
  }
  return 0;
}

/* ---- queue ----------------------------------------------------------------------------------- */

static struct abx_tbuild *g_qhead, **g_qtail = &g_qhead;
static int g_running, g_stopping;
static int g_pids[ABX_BUILDS_MAX * 2];
static char g_base_key[65];

static void *worker(void *arg);

void abx_tbuild_enqueue(struct abx_tbuild *b)
{
  if (g_stopping) {
    b->status = ABX_BUILD_ERROR;
    b->reason = strdup("serve is stopping");
    return;
  }
  b->status = ABX_BUILD_WAITING;
  b->qnext = NULL;
  *g_qtail = b;
  g_qtail = &b->qnext;
  abx_tstore_log(b, "info", NULL, "Build queued (at most %d builds run at once)", ABX_BUILDS_MAX);
  if (g_running < ABX_BUILDS_MAX) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, worker, NULL) == 0)
      g_running++;
    pthread_attr_destroy(&at);
  }
}

static void *worker(void *arg)
{
  (void)arg;
  for (;;) {
    abx_tstore_lock();
    struct abx_tbuild *b = g_qhead;
    if (!b) {
      g_running--;
      abx_tstore_unlock();
      return NULL;
    }
    g_qhead = b->qnext;
    if (!g_qhead)
      g_qtail = &g_qhead;
    b->status = ABX_BUILD_BUILDING;
    b->updated_ns = abx_now_ns();
    abx_tstore_unlock();
    abx_build_run(b);
  }
}

int abx_tbuild_stopping(void)
{
  return g_stopping;
}

void abx_tbuild_track(int pid, int add)
{
  abx_tstore_lock();
  for (size_t i = 0; i < sizeof g_pids / sizeof g_pids[0]; i++)
    if (add ? g_pids[i] == 0 : g_pids[i] == pid) {
      g_pids[i] = add ? pid : 0;
      break;
    }
  abx_tstore_unlock();
}

void abx_tbuild_stop(void)
{
  abx_tstore_lock();
  g_stopping = 1;
  for (struct abx_tbuild *b = g_qhead; b; b = b->qnext) {
    b->status = ABX_BUILD_ERROR;
    free(b->reason);
    b->reason = strdup("serve is stopping");
    b->finished_ns = abx_now_ns();
  }
  g_qhead = NULL;
  g_qtail = &g_qhead;
  for (size_t i = 0; i < sizeof g_pids / sizeof g_pids[0]; i++)
    if (g_pids[i] > 0)
      kill(-g_pids[i], SIGKILL);
  abx_tstore_unlock();
  abx_image_stop(); /* a fromImage build in mmdebstrap (image_debian.h) */
}

int abx_tbuild_wait(void)
{
  for (int i = 0; i < 300; i++) {
    abx_tstore_lock();
    int running = g_running;
    abx_tstore_unlock();
    if (!running)
      return 0;
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
  }
  abx_slog("%d template build(s) still running at shutdown", g_running);
  return -1;
}

void abx_tbuild_init_keys(void)
{
  struct abx_key *k = abx_key_new();
  abx_key_add(k, "abxlua base v1");
  abx_key_add_file(k, "/var/lib/dpkg/status"); /* base's /usr is the host's */
  abx_key_add_tree(k, abx_template_base()->layer);
  abx_key_end(k, g_base_key);
  snprintf(abx_template_base()->build_key, sizeof abx_template_base()->build_key, "%s", g_base_key);
}

/* A stored build that cannot be replayed: failed with `why`, under the lock. */
static void restore_refused(struct abx_tbuild *b, const char *why)
{
  abx_tstore_lock();
  abx_tstore_log(b, "error", "base", "Build failed: %s", why);
  b->status = ABX_BUILD_ERROR;
  free(b->reason);
  b->reason = strdup(why);
  snprintf(b->reason_step, sizeof b->reason_step, "base");
  b->finished_ns = b->updated_ns = abx_now_ns();
  abx_tstore_unlock();
}

int abx_tbuild_restore(void)
{
  struct abx_tbuild **bs = NULL;
  size_t n = abx_tstore_load(&bs), ok = 0;
  for (size_t i = 0; i < n; i++) {
    struct abx_tbuild *b = bs[i];
    char msg[300];
    abx_tstore_lock();
    int valid = abx_tbuild_validate(b->spec, msg, sizeof msg) == 0;
    if (valid)
      b->status = ABX_BUILD_BUILDING;
    abx_tstore_unlock();
    if (!valid) {
      restore_refused(b, msg);
    } else {
      abx_build_run(b); /* on this thread: every step is a cache hit, or it fails */
    }
    abx_tstore_lock();
    int ready = b->status == ABX_BUILD_READY;
    if (!ready)
      abx_slog("warning: template store: template '%s' (build %s) not restored: %s", b->tmpl->name,
               b->id, b->reason ? b->reason : "build failed");
    abx_tstore_unlock();
    ok += (size_t)ready;
  }
  if (n)
    abx_slog("template store %s: %zu of %zu build(s) restored", abx_tstore_disk_dir(), ok, n);
  free(bs);
  return (int)ok;
}
