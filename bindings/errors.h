/*
 * errors.h: typed errors raised into Lua (metatable "abx.error").
 *
 * Shape:   { kind = "NotFound", status = 404, message = "...", code = "not_found"|nil,
 *            request = "GET /sandboxes/x"|nil }   __tostring: "NotFound: GET /sandboxes/x answered
 *          404: message" (with a status and a request), "NotFound (404): message" (a status alone),
 *          "Transport: message" (no status)
 * Kinds:   one list, abx_error_kinds below (exported to Lua as core.KINDS; docs/scenarios.md
 *          "Kinds" and docs/ENGINE.md "Errors" name the same). An error of any other kind cannot
 *          be made: abx_error_push turns it into an Internal error naming the valid kinds, and
 *          abx_error_check_kind (core.error, core.new_error, core.abort) raises InvalidArgument.
 * Masking: the message passes through the secrets registry before it is stored.
 */
#ifndef ABX_ERRORS_H
#define ABX_ERRORS_H

#include <lua.h>

struct abx_secrets;

/* One error kind: its name and a one-line description (when it is raised, HTTP status if any). */
struct abx_error_kind {
  const char *name;
  const char *doc;
};

/* Every error kind, in documentation order, ended by {NULL, NULL}. */
extern const struct abx_error_kind abx_error_kinds[];

/* The kind named 'name' (its static name string), or NULL when there is none. [-0, +0, -] */
const char *abx_error_kind_find(const char *name);

/* Pushes "Authentication, NotFound, ..." (every kind name, comma-separated). [-0, +1, m] */
void abx_error_push_kind_names(lua_State *L);

/* Pushes core.KINDS: an array of the kind names in order, and name -> description. [-0, +1, m] */
void abx_error_push_kinds(lua_State *L);

/* The kind at stack index 'arg' when it is a known kind name; otherwise raises an abx.error of
 * kind InvalidArgument "unknown error kind "X" (valid: ...)". [-0, +0, v] */
const char *abx_error_check_kind(lua_State *L, int arg);

/* Creates the "abx.error" metatable (idempotent). [-0, +0, m] */
void abx_error_init(lua_State *L);

/* Pushes a new error value; 'message' is masked with 'secrets' (may be NULL). A 'kind' that is
 * not in abx_error_kinds gives an Internal error whose message names the bad kind and the valid
 * ones (the caller's message follows). [-0, +1, m] */
void abx_error_push(lua_State *L, struct abx_secrets *secrets, const char *kind, int status,
                    const char *message);

/* Pushes an error value like abx_error_push, then raises it. [-0, +0, v] */
int abx_error_raise(lua_State *L, struct abx_secrets *secrets, const char *kind, int status,
                    const char *fmt, ...);

/* True when the value at 'idx' is an abx.error table. [-0, +0, -] */
int abx_error_is(lua_State *L, int idx);

#endif
