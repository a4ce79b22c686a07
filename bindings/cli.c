/*
 * cli.c: sets up the engine's lua_State (standard libraries, cjson, abx.core, the embedded
 * lib/abx modules) and hands the command line to lib/abx/run/cli.lua, which parses it and runs the
 * subcommand. Returns its exit code (0 ok, 1 failures, 2 interrupted, 3 internal, 4 usage,
 * 5 nothing collected).
 */
#include "cli.h"

#include <curl/curl.h>
#include <lauxlib.h>
#include <lua-cjson.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "embedded.h"
#include "loop.h"
#include "platform.h"
#include "secrets.h"

/* package.preload loader of one embedded module (upvalues: its entry, whether to use bytecode). */
static int load_embedded(lua_State *L)
{
  const struct abx_embedded *e = lua_touserdata(L, lua_upvalueindex(1));
  if (abx_embedded_load(L, e, lua_toboolean(L, lua_upvalueindex(2))) != LUA_OK)
    return lua_error(L);
  lua_pushstring(L, e->name);
  lua_call(L, 1, 1);
  return 1;
}

static int open_core(lua_State *L)
{
  return abx_core_open(L, lua_touserdata(L, lua_upvalueindex(1)));
}

static int traceback(lua_State *L)
{
  if (!lua_isstring(L, 1) || lua_istable(L, 1))
    luaL_tolstring(L, 1, NULL);
  else
    lua_pushvalue(L, 1);
  luaL_traceback(L, L, lua_tostring(L, -1), 1);
  return 1;
}

void abx_cli_preload(lua_State *L, struct abx_loop *loop)
{
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_cjson);
  lua_setfield(L, -2, "cjson");
  lua_pushlightuserdata(L, loop);
  lua_pushcclosure(L, open_core, 1);
  lua_setfield(L, -2, "abx.core");
  int bytecode = abx_embedded_bytecode_ok(abx_embedded_lua_ident, lua_ident);
  for (const struct abx_embedded *e = abx_embedded; e->name; e++) {
    lua_pushlightuserdata(L, (void *)e);
    lua_pushboolean(L, bytecode);
    lua_pushcclosure(L, load_embedded, 2);
    lua_setfield(L, -2, e->name);
  }
  lua_pop(L, 1);
}

int abx_cli_main(int argc, char **argv)
{
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fprintf(stderr, "abxlua: cannot initialise libcurl\n");
    return 3;
  }
  lua_State *L = luaL_newstate();
  struct abx_secrets *secrets = abx_secrets_new();
  struct abx_loop *loop = (L && secrets) ? abx_loop_new(L, secrets) : NULL;
  if (!loop) {
    fprintf(stderr, "abxlua: out of memory at start-up\n");
    return 3;
  }
  luaL_openlibs(L);
  abx_cli_preload(L, loop);
  abx_signals_install();
  abx_platform_set_exe(argv[0]);

  int rc = 3;
  lua_pushcfunction(L, traceback);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "abx.run.cli");
  if (lua_pcall(L, 1, 1, -3) != LUA_OK) {
    fprintf(stderr, "abxlua: internal error loading abx.run.cli: %s\n", lua_tostring(L, -1));
    goto out;
  }
  lua_getfield(L, -1, "main");
  lua_createtable(L, argc, 0);
  for (int i = 1; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  if (lua_pcall(L, 1, 1, 1) != LUA_OK) {
    size_t n;
    const char *msg = lua_tolstring(L, -1, &n);
    static const char head[] = "abxlua: internal error: ";
    abx_secrets_write(secrets, stderr, head, sizeof head - 1);
    abx_secrets_write(secrets, stderr, msg ? msg : "?", msg ? n : 1);
    abx_secrets_write(secrets, stderr, "\n", 1);
    goto out;
  }
  rc = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 0;
  if (loop->task_errors > 0 && rc == 0)
    rc = 3;
out:
  fflush(stdout);
  lua_close(L); /* finalizers may still use the loop: free it after */
  abx_loop_free(loop);
  abx_secrets_free(secrets);
  curl_global_cleanup();
  return rc;
}
