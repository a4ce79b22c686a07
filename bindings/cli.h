/*
 * cli.h: the engine's command line (run, list, help, --version).
 */
#ifndef ABX_CLI_H
#define ABX_CLI_H

#include <lua.h>

struct abx_loop;

/* package.preload entries for cjson, abx.core (on `loop`) and every embedded module (bytecode
 * when it fits this Lua, else source): what `require` needs to load the engine's own Lua, for
 * abx_cli_main and for harnesses that drive those modules (tests/fuzz/fuzz_desktop.c).
 * [-0, +0, m] */
void abx_cli_preload(lua_State *L, struct abx_loop *loop);

/* Entry point for every subcommand but serve and envd. Returns the exit code. */
int abx_cli_main(int argc, char **argv);

#endif
