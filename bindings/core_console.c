/*
 * core_console.c: "abx.core" console: stdout and stderr written masked (engine/secrets.h),
 * and whether and how wide a terminal is (contract: docs/ENGINE.md "Utilities").
 */
#include <lauxlib.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core.h"
#include "loop.h"
#include "secrets.h"

static int write_masked(lua_State *L, FILE *f)
{
  struct abx_loop *loop = abx_core_loop(L);
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  if (abx_secrets_write(loop->secrets, f, s, n) != 0)
    return luaL_error(L, "out of memory while masking");
  if (lua_toboolean(L, 2))
    abx_secrets_flush(loop->secrets, f);
  return 0;
}

/* core.write(text [, flush]), core.ewrite(text [, flush]): writes text to stdout / stderr, masked
 * across calls (a secret written in two pieces is masked; engine/secrets.h). A tail that may begin
 * a secret is held back until the next write; flush = true writes it now (a status line that the
 * next write erases). Raises: a Lua error when out of memory. */
static int core_write(lua_State *L)
{
  return write_masked(L, stdout);
}
static int core_ewrite(lua_State *L)
{
  return write_masked(L, stderr);
}

static int core_isatty(lua_State *L)
{
  lua_pushboolean(L, isatty(luaL_optinteger(L, 1, 1)));
  return 1;
}

/* core.term_width([fd = 1]) -> columns | nil: the width of the terminal on fd (ioctl TIOCGWINSZ),
 * nil when fd is not a terminal or the terminal reports no width. [-0, +1, -] */
static int core_term_width(lua_State *L)
{
  struct winsize ws;
  if (ioctl((int)luaL_optinteger(L, 1, 1), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    lua_pushinteger(L, ws.ws_col);
  else
    lua_pushnil(L);
  return 1;
}

static const luaL_Reg console_funcs[] = {{"write", core_write},
                                         {"ewrite", core_ewrite},
                                         {"isatty", core_isatty},
                                         {"term_width", core_term_width},
                                         {NULL, NULL}};

void abx_core_console_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, console_funcs, 1);
}
