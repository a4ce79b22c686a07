/*
 * execd_stream.c: a command's watcher thread (envd's subscriber → lines → SSE events, or the
 * background log file; then the exit recorded and the final event) and the text/event-stream
 * answer (init, queued events, a ping every 3 s, the 1 s linger). Wire in execd_command.c; a bash
 * session's run (execd_session.c) goes through the same watcher and answer, its lines split as
 * bufio.ScanLines does and filtered by the session. Mutants: stream-no-end keeps the answer open
 * without its final event (mutants.h).
 * Source: components/execd/pkg/runtime/command.go, command_common.go (readFromPos),
 *   web/controller/sse.go, model/codeinterpreting.go @3bb6fad.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/execd_cmd_int.h"
#include "envd/mutants.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

json_t *execd_json_text(const char *s, size_t n)
{
  json_t *j = json_stringn(s, n);
  if (j)
    return j;
  char *o = malloc(n * 3 + 1);
  size_t k = 0;
  for (size_t i = 0; o && i < n;) {
    unsigned char b = (unsigned char)s[i];
    size_t len = b < 0x80             ? 1
                 : (b & 0xE0) == 0xC0 ? 2
                 : (b & 0xF0) == 0xE0 ? 3
                 : (b & 0xF8) == 0xF0 ? 4
                                      : 0;
    json_t *probe = len && i + len <= n ? json_stringn(s + i, len) : NULL;
    if (probe) {
      memcpy(o + k, s + i, len);
      k += len;
      i += len;
      json_decref(probe);
    } else {
      memcpy(o + k, "\xEF\xBF\xBD", 3);
      k += 3;
      i++;
    }
  }
  j = o ? json_stringn(o, k) : json_string("");
  free(o);
  return j;
}

/* One event as its wire bytes: JSON then "\n\n". `extra` (stolen) is merged after type/text. */
char *execd_event_bytes(const char *type, json_t *text, json_t *extra, size_t *len)
{
  json_t *j = json_object();
  json_object_set_new(j, "type", json_string(type));
  if (text)
    json_object_set_new(j, "text", text);
  if (extra)
    json_object_update(j, extra);
  json_decref(extra);
  json_object_set_new(j, "timestamp", json_integer(execd_wall_ms()));
  char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(j);
  char *out = NULL;
  if (s && asprintf(&out, "%s\n\n", s) >= 0)
    *len = strlen(out);
  else
    out = NULL;
  free(s);
  return out;
}

/* Queue an event for the foreground stream, waiting while the queue is full (backpressure);
 * dropped once the stream is gone. */
static void push_event(struct execd_cmd *c, char *ev, size_t len)
{
  if (!ev)
    return;
  pthread_mutex_lock(&c->tab->mu);
  while (!c->gone && c->qbytes > 0 && c->qbytes + len > EXECD_QUEUE_MAX)
    execd_wait_until(&c->cond, &c->tab->mu, envd_now_ms() + 1000);
  struct evitem *i = c->gone ? NULL : malloc(sizeof *i + len);
  if (i) {
    i->next = NULL;
    i->len = len;
    memcpy(i->data, ev, len);
    if (c->tail)
      c->tail->next = i;
    else
      c->head = i;
    c->tail = i;
    c->qbytes += len;
    pthread_cond_broadcast(&c->cond);
  }
  pthread_mutex_unlock(&c->tab->mu);
  free(ev);
}

struct lines {
  char *b;
  size_t n;
  bool cr;
};

/* One line as an event. A session run's lines are all stdout, its empty lines and its own
 * bookkeeping are not sent (bash_session.go run: OnExecuteStdout skips ""). */
static void emit_line(struct execd_cmd *c, const char *type, const char *s, size_t n)
{
  if (c->srun && (n == 0 || execd_srun_filter(c->srun, s, n)))
    return;
  if (c->srun)
    type = "stdout";
  size_t len = 0;
  char *ev = execd_event_bytes(type, execd_json_text(s, n), NULL, &len);
  push_event(c, ev, len);
}

/* readFromPos's splitting: \n or \r ends a line, \r\n is one end, an empty line is "\n"; a
 * session run's is bufio.ScanLines'. */
static void feed_lines(struct execd_cmd *c, struct lines *l, const char *type, const char *d,
                       size_t n)
{
  for (size_t i = 0; i < n; i++) {
    char b = d[i];
    if (c->srun && b == '\n') { /* bufio.ScanLines: \n ends a line, a \r before it dropped */
      emit_line(c, type, l->b, l->n > 0 && l->b[l->n - 1] == '\r' ? l->n - 1 : l->n);
      l->n = 0;
      continue;
    }
    if (!c->srun && (b == '\n' || b == '\r')) {
      if (l->n > 0)
        emit_line(c, type, l->b, l->n);
      else if (!(b == '\n' && l->cr))
        emit_line(c, type, "\n", 1);
      l->n = 0;
      l->cr = b == '\r';
      continue;
    }
    l->cr = false;
    if (!l->b)
      l->b = malloc(EXECD_LINE_MAX);
    if (!l->b)
      return;
    l->b[l->n++] = b;
    if (l->n == EXECD_LINE_MAX) { /* bounded: a huge unterminated line goes out in pieces */
      /* cut before a UTF-8 character the piece would split, so no piece has half of one */
      size_t cut = l->n, k = l->n;
      while (k > 0 && l->n - k < 3 && ((unsigned char)l->b[k - 1] & 0xC0) == 0x80)
        k--;
      if (k > 0) {
        unsigned char lead = (unsigned char)l->b[k - 1];
        size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (want > 1 && l->n - (k - 1) < want)
          cut = k - 1;
      }
      emit_line(c, type, l->b, cut);
      memmove(l->b, l->b + cut, l->n - cut);
      l->n -= cut;
    }
  }
}

static void write_log(int fd, const char *d, size_t n)
{
  while (fd >= 0 && n > 0) {
    ssize_t w = write(fd, d, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    d += w;
    n -= (size_t)w;
  }
}

/* The watcher: drains the process's subscriber into the stream queue or the log file, then
 * records the exit and queues the final event. */
/* What a watcher has read of its command so far. */
struct watch {
  struct lines out, err; /* partial lines of a foreground command */
  int exit_code;
  char status[128]; /* the end event's status, e.g. "exit status 1" */
  bool ended;       /* the end event arrived */
};

/* One envelope of the process's stream: output to the log (background) or as line events
 * (foreground); the end event's code and status into w. */
static void apply_envelope(struct execd_cmd *c, struct watch *w, const char *buf, size_t len)
{
  json_t *j = len > 5 ? json_loadb(buf + 5, len - 5, 0, NULL) : NULL;
  json_t *ev = json_object_get(j, "event");
  json_t *data = json_object_get(ev, "data"), *end = json_object_get(ev, "end");
  for (int k = 0; data && k < 2; k++) {
    const char *b64 = json_string_value(json_object_get(data, k ? "stderr" : "stdout"));
    size_t n = 0;
    unsigned char *raw = b64 ? abx_b64_decode_alloc(b64, 0, &n) : NULL;
    if (raw && c->background)
      write_log(c->log_fd, (const char *)raw, n);
    else if (raw)
      feed_lines(c, k ? &w->err : &w->out, k ? "stderr" : "stdout", (const char *)raw, n);
    free(raw);
  }
  if (end) {
    w->ended = true;
    w->exit_code = (int)json_integer_value(json_object_get(end, "exitCode"));
    const char *st = json_string_value(json_object_get(end, "status"));
    snprintf(w->status, sizeof w->status, "%s", st ? st : "");
  }
  json_decref(j);
}

/* A foreground command ended: its last unterminated lines, then execution_complete (exit 0) or
 * the error event (exit code as evalue, the status as traceback). */
static void queue_final_events(struct execd_cmd *c, struct watch *w)
{
  if (w->out.n)
    emit_line(c, "stdout", w->out.b, w->out.n);
  if (w->err.n)
    emit_line(c, "stderr", w->err.b, w->err.n);
  int64_t elapsed = envd_now_ms() - c->start_mono;
  size_t len = 0;
  char *evb;
  if (c->srun && execd_srun_end(c->srun, envd_proc_timed_out(c->p), &evb, &len))
    ; /* a session run that timed out ends with execd's error JSON */
  else if (w->exit_code == 0) {
    json_t *x = elapsed > 0 ? json_pack("{s:I}", "execution_time", (json_int_t)elapsed) : NULL;
    evb = execd_event_bytes("execution_complete", NULL, x, &len);
  } else {
    char ev[32];
    snprintf(ev, sizeof ev, "%d", w->exit_code);
    json_t *x = json_pack("{s:{s:s,s:s,s:[s]}}", "error", "ename", "CommandExecError", "evalue", ev,
                          "traceback", w->status);
    evb = execd_event_bytes("error", NULL, x, &len);
  }
  if (envd_mutant_on(c->tab->e, ENVD_MUT_STREAM_NO_END))
    free(evb); /* stream-no-end: the final event is never sent */
  else
    push_event(c, evb, len);
}

/* Record the end in c (under the table's mutex, waking its waiters), drop the watcher's
 * references to the process and to c, and leave the table's count of watchers. */
static void record_end(struct execd_cmd *c, const struct watch *w)
{
  envd_proc_unsubscribe(c->p, c->sub);
  struct envd_proc *p = c->p;
  pthread_mutex_lock(&c->tab->mu);
  c->p = NULL;
  c->sub = NULL;
  c->running = false;
  c->exit_code = w->exit_code;
  c->error = w->exit_code ? strdup(w->status) : NULL;
  clock_gettime(CLOCK_REALTIME, &c->finished);
  c->final_queued = true;
  pthread_cond_broadcast(&c->cond);
  struct execd_cmd *dead = NULL;
  execd_cmd_unref_locked(c, &dead);
  struct execd_cmds *t = c->tab;
  t->watchers--;
  pthread_cond_broadcast(&t->idle);
  pthread_mutex_unlock(&t->mu);
  envd_proc_unref(p);
  if (dead)
    execd_cmd_free(dead);
}

void *execd_watcher_main(void *arg)
{
  struct execd_cmd *c = arg;
  struct watch w = {0};
  for (;;) {
    char *buf = NULL;
    size_t len = 0;
    int rc = envd_sub_next(c->p, c->sub, envd_now_ms() + 1000, &buf, &len);
    if (rc == 2)
      break;
    if (rc == 0) {
      if (w.ended) /* the end envelope arrived; end_queued follows at once */
        usleep(10000);
      continue;
    }
    apply_envelope(c, &w, buf, len);
    free(buf);
  }
  if (!c->background)
    queue_final_events(c, &w);
  free(w.out.b);
  free(w.err.b);
  if (c->log_fd >= 0)
    close(c->log_fd);
  c->log_fd = -1;
  record_end(c, &w);
  return NULL;
}

/* ---- the SSE response -------------------------------------------------------------------- */

struct sse {
  struct execd_cmd *cmd; /* NULL: a fixed stream (spawn failure) */
  char *out;
  size_t len, pos;
  char *fixed; /* the fixed stream's bytes */
  size_t fixed_len;
  int phase; /* 0 init pending, 1 events, 2 lingering, 3 done */
  int64_t next_ping, linger_until;
  int fd;
};

static void sse_set(struct sse *s, char *b, size_t n)
{
  free(s->out);
  s->out = b;
  s->len = b ? n : 0;
  s->pos = 0;
}

void execd_kill_on_gone(struct execd_cmd *c)
{
  pthread_mutex_lock(&c->tab->mu);
  c->gone = true;
  if (c->p && !c->background)
    envd_proc_signal(c->p, SIGKILL, &(struct envd_err){0});
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->tab->mu);
}

static ssize_t sse_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct sse *s = cls;
  (void)pos;
  while (s->pos >= s->len) {
    int64_t now = envd_now_ms();
    if (s->phase == 0) {
      if (s->fixed) {
        sse_set(s, s->fixed, s->fixed_len);
        s->fixed = NULL;
        s->phase = 2;
        s->linger_until = now + EXECD_LINGER_MS;
        continue;
      }
      size_t n = 0;
      char *ev = execd_event_bytes("init", json_string(s->cmd->id), NULL, &n);
      sse_set(s, ev, n);
      s->phase = 1;
      s->next_ping = now + EXECD_PING_MS;
      continue;
    }
    if (s->phase == 3)
      return MHD_CONTENT_READER_END_OF_STREAM;
    if (s->phase == 2) {
      if (now >= s->linger_until) {
        s->phase = 3;
        return MHD_CONTENT_READER_END_OF_STREAM;
      }
      usleep((useconds_t)((s->linger_until - now) * 1000));
      continue;
    }
    struct execd_cmd *c = s->cmd;
    if (c->tab->e->stopping) { /* envd is shutting down: the command goes with it */
      execd_kill_on_gone(c);
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    bool no_end = envd_mutant_on(c->tab->e, ENVD_MUT_STREAM_NO_END); /* pings, never closes */
    pthread_mutex_lock(&c->tab->mu);
    if (!c->head && (!c->final_queued || no_end)) {
      int64_t until = s->next_ping < now + 1000 ? s->next_ping : now + 1000;
      execd_wait_until(&c->cond, &c->tab->mu, until);
    }
    struct evitem *i = c->head;
    if (i) {
      c->head = i->next;
      if (!c->head)
        c->tail = NULL;
      c->qbytes -= i->len;
      pthread_cond_broadcast(&c->cond);
    }
    bool fin = !i && c->final_queued && !no_end;
    pthread_mutex_unlock(&c->tab->mu);
    now = envd_now_ms();
    if (i) {
      char *b = malloc(i->len);
      if (b)
        memcpy(b, i->data, i->len);
      sse_set(s, b, i->len);
      free(i);
    } else if (fin) {
      s->phase = 2;
      s->linger_until = now + EXECD_LINGER_MS;
    } else if (envd_client_gone(s->fd)) {
      execd_kill_on_gone(c);
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (s->pos >= s->len && s->phase == 1 && now >= s->next_ping) {
      size_t n = 0;
      char *ping = execd_event_bytes("ping", json_string("pong"), NULL, &n); /* sets n first */
      sse_set(s, ping, n);
      s->next_ping = now + EXECD_PING_MS;
    }
  }
  return envd_stream_take(s->out, s->len, &s->pos, buf, max);
}

static void sse_free(void *cls)
{
  struct sse *s = cls;
  if (s->cmd) {
    if (s->phase < 2)
      execd_kill_on_gone(s->cmd);
    execd_cmd_unref(s->cmd);
  }
  free(s->fixed);
  free(s->out);
  free(s);
}

/* Queue the text/event-stream answer (sse.go sseHeaders). Takes over s. */
static enum MHD_Result sse_queue(struct MHD_Connection *conn, struct sse *s)
{
  s->fd = envd_conn_fd(conn);
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, sse_cb, s, sse_free);
  if (!r) {
    sse_free(s);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "text/event-stream");
  MHD_add_response_header(r, "Cache-Control", "no-cache");
  MHD_add_response_header(r, "X-Accel-Buffering", "no");
  enum MHD_Result ok = MHD_queue_response(conn, 200, r);
  MHD_destroy_response(r);
  return ok;
}

/* A stream of init + one more piece (spawn failure), then the linger. */
enum MHD_Result execd_sse_fixed(struct MHD_Connection *conn, const char *id, char *tail,
                                size_t tail_len)
{
  size_t n = 0;
  char *init = execd_event_bytes("init", json_string(id), NULL, &n);
  struct sse *s = calloc(1, sizeof *s);
  char *all = init && tail ? malloc(n + tail_len) : NULL;
  if (!s || !all) {
    free(s);
    free(init);
    free(tail);
    free(all);
    return MHD_NO;
  }
  memcpy(all, init, n);
  memcpy(all + n, tail, tail_len);
  s->fixed = all;
  s->fixed_len = n + tail_len;
  free(init);
  free(tail);
  return sse_queue(conn, s);
}

enum MHD_Result execd_sse_command(struct MHD_Connection *conn, struct execd_cmd *c)
{
  struct sse *s = calloc(1, sizeof *s);
  if (!s) {
    execd_kill_on_gone(c);
    execd_cmd_unref(c);
    return MHD_NO;
  }
  s->cmd = c;
  return sse_queue(conn, s);
}
