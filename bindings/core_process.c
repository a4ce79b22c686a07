/*
 * core_process.c: "abx.core" local child processes (contract: docs/ENGINE.md "Processes"):
 * core.process_start(argv, env) -> an "abx.process" handle whose output pipes are non-blocking,
 * so the Lua side (lib/abx/run/process.lua) polls them between core.sleep calls and never blocks
 * the loop. What scenarios use to run the abxlua CLI itself (scenarios/19_named_string_array.lua).
 *
 * Shapes:  argv: array of strings, argv[1] an absolute path or a name looked up in PATH here,
 *          before fork (nothing but async-signal-safe calls run between fork and exec); env: a
 *          table NAME -> value merged over this process's environment (false removes NAME), or
 *          nil. stdin is /dev/null; stdout and stderr are pipes.
 * Child:   PR_SET_PDEATHSIG(SIGKILL), so it never outlives the engine, and its own process group
 *          (h:kill signals the group).
 * Limits:  argv at most 256 entries; environment at most 4096 entries; h:read reads at most
 *          64 KiB per stream per call (the caller sets the total ceiling).
 * Errors:  InvalidArgument for a bad argv or env, NotFound when the program is not found,
 *          Internal when the pipes or fork fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core.h"
#include "errors.h"
#include "loop.h"

#define PROCESS_MT "abx.process"
#define MAX_ARGV 256
#define MAX_ENV 4096
#define READ_CHUNK 65536

extern char **environ;

struct process {
  pid_t pid;   /* 0 once reaped */
  int out, err; /* pipe read ends, -1 at EOF/closed */
  int status;  /* waitpid status once reaped */
  int reaped;
};

static struct process *process_check(lua_State *L)
{
  return luaL_checkudata(L, 1, PROCESS_MT);
}

/* Resolves `name` through PATH into out (a name with a '/' is taken as is). 0 or -1. */
static int find_program(const char *name, char *out, size_t n)
{
  if (strchr(name, '/')) {
    snprintf(out, n, "%s", name);
    return access(out, X_OK);
  }
  const char *path = getenv("PATH");
  if (!path)
    path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    size_t len = strcspn(path, ":");
    if (len > 0 && snprintf(out, n, "%.*s/%s", (int)len, path, name) < (int)n &&
        access(out, X_OK) == 0)
      return 0;
    path += len + (path[len] == ':');
  }
  return -1;
}

/* core.process_start(argv, env?) -> an abx.process handle (h:read(), h:poll(), h:kill(sig),
 * h:pid(), h:close()): argv[1] absolute or found in PATH; env NAME -> string (set) or false
 * (removed) over this process's environment. Raises InvalidArgument, NotFound, Internal. [-0, +1, e] */
static int core_process_start(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  int argc = (int)luaL_len(L, 1);
  if (argc < 1 || argc > MAX_ARGV)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                           "core.process_start: argv must have 1 to %d strings", MAX_ARGV);
  const char **argv = lua_newuserdatauv(L, sizeof(char *) * (size_t)(argc + 1), 0); /* [3] */
  for (int i = 1; i <= argc; i++) {
    if (lua_rawgeti(L, 1, i) != LUA_TSTRING)
      return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                             "core.process_start: argv[%d] is not a string", i);
    argv[i - 1] = lua_tostring(L, -1); /* alive in the argv table */
    lua_pop(L, 1);
  }
  argv[argc] = NULL;
  char prog[4096];
  if (find_program(argv[0], prog, sizeof prog) != 0)
    return abx_error_raise(L, loop->secrets, "NotFound", 0,
                           "core.process_start: %s: no such executable", argv[0]);
  /* the environment: ours, minus the names env overrides or removes, plus its values */
  size_t nenv = 0;
  while (environ[nenv])
    nenv++;
  if (nenv > MAX_ENV)
    nenv = MAX_ENV;
  const char **envp = lua_newuserdatauv(L, sizeof(char *) * (MAX_ENV * 2 + 1), 0); /* [4] */
  lua_newtable(L); /* [5] anchors the "NAME=value" strings made here until the fork */
  int anchor = lua_gettop(L), nanchor = 0;
  size_t k = 0;
  int has_env = lua_istable(L, 2);
  if (!lua_isnoneornil(L, 2) && !has_env)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                           "core.process_start: env must be a table or nil");
  for (size_t i = 0; i < nenv; i++) {
    const char *e = environ[i];
    size_t nl = strcspn(e, "=");
    int overridden = 0;
    if (has_env) {
      lua_pushlstring(L, e, nl);
      overridden = lua_rawget(L, 2) != LUA_TNIL;
      lua_pop(L, 1);
    }
    if (!overridden)
      envp[k++] = e;
  }
  if (has_env) {
    lua_pushnil(L);
    while (lua_next(L, 2) != 0) {
      int removal = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
      if (lua_type(L, -2) != LUA_TSTRING || (lua_type(L, -1) != LUA_TSTRING && !removal))
        return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                               "core.process_start: env maps names to strings (or false)");
      const char *name = lua_tostring(L, -2);
      if (!*name || strchr(name, '='))
        return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                               "core.process_start: env name %s is not a variable name", name);
      if (lua_type(L, -1) == LUA_TSTRING && k < MAX_ENV * 2) {
        lua_pushfstring(L, "%s=%s", name, lua_tostring(L, -1));
        envp[k++] = lua_tostring(L, -1);
        lua_rawseti(L, anchor, ++nanchor);
      }
      lua_pop(L, 1);
    }
  }
  envp[k] = NULL;
  int po[2] = {-1, -1}, pe[2] = {-1, -1};
  if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
    int e = errno;
    if (po[0] >= 0)
      close(po[0]), close(po[1]);
    return abx_error_raise(L, loop->secrets, "Internal", 0, "core.process_start: pipe: %s",
                           strerror(e));
  }
  struct process *p = lua_newuserdatauv(L, sizeof *p, 0); /* [6] */
  memset(p, 0, sizeof *p);
  p->out = p->err = -1;
  luaL_setmetatable(L, PROCESS_MT);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
    return abx_error_raise(L, loop->secrets, "Internal", 0, "core.process_start: fork: %s",
                           strerror(e));
  }
  if (pid == 0) { /* async-signal-safe calls only */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL), signal(SIGPIPE, SIG_DFL);
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
      _exit(127);
    execve(prog, (char *const *)argv, (char *const *)envp);
    _exit(127);
  }
  close(po[1]), close(pe[1]);
  fcntl(po[0], F_SETFL, O_NONBLOCK);
  fcntl(pe[0], F_SETFL, O_NONBLOCK);
  p->pid = pid;
  p->out = po[0];
  p->err = pe[0];
  return 1;
}

/* Reads what is there from one pipe (at most READ_CHUNK): pushes the bytes, "" when none is
 * ready yet, nil at EOF (the pipe is then closed). [-0, +1, m] */
static void read_pipe(lua_State *L, int *fd)
{
  if (*fd < 0) {
    lua_pushnil(L);
    return;
  }
  char buf[READ_CHUNK];
  ssize_t n = read(*fd, buf, sizeof buf);
  if (n > 0) {
    lua_pushlstring(L, buf, (size_t)n);
  } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    lua_pushliteral(L, "");
  } else {
    close(*fd);
    *fd = -1;
    lua_pushnil(L);
  }
}

/* h:read() -> stdout bytes | "" | nil (EOF), stderr bytes | "" | nil. Never blocks. */
static int process_read(lua_State *L)
{
  struct process *p = process_check(L);
  read_pipe(L, &p->out);
  read_pipe(L, &p->err);
  return 2;
}

/* h:poll() -> nil while running; the exit code (0..255), or -N when killed by signal N. */
static int process_poll(lua_State *L)
{
  struct process *p = process_check(L);
  if (!p->reaped && p->pid > 0) {
    pid_t r = waitpid(p->pid, &p->status, WNOHANG);
    if (r == p->pid)
      p->reaped = 1;
    else if (r < 0 && errno == ECHILD)
      p->reaped = 1, p->status = 0;
  }
  if (!p->reaped) {
    lua_pushnil(L);
    return 1;
  }
  if (WIFEXITED(p->status))
    lua_pushinteger(L, WEXITSTATUS(p->status));
  else
    lua_pushinteger(L, WIFSIGNALED(p->status) ? -WTERMSIG(p->status) : -1);
  return 1;
}

/* h:kill([signal]) -> true when sent to the process group. signal: an integer (default 15). */
static int process_kill(lua_State *L)
{
  struct process *p = process_check(L);
  int sig = (int)luaL_optinteger(L, 2, SIGTERM);
  luaL_argcheck(L, sig > 0 && sig < 65, 2, "a signal number");
  lua_pushboolean(L, !p->reaped && p->pid > 0 && kill(-p->pid, sig) == 0);
  return 1;
}

/* h.pid */
static int process_pid(lua_State *L)
{
  lua_pushinteger(L, process_check(L)->pid);
  return 1;
}

/* __gc / __close: a child still running is killed (its group, SIGKILL) and reaped; the pipes are
 * closed. No yield; the wait after SIGKILL is the kernel's teardown only. */
static int process_release(lua_State *L)
{
  struct process *p = process_check(L);
  if (!p->reaped && p->pid > 0) {
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &p->status, 0);
    p->reaped = 1;
  }
  if (p->out >= 0)
    close(p->out), p->out = -1;
  if (p->err >= 0)
    close(p->err), p->err = -1;
  return 0;
}

static const luaL_Reg process_methods[] = {
  {"read", process_read}, {"poll", process_poll}, {"kill", process_kill}, {"pid", process_pid},
  {"close", process_release}, {NULL, NULL}};
static const luaL_Reg process_meta[] = {
  {"__index", NULL}, {"__gc", process_release}, {"__close", process_release}, {NULL, NULL}};
static const luaL_Reg process_funcs[] = {{"process_start", core_process_start}, {NULL, NULL}};

void abx_core_process_register(lua_State *L, struct abx_loop *loop)
{
  luaL_newmetatable(L, PROCESS_MT);
  luaL_setfuncs(L, process_meta, 0);
  luaL_newlibtable(L, process_methods);
  luaL_setfuncs(L, process_methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, process_funcs, 1);
}
