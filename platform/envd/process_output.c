/*
 * process_output.c: the reader thread of each process. It reads the pipes (or the PTY master),
 * turns output into ProcessEvent data envelopes for every subscriber (blocking while a queue is
 * full: backpressure, no loss), enforces the Start deadline, and queues the end event after
 * the reaper reports the exit. It sleeps in poll until output, the exit (eventfd from the
 * reaper) or the deadline: no periodic wakes while a process is quiet.
 * Source: docs/protocol/envd-protocol.md §4.3 (event sequence), §4.4 (server semantics).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/mutants.h"
#include "envd/process_int.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void envd_proc_wait_until(pthread_cond_t *c, pthread_mutex_t *m, int64_t until_ms)
{
  struct timespec ts = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000};
  pthread_cond_timedwait(c, m, &ts);
}

/* Wake the reader thread out of its poll (exit, shutdown). */
void envd_proc_wake_reader(struct envd_proc *p)
{
  uint64_t one = 1;
  if (write(p->wake_fd, &one, sizeof one) < 0) { /* EAGAIN: a wake is already pending */
  }
}

/* How long the reader may sleep in poll: until the Start deadline, or until woken (-1). A
 * fixed short timeout here cost 10 wakes per second per process, which at 2,000 concurrent
 * commands was most of the machine's CPU. Caller holds p->mu. */
static int reader_timeout_ms(const struct envd_proc *p)
{
  if (!p->deadline || p->timed_out)
    return -1;
  int64_t left = p->deadline - envd_now_ms();
  return left <= 0 ? 0 : left >= INT32_MAX ? INT32_MAX : (int)left + 1;
}

void envd_proc_queue_push(struct envd_sub *s, const char *data, size_t len)
{
  struct qitem *q = malloc(sizeof *q + len);
  if (!q)
    return;
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
static void check_deadline(struct envd_proc *p)
{
  if (p->deadline && !p->exited && envd_now_ms() >= p->deadline) {
    if (!p->timed_out)
      p->timed_out = true;
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
  }
}

/* Fan an envelope out to every subscriber, blocking while a queue is full. */
static void publish(struct envd_proc *p, const char *env, size_t len)
{
  pthread_mutex_lock(&p->mu);
  for (;;) {
    bool full = false;
    for (struct envd_sub *s = p->subs; s; s = s->next)
      if (s->bytes + len > ENVD_SUB_MAX && s->bytes > 0)
        full = true;
    if (!full || p->tab->stop)
      break;
    check_deadline(p);
    envd_proc_wait_until(&p->cond, &p->mu, envd_now_ms() + 500);
  }
  for (struct envd_sub *s = p->subs; s; s = s->next)
    envd_proc_queue_push(s, env, len);
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->mu);
}

/* The data envelope {"event":{"data":{"<stream>":"<base64>"}}} written directly, byte for byte
 * what json_dumps(JSON_COMPACT) gives for it (base64 needs no JSON escaping): building it through
 * jansson cost most of envd's CPU on a large output (json_string validates and json_dumps
 * escapes 43 KiB per 32 KiB chunk; tests/envd t_big_output checks the bytes). */
static char *data_envelope(const char *stream, const char *buf, size_t n, size_t *len)
{
  static const char head[] = "{\"event\":{\"data\":{\"", mid[] = "\":\"", tail[] = "\"}}}";
  size_t sl = strlen(stream), bl = ABX_B64_LEN(n);
  size_t body = sizeof head - 1 + sl + sizeof mid - 1 + bl + sizeof tail - 1;
  char *env = malloc(5 + body + 1); /* + the NUL abx_b64_encode writes */
  if (!env)
    return NULL;
  abx_connect_prefix((unsigned char *)env, 0, (uint32_t)body);
  char *w = env + 5;
  memcpy(w, head, sizeof head - 1);
  w += sizeof head - 1;
  memcpy(w, stream, sl);
  w += sl;
  memcpy(w, mid, sizeof mid - 1);
  w += sizeof mid - 1;
  w += abx_b64_encode(w, buf, n, ABX_B64_STD);
  memcpy(w, tail, sizeof tail - 1);
  *len = 5 + body;
  return env;
}

static void publish_data(struct envd_proc *p, const char *stream, const char *buf, size_t n)
{
  pthread_mutex_lock(&p->mu);
  bool any = p->subs != NULL;
  pthread_mutex_unlock(&p->mu);
  if (!any)
    return; /* discarded while no stream is subscribed (§4.4) */
  size_t len = 0;
  char *env = data_envelope(stream, buf, n, &len);
  if (env)
    publish(p, env, len);
  free(env);
}

/* EndEvent per §4.3: exit N → exitCode N, exited true, status/error "exit status N";
 * signal → exitCode -1, status/error "signal: <name>". */
static json_t *end_event(int st)
{
  json_t *end = json_object();
  char status[96];
  if (WIFEXITED(st)) {
    int code = WEXITSTATUS(st);
    snprintf(status, sizeof status, "exit status %d", code);
    if (code)
      json_object_set_new(end, "exitCode", json_integer(code));
    json_object_set_new(end, "exited", json_true());
    json_object_set_new(end, "status", json_string(status));
    if (code)
      json_object_set_new(end, "error", json_string(status));
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

/* A reader thread's descriptors and buffer. */
struct reader {
  struct envd_proc *p;
  int fds[2];           /* stdout (or the pty master), stderr; -1 once closed */
  const char *names[2]; /* their data fields: "stdout" (or "pty"), "stderr" */
  size_t chunk;         /* bytes read at once */
  char *buf;
};

/* Poll the open fds and the wake fd for up to timeout ms, then read each ready fd once and
 * publish its bytes; an fd at its end (or failing: a pty master reads EIO once the slave is
 * gone) is closed. The number of fds that were ready (the wake fd not counted, drained), 0 on
 * a timeout or EINTR, -1 when poll fails. */
static int pump_once(struct reader *r, int timeout)
{
  struct pollfd pf[3];
  int np = 0, map[2];
  for (int i = 0; i < 2; i++)
    if (r->fds[i] >= 0) {
      pf[np].fd = r->fds[i];
      pf[np].events = POLLIN;
      map[np++] = i;
    }
  pf[np].fd = r->p->wake_fd;
  pf[np].events = POLLIN;
  pf[np].revents = 0;
  int rc = poll(pf, (nfds_t)np + 1, timeout);
  if (rc < 0)
    return errno == EINTR ? 0 : -1;
  if (pf[np].revents & POLLIN) {
    uint64_t v;
    if (read(r->p->wake_fd, &v, sizeof v) < 0) { /* EAGAIN: drained already */
    }
    rc--;
  }
  if (rc <= 0)
    return 0;
  for (int k = 0; k < np; k++) {
    if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
      continue;
    int i = map[k];
    ssize_t n = read(r->fds[i], r->buf, r->chunk);
    if (n > 0)
      publish_data(r->p, r->names[i], r->buf, (size_t)n);
    else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      close(r->fds[i]);
      r->fds[i] = -1;
    }
  }
  return rc;
}

/* The output is read to its end: wait for the exit (or shutdown: reported as SIGKILL), queue
 * the end envelope to every subscriber, mark p ended, and close its stdin. */
static void publish_end(struct envd_proc *p)
{
  pthread_mutex_lock(&p->mu);
  while (!p->exited && !p->tab->stop) {
    check_deadline(p);
    /* the reaper and shutdown broadcast p->cond; the 5 s bound is a safety net */
    envd_proc_wait_until(&p->cond, &p->mu,
                         p->deadline && !p->timed_out ? p->deadline : envd_now_ms() + 5000);
  }
  if (!p->exited)
    p->wstatus = SIGKILL; /* shutting down: report as killed */
  struct envd *e = p->tab->e;
  /* command-tail-1s: the end event waits ENVD_MUT_TAIL_MS after the process ended (p->mu stays
   * usable meanwhile), or until shutdown */
  if (envd_mutant_on(e, ENVD_MUT_COMMAND_TAIL_1S))
    for (int64_t until = envd_now_ms() + ENVD_MUT_TAIL_MS; !p->tab->stop && envd_now_ms() < until;)
      envd_proc_wait_until(&p->cond, &p->mu, until);
  json_t *j = end_event(envd_mutant_on(e, ENVD_MUT_EXIT_CODE_ZERO) ? 0 : p->wstatus);
  p->end_env = envd_envelope(0, j, &p->end_len);
  json_decref(j);
  for (struct envd_sub *s = p->subs; s; s = s->next) {
    if (p->end_env)
      envd_proc_queue_push(s, p->end_env, p->end_len);
    s->end_queued = true;
  }
  p->ended = true;
  p->ended_at = envd_now_ms();
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_lock(&p->in_mu);
  if (p->in_fd >= 0)
    close(p->in_fd);
  p->in_fd = -1;
  pthread_mutex_unlock(&p->in_mu);
}

void *envd_proc_reader_main(void *arg)
{
  struct envd_proc *p = arg;
  bool err_as_out = envd_mutant_on(p->tab->e, ENVD_MUT_STDERR_AS_STDOUT); /* mutants.h */
  struct reader r = {.p = p,
                     .fds = {p->out_fd, p->err_fd},
                     .names = {p->pty ? "pty" : "stdout", err_as_out ? "stdout" : "stderr"},
                     .chunk = p->pty ? ENVD_PTY_CHUNK : ENVD_CHUNK};
  r.buf = malloc(r.chunk);
  int64_t quiet_since = 0;
  while (r.buf && (r.fds[0] >= 0 || r.fds[1] >= 0)) {
    pthread_mutex_lock(&p->mu);
    check_deadline(p);
    bool exited = p->exited || p->tab->stop;
    int timeout = exited ? 50 : reader_timeout_ms(p);
    pthread_mutex_unlock(&p->mu);
    int rc = pump_once(&r, timeout);
    if (rc < 0)
      break;
    if (rc == 0) {
      /* After exit, stop once the pipes stay quiet: background children may hold them. */
      if (exited) {
        if (!quiet_since)
          quiet_since = envd_now_ms();
        if (envd_now_ms() - quiet_since >= 100)
          break;
      }
      continue;
    }
    quiet_since = 0;
  }
  free(r.buf);
  for (int i = 0; i < 2; i++)
    if (r.fds[i] >= 0)
      close(r.fds[i]);
  publish_end(p);
  return NULL;
}
