/*
 * core_ndjson.c: core.ndjson, streamed NDJSON response bodies (contract: docs/ENGINE.md "HTTP").
 *
 * core.ndjson(req) -> abx.stream                     yields until the response headers
 *   req: as core.request (url, headers, body sent as is, connect_to, max_body for a non-200
 *   body) with method default "POST", timeout (whole transfer) default 0 = none, plus
 *   headers_timeout (seconds from the start to the response headers; 0/nil: none),
 *   body_timeout (seconds from the headers to the end of the body; 0/nil: none) and
 *   max_line (bytes, default 16 MiB: ABX_NDJSON_MAX_LINE).
 * stream:next() -> "line", value, number | "http", body | nil      yields per line
 *   "line": the next non-empty line decoded with lua-cjson (default settings, as lib/abx uses it)
 *   to a table (a JSON object or array), with its 1-based line number; "http": the whole body
 *   of an answer whose status is not 200; nil: the body ended (a last line without "\n" is read
 *   first). stream:status() and stream:close() are those of core.stream.
 * Backpressure and memory: lines are queued by engine/http.c; beyond 8 MiB queued the transfer
 *   is paused until the reader catches up, and a line is at most max_line bytes, so a stream
 *   holds about max_line + 8 MiB whatever the server sends.
 * Raises: Protocol (a line over max_line, naming its number; a line that is not JSON or not an
 *   object or array: "line N: invalid JSON ..."), Timeout (headers_timeout, body_timeout,
 *   timeout or the task's deadline), Transport.
 * Source: docs/protocol/envd-protocol.md §10 "/execute stream" (one JSON object per line, "\n") and
 *   "Client behaviour" (requestTimeoutMs bounds the time to the headers, timeoutMs the body).
 */
#include <lauxlib.h>
#include <lua-cjson.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "errors.h"
#include "http.h"
#include "loop.h"

/* Registry key (its address) of a cjson.decode function of our own cjson instance. */
static const char decode_key = 0;

/* Continuation of stream:next for NDJSON streams: decodes a "line". The stack holds
 * [1] stream, [keep+1] ok, then "line", raw, number | "http", body | nil. [-0, +n, v] */
static int next_k(lua_State *L, int status, lua_KContext keep)
{
  (void)status;
  int base = (int)keep + 1;
  if (!lua_toboolean(L, base))
    return lua_error(L); /* the error value is on top */
  int n = lua_gettop(L) - base;
  if (n != 3)
    return n; /* "http", body | nil */
  lua_Integer number = lua_tointeger(L, base + 3);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &decode_key);
  lua_pushvalue(L, base + 2);
  int ok = lua_pcall(L, 1, 1, 0) == LUA_OK;
  if (ok && lua_type(L, -1) == LUA_TTABLE) {
    lua_replace(L, base + 2);
    return 3;
  }
  const char *what;
  struct abx_loop *loop = abx_core_stream_info(L, 1, &what);
  char msg[512];
  if (!ok) {
    const char *why = lua_tostring(L, -1);
    snprintf(msg, sizeof msg, "%s: line %lld: invalid JSON (%s)", what, (long long)number,
             why ? why : "?");
  } else {
    snprintf(msg, sizeof msg, "%s: line %lld: a JSON %s, not an object or array", what,
             (long long)number, lua_isuserdata(L, -1) ? "null" : luaL_typename(L, -1));
  }
  abx_error_push(L, loop->secrets, "Protocol", 0, msg);
  lua_pushstring(L, what);
  lua_setfield(L, -2, "request");
  return lua_error(L);
}

/* Seconds in field 'name' of the request at index 1, as milliseconds (nil: 0, none). */
static long field_ms(lua_State *L, const char *name)
{
  int ty = lua_getfield(L, 1, name);
  double s = ty == LUA_TNIL ? 0 : lua_tonumber(L, -1);
  if (ty != LUA_TNIL && (ty != LUA_TNUMBER || !(s >= 0) || s > 1e9))
    luaL_error(L, "request field '%s' must be a number of seconds >= 0", name);
  lua_pop(L, 1);
  long ms = (long)(s * 1000.0);
  return s > 0 && ms == 0 ? 1 : ms;
}

/* core.ndjson(req) -> stream. See the file comment. */
static int core_ndjson(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  abx_task_require(L, loop, "core.ndjson");
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  struct abx_core_stream_opts o = {.framing = ABX_HTTP_NDJSON, .next_k = next_k};
  if (lua_getfield(L, 1, "method") == LUA_TNIL)
    o.method = "POST";
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "timeout") == LUA_TNIL) { /* core.request's default is 60 s */
    lua_pushinteger(L, 0);
    lua_setfield(L, 1, "timeout");
  }
  lua_pop(L, 1);
  o.headers_timeout_ms = field_ms(L, "headers_timeout");
  o.body_timeout_ms = field_ms(L, "body_timeout");
  int ty = lua_getfield(L, 1, "max_line");
  lua_Integer max_line = ty == LUA_TNIL ? 0 : lua_tointeger(L, -1);
  if (ty != LUA_TNIL && (!lua_isinteger(L, -1) || max_line < 1))
    return luaL_error(L, "request field 'max_line' must be an integer >= 1");
  lua_pop(L, 1);
  o.max_line = (size_t)max_line;
  return abx_core_stream_open(L, &o);
}

void abx_core_ndjson_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushcfunction(L, luaopen_cjson); /* an instance of our own: its settings stay default */
  lua_call(L, 0, 1);
  lua_getfield(L, -1, "decode");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &decode_key);
  lua_pop(L, 1);
  lua_pushlightuserdata(L, loop);
  lua_pushcclosure(L, core_ndjson, 1);
  lua_setfield(L, -2, "ndjson");
}
