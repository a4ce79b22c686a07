/*
 * process.c: the process table, spawning, subscribers, signals and the reaper. Each process's
 * reader thread is in process_output.c; the records and the locking rules in process_int.h.
 * Source: docs/protocol/envd-protocol.md §4.3, §4.4; contract in process.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/process_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t envd_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t envd_now_ms(void)
{
  return envd_now_ns() / 1000000;
}

static void *reaper_main(void *arg)
{
  struct envd_procs *t = arg;
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  /* No polling: SIGCHLD wakes the reaper, and shutdown sends it one with pthread_kill. The
   * 5 s tick is only a safety net (each idle wake of 200 envds costs CPU; see tests/load). */
  struct timespec tick = {5, 0};
  while (!t->stop) {
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
      pthread_mutex_lock(&t->mu);
      for (struct envd_proc *p = t->list; p; p = p->next) {
        if (p->pid != pid || p->exited)
          continue;
        pthread_mutex_lock(&p->mu);
        p->exited = true;
        p->wstatus = st;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->mu);
        envd_proc_wake_reader(p);
        break;
      }
      pthread_mutex_unlock(&t->mu);
    }
    sigtimedwait(&chld, NULL, &tick);
  }
  return NULL;
}

int envd_procs_init(struct envd *e)
{
  struct envd_procs *t = calloc(1, sizeof *t);
  if (!t)
    return -1;
  t->e = e;
  pthread_mutex_init(&t->mu, NULL);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (pthread_create(&t->reaper, NULL, reaper_main, t) != 0) {
    pthread_mutex_destroy(&t->mu);
    free(t);
    return -1;
  }
  e->procs = t;
  return 0;
}

static void proc_free(struct envd_proc *p)
{
  pthread_join(p->reader, NULL);
  while (p->subs) {
    struct envd_sub *s = p->subs;
    p->subs = s->next;
    while (s->head) {
      struct qitem *q = s->head;
      s->head = q->next;
      free(q);
    }
    free(s);
  }
  if (p->in_fd >= 0)
    close(p->in_fd);
  close(p->wake_fd);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->in_mu);
  pthread_cond_destroy(&p->cond);
  json_decref(p->config);
  free(p->tag);
  free(p->end_env);
  free(p);
}

void envd_proc_unref(struct envd_proc *p)
{
  if (!p)
    return;
  struct envd_procs *t = p->tab;
  pthread_mutex_lock(&t->mu);
  bool last = --p->refs == 0;
  pthread_mutex_unlock(&t->mu);
  if (last)
    proc_free(p);
}

/* Drop retained ended processes older than ENVD_RETAIN_MS. Caller holds t->mu; the freed
 * ones are returned in *dead for freeing outside the lock. */
static void purge_locked(struct envd_procs *t, struct envd_proc **dead)
{
  int64_t now = envd_now_ms();
  for (struct envd_proc **pp = &t->list; *pp;) {
    struct envd_proc *p = *pp;
    pthread_mutex_lock(&p->mu);
    bool old = p->ended && now - p->ended_at > ENVD_RETAIN_MS;
    pthread_mutex_unlock(&p->mu);
    if (!old) {
      pp = &p->next;
      continue;
    }
    *pp = p->next;
    if (--p->refs == 0) {
      p->next = *dead;
      *dead = p;
    }
  }
}

static void free_dead(struct envd_proc *dead)
{
  while (dead) {
    struct envd_proc *n = dead->next;
    proc_free(dead);
    dead = n;
  }
}

/* Frees a process record whose process never started or is not watched (no reader thread). */
static void discard_unstarted(struct envd_proc *p, void *first)
{
  p->subs = NULL;
  free(first);
  p->in_fd = -1;
  close(p->wake_fd);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->in_mu);
  pthread_cond_destroy(&p->cond);
  json_decref(p->config);
  free(p->tag);
  free(p);
}

struct envd_proc *envd_proc_spawn(struct envd *e, const struct envd_spawn *s, struct envd_sub **sub,
                                  struct envd_err *err)
{
  struct envd_procs *t = e->procs;
  struct envd_proc *p = calloc(1, sizeof *p);
  struct envd_sub *first = calloc(1, sizeof *first);
  int wake_fd = p && first ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
  if (!p || !first || wake_fd < 0) {
    free(p);
    free(first);
    envd_fail(err, "internal", "out of memory");
    return NULL;
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->cond, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->in_mu, NULL);
  p->tab = t;
  p->wake_fd = wake_fd;
  p->tag = s->tag ? strdup(s->tag) : NULL;
  p->config = json_incref(s->config);
  p->subs = first;
  p->refs = 2; /* the table and the caller */
  p->pty = s->pty;
  if (s->timeout_ms > 0)
    p->deadline = envd_now_ms() + s->timeout_ms;
  pthread_mutex_lock(&t->mu);
  p->pid = envd_fork_exec(e, s, &p->in_fd, &p->out_fd, &p->err_fd, err);
  if (p->pid < 0) {
    pthread_mutex_unlock(&t->mu);
    discard_unstarted(p, first);
    return NULL;
  }
  if (pthread_create(&p->reader, NULL, envd_proc_reader_main, p) != 0) {
    /* Cannot watch it: kill it and report. The reaper collects the child. */
    kill(-p->pid, SIGKILL);
    pthread_mutex_unlock(&t->mu);
    close(p->out_fd);
    close(p->err_fd);
    if (p->in_fd >= 0)
      close(p->in_fd);
    envd_fail(err, "internal", "cannot start reader thread");
    discard_unstarted(p, first);
    return NULL;
  }
  p->next = t->list;
  t->list = p;
  struct envd_proc *dead = NULL;
  purge_locked(t, &dead);
  pthread_mutex_unlock(&t->mu);
  free_dead(dead);
  *sub = first;
  return p;
}

struct envd_proc *envd_proc_find(struct envd *e, uint32_t pid, const char *tag)
{
  struct envd_procs *t = e->procs;
  struct envd_proc *found = NULL, *dead = NULL;
  pthread_mutex_lock(&t->mu);
  purge_locked(t, &dead);
  for (int pass = 0; pass < 2 && !found; pass++) {
    for (struct envd_proc *p = t->list; p && !found; p = p->next) {
      pthread_mutex_lock(&p->mu);
      bool live = !p->ended;
      pthread_mutex_unlock(&p->mu);
      if (live != (pass == 0))
        continue;
      if (tag ? (p->tag && strcmp(p->tag, tag) == 0) : (uint32_t)p->pid == pid)
        found = p;
    }
  }
  if (found)
    found->refs++;
  pthread_mutex_unlock(&t->mu);
  free_dead(dead);
  return found;
}

struct envd_sub *envd_proc_subscribe(struct envd_proc *p)
{
  struct envd_sub *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  pthread_mutex_lock(&p->mu);
  if (p->ended) {
    if (p->end_env)
      envd_proc_queue_push(s, p->end_env, p->end_len);
    s->end_queued = true;
  }
  s->next = p->subs;
  p->subs = s;
  pthread_mutex_unlock(&p->mu);
  return s;
}

void envd_proc_unsubscribe(struct envd_proc *p, struct envd_sub *s)
{
  if (!s)
    return;
  pthread_mutex_lock(&p->mu);
  for (struct envd_sub **pp = &p->subs; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->mu);
  while (s->head) {
    struct qitem *q = s->head;
    s->head = q->next;
    free(q);
  }
  free(s);
}

int envd_sub_next(struct envd_proc *p, struct envd_sub *s, int64_t until_ms, char **buf,
                  size_t *len)
{
  int rc = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    if (s->head) {
      struct qitem *q = s->head;
      s->head = q->next;
      if (!s->head)
        s->tail = NULL;
      s->bytes -= q->len;
      *buf = malloc(q->len);
      if (*buf)
        memcpy(*buf, q->data, q->len);
      *len = q->len;
      free(q);
      pthread_cond_broadcast(&p->cond);
      rc = *buf ? 1 : 0;
      break;
    }
    if (s->end_queued) {
      rc = 2;
      break;
    }
    if (envd_now_ms() >= until_ms || p->tab->stop)
      break;
    envd_proc_wait_until(&p->cond, &p->mu, until_ms);
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

uint32_t envd_proc_pid(const struct envd_proc *p)
{
  return (uint32_t)p->pid;
}

bool envd_proc_timed_out(struct envd_proc *p)
{
  pthread_mutex_lock(&p->mu);
  bool t = p->timed_out;
  pthread_mutex_unlock(&p->mu);
  return t;
}

json_t *envd_proc_list(struct envd *e)
{
  struct envd_procs *t = e->procs;
  json_t *arr = json_array();
  struct envd_proc *dead = NULL;
  pthread_mutex_lock(&t->mu);
  purge_locked(t, &dead);
  for (struct envd_proc *p = t->list; p; p = p->next) {
    pthread_mutex_lock(&p->mu);
    bool live = !p->exited;
    pthread_mutex_unlock(&p->mu);
    if (!live)
      continue;
    json_t *info = json_object();
    if (p->config)
      json_object_set(info, "config", p->config);
    json_object_set_new(info, "pid", json_integer(p->pid));
    if (p->tag)
      json_object_set_new(info, "tag", json_string(p->tag));
    json_array_append_new(arr, info);
  }
  pthread_mutex_unlock(&t->mu);
  free_dead(dead);
  json_t *res = json_object();
  if (json_array_size(arr))
    json_object_set_new(res, "processes", arr);
  else
    json_decref(arr);
  return res;
}

/* Write all of data to p->in_fd, waiting at most 10 s for space. Caller holds p->in_mu. */
static int write_in(struct envd_proc *p, const void *data, size_t len, const char *what,
                    struct envd_err *err)
{
  if (p->in_fd < 0)
    return envd_fail(err, "internal",
                     p->pty ? "error writing to %s: process has ended" : "%s not enabled or closed",
                     what);
  const char *d = data;
  int64_t deadline = envd_now_ms() + 10000;
  while (len > 0) {
    struct pollfd pf = {.fd = p->in_fd, .events = POLLOUT};
    int64_t left = deadline - envd_now_ms();
    if (left <= 0)
      return envd_fail(err, "internal", "error writing to %s: timeout", what);
    int pr = poll(&pf, 1, (int)left);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr <= 0)
      continue;
    ssize_t n = write(p->in_fd, d, len);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR)
        continue;
      return envd_fail(err, "internal", "error writing to %s: %s", what, strerror(errno));
    }
    d += n;
    len -= (size_t)n;
  }
  return 0;
}

int envd_proc_write_stdin(struct envd_proc *p, const void *data, size_t len, struct envd_err *err)
{
  if (p->pty)
    return envd_fail(err, "internal",
                     "error writing to stdin: process has a tty, "
                     "send pty input instead");
  pthread_mutex_lock(&p->in_mu);
  int rc = write_in(p, data, len, "stdin", err);
  pthread_mutex_unlock(&p->in_mu);
  return rc;
}

int envd_proc_write_pty(struct envd_proc *p, const void *data, size_t len, struct envd_err *err)
{
  if (!p->pty)
    return envd_fail(err, "internal", "error writing to tty: process has no tty");
  pthread_mutex_lock(&p->in_mu);
  int rc = write_in(p, data, len, "tty", err);
  pthread_mutex_unlock(&p->in_mu);
  return rc;
}

int envd_proc_resize(struct envd_proc *p, uint16_t cols, uint16_t rows, struct envd_err *err)
{
  if (!p->pty)
    return envd_fail(err, "internal", "error resizing tty: process has no tty");
  int rc = 0;
  pthread_mutex_lock(&p->in_mu);
  struct winsize ws = {.ws_row = rows, .ws_col = cols};
  if (p->in_fd < 0)
    rc = envd_fail(err, "internal", "error resizing tty: process has ended");
  else if (ioctl(p->in_fd, TIOCSWINSZ, &ws) < 0)
    rc = envd_fail(err, "internal", "error resizing tty: %s", strerror(errno));
  pthread_mutex_unlock(&p->in_mu);
  return rc;
}

int envd_proc_close_stdin(struct envd_proc *p, struct envd_err *err)
{
  if (p->pty)
    return envd_fail(err, "unknown",
                     "cannot close stdin for PTY process %d: send the end-of-transmission "
                     "byte (0x04) instead",
                     (int)p->pid);
  pthread_mutex_lock(&p->in_mu);
  if (p->in_fd >= 0)
    close(p->in_fd);
  p->in_fd = -1;
  pthread_mutex_unlock(&p->in_mu);
  return 0;
}

int envd_proc_signal(struct envd_proc *p, int sig, struct envd_err *err)
{
  pthread_mutex_lock(&p->mu);
  bool exited = p->exited;
  pthread_mutex_unlock(&p->mu);
  if (exited)
    return 0;
  int rc1 = kill(-p->pid, sig);
  int rc2 = kill(p->pid, sig);
  if (rc1 < 0 && rc2 < 0 && errno != ESRCH)
    return envd_fail(err, "internal", "error sending signal: %s", strerror(errno));
  return 0;
}

void envd_procs_shutdown(struct envd *e)
{
  struct envd_procs *t = e->procs;
  if (!t)
    return;
  pthread_mutex_lock(&t->mu);
  for (struct envd_proc *p = t->list; p; p = p->next) {
    pthread_mutex_lock(&p->mu);
    if (!p->exited) {
      kill(-p->pid, SIGKILL);
      kill(p->pid, SIGKILL);
    }
    pthread_mutex_unlock(&p->mu);
  }
  struct envd_proc *list = t->list;
  t->list = NULL;
  pthread_mutex_unlock(&t->mu);
  /* Readers finish once the reaper reports the exits (or after 2 s, as killed). */
  int64_t until = envd_now_ms() + 2000;
  for (struct envd_proc *p = list; p; p = p->next) {
    pthread_mutex_lock(&p->mu);
    while (!p->ended && envd_now_ms() < until)
      envd_proc_wait_until(&p->cond, &p->mu, until);
    pthread_mutex_unlock(&p->mu);
  }
  t->stop = 1;
  for (struct envd_proc *p = list; p; p = p->next) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
    envd_proc_wake_reader(p);
  }
  pthread_kill(t->reaper, SIGCHLD); /* out of sigtimedwait now, not at its next tick */
  pthread_join(t->reaper, NULL);
  while (list) {
    struct envd_proc *n = list->next;
    envd_proc_unref(list);
    list = n;
  }
  pthread_mutex_destroy(&t->mu);
  free(t);
  e->procs = NULL;
}
