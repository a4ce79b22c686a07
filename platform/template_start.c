/*
 * template_start.c: start_cmd and ready_cmd at sandbox start. Contract in template_start.h.
 */
#include "template_start.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "envd_client.h"
#include "http_util.h"

/* The command comes in through the environment, so no quoting is needed; it is unset before
 * the command runs. setsid + & detach it from the short-lived shell envd waits for. */
static const char start_script[] =
    "{ [ -w \"$ABX_START_LOG\" ] || mkdir -p \"${ABX_START_LOG%/*}\"; } && "
    "{ [ -z \"$ABX_START_CWD\" ] || cd \"$ABX_START_CWD\"; } && c=$ABX_START_CMD && log=$ABX_START_LOG && "
    "unset ABX_START_CMD ABX_START_LOG ABX_START_CWD && "
    "setsid /bin/bash -c \"$c\" </dev/null >>\"$log\" 2>&1 &";

/* "" is an explicit none: a build that sets one of the two replaces both (template_build.h) */
const char *abx_template_start_cmd(const struct abx_template *t)
{
  for (; t; t = t->parent)
    if (t->start_cmd)
      return *t->start_cmd ? t->start_cmd : NULL;
  return NULL;
}

const char *abx_template_ready_cmd(const struct abx_template *t)
{
  for (; t; t = t->parent)
    if (t->ready_cmd)
      return *t->ready_cmd ? t->ready_cmd : NULL;
  return NULL;
}

/* rootfs.h: a built template's defaults, from the nearest record that sets them */
json_t *abx_template_env(const struct abx_template *t)
{
  for (; t; t = t->parent)
    if (t->env_vars)
      return t->env_vars;
  return NULL;
}

const char *abx_template_user(const struct abx_template *t)
{
  for (; t; t = t->parent)
    if (t->default_user)
      return t->default_user;
  return NULL;
}

const char *abx_template_workdir(const struct abx_template *t)
{
  for (; t; t = t->parent)
    if (t->default_workdir)
      return t->default_workdir;
  return NULL;
}

/* How errors name the template: a built one by its name and id, the others by id. */
static const char *tname(const struct abx_template *t, char *buf, size_t n)
{
  if (t->alias[0] && strcmp(t->alias, t->id) != 0)
    snprintf(buf, n, "'%s' (%s)", t->alias, t->id);
  else
    snprintf(buf, n, "'%s'", t->id);
  return buf;
}

static void start_log_tail(int netns_fd, const char *token, char *out, size_t outlen)
{
  char err[160];
  int code = 0;
  if (abx_envd_run(netns_fd, token, "root", "tail -c 160 " ABX_START_LOG " 2>&1", NULL, 5000,
                   &code, out, outlen, err, sizeof err) != 0)
    snprintf(out, outlen, "(unreadable: %.100s)", err);
}

static int start_ready(const struct abx_template *t, int netns_fd, const char *token,
                       const char *start, const char *ready_run, const char *ready,
                       json_t *ready_env, const char *user, const char *cwd, char *err,
                       size_t errlen);

int abx_template_start(const struct abx_template *t, int netns_fd, const char *token, char *err,
                       size_t errlen)
{
  const char *start = abx_template_start_cmd(t), *ready = abx_template_ready_cmd(t);
  /* The commands run in the context of the build that set them (E2B keeps Start.Context with
   * them, infra phases/finalize/builder.go): its USER and WORKDIR; the built-in ones (no USER)
   * as root. So a template built on code-interpreter-v1 still starts its server as root. */
  const struct abx_template *def = t;
  while (def && !def->start_cmd && !def->ready_cmd)
    def = def->parent;
  const char *user = def && abx_template_user(def) ? abx_template_user(def) : "root";
  const char *cwd = def ? abx_template_workdir(def) : NULL;
  char *ready_in = NULL; /* ready_cmd in that workdir */
  if (ready && cwd && asprintf(&ready_in, "cd \"$ABX_READY_CWD\" || exit 1; %s", ready) < 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  json_t *ready_env = cwd ? json_pack("{s:s}", "ABX_READY_CWD", cwd) : NULL;
  int rc = start_ready(t, netns_fd, token, start, ready_in ? ready_in : ready, ready, ready_env,
                       user, cwd, err, errlen);
  free(ready_in);
  json_decref(ready_env);
  return rc;
}

/* abx_template_start's work: `ready_run` is what runs, `ready` what errors name. */
static int start_ready(const struct abx_template *t, int netns_fd, const char *token,
                       const char *start, const char *ready_run, const char *ready,
                       json_t *ready_env, const char *user, const char *cwd, char *err,
                       size_t errlen)
{
  char nm[160];
  tname(t, nm, sizeof nm);
  char out[512] = "", e[256] = "";
  int code = 0;
  if (start && strcmp(user, "root") != 0) { /* the log is root's dir: make the file the user's */
    json_t *envs = json_pack("{s:s,s:s}", "ABX_START_LOG", ABX_START_LOG, "ABX_USER", user);
    int rc = envs ? abx_envd_run(netns_fd, token, "root",
                                 "mkdir -p \"${ABX_START_LOG%/*}\" && touch \"$ABX_START_LOG\" && "
                                 "chown \"$ABX_USER\" \"$ABX_START_LOG\"",
                                 envs, 10000, &code, out, sizeof out, e, sizeof e)
                  : -1;
    json_decref(envs);
    if (rc != 0 || code != 0) {
      snprintf(err, errlen, "template %s: cannot prepare the start_cmd log for user %s: %s%s",
               nm, user, rc ? e : "exit ", rc ? "" : out);
      return -1;
    }
  }
  if (start) {
    json_t *envs = json_pack("{s:s,s:s,s:s}", "ABX_START_CMD", start, "ABX_START_LOG", ABX_START_LOG,
                             "ABX_START_CWD", cwd ? cwd : "");
    int rc = envs ? abx_envd_run(netns_fd, token, user, start_script, envs, 10000, &code, out,
                                 sizeof out, e, sizeof e)
                  : -1;
    json_decref(envs);
    if (rc != 0 || code != 0) {
      snprintf(err, errlen, "template %s: cannot launch start_cmd `%s`: %s%s", nm, start,
               rc ? e : "exit ", rc ? "" : out);
      return -1;
    }
  }
  if (!ready)
    return 0;
  int64_t deadline = abx_mono_ns() + (int64_t)ABX_READY_TIMEOUT_S * 1000000000LL;
  int tries = 0;
  for (;;) {
    int64_t left_ms = (deadline - abx_mono_ns()) / 1000000;
    long bound = left_ms < 10000 ? (long)(left_ms > 100 ? left_ms : 100) : 10000;
    e[0] = 0;
    int rc = abx_envd_run(netns_fd, token, user, ready_run, ready_env, bound, &code, out, sizeof out, e,
                          sizeof e);
    tries++;
    if (rc == 0 && code == 0)
      return 0;
    if (abx_mono_ns() >= deadline)
      break;
    struct timespec ts = {0, ABX_READY_POLL_MS * 1000000L};
    nanosleep(&ts, NULL);
  }
  /* The whole message must fit the API's error buffer (512 bytes in api_sandboxes.c): the last
   * 120 bytes of the ready command's output and the last 160 of the start log. */
  char last[200], log[170] = "";
  size_t on = strlen(out);
  if (e[0])
    snprintf(last, sizeof last, "%.150s", e);
  else
    snprintf(last, sizeof last, "exit %d, output: %s", code,
             on ? out + (on > 120 ? on - 120 : 0) : "(none)");
  if (start)
    start_log_tail(netns_fd, token, log, sizeof log);
  snprintf(err, errlen,
           "template %s: ready_cmd `%s` did not succeed within %d s (%d tries; last: %s)%s%s",
           nm, ready, ABX_READY_TIMEOUT_S, tries, last, start ? "; start_cmd log: " : "",
           start ? (log[0] ? log : "(empty)") : "");
  return -1;
}
