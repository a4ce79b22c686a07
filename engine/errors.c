/*
 * errors.c: the abx.error value. See errors.h.
 */
#include "errors.h"

#include <lauxlib.h>
#include <stdarg.h>

#include "secrets.h"

#define ERROR_MT "abx.error"

static int error_tostring(lua_State *L)
{
  lua_getfield(L, 1, "kind");
  lua_getfield(L, 1, "status");
  lua_getfield(L, 1, "message");
  const char *kind = luaL_optstring(L, 2, "Error");
  lua_Integer status = lua_tointeger(L, 3);
  const char *msg = luaL_optstring(L, 4, "");
  if (status > 0)
    lua_pushfstring(L, "%s (%d): %s", kind, (int)status, msg);
  else
    lua_pushfstring(L, "%s: %s", kind, msg);
  return 1;
}

void abx_error_init(lua_State *L)
{
  if (luaL_newmetatable(L, ERROR_MT)) {
    lua_pushcfunction(L, error_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
}

void abx_error_push(lua_State *L, struct abx_secrets *secrets, const char *kind, int status,
                    const char *message)
{
  lua_createtable(L, 0, 5);
  lua_pushstring(L, kind);
  lua_setfield(L, -2, "kind");
  lua_pushinteger(L, status);
  lua_setfield(L, -2, "status");
  if (secrets)
    abx_secrets_push_masked(L, secrets, message ? message : "");
  else
    lua_pushstring(L, message ? message : "");
  lua_setfield(L, -2, "message");
  luaL_setmetatable(L, ERROR_MT);
}

int abx_error_raise(lua_State *L, struct abx_secrets *secrets, const char *kind, int status,
                    const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  const char *msg = lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  abx_error_push(L, secrets, kind, status, msg);
  lua_remove(L, -2);
  return lua_error(L);
}

int abx_error_is(lua_State *L, int idx)
{
  if (!lua_istable(L, idx) || !lua_getmetatable(L, idx))
    return 0;
  luaL_getmetatable(L, ERROR_MT);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same;
}
