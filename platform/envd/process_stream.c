/*
 * process_stream.c: the server-stream response of process.Process Start and Connect, and the
 * stream helpers (Connect-Timeout-Ms, Keepalive-Ping-Interval, client gone, the queued
 * connect+json answer that WatchDir uses too).
 *
 * Streams: HTTP 200 application/connect+json, chunked; envelopes
 *   {"event":{"start":{"pid":N}}}, then {"event":{"data":{"stdout"|"stderr":"<b64>"}}} and
 *   {"event":{"keepalive":{}}} after Keepalive-Ping-Interval seconds of silence (default 90),
 *   then {"event":{"end":{...}}}, then the end-stream envelope {} or {"error":{...}}.
 * Source: docs/protocol/envd-protocol.md §4.3 (sequence), §4.4 (semantics), §2.3 (envelopes).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/mutants.h"
#include "envd/process.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEPALIVE_DEFAULT_MS 90000

int64_t envd_timeout_header(struct MHD_Connection *c)
{
  const char *h = envd_header(c, "Connect-Timeout-Ms");
  if (!h)
    return 0;
  size_t n = strlen(h);
  if (n == 0 || n > 10 || strspn(h, "0123456789") != n)
    return -1;
  return strtoll(h, NULL, 10);
}

int64_t envd_keepalive_ms(struct MHD_Connection *c)
{
  const char *h = envd_header(c, "Keepalive-Ping-Interval");
  if (!h || !*h || strspn(h, "0123456789") != strlen(h) || strlen(h) > 6)
    return KEEPALIVE_DEFAULT_MS;
  long v = strtol(h, NULL, 10);
  return v > 0 ? (int64_t)v * 1000 : KEEPALIVE_DEFAULT_MS;
}

int envd_conn_fd(struct MHD_Connection *c)
{
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  return ci ? ci->connect_fd : -1;
}

enum MHD_Result envd_queue_stream(struct MHD_Connection *c, size_t block,
                                  MHD_ContentReaderCallback cb, void *cls,
                                  MHD_ContentReaderFreeCallback free_cb)
{
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, block, cb, cls, free_cb);
  if (!r) {
    free_cb(cls);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "application/connect+json");
  enum MHD_Result ok = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ok;
}

ssize_t envd_stream_take(const char *out, size_t len, size_t *pos, char *buf, size_t max)
{
  size_t n = len - *pos;
  if (n > max)
    n = max;
  memcpy(buf, out + *pos, n);
  *pos += n;
  return (ssize_t)n;
}

/* ---- streaming response ------------------------------------------------------------------ */

struct pstream {
  struct envd *e;
  struct envd_proc *p;
  struct envd_sub *s;
  char *out;
  size_t out_len, out_pos;
  int phase; /* 0: start pending, 1: events, 2: end-stream sent */
  int64_t keepalive, last_send, deadline;
  bool start_call; /* Start with a process deadline */
  bool end_held;   /* stream-no-end (mutants.h): the end event came and was not sent */
  int fd;          /* client socket, for disconnect checks */
};

bool envd_client_gone(int fd)
{
  if (fd < 0)
    return false;
  struct pollfd pf = {.fd = fd, .events = POLLRDHUP};
  return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static void set_out(struct pstream *st, char *buf, size_t len)
{
  free(st->out);
  st->out = buf;
  st->out_len = buf ? len : 0;
  st->out_pos = 0;
}

static void end_stream(struct pstream *st, const char *code, const char *msg)
{
  struct envd_err err = {.code = code, .msg = (char *)msg};
  size_t len = 0;
  char *b = envd_end_envelope(&err, &len);
  set_out(st, b, len);
  st->phase = 2;
}

/* stream-no-end (mutants.h): the end event was held back, so nothing more comes from the process;
 * wait until until_ms or until the client hangs up (socket fd), whichever is first. Returns 0,
 * envd_sub_next's "nothing yet". */
static int idle_until(int fd, int64_t until_ms)
{
  int64_t left = until_ms - envd_now_ms();
  struct pollfd pf = {.fd = fd, .events = POLLRDHUP};
  if (left > 0)
    poll(&pf, 1, left > INT32_MAX ? INT32_MAX : (int)left);
  return 0;
}

static ssize_t stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct pstream *st = cls;
  while (st->out_pos >= st->out_len) {
    if (st->phase == 2 && st->out) {
      set_out(st, NULL, 0);
      return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (st->phase == 2)
      return MHD_CONTENT_READER_END_OF_STREAM;
    size_t len = 0;
    if (st->phase == 0) {
      json_t *j =
          json_pack("{s:{s:{s:I}}}", "event", "start", "pid", (json_int_t)envd_proc_pid(st->p));
      char *env = envd_envelope(0, j, &len);
      set_out(st, env, len);
      json_decref(j);
      st->phase = 1;
      st->last_send = envd_now_ms();
      if (!st->out)
        return MHD_CONTENT_READER_END_WITH_ERROR;
      continue;
    }
    if (st->e->stopping) {
      end_stream(st, "unavailable", "envd is shutting down");
      continue;
    }
    int64_t now = envd_now_ms();
    int64_t until = st->last_send + st->keepalive;
    /* Output and the process's end wake this wait at once; the bound is only how soon a client
     * that hung up is noticed. 1 s here was a measurable share of the CPU with 2,000 idle
     * streams (tests/load), so it is 5 s. */
    if (until > now + 5000)
      until = now + 5000;
    if (st->deadline && until > st->deadline)
      until = st->deadline;
    char *b = NULL;
    int rc =
        st->end_held ? idle_until(st->fd, until) : envd_sub_next(st->p, st->s, until, &b, &len);
    now = envd_now_ms();
    if (rc == 1 && envd_mutant_hides_end(st->e, b, len)) {
      free(b);
      st->end_held = true;
    } else if (rc == 1) {
      set_out(st, b, len);
      st->last_send = now;
    } else if (rc == 2) {
      if (st->start_call && envd_proc_timed_out(st->p))
        end_stream(st, "deadline_exceeded", "context deadline exceeded");
      else
        end_stream(st, NULL, NULL);
    } else if (st->deadline && now >= st->deadline) {
      end_stream(st, "deadline_exceeded", "context deadline exceeded");
    } else if (envd_client_gone(st->fd)) {
      return MHD_CONTENT_READER_END_WITH_ERROR;
    } else if (now - st->last_send >= st->keepalive) {
      json_t *j = json_pack("{s:{s:{}}}", "event", "keepalive");
      char *env = envd_envelope(0, j, &len);
      set_out(st, env, len);
      json_decref(j);
      st->last_send = now;
    }
  }
  return envd_stream_take(st->out, st->out_len, &st->out_pos, buf, max);
}

static void stream_free(void *cls)
{
  struct pstream *st = cls;
  envd_proc_unsubscribe(st->p, st->s);
  envd_proc_unref(st->p);
  free(st->out);
  free(st);
}

enum MHD_Result envd_proc_send_stream(struct envd_call *c, struct envd_proc *p, struct envd_sub *s,
                                      int64_t deadline, bool start_call)
{
  struct pstream *st = calloc(1, sizeof *st);
  if (!st) {
    envd_proc_unsubscribe(p, s);
    envd_proc_unref(p);
    return MHD_NO;
  }
  st->e = c->e;
  st->p = p;
  st->s = s;
  st->keepalive = envd_keepalive_ms(c->conn);
  st->deadline = deadline;
  st->start_call = start_call;
  st->fd = envd_conn_fd(c->conn);
  return envd_queue_stream(c->conn, 64 * 1024, stream_cb, st, stream_free);
}
