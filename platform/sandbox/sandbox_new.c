/*
 * sandbox_new.c: a sandbox as an object: the one constructor (abx_sandbox_new: id, token,
 * volumes, network, start, with a cleanup stack), its reference count (abx_sandbox_ref, _get,
 * _put) and its destructor. Contract in sandbox.h.
 */
#include "sandbox.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "e2b.h"
#include "metrics.h"
#include "net/net.h"
#include "template/template.h"
#include "util/util.h"
#include "volume.h"

/* ---- undo steps: the constructor's cleanup stack and the destructor share them ---------------- */

static void free_object(struct abx_sandbox *sb)
{
  pthread_mutex_destroy(&sb->op);
  free(sb);
}

static void drop_template(struct abx_sandbox *sb)
{
  abx_template_put(sb->tmpl, 1);
}

static void drop_json(struct abx_sandbox *sb)
{
  json_decref(sb->metadata);
  json_decref(sb->env_vars);
}

static void release_volumes(struct abx_sandbox *sb)
{
  size_t nv = json_array_size(sb->volume_mounts);
  for (size_t i = 0; i < nv && sb->volume_dirs; i++) {
    if (sb->volume_dirs[i])
      abx_volume_release(
          json_string_value(json_object_get(json_array_get(sb->volume_mounts, i), "name")));
    free(sb->volume_dirs[i]);
  }
  free(sb->volume_dirs);
  json_decref(sb->volume_mounts);
}

static void forget_network(struct abx_sandbox *sb)
{
  abx_network_forget(sb->id);
}

/* What a start leaves when it fails or the sandbox ends: its processes, files and samples. */
static void stop_and_forget(struct abx_sandbox *sb)
{
  abx_sandbox_stop(sb);
  abx_metrics_forget(sb->id);
}

/* ---- construction steps --------------------------------------------------------------------- */

/* The plain fields: names, limits, lifecycle flags, a copy of the metadata. 0, or -1 (memory). */
static int copy_fields(struct abx_sandbox *sb, const struct abx_sandbox_spec *spec)
{
  const struct abx_template *t = spec->tmpl;
  snprintf(sb->template_id, sizeof sb->template_id, "%s",
           spec->template_id ? spec->template_id : t->id);
  snprintf(sb->alias, sizeof sb->alias, "%s", spec->alias ? spec->alias : t->alias);
  sb->origin = spec->origin;
  sb->secure = spec->secure;
  sb->skip_start = spec->skip_start;
  sb->cpu_count = spec->cpu_count;
  sb->memory_mb = spec->memory_mb;
  sb->auto_pause = spec->auto_pause;
  sb->auto_pause_memory = spec->auto_pause_memory;
  sb->auto_resume = spec->auto_resume;
  sb->metadata = json_is_object(spec->metadata) ? json_deep_copy(spec->metadata) : json_object();
  return sb->metadata ? 0 : -1;
}

/* spec's volume_mounts (a use of each volume) or bind_dir (no volume). 0, or an HTTP status with
 * msg: 400 (a volume the request names is unknown) or 500. What was taken is released by the
 * undo release_volumes, also after a failure halfway. */
static int take_volumes(struct abx_sandbox *sb, const struct abx_sandbox_spec *spec, char *msg,
                        size_t n)
{
  if (spec->bind_dir)
    sb->volume_mounts =
        json_pack("[{s:s,s:s,s:b}]", "name", "", "path", spec->bind_path, "readOnly", 1);
  else if (json_array_size(spec->volume_mounts) > 0)
    sb->volume_mounts = json_deep_copy(spec->volume_mounts);
  else
    return 0;
  size_t count = json_array_size(sb->volume_mounts);
  sb->volume_dirs = calloc(count ? count : 1, sizeof *sb->volume_dirs);
  if (!sb->volume_mounts || !sb->volume_dirs ||
      (spec->bind_dir && !(sb->volume_dirs[0] = strdup(spec->bind_dir)))) {
    snprintf(msg, n, "out of memory");
    return 500;
  }
  for (size_t i = 0; !spec->bind_dir && i < count; i++) {
    const char *name =
        json_string_value(json_object_get(json_array_get(sb->volume_mounts, i), "name"));
    int st = abx_volume_use(name ? name : "", &sb->volume_dirs[i], msg, n);
    if (st != 0)
      return st == 404 ? 400 : st; /* the request is what is wrong: 400 naming the volume */
  }
  return 0;
}

/* The id (spec->kind, proto/e2b.h) and, when secure, the envd access token. 0, or -1. */
static int mint(struct abx_sandbox *sb, const struct abx_sandbox_spec *spec)
{
  if (abx_e2b_sandbox_id_new(sb->id, spec->kind ? spec->kind : 'i', abx_rand_bytes) != 0)
    return -1;
  return sb->secure ? abx_rand_hex(sb->token, 32) : 0;
}

/* The network settings: a fork's copy, or the create request's (defaults when it has none). */
static int make_network(struct abx_sandbox *sb, const struct abx_sandbox_spec *spec, char *msg,
                        size_t n)
{
  if (spec->network_from)
    return abx_network_clone(spec->network_from, sb->id, msg, n) == 0 ? 0 : 500;
  return abx_network_create(sb->id, spec->network, sb->secure, msg, n);
}

/* abx_sandbox_start, its error behind spec->start_failed. */
static int start(struct abx_sandbox *sb, const struct abx_sandbox_spec *spec, char *msg, size_t n)
{
  char err[ABX_START_ERR_MAX];
  json_t *env = json_is_object(spec->env_vars) ? json_incref(spec->env_vars) : json_object();
  int rc = env ? abx_sandbox_start(sb, env, err, sizeof err)
               : (snprintf(err, sizeof err, "out of memory"), -1);
  json_decref(env);
  if (rc != 0 && spec->start_failed)
    snprintf(msg, n, "%s: %s", spec->start_failed, err); /* logged by sandbox.c */
  else if (rc != 0)
    snprintf(msg, n, "%s", err);
  return rc == 0 ? 0 : 500;
}

struct abx_sandbox *abx_sandbox_new(const struct abx_sandbox_spec *spec, int *status, char *err,
                                    size_t errlen)
{
  struct cleanup undo = {.n = 0};
  int st = 500;
  struct abx_sandbox *sb = calloc(1, sizeof *sb);
  if (!sb) {
    snprintf(err, errlen, "out of memory");
    *status = 500;
    return NULL;
  }
  pthread_mutex_init(&sb->op, NULL);
  sb->netns_fd = -1;
  sb->refs = 1; /* the caller's */
  cleanup_push(&undo, free_object);
  abx_template_ref(spec->tmpl, 1);
  sb->tmpl = spec->tmpl;
  cleanup_push(&undo, drop_template);
  cleanup_push(&undo, drop_json);
  if (copy_fields(sb, spec) != 0) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  cleanup_push(&undo, release_volumes);
  if ((st = take_volumes(sb, spec, err, errlen)) != 0)
    goto fail;
  if (mint(sb, spec) != 0) {
    snprintf(err, errlen, "no randomness available");
    st = 500;
    goto fail;
  }
  cleanup_push(&undo, forget_network);
  if ((st = make_network(sb, spec, err, errlen)) != 0)
    goto fail;
  cleanup_push(&undo, stop_and_forget);
  if (!spec->defer_start && (st = start(sb, spec, err, errlen)) != 0)
    goto fail;
  *status = 0;
  return sb;
fail:
  cleanup_run(&undo, sb);
  *status = st;
  return NULL;
}

/* ---- references ------------------------------------------------------------------------------ */

struct abx_sandbox *abx_sandbox_ref(struct abx_sandbox *sb)
{
  __atomic_add_fetch(&sb->refs, 1, __ATOMIC_RELAXED);
  return sb;
}

struct abx_sandbox *abx_sandbox_get(const char *id)
{
  abx_registry_lock(); /* listed, it holds the list's ref: it cannot reach 0 meanwhile */
  struct abx_sandbox *s = abx_registry_find(id);
  if (s)
    abx_sandbox_ref(s);
  abx_registry_unlock();
  return s;
}

/* abx_sandbox_stop, then everything the sandbox owns, in the reverse order of abx_sandbox_new. */
static void destroy(struct abx_sandbox *sb)
{
  if (sb->id[0] == 'b' && sb->dir) /* a build's sandbox that started (listed ones: lifecycle.c) */
    abx_slog("sandbox %s stopped: its build step ended", sb->id);
  stop_and_forget(sb);
  forget_network(sb);
  release_volumes(sb);
  drop_json(sb);
  drop_template(sb);
  free_object(sb);
}

void abx_sandbox_put(struct abx_sandbox *sb)
{
  if (sb && __atomic_sub_fetch(&sb->refs, 1, __ATOMIC_ACQ_REL) == 0)
    destroy(sb);
}
