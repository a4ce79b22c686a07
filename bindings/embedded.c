/*
 * embedded.c: loading the lib/abx modules compiled into the binary (embedded.h): their bytecode
 * when the running liblua is the one that wrote it, else their source. Parsing ~700 KB of Lua was
 * most of abxlua's start-up (issue 14); loading bytecode takes a fraction of that.
 */
#include "embedded.h"

#include <lauxlib.h>
#include <lua.h>
#include <string.h>

int abx_embedded_bytecode_ok(const char *built_ident, const char *runtime_ident)
{
  return built_ident && runtime_ident && strcmp(built_ident, runtime_ident) == 0;
}

int abx_embedded_load(lua_State *L, const struct abx_embedded *e, int bytecode)
{
  if (bytecode && e->bytecode && e->bytecode_size > 0) {
    if (luaL_loadbufferx(L, (const char *)e->bytecode, e->bytecode_size, e->chunkname, "b") ==
        LUA_OK)
      return LUA_OK;
    lua_pop(L, 1); /* the source compiles to the same function */
  }
  return luaL_loadbufferx(L, (const char *)e->source, e->size, e->chunkname, "t");
}
