/*
 * core_platform.c: "abx.core" platform child: starts and stops `abxlua serve` as a child of
 * the engine (engine/platform.h) (contract: docs/ENGINE.md "Utilities").
 */
#include <lauxlib.h>
#include <sys/types.h>

#include "core.h"
#include "errors.h"
#include "loop.h"
#include "platform.h"

/* core.platform_start(extra_args, timeout_s, log_path) -> { pid = n, ready = json }: starts
 * `abxlua serve` (engine/platform.h); its stdout and stderr are appended to log_path (created or
 * made mode 0600, never through a symlink; nil: /dev/null), masked with every secret registered
 * so far (engine/platform.h: a log writer process). Raises Transport when it does not start. */
static int core_platform_start(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  const char *extra[32];
  int n = 0;
  if (lua_istable(L, 1)) {
    for (int i = 1; i <= 30; i++) {
      if (lua_rawgeti(L, 1, i) != LUA_TSTRING) {
        lua_pop(L, 1);
        break;
      }
      extra[n++] = lua_tostring(L, -1);
      lua_pop(L, 1); /* the string stays alive in the table */
    }
  }
  extra[n] = NULL;
  double timeout = luaL_optnumber(L, 2, 20);
  const char *log = luaL_optstring(L, 3, NULL);
  struct abx_platform p;
  char err[512];
  if (abx_platform_start(&p, extra, log, loop->secrets, (int)(timeout * 1000), err, sizeof err) !=
      0)
    return abx_error_raise(L, loop->secrets, "Transport", 0, "%s", err);
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, p.pid);
  lua_setfield(L, -2, "pid");
  lua_pushstring(L, p.ready);
  lua_setfield(L, -2, "ready");
  return 1;
}

/* core.platform_stop(pid, timeout_s) -> exit status */
static int core_platform_stop(lua_State *L)
{
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  double timeout = luaL_optnumber(L, 2, 10);
  lua_pushinteger(L, abx_platform_stop(pid, (int)(timeout * 1000)));
  return 1;
}

static const luaL_Reg platform_funcs[] = {
    {"platform_start", core_platform_start}, {"platform_stop", core_platform_stop}, {NULL, NULL}};

void abx_core_platform_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, platform_funcs, 1);
}
