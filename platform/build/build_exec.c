/*
 * build_exec.c: the file-changing steps of a template build, each in a build sandbox (COPY/ADD,
 * RUN, USER, WORKDIR as E2B's orchestrator runs them: infra orchestrator/pkg/template/build/
 * commands/{copy.go,copy_script.sh,run.go,user.go,workdir.go}), and ENV's expansion. Contract in
 * build_steps.h.
 */
#include "build_steps.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "net/net.h"
#include "sandbox/sandbox.h"
#include "util/util.h"
#include "template/template.h"

static void on_line(void *cls, int stream, const char *line)
{
  abx_run_log(cls, stream == 2 ? "error" : "info", "%s", line);
}

/* ---- build sandboxes ------------------------------------------------------------------------ */

struct abx_sandbox *abx_run_boot(struct abx_run *r, struct abx_template *t, const char *bind_dir,
                                 int skip_start, char *err, size_t n)
{
  struct abx_sandbox_spec spec = {
      .kind = 'b', /* never listed: "b" tells a build sandbox in logs and cgroups */
      .origin = "build",
      .tmpl = t,
      .template_id = r->b->tmpl->id,
      .alias = r->b->tmpl->name,
      .cpu_count = r->b->cpu_count,
      .memory_mb = r->b->memory_mb,
      .bind_dir = bind_dir,
      .bind_path = ABX_BUILD_BIND,
      .skip_start = skip_start,
  };
  int status;
  return abx_sandbox_new(&spec, &status, err, n);
}

/* Stop the build sandbox and keep its upper dirs as cache layer `key`. */
static int finish_layer(struct abx_sandbox *sb, const char *key, char *err, size_t n)
{
  abx_sandbox_halt(sb);
  abx_rootfs_umount(sb->dir);
  char up[4200];
  snprintf(up, sizeof up, "%s/upper", sb->dir);
  int rc = abx_lcache_layer_store(key, up, err, n);
  abx_sandbox_put(sb);
  return rc;
}

static int run_in(struct abx_run *r, struct abx_sandbox *sb, const char *user, const char *cwd,
                  const char *script, json_t *envs, int *code, char *err, size_t n)
{
  return abx_envd_run_stream(sb->netns_fd, NULL, user, cwd, script, envs,
                             (long)ABX_BUILD_STEP_TIMEOUT_S * 1000, on_line, r, code, err, n);
}

/* A RUN step may reach the package registries only through the build sandboxes' egress proxy
 * (build_proxy.h; the sandbox's own link reaches nothing else): allow this sandbox and add the
 * proxy's variables to `envs` where the template's ENV has not set them. Without the proxy the
 * step still runs, offline, and the log says why. */
static void with_proxy(struct abx_run *r, struct abx_sandbox *sb, json_t *envs)
{
  char url[64], why[256];
  if (abx_build_proxy_allow(sb->id, url, sizeof url, why, sizeof why) != 0) {
    abx_run_log(r, "warn", "no egress proxy for this step (it runs offline): %s", why);
    return;
  }
  json_t *pe = abx_build_proxy_env(url);
  const char *k;
  json_t *v;
  json_object_foreach(pe, k, v)
  {
    if (!json_object_get(envs, k))
      json_object_set(envs, k, v);
  }
  json_decref(pe);
}

/* ---- steps ----------------------------------------------------------------------------------- */

static const char copy_script[] =
    "set -e\n"
    "workdir=\"$ABX_WORKDIR\"\n"
    "[ -n \"$workdir\" ] || workdir=$(getent passwd \"$ABX_USER\" | cut -d: -f6)\n"
    "cd \"$workdir\"\n"
    "case \"$ABX_DEST\" in /*) target=\"$ABX_DEST\" ;; *) target=\"$(pwd)/$ABX_DEST\" ;; esac\n"
    "stage=$(mktemp -d /tmp/.abx-copy.XXXXXX)\n"
    "trap 'rm -rf \"$stage\"' EXIT\n"
    "cp -a \"$(dirname \"$ABX_SRC\")/.\" \"$stage/\"\n"
    "cd \"$stage\"\n"
    "entry=$(ls -A | head -n 1)\n"
    "[ -n \"$entry\" ] || { echo 'Error: sourceFolder is empty'; exit 1; }\n"
    "if [ -L \"$entry\" ]; then\n"
    "  mkdir -p \"$(dirname \"$target\")\"; chown -h \"$ABX_OWNER\" \"$entry\"; mv \"$entry\" "
    "\"$target\"\n"
    "elif [ -f \"$entry\" ]; then\n"
    "  chown \"$ABX_OWNER\" \"$entry\"; [ -z \"$ABX_PERM\" ] || chmod \"$ABX_PERM\" \"$entry\"\n"
    "  mkdir -p \"$(dirname \"$target\")\"; mv \"$entry\" \"$target\"\n"
    "elif [ -d \"$entry\" ]; then\n"
    "  chown -R \"$ABX_OWNER\" \"$entry\"; [ -z \"$ABX_PERM\" ] || chmod -R \"$ABX_PERM\" "
    "\"$entry\"\n"
    "  mkdir -p \"$target\"\n"
    "  find \"$entry\" -mindepth 1 -maxdepth 1 -exec mv {} \"$target/\" \\;\n"
    "else echo 'Error: entry is neither file, directory, nor symlink'; exit 1; fi\n";

static const char workdir_script[] =
    "target=\"$ABX_TARGET\"\n"
    "[ -d \"$target\" ] && exit 0\n"
    "first_new=\"\"; check=\"$target\"\n"
    "while [ ! -d \"$check\" ]; do first_new=\"$check\"; check=$(dirname \"$check\"); done\n"
    "[ -z \"$first_new\" ] || { mkdir -p \"$target\" && chown -R \"$ABX_USER:$ABX_USER\" "
    "\"$first_new\"; }\n";

static const char user_script[] =
    "id -u \"$ABX_USER\" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash \"$ABX_USER\"\n"
    "if [ \"$ABX_SUDO\" = true ]; then\n"
    "  printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\\n' \"$ABX_USER\" > \"/etc/sudoers.d/$ABX_USER\"\n"
    "  chmod 0440 \"/etc/sudoers.d/$ABX_USER\"\n"
    "fi\n";

/* The source path before any glob (E2B: doublestar.SplitPattern of src + "/"), cleaned. */
static void static_prefix(const char *src, char *out, size_t n)
{
  char s[4096];
  snprintf(s, sizeof s, "%s/", src);
  size_t cut = 0, seg = 0;
  for (size_t i = 0; s[i]; i++) {
    if (s[i] == '/')
      seg = i + 1;
    if (strchr("*?[{\\", s[i])) {
      cut = seg;
      goto done;
    }
  }
  cut = strlen(s);
done:;
  char path[4096];
  snprintf(path, sizeof path, "%.*s", (int)cut, s);
  size_t l = strlen(path);
  while (l > 0 && path[l - 1] == '/')
    path[--l] = 0;
  while (strncmp(path, "./", 2) == 0)
    memmove(path, path + 2, strlen(path + 2) + 1);
  snprintf(out, n, "%s", strcmp(path, ".") == 0 ? "" : path);
}

/* $VAR and ${VAR} from the ENV state, else a root shell's defaults; \$ is a literal $. */
char *abx_run_expand(const char *v, json_t *env)
{
  size_t cap = strlen(v) * 2 + 64, len = 0;
  char *out = malloc(cap);
  for (size_t i = 0; out && v[i];) {
    char name[256] = "";
    const char *val = NULL, *lit = NULL;
    size_t adv = 1;
    if (v[i] == '\\' && v[i + 1] == '$') {
      lit = "$";
      adv = 2;
    } else if (v[i] == '$' &&
               (v[i + 1] == '{' || isalpha((unsigned char)v[i + 1]) || v[i + 1] == '_')) {
      int br = v[i + 1] == '{';
      size_t j = i + 1 + (size_t)br, k = 0;
      while ((isalnum((unsigned char)v[j]) || v[j] == '_') && k < sizeof name - 1)
        name[k++] = v[j++];
      if (br && v[j] == '}')
        j++;
      adv = j - i;
      val = json_string_value(json_object_get(env, name));
      if (!val && strcmp(name, "PATH") == 0)
        val = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
      if (!val && strcmp(name, "HOME") == 0)
        val = "/root";
      lit = val ? val : "";
    }
    char one[2] = {v[i], 0};
    const char *add = lit ? lit : one;
    size_t al = strlen(add);
    if (len + al + 1 > cap) {
      cap = (len + al + 1) * 2;
      char *np = realloc(out, cap);
      if (!np) {
        free(out);
        return NULL;
      }
      out = np;
    }
    memcpy(out + len, add, al);
    len += al;
    i += adv;
  }
  if (out)
    out[len] = 0;
  return out;
}

const char *abx_run_arg(json_t *args, size_t i)
{
  const char *s = json_string_value(json_array_get(args, i));
  return s ? s : "";
}

/* COPY/ADD: check its arguments and unpack its uploaded files into a new tmp dir (tmp, 4096
 * bytes, for the caller to remove) as <tmp>/unpack. 0, or -1 with err (nothing left). */
static int stage_files(const char *type, size_t na, const char *fh, char *tmp, char *err, size_t n)
{
  if (na < 2) {
    snprintf(err, n, "%s requires a local path and a container path argument", type);
    return -1;
  }
  if (!fh || !*fh) {
    snprintf(err, n, "%s requires files hash to be set", type);
    return -1;
  }
  if (!abx_lcache_valid_hash(fh) || !abx_lcache_files_present(fh)) {
    snprintf(err, n, "the files of %s (hash %.64s) were not uploaded", type, fh);
    return -1;
  }
  if (abx_lcache_tmpdir(tmp, err, n) != 0)
    return -1;
  char unpack[4200];
  snprintf(unpack, sizeof unpack, "%s/unpack", tmp);
  if (mkdir(unpack, 0755) != 0 || abx_lcache_extract(fh, unpack, err, n) != 0) {
    if (!err[0])
      snprintf(err, n, "cannot unpack the files: %s", strerror(errno));
    abx_rmtree(tmp);
    tmp[0] = 0;
    return -1;
  }
  return 0;
}

/* RUN in sb: the command as its user (or the build's), through the egress proxy. */
static int run_command(struct abx_run *r, struct abx_sandbox *sb, json_t *args, char *err, size_t n)
{
  size_t na = json_array_size(args);
  int code = 0;
  const char *user = na >= 2 && *abx_run_arg(args, 1) ? abx_run_arg(args, 1) : r->user;
  json_t *envs = json_deep_copy(r->env);
  with_proxy(r, sb, envs);
  int rc = run_in(r, sb, user, r->workdir, abx_run_arg(args, 0), envs, &code, err, n);
  abx_build_proxy_revoke(sb->id);
  json_decref(envs);
  if (rc == 0 && code != 0) {
    snprintf(err, n, "failed to run command '%.3000s': exit status %d", abx_run_arg(args, 0), code);
    rc = -1;
  }
  return rc;
}

/* COPY/ADD, USER or WORKDIR in sb: its script as root, its arguments in ABX_* variables. */
static int run_script(struct abx_run *r, struct abx_sandbox *sb, const char *type, json_t *args,
                      char *err, size_t n)
{
  size_t na = json_array_size(args);
  int copy = strcmp(type, "COPY") == 0 || strcmp(type, "ADD") == 0, code = 0;
  const char *script = copy                        ? copy_script
                       : strcmp(type, "USER") == 0 ? user_script
                                                   : workdir_script;
  char src[4200], prefix[4096], owner[200];
  static_prefix(abx_run_arg(args, 0), prefix, sizeof prefix);
  snprintf(src, sizeof src, ABX_BUILD_BIND "/unpack%s%s", prefix[0] ? "/" : "", prefix);
  const char *o = na >= 3 ? abx_run_arg(args, 2) : "";
  if (*o)
    snprintf(owner, sizeof owner, strchr(o, ':') ? "%s" : "%s:%s", o, o);
  else
    snprintf(owner, sizeof owner, "%s:%s", r->user, r->user);
  json_t *e = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "ABX_SRC", src, "ABX_DEST",
                        abx_run_arg(args, 1), "ABX_OWNER", owner, "ABX_PERM",
                        na >= 4 ? abx_run_arg(args, 3) : "", "ABX_WORKDIR",
                        r->workdir ? r->workdir : "", "ABX_USER",
                        strcmp(type, "USER") == 0 ? abx_run_arg(args, 0) : r->user, "ABX_TARGET",
                        abx_run_arg(args, 0), "ABX_SUDO", na >= 2 ? abx_run_arg(args, 1) : "");
  if (strcmp(type, "WORKDIR") == 0)
    json_object_set_new(e, "ABX_TARGET", json_string(r->workdir ? r->workdir : "/"));
  int rc = e ? run_in(r, sb, "root", "/", script, e, &code, err, n) : -1;
  json_decref(e);
  if (rc == 0 && code != 0) {
    snprintf(err, n, "%s failed: exit status %d", type, code);
    rc = -1;
  }
  return rc;
}

/* Execute one file-changing step in a fresh build sandbox; 0 with the layer stored as `key`. */
int abx_run_exec_step(struct abx_run *r, const char *type, json_t *st, const char *key, char *err,
                      size_t n)
{
  json_t *args = json_object_get(st, "args");
  size_t na = json_array_size(args);
  char tmp[4096] = "";
  int copy = strcmp(type, "COPY") == 0 || strcmp(type, "ADD") == 0;
  if (copy &&
      stage_files(type, na, json_string_value(json_object_get(st, "filesHash")), tmp, err, n) != 0)
    return -1;
  if (!copy && (na < 1 || (strcmp(type, "RUN") == 0 && !*abx_run_arg(args, 0)))) {
    snprintf(err, n, "%s requires %s argument", type,
             strcmp(type, "RUN") == 0    ? "a command"
             : strcmp(type, "USER") == 0 ? "a username"
                                         : "a path");
    return -1;
  }
  struct abx_sandbox *sb = abx_run_boot(r, r->top, copy ? tmp : NULL, 1, err, n);
  if (!sb) {
    if (tmp[0])
      abx_rmtree(tmp);
    return -1;
  }
  abx_tbuild_track(sb->pid, 1);
  int rc = strcmp(type, "RUN") == 0 ? run_command(r, sb, args, err, n)
                                    : run_script(r, sb, type, args, err, n);
  abx_tbuild_track(sb->pid, 0);
  if (rc == 0 && abx_tbuild_stopping()) {
    snprintf(err, n, "serve is stopping");
    rc = -1;
  }
  if (rc == 0)
    rc = finish_layer(sb, key, err, n);
  else
    abx_sandbox_put(sb);
  if (tmp[0])
    abx_rmtree(tmp);
  return rc;
}

/* WORKDIR's new value: absolute, or relative to the current one (default "/"). */
char *abx_run_join_workdir(const char *cur, const char *p)
{
  char *out = NULL;
  if (p[0] == '/')
    return strdup(p);
  if (asprintf(&out, "%s/%s", cur && strcmp(cur, "/") ? cur : "", p) < 0)
    return NULL;
  return out;
}
