/*
 * fuzz_select.c: libFuzzer target for the -k/-m selection-expression parser (lib/abx/run/select.lua).
 *
 * The module is loaded from the table the engine embeds (bindings/embedded.h, "abx.run.select") into
 * one lua_State per process. Each input is compiled twice under pcall, as
 * select.compile(input, "k", {e2e=true}) and select.compile(input, "m", {e2e=true}); a compiled
 * predicate is then evaluated on two sample tests. Errors are expected and fine; a crash, a
 * non-string error, or an input that hangs (libFuzzer -timeout) is a finding.
 * Coverage: the Lua VM is Debian's uninstrumented build, so a line hook feeds Lua line-to-line
 * transitions of the Lua code into libFuzzer's extra counters (a section libFuzzer reads on
 * Linux): mutations that reach new paths of select.lua are kept in the corpus.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embedded.h"

#define NCOUNTERS (1u << 14)
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t counters[NCOUNTERS];
static unsigned prev_line;

static void line_hook(lua_State *S, lua_Debug *ar)
{
  unsigned line = (unsigned)ar->currentline;
  unsigned i = ((prev_line * 2654435761u) ^ line) & (NCOUNTERS - 1);
  if (counters[i] < 255)
    counters[i]++;
  prev_line = line;
}

static lua_State *L;
static int ref_compile;

static void setup(void)
{
  L = luaL_newstate();
  if (!L)
    abort();
  luaL_openlibs(L);
  const struct abx_embedded *e = abx_embedded;
  while (e->name && strcmp(e->name, "abx.run.select") != 0)
    e++;
  if (!e->name) {
    fprintf(stderr, "fuzz_select: abx.run.select is not embedded\n");
    abort();
  }
  if (luaL_loadbuffer(L, (const char *)e->source, e->size, e->chunkname) != LUA_OK ||
      lua_pcall(L, 0, 1, 0) != LUA_OK || !lua_istable(L, -1)) {
    fprintf(stderr, "fuzz_select: loading abx.run.select: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_getfield(L, -1, "compile");
  if (!lua_isfunction(L, -1))
    abort();
  ref_compile = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  lua_sethook(L, line_hook, LUA_MASKLINE, 0);
}

static void push_test(const char *name, const char *marker)
{
  lua_createtable(L, 0, 2);
  lua_pushstring(L, name);
  lua_setfield(L, -2, "name");
  lua_createtable(L, 1, 0);
  lua_pushstring(L, marker);
  lua_rawseti(L, -2, 1);
  lua_setfield(L, -2, "markers");
}

static void try_kind(const uint8_t *data, size_t size, const char *kind)
{
  int base = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref_compile);
  lua_pushlstring(L, (const char *)data, size);
  lua_pushstring(L, kind);
  lua_createtable(L, 0, 1);
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "e2e");
  if (lua_pcall(L, 3, 1, 0) != LUA_OK) {
    if (lua_type(L, -1) != LUA_TSTRING) {
      fprintf(stderr, "fuzz_select: -%s raised a %s, not a message\n", kind, luaL_typename(L, -1));
      abort();
    }
  } else {
    if (!lua_isfunction(L, -1)) {
      fprintf(stderr, "fuzz_select: -%s compiled to a %s\n", kind, luaL_typename(L, -1));
      abort();
    }
    static const char *const names[][2] = {{"test_sandbox_create", "e2e"}, {"AND or NOT", "slow"}};
    for (int i = 0; i < 2; i++) {
      lua_pushvalue(L, base + 1);
      push_test(names[i][0], names[i][1]);
      /* A deep expression may overflow Lua's stack: an error, not a crash. */
      if (lua_pcall(L, 1, 1, 0) == LUA_OK && !lua_isboolean(L, -1)) {
        fprintf(stderr, "fuzz_select: -%s predicate returned a %s\n", kind, luaL_typename(L, -1));
        abort();
      }
      lua_pop(L, 1);
    }
  }
  lua_settop(L, base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!L)
    setup();
  prev_line = 0;
  try_kind(data, size, "k");
  try_kind(data, size, "m");
  /* A full collection frees this input's garbage now: otherwise libFuzzer sees more mallocs than
   * frees in the run and spends ~10 ms on a leak check after nearly every input. */
  lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}
