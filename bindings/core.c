/*
 * core.c: "abx.core" tasks, time, errors and secrets (contract: docs/ENGINE.md).
 *
 * Every function that waits follows one protocol: register the wait on the current task, yield
 * with lua_yieldk, and let the loop resume the coroutine with (true, results...) or
 * (false, error). The continuation 'resume_k' turns that into returns or a raised error.
 */
#include "core.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "e2b.h"
#include "errors.h"
#include "loop.h"
#include "secrets_lua.h"

struct abx_loop *abx_core_loop(lua_State *L)
{
  return lua_touserdata(L, lua_upvalueindex(1));
}

/* Continuation shared by sleep and park: the stack above 'keep' holds (ok, values...).
 * [-0, +n, v] */
static int resume_k(lua_State *L, int status, lua_KContext keep)
{
  (void)status;
  int base = (int)keep + 1;
  if (!lua_toboolean(L, base))
    return lua_error(L); /* the error value is on top */
  return lua_gettop(L) - base;
}

/* core.run(fn, ...) -> ok, task_errors
 * Runs fn as the first task and drives the loop until every task finished. Not a task itself. */
static int core_run(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  luaL_checktype(L, 1, LUA_TFUNCTION);
  if (loop->current)
    return luaL_error(L, "core.run cannot be called from inside a task");
  abx_task_spawn(loop, L, lua_gettop(L) - 1);
  lua_pop(L, 1);
  if (abx_loop_run(loop) != 0)
    return luaL_error(L, "the event loop failed (curl multi error)");
  lua_pushboolean(L, loop->task_errors == 0);
  lua_pushinteger(L, loop->task_errors);
  return 2;
}

/* core.spawn(fn, ...) -> task. Starts on the next loop turn. */
static int core_spawn(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  luaL_checktype(L, 1, LUA_TFUNCTION);
  abx_task_spawn(loop, L, lua_gettop(L) - 1);
  return 1;
}

/* core.current() -> task | nil */
static int core_current(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  if (!loop->current || loop->current->ref == LUA_NOREF)
    lua_pushnil(L);
  else
    lua_rawgeti(L, LUA_REGISTRYINDEX, loop->current->ref);
  return 1;
}

/* core.sleep(seconds): yields at least that long. Raises Timeout when the deadline passes. */
static int core_sleep(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  double s = luaL_checknumber(L, 1);
  luaL_argcheck(L, s >= 0, 1, "seconds must not be negative");
  struct abx_task *t = abx_task_require(L, loop, "core.sleep");
  lua_settop(L, 0);
  abx_task_wait(t, NULL, ABX_TASK_WAITING);
  t->wake_ms = abx_now_ms() + s * 1000.0;
  if (t->wake_ms == 0)
    t->wake_ms = 1;
  return lua_yieldk(L, 0, 0, resume_k);
}

/* core.park() -> values given to core.unpark. Raises Timeout when the deadline passes. */
static int core_park(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  struct abx_task *t = abx_task_require(L, loop, "core.park");
  lua_settop(L, 0);
  abx_task_wait(t, NULL, ABX_TASK_PARKED);
  return lua_yieldk(L, 0, 0, resume_k);
}

/* core.unpark(task, ...) -> boolean: false when the task is not parked. */
static int core_unpark(lua_State *L)
{
  struct abx_task *t = abx_task_check(L, 1);
  if (t->state != ABX_TASK_PARKED) {
    lua_pushboolean(L, 0);
    return 1;
  }
  int n = lua_gettop(L) - 1;
  if (!lua_checkstack(t->co, n + 1))
    return luaL_error(L, "stack overflow unparking a task");
  lua_pushboolean(t->co, 1);
  lua_xmove(L, t->co, n);
  abx_task_ready(t, n + 1);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.guard's message handler (upvalue 1: the caller's handler, upvalue 2: the loop). Once the
 * task has expired, whatever error reached the guard (a string from a failed handler, another
 * kind) is replaced by the expiry error, and the caller's handler runs with the hook quiet, on the
 * stack where the error was raised (so it can find the scenario's line). */
static int guard_msgh(lua_State *L)
{
  struct abx_loop *loop = lua_touserdata(L, lua_upvalueindex(2));
  struct abx_task *t = loop->current;
  if (t && t->guarded && t->expired_kind) {
    lua_settop(L, 0);
    abx_task_push_expired(L, t);
  }
  lua_settop(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  if (t)
    t->in_handler++;
  lua_pcall(L, 1, 1, 0); /* a failing handler leaves its own error as the result */
  if (t)
    t->in_handler--;
  return 1;
}

/* End of core.guard, reached directly or as the continuation after the body yielded. Stack: 1
 * seconds, 2 handler, 3 guard_msgh, then the body's results or the handled error. */
static int guard_done(lua_State *L, int status, lua_KContext ctx)
{
  (void)ctx;
  struct abx_task *t = abx_core_loop(L)->current;
  int ok = status == LUA_OK || status == LUA_YIELD;
  if (ok && t->expired_kind) {
    /* the body caught its deadline (or the interrupt) and returned: still a failure */
    lua_settop(L, 3);
    lua_pushvalue(L, 2);
    abx_task_push_expired(L, t);
    t->in_handler++;
    lua_pcall(L, 1, 1, 0);
    t->in_handler--;
    ok = 0;
  }
  abx_task_guard_end(t);
  if (ok) {
    lua_pushboolean(L, 1);
    lua_replace(L, 3);
    return lua_gettop(L) - 2;
  }
  lua_pushboolean(L, 0);
  lua_insert(L, -2);
  return 2;
}

/* core.guard(limit, handler, fn, ...) -> true, results... | false, handler(error)
 * Calls fn(...) in the current task like xpcall, with a deadline. `limit` is seconds from now
 * (nil: none) or {timeout = seconds, interruptible = true|false, limit = text} (interruptible,
 * default true: SIGINT/SIGTERM ends the call with Interrupted; the runner's teardowns pass false
 * so that they complete; limit: what the Timeout message says first, e.g. "the test ran 300 s,
 * its limit (defaults.test_timeout in config/abxlua.yaml; ...)", at most 511 bytes kept; see
 * abx_task_deadline_msg).
 * Unlike a plain deadline it cannot be swallowed: once the deadline passes (or the task is
 * aborted, or the run is interrupted), every wait raises at once and the count hook raises at
 * every instruction of scenario code until fn has unwound; if fn still returns normally the guard
 * returns false with the Timeout (Interrupted) error. `handler` runs on the failing stack, as
 * xpcall's does. Guards do not nest. Raises: when not called from a task's own coroutine, or
 * inside another guard. */
static int core_guard(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  struct abx_task *t = abx_task_require(L, loop, "core.guard");
  double seconds = 0;
  int has_deadline = 0, interruptible = 1;
  const char *limit = "";
  if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "timeout");
    has_deadline = !lua_isnil(L, -1);
    seconds = has_deadline ? luaL_checknumber(L, -1) : 0;
    lua_getfield(L, 1, "interruptible");
    interruptible = lua_isnil(L, -1) || lua_toboolean(L, -1);
    lua_getfield(L, 1, "limit");
    limit = luaL_optstring(L, -1, "");
    lua_pop(L, 3); /* the string stays alive: the table at index 1 holds it */
  } else if (!lua_isnoneornil(L, 1)) {
    seconds = luaL_checknumber(L, 1);
    has_deadline = 1;
  }
  luaL_checktype(L, 2, LUA_TFUNCTION);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  if (t->guarded)
    return luaL_error(L, "core.guard cannot be nested");
  lua_pushvalue(L, 2);
  lua_pushlightuserdata(L, loop);
  lua_pushcclosure(L, guard_msgh, 2);
  lua_insert(L, 3); /* seconds handler msgh fn args... */
  t->guarded = 1;
  t->interruptible = interruptible;
  t->expired_kind = NULL;
  t->expired_msg[0] = t->expired_where[0] = '\0';
  snprintf(t->limit, sizeof t->limit, "%s", limit);
  t->deadline_ms = has_deadline ? abx_now_ms() + seconds * 1000.0 : 0;
  int nargs = lua_gettop(L) - 4;
  int status = lua_pcallk(L, nargs, LUA_MULTRET, 3, 0, guard_done);
  return guard_done(L, status, 0);
}

/* core.guard_where(where | nil): names the place ("file:line") at which the running guarded
 * task's deadline or interrupt is reported, for code that runs a scenario not written in Lua
 * (abx.run.declarative's YAML steps: the deadline hook only finds Lua frames of scenario files).
 * nil clears it; the guard's end clears it too. Raises: a Lua error outside a guarded task. */
static int core_guard_where(lua_State *L)
{
  struct abx_task *t = abx_core_loop(L)->current;
  const char *where = luaL_optstring(L, 1, NULL);
  if (!t || !t->guarded)
    return luaL_error(L, "core.guard_where: not inside core.guard");
  if (!t->expired_kind) /* once expired, the place it was reported at stays */
    snprintf(t->expired_where, sizeof t->expired_where, "%s", where ? where : "");
  return 0;
}

/* core.abort(task, kind, message): cancels what the task waits on; it resumes with that error. */
static int core_abort(lua_State *L)
{
  struct abx_task *t = abx_task_check(L, 1);
  abx_task_abort(t, abx_error_check_kind(L, 2), luaL_optstring(L, 3, "aborted"));
  return 0;
}

static int core_now(lua_State *L)
{
  lua_pushnumber(L, abx_now_ms() / 1000.0);
  return 1;
}

static int core_time(lua_State *L)
{
  struct timeval tv;
  gettimeofday(&tv, NULL);
  lua_pushnumber(L, (double)tv.tv_sec + (double)tv.tv_usec / 1e6);
  return 1;
}

/* core.error(kind, status, message [, extra]) raises an abx.error; 'extra' fields are copied. */
static int core_error(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  const char *kind = abx_error_check_kind(L, 1);
  int status = (int)luaL_optinteger(L, 2, 0);
  const char *msg = luaL_optstring(L, 3, "");
  abx_error_push(L, loop->secrets, kind, status, msg);
  if (lua_istable(L, 4)) {
    lua_pushnil(L);
    while (lua_next(L, 4)) {
      if (lua_type(L, -2) == LUA_TSTRING) {
        const char *k = lua_tostring(L, -2);
        if (strcmp(k, "kind") && strcmp(k, "status") && strcmp(k, "message")) {
          if (lua_type(L, -1) == LUA_TSTRING) {
            abx_secrets_push_masked(L, loop->secrets, lua_tostring(L, -1));
            lua_setfield(L, -4, k);
            lua_pop(L, 1);
            continue;
          }
          lua_pushvalue(L, -2);
          lua_insert(L, -2);
          lua_settable(L, -4);
          continue;
        }
      }
      lua_pop(L, 1);
    }
  }
  lua_Debug ar; /* where: the first Lua frame above us, unless 'extra' named it */
  int has_where = lua_getfield(L, -1, "where") != LUA_TNIL;
  lua_pop(L, 1);
  if (!has_where && lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
    lua_pushfstring(L, "%s:%d", ar.short_src, ar.currentline);
    lua_setfield(L, -2, "where");
  }
  return lua_error(L);
}

/* core.is_error(v) -> boolean */
static int core_is_error(lua_State *L)
{
  lua_pushboolean(L, abx_error_is(L, 1));
  return 1;
}

/* core.new_error(kind, status, message) -> error value (not raised). */
static int core_new_error(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  abx_error_push(L, loop->secrets, abx_error_check_kind(L, 1), (int)luaL_optinteger(L, 2, 0),
                 luaL_optstring(L, 3, ""));
  return 1;
}

/* core.add_secret(value): registers a value (and derived forms) for masking. */
static int core_add_secret(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  size_t n;
  const char *s = luaL_optlstring(L, 1, NULL, &n);
  if (s)
    abx_secrets_add(loop->secrets, s, n);
  return 0;
}

/* core.mask(text) -> text with every registered secret replaced by "***". */
static int core_mask(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  size_t n, out_n;
  const char *s = luaL_tolstring(L, 1, &n);
  char *m = abx_secrets_mask(loop->secrets, s, n, &out_n);
  if (!m)
    return luaL_error(L, "out of memory while masking");
  lua_pushlstring(L, m, out_n);
  free(m);
  return 1;
}

/* core.abort_all(kind, message) -> n: aborts every waiting or parked task but the caller (used at
 * the end of a run for helper tasks still blocked on streams). */
static int core_abort_all(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  const char *kind = abx_error_check_kind(L, 1), *msg = luaL_optstring(L, 2, "aborted");
  int n = 0;
  for (struct abx_task *t = loop->tasks; t; t = t->next) {
    if (t == loop->current)
      continue;
    if (t->state == ABX_TASK_WAITING || t->state == ABX_TASK_PARKED) {
      t->wake_ms = 0;
      abx_task_abort(t, kind, msg);
      n++;
    }
  }
  lua_pushinteger(L, n);
  return 1;
}

/* core.on_interrupt(fn): fn runs in a new task after each SIGINT/SIGTERM (the first one; a second
 * signal exits at once, printing the note given to core.interrupt_note). */
static int core_on_interrupt(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  luaL_checktype(L, 1, LUA_TFUNCTION);
  if (loop->on_interrupt_ref != LUA_NOREF)
    luaL_unref(L, LUA_REGISTRYINDEX, loop->on_interrupt_ref);
  lua_pushvalue(L, 1);
  loop->on_interrupt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

/* core.interrupt_note(text): what a second interrupt prints before exiting. */
static int core_interrupt_note(lua_State *L)
{
  abx_interrupt_note(luaL_checkstring(L, 1));
  return 0;
}

/* core.interrupted() -> number of interrupts received */
static int core_interrupted(lua_State *L)
{
  lua_pushinteger(L, abx_interrupt_count());
  return 1;
}

static const luaL_Reg core_funcs[] = {{"abort_all", core_abort_all},
                                      {"on_interrupt", core_on_interrupt},
                                      {"interrupt_note", core_interrupt_note},
                                      {"interrupted", core_interrupted},
                                      {"run", core_run},
                                      {"spawn", core_spawn},
                                      {"current", core_current},
                                      {"sleep", core_sleep},
                                      {"park", core_park},
                                      {"unpark", core_unpark},
                                      {"abort", core_abort},
                                      {"now", core_now},
                                      {"guard", core_guard},
                                      {"guard_where", core_guard_where},
                                      {"time", core_time},
                                      {"error", core_error},
                                      {"is_error", core_is_error},
                                      {"new_error", core_new_error},
                                      {"add_secret", core_add_secret},
                                      {"mask", core_mask},
                                      {NULL, NULL}};

int abx_core_open(lua_State *L, struct abx_loop *loop)
{
  abx_error_init(L);
  loop->push_error = abx_error_push; /* the loop's errors are abx.error values from now on */
  luaL_newlibtable(L, core_funcs);
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, core_funcs, 1);
  /* core.E2B: the protocol facts of proto/e2b.h, so Lua and C cannot disagree */
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, ABX_E2B_ENVD_PORT);
  lua_setfield(L, -2, "envd_port");
  lua_pushliteral(L, ABX_E2B_ENVD_VERSION);
  lua_setfield(L, -2, "envd_version");
  lua_setfield(L, -2, "E2B");
  abx_error_push_kinds(L); /* core.KINDS: bindings/errors.c abx_error_kinds */
  lua_setfield(L, -2, "KINDS");
  abx_core_http_register(L, loop);
  abx_core_ndjson_register(L, loop);
  abx_core_encode_register(L, loop);
  abx_core_files_register(L, loop);
  abx_core_config_register(L, loop);
  abx_core_env_register(L, loop);
  abx_core_console_register(L, loop);
  abx_core_platform_register(L, loop);
  abx_core_zlib_register(L, loop);
  abx_core_sink_register(L);
  abx_core_fs_register(L, loop);
  abx_core_wire_register(L, loop);
  abx_core_png_register(L, loop);
  abx_core_pipe_register(L, loop);
  abx_core_httpd_register(L, loop);
  return 1;
}
