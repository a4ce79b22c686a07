/*
 * build_steps.c: one template build. Contract in build_steps.h and template_build.h.
 */
#include "build_steps.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "util/util.h"
#include "template/template.h"
#include "net/net.h"

void abx_run_log(struct abx_run *r, const char *level, const char *fmt, ...)
{
  char m[4200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  abx_tstore_lock();
  abx_tstore_log(r->b, level, r->step[0] ? r->step : NULL, "%s", m);
  abx_tstore_unlock();
}

/* ---- keys and layers -------------------------------------------------------------------------- */

static void chain_key(struct abx_template *t, char out[65])
{
  if (t->build_key[0]) {
    snprintf(out, 65, "%s", t->build_key);
    return;
  }
  char pk[65] = "";
  if (t->parent)
    chain_key(t->parent, pk);
  struct abx_key *k = abx_key_new();
  abx_key_add(k, pk);
  abx_key_add(k, t->id);
  if (t->builtin)
    abx_key_add_tree(k, t->layer); /* rebuilt at every start with the same content */
  else {                           /* a snapshot: its own, never reused across serves */
    char u[64];
    snprintf(u, sizeof u, "%lld", (long long)t->created_ns);
    abx_key_add(k, t->layer);
    abx_key_add(k, u);
  }
  abx_key_end(k, out);
}

static int dir_empty(const char *p)
{
  DIR *d = opendir(p);
  if (!d)
    return 1;
  struct dirent *e;
  int empty = 1;
  while (empty && (e = readdir(d)))
    empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
  closedir(d);
  return empty;
}

/* 1 when every part dir of the layer is empty (the step changed no file). */
static int layer_empty(const char *layer)
{
  DIR *d = opendir(layer);
  if (!d)
    return 1;
  struct dirent *e;
  int empty = 1;
  while (empty && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", layer, e->d_name);
    empty = dir_empty(p);
  }
  closedir(d);
  return empty;
}

/* Put cache layer `key` on top of the chain (skipped when it changed nothing). */
static int push_layer(struct abx_run *r, const char *key, int apt, char *err, size_t n)
{
  char p[4096];
  abx_lcache_layer_path(key, p);
  if (!apt && layer_empty(p))
    return 0;
  struct abx_template *t = abx_template_layer(r->top, p, err, n);
  if (!t)
    return -1;
  t->apt_state = apt;
  snprintf(t->build_key, sizeof t->build_key, "%s", key);
  abx_template_put(r->top, 0);
  r->top = t;
  return 0;
}

static int spawn_wait(char *const argv[])
{
  char *envp[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
  pid_t pid;
  if (posix_spawn(&pid, argv[0], NULL, NULL, argv, envp) != 0)
    return -1;
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* <layer>/etc/<name>: base's root and user lines (rootfs.c) around the host's system entries
 * (ids 1..999 and 65534): dpkg refuses to work when its statoverride file names a user or group
 * that does not exist (e.g. crontab, _ssh), and apt drops privileges to _apt. */
static int system_ids(const char *layer, const char *name, const char *head, const char *tail)
{
  char src[64], dst[4400], line[2048];
  snprintf(src, sizeof src, "/etc/%s", name);
  snprintf(dst, sizeof dst, "%s/etc/%s", layer, name);
  FILE *in = fopen(src, "re"), *out = fopen(dst, "we");
  if (!out) {
    if (in)
      fclose(in);
    return -1;
  }
  fputs(head, out);
  while (in && fgets(line, sizeof line, in)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    long id = c2 ? strtol(c2 + 1, NULL, 10) : -1;
    if ((id > 0 && id < 1000) || id == 65534)
      if (strncmp(line, "user:", 5) != 0)
        fputs(line, out);
  }
  fputs(tail, out);
  if (in)
    fclose(in);
  return fclose(out) == 0 ? 0 : -1;
}

/* The apt layer (template_build.h "Apt") for the chain, made once per dpkg state; none over an
 * image root (its own dpkg database). */
static int apt_layer(struct abx_run *r, char *err, size_t n)
{
  if (abx_template_is_image(r->top))
    return 0;
  for (struct abx_template *t = r->top; t; t = t->parent)
    if (t->apt_state)
      return 0;
  struct abx_key *k = abx_key_new();
  abx_key_add(k, r->key);
  abx_key_add(k, "apt-state v1");
  abx_key_add_file(k, "/var/lib/dpkg/status");
  abx_key_add_file(k, "/etc/passwd");
  abx_key_add_file(k, "/etc/group");
  abx_key_end(k, r->key);
  if (!abx_lcache_layer_present(r->key)) {
    char tmp[4096], layer[4200], p[4400];
    if (abx_lcache_tmpdir(tmp, err, n) != 0)
      return -1;
    snprintf(layer, sizeof layer, "%s/layer", tmp);
    int ok = mkdir(layer, 0755) == 0 && abx_rootfs_layer_parts(layer) == 0;
    static const char *const dirs[] = {"var",
                                       "var/lib",
                                       "var/cache",
                                       "var/cache/apt",
                                       "var/cache/apt/archives",
                                       "var/cache/apt/archives/partial",
                                       "var/log",
                                       "var/log/apt"};
    for (size_t i = 0; ok && i < sizeof dirs / sizeof dirs[0]; i++) {
      snprintf(p, sizeof p, "%s/root/%s", layer, dirs[i]);
      ok = mkdir(p, 0755) == 0 || errno == EEXIST;
    }
    ok = ok &&
         system_ids(layer, "passwd", "root:x:0:0:root:/root:/bin/bash\n",
                    "user:x:1000:1000::/home/user:/bin/bash\n") == 0 &&
         system_ids(layer, "group", "root:x:0:\n", "user:x:1000:\n") == 0;
    static const char *const copies[][2] = {{"/var/lib/dpkg", "var/lib"},
                                            {"/var/lib/apt", "var/lib"},
                                            {"/var/cache/debconf", "var/cache"}};
    for (size_t i = 0; ok && i < sizeof copies / sizeof copies[0]; i++) {
      struct stat st;
      if (stat(copies[i][0], &st) != 0)
        continue;
      snprintf(p, sizeof p, "%s/root/%s/", layer, copies[i][1]);
      char *argv[] = {"/bin/cp", "-a", "--", (char *)copies[i][0], p, NULL};
      ok = spawn_wait(argv) == 0;
      if (!ok)
        snprintf(err, n, "cannot copy %s into a layer (cp -a failed)", copies[i][0]);
    }
    if (!ok) {
      if (!err[0])
        snprintf(err, n, "cannot make the dirs of the dpkg/apt layer in %.3000s: %s", layer,
                 strerror(errno));
      abx_rmtree(tmp);
      return -1;
    }
    int rc = abx_lcache_layer_store(r->key, layer, err, n);
    abx_rmtree(tmp);
    if (rc != 0)
      return -1;
  }
  return push_layer(r, r->key, 1, err, n);
}

/* ---- the build ------------------------------------------------------------------------------ */

static void step_key(struct abx_run *r, const char *type, json_t *st, char out[65])
{
  struct abx_key *k = abx_key_new();
  abx_key_add(k, r->key);
  abx_key_add(k, type);
  json_t *args = json_object_get(st, "args");
  size_t i;
  json_t *a;
  json_array_foreach(args, i, a) abx_key_add(k, json_string_value(a));
  abx_key_add(k, json_string_value(json_object_get(st, "filesHash")));
  abx_key_add(k, r->user);
  abx_key_add(k, r->workdir ? r->workdir : "");
  char *env = json_dumps(r->env, JSON_COMPACT | JSON_SORT_KEYS);
  abx_key_add(k, env);
  free(env);
  abx_key_end(k, out);
}

static void fail_build(struct abx_run *r, size_t from, const char *msg)
{
  abx_tstore_lock();
  abx_tstore_log(r->b, "error", r->step[0] ? r->step : NULL, "Build failed: %s", msg);
  r->b->status = ABX_BUILD_ERROR;
  free(r->b->reason);
  r->b->reason = strdup(msg);
  snprintf(r->b->reason_step, sizeof r->b->reason_step, "%s", r->step);
  r->b->reason_from = from;
  r->b->finished_ns = r->b->updated_ns = abx_now_ns();
  abx_tstore_unlock();
}

static size_t log_count(struct abx_run *r)
{
  abx_tstore_lock();
  size_t n = json_array_size(r->b->logs);
  abx_tstore_unlock();
  return n;
}

/* An image build's output line (image_debian.h "Log") as a log entry of the build's base step. */
static void image_line(void *ud, const char *line)
{
  abx_run_log(ud, "info", "%s", line);
}

/* A stored fromImage build's image root (template_store.h "Disk"), as it is in the cache: the
 * suite is not resolved nor the root built again (neither belongs at serve's start). NULL with
 * err when the cache no longer has it. */
static struct abx_template *stored_image(struct abx_run *r, const char *img, char *err, size_t n)
{
  char dir[4200], root[4300];
  struct stat st;
  snprintf(dir, sizeof dir, "%s/images/%s", abx_lcache_dir(), r->b->image_key);
  snprintf(root, sizeof root, "%s/root", dir);
  if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, n,
             "image '%s': its root %s is no longer in the build cache: build the "
             "template again",
             img, r->b->image_key);
    return NULL;
  }
  return abx_template_image(dir, r->b->image_key, img, err, n);
}

/* The parent of the build and the keys: 0, or -1 with err. */
static int base(struct abx_run *r, json_t *spec, char *err, size_t n)
{
  const char *img = json_string_value(json_object_get(spec, "fromImage"));
  const char *tpl = json_string_value(json_object_get(spec, "fromTemplate"));
  struct abx_template *p = tpl && *tpl ? abx_template_get(tpl, 0)
                           : r->b->restore && r->b->image_key[0]
                               ? stored_image(r, img, err, n)
                               : abx_tbuild_image_root(img, image_line, r, err, n);
  if (!p) {
    if (tpl && *tpl)
      snprintf(err, n, "template '%.200s' not found", tpl);
    return -1;
  }
  r->top = p;
  chain_key(p, r->key);
  abx_run_log(r, "info", "[base] FROM %s %s [%s]", tpl && *tpl ? "template" : "image",
              tpl && *tpl ? tpl : img, r->key);
  /* v2 builds: after the base phase (root) comes USER user (infra builder.go userBuilder,
   * config.TemplateDefaultUser); from a built template, its WORKDIR and ENV carry on */
  snprintf(r->user, sizeof r->user, "user");
  const char *wd = abx_template_workdir(p);
  r->workdir = wd ? strdup(wd) : NULL;
  json_t *env = abx_template_env(p);
  r->env = env ? json_deep_copy(env) : json_object();
  return apt_layer(r, err, n);
}

/* The template record of the result: an empty cache layer over the chain carrying the
 * template's commands, defaults and limits. */
static struct abx_template *result(struct abx_run *r, json_t *spec, char *err, size_t n)
{
  const char *sc = json_string_value(json_object_get(spec, "startCmd"));
  const char *rc = json_string_value(json_object_get(spec, "readyCmd"));
  /* the record's layer: an empty one of its own key (overlayfs refuses one dir twice in a
   * chain, so templates built on each other cannot share one empty layer) */
  char fkey[65];
  struct abx_key *k = abx_key_new();
  abx_key_add(k, r->key);
  abx_key_add(k, "finalize");
  abx_key_add(k, sc);
  abx_key_add(k, rc);
  abx_key_end(k, fkey);
  if (!abx_lcache_layer_present(fkey)) {
    char tmp[4096], layer[4200];
    if (abx_lcache_tmpdir(tmp, err, n) != 0)
      return NULL;
    snprintf(layer, sizeof layer, "%s/layer", tmp);
    int st = mkdir(layer, 0755) == 0 && abx_rootfs_layer_parts(layer) == 0
                 ? abx_lcache_layer_store(fkey, layer, err, n)
                 : -1;
    abx_rmtree(tmp);
    if (st != 0)
      return NULL;
  }
  char p[4096];
  abx_lcache_layer_path(fkey, p);
  struct abx_template *t = abx_template_layer(r->top, p, err, n);
  if (!t)
    return NULL;
  snprintf(t->build_key, sizeof t->build_key, "%s", fkey);
  snprintf(t->id, sizeof t->id, "%s", r->b->tmpl->id);
  snprintf(t->alias, sizeof t->alias, "%.63s", r->b->tmpl->name);
  /* either set: both replace the parent's ("" = none); neither: the parent's stay (infra
   * phases/finalize/builder.go Layer) */
  int own = (sc && *sc) || (rc && *rc);
  t->start_cmd = own ? strdup(sc ? sc : "") : NULL;
  t->ready_cmd = own ? strdup(rc ? rc : "") : NULL;
  /* validated (abx_tbuild_validate): 1..ABX_READY_TIMEOUT_MAX_S; absent: 0, the parent's */
  t->ready_timeout_s = (int)json_integer_value(json_object_get(spec, "readyTimeout"));
  t->env_vars = json_deep_copy(r->env);
  t->default_user = strdup(r->user);
  t->default_workdir = r->workdir ? strdup(r->workdir) : NULL;
  t->cpu_count = r->b->cpu_count;
  t->memory_mb = r->b->memory_mb;
  return t;
}

static const char *known(const char *type)
{
  static const char *const types[] = {"COPY", "ADD", "RUN", "USER", "WORKDIR", "ENV", "ARG"};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (strcmp(types[i], type) == 0)
      return types[i];
  return NULL;
}

/* ENV and ARG (no layer of their own): the pairs of `args` into the build's environment, each
 * value expanded against it. 0, or -1 with err (an empty or odd list, as E2B words it). */
static int set_env(struct abx_run *r, const char *type, json_t *args, char *err, size_t n)
{
  size_t na = json_array_size(args);
  if (na == 0 || na % 2) {
    snprintf(err, n,
             na ? "%s requires both a key and value arguments"
                : "%s does not support passing no arguments",
             type);
    return -1;
  }
  for (size_t j = 0; j + 1 < na; j += 2) {
    char *v = abx_run_expand(abx_run_arg(args, j + 1), r->env);
    json_object_set_new(r->env, abx_run_arg(args, j), json_string(v ? v : ""));
    free(v);
  }
  return 0;
}

/* Step i (from 0) of nsteps: its log line (CACHED or not), its run when not cached, its layer.
 * ENV/ARG have no layer of their own; like E2B's (whose every step is a cached layer), one is
 * CACHED while every step before it was (*missed stays 0), so a cached rebuild's log says so for
 * every step. 0, or -1 with the build failed. */
static int run_step(struct abx_run *r, json_t *st, size_t i, size_t nsteps, int force, int *missed)
{
  char type[32], key[65], err[4096] = "";
  snprintf(type, sizeof type, "%s", json_string_value(json_object_get(st, "type")));
  for (char *c = type; *c; c++)
    *c = (char)toupper((unsigned char)*c);
  snprintf(r->step, sizeof r->step, "%zu", i + 1);
  size_t from = log_count(r);
  json_t *args = json_object_get(st, "args");
  char text[3000] = "";
  size_t j;
  json_t *a;
  json_array_foreach(args, j, a)
      snprintf(text + strlen(text), sizeof text - strlen(text), " %s", json_string_value(a));
  if (abx_tbuild_stopping()) {
    fail_build(r, from, "serve is stopping");
    return -1;
  }
  if (!known(type)) {
    snprintf(err, sizeof err, "command type %s is not implemented", type);
    fail_build(r, from, err);
    return -1;
  }
  step_key(r, type, st, key);
  if (strcmp(type, "ENV") == 0 || strcmp(type, "ARG") == 0) {
    if (set_env(r, type, args, err, sizeof err) != 0) {
      fail_build(r, from, err);
      return -1;
    }
    *missed |= json_is_true(json_object_get(st, "force"));
    abx_run_log(r, "info", "%s[builder %zu/%zu] %s%s [%s]", *missed ? "" : "CACHED ", i + 1, nsteps,
                type, text, key);
    snprintf(r->key, sizeof r->key, "%s", key);
    return 0;
  }
  if (strcmp(type, "WORKDIR") == 0) {
    char *w = abx_run_join_workdir(r->workdir, abx_run_arg(args, 0));
    free(r->workdir);
    r->workdir = w;
  }
  int cached = !force && (r->b->restore || !json_is_true(json_object_get(st, "force"))) &&
               abx_lcache_layer_present(key);
  *missed |= !cached;
  if (!cached && r->b->restore) { /* template_store.h "Disk": from the cache alone */
    snprintf(err, sizeof err,
             "step %zu (%s) is no longer in the build cache %s (the host's packages changed, "
             "or the cache was pruned): build the template again",
             i + 1, type, abx_lcache_dir());
    fail_build(r, from, err);
    return -1;
  }
  abx_run_log(r, "info", "%s[builder %zu/%zu] %s%s [%s]", cached ? "CACHED " : "", i + 1, nsteps,
              type, text, key);
  if ((!cached && abx_run_exec_step(r, type, st, key, err, sizeof err) != 0) ||
      push_layer(r, key, 0, err, sizeof err) != 0) {
    fail_build(r, from, err);
    return -1;
  }
  if (strcmp(type, "USER") == 0)
    snprintf(r->user, sizeof r->user, "%s", abx_run_arg(args, 0));
  snprintf(r->key, sizeof r->key, "%s", key);
  return 0;
}

/* The finalize step: the result template, and its start and ready commands run once in a sandbox
 * of it (unless a build of the same key already did, or `force`). The result (a reference), or
 * NULL with the build failed. */
static struct abx_template *finalize(struct abx_run *r, json_t *spec, int force)
{
  char err[4096] = "";
  snprintf(r->step, sizeof r->step, "finalize");
  size_t from = log_count(r);
  struct abx_template *res = result(r, spec, err, sizeof err);
  if (!res) {
    fail_build(r, from, err);
    return NULL;
  }
  int cmds = abx_template_start_cmd(res) || abx_template_ready_cmd(res);
  if (cmds && r->b->restore && !abx_lcache_done_present(res->build_key)) {
    abx_template_put(res, 0);
    fail_build(r, from,
               "its finalize (start_cmd and ready_cmd) is no longer in the build cache: "
               "build the template again");
    return NULL;
  }
  if (cmds && (force || !abx_lcache_done_present(res->build_key))) {
    abx_run_log(r, "info", "[finalize] start_cmd and ready_cmd in a sandbox of the result [%s]",
                res->build_key);
    struct abx_sandbox *sb = abx_run_boot(r, res, NULL, 0, err, sizeof err);
    if (!sb) {
      abx_template_put(res, 0);
      fail_build(r, from, err);
      return NULL;
    }
    abx_sandbox_put(sb);
    abx_lcache_done_mark(res->build_key);
  } else if (cmds) {
    abx_run_log(r, "info", "CACHED [finalize] start_cmd and ready_cmd [%s]", res->build_key);
  }
  return res;
}

/* The build is ready: its result (the reference passes to b), its tags, its last log line. */
static void publish(struct abx_tbuild *b, struct abx_template *res, int64_t t0)
{
  abx_tstore_lock();
  b->result = res;
  b->status = ABX_BUILD_READY;
  b->finished_ns = b->updated_ns = abx_now_ns();
  size_t i;
  json_t *tg;
  json_array_foreach(b->tags, i, tg) abx_tstore_tag(b->tmpl, b, json_string_value(tg));
  abx_tstore_save(b->tmpl); /* template_store.h "Disk" */
  abx_tstore_log(b, "info", "finalize", "Build finished in %.1f s: template %s (%s)",
                 (double)(abx_mono_ns() - t0) / 1e9, b->tmpl->name, b->tmpl->id);
  abx_tstore_unlock();
}

void abx_build_run(struct abx_tbuild *b)
{
  struct abx_run r = {.b = b};
  abx_tstore_lock();
  json_t *spec = json_incref(b->spec);
  /* a replay of the disk store forces nothing: it only finds what the cache has */
  int force = !b->restore && json_is_true(json_object_get(spec, "force"));
  abx_tstore_unlock();
  char err[4096] = "";
  int64_t t0 = abx_mono_ns();
  snprintf(r.step, sizeof r.step, "base");
  size_t from = log_count(&r);
  if (base(&r, spec, err, sizeof err) != 0) {
    fail_build(&r, from, err);
    goto out;
  }
  json_t *steps = json_object_get(spec, "steps");
  size_t nsteps = json_array_size(steps);
  int missed = force; /* a step so far was not cached (run_step) */
  for (size_t i = 0; i < nsteps; i++)
    if (run_step(&r, json_array_get(steps, i), i, nsteps, force, &missed) != 0)
      goto out;
  struct abx_template *res = finalize(&r, spec, force);
  if (res)
    publish(b, res, t0);
out:
  abx_template_put(r.top, 0);
  free(r.workdir);
  json_decref(r.env);
  json_decref(spec);
}
