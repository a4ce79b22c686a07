/*
 * embedded.h: lib/abx/ Lua modules compiled into the binary (cmake/embed_lua.cmake generates the table).
 */
#ifndef ABX_EMBEDDED_H
#define ABX_EMBEDDED_H
#include <stddef.h>

struct abx_embedded {
  const char *name;               /* module name, e.g. "abx.test" */
  const char *chunkname;          /* "@lib/abx/test.lua": tracebacks name the source file */
  const unsigned char *source;    /* Lua source text (never bytecode) */
  size_t size;                    /* bytes */
};

/* Terminated by an entry whose name is NULL. */
extern const struct abx_embedded abx_embedded[];

#endif
