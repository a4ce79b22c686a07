/*
 * errors.c: the abx.error value. See errors.h.
 */
#include "errors.h"

#include <lauxlib.h>
#include <stdarg.h>
#include <string.h>

#include "secrets_lua.h"

#define ERROR_MT "abx.error"

/* Sources of the statuses: docs/protocol/e2b-control-plane.md §6 (control plane and envd HTTP),
 * §7.4 and e2b-dev/infra packages/shared/pkg/proxy/template/{sandbox_paused,sandbox_not_found,
 * port_closed}.go (the edge's answers), docs/protocol/envd-protocol.md §2.4 (Connect codes). */
const struct abx_error_kind abx_error_kinds[] = {
    {"Authentication", "401/403: missing or wrong API key, access token or traffic token"},
    {"NotFound", "404: no such file, process, template, snapshot, volume or code context"},
    {"SandboxNotFound", "404 on a sandbox route of the control plane"},
    {"InvalidArgument", "400/422 from the platform, or a bad call caught before sending"},
    {"Conflict", "409: the object's state forbids the call (already paused, already exists)"},
    {"RateLimit", "429: too many requests; the same call can succeed later"},
    {"PayloadTooLarge", "413: a body over the platform's limit; repeating the call cannot help"},
    {"Timeout", "a deadline passed: the test's, the call's, or the platform's 504"},
    {"SandboxPaused",
     "the edge answered for a paused sandbox: 502 (or 409) {sandboxId, canAutoResume}"},
    {"SandboxGone",
     "the sandbox is killed, expired or unknown to the edge: 502/404 {sandboxId}, 503"},
    {"PortNotOpen", "the sandbox runs but nothing listens on the port: 502 {sandboxId, port}"},
    {"Unavailable",
     "a gateway's bare 502/503/504 (no platform JSON): transient; idempotent calls retry it first"},
    {"NotEnoughSpace", "507: the sandbox's disk is full"},
    {"Protocol", "an answer that breaks the protocol: shape, framing, a size limit"},
    {"Transport", "the connection failed (refused, reset, DNS)"},
    {"Sandbox", "any other platform error (500 and unmapped statuses)"},
    {"Assertion", "a failed check (t.eq, t.ok, ...)"},
    {"Threshold", "a test's threshold (thresholds = {...}) crossed by its t.measure statistics"},
    {"Skipped", "t.skip: the runner turns it into the outcome skipped"},
    {"Interrupted", "the run was interrupted (SIGINT/SIGTERM)"},
    {"Internal", "an engine failure: deadlock, out of memory, the run ended under a task"},
    {"LuaError", "a plain Lua error (not an abx.error), as the runner reports it"},
    {NULL, NULL},
};

const char *abx_error_kind_find(const char *name)
{
  for (const struct abx_error_kind *k = abx_error_kinds; name && k->name; k++)
    if (strcmp(k->name, name) == 0)
      return k->name;
  return NULL;
}

void abx_error_push_kind_names(lua_State *L)
{
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (const struct abx_error_kind *k = abx_error_kinds; k->name; k++) {
    if (k != abx_error_kinds)
      luaL_addstring(&b, ", ");
    luaL_addstring(&b, k->name);
  }
  luaL_pushresult(&b);
}

void abx_error_push_kinds(lua_State *L)
{
  lua_newtable(L);
  lua_Integer i = 0;
  for (const struct abx_error_kind *k = abx_error_kinds; k->name; k++) {
    lua_pushstring(L, k->name);
    lua_rawseti(L, -2, ++i);
    lua_pushstring(L, k->doc);
    lua_setfield(L, -2, k->name);
  }
}

const char *abx_error_check_kind(lua_State *L, int arg)
{
  const char *name = lua_tostring(L, arg);
  const char *kind = abx_error_kind_find(name);
  if (kind)
    return kind;
  abx_error_push_kind_names(L);
  abx_error_raise(L, NULL, "InvalidArgument", 0, "unknown error kind %s%s%s (valid: %s)",
                  name ? "\"" : "", name ? name : luaL_typename(L, arg), name ? "\"" : "",
                  lua_tostring(L, -1));
  return NULL; /* not reached */
}

/* __tostring: "Kind: METHOD path answered STATUS: message" for an error raised from an HTTP
 * answer (a status and a `request` the message does not already start with), so the console and
 * every report name the route (issue 27: a 405 that names no route cannot be told from any other
 * refusal); "Kind (STATUS): message" with a status alone; "Kind: message" otherwise. */
static int error_tostring(lua_State *L)
{
  lua_getfield(L, 1, "kind");
  lua_getfield(L, 1, "status");
  lua_getfield(L, 1, "message");
  lua_getfield(L, 1, "request");
  const char *kind = luaL_optstring(L, 2, "Error");
  lua_Integer status = lua_tointeger(L, 3);
  const char *msg = luaL_optstring(L, 4, "");
  const char *request = lua_type(L, 5) == LUA_TSTRING ? lua_tostring(L, 5) : NULL;
  if (status > 0 && request && *request && strncmp(msg, request, strlen(request)) != 0)
    lua_pushfstring(L, "%s: %s answered %d: %s", kind, request, (int)status, msg);
  else if (status > 0)
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
  if (!abx_error_kind_find(kind)) {
    abx_error_push_kind_names(L);
    lua_pushfstring(L, "unknown error kind \"%s\" (valid: %s): %s", kind ? kind : "(null)",
                    lua_tostring(L, -1), message ? message : "");
    lua_remove(L, -2);
    abx_error_push(L, secrets, "Internal", status, lua_tostring(L, -1));
    lua_remove(L, -2);
    return;
  }
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
