/*
 * watch_rpc.c: filesystem.Filesystem WatchDir (server stream) and the polling trio
 * CreateWatcher / GetWatcherEvents / RemoveWatcher, on watch.c's watch sets (watch_int.h).
 *
 * WatchDir stream: {"start":{}}, then {"filesystem":{...}} per event and {"keepalive":{}} after
 *   Keepalive-Ping-Interval seconds of silence; ends only with an error (internal on inotify
 *   queue overflow), Connect-Timeout-Ms (deadline_exceeded), envd shutdown (unavailable) or the
 *   client going away. No extra thread: the connection's thread polls the inotify fd.
 * Watchers: id "w" + 16 hex digits; a thread per watcher reads its inotify fd; GetWatcherEvents
 *   also drains the inotify fd itself first (so events of completed operations are included)
 *   and returns {"events":[...]} (left out when empty), emptying the queue. The queue keeps the
 *   newest ENVD_WATCH_QUEUE_MAX events; older ones are dropped and counted (logged). A failed
 *   watcher returns its sticky error (internal). Unknown id → not_found.
 * Source: docs/protocol/envd-protocol.md §5.1, §5.2, §9.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/process.h" /* envd_now_ms */
#include "envd/watch_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define ENVD_WATCH_QUEUE_MAX 10000

/* ---- WatchDir stream ---------------------------------------------------------------------- */

struct wstream {
  struct envd *e;
  struct envd_wcore w;
  json_t *pending; /* FilesystemEvents not sent yet */
  char *out;
  size_t out_len, out_pos;
  int phase; /* 0: start pending, 1: events, 2: end-stream queued */
  int64_t keepalive, last_send, deadline;
  int sock;
};

static void ws_set(struct wstream *st, char *buf, size_t len)
{
  free(st->out);
  st->out = buf;
  st->out_len = buf ? len : 0;
  st->out_pos = 0;
}

static void ws_end(struct wstream *st, const struct envd_err *err)
{
  size_t len = 0;
  char *b = envd_end_envelope(err, &len);
  ws_set(st, b, len);
  st->phase = 2;
}

static void ws_msg(struct wstream *st, json_t *j)
{
  size_t len = 0;
  char *b = j ? envd_envelope(0, j, &len) : NULL;
  ws_set(st, b, len);
  json_decref(j);
  st->last_send = envd_now_ms();
}

static ssize_t ws_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct wstream *st = cls;
  while (st->out_pos >= st->out_len) {
    if (st->phase == 2) {
      ws_set(st, NULL, 0);
      return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (st->phase == 0) {
      st->phase = 1;
      ws_msg(st, json_pack("{s:{}}", "start"));
      if (!st->out)
        return MHD_CONTENT_READER_END_WITH_ERROR;
      continue;
    }
    if (json_array_size(st->pending)) {
      json_t *ev = json_incref(json_array_get(st->pending, 0));
      json_array_remove(st->pending, 0);
      ws_msg(st, json_pack("{s:o}", "filesystem", ev));
      if (!st->out)
        return MHD_CONTENT_READER_END_WITH_ERROR;
      continue;
    }
    if (st->e->stopping) {
      struct envd_err err = {.code = "unavailable", .msg = (char *)"envd is shutting down"};
      ws_end(st, &err);
      continue;
    }
    int64_t now = envd_now_ms();
    if (st->deadline && now >= st->deadline) {
      struct envd_err err = {.code = "deadline_exceeded",
                             .msg = (char *)"context deadline exceeded"};
      ws_end(st, &err);
      continue;
    }
    if (now - st->last_send >= st->keepalive) {
      ws_msg(st, json_pack("{s:{}}", "keepalive"));
      if (!st->out)
        return MHD_CONTENT_READER_END_WITH_ERROR;
      continue;
    }
    if (envd_client_gone(st->sock))
      return MHD_CONTENT_READER_END_WITH_ERROR;
    int64_t until = st->last_send + st->keepalive;
    if (until > now + 500)
      until = now + 500;
    if (st->deadline && until > st->deadline)
      until = st->deadline;
    struct pollfd pf = {.fd = st->w.fd, .events = POLLIN};
    int pr = poll(&pf, 1, (int)(until > now ? until - now : 0));
    if (pr > 0) {
      struct envd_err err = {0};
      envd_fs_enter(&st->w.user);
      int rc = envd_wcore_read(&st->w, st->pending, &err);
      envd_fs_leave();
      if (rc < 0) {
        ws_end(st, &err);
        envd_err_clear(&err);
      }
    }
  }
  return envd_stream_take(st->out, st->out_len, &st->out_pos, buf, max);
}

static void ws_free(void *cls)
{
  struct wstream *st = cls;
  envd_wcore_free(&st->w);
  json_decref(st->pending);
  free(st->out);
  free(st);
}

enum MHD_Result envd_rpc_watch_dir(struct envd_call *c, json_t *req)
{
  struct envd_err err = {0};
  int64_t timeout = envd_timeout_header(c->conn);
  struct wstream *st = calloc(1, sizeof *st);
  if (!st)
    return MHD_NO;
  st->w.fd = -1;
  if (timeout < 0) {
    envd_fail(&err, "invalid_argument", "invalid Connect-Timeout-Ms header");
  } else if (envd_wcore_open(c, req, &st->w, &err) == 0) {
    st->e = c->e;
    st->pending = json_array();
    st->keepalive = envd_keepalive_ms(c->conn);
    st->last_send = envd_now_ms();
    st->deadline = timeout ? envd_now_ms() + timeout : 0;
    st->sock = envd_conn_fd(c->conn);
    return envd_queue_stream(c->conn, 16 * 1024, ws_cb, st, ws_free);
  }
  free(st);
  enum MHD_Result ok = envd_send_stream_err(c->conn, &err);
  envd_err_clear(&err);
  return ok;
}

/* ---- polling watchers --------------------------------------------------------------------- */

struct watcher {
  struct watcher *next;
  char id[24];
  struct envd_wcore w;
  json_t *events;
  size_t dropped;
  struct envd_err sticky; /* code NULL: healthy */
  int stop[2];            /* pipe: written to stop the thread */
  pthread_t thread;
};

struct envd_watchers {
  pthread_mutex_t mu; /* guards the list and every watcher's wcore, events, dropped, sticky */
  struct watcher *list;
};

/* Drain the watcher's inotify fd into its queue. Caller holds the table lock. */
static void watcher_drain(struct watcher *x)
{
  if (x->sticky.code)
    return;
  envd_fs_enter(&x->w.user);
  envd_wcore_read(&x->w, x->events, &x->sticky);
  envd_fs_leave();
  size_t n = json_array_size(x->events);
  if (n > ENVD_WATCH_QUEUE_MAX) {
    size_t drop = n - ENVD_WATCH_QUEUE_MAX;
    json_t *keep = json_array();
    for (size_t i = drop; i < n; i++)
      json_array_append(keep, json_array_get(x->events, i));
    json_decref(x->events);
    x->events = keep;
    x->dropped += drop;
  }
}

struct wthread_arg {
  struct envd_watchers *t;
  struct watcher *x;
};

static void *watcher_loop(void *arg)
{
  struct wthread_arg a = *(struct wthread_arg *)arg;
  free(arg);
  for (;;) {
    struct pollfd pf[2] = {{.fd = a.x->w.fd, .events = POLLIN},
                           {.fd = a.x->stop[0], .events = POLLIN}};
    int pr = poll(pf, 2, 1000);
    if (pr < 0 && errno != EINTR)
      break;
    if (pf[1].revents)
      break;
    if (pr > 0 && (pf[0].revents & POLLIN)) {
      pthread_mutex_lock(&a.t->mu);
      watcher_drain(a.x);
      bool failed = a.x->sticky.code != NULL;
      pthread_mutex_unlock(&a.t->mu);
      if (failed)
        break;
    }
  }
  return NULL;
}

static void watcher_free(struct watcher *x)
{
  if (x->stop[1] >= 0) {
    ssize_t w = write(x->stop[1], "x", 1);
    (void)w;
    pthread_join(x->thread, NULL);
  }
  if (x->stop[0] >= 0)
    close(x->stop[0]);
  if (x->stop[1] >= 0)
    close(x->stop[1]);
  if (x->dropped)
    fprintf(stderr, "envd: watcher %s dropped %zu events (queue limit %d)\n", x->id, x->dropped,
            ENVD_WATCH_QUEUE_MAX);
  envd_wcore_free(&x->w);
  json_decref(x->events);
  envd_err_clear(&x->sticky);
  free(x);
}

int envd_watchers_init(struct envd *e)
{
  struct envd_watchers *t = calloc(1, sizeof *t);
  if (!t)
    return -1;
  pthread_mutex_init(&t->mu, NULL);
  e->watchers = t;
  return 0;
}

void envd_watchers_shutdown(struct envd *e)
{
  struct envd_watchers *t = e->watchers;
  if (!t)
    return;
  pthread_mutex_lock(&t->mu);
  struct watcher *list = t->list;
  t->list = NULL;
  pthread_mutex_unlock(&t->mu);
  while (list) {
    struct watcher *n = list->next;
    watcher_free(list);
    list = n;
  }
  pthread_mutex_destroy(&t->mu);
  free(t);
  e->watchers = NULL;
}

int envd_rpc_create_watcher(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  struct envd_watchers *t = c->e->watchers;
  struct watcher *x = calloc(1, sizeof *x);
  if (!x)
    return envd_fail(err, "internal", "out of memory");
  x->stop[0] = x->stop[1] = -1;
  x->w.fd = -1;
  unsigned char rnd[8];
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
    free(x);
    return envd_fail(err, "internal", "cannot generate a watcher id");
  }
  snprintf(x->id, sizeof x->id, "w%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3],
           rnd[4], rnd[5], rnd[6], rnd[7]);
  if (envd_wcore_open(c, req, &x->w, err) < 0) {
    free(x);
    return -1;
  }
  x->events = json_array();
  struct wthread_arg *a = malloc(sizeof *a);
  int pr = pipe2(x->stop, O_CLOEXEC);
  if (!a || pr < 0) {
    free(a);
    if (pr < 0)
      x->stop[0] = x->stop[1] = -1;
    watcher_free(x);
    return envd_fail(err, "internal", "cannot start watcher");
  }
  a->t = t;
  a->x = x;
  if (pthread_create(&x->thread, NULL, watcher_loop, a) != 0) {
    free(a);
    close(x->stop[1]);
    x->stop[1] = -1;
    watcher_free(x);
    return envd_fail(err, "internal", "cannot start watcher thread");
  }
  pthread_mutex_lock(&t->mu);
  x->next = t->list;
  t->list = x;
  pthread_mutex_unlock(&t->mu);
  *out = json_pack("{s:s}", "watcherId", x->id);
  return 0;
}

static const char *req_id(json_t *req, struct envd_err *err)
{
  json_t *id = envd_jget(req, "watcherId", "watcher_id");
  if (!json_is_string(id)) {
    envd_fail(err, "invalid_argument", "watcherId is required");
    return NULL;
  }
  return json_string_value(id);
}

int envd_rpc_get_watcher_events(struct envd_call *c, json_t *req, json_t **out,
                                struct envd_err *err)
{
  struct envd_watchers *t = c->e->watchers;
  const char *id = req_id(req, err);
  if (!id)
    return -1;
  int rc = 0;
  pthread_mutex_lock(&t->mu);
  struct watcher *x = t->list;
  while (x && strcmp(x->id, id) != 0)
    x = x->next;
  if (!x) {
    rc = envd_fail(err, "not_found", "watcher with id %s not found", id);
  } else {
    watcher_drain(x);
    if (x->sticky.code) {
      rc = envd_fail(err, x->sticky.code, "%s", x->sticky.msg ? x->sticky.msg : "watcher failed");
    } else {
      if (x->dropped)
        fprintf(stderr, "envd: watcher %s dropped %zu oldest events (queue limit %d)\n", x->id,
                x->dropped, ENVD_WATCH_QUEUE_MAX);
      x->dropped = 0;
      *out = json_object();
      if (json_array_size(x->events)) {
        json_object_set_new(*out, "events", x->events);
        x->events = json_array();
      }
    }
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

int envd_rpc_remove_watcher(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  struct envd_watchers *t = c->e->watchers;
  const char *id = req_id(req, err);
  if (!id)
    return -1;
  pthread_mutex_lock(&t->mu);
  struct watcher **pp = &t->list;
  while (*pp && strcmp((*pp)->id, id) != 0)
    pp = &(*pp)->next;
  struct watcher *x = *pp;
  if (x)
    *pp = x->next;
  pthread_mutex_unlock(&t->mu);
  if (!x)
    return envd_fail(err, "not_found", "watcher with id %s not found", id);
  watcher_free(x);
  return 0;
}
