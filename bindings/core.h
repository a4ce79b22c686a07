/*
 * core.h: the internal Lua module "abx.core" (contract: docs/ENGINE.md). Scenarios never require it;
 * the lib/abx modules build the scenario API on it.
 */
#ifndef ABX_CORE_H
#define ABX_CORE_H

#include <lua.h>
#include <stddef.h>

struct abx_loop;

/* Opens "abx.core" with 'loop' as upvalue 1 of every function; pushes the module. [-0, +1, m] */
int abx_core_open(lua_State *L, struct abx_loop *loop);

/* Adds the HTTP functions (request, stream) to the module table at the top. [-0, +0, m] */
void abx_core_http_register(lua_State *L, struct abx_loop *loop);

/* Adds the utilities (encodings, files, environment, platform child) to the module at the top.
 * [-0, +0, m] */
void abx_core_util_register(lua_State *L, struct abx_loop *loop);

/* Adds core.gzip and core.gunzip (zlib) to the module at the top. [-0, +0, m] */
void abx_core_zlib_register(lua_State *L, struct abx_loop *loop);

/* HTTP traces (core_trace.c), written when loop->trace (core.set_trace) is 1 or more, masked.
 * abx_trace_request: "> METHOD url (N bytes)" and the request headers, before the transfer;
 * abx_trace_answer: status, headers and, at level 2, a body excerpt whose credential-named JSON
 * fields are registered as secrets first; or the failure. */
struct abx_transfer;
void abx_trace_request(struct abx_loop *loop, const char *what, const char *const *headers,
                       size_t body_len);
void abx_trace_answer(struct abx_loop *loop, const char *what, struct abx_transfer *t,
                      double started_ms);

/* The loop stored as upvalue 1 of the running C function. [-0, +0, -] */
struct abx_loop *abx_core_loop(lua_State *L);

#endif
