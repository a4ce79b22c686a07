/*
 * fuzz_yaml.c: libFuzzer target for the YAML config loader (bindings/yaml_lua.h, abx_yaml_push).
 *
 * One lua_State per process; each input is parsed by abx_yaml_push called from a C function under
 * lua_pcall (the way core.yaml_load runs it), then the stack is reset with lua_settop.
 * Oracles (abort() on violation):
 *   - abx_yaml_push raises no Lua error (its contract is [-0, +(0|1), m]: only memory errors);
 *   - success pushes exactly one value, failure pushes nothing and writes a non-empty,
 *     NUL-terminated message into err;
 *   - the value is made of tables, strings, numbers, booleans (a walk of it terminates: no
 *     cycles, depth bounded by the documented limit of 64).
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_lua.h"

static lua_State *L;

struct call {
  const char *text;
  size_t len;
  int rc;
  int pushed;
  char err[512];
};

static int do_push(lua_State *S)
{
  struct call *c = lua_touserdata(S, 1);
  int top = lua_gettop(S);
  memset(c->err, 0x5a, sizeof c->err); /* no NUL: a message left unterminated is caught below */
  c->rc = abx_yaml_push(S, "fuzz.yaml", c->text, c->len, c->err, sizeof c->err);
  c->pushed = lua_gettop(S) - top;
  return c->pushed > 0 ? c->pushed : 0;
}

/* Depth-first walk of the value at 'idx'; aborts on a value a YAML document cannot produce. */
static void walk(int idx, int depth)
{
  int t = lua_type(L, idx);
  if (t == LUA_TNIL || t == LUA_TBOOLEAN || t == LUA_TNUMBER || t == LUA_TSTRING)
    return;
  if (t != LUA_TTABLE || depth > 64 + 1) {
    fprintf(stderr, "fuzz_yaml: unexpected %s at depth %d\n", lua_typename(L, t), depth);
    abort();
  }
  if (!lua_checkstack(L, 4))
    abort();
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING && lua_type(L, -2) != LUA_TNUMBER) {
      fprintf(stderr, "fuzz_yaml: key of type %s\n", luaL_typename(L, -2));
      abort();
    }
    walk(-1, depth + 1);
    lua_pop(L, 1);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!L) {
    L = luaL_newstate();
    if (!L)
      abort();
    luaL_openlibs(L);
  }
  int base = lua_gettop(L);
  static struct call c;
  c.text = (const char *)data;
  c.len = size;
  c.rc = -2;
  c.pushed = -1;
  lua_pushcfunction(L, do_push);
  lua_pushlightuserdata(L, &c);
  int st = lua_pcall(L, 1, LUA_MULTRET, 0);
  if (st != LUA_OK) {
    fprintf(stderr, "fuzz_yaml: abx_yaml_push raised a Lua error (status %d): %s\n", st,
            lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
    abort();
  }
  int results = lua_gettop(L) - base;
  if (c.rc == 0) {
    if (c.pushed != 1 || results != 1) {
      fprintf(stderr, "fuzz_yaml: success pushed %d values\n", c.pushed);
      abort();
    }
    walk(-1, 0);
  } else if (c.rc == -1) {
    if (c.pushed != 0 || results != 0) {
      fprintf(stderr, "fuzz_yaml: failure left %d values on the stack\n", c.pushed);
      abort();
    }
    size_t n = strnlen(c.err, sizeof c.err);
    if (n == 0 || n == sizeof c.err) {
      fprintf(stderr, "fuzz_yaml: failure with an empty or unterminated message\n");
      abort();
    }
  } else {
    fprintf(stderr, "fuzz_yaml: abx_yaml_push returned %d\n", c.rc);
    abort();
  }
  lua_settop(L, base);
  /* A full collection frees this input's garbage now: otherwise libFuzzer sees more mallocs than
   * frees in the run and spends ~10 ms on a leak check after nearly every input. */
  lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}
