/*
 * process_rpc.c: the process.Process service: List, Start, Connect, SendInput, SendSignal,
 * CloseStdin (Update and StreamInput answer `unimplemented`: no PTY yet).
 *
 * Streams (Start, Connect): HTTP 200 application/connect+json, chunked; envelopes
 *   {"event":{"start":{"pid":N}}}, then {"event":{"data":{"stdout"|"stderr":"<b64>"}}} and
 *   {"event":{"keepalive":{}}} after Keepalive-Ping-Interval seconds of silence (default 90),
 *   then {"event":{"end":{...}}}, then the end-stream envelope {} or {"error":{...}}.
 * Deadlines: Connect-Timeout-Ms on Start kills the process group when it elapses and ends the
 *   stream with deadline_exceeded after the end event; on Connect it bounds the stream only.
 *   A client that goes away unsubscribes; the process keeps running.
 * Source: reference/envd-protocol.md §4 (messages, §4.3 sequence, §4.4 semantics), §9.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "local/envd/process.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEPALIVE_DEFAULT_MS 90000
#define START_DEADLINE_GRACE_MS 5000

/* Connect-Timeout-Ms: 1..10 digits. Returns 0 (absent or 0), ms, or -1 when malformed. */
static int64_t timeout_header(struct MHD_Connection *c) {
  const char *h = envd_header(c, "Connect-Timeout-Ms");
  if (!h) return 0;
  size_t n = strlen(h);
  if (n == 0 || n > 10 || strspn(h, "0123456789") != n) return -1;
  return strtoll(h, NULL, 10);
}

static int64_t keepalive_ms(struct MHD_Connection *c) {
  const char *h = envd_header(c, "Keepalive-Ping-Interval");
  if (!h || !*h || strspn(h, "0123456789") != strlen(h) || strlen(h) > 6)
    return KEEPALIVE_DEFAULT_MS;
  long v = strtol(h, NULL, 10);
  return v > 0 ? (int64_t)v * 1000 : KEEPALIVE_DEFAULT_MS;
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
  int fd;          /* client socket, for disconnect checks */
};

static bool client_gone(int fd) {
  if (fd < 0) return false;
  struct pollfd pf = {.fd = fd, .events = POLLRDHUP};
  return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static void set_out(struct pstream *st, char *buf, size_t len) {
  free(st->out);
  st->out = buf;
  st->out_len = buf ? len : 0;
  st->out_pos = 0;
}

static void end_stream(struct pstream *st, const char *code, const char *msg) {
  struct envd_err err = {.code = code, .msg = (char *)msg};
  size_t len = 0;
  char *b = envd_end_envelope(&err, &len);
  set_out(st, b, len);
  st->phase = 2;
}

static ssize_t stream_cb(void *cls, uint64_t pos, char *buf, size_t max) {
  struct pstream *st = cls;
  while (st->out_pos >= st->out_len) {
    if (st->phase == 2 && st->out) {
      set_out(st, NULL, 0);
      return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (st->phase == 2) return MHD_CONTENT_READER_END_OF_STREAM;
    size_t len = 0;
    if (st->phase == 0) {
      json_t *j = json_pack("{s:{s:{s:I}}}", "event", "start", "pid",
                            (json_int_t)envd_proc_pid(st->p));
      char *env = envd_envelope(0, j, &len);
      set_out(st, env, len);
      json_decref(j);
      st->phase = 1;
      st->last_send = envd_now_ms();
      if (!st->out) return MHD_CONTENT_READER_END_WITH_ERROR;
      continue;
    }
    if (st->e->stopping) {
      end_stream(st, "unavailable", "envd is shutting down");
      continue;
    }
    int64_t now = envd_now_ms();
    int64_t until = st->last_send + st->keepalive;
    if (until > now + 1000) until = now + 1000;
    if (st->deadline && until > st->deadline) until = st->deadline;
    char *b = NULL;
    int rc = envd_sub_next(st->p, st->s, until, &b, &len);
    now = envd_now_ms();
    if (rc == 1) {
      set_out(st, b, len);
      st->last_send = now;
    } else if (rc == 2) {
      if (st->start_call && envd_proc_timed_out(st->p))
        end_stream(st, "deadline_exceeded", "context deadline exceeded");
      else
        end_stream(st, NULL, NULL);
    } else if (st->deadline && now >= st->deadline) {
      end_stream(st, "deadline_exceeded", "context deadline exceeded");
    } else if (client_gone(st->fd)) {
      return MHD_CONTENT_READER_END_WITH_ERROR;
    } else if (now - st->last_send >= st->keepalive) {
      json_t *j = json_pack("{s:{s:{}}}", "event", "keepalive");
      char *env = envd_envelope(0, j, &len);
      set_out(st, env, len);
      json_decref(j);
      st->last_send = now;
    }
  }
  size_t n = st->out_len - st->out_pos;
  if (n > max) n = max;
  memcpy(buf, st->out + st->out_pos, n);
  st->out_pos += n;
  return (ssize_t)n;
}

static void stream_free(void *cls) {
  struct pstream *st = cls;
  envd_proc_unsubscribe(st->p, st->s);
  envd_proc_unref(st->p);
  free(st->out);
  free(st);
}

/* Queue the stream response; takes over p and s (released on every path). */
static enum MHD_Result send_stream(struct envd_call *c, struct envd_proc *p, struct envd_sub *s,
                                   int64_t deadline, bool start_call) {
  struct pstream *st = calloc(1, sizeof *st);
  if (!st) {
    envd_proc_unsubscribe(p, s);
    envd_proc_unref(p);
    return MHD_NO;
  }
  st->e = c->e;
  st->p = p;
  st->s = s;
  st->keepalive = keepalive_ms(c->conn);
  st->deadline = deadline;
  st->start_call = start_call;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  st->fd = ci ? ci->connect_fd : -1;
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_cb, st, stream_free);
  if (!r) {
    stream_free(st);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "application/connect+json");
  enum MHD_Result ok = MHD_queue_response(c->conn, 200, r);
  MHD_destroy_response(r);
  return ok;
}

/* ---- selectors and requests -------------------------------------------------------------- */

/* ProcessSelector {pid} | {tag} → referenced proc. Errors: invalid_argument, not_found. */
static struct envd_proc *select_proc(struct envd_call *c, json_t *req, struct envd_err *err) {
  json_t *sel = envd_jget(req, "process", NULL);
  if (!json_is_object(sel)) {
    envd_fail(err, "invalid_argument", "invalid process selector");
    return NULL;
  }
  uint32_t pid = 0;
  int has_pid = envd_jget_u32(sel, "pid", NULL, &pid);
  json_t *tag = envd_jget(sel, "tag", NULL);
  if (has_pid < 0 || (tag && !json_is_string(tag))) {
    envd_fail(err, "invalid_argument", "invalid process selector");
    return NULL;
  }
  if (has_pid == 1) {
    struct envd_proc *p = envd_proc_find(c->e, pid, NULL);
    if (!p) envd_fail(err, "not_found", "process with pid %u not found", pid);
    return p;
  }
  if (tag) {
    struct envd_proc *p = envd_proc_find(c->e, 0, json_string_value(tag));
    if (!p) envd_fail(err, "not_found", "process with tag %s not found", json_string_value(tag));
    return p;
  }
  envd_fail(err, "invalid_argument", "invalid process selector");
  return NULL;
}

static int rpc_list(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err) {
  *out = envd_proc_list(c->e);
  return 0;
}

static enum MHD_Result rpc_start(struct envd_call *c, json_t *req) {
  struct envd_err err = {0};
  json_t *proc = envd_jget(req, "process", NULL);
  json_t *cmd = envd_jget(proc, "cmd", NULL), *args = envd_jget(proc, "args", NULL);
  json_t *envs = envd_jget(proc, "envs", NULL), *cwd = envd_jget(proc, "cwd", NULL);
  json_t *tag = envd_jget(req, "tag", NULL), *in = envd_jget(req, "stdin", NULL);
  json_t *config = NULL;
  const char **argv = NULL;
  char *rcwd = NULL;
  struct envd_proc *p = NULL;
  struct envd_sub *s = NULL;
  int64_t timeout = timeout_header(c->conn);
  if (timeout < 0) {
    envd_fail(&err, "invalid_argument", "invalid Connect-Timeout-Ms header");
    goto fail;
  }
  if (envd_jget(req, "pty", NULL)) {
    envd_fail(&err, "unimplemented", "pty is not supported by this envd");
    goto fail;
  }
  if (!json_is_object(proc) || !json_is_string(cmd) || !*json_string_value(cmd) ||
      (args && !json_is_array(args)) || (envs && !json_is_object(envs)) ||
      (cwd && !json_is_string(cwd)) || (tag && !json_is_string(tag)) ||
      (in && !json_is_boolean(in))) {
    envd_fail(&err, "invalid_argument", "invalid process config");
    goto fail;
  }
  size_t nargs = json_array_size(args);
  argv = calloc(nargs + 1, sizeof *argv);
  for (size_t i = 0; argv && i < nargs; i++) {
    json_t *a = json_array_get(args, i);
    if (!json_is_string(a)) {
      envd_fail(&err, "invalid_argument", "args must be strings");
      goto fail;
    }
    argv[i] = json_string_value(a);
  }
  const char *k;
  json_t *v;
  json_object_foreach(envs, k, v) {
    if (!json_is_string(v)) {
      envd_fail(&err, "invalid_argument", "envs must map strings to strings");
      goto fail;
    }
  }
  rcwd = envd_resolve_path(c->e, &c->user, cwd ? json_string_value(cwd) : "", &err);
  if (!rcwd) goto fail;
  config = json_pack("{s:O}", "cmd", cmd);
  if (nargs) json_object_set(config, "args", args);
  if (json_object_size(envs)) json_object_set(config, "envs", envs);
  if (cwd) json_object_set(config, "cwd", cwd);
  struct envd_spawn sp = {.cmd = json_string_value(cmd),
                          .args = argv,
                          .nargs = nargs,
                          .envs = envs,
                          .cwd = rcwd,
                          .config = config,
                          .tag = tag ? json_string_value(tag) : NULL,
                          .stdin_pipe = !in || json_is_true(in),
                          .user = &c->user,
                          .timeout_ms = timeout};
  p = envd_proc_spawn(c->e, &sp, &s, &err);
  if (!p) goto fail;
  json_decref(config);
  free(argv);
  free(rcwd);
  return send_stream(c, p, s, timeout ? envd_now_ms() + timeout + START_DEADLINE_GRACE_MS : 0,
                     timeout > 0);
fail:
  json_decref(config);
  free(argv);
  free(rcwd);
  enum MHD_Result ok = envd_send_stream_err(c->conn, &err);
  envd_err_clear(&err);
  return ok;
}

static enum MHD_Result rpc_connect(struct envd_call *c, json_t *req) {
  struct envd_err err = {0};
  int64_t timeout = timeout_header(c->conn);
  struct envd_proc *p = NULL;
  if (timeout < 0)
    envd_fail(&err, "invalid_argument", "invalid Connect-Timeout-Ms header");
  else
    p = select_proc(c, req, &err);
  struct envd_sub *s = p ? envd_proc_subscribe(p) : NULL;
  if (!s) {
    if (p) {
      envd_proc_unref(p);
      envd_fail(&err, "internal", "out of memory");
    }
    enum MHD_Result ok = envd_send_stream_err(c->conn, &err);
    envd_err_clear(&err);
    return ok;
  }
  return send_stream(c, p, s, timeout ? envd_now_ms() + timeout : 0, false);
}

static int rpc_send_input(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err) {
  json_t *input = envd_jget(req, "input", NULL);
  json_t *in = envd_jget(input, "stdin", NULL), *pty = envd_jget(input, "pty", NULL);
  if (!in && !pty) return envd_fail(err, "unimplemented", "invalid input type");
  if ((in && !json_is_string(in)) || (pty && !json_is_string(pty)))
    return envd_fail(err, "invalid_argument", "input must be base64 bytes");
  size_t n = 0;
  unsigned char *data = envd_b64_decode(json_string_value(in ? in : pty), &n);
  if (!data) return envd_fail(err, "invalid_argument", "input is not valid base64");
  struct envd_proc *p = select_proc(c, req, err);
  int rc = -1;
  if (p && pty)
    envd_fail(err, "internal", "error writing to tty: process has no tty");
  else if (p)
    rc = envd_proc_write_stdin(p, data, n, err);
  envd_proc_unref(p);
  free(data);
  return rc;
}

static int rpc_send_signal(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err) {
  json_t *sig = envd_jget(req, "signal", NULL);
  int signo = 0;
  if (json_is_string(sig)) {
    const char *s = json_string_value(sig);
    if (strcmp(s, "SIGNAL_SIGTERM") == 0 || strcmp(s, "15") == 0) signo = SIGTERM;
    if (strcmp(s, "SIGNAL_SIGKILL") == 0 || strcmp(s, "9") == 0) signo = SIGKILL;
  } else if (json_is_integer(sig)) {
    json_int_t v = json_integer_value(sig);
    if (v == 15) signo = SIGTERM;
    if (v == 9) signo = SIGKILL;
  }
  struct envd_proc *p = select_proc(c, req, err);
  if (!p) return -1;
  int rc = signo ? envd_proc_signal(p, signo, err)
                 : envd_fail(err, "unimplemented", "invalid signal");
  envd_proc_unref(p);
  return rc;
}

static int rpc_close_stdin(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err) {
  struct envd_proc *p = select_proc(c, req, err);
  if (!p) return -1;
  int rc = envd_proc_close_stdin(p, err);
  envd_proc_unref(p);
  return rc;
}

static int rpc_update(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err) {
  return envd_fail(err, "unimplemented", "pty is not supported by this envd");
}

static enum MHD_Result rpc_stream_input(struct envd_call *c, json_t *req) {
  struct envd_err err = {.code = "unimplemented",
                         .msg = (char *)"StreamInput is not supported by this envd"};
  return envd_send_stream_err(c->conn, &err);
}

const struct envd_method envd_process_methods[] = {
    {"List", ENVD_UNARY, rpc_list, NULL},
    {"Start", ENVD_SERVER_STREAM, NULL, rpc_start},
    {"Connect", ENVD_SERVER_STREAM, NULL, rpc_connect},
    {"Update", ENVD_UNARY, rpc_update, NULL},
    {"StreamInput", ENVD_CLIENT_STREAM, NULL, rpc_stream_input},
    {"SendInput", ENVD_UNARY, rpc_send_input, NULL},
    {"SendSignal", ENVD_UNARY, rpc_send_signal, NULL},
    {"CloseStdin", ENVD_UNARY, rpc_close_stdin, NULL},
    {NULL, ENVD_UNARY, NULL, NULL}};
