/*
 * fuzz_json_lua.c: libFuzzer target for the JSON -> Lua conversion abxlua uses: lua-cjson's
 * cjson.decode (default settings, as the lib/abx modules call it), preloaded the way bindings/cli.c does.
 *
 * One lua_State per process (luaL_openlibs, package.preload.cjson = luaopen_cjson). Each input is
 * decoded under pcall; when it decodes, the value is encoded again under pcall (errors such as an
 * excessively sparse array are fine) and, if that works, decoded once more, which must succeed.
 * Hostile JSON (deep nesting, huge numbers, invalid UTF-8, NUL bytes) must end in a value or a
 * Lua error, never a crash, a leak, or a stack left unbalanced.
 * Coverage: lua-cjson and liblua5.4 are Debian's uninstrumented builds (the ones abxlua links), so
 * their edges are invisible to libFuzzer and ASan sees only their malloc/free, not their reads.
 * To guide the fuzzer anyway, the outcome is fed into libFuzzer's extra counters (a section it
 * reads on Linux): the class of a decode error (its message with the digits dropped) and, for a
 * value, the (depth, type, array or object) shapes it contains.
 */
#include <lauxlib.h>
#include <lua-cjson.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static lua_State *L;
static int ref_decode, ref_encode;

#define NCOUNTERS (1u << 12)
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t counters[NCOUNTERS];

static void bump(uint32_t h)
{
  uint8_t *c = &counters[(h * 2654435761u) >> 20 & (NCOUNTERS - 1)];
  if (*c < 255)
    (*c)++;
}

/* The error's class: FNV-1a of its message without digits (positions, codes). */
static void feature_error(const char *msg)
{
  uint32_t h = 2166136261u;
  for (; msg && *msg; msg++)
    if (*msg < '0' || *msg > '9')
      h = (h ^ (unsigned char)*msg) * 16777619u;
  bump(h);
}

/* The shapes of the value at the top: (depth, Lua type, table length > 0) per node, to depth 64. */
static void feature_value(int depth)
{
  int t = lua_type(L, -1);
  bump(0x10000u | (uint32_t)(depth << 8) | (uint32_t)(t << 1) |
       (t == LUA_TTABLE && lua_rawlen(L, -1) > 0));
  if (t != LUA_TTABLE || depth >= 64 || !lua_checkstack(L, 3))
    return;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    feature_value(depth + 1);
    lua_pop(L, 1);
  }
}

static void setup(void)
{
  L = luaL_newstate();
  if (!L)
    abort();
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_cjson);
  lua_setfield(L, -2, "cjson");
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushstring(L, "cjson");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    fprintf(stderr, "fuzz_json_lua: require('cjson'): %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_getfield(L, -1, "decode");
  ref_decode = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "encode");
  ref_encode = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!L)
    setup();
  int base = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref_decode);
  lua_pushlstring(L, (const char *)data, size);
  if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
    /* base+1: the decoded value */
    feature_value(0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_encode);
    lua_pushvalue(L, base + 1);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
      if (lua_type(L, -1) != LUA_TSTRING) {
        fprintf(stderr, "fuzz_json_lua: cjson.encode returned a %s\n", luaL_typename(L, -1));
        abort();
      }
      lua_rawgeti(L, LUA_REGISTRYINDEX, ref_decode);
      lua_pushvalue(L, -2);
      if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        fprintf(stderr, "fuzz_json_lua: cjson.decode(cjson.encode(v)) failed: %s\n",
                lua_tostring(L, -1));
        abort();
      }
    }
  } else if (lua_type(L, -1) != LUA_TSTRING) {
    fprintf(stderr, "fuzz_json_lua: cjson.decode raised a %s\n", luaL_typename(L, -1));
    abort();
  } else {
    feature_error(lua_tostring(L, -1));
  }
  if (lua_gettop(L) < base + 1) {
    fprintf(stderr, "fuzz_json_lua: stack below its base\n");
    abort();
  }
  lua_settop(L, base);
  /* A full collection frees this input's garbage now: otherwise libFuzzer sees more mallocs than
   * frees in the run and spends ~10 ms on a leak check after nearly every input. */
  lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}
