/*
 * errors.h: typed errors raised into Lua (metatable "abx.error").
 *
 * Shape:   { kind = "NotFound", status = 404, message = "...", code = "not_found"|nil,
 *            request = "GET /sandboxes/x"|nil }   __tostring: "NotFound (404): message"
 * Kinds:   DESIGN.md "Protocol": Authentication, NotFound, SandboxNotFound, InvalidArgument,
 *          Conflict, RateLimit, Timeout, SandboxGone, NotEnoughSpace, Protocol, Transport, plus
 *          Sandbox (any other platform error), Assertion (a failed check), Internal.
 * Masking: the message passes through the secrets registry before it is stored.
 */
#ifndef ABX_ERRORS_H
#define ABX_ERRORS_H

#include <lua.h>

struct abx_secrets;

/* Creates the "abx.error" metatable (idempotent). [-0, +0, m] */
void abx_error_init(lua_State *L);

/* Pushes a new error value; 'message' is masked with 'secrets' (may be NULL). [-0, +1, m] */
void abx_error_push(lua_State *L, struct abx_secrets *secrets, const char *kind, int status,
                    const char *message);

/* Pushes an error value like abx_error_push, then raises it. [-0, +0, v] */
int abx_error_raise(lua_State *L, struct abx_secrets *secrets, const char *kind, int status,
                    const char *fmt, ...);

/* True when the value at 'idx' is an abx.error table. [-0, +0, -] */
int abx_error_is(lua_State *L, int idx);

#endif
