/*
 * execd_command.c: execd's commands on envd's process table (process.h: spawn as a user, env,
 * cwd, the timeout's SIGKILL of the group, the reaper).
 *
 * POST /command {command, cwd?, background?, timeout? (ms, >= 1), uid?, gid? (needs uid),
 *   envs?}: `bash -c command` (sh without bash), stdin /dev/null, as envd's user or `uid`.
 *   Foreground → 200 text/event-stream; each event is its JSON object then "\n\n" (execd writes
 *   no "data:" prefix, controller/sse.go writeSingleEvent):
 *     {"type":"init","text":"<id>","timestamp":ms}
 *     {"type":"stdout"|"stderr","text":"<line>","timestamp":ms}  one per line, terminators
 *        (\n, \r, \r\n) removed, an empty line sent as "\n", a last unterminated line at the end
 *        (command_common.go readFromPos); a line over EXECD_LINE_MAX is sent in pieces.
 *     {"type":"ping","text":"pong","timestamp":ms}  every 3 s (sse.go ping)
 *     then {"type":"execution_complete","execution_time":ms,"timestamp":ms} on exit 0, or
 *     {"type":"error","error":{"ename":"CommandExecError","evalue":"<exit code>","traceback":
 *        ["exit status N" | "signal: killed"]},"timestamp":ms} (a signal's exit code is -1);
 *     the stream stays open 1 s more (ApiGracefulShutdownTimeout) and ends.
 *   A spawn failure is init then an error event whose evalue is the reason; that command is
 *   not kept (execd stores it only once started). The client hanging up SIGKILLs the group
 *   (execd itself lets it run: ctrl.go runs commands on context.Background()).
 *   Background → init then execution_complete at once; stdout and stderr go to one log file,
 *   $TMPDIR (or /tmp)/<id>.output, as execd's combinedOutputDescriptor does.
 * DELETE /command?id=: SIGTERM to the group, SIGKILL when it lives 3 s on (interrupt.go) → 200;
 *   unknown or ended → 500 RUNTIME_ERROR; no id → 400 MISSING_QUERY.
 * GET /command/status/{id}: {id, content, running, exit_code?, error?, started_at,
 *   finished_at?} (model/command.go); unknown → 404 INVALID_REQUEST_BODY "command not found".
 * GET /command/{id}/logs?cursor=N: the log from byte N (command_status.go seeks bytes; the
 *   spec's "line" wording is not what execd does), text/plain, EXECD-COMMANDS-TAIL-CURSOR = the
 *   byte offset read to; unknown or foreground → 400 INVALID_REQUEST_BODY.
 * Memory: a foreground stream's queue holds at most EXECD_QUEUE_MAX bytes of events; past that
 *   the process's output waits (backpressure through envd's subscriber queue and the pipes).
 * Source: components/execd/pkg/runtime/command.go, command_common.go, command_status.go,
 *   interrupt.go, web/controller/command.go, sse.go, model/codeinterpreting.go @3bb6fad.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/execd_cmd_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int execd_cmds_init(struct envd *e)
{
  struct execd_cmds *t = calloc(1, sizeof *t);
  if (!t)
    return -1;
  t->e = e;
  pthread_mutex_init(&t->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&t->idle, &ca);
  pthread_condattr_destroy(&ca);
  if (execd_sessions_init(t) < 0) {
    pthread_cond_destroy(&t->idle);
    pthread_mutex_destroy(&t->mu);
    free(t);
    return -1;
  }
  e->execd = t;
  return 0;
}

void execd_cmd_unref_locked(struct execd_cmd *c, struct execd_cmd **dead)
{
  if (--c->refs == 0) {
    c->next = *dead;
    *dead = c;
  }
}

void execd_cmd_free(struct execd_cmd *c)
{
  while (c->head) {
    struct evitem *i = c->head;
    c->head = i->next;
    free(i);
  }
  pthread_cond_destroy(&c->cond);
  execd_srun_free(c->srun);
  free(c->content);
  free(c->error);
  free(c->log_path);
  free(c);
}

void execd_cmd_unref(struct execd_cmd *c)
{
  struct execd_cmd *dead = NULL;
  pthread_mutex_lock(&c->tab->mu);
  execd_cmd_unref_locked(c, &dead);
  pthread_mutex_unlock(&c->tab->mu);
  if (dead)
    execd_cmd_free(dead);
}

void execd_cmds_shutdown(struct envd *e)
{
  struct execd_cmds *t = e->execd;
  if (!t)
    return;
  execd_sessions_shutdown(t);
  pthread_mutex_lock(&t->mu);
  for (struct execd_cmd *c = t->list; c; c = c->next)
    if (c->p) {
      c->gone = true;
      envd_proc_signal(c->p, SIGKILL, &(struct envd_err){0});
      pthread_cond_broadcast(&c->cond);
    }
  int64_t until = envd_now_ms() + 3000;
  while (t->watchers > 0 && envd_now_ms() < until)
    execd_wait_until(&t->idle, &t->mu, until);
  int left = t->watchers;
  struct execd_cmd *list = t->list, *dead = NULL;
  t->list = NULL;
  for (struct execd_cmd *c = list, *n; c; c = n) {
    n = c->next;
    execd_cmd_unref_locked(c, &dead);
  }
  pthread_mutex_unlock(&t->mu);
  while (dead) {
    struct execd_cmd *n = dead->next;
    execd_cmd_free(dead);
    dead = n;
  }
  if (left == 0) { /* a watcher still running keeps the table: freed with the process */
    execd_sessions_free(t);
    pthread_cond_destroy(&t->idle);
    pthread_mutex_destroy(&t->mu);
    free(t);
    e->execd = NULL;
  }
}

static struct execd_cmd *cmd_find(struct execd_cmds *t, const char *id)
{
  struct execd_cmd *found = NULL;
  pthread_mutex_lock(&t->mu);
  for (struct execd_cmd *c = t->list; c && !found; c = c->next)
    if (strcmp(c->id, id) == 0)
      found = c;
  if (found)
    found->refs++;
  pthread_mutex_unlock(&t->mu);
  return found;
}

/* ---- POST /command ----------------------------------------------------------------------- */

static void new_id(char id[33])
{
  unsigned char r[16];
  if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
    for (size_t i = 0; i < sizeof r; i++)
      r[i] = (unsigned char)(rand() & 0xff);
  r[6] = (unsigned char)((r[6] & 0x0f) | 0x40); /* uuid v4, dashes removed (context.go) */
  r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
  for (size_t i = 0; i < sizeof r; i++)
    snprintf(id + 2 * i, 3, "%02x", r[i]);
}

void execd_user_for(long long uid, long long gid, struct envd_user *u)
{
  memset(u, 0, sizeof *u);
  uid_t want = uid >= 0 ? (uid_t)uid : getuid();
  struct passwd pw, *res = NULL;
  char buf[4096];
  u->uid = want;
  if (getpwuid_r(want, &pw, buf, sizeof buf, &res) == 0 && res) {
    snprintf(u->name, sizeof u->name, "%s", pw.pw_name);
    snprintf(u->home, sizeof u->home, "%s", pw.pw_dir && *pw.pw_dir ? pw.pw_dir : "/");
    u->gid = pw.pw_gid;
    int ng = (int)(sizeof u->groups / sizeof u->groups[0]);
    if (getgrouplist(pw.pw_name, pw.pw_gid, u->groups, &ng) < 0) {
      u->groups[0] = pw.pw_gid;
      ng = 1;
    }
    u->ngroups = ng;
  } else {
    snprintf(u->name, sizeof u->name, "%u", (unsigned)want);
    snprintf(u->home, sizeof u->home, "/");
    u->groups[0] = 0;
    u->ngroups = 1;
  }
  if (gid >= 0)
    u->gid = (gid_t)gid;
}

/* An optional unsigned 32-bit field: 1 present, 0 absent, -1 wrong (msg set). */
static int opt_u32(json_t *req, const char *k, long long *out, char *msg, size_t n)
{
  json_t *v = json_object_get(req, k);
  *out = -1;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 0xffffffffLL) {
    snprintf(msg, n, "field '%s' must be an integer from 0 to 4294967295", k);
    return -1;
  }
  *out = json_integer_value(v);
  return 1;
}

#define BAD_BODY "error parsing request, MAYBE invalid body format. "

/* A POST /command body's fields, read once their types are checked. */
struct run_request {
  const char *command, *cwd; /* borrowed from the body; NULL when absent */
  json_t *envs;              /* the body's "envs" as given (an object of strings, null or NULL) */
  long long timeout_ms;      /* 0: none */
  long long uid, gid;        /* -1: absent */
  bool background;
};

/* The body's field types (execd's decodeJSON): msg "" when they fit and rr is filled, else msg
 * says which field is wrong. */
static void check_types(json_t *req, struct run_request *rr, char *msg, size_t n)
{
  json_t *cmd = json_object_get(req, "command"), *cwd = json_object_get(req, "cwd"),
         *bg = json_object_get(req, "background"), *to = json_object_get(req, "timeout"),
         *envs = json_object_get(req, "envs");
  const char *k;
  json_t *v;
  rr->uid = rr->gid = -1;
  msg[0] = 0;
  if (!json_is_object(req))
    snprintf(msg, n, "the body must be a JSON object (RunCommandRequest)");
  else if (cmd && !json_is_string(cmd) && !json_is_null(cmd))
    snprintf(msg, n, "field 'command' must be a string");
  else if (cwd && !json_is_string(cwd) && !json_is_null(cwd))
    snprintf(msg, n, "field 'cwd' must be a string");
  else if (bg && !json_is_boolean(bg) && !json_is_null(bg))
    snprintf(msg, n, "field 'background' must be a boolean");
  else if (to && !json_is_integer(to) && !json_is_null(to))
    snprintf(msg, n, "field 'timeout' must be an integer (milliseconds)");
  else if (envs && !json_is_object(envs) && !json_is_null(envs))
    snprintf(msg, n, "field 'envs' must be an object of strings");
  else if (opt_u32(req, "uid", &rr->uid, msg, n) < 0 || opt_u32(req, "gid", &rr->gid, msg, n) < 0) {
  } else if (json_is_object(envs)) {
    json_object_foreach(envs, k, v) if (!json_is_string(v))
    {
      snprintf(msg, n, "envs['%s'] must be a string", k);
      break;
    }
  }
  rr->command = json_string_value(cmd);
  rr->cwd = json_string_value(cwd);
  rr->envs = envs;
  rr->timeout_ms = json_is_integer(to) ? json_integer_value(to) : 0;
  rr->background = json_is_true(bg);
}

/* The working directory wd (non-empty) expanded, existing and a directory: msg "" when it is. */
static void check_cwd(const char *wd, char *msg, size_t n)
{
  char *why = NULL;
  char *plain = execd_expand_path(wd, NULL, false, &why);
  struct stat st;
  char eb[128];
  if (!plain)
    snprintf(msg, n, "cannot resolve working directory \"%s\": %s", wd,
             why ? why : "out of memory");
  else if (stat(plain, &st) < 0)
    snprintf(msg, n,
             errno == ENOENT ? "working directory does not exist: %s: stat %s: %s"
                             : "cannot access working directory \"%s\": stat %s: %s",
             wd, plain, execd_errstr(errno, eb));
  else if (!S_ISDIR(st.st_mode))
    snprintf(msg, n, "working directory path is not a directory: %s", wd);
  free(plain);
  free(why);
}

/* RunCommandRequest.Validate: required command, timeout gte=1 when set, gid needs uid, then a
 * cwd that exists. msg "" when rr is valid, else the validation error. */
static void check_values(const struct run_request *rr, char *msg, size_t n)
{
  msg[0] = 0;
  if (!rr->command || !*rr->command)
    snprintf(msg, n,
             "Key: 'RunCommandRequest.Command' Error:Field validation for "
             "'Command' failed on the 'required' tag");
  else if (rr->timeout_ms > 9223372036854LL) /* Go's time.Duration of that many ms overflows */
    snprintf(msg, n, "field 'timeout' must be at most 9223372036854 (milliseconds)");
  else if (rr->timeout_ms < 0)
    snprintf(msg, n,
             "Key: 'RunCommandRequest.TimeoutMs' Error:Field validation for "
             "'TimeoutMs' failed on the 'gte' tag");
  else if (rr->gid >= 0 && rr->uid < 0)
    snprintf(msg, n, "uid is required when gid is provided");
  if (!msg[0] && rr->cwd && *rr->cwd)
    check_cwd(rr->cwd, msg, n);
}

/* The command's working directory, absolute, with the request's envs expanded ("": execd's own
 * cwd); malloc'd. NULL after queueing the 500 answer (*res set). */
static char *working_dir(struct execd_req *r, const struct run_request *rr, enum MHD_Result *res)
{
  char *why = NULL;
  char *dir = execd_expand_path(rr->cwd ? rr->cwd : "", rr->envs, true, &why);
  if (dir && !*dir) {
    free(dir);
    dir = execd_expand_path(".", NULL, true, &why);
  }
  if (!dir) {
    *res = execd_send_err(r->c, 500, "RUNTIME_ERROR",
                          "error running commands resolve request cwd "
                          "%s: %s",
                          rr->cwd ? rr->cwd : "", why ? why : "out of memory");
    free(why);
  }
  return dir;
}

struct execd_cmd *execd_cmd_new(struct execd_cmds *t, const char *content, bool background)
{
  struct execd_cmd *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cond, &ca);
  pthread_condattr_destroy(&ca);
  c->tab = t;
  new_id(c->id);
  c->content = strdup(content);
  c->background = background;
  c->log_fd = -1;
  clock_gettime(CLOCK_REALTIME, &c->started);
  c->start_mono = envd_now_ms();
  return c;
}

/* Open background command c's combined output log, $TMPDIR (or /tmp)/<id>.output, into
 * c->log_fd: 0, or -1 after queueing the 500 answer (*res set). */
static int open_log(struct execd_req *r, struct execd_cmd *c, enum MHD_Result *res)
{
  const char *tmp = getenv("TMPDIR");
  if (asprintf(&c->log_path, "%s/%s.output", tmp && *tmp ? tmp : "/tmp", c->id) < 0)
    c->log_path = NULL;
  c->log_fd = c->log_path ? open(c->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
  if (c->log_fd >= 0)
    return 0;
  char eb[128];
  *res = execd_send_err(r->c, 500, "RUNTIME_ERROR",
                        "error running commands failed to get combined output descriptor: "
                        "open %s: %s",
                        c->log_path ? c->log_path : "", execd_errstr(errno, eb));
  return -1;
}

/* Spawn `bash -c command` (sh without bash) in dir as rr's user (envd's own without a uid) into
 * c->p and c->sub; c->p NULL and err set when it cannot start. */
static void spawn_command(struct envd *e, struct execd_cmd *c, const struct run_request *rr,
                          const char *dir, struct envd_err *err)
{
  struct envd_user u;
  execd_user_for(rr->uid, rr->gid, &u);
  char *shell = envd_path_lookup(ENVD_PATH_ENV, "bash", 1);
  if (!shell)
    shell = envd_path_lookup(ENVD_PATH_ENV, "sh", 1);
  const char *args[2] = {"-c", rr->command};
  struct envd_spawn sp = {.cmd = shell ? shell : "/bin/sh",
                          .args = args,
                          .nargs = 2,
                          .envs = json_is_object(rr->envs) ? rr->envs : NULL,
                          .cwd = dir,
                          .user = &u,
                          .timeout_ms = rr->timeout_ms};
  c->p = envd_proc_spawn(e, &sp, &c->sub, err);
  free(shell);
}

/* Put c at the head of its table's list when `listed` (the table's reference is counted by the
 * caller), and count its watcher when `watched`. */
static void table_add(struct execd_cmd *c, bool listed, bool watched)
{
  pthread_mutex_lock(&c->tab->mu);
  if (listed) {
    c->next = c->tab->list;
    c->tab->list = c;
  }
  if (watched)
    c->tab->watchers++;
  pthread_mutex_unlock(&c->tab->mu);
}

/* Command c could not start (err says why): init then an error event, the record dropped
 * (runCommand), or for a background command init then RespondError's JSON, the record kept as
 * failed with exit code 255 (runBackgroundCommand). Queues the answer; frees or keeps c. */
static enum MHD_Result answer_not_started(struct execd_req *r, struct execd_cmd *c,
                                          struct envd_err *err)
{
  const char *why = err->msg ? err->msg : "cannot start the command";
  size_t n = 0;
  char *tail = NULL;
  if (!c->background) {
    json_t *x = json_pack("{s:{s:s,s:s,s:[s]}}", "error", "ename", "CommandExecError", "evalue",
                          why, "traceback", why);
    tail = execd_event_bytes("error", NULL, x, &n);
  } else {
    json_t *x = json_pack("{s:s,s:s+}", "code", "RUNTIME_ERROR", "message",
                          "error running commands failed to start commands: ", why);
    tail = json_dumps(x, JSON_COMPACT | JSON_PRESERVE_ORDER);
    n = tail ? strlen(tail) : 0;
    json_decref(x);
    close(c->log_fd);
    c->log_fd = -1;
    c->running = false;
    c->exit_code = 255;
    c->error = strdup(why);
    clock_gettime(CLOCK_REALTIME, &c->finished);
    c->final_queued = true;
  }
  char id[33];
  memcpy(id, c->id, sizeof id);
  if (c->background) {
    c->refs = 1; /* the table's */
    table_add(c, true, false);
  } else {
    execd_cmd_free(c);
  }
  envd_err_clear(err);
  return execd_sse_fixed(r->c, id, tail, n);
}

void execd_cmd_watch(struct execd_cmd *c, bool listed)
{
  c->running = true;
  /* the table (when listed), the watcher, and a foreground stream */
  c->refs = (listed ? 1 : 0) + 1 + (c->background ? 0 : 1);
  table_add(c, listed, true);
  pthread_t th;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&th, &at, execd_watcher_main, c) != 0) {
    struct envd_err err = {0};
    envd_proc_signal(c->p, SIGKILL, &err);
    envd_err_clear(&err);
    envd_proc_unsubscribe(c->p, c->sub);
    envd_proc_unref(c->p);
    pthread_mutex_lock(&c->tab->mu);
    c->p = NULL;
    c->sub = NULL;
    c->running = false;
    c->exit_code = -1;
    c->error = strdup("signal: killed");
    c->final_queued = true;
    c->refs--;
    c->tab->watchers--;
    pthread_mutex_unlock(&c->tab->mu);
  }
  pthread_attr_destroy(&at);
}

/* Background command c started: init then execution_complete at once. */
static enum MHD_Result answer_started_background(struct execd_req *r, struct execd_cmd *c)
{
  size_t n = 0;
  int64_t el = envd_now_ms() - c->start_mono;
  json_t *x = el > 0 ? json_pack("{s:I}", "execution_time", (json_int_t)el) : NULL;
  char *done = execd_event_bytes("execution_complete", NULL, x, &n); /* sets n: before the call */
  return execd_sse_fixed(r->c, c->id, done, n);
}

enum MHD_Result execd_run_command(struct execd_req *r)
{
  json_error_t je;
  json_t *req = json_loadb(r->body ? r->body : "", r->len, JSON_DECODE_ANY, &je);
  if (!req)
    return execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", BAD_BODY "%s", je.text);
  enum MHD_Result res = MHD_NO;
  struct run_request rr;
  char msg[512];
  check_types(req, &rr, msg, sizeof msg);
  if (msg[0]) {
    res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", BAD_BODY "%s", msg);
    goto out;
  }
  check_values(&rr, msg, sizeof msg);
  if (msg[0]) {
    res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", "invalid request, validation error %s",
                         msg);
    goto out;
  }
  char *dir = working_dir(r, &rr, &res);
  if (!dir)
    goto out;
  struct execd_cmd *c = execd_cmd_new(r->e->execd, rr.command, rr.background);
  if (!c || (rr.background && open_log(r, c, &res) < 0)) {
    if (c)
      execd_cmd_free(c);
    free(dir);
    goto out; /* out of memory (no answer: MHD_NO) or the log's answer queued */
  }
  struct envd_err err = {0};
  spawn_command(r->e, c, &rr, dir, &err);
  free(dir);
  if (!c->p)
    res = answer_not_started(r, c, &err);
  else {
    execd_cmd_watch(c, true);
    res = rr.background ? answer_started_background(r, c) : execd_sse_command(r->c, c);
  }
out:
  json_decref(req);
  return res;
}

/* ---- DELETE /command, status, logs ------------------------------------------------------- */

enum MHD_Result execd_interrupt_command(struct execd_req *r)
{
  const char *id = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "id");
  if (!id || !*id)
    return execd_send_err(r->c, 400, "MISSING_QUERY", "missing query parameter 'id'");
  struct execd_cmd *c = cmd_find(r->e->execd, id);
  if (!c)
    return execd_send_err(r->c, 500, "RUNTIME_ERROR",
                          "error interruptting code context. no such session");
  struct envd_err err = {0};
  pthread_mutex_lock(&c->tab->mu);
  bool live = c->running && c->p;
  if (live)
    envd_proc_signal(c->p, SIGTERM, &err);
  int64_t until = envd_now_ms() + 3000;
  while (live && c->running && envd_now_ms() < until)
    execd_wait_until(&c->cond, &c->tab->mu, until);
  if (live && c->running && c->p) {
    envd_proc_signal(c->p, SIGKILL, &err);
    until = envd_now_ms() + 150;
    while (c->running && envd_now_ms() < until)
      execd_wait_until(&c->cond, &c->tab->mu, until);
  }
  pthread_mutex_unlock(&c->tab->mu);
  envd_err_clear(&err);
  enum MHD_Result res =
      live ? execd_send_ok(r->c)
           : execd_send_err(r->c, 500, "RUNTIME_ERROR",
                            "error interruptting code context. command session %s is not running",
                            id);
  execd_cmd_unref(c);
  return res;
}

enum MHD_Result execd_command_status(struct execd_req *r, const char *id)
{
  struct execd_cmd *c = cmd_find(r->e->execd, id);
  if (!c)
    return execd_send_err(r->c, 404, "INVALID_REQUEST_BODY", "command not found: %s", id);
  json_t *j = json_object();
  char ts[64];
  pthread_mutex_lock(&c->tab->mu);
  json_object_set_new(j, "id", json_string(c->id));
  if (c->content && *c->content)
    json_object_set_new(j, "content", execd_json_text(c->content, strlen(c->content)));
  json_object_set_new(j, "running", json_boolean(c->running));
  if (!c->running)
    json_object_set_new(j, "exit_code", json_integer(c->exit_code));
  if (!c->running && c->error && *c->error)
    json_object_set_new(j, "error", json_string(c->error));
  execd_rfc3339(&c->started, ts);
  json_object_set_new(j, "started_at", json_string(ts));
  if (!c->running) {
    execd_rfc3339(&c->finished, ts);
    json_object_set_new(j, "finished_at", json_string(ts));
  }
  pthread_mutex_unlock(&c->tab->mu);
  execd_cmd_unref(c);
  return execd_send_ok_json(r->c, j);
}

enum MHD_Result execd_command_logs(struct execd_req *r, const char *id)
{
  struct execd_cmd *c = cmd_find(r->e->execd, id);
  if (!c)
    return execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", "command not found: %s", id);
  enum MHD_Result res;
  char eb[128];
  if (!c->background || !c->log_path) {
    res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY",
                         "command %s is not running in background", id);
    goto out;
  }
  /* QueryInt64: a cursor that does not parse counts as 0 (basic.go) */
  const char *q = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "cursor");
  long long cursor = 0;
  if (q && *q) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(q, &end, 10);
    if (!*end && !errno)
      cursor = v;
  }
  int fd = open(c->log_path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY",
                         "error open combined output file for command %s: open %s: %s", id,
                         c->log_path, execd_errstr(errno, eb));
    if (fd >= 0)
      close(fd);
    goto out;
  }
  if (cursor < 0) {
    close(fd);
    res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY",
                         "error seek file: seek %s: invalid argument", c->log_path);
    goto out;
  }
  long long size = st.st_size, from = cursor < size ? cursor : size;
  struct MHD_Response *resp =
      MHD_create_response_from_fd_at_offset64((uint64_t)(size - from), fd, (uint64_t)from);
  if (!resp) {
    close(fd);
    res = MHD_NO;
    goto out;
  }
  char tail[32];
  snprintf(tail, sizeof tail, "%lld", cursor > size ? cursor : size);
  MHD_add_response_header(resp, "EXECD-COMMANDS-TAIL-CURSOR", tail);
  MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
  res = MHD_queue_response(r->c, 200, resp);
  MHD_destroy_response(resp);
out:
  execd_cmd_unref(c);
  return res;
}
