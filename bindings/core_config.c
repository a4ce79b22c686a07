/*
 * core_config.c: "abx.core" configuration formats: a YAML file as a Lua value (yaml_lua.h)
 * and a .env text as a table (engine/dotenv.h) (contract: docs/ENGINE.md "Utilities").
 */
#include <errno.h>
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "dotenv.h"
#include "errors.h"
#include "loop.h"
#include "yaml_lua.h"

/* core.yaml_load(path [, with_lines]) -> value [, lines]. Raises InvalidArgument
 * "file:line:col: problem". With 'with_lines' true also returns lines: {[table] = {[key or
 * index] = line}} for every mapping and sequence of the value (bindings/yaml_lua.h). */
static int core_yaml_load(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  const char *path = luaL_checkstring(L, 1);
  int want_lines = lua_toboolean(L, 2);
  size_t n;
  char *buf = abx_core_slurp(path, &n, 4 * 1024 * 1024);
  if (!buf)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0, "%s: %s", path, strerror(errno));
  char err[512];
  int rc = want_lines ? abx_yaml_push_lines(L, path, buf, n, err, sizeof err)
                      : abx_yaml_push(L, path, buf, n, err, sizeof err);
  free(buf);
  if (rc != 0)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0, "%s", err);
  return want_lines ? 2 : 1;
}

/* core.dotenv_parse(text) -> { KEY = value, ... }, { {line =, message =}, ... }
 * The syntax is engine/dotenv.h's; a later binding of a key wins. Raises for input over 1 MiB. */
struct dotenv_ud {
  lua_State *L;
  int pairs, errors;
};

static void dotenv_pair(void *ud, const char *key, const char *value, size_t vlen)
{
  struct dotenv_ud *d = ud;
  lua_pushlstring(d->L, value, vlen);
  lua_setfield(d->L, d->pairs, key);
}

static void dotenv_error(void *ud, int line, const char *msg)
{
  struct dotenv_ud *d = ud;
  lua_createtable(d->L, 0, 2);
  lua_pushinteger(d->L, line);
  lua_setfield(d->L, -2, "line");
  lua_pushstring(d->L, msg);
  lua_setfield(d->L, -2, "message");
  lua_rawseti(d->L, d->errors, (lua_Integer)lua_rawlen(d->L, d->errors) + 1);
}

static int core_dotenv_parse(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  size_t n;
  const char *text = luaL_checklstring(L, 1, &n);
  if (n > ABX_DOTENV_MAX)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                           "a .env text is at most 1 MiB (got %zu bytes)", n);
  lua_settop(L, 1);
  lua_newtable(L); /* 2: pairs */
  lua_newtable(L); /* 3: errors */
  struct dotenv_ud d = {L, 2, 3};
  if (abx_dotenv_parse(text, n, dotenv_pair, dotenv_error, &d) < 0)
    return abx_error_raise(L, loop->secrets, "Internal", 0, "out of memory parsing a .env text");
  return 2;
}

static const luaL_Reg config_funcs[] = {
    {"yaml_load", core_yaml_load}, {"dotenv_parse", core_dotenv_parse}, {NULL, NULL}};

void abx_core_config_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, config_funcs, 1);
}
