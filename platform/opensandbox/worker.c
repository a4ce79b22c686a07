/*
 * worker.c: the opensandbox flavour's worker threads: the start of a created sandbox and the
 * asynchronous pause, resume and expiry kill (opensandbox.h "States"). Contract in
 * opensandbox_int.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/sandbox.h"
#include "util/util.h"
#include "opensandbox_int.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_running;

struct job {
  enum opensandbox_op op; /* OPENSANDBOX_OP_NONE: the start of `sb` */
  char id[32];
  struct abx_sandbox *sb;
  json_t *env, *entrypoint;
  int millis;
};

/* The entrypoint comes in through the environment, each argument single-quoted, so bash -c
 * runs exactly that argv; setsid + & detach it from the shell envd waits for (as
 * template_start.c's start_cmd). A program that is not there fails the start (exit 127), as a
 * container whose command does not exist fails to start. */
static const char ep_script[] =
    "command -v -- \"$ABX_ENTRYPOINT0\" >/dev/null || "
    "{ echo \"$ABX_ENTRYPOINT0: command not found\"; exit 127; }; "
    "mkdir -p /var/log/abx && c=$ABX_ENTRYPOINT && unset ABX_ENTRYPOINT ABX_ENTRYPOINT0 && "
    "setsid /bin/bash -c \"$c\" </dev/null >>/var/log/abx/entrypoint.log 2>&1 &";

static char *quote_argv(json_t *argv)
{
  size_t cap = 8, i;
  json_t *v;
  json_array_foreach(argv, i, v) cap += 3 + 4 * json_string_length(v);
  char *s = malloc(cap), *w = s;
  if (!s)
    return NULL;
  w += sprintf(w, "exec");
  json_array_foreach(argv, i, v)
  {
    *w++ = ' ';
    *w++ = '\'';
    for (const char *p = json_string_value(v); *p; p++)
      if (*p == '\'')
        w += sprintf(w, "'\\''");
      else
        *w++ = *p;
    *w++ = '\'';
  }
  *w = 0;
  return s;
}

static int run_entrypoint(struct abx_sandbox *sb, json_t *argv, char *err, size_t n)
{
  char *cmd = quote_argv(argv), out[200] = "";
  json_t *envs = cmd ? json_pack("{s:s,s:s}", "ABX_ENTRYPOINT", cmd, "ABX_ENTRYPOINT0",
                                 json_string_value(json_array_get(argv, 0)))
                     : NULL;
  int code = -1;
  /* 30 s, as template_start.c's start_cmd launch: a loaded machine must not fail it (issue 22) */
  int rc = envs ? abx_envd_run(sb->netns_fd, sb->secure ? sb->token : NULL, "root", ep_script, envs,
                               30000, &code, out, sizeof out, err, n)
                : (snprintf(err, n, "out of memory"), -1);
  if (rc == 0 && code != 0) {
    size_t l = strlen(out);
    while (l && out[l - 1] == '\n')
      out[--l] = 0;
    snprintf(err, n, "the entrypoint could not be started (exit %d): %.150s", code, out);
    rc = -1;
  }
  free(cmd);
  json_decref(envs);
  return rc;
}

static void start(struct job *j)
{
  struct abx_sandbox *sb = j->sb;
  char err[ABX_START_ERR_MAX] = "";
  int rc = abx_sandbox_start(sb, j->env, err, sizeof err);
  if (rc == 0 && j->millis % 1000) /* "500m": the exact quota, not the whole CPUs */
    rc = abx_cgroup_set_cpu_millis(sb->id, j->millis, err, sizeof err);
  if (rc == 0)
    rc = run_entrypoint(sb, j->entrypoint, err, sizeof err);
  int64_t now = abx_now_ns();
  opensandbox_lock();
  struct opensandbox_rec *r = opensandbox_find(sb->id);
  int deleted = !r || r->deleted;
  if (rc != 0 && r) {
    r->state = OPENSANDBOX_FAILED;
    r->transition_ns = now;
    snprintf(r->reason, sizeof r->reason, "PROVISIONING_ERROR");
    snprintf(r->message, sizeof r->message, "failed to start sandbox: %.1024s", err);
    if (r->deleted)
      opensandbox_drop(r);
  } else if (rc == 0) {
    sb->started_ns = r ? r->created_ns : now;
    sb->end_ns = r ? r->expires_ns : now;
    abx_registry_add(sb); /* registry lock inside opensandbox_lock: the documented order */
    if (r) {
      r->state = OPENSANDBOX_LIVE;
      r->transition_ns = now;
    }
  }
  opensandbox_unlock();
  if (rc != 0) {
    abx_slog("opensandbox: sandbox %s failed to start: %s", sb->id, err);
    abx_sandbox_put(sb);
    return;
  }
  if (deleted) { /* DELETE came while it was Pending */
    struct abx_sandbox *s = abx_sandbox_get(j->id);
    if (s) {
      abx_lifecycle_kill(s, "killed by API while it started");
      abx_sandbox_put(s);
    }
    opensandbox_lock();
    if ((r = opensandbox_find(j->id)) != NULL)
      opensandbox_drop(r);
    opensandbox_unlock();
  }
}

static void change(struct job *j)
{
  struct abx_sandbox *s = abx_sandbox_get(j->id);
  int rc = 404, resumed = 0;
  if (s && j->op == OPENSANDBOX_OP_PAUSING) {
    rc = abx_lifecycle_pause(s); /* a memory pause, as docker pause (the freezer) */
  } else if (s && j->op == OPENSANDBOX_OP_RESUMING) {
    opensandbox_lock();
    struct opensandbox_rec *r = opensandbox_find(j->id);
    int64_t left = r ? r->expires_ns - abx_now_ns() : 0;
    opensandbox_unlock();
    if (left > 0) { /* the exact expiresAt is set below; this only keeps the TTL off meanwhile */
      int64_t secs = left / 1000000000LL + 1;
      rc = abx_lifecycle_reattach(s, secs > 3153600000LL ? 3153600000LL : secs, 1, 1, 0, &resumed);
    } else {
      /* expired while paused, before the tick saw it */
      abx_lifecycle_kill(s, "TTL expired while paused");
    }
  } else if (s) {
    /* OPENSANDBOX_OP_KILLING: paused past its expiresAt (abx_opensandbox_tick) */
    abx_lifecycle_kill(s, "TTL expired while paused");
  }
  opensandbox_lock();
  struct opensandbox_rec *r = opensandbox_find(j->id);
  if (r && rc == 404) {
    opensandbox_drop(r);
  } else if (r) {
    if (rc == 0 && j->op == OPENSANDBOX_OP_RESUMING) {
      abx_registry_lock();
      s->end_ns = r->expires_ns; /* fresh: a renew may have come meanwhile */
      abx_registry_unlock();
    }
    r->op = OPENSANDBOX_OP_NONE;
    r->transition_ns = abx_now_ns();
    if (rc != 0) {
      snprintf(r->reason, sizeof r->reason, "%s",
               j->op == OPENSANDBOX_OP_PAUSING ? "SANDBOX_PAUSE_FAILED" : "SANDBOX_RESUME_FAILED");
      snprintf(r->message, sizeof r->message, "the %s failed (status %d; see the serve log)",
               j->op == OPENSANDBOX_OP_PAUSING ? "pause" : "resume", rc);
    }
  }
  opensandbox_unlock();
  if (s)
    abx_sandbox_put(s);
}

static void *worker(void *arg)
{
  struct job *j = arg;
  if (j->op == OPENSANDBOX_OP_NONE)
    start(j);
  else
    change(j);
  json_decref(j->env);
  json_decref(j->entrypoint);
  free(j);
  pthread_mutex_lock(&g_mu);
  if (--g_running == 0)
    pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

static int spawn(struct job *j)
{
  pthread_attr_t a;
  pthread_t t;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_mutex_lock(&g_mu);
  g_running++;
  pthread_mutex_unlock(&g_mu);
  int rc = pthread_create(&t, &a, worker, j);
  pthread_attr_destroy(&a);
  if (rc != 0) {
    pthread_mutex_lock(&g_mu);
    if (--g_running == 0)
      pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
  }
  return rc == 0 ? 0 : -1;
}

int opensandbox_worker_create(struct abx_sandbox *sb, json_t *env, json_t *entrypoint, int millis)
{
  struct job *j = calloc(1, sizeof *j);
  if (j) {
    j->op = OPENSANDBOX_OP_NONE;
    memcpy(j->id, sb->id, sizeof j->id);
    j->sb = sb;
    j->env = env;
    j->entrypoint = entrypoint;
    j->millis = millis;
  }
  if (j && spawn(j) == 0)
    return 0;
  free(j);
  json_decref(env);
  json_decref(entrypoint);
  abx_sandbox_put(sb);
  return -1;
}

int opensandbox_worker_op(const char *id, enum opensandbox_op op)
{
  struct job *j = calloc(1, sizeof *j);
  if (j) {
    j->op = op;
    snprintf(j->id, sizeof j->id, "%s", id);
  }
  if (j && spawn(j) == 0)
    return 0;
  free(j);
  opensandbox_lock();
  struct opensandbox_rec *r = opensandbox_find(id);
  if (r)
    r->op = OPENSANDBOX_OP_NONE;
  opensandbox_unlock();
  return -1;
}

void opensandbox_workers_drain(void)
{
  pthread_mutex_lock(&g_mu);
  while (g_running > 0)
    pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
}
