/*
 * core_http.c: core.request and core.stream (contract: docs/ENGINE.md "HTTP").
 *
 * core.request(req) -> { status, headers, body }          yields until the transfer ends
 * core.stream(req)  -> abx.stream                          yields until the response headers
 * (request tables and core.body_stream, a body read in chunks: bindings/core_body.c)
 * stream:next()     -> "message"|"end", json | "http", body | nil      yields per envelope
 * stream:next_data([out, err]) -> as next, but a process output event
 *                      {"event":{"data":{F:"<b64>"}}} in envd's compact form comes decoded:
 *                      "data", F, bytes (F "stdout", "stderr" or "pty"); with the core.sink `out`
 *                      (for stdout and pty) or `err` (stderr) the bytes are decoded straight into
 *                      it and "data", F, nil comes back; any other message, or text that is not
 *                      base64, comes as "message", json for the caller's own checks
 * stream:held_peak() -> the most bytes the stream held at once (queue, partial message, decode
 *                      buffer): the engine's own accounting of what a stream keeps
 * Raises: Transport (connection failed), Timeout (transfer or task deadline), Protocol (body
 * over max_body, headers over 256 KiB, malformed envelopes, truncated stream).
 * NDJSON streams (core.ndjson, bindings/core_ndjson.c) are the same abx.stream, opened through
 * abx_core_stream_open with their own framing and stream:next continuation.
 * Source: docs/protocol/envd-protocol.md §2.3 (envelopes), §2.1 (content types).
 */
#include <errno.h>
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base64.h"
#include "core.h"
#include "errors.h"
#include "http.h"
#include "loop.h"
#include "secrets.h"

#define STREAM_MT "abx.stream"

enum op_kind { OP_REQUEST, OP_STREAM };
enum stream_wait { SW_NONE, SW_OPEN, SW_NEXT };

/* One in-flight plain request, owned by the waiting task until it completes or is cancelled. */
struct request_op {
  struct abx_wait wait; /* first: the loop hands us back this pointer */
  enum op_kind kind;
  struct abx_loop *loop;
  struct abx_task *task;
  struct abx_transfer *t;
  char what[160];                      /* "METHOD url" for error messages (masked when raised) */
  char trace_what[ABX_TRACE_WHAT_MAX]; /* "[test] METHOD url?query" for -vv traces */
  double started_ms;                   /* for traces */
};

/* A Connect stream: a userdata that outlives single waits. */
struct stream {
  struct abx_wait wait;
  enum op_kind kind;
  struct abx_loop *loop;
  struct abx_transfer *t; /* NULL once closed */
  int in_multi;
  struct abx_task *waiter;
  enum stream_wait waiting;
  int finished;               /* nil was returned: nothing more to read */
  struct stream *prev, *next; /* loop->streams list of open streams */
  lua_KFunction next_k;       /* continuation of stream:next: builds its results */
  char what[160];
  char trace_what[ABX_TRACE_WHAT_MAX]; /* "[test] METHOD url?query" for -vv traces */
  double started_ms;                   /* for traces */
  int traced;                          /* the answer's headers were traced */
  int ready_run;          /* stream:next calls answered from the queue without yielding */
  int want_data;          /* the waiting call is next_data: decode output events here */
  unsigned char *scratch; /* next_data's decode buffer, reused */
  size_t scratch_cap;
  size_t held_peak;    /* the transfer's held_peak, kept when the transfer is freed */
  size_t scratch_peak; /* the largest scratch_cap, kept when scratch is freed */
};

/* After this many stream:next calls in a row answered from the queue, the task yields once so
 * that a fast stream cannot keep every other test from running until its 8 MiB queue drains
 * (seen: a flood of 1 KiB lines held the loop for most of a minute under ASan). */
#define STREAM_READY_RUN_MAX 64

static const char *failure_kind(enum abx_http_failure f)
{
  switch (f) {
  case ABX_HTTP_ETIMEOUT: return "Timeout";
  case ABX_HTTP_ETRANSPORT: return "Transport";
  case ABX_HTTP_ESOURCE: return "InvalidArgument";
  default: return "Protocol";
  }
}

/* Pushes (false, error) for a failed transfer onto 'co'. [-0, +2, m] */
static void push_failure(lua_State *co, struct abx_loop *loop, const char *what,
                         struct abx_transfer *t, const char *kind, const char *msg)
{
  char buf[512];
  snprintf(buf, sizeof buf, "%s: %s", what, msg ? msg : t->error);
  lua_pushboolean(co, 0);
  abx_error_push(co, loop->secrets, kind ? kind : failure_kind(t->failure), 0, buf);
  lua_pushstring(co, what);
  lua_setfield(co, -2, "request");
}

static void push_headers(lua_State *co, struct abx_transfer *t)
{
  lua_createtable(co, 0, (int)t->nheaders);
  for (size_t i = 0; i < t->nheaders; i++) {
    if (lua_getfield(co, -1, t->headers[i].name) == LUA_TNIL) { /* first value wins */
      lua_pop(co, 1);
      lua_pushstring(co, t->headers[i].value);
      lua_setfield(co, -2, t->headers[i].name);
    } else {
      lua_pop(co, 1);
    }
  }
}

static void loop_remove(struct abx_loop *loop, struct abx_transfer *t)
{
  curl_multi_remove_handle(loop->multi, t->easy);
  loop->transfers--;
}

static void request_cancel(struct abx_wait *w)
{
  struct request_op *op = (struct request_op *)w;
  loop_remove(op->loop, op->t);
  abx_transfer_free(op->t);
  free(op);
}

static void request_done(struct request_op *op, CURLcode rc)
{
  struct abx_transfer *t = op->t;
  lua_State *co = op->task->co;
  abx_transfer_finish(t, rc);
  loop_remove(op->loop, t);
  abx_trace_answer(op->loop, op->trace_what, t, op->started_ms);
  lua_checkstack(co, 4);
  if (t->failure != ABX_HTTP_OK) {
    push_failure(co, op->loop, op->what, t, NULL, NULL);
  } else {
    lua_pushboolean(co, 1);
    lua_createtable(co, 0, 3);
    lua_pushinteger(co, t->status);
    lua_setfield(co, -2, "status");
    push_headers(co, t);
    lua_setfield(co, -2, "headers");
    lua_pushlstring(co, t->body.data ? t->body.data : "", t->body.len);
    lua_setfield(co, -2, "body");
  }
  abx_task_ready(op->task, 2);
  abx_transfer_free(t);
  free(op);
}

/* ---- streams ---------------------------------------------------------------------------- */

static void stream_unlink(struct stream *s)
{
  struct abx_loop *loop = s->loop;
  if (s->prev)
    s->prev->next = s->next;
  else if (loop->streams == s)
    loop->streams = s->next;
  if (s->next)
    s->next->prev = s->prev;
  s->prev = s->next = NULL;
}

static void stream_release(struct stream *s)
{
  if (!s->t)
    return;
  if (s->in_multi)
    loop_remove(s->loop, s->t);
  s->in_multi = 0;
  if (s->t->held_peak > s->held_peak)
    s->held_peak = s->t->held_peak;
  abx_transfer_free(s->t);
  s->t = NULL;
  stream_unlink(s);
}

/* The waiting task gave up (deadline): the stream stays usable, only the wait ends. */
static void stream_cancel(struct abx_wait *w)
{
  struct stream *s = (struct stream *)w;
  s->waiter = NULL;
  s->waiting = SW_NONE;
}

/* stream:next_data's fast path: when 'm' is a process output event in envd's compact form whose
 * text is base64, pushes (true, "data", field, bytes) onto 'co' and returns 1 (bytes nil when
 * they were decoded into the call's sink for that field); otherwise 0 and nothing is pushed (the message then goes to Lua as JSON, whose checks name what is wrong). This
 * skips a Lua string of the JSON, its decode into a table and a Lua string of the base64 text per
 * 32 KiB chunk (issue 14: those were most of the client's CPU on a large output). */
static int push_data(struct stream *s, lua_State *co, const struct abx_stream_msg *m)
{
  const char *b64;
  size_t n;
  const char *field = abx_core_data_event(m->data, m->len, &b64, &n);
  if (!field || m->flags)
    return 0;
  /* the call's sinks are uservalues 3 (stdout, pty) and 4 (stderr) of the stream, which is at
   * index 1 of the waiting call (stream_wait leaves only it on the stack) */
  lua_checkstack(co, 6);
  lua_getiuservalue(co, 1, strcmp(field, "stderr") == 0 ? 4 : 3);
  int sunk = abx_core_sink_b64(co, -1, b64, n);
  lua_pop(co, 1);
  if (sunk) {
    lua_pushboolean(co, 1);
    lua_pushliteral(co, "data");
    lua_pushstring(co, field);
    lua_pushnil(co);
    return 1;
  }
  size_t need = ABX_B64_DECODED_MAX(n);
  if (need > s->scratch_cap) {
    unsigned char *b = realloc(s->scratch, need);
    if (!b)
      return 0;
    s->scratch = b;
    s->scratch_cap = need;
    if (need > s->scratch_peak)
      s->scratch_peak = need;
  }
  long got = abx_b64_decode(s->scratch, b64, n, 0);
  if (got < 0)
    return 0;
  lua_pushboolean(co, 1);
  lua_pushliteral(co, "data");
  lua_pushstring(co, field);
  lua_pushlstring(co, (const char *)s->scratch, (size_t)got);
  return 1;
}

/* Pushes the answer for a task waiting on 's' if one is available. Returns the number of values
 * pushed onto 'co' (0: nothing yet). Used both before yielding and from the loop. */
static int stream_try(struct stream *s, lua_State *co, enum stream_wait mode)
{
  struct abx_transfer *t = s->t;
  lua_checkstack(co, 4);
  if (!t) {
    lua_pushboolean(co, 0);
    abx_error_push(co, s->loop->secrets, "Protocol", 0, "stream is closed");
    return 2;
  }
  if (mode == SW_OPEN) {
    if (t->headers_done) {
      if (!s->traced) {
        s->traced = 1;
        abx_trace_answer(s->loop, s->trace_what, t, s->started_ms);
      }
      lua_pushboolean(co, 1);
      return 1;
    }
    if (t->done) {
      push_failure(co, s->loop, s->what, t, NULL,
                   t->failure == ABX_HTTP_OK ? "no response headers" : NULL);
      return 2;
    }
    return 0;
  }
  if (s->finished) {
    lua_pushboolean(co, 1);
    lua_pushnil(co);
    return 2;
  }
  if (t->status == 200 && t->q_head) {
    struct abx_stream_msg *m = abx_transfer_pop(t);
    if (s->want_data && t->streaming == ABX_HTTP_CONNECT && push_data(s, co, m)) {
      free(m);
      return 4;
    }
    int ndjson = t->streaming == ABX_HTTP_NDJSON;
    lua_pushboolean(co, 1);
    lua_pushstring(co, ndjson                              ? "line"
                       : t->streaming == ABX_HTTP_RAW      ? "chunk"
                       : (m->flags & ABX_CONNECT_FLAG_END) ? "end"
                                                           : "message");
    lua_pushlstring(co, m->data, m->len);
    if (ndjson)
      lua_pushinteger(co, (lua_Integer)m->seq);
    if (m->flags & ABX_CONNECT_FLAG_END)
      s->finished = 1;
    free(m);
    return ndjson ? 4 : 3;
  }
  if (!t->done)
    return 0;
  if (t->failure != ABX_HTTP_OK) {
    push_failure(co, s->loop, s->what, t, NULL, NULL);
    return 2;
  }
  if (t->status != 200) {
    s->finished = 1;
    lua_pushboolean(co, 1);
    lua_pushliteral(co, "http");
    lua_pushlstring(co, t->body.data ? t->body.data : "", t->body.len);
    return 3;
  }
  if (t->streaming == ABX_HTTP_NDJSON || t->streaming == ABX_HTTP_RAW) { /* ended cleanly */
    s->finished = 1;
    lua_pushboolean(co, 1);
    lua_pushnil(co);
    return 2;
  }
  push_failure(co, s->loop, s->what, t, "Protocol",
               abx_connect_partial(&t->decoder) ? "stream truncated inside an envelope"
                                                : "stream ended without an end-of-stream envelope");
  return 2;
}

static void deliver_streams(struct abx_loop *loop)
{
  for (struct stream *s = loop->streams; s; s = s->next) {
    if (!s->t || !s->t->dirty || !s->waiter)
      continue;
    s->t->dirty = 0;
    struct abx_task *task = s->waiter;
    int n = stream_try(s, task->co, s->waiting);
    if (n > 0) {
      s->waiter = NULL;
      s->waiting = SW_NONE;
      abx_task_ready(task, n);
    }
  }
}

static void on_done(struct abx_loop *loop, CURLMsg *msg)
{
  char *priv = NULL;
  curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
  struct abx_transfer *t = (struct abx_transfer *)priv;
  if (!t || !t->owner)
    return;
  /* request_op and stream both start with (struct abx_wait, enum op_kind) */
  enum op_kind kind = ((struct request_op *)t->owner)->kind;
  if (kind == OP_REQUEST) {
    request_done(t->owner, msg->data.result);
    return;
  }
  struct stream *s = t->owner;
  abx_transfer_finish(t, msg->data.result);
  loop_remove(loop, t);
  s->in_multi = 0;
}

/* ---- requests ---------------------------------------------------------------------------- */

static int request_k(lua_State *L, int status, lua_KContext keep)
{
  (void)status;
  int base = (int)keep + 1;
  if (!lua_toboolean(L, base))
    return lua_error(L);
  return lua_gettop(L) - base;
}

static struct abx_transfer *start_transfer(lua_State *L, struct abx_loop *loop,
                                           struct abx_http_request *r,
                                           struct abx_core_req_strings *rs)
{
  struct abx_transfer *t = abx_transfer_new(r);
  abx_core_req_strings_free(rs);
  if (!t)
    luaL_error(L, "out of memory starting a transfer");
  if (curl_multi_add_handle(loop->multi, t->easy) != CURLM_OK) {
    abx_transfer_free(t);
    luaL_error(L, "curl refused the transfer");
  }
  loop->transfers++;
  return t;
}

/* core.request(req) -> resp. See the file comment. */
static int core_request(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  struct abx_task *task = abx_task_require(L, loop, "core.request");
  struct abx_http_request r;
  struct abx_core_req_strings rs = {.n = 0};
  char what[160];
  abx_core_read_request(L, 1, &r, &rs, what, sizeof what); /* may raise: nothing allocated yet */
  r.body_borrowed = 1; /* the string is anchored on this task's stack below until the end */
  char trace_what[ABX_TRACE_WHAT_MAX];
  abx_trace_what(L, 1, r.method, r.url, trace_what, sizeof trace_what);
  abx_trace_request(loop, trace_what, r.headers, r.body_len);
  struct abx_transfer *t = start_transfer(L, loop, &r, &rs);
  struct request_op *op = calloc(1, sizeof *op);
  if (!op) {
    loop_remove(loop, t);
    abx_transfer_free(t);
    return luaL_error(L, "out of memory");
  }
  memcpy(op->what, what, sizeof what);
  memcpy(op->trace_what, trace_what, sizeof trace_what);
  op->started_ms = abx_now_ms();
  op->wait.cancel = request_cancel;
  op->kind = OP_REQUEST;
  op->loop = loop;
  op->task = task;
  op->t = t;
  t->owner = op;
  lua_settop(L, 1); /* the request table keeps a body_file alive until the transfer ends */
  lua_getfield(L, 1, "body"); /* and the borrowed body, even if the table's field is replaced */
  abx_task_wait(task, &op->wait, ABX_TASK_WAITING);
  return lua_yieldk(L, 0, 2, request_k);
}

static struct stream *stream_check(lua_State *L, int idx)
{
  return luaL_checkudata(L, idx, STREAM_MT);
}

/* Continuation of core.stream: on success the result is the stream itself (stack index 1). */
static int open_k(lua_State *L, int status, lua_KContext keep)
{
  (void)status;
  if (!lua_toboolean(L, (int)keep + 1))
    return lua_error(L);
  lua_settop(L, 1);
  return 1;
}

static int next_again_k(lua_State *L, int status, lua_KContext ctx);

/* Waits on stream 's' (at stack index 1) in 'mode'; returns results directly when ready. */
static int stream_wait(lua_State *L, struct stream *s, enum stream_wait mode)
{
  struct abx_task *task = abx_task_require(L, s->loop, "stream:next");
  if (s->waiter)
    return luaL_error(L, "another task is already waiting on this stream");
  lua_settop(L, 1);
  lua_KFunction k = mode == SW_OPEN ? open_k : s->next_k;
  if (mode == SW_NEXT && s->ready_run >= STREAM_READY_RUN_MAX) {
    s->ready_run = 0;
    return lua_yieldk(L, 0, 0, next_again_k); /* a cooperative pause: see resume_task */
  }
  int n = stream_try(s, L, mode);
  if (n > 0) {
    s->ready_run++;
    return k(L, LUA_OK, 1);
  }
  s->ready_run = 0;
  s->waiter = task;
  s->waiting = mode;
  abx_task_wait(task, &s->wait, ABX_TASK_WAITING);
  return lua_yieldk(L, 0, 1, k);
}

/* See core.h. The request table is at index 1; the stream is returned once its headers arrived. */
int abx_core_stream_open(lua_State *L, const struct abx_core_stream_opts *o)
{
  struct abx_loop *loop = abx_core_loop(L);
  struct stream *s = lua_newuserdatauv(L, sizeof *s, 4); /* request, body, next_data's sinks */
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, STREAM_MT);
  lua_insert(L, 1);    /* stream req */
  lua_pushvalue(L, 2); /* the stream keeps its request (and any body_file) alive */
  lua_setiuservalue(L, 1, 1);
  s->wait.cancel = stream_cancel;
  s->kind = OP_STREAM;
  s->loop = loop;
  s->next_k = o->next_k ? o->next_k : request_k;
  struct abx_http_request r;
  struct abx_core_req_strings rs = {.n = 0};
  abx_core_read_request(L, 2, &r, &rs, s->what, sizeof s->what);
  lua_getfield(L, 2, "body"); /* the borrowed body stays alive with the stream */
  lua_setiuservalue(L, 1, 2);
  r.body_borrowed = 1;
  r.streaming = o->framing;
  r.max_line = o->max_line;
  r.headers_timeout_ms = o->headers_timeout_ms;
  r.body_timeout_ms = o->body_timeout_ms;
  if (o->content_type && rs.n < ABX_CORE_MAX_REQ_HEADERS) {
    size_t len = strlen(o->content_type) + sizeof "Content-Type: ";
    rs.headers[rs.n] = malloc(len);
    if (!rs.headers[rs.n]) {
      abx_core_req_strings_free(&rs);
      return luaL_error(L, "out of memory");
    }
    snprintf(rs.headers[rs.n], len, "Content-Type: %s", o->content_type);
    rs.headers[++rs.n] = NULL;
  }
  if (o->method)
    r.method = o->method;
  snprintf(s->what, sizeof s->what, "%s %s", r.method, r.url);
  if (strchr(s->what, '?'))
    *strchr(s->what, '?') = '\0';
  abx_trace_what(L, 2, r.method, r.url, s->trace_what, sizeof s->trace_what);
  abx_trace_request(loop, s->trace_what, r.headers, r.body_len);
  s->started_ms = abx_now_ms();
  s->t = start_transfer(L, loop, &r, &rs);
  s->t->owner = s;
  s->in_multi = 1;
  s->next = loop->streams;
  if (s->next)
    ((struct stream *)s->next)->prev = s;
  loop->streams = s;
  return stream_wait(L, s, SW_OPEN);
}

/* See core.h. [-0, +0, v] */
struct abx_loop *abx_core_stream_info(lua_State *L, int idx, const char **what)
{
  struct stream *s = luaL_checkudata(L, idx, STREAM_MT);
  *what = s->what;
  return s->loop;
}

/* core.stream(req) -> stream. req.message is the JSON request message (one envelope). */
static int core_stream(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  abx_task_require(L, loop, "core.stream");
  luaL_checktype(L, 1, LUA_TTABLE);
  size_t mlen;
  lua_getfield(L, 1, "message");
  const char *msg = luaL_optlstring(L, -1, "{}", &mlen);
  if (mlen > ABX_CONNECT_MAX_MSG)
    return luaL_error(L, "stream request message over %d bytes", ABX_CONNECT_MAX_MSG);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  unsigned char prefix[5];
  abx_connect_prefix(prefix, 0, (uint32_t)mlen);
  luaL_addlstring(&b, (const char *)prefix, 5);
  luaL_addlstring(&b, msg, mlen);
  luaL_pushresult(&b);
  lua_setfield(L, 1, "body"); /* the request table carries the envelope as its body */
  lua_settop(L, 1);
  struct abx_core_stream_opts o = {
      .framing = ABX_HTTP_CONNECT, .method = "POST", .content_type = "application/connect+json"};
  return abx_core_stream_open(L, &o);
}

/* stream:next() -> kind, payload | nil. See the file comment. */
static int stream_next(lua_State *L)
{
  struct stream *s = stream_check(L, 1);
  s->want_data = 0;
  return stream_wait(L, s, SW_NEXT);
}

/* stream:next_data([out, err]) -> "data", field, bytes|nil | as stream:next. See the file
 * comment. */
static int stream_next_data(lua_State *L)
{
  struct stream *s = stream_check(L, 1);
  lua_settop(L, 3);
  lua_setiuservalue(L, 1, 4);
  lua_setiuservalue(L, 1, 3);
  s->want_data = 1;
  return stream_wait(L, s, SW_NEXT);
}

/* stream:next resumed after its cooperative pause: the stream is still at index 1. */
static int next_again_k(lua_State *L, int status, lua_KContext ctx)
{
  (void)status, (void)ctx;
  return stream_wait(L, stream_check(L, 1), SW_NEXT); /* want_data as the call set it */
}

/* stream:status() -> HTTP status (0 before headers). */
static int stream_status(lua_State *L)
{
  struct stream *s = stream_check(L, 1);
  lua_pushinteger(L, s->t ? s->t->status : 0);
  return 1;
}

/* stream:held_peak() -> bytes: the most this stream held at once for its consumer (the
 * transfer's queued messages and partial message, engine/http.h abx_transfer_held) plus the
 * largest decode buffer of next_data; still answers after close. No yield. */
static int stream_held_peak(lua_State *L)
{
  struct stream *s = stream_check(L, 1);
  size_t peak = s->held_peak;
  if (s->t && s->t->held_peak > peak)
    peak = s->t->held_peak;
  lua_pushinteger(L, (lua_Integer)(peak + s->scratch_peak));
  return 1;
}

/* stream:close(): cancels the transfer. Idempotent; also __gc and __close. No yield. */
static int stream_close(lua_State *L)
{
  struct stream *s = stream_check(L, 1);
  if (s->waiter) {
    struct abx_task *w = s->waiter;
    s->waiter = NULL;
    abx_task_abort(w, "Protocol", "stream closed while a task was waiting on it");
  }
  stream_release(s);
  free(s->scratch);
  s->scratch = NULL;
  s->scratch_cap = 0;
  return 0;
}

static const luaL_Reg stream_methods[] = {
    {"next", stream_next},           {"next_data", stream_next_data}, {"status", stream_status},
    {"held_peak", stream_held_peak}, {"close", stream_close},         {NULL, NULL}};
/* The metamethods live on the metatable alone: a stream's fields are its methods, so s.__gc is
 * nil (a finalizer is not a method a scenario may call). */
static const luaL_Reg stream_meta[] = {
    {"__index", NULL}, /* placeholder: becomes the methods table */
    {"__gc", stream_close},
    {"__close", stream_close},
    {NULL, NULL}};

/* core.set_trace(level): 0 off, 1 request/answer lines with headers, 2 also body excerpts.
 * Everything goes through the secrets registry. */
static int core_set_trace(lua_State *L)
{
  abx_core_loop(L)->trace = (int)luaL_checkinteger(L, 1);
  return 0;
}

/* core.set_ca_file(path | nil): the CA bundle every later HTTPS transfer verifies servers with
 * (engine/http.h abx_http_set_ca_file); nil: curl's default again. Raises InvalidArgument for a
 * file that cannot be read or a path too long. */
static int core_set_ca_file(lua_State *L)
{
  const char *path = luaL_optstring(L, 1, NULL);
  struct abx_loop *loop = abx_core_loop(L);
  if (path && access(path, R_OK) != 0)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0, "CA file %s: %s", path,
                           strerror(errno));
  if (abx_http_set_ca_file(path) != 0)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0, "CA file path over %d bytes",
                           ABX_HTTP_MAX_CA_PATH - 1);
  return 0;
}

static const luaL_Reg http_funcs[] = {{"request", core_request},
                                      {"stream", core_stream},
                                      {"set_trace", core_set_trace},
                                      {"set_ca_file", core_set_ca_file},
                                      {NULL, NULL}};

void abx_core_http_register(lua_State *L, struct abx_loop *loop)
{
  loop->on_done_msg = on_done;
  loop->after_perform = deliver_streams;
  if (luaL_newmetatable(L, STREAM_MT)) { /* mt */
    lua_pushlightuserdata(L, loop);
    luaL_setfuncs(L, stream_meta, 1);
    luaL_newlibtable(L, stream_methods); /* mt methods */
    lua_pushlightuserdata(L, loop);
    luaL_setfuncs(L, stream_methods, 1);
    lua_setfield(L, -2, "__index"); /* mt */
  }
  lua_pop(L, 1);
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, http_funcs, 1);
  abx_core_body_register(L, loop);
}
