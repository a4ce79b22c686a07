/*
 * core_httpd.c: a small HTTP/1.1 server on the event loop (libmicrohttpd), for `abxlua mcp
 * --http` (the MCP streamable HTTP transport, lib/abx/mcp/server.lua). Not a general web server:
 * whole requests in, whole responses out.
 *
 * Shapes:  core.http_server{host = "127.0.0.1", port = 0, max_body = 8 MiB} -> server
 *          server:port() -> the bound port
 *          server:accept() -> req, info | nil once the server is closed
 *            info = {method, path (the URL's path; query arguments are not kept), headers = {lower-case
 *                    name = value}, body = bytes | nil, too_large = true | nil}
 *          req:respond(status, headers {name = value}, body) -> true, or false when the client is
 *            gone (the answer is dropped)
 *          server:close()  idempotent; unanswered requests get 503
 * Model:   MHD runs in its "external" mode with epoll: its epoll fd is an abx_fdwatch of the loop,
 *          and MHD_run runs on the loop's turn (never from Lua). The access handler gathers the
 *          body, then suspends the connection (MHD_suspend_connection) and queues the request;
 *          the watch hands it to the task in accept(). respond() stores the answer and resumes the
 *          connection; MHD calls the handler again on its next run, which queues the answer.
 *          MHD's own timers (idle connections) come back as the watch's due time.
 * Units:   bytes; seconds nowhere (no timeouts besides MHD's 60 s idle connection timeout).
 * Limits:  a body over max_body is read and dropped: info.too_large is set (the caller answers
 *          413); at most 64 connections at once; headers as MHD bounds them (32 KiB pool).
 * Errors:  InvalidArgument (host not an IP literal, bad port or limit, respond twice), Transport
 *          (the address cannot be bound).
 * Source:  libmicrohttpd 0.9.75 manual, "microhttpd-flow" (suspend/resume), MHD_USE_EPOLL and
 *          MHD_DAEMON_INFO_EPOLL_FD, MHD_get_timeout, MHD_run.
 */
#include "core.h"

#include <arpa/inet.h>
#include <errno.h>
#include <lauxlib.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "loop.h"

#define SERVER_MT "abx.http_server"
#define REQ_MT "abx.http_request"

enum req_state { RECEIVING, QUEUED, RESPONDED, SENT };

struct hreq {
  struct httpd *srv;           /* NULL once the server is gone */
  struct MHD_Connection *conn; /* NULL once MHD completed the request */
  enum req_state state;
  int lua_owned; /* a Lua handle points here */
  char method[16];
  char *path;
  char *body;
  size_t len, cap;
  int too_large;
  int status; /* the answer */
  char *answer;
  size_t answer_len;
  char **headers;           /* name, value, name, value, ..., NULL */
  struct hreq *next, *prev; /* the server's live requests */
  struct hreq *qnext;       /* the queue of requests for accept() */
};

struct httpd {
  struct abx_fdwatch w; /* first: the watch callback finds the server from it */
  struct abx_wait wait;
  struct abx_loop *loop;
  struct MHD_Daemon *d;
  struct abx_task *task; /* in accept(), or NULL */
  struct hreq *live;
  struct hreq *qhead, *qtail;
  size_t max_body;
  uint16_t port;
};

struct req_handle {
  struct hreq *r;
};

static void free_req(struct hreq *r)
{
  if (r->headers)
    for (char **h = r->headers; *h; h++)
      free(*h);
  free(r->headers);
  free(r->body);
  free(r->answer);
  free(r->path);
  free(r);
}

static void unlink_req(struct hreq *r)
{
  struct httpd *s = r->srv;
  if (!s)
    return;
  if (r->prev)
    r->prev->next = r->next;
  else
    s->live = r->next;
  if (r->next)
    r->next->prev = r->prev;
  r->next = r->prev = NULL;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode code)
{
  (void)cls, (void)c, (void)code;
  struct hreq *r = *con_cls;
  if (!r)
    return;
  *con_cls = NULL;
  r->conn = NULL;
  if (r->state == QUEUED && r->srv) { /* still queued for accept(): take it out */
    struct hreq **pp = &r->srv->qhead;
    while (*pp && *pp != r)
      pp = &(*pp)->qnext;
    if (*pp) {
      *pp = r->qnext;
      if (r->srv->qtail == r) {
        r->srv->qtail = NULL;
        for (struct hreq *q = r->srv->qhead; q; q = q->qnext)
          r->srv->qtail = q;
      }
    }
  }
  unlink_req(r);
  r->srv = NULL;
  if (!r->lua_owned)
    free_req(r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
  (void)version;
  struct httpd *s = cls;
  struct hreq *r = *con_cls;
  if (!r) {
    r = calloc(1, sizeof *r);
    if (!r)
      return MHD_NO;
    r->srv = s;
    r->conn = c;
    snprintf(r->method, sizeof r->method, "%s", method);
    r->path = strdup(url);
    if (!r->path) {
      free(r);
      return MHD_NO;
    }
    r->next = s->live;
    if (s->live)
      s->live->prev = r;
    s->live = r;
    *con_cls = r;
    return MHD_YES;
  }
  if (r->state == RECEIVING && *upload_size > 0) {
    size_t n = *upload_size;
    *upload_size = 0;
    if (r->too_large || r->len + n > s->max_body) {
      r->too_large = 1; /* read on and drop, so the client gets its 413 */
      free(r->body);
      r->body = NULL;
      r->len = r->cap = 0;
      return MHD_YES;
    }
    if (r->len + n > r->cap) {
      size_t cap = r->cap ? r->cap : 4096;
      while (cap < r->len + n)
        cap *= 2;
      char *b = realloc(r->body, cap);
      if (!b)
        return MHD_NO;
      r->body = b;
      r->cap = cap;
    }
    memcpy(r->body + r->len, upload, n);
    r->len += n;
    return MHD_YES;
  }
  if (r->state == RECEIVING) { /* the whole request is in: hand it to accept() */
    r->state = QUEUED;
    if (s->qtail)
      s->qtail->qnext = r;
    else
      s->qhead = r;
    s->qtail = r;
    MHD_suspend_connection(c);
    return MHD_YES;
  }
  if (r->state == RESPONDED) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        r->answer_len, r->answer ? r->answer : (char *)"", MHD_RESPMEM_MUST_COPY);
    if (!resp)
      return MHD_NO;
    for (char **h = r->headers; h && h[0] && h[1]; h += 2)
      MHD_add_response_header(resp, h[0], h[1]);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    r->state = SENT;
    return ok;
  }
  return MHD_NO;
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
  (void)kind;
  lua_State *L = cls;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (const char *p = key; *p; p++)
    luaL_addchar(&b, (*p >= 'A' && *p <= 'Z') ? (char)(*p + 32) : *p);
  luaL_pushresult(&b);
  lua_pushstring(L, value ? value : "");
  lua_rawset(L, -3);
  return MHD_YES;
}

/* Pushes handle, info for a queued request onto 'co'. [-0, +2, m] */
static void push_request(lua_State *co, struct hreq *r)
{
  struct req_handle *h = lua_newuserdatauv(co, sizeof *h, 0);
  h->r = r;
  r->lua_owned = 1;
  luaL_setmetatable(co, REQ_MT);
  lua_createtable(co, 0, 6);
  lua_pushstring(co, r->method);
  lua_setfield(co, -2, "method");
  lua_pushstring(co, r->path);
  lua_setfield(co, -2, "path");
  lua_newtable(co);
  MHD_get_connection_values(r->conn, MHD_HEADER_KIND, add_header, co);
  lua_setfield(co, -2, "headers");
  if (r->too_large)
    lua_pushboolean(co, 1), lua_setfield(co, -2, "too_large");
  else
    lua_pushlstring(co, r->body ? r->body : "", r->len), lua_setfield(co, -2, "body");
}

/* Hands queued requests to the task in accept(). */
static void deliver(struct httpd *s)
{
  if (!s->task || !s->qhead)
    return;
  struct hreq *r = s->qhead;
  s->qhead = r->qnext;
  if (!s->qhead)
    s->qtail = NULL;
  r->qnext = NULL;
  struct abx_task *t = s->task;
  s->task = NULL;
  lua_checkstack(t->co, 6);
  lua_pushboolean(t->co, 1);
  push_request(t->co, r);
  abx_task_ready(t, 3);
}

static void schedule(struct httpd *s)
{
  MHD_UNSIGNED_LONG_LONG ms;
  s->w.due_ms = (s->d && MHD_get_timeout(s->d, &ms) == MHD_YES) ? abx_now_ms() + (double)ms + 1 : 0;
}

static void server_ready(struct abx_fdwatch *w, short revents)
{
  (void)revents;
  struct httpd *s = (struct httpd *)w;
  if (!s->d)
    return;
  MHD_run(s->d);
  deliver(s);
  schedule(s);
}

static void accept_cancel(struct abx_wait *w)
{
  struct httpd *s = (struct httpd *)((char *)w - offsetof(struct httpd, wait));
  s->task = NULL;
}

static struct httpd *server_check(lua_State *L)
{
  return luaL_checkudata(L, 1, SERVER_MT);
}

/* core.http_server(opts) -> server */
static int core_http_server(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "host");
  const char *host = luaL_optstring(L, -1, "127.0.0.1");
  lua_getfield(L, 1, "port");
  lua_Integer port = luaL_optinteger(L, -1, 0);
  lua_getfield(L, 1, "max_body");
  lua_Integer max_body = luaL_optinteger(L, -1, 8 * 1024 * 1024);
  if (port < 0 || port > 65535)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                           "http_server: port %d is "
                           "not 0..65535",
                           (int)port);
  if (max_body < 1)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                           "http_server: max_body must "
                           "be at least 1 byte");
  struct sockaddr_in a4;
  struct sockaddr_in6 a6;
  struct sockaddr *sa;
  unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
  memset(&a4, 0, sizeof a4);
  memset(&a6, 0, sizeof a6);
  if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
    a4.sin_family = AF_INET;
    a4.sin_port = htons((uint16_t)port);
    sa = (struct sockaddr *)&a4;
  } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
    a6.sin6_family = AF_INET6;
    a6.sin6_port = htons((uint16_t)port);
    sa = (struct sockaddr *)&a6;
    flags |= MHD_USE_IPv6;
  } else {
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                           "http_server: host %s is not "
                           "an IPv4 or IPv6 address",
                           host);
  }
  struct httpd *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  s->loop = loop;
  s->max_body = (size_t)max_body;
  s->w.fd = -1;
  s->w.on_ready = server_ready;
  s->wait.cancel = accept_cancel;
  luaL_setmetatable(L, SERVER_MT);
  errno = 0;
  s->d =
      MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, sa,
                       MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_LIMIT,
                       64u, MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
  if (!s->d)
    return abx_error_raise(L, loop->secrets, "Transport", 0,
                           "http_server: cannot listen on %s "
                           "port %d: %s",
                           host, (int)port, errno ? strerror(errno) : "refused");
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_EPOLL_FD);
  s->w.fd = di ? di->epoll_fd : -1;
  s->w.events = POLLIN;
  di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  s->port = di ? di->port : (uint16_t)port;
  abx_loop_watch(loop, &s->w);
  schedule(s);
  return 1;
}

static int accept_k(lua_State *L, int status, lua_KContext keep)
{
  (void)status;
  int base = (int)keep + 1;
  if (!lua_toboolean(L, base))
    return lua_error(L);
  return lua_gettop(L) - base;
}

/* server:accept() -> req, info | nil (closed). Yields until a whole request is in. */
static int server_accept(lua_State *L)
{
  struct httpd *s = server_check(L);
  lua_settop(L, 1);
  if (!s->d)
    return 0;
  struct abx_task *t = abx_task_require(L, s->loop, "server:accept");
  abx_task_check_expired(L, t);
  if (s->task)
    return luaL_error(L, "server:accept: another task is already accepting");
  if (s->qhead) { /* one already waits: same values as the resumed path */
    lua_pushboolean(L, 1);
    s->task = t;
    lua_pop(L, 1);
    struct hreq *r = s->qhead;
    s->qhead = r->qnext;
    if (!s->qhead)
      s->qtail = NULL;
    r->qnext = NULL;
    s->task = NULL;
    push_request(L, r);
    return 2;
  }
  s->task = t;
  abx_task_wait(t, &s->wait, ABX_TASK_WAITING);
  return lua_yieldk(L, 0, 1, accept_k);
}

static int server_port(lua_State *L)
{
  lua_pushinteger(L, server_check(L)->port);
  return 1;
}

static void set_answer(struct hreq *r, int status, const char *body, size_t len)
{
  r->status = status;
  free(r->answer);
  r->answer = NULL;
  r->answer_len = 0;
  if (len) {
    r->answer = malloc(len);
    if (r->answer) {
      memcpy(r->answer, body, len);
      r->answer_len = len;
    }
  }
  r->state = RESPONDED;
  MHD_resume_connection(r->conn);
  if (r->srv) /* MHD takes the connection back on its next run: make that the next turn */
    r->srv->w.due_ms = abx_now_ms();
}

static int server_close(lua_State *L)
{
  struct httpd *s = server_check(L);
  if (!s->d)
    return 0;
  /* MHD must not be stopped with suspended connections: answer them, let MHD take them back */
  for (struct hreq *r = s->live; r; r = r->next)
    if (r->state == QUEUED && r->conn)
      set_answer(r, 503, "", 0);
  s->qhead = s->qtail = NULL;
  MHD_run(s->d);
  abx_loop_unwatch(s->loop, &s->w);
  MHD_stop_daemon(s->d); /* completes every connection: on_completed frees what Lua lacks */
  s->d = NULL;
  for (struct hreq *r = s->live, *n; r; r = n) {
    n = r->next;
    r->srv = NULL;
    r->conn = NULL;
    if (!r->lua_owned)
      free_req(r);
  }
  s->live = NULL;
  if (s->task) { /* accept() returns nil */
    struct abx_task *t = s->task;
    s->task = NULL;
    lua_checkstack(t->co, 1);
    lua_pushboolean(t->co, 1);
    abx_task_ready(t, 1);
  }
  return 0;
}

/* req:respond(status, headers, body) -> true | false (the client is gone) */
static int req_respond(lua_State *L)
{
  struct req_handle *h = luaL_checkudata(L, 1, REQ_MT);
  int status = (int)luaL_checkinteger(L, 2);
  luaL_argcheck(L, status >= 100 && status <= 599, 2, "an HTTP status (100..599)");
  luaL_checktype(L, 3, LUA_TTABLE);
  size_t len;
  const char *body = luaL_optlstring(L, 4, "", &len);
  struct hreq *r = h->r;
  if (!r->conn || !r->srv) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (r->state != QUEUED)
    return luaL_error(L, "req:respond: this request was already answered");
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, 3)) {
    n++;
    lua_pop(L, 1);
  }
  char **hs = calloc((size_t)n * 2 + 1, sizeof *hs);
  int i = 0;
  lua_pushnil(L);
  while (hs && lua_next(L, 3)) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
      hs[i++] = strdup(lua_tostring(L, -2));
      hs[i++] = strdup(lua_tostring(L, -1));
    }
    lua_pop(L, 1);
  }
  r->headers = hs;
  set_answer(r, status, body, len);
  lua_pushboolean(L, 1);
  return 1;
}

static int req_gc(lua_State *L)
{
  struct req_handle *h = luaL_checkudata(L, 1, REQ_MT);
  struct hreq *r = h->r;
  if (!r)
    return 0;
  h->r = NULL;
  r->lua_owned = 0;
  if (!r->conn) {
    free_req(r);
  } else if (r->state == QUEUED) {
    set_answer(r, 500, "", 0); /* dropped without an answer: never leave the client hanging */
  }
  return 0;
}

static int server_gc(lua_State *L)
{
  return server_close(L);
}

static const luaL_Reg server_methods[] = {
    {"accept", server_accept}, {"port", server_port}, {"close", server_close}, {NULL, NULL}};
static const luaL_Reg req_methods[] = {{"respond", req_respond}, {NULL, NULL}};
static const luaL_Reg httpd_funcs[] = {{"http_server", core_http_server}, {NULL, NULL}};

void abx_core_httpd_register(lua_State *L, struct abx_loop *loop)
{
  luaL_newmetatable(L, SERVER_MT);
  lua_pushcfunction(L, server_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, server_gc);
  lua_setfield(L, -2, "__close");
  luaL_newlib(L, server_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newmetatable(L, REQ_MT);
  lua_pushcfunction(L, req_gc);
  lua_setfield(L, -2, "__gc");
  luaL_newlib(L, req_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, httpd_funcs, 1);
}
