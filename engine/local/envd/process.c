/*
 * process.c: the process table, per-process reader threads, subscribers and the reaper.
 * Locking: table mutex before process mutex. One condition variable per process is broadcast
 * on every change (new output, queue drained, exit, unsubscribe).
 * Source: reference/envd-protocol.md §4.3, §4.4; contract in process.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "local/envd/process.h"

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

struct qitem {
  struct qitem *next;
  size_t len;
  char data[];
};

struct envd_sub {
  struct envd_sub *next;
  struct qitem *head, *tail;
  size_t bytes;
  bool end_queued;
};

struct envd_proc {
  struct envd_procs *tab;
  struct envd_proc *next;
  int refs; /* guarded by tab->mu */
  pid_t pid;
  char *tag;
  json_t *config;
  pthread_mutex_t mu;
  pthread_cond_t cond;
  pthread_mutex_t in_mu;
  int in_fd, out_fd, err_fd; /* PTY: out_fd is the master, in_fd a dup of it, err_fd -1 */
  int wake_fd;               /* eventfd: the reaper and shutdown wake the reader's poll */
  bool pty;
  bool exited, ended, timed_out;
  int wstatus;
  int64_t ended_at, deadline;
  char *end_env;
  size_t end_len;
  struct envd_sub *subs;
  pthread_t reader;
};

struct envd_procs {
  struct envd *e;
  pthread_mutex_t mu;
  struct envd_proc *list;
  pthread_t reaper;
  volatile int stop;
};

int64_t envd_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wait_until(pthread_cond_t *c, pthread_mutex_t *m, int64_t until_ms) {
  struct timespec ts = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000};
  pthread_cond_timedwait(c, m, &ts);
}

/* Wake the reader thread out of its poll (exit, shutdown). */
static void wake_reader(struct envd_proc *p) {
  uint64_t one = 1;
  if (write(p->wake_fd, &one, sizeof one) < 0) { /* EAGAIN: a wake is already pending */
  }
}

/* How long the reader may sleep in poll: until the Start deadline, or until woken (-1). A
 * fixed short timeout here cost 10 wakes per second per process, which at 2,000 concurrent
 * commands was most of the machine's CPU. Caller holds p->mu. */
static int reader_timeout_ms(const struct envd_proc *p) {
  if (!p->deadline || p->timed_out) return -1;
  int64_t left = p->deadline - envd_now_ms();
  return left <= 0 ? 0 : left >= INT32_MAX ? INT32_MAX : (int)left + 1;
}

static void *reaper_main(void *arg) {
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
        if (p->pid != pid || p->exited) continue;
        pthread_mutex_lock(&p->mu);
        p->exited = true;
        p->wstatus = st;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->mu);
        wake_reader(p);
        break;
      }
      pthread_mutex_unlock(&t->mu);
    }
    sigtimedwait(&chld, NULL, &tick);
  }
  return NULL;
}

int envd_procs_init(struct envd *e) {
  struct envd_procs *t = calloc(1, sizeof *t);
  if (!t) return -1;
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

static void queue_push(struct envd_sub *s, const char *data, size_t len) {
  struct qitem *q = malloc(sizeof *q + len);
  if (!q) return;
  q->next = NULL;
  q->len = len;
  memcpy(q->data, data, len);
  if (s->tail)
    s->tail->next = q;
  else
    s->head = q;
  s->tail = q;
  s->bytes += len;
}

/* Kill the group when the Start deadline passed. Caller holds p->mu. */
static void check_deadline(struct envd_proc *p) {
  if (p->deadline && !p->exited && envd_now_ms() >= p->deadline) {
    if (!p->timed_out) p->timed_out = true;
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
  }
}

/* Fan an envelope out to every subscriber, blocking while a queue is full. */
static void publish(struct envd_proc *p, const char *env, size_t len) {
  pthread_mutex_lock(&p->mu);
  for (;;) {
    bool full = false;
    for (struct envd_sub *s = p->subs; s; s = s->next)
      if (s->bytes + len > ENVD_SUB_MAX && s->bytes > 0) full = true;
    if (!full || p->tab->stop) break;
    check_deadline(p);
    wait_until(&p->cond, &p->mu, envd_now_ms() + 500);
  }
  for (struct envd_sub *s = p->subs; s; s = s->next) queue_push(s, env, len);
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->mu);
}

static void publish_data(struct envd_proc *p, const char *stream, const char *buf, size_t n) {
  pthread_mutex_lock(&p->mu);
  bool any = p->subs != NULL;
  pthread_mutex_unlock(&p->mu);
  if (!any) return; /* discarded while no stream is subscribed (§4.4) */
  char *b64 = envd_b64_encode(buf, n);
  json_t *j = json_pack("{s:{s:{s:s}}}", "event", "data", stream, b64 ? b64 : "");
  size_t len = 0;
  char *env = j ? envd_envelope(0, j, &len) : NULL;
  if (env) publish(p, env, len);
  free(env);
  json_decref(j);
  free(b64);
}

/* EndEvent per §4.3: exit N → exitCode N, exited true, status/error "exit status N";
 * signal → exitCode -1, status/error "signal: <name>". */
static json_t *end_event(int st) {
  json_t *end = json_object();
  char status[96];
  if (WIFEXITED(st)) {
    int code = WEXITSTATUS(st);
    snprintf(status, sizeof status, "exit status %d", code);
    if (code) json_object_set_new(end, "exitCode", json_integer(code));
    json_object_set_new(end, "exited", json_true());
    json_object_set_new(end, "status", json_string(status));
    if (code) json_object_set_new(end, "error", json_string(status));
  } else {
    int sig = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
    const char *name = sig == SIGKILL   ? "killed"
                       : sig == SIGTERM ? "terminated"
                       : sig == SIGINT  ? "interrupt"
                                        : strsignal(sig);
    snprintf(status, sizeof status, "signal: %s", name ? name : "unknown");
    json_object_set_new(end, "exitCode", json_integer(-1));
    json_object_set_new(end, "status", json_string(status));
    json_object_set_new(end, "error", json_string(status));
  }
  return json_pack("{s:{s:o}}", "event", "end", end);
}

static void *reader_main(void *arg) {
  struct envd_proc *p = arg;
  int fds[2] = {p->out_fd, p->err_fd};
  const char *names[2] = {p->pty ? "pty" : "stdout", "stderr"};
  size_t chunk = p->pty ? ENVD_PTY_CHUNK : ENVD_CHUNK;
  char *buf = malloc(chunk);
  int64_t quiet_since = 0;
  while (buf && (fds[0] >= 0 || fds[1] >= 0)) {
    pthread_mutex_lock(&p->mu);
    check_deadline(p);
    bool exited = p->exited || p->tab->stop;
    int timeout = exited ? 50 : reader_timeout_ms(p);
    pthread_mutex_unlock(&p->mu);
    struct pollfd pf[3];
    int np = 0, map[2];
    for (int i = 0; i < 2; i++)
      if (fds[i] >= 0) {
        pf[np].fd = fds[i];
        pf[np].events = POLLIN;
        map[np++] = i;
      }
    pf[np].fd = p->wake_fd;
    pf[np].events = POLLIN;
    pf[np].revents = 0;
    int rc = poll(pf, (nfds_t)np + 1, timeout);
    if (rc < 0 && errno != EINTR) break;
    if (pf[np].revents & POLLIN) {
      uint64_t v;
      if (read(p->wake_fd, &v, sizeof v) < 0) { /* EAGAIN: drained already */
      }
      rc--;
    }
    if (rc <= 0) {
      /* After exit, stop once the pipes stay quiet: background children may hold them. */
      if (exited) {
        if (!quiet_since) quiet_since = envd_now_ms();
        if (envd_now_ms() - quiet_since >= 100) break;
      }
      continue;
    }
    quiet_since = 0;
    for (int k = 0; k < np; k++) {
      if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int i = map[k];
      ssize_t n = read(fds[i], buf, chunk); /* a PTY master reads EIO once the slave is gone */
      if (n > 0)
        publish_data(p, names[i], buf, (size_t)n);
      else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fds[i]);
        fds[i] = -1;
      }
    }
  }
  free(buf);
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0) close(fds[i]);
  pthread_mutex_lock(&p->mu);
  while (!p->exited && !p->tab->stop) {
    check_deadline(p);
    /* the reaper and shutdown broadcast p->cond; the 5 s bound is a safety net */
    wait_until(&p->cond, &p->mu,
               p->deadline && !p->timed_out ? p->deadline : envd_now_ms() + 5000);
  }
  if (!p->exited) p->wstatus = SIGKILL; /* shutting down: report as killed */
  json_t *j = end_event(p->wstatus);
  p->end_env = envd_envelope(0, j, &p->end_len);
  json_decref(j);
  for (struct envd_sub *s = p->subs; s; s = s->next) {
    if (p->end_env) queue_push(s, p->end_env, p->end_len);
    s->end_queued = true;
  }
  p->ended = true;
  p->ended_at = envd_now_ms();
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_lock(&p->in_mu);
  if (p->in_fd >= 0) close(p->in_fd);
  p->in_fd = -1;
  pthread_mutex_unlock(&p->in_mu);
  return NULL;
}

static void proc_free(struct envd_proc *p) {
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
  if (p->in_fd >= 0) close(p->in_fd);
  close(p->wake_fd);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->in_mu);
  pthread_cond_destroy(&p->cond);
  json_decref(p->config);
  free(p->tag);
  free(p->end_env);
  free(p);
}

void envd_proc_unref(struct envd_proc *p) {
  if (!p) return;
  struct envd_procs *t = p->tab;
  pthread_mutex_lock(&t->mu);
  bool last = --p->refs == 0;
  pthread_mutex_unlock(&t->mu);
  if (last) proc_free(p);
}

/* Drop retained ended processes older than ENVD_RETAIN_MS. Caller holds t->mu; the freed
 * ones are returned in *dead for freeing outside the lock. */
static void purge_locked(struct envd_procs *t, struct envd_proc **dead) {
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

static void free_dead(struct envd_proc *dead) {
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

struct envd_proc *envd_proc_spawn(struct envd *e, const struct envd_spawn *s,
                                  struct envd_sub **sub, struct envd_err *err) {
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
  if (s->timeout_ms > 0) p->deadline = envd_now_ms() + s->timeout_ms;
  pthread_mutex_lock(&t->mu);
  p->pid = envd_fork_exec(e, s, &p->in_fd, &p->out_fd, &p->err_fd, err);
  if (p->pid < 0) {
    pthread_mutex_unlock(&t->mu);
    discard_unstarted(p, first);
    return NULL;
  }
  if (pthread_create(&p->reader, NULL, reader_main, p) != 0) {
    /* Cannot watch it: kill it and report. The reaper collects the child. */
    kill(-p->pid, SIGKILL);
    pthread_mutex_unlock(&t->mu);
    close(p->out_fd);
    close(p->err_fd);
    if (p->in_fd >= 0) close(p->in_fd);
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

struct envd_proc *envd_proc_find(struct envd *e, uint32_t pid, const char *tag) {
  struct envd_procs *t = e->procs;
  struct envd_proc *found = NULL, *dead = NULL;
  pthread_mutex_lock(&t->mu);
  purge_locked(t, &dead);
  for (int pass = 0; pass < 2 && !found; pass++) {
    for (struct envd_proc *p = t->list; p && !found; p = p->next) {
      pthread_mutex_lock(&p->mu);
      bool live = !p->ended;
      pthread_mutex_unlock(&p->mu);
      if (live != (pass == 0)) continue;
      if (tag ? (p->tag && strcmp(p->tag, tag) == 0) : (uint32_t)p->pid == pid) found = p;
    }
  }
  if (found) found->refs++;
  pthread_mutex_unlock(&t->mu);
  free_dead(dead);
  return found;
}

struct envd_sub *envd_proc_subscribe(struct envd_proc *p) {
  struct envd_sub *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  pthread_mutex_lock(&p->mu);
  if (p->ended) {
    if (p->end_env) queue_push(s, p->end_env, p->end_len);
    s->end_queued = true;
  }
  s->next = p->subs;
  p->subs = s;
  pthread_mutex_unlock(&p->mu);
  return s;
}

void envd_proc_unsubscribe(struct envd_proc *p, struct envd_sub *s) {
  if (!s) return;
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
                  size_t *len) {
  int rc = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    if (s->head) {
      struct qitem *q = s->head;
      s->head = q->next;
      if (!s->head) s->tail = NULL;
      s->bytes -= q->len;
      *buf = malloc(q->len);
      if (*buf) memcpy(*buf, q->data, q->len);
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
    if (envd_now_ms() >= until_ms || p->tab->stop) break;
    wait_until(&p->cond, &p->mu, until_ms);
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

uint32_t envd_proc_pid(const struct envd_proc *p) { return (uint32_t)p->pid; }

bool envd_proc_timed_out(struct envd_proc *p) {
  pthread_mutex_lock(&p->mu);
  bool t = p->timed_out;
  pthread_mutex_unlock(&p->mu);
  return t;
}

json_t *envd_proc_list(struct envd *e) {
  struct envd_procs *t = e->procs;
  json_t *arr = json_array();
  struct envd_proc *dead = NULL;
  pthread_mutex_lock(&t->mu);
  purge_locked(t, &dead);
  for (struct envd_proc *p = t->list; p; p = p->next) {
    pthread_mutex_lock(&p->mu);
    bool live = !p->exited;
    pthread_mutex_unlock(&p->mu);
    if (!live) continue;
    json_t *info = json_object();
    if (p->config) json_object_set(info, "config", p->config);
    json_object_set_new(info, "pid", json_integer(p->pid));
    if (p->tag) json_object_set_new(info, "tag", json_string(p->tag));
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
                    struct envd_err *err) {
  if (p->in_fd < 0)
    return envd_fail(err, "internal", p->pty ? "error writing to %s: process has ended"
                                             : "%s not enabled or closed", what);
  const char *d = data;
  int64_t deadline = envd_now_ms() + 10000;
  while (len > 0) {
    struct pollfd pf = {.fd = p->in_fd, .events = POLLOUT};
    int64_t left = deadline - envd_now_ms();
    if (left <= 0) return envd_fail(err, "internal", "error writing to %s: timeout", what);
    int pr = poll(&pf, 1, (int)left);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    ssize_t n = write(p->in_fd, d, len);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return envd_fail(err, "internal", "error writing to %s: %s", what, strerror(errno));
    }
    d += n;
    len -= (size_t)n;
  }
  return 0;
}

int envd_proc_write_stdin(struct envd_proc *p, const void *data, size_t len,
                          struct envd_err *err) {
  if (p->pty) return envd_fail(err, "internal", "error writing to stdin: process has a tty, "
                                                "send pty input instead");
  pthread_mutex_lock(&p->in_mu);
  int rc = write_in(p, data, len, "stdin", err);
  pthread_mutex_unlock(&p->in_mu);
  return rc;
}

int envd_proc_write_pty(struct envd_proc *p, const void *data, size_t len, struct envd_err *err) {
  if (!p->pty) return envd_fail(err, "internal", "error writing to tty: process has no tty");
  pthread_mutex_lock(&p->in_mu);
  int rc = write_in(p, data, len, "tty", err);
  pthread_mutex_unlock(&p->in_mu);
  return rc;
}

bool envd_proc_is_pty(const struct envd_proc *p) { return p->pty; }

int envd_proc_resize(struct envd_proc *p, uint16_t cols, uint16_t rows, struct envd_err *err) {
  if (!p->pty) return envd_fail(err, "internal", "error resizing tty: process has no tty");
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

int envd_proc_close_stdin(struct envd_proc *p, struct envd_err *err) {
  if (p->pty)
    return envd_fail(err, "unknown",
                     "cannot close stdin for PTY process %d: send the end-of-transmission "
                     "byte (0x04) instead", (int)p->pid);
  pthread_mutex_lock(&p->in_mu);
  if (p->in_fd >= 0) close(p->in_fd);
  p->in_fd = -1;
  pthread_mutex_unlock(&p->in_mu);
  return 0;
}

int envd_proc_signal(struct envd_proc *p, int sig, struct envd_err *err) {
  pthread_mutex_lock(&p->mu);
  bool exited = p->exited;
  pthread_mutex_unlock(&p->mu);
  if (exited) return 0;
  int rc1 = kill(-p->pid, sig);
  int rc2 = kill(p->pid, sig);
  if (rc1 < 0 && rc2 < 0 && errno != ESRCH)
    return envd_fail(err, "internal", "error sending signal: %s", strerror(errno));
  return 0;
}

void envd_procs_shutdown(struct envd *e) {
  struct envd_procs *t = e->procs;
  if (!t) return;
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
    while (!p->ended && envd_now_ms() < until) wait_until(&p->cond, &p->mu, until);
    pthread_mutex_unlock(&p->mu);
  }
  t->stop = 1;
  for (struct envd_proc *p = list; p; p = p->next) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
    wake_reader(p);
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
