/*
 * test_embedded.c: unit tests of bindings/embedded.h, the lib/abx modules compiled into the binary.
 *
 * Each module's embedded bytecode must be exactly what its embedded source compiles to on the
 * liblua this test runs with (lua_dump with debug information: chunk name and line numbers kept,
 * so tracebacks are the source's), and the engine must load that bytecode on this liblua and the
 * source on any other (abx_embedded_bytecode_ok); a bytecode chunk that does not load falls back
 * to the source.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "embedded.h"

struct buf {
  unsigned char *data;
  size_t len;
};

static int writer(lua_State *L, const void *p, size_t n, void *ud)
{
  (void)L;
  struct buf *b = ud;
  unsigned char *d = realloc(b->data, b->len + n);
  if (!d)
    return 1;
  memcpy(d + b->len, p, n);
  b->data = d;
  b->len += n;
  return 0;
}

/* lua_dump (debug information kept) of the function on top of the stack. */
static struct buf dump(lua_State *L)
{
  struct buf b = {0};
  if (lua_dump(L, writer, &b, 0) != 0)
    b.len = 0;
  return b;
}

int main(void)
{
  lua_State *L = luaL_newstate();
  CHECK(L != NULL);
  /* this build: the bytecode was written by the liblua the test links, so the engine uses it */
  CHECK(abx_embedded_bytecode_ok(abx_embedded_lua_ident, lua_ident));
  CHECK(strstr(abx_embedded_lua_ident, "Lua 5.4") != NULL);
  /* another release or build of liblua, or none: the source */
  CHECK(!abx_embedded_bytecode_ok(abx_embedded_lua_ident, "$LuaVersion: Lua 5.4.0  Copyright $"));
  CHECK(!abx_embedded_bytecode_ok(NULL, lua_ident));
  CHECK(!abx_embedded_bytecode_ok(abx_embedded_lua_ident, NULL));

  int n = 0, found_test = 0, found_argparse = 0;
  for (const struct abx_embedded *e = abx_embedded; e->name; e++, n++) {
    found_test |=
        strcmp(e->name, "abx.test") == 0 && strcmp(e->chunkname, "@lib/abx/test.lua") == 0;
    found_argparse |= strcmp(e->name, "argparse") == 0;
    CHECK(e->source && e->size > 0 && e->bytecode && e->bytecode_size > 0);
    /* the source compiled here dumps to the very bytes embedded */
    CHECK(luaL_loadbufferx(L, (const char *)e->source, e->size, e->chunkname, "t") == LUA_OK);
    struct buf fresh = dump(L);
    lua_settop(L, 0);
    CHECK(fresh.len == e->bytecode_size && memcmp(fresh.data, e->bytecode, fresh.len) == 0);
    if (fresh.len != e->bytecode_size)
      fprintf(stderr, "  module %s differs\n", e->name);
    free(fresh.data);
    /* the engine's loader gives a function named by the chunk name, with line information */
    CHECK(abx_embedded_load(L, e, 1) == LUA_OK && lua_isfunction(L, -1));
    lua_Debug ar;
    lua_pushvalue(L, -1);
    CHECK(lua_getinfo(L, ">S", &ar) && strcmp(ar.source, e->chunkname) == 0);
    lua_settop(L, 0);
  }
  CHECK(n > 40);
  CHECK(found_test);
  CHECK(found_argparse);

  /* a bytecode chunk that does not load (truncated): the source is loaded instead */
  struct abx_embedded cut = abx_embedded[0];
  cut.bytecode_size = cut.bytecode_size / 2;
  CHECK(abx_embedded_load(L, &cut, 1) == LUA_OK && lua_isfunction(L, -1));
  struct buf a = dump(L);
  lua_settop(L, 0);
  CHECK(a.len == abx_embedded[0].bytecode_size &&
        memcmp(a.data, abx_embedded[0].bytecode, a.len) == 0);
  free(a.data);
  /* bytecode == 0: the source, never the bytecode (a corrupt bytecode is not even looked at) */
  cut.bytecode = (const unsigned char *)"\x1bLua garbage";
  cut.bytecode_size = 12;
  CHECK(abx_embedded_load(L, &cut, 0) == LUA_OK && lua_isfunction(L, -1));
  lua_settop(L, 0);
  /* a source that does not compile is an error, with the compiler's message */
  struct abx_embedded bad = {"bad", "@lib/abx/bad.lua", (const unsigned char *)"local = 1", 9, NULL,
                             0};
  CHECK(abx_embedded_load(L, &bad, 1) == LUA_ERRSYNTAX);
  CHECK_CONTAINS(lua_tostring(L, -1), "lib/abx/bad.lua:1:");
  lua_close(L);
  return check_report();
}
