/*
 * core_body.c: request tables and large bodies (contract: docs/ENGINE.md "HTTP").
 *
 * abx_core_read_request: the request table of core.request, core.stream, core.ndjson and
 *   core.body_stream, read into an abx_http_request (core.h). Besides `body` (a string, copied),
 *   a request can carry `body_file`: a Lua file handle (io.open(path, "rb")) that the transfer
 *   reads from its current position as curl sends, so an upload never needs its size in memory.
 *   A regular file is sent with its Content-Length (the bytes from the position to the end); a
 *   pipe is sent chunked.
 * core.body_stream(req) -> abx.stream                   yields until the response headers
 *   req: as core.request, with method default "GET", timeout default 0 (none: the task's
 *   deadline bounds it) and max_body default none (a limit, when given, is checked against the
 *   announced Content-Length at the headers and against the running count).
 * stream:next() -> "chunk", bytes | "http", body | nil                yields per chunk
 *   "chunk": the next bytes of a 200 body as they arrived (up to 256 KiB each); "http": the whole
 *   body of an answer whose status is not 200 (bounded by max_body, default 64 MiB then); nil:
 *   the body ended. stream:status() and stream:close() are those of core.stream.
 * Memory: chunks are queued by engine/http.c; beyond 8 MiB queued the transfer is paused until
 *   the reader catches up, so a body of any size costs about 8 MiB plus what the reader keeps.
 * Raises: Protocol (over max_body), Timeout, Transport; InvalidArgument (body_file is not an open
 *   file, or was closed or failed to read during the transfer).
 */
#include <errno.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core.h"
#include "errors.h"
#include "http.h"
#include "loop.h"

void abx_core_req_strings_free(struct abx_core_req_strings *rs)
{
  for (int i = 0; i < rs->n; i++)
    free(rs->headers[i]);
  rs->n = 0;
}

static int field_string(lua_State *L, int idx, const char *name, const char **out, size_t *len)
{
  int ty = lua_getfield(L, idx, name);
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (ty != LUA_TSTRING)
    luaL_error(L, "request field '%s' must be a string, got %s", name, lua_typename(L, ty));
  *out = lua_tolstring(L, -1, len);
  lua_pop(L, 1); /* the string stays alive in the request table */
  return 1;
}

/* abx_http_body_read over a luaL_Stream (a Lua file handle). A handle closed by another task
 * while the transfer runs has closef NULL: the transfer fails instead of reading a freed FILE. */
static size_t file_read(void *cookie, char *buf, size_t n, char *err, size_t errlen)
{
  luaL_Stream *ls = cookie;
  if (!ls->closef) {
    snprintf(err, errlen, "body_file was closed during the transfer");
    return ABX_HTTP_READ_ERROR;
  }
  size_t got = fread(buf, 1, n, ls->f);
  if (got == 0 && ferror(ls->f)) {
    snprintf(err, errlen, "reading body_file: %s", strerror(errno));
    return ABX_HTTP_READ_ERROR;
  }
  return got;
}

/* The body_file field of the request at 'idx', if any, into r. [-0, +0, v] */
static void read_body_file(lua_State *L, int idx, struct abx_http_request *r)
{
  if (lua_getfield(L, idx, "body_file") == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  luaL_Stream *ls = luaL_testudata(L, -1, LUA_FILEHANDLE);
  if (!ls || !ls->closef)
    abx_error_raise(L, NULL, "InvalidArgument", 0,
                    "request field 'body_file' must be an open "
                    "file handle, got %s",
                    ls ? "a closed file" : luaL_typename(L, -1));
  if (r->body)
    abx_error_raise(L, NULL, "InvalidArgument", 0, "a request has 'body' or 'body_file', not both");
  lua_pop(L, 1); /* the handle stays alive in the request table */
  r->body_read = file_read;
  r->body_cookie = ls;
  r->body_size = -1;
  struct stat st;
  off_t pos = ftello(ls->f);
  if (pos >= 0 && fstat(fileno(ls->f), &st) == 0 && S_ISREG(st.st_mode))
    r->body_size = st.st_size > pos ? (long long)(st.st_size - pos) : 0;
  r->body_len = r->body_size > 0 ? (size_t)r->body_size : 0; /* for traces */
}

void abx_core_read_request(lua_State *L, int idx, struct abx_http_request *r,
                           struct abx_core_req_strings *rs, char *what, size_t what_len)
{
  luaL_checktype(L, idx, LUA_TTABLE);
  memset(r, 0, sizeof *r);
  r->method = "GET";
  size_t n;
  field_string(L, idx, "method", &r->method, &n);
  if (!field_string(L, idx, "url", &r->url, &n))
    luaL_error(L, "request needs a 'url'");
  field_string(L, idx, "body", &r->body, &r->body_len);
  read_body_file(L, idx, r);
  field_string(L, idx, "connect_to", &r->connect_to, &n);
  lua_getfield(L, idx, "fresh_connect");
  r->fresh_connect = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, idx, "timeout");
  double timeout = luaL_optnumber(L, -1, 60);
  lua_pop(L, 1);
  r->timeout_ms = (long)(timeout * 1000.0);
  lua_getfield(L, idx, "max_body");
  r->max_body = (size_t)luaL_optinteger(L, -1, 64 * 1024 * 1024);
  lua_pop(L, 1);
  const char *q = strchr(r->url, '?'); /* queries may carry signatures: leave them out */
  snprintf(what, what_len, "%s %.*s", r->method, (int)(q ? (size_t)(q - r->url) : strlen(r->url)),
           r->url);
  if (lua_getfield(L, idx, "headers") == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      if (rs->n >= ABX_CORE_MAX_REQ_HEADERS) {
        abx_core_req_strings_free(rs);
        luaL_error(L, "request has more than %d headers", ABX_CORE_MAX_REQ_HEADERS);
      }
      const char *k = lua_tostring(L, -2), *v = lua_tostring(L, -1);
      if (!k || !v || strpbrk(k, "\r\n:") || strpbrk(v, "\r\n")) {
        abx_core_req_strings_free(rs);
        luaL_error(L, "request header names and values must be strings without CR, LF (and "
                      "no ':' in names)");
      }
      size_t len = strlen(k) + strlen(v) + 3;
      char *h = malloc(len);
      if (!h) {
        abx_core_req_strings_free(rs);
        luaL_error(L, "out of memory");
      }
      snprintf(h, len, "%s: %s", k, v);
      rs->headers[rs->n++] = h;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  rs->headers[rs->n] = NULL;
  r->headers = (const char *const *)rs->headers;
}

/* core.body_stream(req) -> stream. See the file comment. */
static int core_body_stream(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  abx_task_require(L, loop, "core.body_stream");
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  if (lua_getfield(L, 1, "timeout") == LUA_TNIL) { /* core.request's default is 60 s */
    lua_pushinteger(L, 0);
    lua_setfield(L, 1, "timeout");
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "max_body") == LUA_TNIL) { /* memory is bounded by the queue */
    lua_pushinteger(L, LUA_MAXINTEGER);
    lua_setfield(L, 1, "max_body");
  }
  lua_pop(L, 1);
  struct abx_core_stream_opts o = {.framing = ABX_HTTP_RAW};
  return abx_core_stream_open(L, &o);
}

void abx_core_body_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushlightuserdata(L, loop);
  lua_pushcclosure(L, core_body_stream, 1);
  lua_setfield(L, -2, "body_stream");
}
