/*
 * core_env.c: "abx.core" process environment: environment variables and the
 * engine's version (contract: docs/ENGINE.md "Utilities").
 */
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "errors.h"

extern char **environ;

/* core.environ() -> {NAME = value}: the whole environment of the process (an entry without '='
 * is left out). */
static int core_environ(lua_State *L)
{
  lua_newtable(L);
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || eq == *e)
      continue;
    lua_pushlstring(L, *e, (size_t)(eq - *e));
    lua_pushstring(L, eq + 1);
    lua_rawset(L, -3);
  }
  return 1;
}

static int core_getenv(lua_State *L)
{
  const char *v = getenv(luaL_checkstring(L, 1));
  if (v)
    lua_pushstring(L, v);
  else
    lua_pushnil(L);
  return 1;
}

/* core.setenv(name, value|nil): sets (nil: removes) a variable of this process's environment,
 * which every child it starts from now on inherits (core.process_start merges its `env` over
 * it): `abxlua run` exports ABX_CONFIG, ABX_PROVIDER and ABX_FLAVOR so the abxlua children of its
 * tests read the run's config and provider (abx.run.runner). Call it before transfers start:
 * setenv(3) is not safe beside threads reading the environment (libcurl's resolver).
 * Raises InvalidArgument for a name that is empty or holds '=' (setenv's EINVAL). */
static int core_setenv(lua_State *L)
{
  const char *name = luaL_checkstring(L, 1);
  const char *value = luaL_optstring(L, 2, NULL);
  if (!*name || strchr(name, '='))
    return abx_error_raise(L, NULL, "InvalidArgument", 0,
                           "core.setenv: a name is not empty and has no '=', got \"%s\"", name);
  if (value ? setenv(name, value, 1) : unsetenv(name))
    return abx_error_raise(L, NULL, "InvalidArgument", 0, "core.setenv %s: out of memory", name);
  return 0;
}

static int core_version(lua_State *L)
{
  lua_pushstring(L, ABX_VERSION);
  lua_pushstring(L, ABX_GIT_COMMIT);
  return 2;
}

static const luaL_Reg env_funcs[] = {{"getenv", core_getenv},
                                     {"setenv", core_setenv},
                                     {"environ", core_environ},
                                     {"version", core_version},
                                     {NULL, NULL}};

void abx_core_env_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, env_funcs, 1);
}
