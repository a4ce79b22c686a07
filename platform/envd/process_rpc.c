/*
 * process_rpc.c: the process.Process service: List, Start (pipes or a PTY), Connect, Update
 * (PTY resize), SendInput, StreamInput (client stream, read incrementally), SendSignal,
 * CloseStdin.
 *
 * Streams (Start, Connect): the response is process_stream.c's (envd_proc_send_stream).
 * PTY:     Start with {"pty":{"size":{"cols","rows"}}} → output only as data.pty (16 KiB chunks);
 *   input {"pty":"b64"}; stdin input to a PTY process and pty input to a pipe process → internal;
 *   Update {process, pty:{size}} → TIOCSWINSZ (no tty → internal "error resizing tty");
 *   CloseStdin on a PTY → unknown.
 * StreamInput: request body = envelopes {"start":{"process":SEL}}, then {"data":{"input":
 *   {"stdin"|"pty":"b64"}}} / {"keepalive":{}}, each applied as it arrives; response (200,
 *   connect+json) one message envelope {} then end-stream {}, or a lone end-stream error.
 * Deadlines: Connect-Timeout-Ms on Start kills the process group when it elapses and ends the
 *   stream with deadline_exceeded after the end event; on Connect it bounds the stream only.
 *   A client that goes away unsubscribes; the process keeps running.
 * Source: docs/protocol/envd-protocol.md §4 (messages, §4.3 sequence, §4.4 semantics), §9.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/process.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define START_DEADLINE_GRACE_MS 5000

/* ---- selectors and requests -------------------------------------------------------------- */

/* ProcessSelector {pid} | {tag} → referenced proc. Errors: invalid_argument, not_found. */
static struct envd_proc *select_proc(struct envd_call *c, json_t *req, struct envd_err *err)
{
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
    if (!p)
      envd_fail(err, "not_found", "process with pid %u not found", pid);
    return p;
  }
  if (tag) {
    struct envd_proc *p = envd_proc_find(c->e, 0, json_string_value(tag));
    if (!p)
      envd_fail(err, "not_found", "process with tag %s not found", json_string_value(tag));
    return p;
  }
  envd_fail(err, "invalid_argument", "invalid process selector");
  return NULL;
}

static int rpc_list(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  *out = envd_proc_list(c->e);
  return 0;
}

/* A Start request's fields, checked; the JSON values are borrowed from the request. */
struct start_req {
  json_t *cmd, *args, *envs, *cwd, *tag, *in, *pty; /* NULL when absent (cmd is never) */
  uint32_t cols, rows;                              /* the pty's size */
  const char **argv;                                /* args' strings, malloc'd, NULL-ended */
  size_t nargs;
};

/* Read and check a Start request's process config, stdin, tag and pty into sr (sr->argv to
 * free, also on failure). 0, or -1 with err set (invalid_argument). */
static int start_req_read(json_t *req, struct start_req *sr, struct envd_err *err)
{
  json_t *proc = envd_jget(req, "process", NULL);
  memset(sr, 0, sizeof *sr);
  sr->cmd = envd_jget(proc, "cmd", NULL);
  sr->args = envd_jget(proc, "args", NULL);
  sr->envs = envd_jget(proc, "envs", NULL);
  sr->cwd = envd_jget(proc, "cwd", NULL);
  sr->tag = envd_jget(req, "tag", NULL);
  sr->in = envd_jget(req, "stdin", NULL);
  sr->pty = envd_jget(req, "pty", NULL);
  json_t *size = envd_jget(sr->pty, "size", NULL);
  if (sr->pty &&
      (!json_is_object(sr->pty) || envd_jget_u32(size, "cols", NULL, &sr->cols) < 0 ||
       envd_jget_u32(size, "rows", NULL, &sr->rows) < 0 || sr->cols > 65535 || sr->rows > 65535))
    return envd_fail(err, "invalid_argument", "invalid pty size");
  if (!json_is_object(proc) || !json_is_string(sr->cmd) || !*json_string_value(sr->cmd) ||
      (sr->args && !json_is_array(sr->args)) || (sr->envs && !json_is_object(sr->envs)) ||
      (sr->cwd && !json_is_string(sr->cwd)) || (sr->tag && !json_is_string(sr->tag)) ||
      (sr->in && !json_is_boolean(sr->in)))
    return envd_fail(err, "invalid_argument", "invalid process config");
  sr->nargs = json_array_size(sr->args);
  sr->argv = calloc(sr->nargs + 1, sizeof *sr->argv);
  for (size_t i = 0; sr->argv && i < sr->nargs; i++) {
    json_t *a = json_array_get(sr->args, i);
    if (!json_is_string(a))
      return envd_fail(err, "invalid_argument", "args must be strings");
    sr->argv[i] = json_string_value(a);
  }
  const char *k;
  json_t *v;
  json_object_foreach(sr->envs, k, v)
  {
    if (!json_is_string(v))
      return envd_fail(err, "invalid_argument", "envs must map strings to strings");
  }
  return 0;
}

/* The process's config as List and the start event report it: {cmd, args?, envs?, cwd?} as
 * given (not resolved). */
static json_t *start_config(const struct start_req *sr)
{
  json_t *config = json_pack("{s:O}", "cmd", sr->cmd);
  if (sr->nargs)
    json_object_set(config, "args", sr->args);
  if (json_object_size(sr->envs))
    json_object_set(config, "envs", sr->envs);
  if (sr->cwd)
    json_object_set(config, "cwd", sr->cwd);
  return config;
}

static enum MHD_Result rpc_start(struct envd_call *c, json_t *req)
{
  struct envd_err err = {0};
  struct start_req sr = {0};
  json_t *config = NULL;
  char *rcwd = NULL;
  struct envd_proc *p = NULL;
  struct envd_sub *s = NULL;
  int64_t timeout = envd_timeout_header(c->conn);
  if (timeout < 0) {
    envd_fail(&err, "invalid_argument", "invalid Connect-Timeout-Ms header");
    goto fail;
  }
  if (start_req_read(req, &sr, &err) < 0)
    goto fail;
  rcwd = envd_resolve_path(c->e, &c->user, sr.cwd ? json_string_value(sr.cwd) : "", &err);
  if (!rcwd)
    goto fail;
  config = start_config(&sr);
  struct envd_spawn sp = {.cmd = json_string_value(sr.cmd),
                          .args = sr.argv,
                          .nargs = sr.nargs,
                          .envs = sr.envs,
                          .cwd = rcwd,
                          .config = config,
                          .tag = sr.tag ? json_string_value(sr.tag) : NULL,
                          .stdin_pipe = !sr.in || json_is_true(sr.in),
                          .pty = sr.pty != NULL,
                          .cols = (uint16_t)sr.cols,
                          .rows = (uint16_t)sr.rows,
                          .user = &c->user,
                          .timeout_ms = timeout};
  p = envd_proc_spawn(c->e, &sp, &s, &err);
  if (!p)
    goto fail;
  json_decref(config);
  free(sr.argv);
  free(rcwd);
  return envd_proc_send_stream(
      c, p, s, timeout ? envd_now_ms() + timeout + START_DEADLINE_GRACE_MS : 0, timeout > 0);
fail:
  json_decref(config);
  free(sr.argv);
  free(rcwd);
  enum MHD_Result ok = envd_send_stream_err(c->conn, &err);
  envd_err_clear(&err);
  return ok;
}

static enum MHD_Result rpc_connect(struct envd_call *c, json_t *req)
{
  struct envd_err err = {0};
  int64_t timeout = envd_timeout_header(c->conn);
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
  return envd_proc_send_stream(c, p, s, timeout ? envd_now_ms() + timeout : 0, false);
}

/* Apply a ProcessInput {stdin|pty: b64} to p. Errors: unimplemented (neither), invalid_argument,
 * internal (wrong kind of input for the process, write failure). */
static int apply_input(struct envd_proc *p, json_t *input, struct envd_err *err)
{
  json_t *in = envd_jget(input, "stdin", NULL), *pty = envd_jget(input, "pty", NULL);
  if (!in && !pty)
    return envd_fail(err, "unimplemented", "invalid input type");
  if ((in && !json_is_string(in)) || (pty && !json_is_string(pty)))
    return envd_fail(err, "invalid_argument", "input must be base64 bytes");
  size_t n = 0;
  unsigned char *data = abx_b64_decode_alloc(json_string_value(in ? in : pty), 0, &n);
  if (!data)
    return envd_fail(err, "invalid_argument", "input is not valid base64");
  int rc = in ? envd_proc_write_stdin(p, data, n, err) : envd_proc_write_pty(p, data, n, err);
  free(data);
  return rc;
}

static int rpc_send_input(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  json_t *input = envd_jget(req, "input", NULL);
  json_t *in = envd_jget(input, "stdin", NULL), *pty = envd_jget(input, "pty", NULL);
  if (!in && !pty)
    return envd_fail(err, "unimplemented", "invalid input type");
  size_t n = 0;
  if ((in && !json_is_string(in)) || (pty && !json_is_string(pty)))
    return envd_fail(err, "invalid_argument", "input must be base64 bytes");
  unsigned char *probe = abx_b64_decode_alloc(json_string_value(in ? in : pty), 0, &n);
  if (!probe)
    return envd_fail(err, "invalid_argument", "input is not valid base64");
  free(probe);
  struct envd_proc *p = select_proc(c, req, err);
  if (!p)
    return -1;
  int rc = apply_input(p, input, err);
  envd_proc_unref(p);
  return rc;
}

static int rpc_send_signal(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  json_t *sig = envd_jget(req, "signal", NULL);
  int signo = 0;
  if (json_is_string(sig)) {
    const char *s = json_string_value(sig);
    if (strcmp(s, "SIGNAL_SIGTERM") == 0 || strcmp(s, "15") == 0)
      signo = SIGTERM;
    if (strcmp(s, "SIGNAL_SIGKILL") == 0 || strcmp(s, "9") == 0)
      signo = SIGKILL;
  } else if (json_is_integer(sig)) {
    json_int_t v = json_integer_value(sig);
    if (v == 15)
      signo = SIGTERM;
    if (v == 9)
      signo = SIGKILL;
  }
  struct envd_proc *p = select_proc(c, req, err);
  if (!p)
    return -1;
  int rc =
      signo ? envd_proc_signal(p, signo, err) : envd_fail(err, "unimplemented", "invalid signal");
  envd_proc_unref(p);
  return rc;
}

static int rpc_close_stdin(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  struct envd_proc *p = select_proc(c, req, err);
  if (!p)
    return -1;
  int rc = envd_proc_close_stdin(p, err);
  envd_proc_unref(p);
  return rc;
}

static int rpc_update(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  json_t *pty = envd_jget(req, "pty", NULL), *size = envd_jget(pty, "size", NULL);
  uint32_t cols = 0, rows = 0;
  if (pty && (envd_jget_u32(size, "cols", NULL, &cols) < 0 ||
              envd_jget_u32(size, "rows", NULL, &rows) < 0 || cols > 65535 || rows > 65535))
    return envd_fail(err, "invalid_argument", "invalid pty size");
  struct envd_proc *p = select_proc(c, req, err);
  if (!p)
    return -1;
  int rc = 0;
  if (pty)
    rc = envd_proc_resize(p, (uint16_t)cols, (uint16_t)rows, err);
  envd_proc_unref(p);
  return rc;
}

/* Reached only if envd.c did not route StreamInput to the incremental path below. */
static enum MHD_Result rpc_stream_input(struct envd_call *c, json_t *req)
{
  struct envd_err err = {.code = "internal", .msg = (char *)"StreamInput was not routed"};
  return envd_send_stream_err(c->conn, &err);
}

/* ---- StreamInput: client stream, applied while the request body arrives ------------------ */

struct envd_sinput {
  struct envd *e;
  struct MHD_Connection *conn;
  struct envd_call call;
  struct envd_proc *p;
  unsigned char *buf;
  size_t len, cap;
  struct envd_err err;
};

struct envd_sinput *envd_stream_input_begin(struct envd *e, struct MHD_Connection *c, bool *queued)
{
  *queued = false;
  struct envd_sinput *si = calloc(1, sizeof *si);
  if (!si) {
    *queued = true;
    envd_send_rest_err(c, 500, "out of memory");
    return NULL;
  }
  si->e = e;
  si->conn = c;
  si->call.e = e;
  si->call.conn = c;
  const char *ct = envd_header(c, "Content-Type");
  size_t n = ct ? strcspn(ct, ";") : 0;
  while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
    n--;
  if (!ct || n != 24 || strncasecmp(ct, "application/connect+json", 24) != 0) {
    static const char msg[] = "unsupported content type";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
    if (r) {
      MHD_add_response_header(r, "Accept-Post", "application/connect+json");
      MHD_queue_response(c, 415, r);
      MHD_destroy_response(r);
    }
    *queued = true;
    free(si);
    return NULL;
  }
  const char *cpv = envd_header(c, "Connect-Protocol-Version");
  if (cpv && strcmp(cpv, "1") != 0)
    envd_fail(&si->err, "invalid_argument", "connect-protocol-version must be \"1\": got \"%s\"",
              cpv);
  else
    envd_user_from_basic(e, c, &si->call.user, &si->err);
  return si;
}

static void sinput_message(struct envd_sinput *si, const unsigned char *m, size_t n)
{
  json_error_t je;
  json_t *j = n ? json_loadb((const char *)m, n, 0, &je) : NULL;
  if (!json_is_object(j)) {
    envd_fail(&si->err, "invalid_argument", "unmarshal message: %s",
              n ? "not a JSON object" : "zero-length payload is not a valid JSON object");
    json_decref(j);
    return;
  }
  json_t *start = envd_jget(j, "start", NULL), *data = envd_jget(j, "data", NULL);
  if (start) {
    struct envd_proc *p = select_proc(&si->call, start, &si->err);
    if (p) {
      envd_proc_unref(si->p);
      si->p = p;
    }
  } else if (data) {
    if (!si->p)
      envd_fail(&si->err, "failed_precondition", "the first message must be start{process}");
    else
      apply_input(si->p, envd_jget(data, "input", NULL), &si->err);
  } else if (!envd_jget(j, "keepalive", NULL)) {
    envd_fail(&si->err, "unimplemented", "invalid event type");
  }
  json_decref(j);
}

void envd_stream_input_data(struct envd_sinput *si, const char *data, size_t len)
{
  if (si->err.code)
    return; /* failed: the rest of the body is drained unread */
  if (si->len + len > si->cap) {
    size_t cap = si->cap ? si->cap : 4096;
    while (cap < si->len + len)
      cap *= 2;
    unsigned char *b = realloc(si->buf, cap);
    if (!b) {
      envd_fail(&si->err, "internal", "out of memory");
      return;
    }
    si->buf = b;
    si->cap = cap;
  }
  memcpy(si->buf + si->len, data, len);
  si->len += len;
  size_t off = 0;
  while (!si->err.code && si->len - off >= 5) {
    const unsigned char *b = si->buf + off;
    uint32_t n;
    if (envd_envelope_head(b, &n, &si->err) < 0)
      break;
    if (si->len - off - 5 < n)
      break;
    sinput_message(si, b + 5, n);
    off += 5 + (size_t)n;
  }
  if (si->err.code)
    off = si->len;
  memmove(si->buf, si->buf + off, si->len - off);
  si->len -= off;
}

void envd_stream_input_free(struct envd_sinput *si)
{
  if (!si)
    return;
  envd_proc_unref(si->p);
  envd_err_clear(&si->err);
  free(si->buf);
  free(si);
}

enum MHD_Result envd_stream_input_end(struct envd_sinput *si)
{
  if (!si->err.code && si->len > 0)
    envd_fail(&si->err, "invalid_argument", "protocol error: incomplete envelope");
  if (!si->err.code && !si->p)
    envd_fail(&si->err, "invalid_argument", "no start message in the input stream");
  enum MHD_Result ok;
  if (si->err.code) {
    ok = envd_send_stream_err(si->conn, &si->err);
  } else {
    json_t *empty = json_object();
    size_t l1 = 0, l2 = 0;
    char *m = envd_envelope(0, empty, &l1), *end = envd_end_envelope(NULL, &l2);
    char *both = m && end ? malloc(l1 + l2) : NULL;
    if (both) {
      memcpy(both, m, l1);
      memcpy(both + l1, end, l2);
    }
    ok = both ? envd_send(si->conn, 200, "application/connect+json", both, l1 + l2) : MHD_NO;
    free(both);
    free(m);
    free(end);
    json_decref(empty);
  }
  envd_stream_input_free(si);
  return ok;
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
