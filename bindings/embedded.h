/*
 * embedded.h: lib/abx/ Lua modules (and lua-argparse) compiled into the binary; cmake/embed_lua.c
 * generates the table at build time.
 */
#ifndef ABX_EMBEDDED_H
#define ABX_EMBEDDED_H
#include <stddef.h>

struct abx_embedded {
  const char *name;            /* module name, e.g. "abx.test" */
  const char *chunkname;       /* "@lib/abx/test.lua": tracebacks name the source file */
  const unsigned char *source; /* Lua source text */
  size_t size;                 /* bytes of source */
  /* The same module precompiled (lua_dump, debug information kept: the chunk name and every
   * line number are the source's). Valid only for the liblua whose lua_ident is
   * abx_embedded_lua_ident: Lua's bytecode format is that of one release. */
  const unsigned char *bytecode;
  size_t bytecode_size; /* bytes of bytecode */
};

/* Terminated by an entry whose name is NULL. */
extern const struct abx_embedded abx_embedded[];

/* lua_ident of the liblua that compiled the bytecode (its release and build). */
extern const char abx_embedded_lua_ident[];

struct lua_State;

/* Whether bytecode written by the liblua named `built_ident` loads on the liblua named
 * `runtime_ident` (both lua_ident strings): only when they are the same string, since a bytecode
 * chunk holds no more than the major and minor version and the format may change between
 * releases. */
int abx_embedded_bytecode_ok(const char *built_ident, const char *runtime_ident);

/* Pushes module `e` as a function (its main chunk), from its bytecode when `bytecode` is
 * non-zero (the caller checked abx_embedded_bytecode_ok), else compiled from its source; a
 * bytecode chunk that does not load falls back to the source. Returns LUA_OK, or a lua_load error
 * status with the message pushed. [-0, +1, m] */
int abx_embedded_load(struct lua_State *L, const struct abx_embedded *e, int bytecode);

#endif
