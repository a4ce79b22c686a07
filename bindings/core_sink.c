/*
 * core_sink.c: core.sink, a byte accumulator outside the Lua heap, and the fast decoder of a
 * process output event (abx_core_data_event) that stream:next_data uses (core_http.c).
 *
 * core.sink() -> abx.sink                  an empty accumulator
 * sink:add(bytes)                          appends (the string is not kept)
 * sink:len() -> integer                    bytes held
 * sink:tostring() -> string                a copy of what it holds
 * sink:take() -> string                    what it holds; the sink is empty afterwards and its
 *                                          memory is freed
 * Why: a command's output collected as a table of 32 KiB chunks and joined by table.concat held
 * the chunks, luaL_Buffer's growing box and the final string at once (about 3.5 times the output:
 * 981 MiB of RSS for 256 MiB, issue 14). A sink grows by realloc (mremap, no copy, for large
 * sizes) and take() frees it right after the one copy into the Lua string: at most twice the
 * output, for a moment.
 * Raises: a plain error "out of memory" when the buffer cannot grow.
 */
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "core.h"
#include "http.h"

#define SINK_MT "abx.sink"

struct sink {
  char *data;
  size_t len, cap;
  size_t faulted; /* data[0..faulted) was prefaulted (or is written already) */
};

/* Prefaults the next ABX_POPULATE_MIN bytes (at most up to cap) once the writes reach them: a
 * page fault per 4 KiB was a fifth of the engine's CPU collecting a 256 MiB output. Only what
 * is about to be written, never the unused tail of a doubled buffer (it would count in RSS). */
static void sink_prefault(struct sink *s, size_t upto)
{
  if (upto <= s->faulted || s->cap < ABX_POPULATE_MIN)
    return;
  size_t from = s->len > s->faulted ? s->len : s->faulted;
  size_t to = upto + ABX_POPULATE_MIN;
  if (to > s->cap)
    to = s->cap;
  if (to > from)
    abx_prefault(s->data + from, to - from);
  s->faulted = to;
}

static struct sink *sink_check(lua_State *L)
{
  return luaL_checkudata(L, 1, SINK_MT);
}

static int core_sink(lua_State *L)
{
  struct sink *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, SINK_MT);
  return 1;
}

/* Room for n more bytes at s->data + s->len (prefaulted as they are about to be written).
 * Returns 0, or -1 when the buffer cannot grow (nothing changed). */
static int sink_room(struct sink *s, size_t n)
{
  if (n > s->cap - s->len) {
    size_t cap = s->cap ? s->cap : 64 * 1024;
    while (cap - s->len < n) {
      if (cap > ((size_t)-1) / 2)
        return -1;
      cap *= 2;
    }
    char *d = realloc(s->data, cap);
    if (!d)
      return -1;
    s->data = d;
    s->cap = cap;
  }
  sink_prefault(s, s->len + n);
  return 0;
}

static int sink_add(lua_State *L)
{
  struct sink *s = sink_check(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  if (sink_room(s, n) != 0)
    return luaL_error(L, "out of memory growing an output buffer past %zu bytes", s->len + n);
  memcpy(s->data + s->len, p, n);
  s->len += n;
  return 0;
}

int abx_core_sink_b64(lua_State *L, int idx, const char *b64, size_t n)
{
  struct sink *s = luaL_testudata(L, idx, SINK_MT);
  if (!s || sink_room(s, ABX_B64_DECODED_MAX(n)) != 0)
    return 0;
  long got = abx_b64_decode((unsigned char *)s->data + s->len, b64, n, 0);
  if (got < 0)
    return 0; /* not committed: the sink is as it was */
  s->len += (size_t)got;
  return 1;
}

static int sink_len(lua_State *L)
{
  lua_pushinteger(L, (lua_Integer)sink_check(L)->len);
  return 1;
}

static int sink_tostring(lua_State *L)
{
  struct sink *s = sink_check(L);
  lua_pushlstring(L, s->data ? s->data : "", s->len);
  return 1;
}

static void sink_clear(struct sink *s)
{
  free(s->data);
  s->data = NULL;
  s->len = s->cap = s->faulted = 0;
}

static int sink_take(lua_State *L)
{
  struct sink *s = sink_check(L);
  lua_pushlstring(L, s->data ? s->data : "", s->len);
  sink_clear(s);
  return 1;
}

static int sink_gc(lua_State *L)
{
  sink_clear(sink_check(L));
  return 0;
}

static const luaL_Reg sink_methods[] = {{"add", sink_add},
                                        {"len", sink_len},
                                        {"tostring", sink_tostring},
                                        {"take", sink_take},
                                        {NULL, NULL}};

const char *abx_core_data_event(const char *p, size_t n, const char **b64, size_t *b64_len)
{
  static const char head[] = "{\"event\":{\"data\":{\"", tail[] = "\"}}}";
  static const char *const fields[] = {"stdout", "stderr", "pty"};
  const size_t hl = sizeof head - 1, tl = sizeof tail - 1;
  if (n < hl + tl || memcmp(p, head, hl) != 0 || memcmp(p + n - tl, tail, tl) != 0)
    return NULL;
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    size_t fl = strlen(fields[i]);
    if (n >= hl + fl + 3 + tl && memcmp(p + hl, fields[i], fl) == 0 &&
        memcmp(p + hl + fl, "\":\"", 3) == 0) {
      *b64 = p + hl + fl + 3;
      *b64_len = n - tl - (hl + fl + 3);
      return fields[i];
    }
  }
  return NULL;
}

void abx_core_sink_register(lua_State *L)
{
  if (luaL_newmetatable(L, SINK_MT)) {
    luaL_newlib(L, sink_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, sink_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, core_sink);
  lua_setfield(L, -2, "sink");
}
