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
#include "util/util.h"

/* The command comes in through the environment, so no quoting is needed; it is unset before
 * the command runs. setsid + & detach it from the short-lived shell envd waits for. */
static const char start_script[] =
    "{ [ -w \"$ABX_START_LOG\" ] || mkdir -p \"${ABX_START_LOG%/*}\"; } && "
    "{ [ -z \"$ABX_START_CWD\" ] || cd \"$ABX_START_CWD\"; } && c=$ABX_START_CMD && "
    "log=$ABX_START_LOG && "
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

int abx_template_ready_timeout(const struct abx_template *t)
{
  for (; t; t = t->parent)
    if (t->ready_timeout_s > 0)
      return t->ready_timeout_s;
  return ABX_READY_TIMEOUT_DEFAULT_S;
}

/* The platform's own envd calls at start, bounded so that a loaded machine does not fail them
 * (issue 22: a 10 s bound timed out beside a busy suite): launching start_cmd, preparing its
 * log, reading its tail (each once: 30 s); one readiness probe: a quarter of the ready timeout,
 * between PROBE_MIN_MS and PROBE_MAX_MS (so a probe that hangs is given up and tried again
 * before the deadline), whatever time is left (so the last probe is a real one). */
#define START_CALL_MS 30000L
#define PROBE_MIN_MS 2000L
#define PROBE_MAX_MS 30000L
#define LOG_TAIL_BYTES 300

/* How errors name the template: a built one by its name and id, the others by id. */
static const char *tname(const struct abx_template *t, char *buf, size_t n)
{
  if (t->alias[0] && strcmp(t->alias, t->id) != 0)
    snprintf(buf, n, "'%s' (%s)", t->alias, t->id);
  else
    snprintf(buf, n, "'%s'", t->id);
  return buf;
}

/* Drop trailing newlines and blanks (a command's last line ends the message's part). */
static void rstrip(char *s)
{
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = 0;
}

static void start_log_tail(int netns_fd, const char *token, char *out, size_t outlen)
{
  char err[160], cmd[96];
  int code = 0;
  snprintf(cmd, sizeof cmd, "tail -c %d " ABX_START_LOG " 2>&1", LOG_TAIL_BYTES);
  if (abx_envd_run(netns_fd, token, "root", cmd, NULL, START_CALL_MS, &code, out, outlen, err,
                   sizeof err) != 0)
    snprintf(out, outlen, "(unreadable: %.100s)", err);
}

/* What the readiness wait saw: probes made, probes whose envd call failed (not a verdict), the
 * last completed probe's exit code and output, the last envd error. */
struct probes {
  int tries, failed_calls, completed, code;
  char out[512], call_err[256];
};

static int launch(const char *nm, int netns_fd, const char *token, const char *start,
                  const char *user, const char *cwd, char *err, size_t errlen);
static int wait_ready(int netns_fd, const char *token, const char *user, const char *ready_run,
                      json_t *ready_env, int timeout_s, const volatile int *cancel,
                      struct probes *p);

int abx_template_start(const struct abx_template *t, int netns_fd, const char *token,
                       const volatile int *cancel, char *err, size_t errlen)
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
  char nm[160];
  tname(t, nm, sizeof nm);
  if (start && launch(nm, netns_fd, token, start, user, cwd, err, errlen) != 0)
    return -1;
  if (!ready)
    return 0;
  char *ready_in = NULL; /* ready_cmd in that workdir */
  if (cwd && asprintf(&ready_in, "cd \"$ABX_READY_CWD\" || exit 1; %s", ready) < 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  json_t *ready_env = cwd ? json_pack("{s:s}", "ABX_READY_CWD", cwd) : NULL;
  int timeout_s = abx_template_ready_timeout(t);
  struct probes p = {0};
  int64_t t0 = abx_mono_ns();
  int rc = wait_ready(netns_fd, token, user, ready_in ? ready_in : ready, ready_env, timeout_s,
                      cancel, &p);
  double waited = (double)(abx_mono_ns() - t0) / 1e9;
  free(ready_in);
  json_decref(ready_env);
  if (rc == 0)
    return 0;
  if (cancel && *cancel) {
    snprintf(err, errlen, "template %s: its start was cancelled after %.1f s (serve is stopping)",
             nm, waited);
    return -1;
  }
  /* the whole message fits ABX_START_ERR_MAX: the command's first 160 bytes, the last 200 of
   * the probe's output, the last LOG_TAIL_BYTES of the start log */
  char last[300], log[LOG_TAIL_BYTES + 8] = "";
  rstrip(p.out);
  size_t on = strlen(p.out);
  if (p.completed)
    snprintf(last, sizeof last, "exit %d, output: %s", p.code,
             on ? p.out + (on > 200 ? on - 200 : 0) : "(none)");
  else
    snprintf(last, sizeof last, "none completed (last envd error: %.150s)", p.call_err);
  if (start) {
    start_log_tail(netns_fd, token, log, sizeof log);
    rstrip(log);
  }
  snprintf(err, errlen,
           "template %s: ready_cmd `%.160s` did not succeed within its ready timeout of %d s "
           "(waited %.1f s; %d probes, %d of them not answered by envd; last probe: %s)%s%s",
           nm, ready, timeout_s, waited, p.tries, p.failed_calls, last,
           start ? "; start_cmd log: " : "", start ? (log[0] ? log : "(empty)") : "");
  return -1;
}

/* Launch start_cmd in the background (as `user`, in `cwd`), its output to START_LOG. */
static int launch(const char *nm, int netns_fd, const char *token, const char *start,
                  const char *user, const char *cwd, char *err, size_t errlen)
{
  char out[512] = "", e[256] = "";
  int code = 0;
  if (strcmp(user, "root") != 0) { /* the log is root's dir: make the file the user's */
    json_t *envs = json_pack("{s:s,s:s}", "ABX_START_LOG", ABX_START_LOG, "ABX_USER", user);
    int rc = envs ? abx_envd_run(netns_fd, token, "root",
                                 "mkdir -p \"${ABX_START_LOG%/*}\" && touch \"$ABX_START_LOG\" && "
                                 "chown \"$ABX_USER\" \"$ABX_START_LOG\"",
                                 envs, START_CALL_MS, &code, out, sizeof out, e, sizeof e)
                  : -1;
    json_decref(envs);
    if (rc != 0 || code != 0) {
      snprintf(err, errlen, "template %s: cannot prepare the start_cmd log for user %s: %s%s", nm,
               user, rc ? e : "exit ", rc ? "" : out);
      return -1;
    }
  }
  json_t *envs = json_pack("{s:s,s:s,s:s}", "ABX_START_CMD", start, "ABX_START_LOG", ABX_START_LOG,
                           "ABX_START_CWD", cwd ? cwd : "");
  int rc = envs ? abx_envd_run(netns_fd, token, user, start_script, envs, START_CALL_MS, &code, out,
                               sizeof out, e, sizeof e)
                : -1;
  json_decref(envs);
  if (rc != 0 || code != 0) {
    snprintf(err, errlen, "template %s: cannot launch start_cmd `%.200s`: %s%s", nm, start,
             rc ? e : "exit ", rc ? "" : out);
    return -1;
  }
  return 0;
}

/* Probe `ready_run` every READY_POLL_MS until it exits 0 (0), `timeout_s` has passed or
 * *cancel is set (-1); an envd call that fails is counted in p->failed_calls and tried again,
 * never the verdict. */
static int wait_ready(int netns_fd, const char *token, const char *user, const char *ready_run,
                      json_t *ready_env, int timeout_s, const volatile int *cancel,
                      struct probes *p)
{
  int64_t deadline = abx_mono_ns() + (int64_t)timeout_s * 1000000000LL;
  long bound = (long)timeout_s * 250;
  bound = bound < PROBE_MIN_MS ? PROBE_MIN_MS : bound > PROBE_MAX_MS ? PROBE_MAX_MS : bound;
  for (;;) {
    char out[sizeof p->out], e[sizeof p->call_err];
    int code = 0;
    int rc = abx_envd_run(netns_fd, token, user, ready_run, ready_env, bound, &code, out,
                          sizeof out, e, sizeof e);
    p->tries++;
    if (rc != 0) {
      p->failed_calls++;
      memcpy(p->call_err, e, sizeof e);
    } else if (code == 0) {
      return 0;
    } else {
      p->completed = 1;
      p->code = code;
      memcpy(p->out, out, sizeof out);
    }
    if (abx_mono_ns() >= deadline || (cancel && *cancel))
      return -1;
    struct timespec ts = {0, ABX_READY_POLL_MS * 1000000L};
    nanosleep(&ts, NULL);
  }
}
