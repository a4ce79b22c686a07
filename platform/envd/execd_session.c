/*
 * execd_session.c: execd's bash sessions. A session is no long-lived shell: it is an environment
 * and a working directory that each run starts from and leaves behind, as execd's bashSession
 * does. Each run is `bash --noprofile --norc SCRIPT` (envd's process table, as envd's own user)
 * where SCRIPT (execd_bash.c) merges stderr into stdout, exports the session's variables, cd's to
 * its directory, runs the command, then prints the markers execd parses (the `export -p` dump
 * between __ENV_DUMP_START__ and __ENV_DUMP_END__, __PWD__:dir, __EXIT_CODE__:n); the watcher
 * and the SSE answer are the commands' (execd_stream.c).
 *
 * POST /session [{cwd?}] (body optional) → 200 {"session_id":"<uuid>"}; cwd ($VAR and ~ expanded)
 *   is created (mkdir -p) → 500 RUNTIME_ERROR "error creating session. ..." when it cannot be; a
 *   body that is not JSON or a cwd that is not a string → 400 INVALID_REQUEST_BODY.
 * POST /session/{id}/run {command, cwd?, timeout? (ms, >= 0; 0 none)} → 200 text/event-stream:
 *   {"type":"init","text":"<session id>"}, one {"type":"stdout","text":"<line>"} per non-empty
 *   line of the merged output (no terminator), pings every 3 s, then execution_complete (exit 0)
 *   or {"type":"error","error":{"ename":"CommandExecError","evalue":"<code>","traceback":["exit
 *   status N"]}}. A run that reaches its timeout has its process group killed and the stream ends
 *   with execd's RespondError body {"code":"RUNTIME_ERROR","message":"error running in session.
 *   timeout after <Go duration>"} (no event framing: execd writes it after the headers went out).
 *   The run's exported variables and final directory become the session's (not after a
 *   timeout). No command or a negative timeout or a cwd that is no directory → 400
 *   INVALID_REQUEST_BODY "invalid request. ..."; a body that does not parse → 400 "error parsing
 *   request. ..."; an unknown session → 500 RUNTIME_ERROR "error running in session. context not
 *   found" (execd's codes).
 * DELETE /session/{id} → 200 (a running run's process group SIGKILLed); unknown → 404
 *   CONTEXT_NOT_FOUND "session <id> not found".
 * Differences from execd: the first run starts from envd's command environment (execd snapshots
 *   its own environ at create); values in the dump are unquoted as bash quotes them (execd's
 *   strconv.Unquote keeps the backslash of \$ and \`); the script file is removed after its run;
 *   the timeout kills the whole group (execd kills bash and then waits for the pipe to close).
 * Source: components/execd/pkg/runtime/bash_session.go, workingdir.go,
 *   web/controller/codeinterpreting.go (CreateSession, RunInSession, DeleteSession),
 *   model/session.go @3bb6fad; specs/execd-api.yaml (/session...).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/execd_cmd_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

struct session {
  struct session *next;
  int refs; /* the list's, and one per run; guarded by the sessions' mutex as is all below */
  char id[40];
  json_t *env; /* the environment a run starts from; NULL: none yet (envd's command env) */
  char *cwd;   /* "" or NULL: the run's spawn directory (envd's) */
  struct execd_cmd *current; /* the last run (a reference), killed by DELETE */
};

struct execd_sessions {
  pthread_mutex_t mu;
  struct session *list;
};

struct execd_srun {
  struct execd_sessions *tab;
  struct session *s;      /* a reference */
  struct execd_dump dump; /* what the run's markers said */
  char *script;
  int64_t timeout_ms;
};

int execd_sessions_init(struct execd_cmds *t)
{
  struct execd_sessions *ss = calloc(1, sizeof *ss);
  if (!ss)
    return -1;
  pthread_mutex_init(&ss->mu, NULL);
  t->sessions = ss;
  return 0;
}

/* Drop a reference with the mutex held; the last one frees s. */
static void session_unref_locked(struct session *s)
{
  if (--s->refs > 0)
    return;
  json_decref(s->env);
  free(s->cwd);
  free(s);
}

/* SIGKILL run c's process group when it still runs; drops the reference. */
static void kill_run(struct execd_cmd *c)
{
  if (!c)
    return;
  pthread_mutex_lock(&c->tab->mu);
  if (c->running && c->p)
    envd_proc_signal(c->p, SIGKILL, &(struct envd_err){0});
  pthread_mutex_unlock(&c->tab->mu);
  execd_cmd_unref(c);
}

void execd_sessions_shutdown(struct execd_cmds *t)
{
  struct execd_sessions *ss = t->sessions;
  if (!ss)
    return;
  for (;;) {
    pthread_mutex_lock(&ss->mu);
    struct session *s = ss->list;
    struct execd_cmd *cur = NULL;
    if (s) {
      ss->list = s->next;
      cur = s->current;
      s->current = NULL;
      session_unref_locked(s);
    }
    pthread_mutex_unlock(&ss->mu);
    if (!s)
      break;
    kill_run(cur);
  }
  /* runs still finishing hold their session and reach ss: execd_sessions_free once none is */
}

void execd_sessions_free(struct execd_cmds *t)
{
  struct execd_sessions *ss = t->sessions;
  if (!ss)
    return;
  pthread_mutex_destroy(&ss->mu);
  free(ss);
  t->sessions = NULL;
}

bool execd_srun_filter(struct execd_srun *r, const char *s, size_t n)
{
  return execd_dump_line(&r->dump, s, n);
}

bool execd_srun_end(struct execd_srun *r, bool timed_out, char **tail, size_t *len)
{
  if (timed_out) {
    char d[64];
    execd_go_duration(r->timeout_ms, d);
    json_t *j = json_pack("{s:s,s:s+}", "code", "RUNTIME_ERROR", "message",
                          "error running in session. timeout after ", d);
    *tail = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    *len = *tail ? strlen(*tail) : 0;
    json_decref(j);
    return true;
  }
  pthread_mutex_lock(&r->tab->mu);
  if (json_object_size(r->dump.env) > 0) {
    json_decref(r->s->env);
    r->s->env = json_incref(r->dump.env);
  }
  if (r->dump.pwd && *r->dump.pwd) {
    free(r->s->cwd);
    r->s->cwd = strdup(r->dump.pwd);
  }
  pthread_mutex_unlock(&r->tab->mu);
  return false;
}

void execd_srun_free(struct execd_srun *r)
{
  if (!r)
    return;
  if (r->script)
    unlink(r->script);
  free(r->script);
  free(r->dump.pwd);
  json_decref(r->dump.env);
  if (r->s) {
    pthread_mutex_lock(&r->tab->mu);
    session_unref_locked(r->s);
    pthread_mutex_unlock(&r->tab->mu);
  }
  free(r);
}

/* ---- the routes -------------------------------------------------------------------------- */

/* uuid.New().String(): a random (v4) UUID with dashes. */
static void new_uuid(char id[40])
{
  unsigned char b[16];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
    for (size_t i = 0; i < sizeof b; i++)
      b[i] = (unsigned char)(rand() & 0xff);
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(id, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
           b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
           b[15]);
}

/* The request body as JSON: an empty body is NULL with *eof and nothing queued (CreateSession
 * takes it as {}); a body that does not parse queues 400 "error parsing request. ..." (*res) and
 * returns NULL. */
static json_t *body_of(struct execd_req *r, bool *eof, enum MHD_Result *res)
{
  *eof = r->len == 0;
  if (*eof)
    return NULL;
  json_error_t je;
  json_t *j = json_loadb(r->body, r->len, JSON_DECODE_ANY, &je);
  if (!j)
    *res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", "error parsing request. %s", je.text);
  else if (!json_is_object(j)) {
    *res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY",
                          "error parsing request. the body must be a JSON object");
    json_decref(j);
    j = NULL;
  }
  return j;
}

/* An optional string field: its value, "" when absent or null; NULL (and msg) when of another
 * type. */
static const char *opt_str(json_t *j, const char *k, char *msg, size_t n)
{
  json_t *v = json_object_get(j, k);
  if (!v || json_is_null(v))
    return "";
  if (!json_is_string(v)) {
    snprintf(msg, n, "error parsing request. field '%s' must be a string", k);
    return NULL;
  }
  return json_string_value(v);
}

enum MHD_Result execd_session_create(struct execd_req *r)
{
  bool eof;
  enum MHD_Result res = MHD_NO;
  json_t *j = body_of(r, &eof, &res);
  if (!j && !eof)
    return res;
  char msg[512] = "", eb[128];
  const char *cwd = j ? opt_str(j, "cwd", msg, sizeof msg) : "";
  char *why = NULL, *dir = cwd ? execd_expand_path(cwd, NULL, false, &why) : NULL;
  if (!cwd)
    res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", "%s", msg);
  else if (!dir)
    res = execd_send_err(r->c, 500, "RUNTIME_ERROR",
                         "error creating session. resolve request cwd %s: %s", cwd,
                         why ? why : "out of memory");
  else if (*dir && envd_mkdir_p(dir, NULL) < 0)
    res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error creating session. mkdir %s: %s", dir,
                         execd_errstr(errno, eb));
  else {
    struct execd_sessions *ss = r->e->execd->sessions;
    struct session *s = calloc(1, sizeof *s);
    if (s) {
      s->refs = 1;
      new_uuid(s->id);
      s->cwd = dir;
      dir = NULL;
      pthread_mutex_lock(&ss->mu);
      s->next = ss->list;
      ss->list = s;
      pthread_mutex_unlock(&ss->mu);
      res = execd_send_ok_json(r->c, json_pack("{s:s}", "session_id", s->id));
    }
  }
  free(dir);
  free(why);
  json_decref(j);
  return res;
}

/* The session named id with a reference taken, or NULL. */
static struct session *session_get(struct execd_sessions *ss, const char *id)
{
  pthread_mutex_lock(&ss->mu);
  struct session *s = ss->list;
  while (s && strcmp(s->id, id) != 0)
    s = s->next;
  if (s)
    s->refs++;
  pthread_mutex_unlock(&ss->mu);
  return s;
}

enum MHD_Result execd_session_delete(struct execd_req *r, const char *id)
{
  struct execd_sessions *ss = r->e->execd->sessions;
  pthread_mutex_lock(&ss->mu);
  struct session **pp = &ss->list, *s;
  while ((s = *pp) && strcmp(s->id, id) != 0)
    pp = &s->next;
  struct execd_cmd *cur = NULL;
  if (s) {
    *pp = s->next;
    cur = s->current;
    s->current = NULL;
    session_unref_locked(s);
  }
  pthread_mutex_unlock(&ss->mu);
  if (!s)
    return execd_send_err(r->c, 404, "CONTEXT_NOT_FOUND", "session %s not found", id);
  kill_run(cur);
  return execd_send_ok(r->c);
}

/* A RunInSessionRequest, checked (model/session.go Validate): 0, or -1 after queueing the 400. */
static int run_request(struct execd_req *r, json_t *j, const char **cmd, const char **cwd,
                       long long *timeout_ms, enum MHD_Result *res)
{
  char msg[600] = "";
  json_t *to = json_object_get(j, "timeout");
  *cmd = opt_str(j, "command", msg, sizeof msg);
  *cwd = *cmd ? opt_str(j, "cwd", msg, sizeof msg) : NULL;
  if (*cwd && to && !json_is_null(to) && !json_is_integer(to))
    snprintf(msg, sizeof msg, "error parsing request. field 'timeout' must be an integer (ms)");
  if (msg[0]) {
    *res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", "%s", msg);
    return -1;
  }
  *timeout_ms = json_is_integer(to) ? json_integer_value(to) : 0;
  const char *bad = NULL;
  if (!**cmd)
    bad = "Key: 'RunInSessionRequest.Command' Error:Field validation for 'Command' failed on "
          "the 'required' tag";
  else if (*timeout_ms < 0)
    bad = "Key: 'RunInSessionRequest.Timeout' Error:Field validation for 'Timeout' failed on "
          "the 'gte' tag";
  else if (*timeout_ms > 9223372036854LL)
    bad = "field 'timeout' must be at most 9223372036854 (milliseconds)";
  else if (**cwd) { /* ValidateWorkingDir */
    char *why = NULL, *plain = execd_expand_path(*cwd, NULL, false, &why), eb[128];
    struct stat st;
    if (!plain)
      snprintf(msg, sizeof msg, "cannot resolve working directory \"%s\": %s", *cwd,
               why ? why : "out of memory");
    else if (stat(plain, &st) < 0)
      snprintf(msg, sizeof msg,
               errno == ENOENT ? "working directory does not exist: %s: stat %s: %s"
                               : "cannot access working directory \"%s\": stat %s: %s",
               *cwd, plain, execd_errstr(errno, eb));
    else if (!S_ISDIR(st.st_mode))
      snprintf(msg, sizeof msg, "working directory path is not a directory: %s", *cwd);
    free(plain);
    free(why);
    bad = msg[0] ? msg : NULL;
  }
  if (bad)
    *res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", "invalid request. %s", bad);
  return bad ? -1 : 0;
}

/* Write the run's script to $TMPDIR (or /tmp)/execd_bash_XXXXXX.sh: its path (malloc'd), or
 * NULL with *msg. */
static char *write_script(const char *text, char msg[256])
{
  const char *tmp = getenv("TMPDIR");
  char *path = NULL, eb[128];
  if (asprintf(&path, "%s/execd_bash_XXXXXX.sh", tmp && *tmp ? tmp : "/tmp") < 0)
    return NULL;
  int fd = mkstemps(path, 3);
  size_t n = strlen(text);
  ssize_t w = fd >= 0 ? write(fd, text, n) : -1;
  if (fd < 0 || w != (ssize_t)n) {
    snprintf(msg, 256, "%s script file: %s", fd < 0 ? "create" : "write",
             execd_errstr(fd < 0 || w < 0 ? errno : EIO, eb));
    if (fd >= 0) {
      close(fd);
      unlink(path);
    }
    free(path);
    return NULL;
  }
  close(fd);
  return path;
}

/* A run of session s: its script written from the session's state and the request; NULL with
 * *msg when the script cannot be written. */
static struct execd_srun *srun_new(struct execd_sessions *ss, struct session *s, const char *cmd,
                                   const char *cwd_req, long long timeout_ms, char msg[256])
{
  struct execd_srun *run = calloc(1, sizeof *run);
  if (!run)
    return NULL;
  run->tab = ss;
  run->s = s;
  run->dump.env = json_object();
  run->timeout_ms = timeout_ms;
  char *why = NULL, *cwd = *cwd_req ? execd_expand_path(cwd_req, NULL, false, &why) : NULL;
  pthread_mutex_lock(&ss->mu);
  char *text = execd_bash_script(cmd, s->env, cwd ? cwd : s->cwd);
  pthread_mutex_unlock(&ss->mu);
  run->script = text ? write_script(text, msg) : NULL;
  free(text);
  free(cwd);
  free(why);
  if (!run->script) {
    if (!text)
      snprintf(msg, 256, "out of memory");
    run->s = NULL; /* the caller keeps its reference */
    json_decref(run->dump.env);
    free(run);
    return NULL;
  }
  return run;
}

/* Spawn `bash --noprofile --norc SCRIPT` for run into c (envd's own user, in envd's cwd as
 * execd's bash runs in execd's): c->p NULL with err when it cannot start. */
static void spawn_run(struct envd *e, struct execd_cmd *c, struct execd_srun *run,
                      struct envd_err *err)
{
  struct envd_user u;
  execd_user_for(-1, -1, &u);
  char *bash = envd_path_lookup(ENVD_PATH_ENV, "bash", 1), *why = NULL;
  char *dir = execd_expand_path(".", NULL, true, &why);
  const char *args[3] = {"--noprofile", "--norc", run->script};
  struct envd_spawn sp = {.cmd = bash ? bash : "bash",
                          .args = args,
                          .nargs = 3,
                          .cwd = dir ? dir : "/",
                          .user = &u,
                          .timeout_ms = run->timeout_ms};
  c->p = envd_proc_spawn(e, &sp, &c->sub, err);
  free(bash);
  free(dir);
  free(why);
}

/* Make c the session's current run (its reference), dropping the previous one's. */
static void set_current(struct execd_sessions *ss, struct session *s, struct execd_cmd *c)
{
  pthread_mutex_lock(&c->tab->mu);
  c->refs++;
  pthread_mutex_unlock(&c->tab->mu);
  pthread_mutex_lock(&ss->mu);
  struct execd_cmd *old = s->current;
  s->current = c;
  pthread_mutex_unlock(&ss->mu);
  if (old)
    execd_cmd_unref(old);
}

enum MHD_Result execd_session_run(struct execd_req *r, const char *id)
{
  bool eof;
  enum MHD_Result res = MHD_NO;
  json_t *j = body_of(r, &eof, &res);
  if (!j)
    return eof ? execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", "error parsing request. EOF")
               : res;
  const char *cmd, *cwd;
  long long timeout_ms;
  struct execd_sessions *ss = r->e->execd->sessions;
  struct session *s = NULL;
  char msg[256] = "";
  if (run_request(r, j, &cmd, &cwd, &timeout_ms, &res) < 0)
    goto out;
  if (!(s = session_get(ss, id))) {
    res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error running in session. context not found");
    goto out;
  }
  struct execd_srun *run = srun_new(ss, s, cmd, cwd, timeout_ms, msg);
  struct execd_cmd *c = run ? execd_cmd_new(r->e->execd, cmd, false) : NULL;
  if (!c) {
    if (run) {
      execd_srun_free(run); /* takes s's reference with it */
      s = NULL;
    }
    res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error running in session. %s",
                         msg[0] ? msg : "out of memory");
    goto out;
  }
  c->srun = run; /* the run (and s's reference) now go with c */
  memcpy(c->id, s->id, sizeof c->id);
  struct envd_err err = {0};
  spawn_run(r->e, c, run, &err);
  if (!c->p) {
    res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error running in session. start bash: %s",
                         err.msg ? err.msg : "cannot start bash");
    envd_err_clear(&err);
    execd_cmd_free(c);
  } else {
    execd_cmd_watch(c, false);
    set_current(ss, s, c);
    res = execd_sse_command(r->c, c);
  }
  s = NULL;
out:
  if (s) {
    pthread_mutex_lock(&ss->mu);
    session_unref_locked(s);
    pthread_mutex_unlock(&ss->mu);
  }
  json_decref(j);
  return res;
}
