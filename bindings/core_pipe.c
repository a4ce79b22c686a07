/*
 * core_pipe.c: pipes on the event loop and child processes with pipes (core.stdio,
 * core.process_start), for `abxlua mcp` (the stdio transport reads its stdin and writes its
 * stdout here) and its Lua client (which starts `abxlua mcp` as a child).
 *
 * Shapes:  pipe:read([max]) -> bytes (1..max, default 64 KiB), or nil at end of file
 *          pipe:write(s)    -> nothing, once every byte is written
 *          pipe:close()     idempotent; also __gc / __close
 *          core.stdio()     -> stdin pipe (fd 0), stdout pipe (fd 1)
 *          core.process_start{argv = {...}, env = {NAME = value | false} | nil, env_clear =
 *            false, cwd = path | nil, stderr = "inherit" | "null" | "pipe" | path,
 *            die_with_parent = true} -> process
 *            argv[1] is a path, or a name looked up in PATH (ours) before the fork (NotFound
 *            when it is nowhere); env is merged over this process's environment (false removes
 *            NAME), or with env_clear is the child's whole environment (a scenario running abxlua
 *            isolated: nothing of ours leaks in); cwd: the child's working directory (NotFound
 *            when it is no directory; default ours).
 *          process.stdin, process.stdout  pipes (the child's fd 0 and 1); process.stderr with
 *            stderr = "pipe"
 *          process:pid(), process:signal(n [, group]) -> boolean (false: already reaped;
 *            group: the child's whole process group),
 *          process:poll() -> nil while running, else { code = n } or { signal = n }
 * Yields:  read until the fd is readable, write until all is written (poll through the loop's
 *          watches, engine/loop.h abx_loop_watch); nothing else blocks.
 * Units:   bytes.
 * Errors:  Transport (read/write failure; "the other end closed" for EPIPE), InvalidArgument
 *          (closed pipe, a read end written or a write end read, bad options), NotFound (the
 *          program), Internal (fork, pipe). A read or write waiting when the task is aborted is cancelled (bytes a write
 *          already sent stay sent).
 * Notes:   Pipes the engine made are O_NONBLOCK. fd 0 and 1 are shared with whoever started us,
 *          so their flags are left alone: a read follows POLLIN (it does not block then), a write
 *          follows POLLOUT and sends at most PIPE_BUF bytes (which a pipe with POLLOUT takes
 *          without blocking). SIGPIPE is ignored once a pipe exists (a closed reader is EPIPE);
 *          children get the default disposition back. A child runs in its own process group and,
 *          with die_with_parent, gets SIGTERM when the engine dies (PR_SET_PDEATHSIG). A process
 *          collected by __gc while running gets SIGKILL (no wait: no I/O in __gc).
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errors.h"
#include "loop.h"
#include "platform.h"
#include "secrets.h"

#define PIPE_MT "abx.pipe"
#define PROC_MT "abx.process"
#define READ_CHUNK (64 * 1024)

struct pipe {
  struct abx_fdwatch w; /* first: the watch callback finds the pipe from it */
  struct abx_wait wait; /* the waiting task's cancel */
  struct abx_loop *loop;
  int fd;                /* -1 once closed */
  int writer;            /* 1: a write end, 0: a read end */
  int shared;            /* fd 0 or 1 of the process: blocking, never closed by us */
  struct abx_task *task; /* the task waiting in read or write, or NULL */
  size_t max;            /* read: bytes wanted at most */
  const char *buf;       /* write: the string (anchored on the waiting task's stack) */
  size_t len, off;
};

struct proc {
  pid_t pid;  /* 0 once reaped */
  int status; /* waitpid's, once reaped */
};

static struct pipe *pipe_check(lua_State *L, int idx)
{
  return luaL_checkudata(L, idx, PIPE_MT);
}

static void pipe_unwait(struct pipe *p)
{
  p->task = NULL;
  p->w.events = 0;
  abx_loop_unwatch(p->loop, &p->w);
}

/* A read or write was abandoned (deadline, interrupt): the loop resumes the task itself. */
static void pipe_cancel(struct abx_wait *w)
{
  struct pipe *p = (struct pipe *)((char *)w - offsetof(struct pipe, wait));
  pipe_unwait(p);
  p->buf = NULL;
}

/* Resumes the waiting task with (false, Transport error). */
static void pipe_fail(struct pipe *p, const char *what, int err)
{
  struct abx_task *t = p->task;
  pipe_unwait(p);
  p->buf = NULL;
  char msg[200];
  if (err == EPIPE)
    snprintf(msg, sizeof msg, "pipe %s: the other end closed", what);
  else
    snprintf(msg, sizeof msg, "pipe %s: %s", what, strerror(err));
  lua_checkstack(t->co, 3);
  lua_pushboolean(t->co, 0);
  abx_error_push(t->co, t->loop->secrets, "Transport", 0, msg);
  abx_task_ready(t, 2);
}

static void pipe_ready(struct abx_fdwatch *w, short revents)
{
  struct pipe *p = (struct pipe *)w;
  struct abx_task *t = p->task;
  if (!t || revents == 0)
    return;
  if (!p->writer) {
    char buf[READ_CHUNK];
    size_t want = p->max < sizeof buf ? p->max : sizeof buf;
    ssize_t n = read(p->fd, buf, want);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    if (n < 0)
      return pipe_fail(p, "read", errno);
    pipe_unwait(p);
    lua_checkstack(t->co, 3);
    lua_pushboolean(t->co, 1);
    if (n == 0)
      lua_pushnil(t->co);
    else
      lua_pushlstring(t->co, buf, (size_t)n);
    abx_task_ready(t, 2);
    return;
  }
  while (p->off < p->len) {
    size_t left = p->len - p->off;
    if (p->shared && left > PIPE_BUF)
      left = PIPE_BUF;
    ssize_t n = write(p->fd, p->buf + p->off, left);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      return; /* the rest when it is writable again */
    if (n < 0)
      return pipe_fail(p, "write", errno);
    p->off += (size_t)n;
    if (p->shared)
      break; /* one bounded write per POLLOUT: the next may block */
  }
  if (p->off < p->len)
    return;
  pipe_unwait(p);
  p->buf = NULL;
  lua_checkstack(t->co, 1);
  lua_pushboolean(t->co, 1);
  abx_task_ready(t, 1);
}

static int pipe_k(lua_State *L, int status, lua_KContext keep)
{
  (void)status;
  int base = (int)keep + 1;
  if (!lua_toboolean(L, base))
    return lua_error(L);
  return lua_gettop(L) - base;
}

static struct pipe *pipe_push(lua_State *L, struct abx_loop *loop, int fd, int writer, int shared)
{
  struct pipe *p = lua_newuserdatauv(L, sizeof *p, 0);
  memset(p, 0, sizeof *p);
  p->fd = fd;
  p->writer = writer;
  p->shared = shared;
  p->loop = loop;
  p->w.fd = fd;
  p->w.on_ready = pipe_ready;
  p->wait.cancel = pipe_cancel;
  luaL_setmetatable(L, PIPE_MT);
  return p;
}

/* Starts a wait on the pipe at 1 and yields. [-0, +?, v] */
static int pipe_wait(lua_State *L, struct pipe *p, const char *what, int keep)
{
  struct abx_task *t = abx_task_require(L, p->loop, what);
  abx_task_check_expired(L, t);
  if (p->task)
    return luaL_error(L, "%s: another task is already waiting on this pipe", what);
  p->task = t;
  p->w.fd = p->fd;
  p->w.events = p->writer ? POLLOUT : POLLIN;
  abx_loop_watch(p->loop, &p->w);
  abx_task_wait(t, &p->wait, ABX_TASK_WAITING);
  return lua_yieldk(L, 0, keep, pipe_k);
}

/* pipe:read([max]) -> bytes | nil (end of file). Yields until readable. */
static int pipe_read(lua_State *L)
{
  struct pipe *p = pipe_check(L, 1);
  lua_Integer max = luaL_optinteger(L, 2, READ_CHUNK);
  luaL_argcheck(L, max > 0, 2, "max must be at least 1 byte");
  if (p->fd < 0)
    return abx_error_raise(L, p->loop->secrets, "InvalidArgument", 0,
                           "pipe:read: the pipe is closed");
  if (p->writer)
    return abx_error_raise(L, p->loop->secrets, "InvalidArgument", 0,
                           "pipe:read: this is a write end");
  p->max = (size_t)max;
  lua_settop(L, 1);
  return pipe_wait(L, p, "pipe:read", 1);
}

/* pipe:write(s). Yields until every byte is written. */
static int pipe_write(lua_State *L)
{
  struct pipe *p = pipe_check(L, 1);
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n);
  if (p->fd < 0)
    return abx_error_raise(L, p->loop->secrets, "InvalidArgument", 0,
                           "pipe:write: the pipe is closed");
  if (!p->writer)
    return abx_error_raise(L, p->loop->secrets, "InvalidArgument", 0,
                           "pipe:write: this is a read end");
  if (n == 0)
    return 0;
  lua_settop(L, 2); /* the string stays on this stack, so p->buf stays valid while we wait */
  p->buf = s;
  p->len = n;
  p->off = 0;
  return pipe_wait(L, p, "pipe:write", 2);
}

static int pipe_close(lua_State *L)
{
  struct pipe *p = pipe_check(L, 1);
  if (p->task) /* a waiter elsewhere: it resumes with an error on its next turn */
    pipe_fail(p, p->writer ? "write" : "read", EBADF);
  abx_loop_unwatch(p->loop, &p->w);
  if (p->fd >= 0 && !p->shared)
    close(p->fd);
  p->fd = -1;
  return 0;
}

static int pipe_fd(lua_State *L)
{
  lua_pushinteger(L, pipe_check(L, 1)->fd);
  return 1;
}

static void ignore_sigpipe(void)
{
  static int done; /* set once; signals are process-wide anyway */
  if (!done) {
    signal(SIGPIPE, SIG_IGN);
    done = 1;
  }
}

/* core.stdio() -> stdin pipe, stdout pipe (fds 0 and 1, left blocking, never closed by us). */
static int core_stdio(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  ignore_sigpipe();
  pipe_push(L, loop, 0, 0, 1);
  pipe_push(L, loop, 1, 1, 1);
  return 2;
}

static struct proc *proc_check(lua_State *L, int idx)
{
  return luaL_checkudata(L, idx, PROC_MT);
}

/* Reaps the child if it ended; returns 1 when it has been reaped (now or before). */
static int proc_reap(struct proc *pr)
{
  if (pr->pid == 0)
    return 1;
  int st;
  pid_t r = waitpid(pr->pid, &st, WNOHANG);
  if (r == pr->pid || (r < 0 && errno == ECHILD)) {
    pr->status = r == pr->pid ? st : 0;
    pr->pid = 0;
    return 1;
  }
  return 0;
}

static int proc_pid(lua_State *L)
{
  struct proc *pr = proc_check(L, 1);
  lua_getiuservalue(L, 1, 1); /* the pid as started, also after the reap */
  (void)pr;
  return 1;
}

/* process:signal(n) -> true, or false when the child was already reaped. */
static int proc_signal(lua_State *L)
{
  struct proc *pr = proc_check(L, 1);
  int sig = (int)luaL_checkinteger(L, 2);
  luaL_argcheck(L, sig > 0 && sig < 65, 2, "a signal number (1..64)");
  if (proc_reap(pr)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  /* the child leads its own process group (setpgid in the child): group = true reaches what
   * it started too (a shell's children hold the pipes open after the shell is gone) */
  pid_t to = lua_toboolean(L, 3) ? -pr->pid : pr->pid;
  lua_pushboolean(L, kill(to, sig) == 0);
  return 1;
}

/* process:poll() -> nil while it runs, else {code = exit code} or {signal = n}. */
static int proc_poll(lua_State *L)
{
  struct proc *pr = proc_check(L, 1);
  if (!proc_reap(pr))
    return 0;
  lua_createtable(L, 0, 1);
  if (WIFSIGNALED(pr->status)) {
    lua_pushinteger(L, WTERMSIG(pr->status));
    lua_setfield(L, -2, "signal");
  } else {
    lua_pushinteger(L, WEXITSTATUS(pr->status));
    lua_setfield(L, -2, "code");
  }
  return 1;
}

static int proc_gc(lua_State *L)
{
  struct proc *pr = proc_check(L, 1);
  if (!proc_reap(pr)) {
    kill(pr->pid, SIGKILL);
    proc_reap(pr); /* if it has not died yet, init reaps it after we exit */
  }
  return 0;
}

/* Collects the string array at 'idx' (1..n, strings only) into a NULL-terminated malloc'ed
 * array; the strings stay owned by Lua (the table is on the stack through the fork). */
static char **string_array(lua_State *L, int idx, const char *what)
{
  lua_Integer n = luaL_len(L, idx);
  char **a = calloc((size_t)n + 1, sizeof *a);
  if (!a)
    luaL_error(L, "out of memory");
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_geti(L, idx, i) != LUA_TSTRING) {
      free(a);
      abx_error_raise(L, NULL, "InvalidArgument", 0, "core.process_start: %s[%d] must be a string",
                      what, (int)i);
    }
    a[i - 1] = (char *)lua_tostring(L, -1);
    lua_pop(L, 1); /* the table keeps the string alive */
  }
  return a;
}

/* Resolves `name` through PATH into out (a name with a '/' is taken as is): 0, or -1 when no
 * executable file of that name is found. Done before the fork: the child only execs. */
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

extern char **environ;

/* Whether environ entry `e` ("NAME=value") names a key of the env table at `envt`. */
static int env_overridden(lua_State *L, int envt, const char *e)
{
  const char *eq = strchr(e, '=');
  if (!envt || !eq)
    return 0;
  lua_pushlstring(L, e, (size_t)(eq - e));
  int t = lua_rawget(L, envt);
  lua_pop(L, 1);
  return t != LUA_TNIL;
}

/* One core.process_start call: its options as read and checked, and what the child gets. The
 * strings stay owned by Lua: the opts table and the table of env strings stay on the stack
 * through the fork. */
struct spawn {
  int envt; /* stack index of opts.env, 0: none */
  int stderr_null, stderr_pipe;
  const char *stderr_path;    /* stderr appended to this file; NULL: inherited, null or piped */
  int pdeath;                 /* die_with_parent: SIGTERM when the engine dies */
  int clear;                  /* env_clear: none of the engine's environment */
  const char *cwd;            /* NULL: the engine's */
  char **argv;                /* malloc'd (spawn_free) */
  char prog[4096];            /* argv[0] resolved through PATH */
  char **envs;                /* malloc'd (spawn_free); NULL until spawn_env */
  int in[2], out[2], errp[2]; /* the child's stdin, stdout, and stderr when piped */
};

static void spawn_free(struct spawn *sp)
{
  free(sp->argv);
  free(sp->envs);
  sp->argv = sp->envs = NULL;
}

/* Reads and checks the options at index 1 into 'sp' (stack afterwards: [2] argv, [3] env,
 * [4] stderr, [5] die_with_parent, [6] cwd) and resolves the program. Raises InvalidArgument or
 * NotFound as core.process_start documents. [-0, +5, v] */
static void spawn_read_opts(lua_State *L, struct abx_loop *loop, struct spawn *sp)
{
  if (lua_getfield(L, 1, "argv") != LUA_TTABLE || luaL_len(L, 2) < 1)
    abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                    "core.process_start: argv must be a non-empty "
                    "array of strings");
  sp->envt = lua_getfield(L, 1, "env") == LUA_TTABLE ? 3 : 0; /* [3] env or nil */
  if (lua_getfield(L, 1, "stderr") == LUA_TSTRING) {          /* [4] */
    const char *s = lua_tostring(L, 4);
    if (strcmp(s, "null") == 0)
      sp->stderr_null = 1;
    else if (strcmp(s, "pipe") == 0)
      sp->stderr_pipe = 1;
    else if (strcmp(s, "inherit") != 0)
      sp->stderr_path = s;
  } else if (!lua_isnil(L, 4)) {
    abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                    "core.process_start: stderr must be \"inherit\", "
                    "\"null\", \"pipe\" or a file path");
  }
  lua_getfield(L, 1, "die_with_parent"); /* [5] */
  sp->pdeath = lua_isnil(L, 5) || lua_toboolean(L, 5);
  int cwd_t = lua_getfield(L, 1, "cwd"); /* [6]: keeps the string alive through the fork */
  int clear_t = lua_getfield(L, 1, "env_clear");
  sp->clear = lua_toboolean(L, -1);
  lua_pop(L, 1);
  sp->cwd = cwd_t == LUA_TSTRING ? lua_tostring(L, 6) : NULL;
  if ((clear_t != LUA_TNIL && clear_t != LUA_TBOOLEAN) || (cwd_t != LUA_TNIL && !sp->cwd))
    abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                    "core.process_start: env_clear "
                    "must be a boolean and cwd a path string");
  struct stat cst;
  if (sp->cwd && (stat(sp->cwd, &cst) != 0 || !S_ISDIR(cst.st_mode)))
    abx_error_raise(L, loop->secrets, "NotFound", 0,
                    "core.process_start: cwd %s is no "
                    "directory",
                    sp->cwd);
  sp->argv = string_array(L, 2, "argv");
  if (find_program(sp->argv[0], sp->prog, sizeof sp->prog) != 0) {
    const char *name = sp->argv[0]; /* owned by opts.argv */
    spawn_free(sp);
    abx_error_raise(L, loop->secrets, "NotFound", 0,
                    "core.process_start: no program %s "
                    "(not executable, or not in PATH)",
                    name);
  }
}

/* The child's environment, made before the fork (the child only execs): ours without the names
 * env sets or removes (all of it with env_clear), then env's NAME=value strings, kept alive by a
 * table pushed at [7]. Raises InvalidArgument for a bad env table (freeing sp). [-0, +1, v] */
static void spawn_env(lua_State *L, struct abx_loop *loop, struct spawn *sp)
{
  lua_newtable(L); /* [7] */
  int extra = 0;
  if (sp->envt) {
    lua_pushnil(L);
    while (lua_next(L, sp->envt)) {
      int vt = lua_type(L, -1);
      if (lua_type(L, -2) != LUA_TSTRING ||
          (vt != LUA_TSTRING && !(vt == LUA_TBOOLEAN && !lua_toboolean(L, -1)))) {
        spawn_free(sp);
        abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                        "core.process_start: env must map names to "
                        "strings (or false to remove one)");
      }
      if (vt == LUA_TSTRING) {
        lua_pushfstring(L, "%s=%s", lua_tostring(L, -2), lua_tostring(L, -1));
        lua_rawseti(L, 7, ++extra);
      }
      lua_pop(L, 1);
    }
  }
  size_t nenv = 0;
  while (!sp->clear && environ[nenv])
    nenv++;
  sp->envs = calloc(nenv + (size_t)extra + 1, sizeof *sp->envs);
  if (!sp->envs) {
    spawn_free(sp);
    luaL_error(L, "out of memory");
  }
  size_t ne = 0;
  for (size_t i = 0; i < nenv; i++)
    if (!env_overridden(L, sp->envt, environ[i]))
      sp->envs[ne++] = environ[i];
  for (int i = 1; i <= extra; i++) {
    lua_rawgeti(L, 7, i);
    sp->envs[ne++] = (char *)lua_tostring(L, -1);
    lua_pop(L, 1);
  }
}

/* The child's stdin and stdout pipes, and its stderr pipe when asked (all close-on-exec). Raises
 * Internal when one cannot be made (freeing sp, closing what was made). [-0, +0, v] */
static void spawn_pipes(lua_State *L, struct abx_loop *loop, struct spawn *sp)
{
  sp->errp[0] = sp->errp[1] = -1;
  if (pipe2(sp->in, O_CLOEXEC) != 0) {
    spawn_free(sp);
    abx_error_raise(L, loop->secrets, "Internal", 0, "pipe: %s", strerror(errno));
  }
  int perr = pipe2(sp->out, O_CLOEXEC) != 0 ? errno : 0;
  if (!perr && sp->stderr_pipe && pipe2(sp->errp, O_CLOEXEC) != 0) {
    perr = errno;
    close(sp->out[0]);
    close(sp->out[1]);
  }
  if (perr) {
    close(sp->in[0]);
    close(sp->in[1]);
    spawn_free(sp);
    abx_error_raise(L, loop->secrets, "Internal", 0, "pipe: %s", strerror(perr));
  }
}

/* In the forked child: its own process group, signals and mask reset, the pipes as stdin, stdout
 * (and stderr), then exec. Never returns; exits 127 when the exec fails. */
static _Noreturn void spawn_child(const struct spawn *sp, pid_t parent)
{
  if (sp->pdeath) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
      _exit(1);
  }
  setpgid(0, 0); /* the engine decides when we stop, not the terminal's Ctrl-C */
  if (sp->cwd && chdir(sp->cwd) != 0)
    _exit(127);
  signal(SIGPIPE, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  dup2(sp->in[0], 0);
  dup2(sp->out[1], 1);
  if (sp->stderr_pipe) {
    dup2(sp->errp[1], 2);
  } else if (sp->stderr_null || sp->stderr_path) {
    int fd = sp->stderr_null
                 ? open("/dev/null", O_WRONLY)
                 : open(sp->stderr_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
    if (fd >= 0)
      dup2(fd, 2);
  }
  execve(sp->prog, sp->argv, sp->envs);
  _exit(127);
}

/* In the parent after fork() returned 'pid' (errno 'err' when it is negative): closes the
 * child's ends and frees sp; raises Internal when the fork failed, else records the pid in the
 * process userdata at 'proc' and pushes the process table {stdin, stdout[, stderr], handle}.
 * [-0, +1, v] */
static void spawn_parent(lua_State *L, struct abx_loop *loop, struct spawn *sp, pid_t pid, int err,
                         int proc)
{
  spawn_free(sp);
  close(sp->in[0]);
  close(sp->out[1]);
  if (sp->stderr_pipe)
    close(sp->errp[1]);
  if (pid < 0) {
    close(sp->in[1]);
    close(sp->out[0]);
    if (sp->stderr_pipe)
      close(sp->errp[0]);
    abx_error_raise(L, loop->secrets, "Internal", 0, "fork: %s", strerror(err));
  }
  struct proc *pr = lua_touserdata(L, proc);
  pr->pid = pid;
  lua_pushinteger(L, pid);
  lua_setiuservalue(L, proc, 1);
  fcntl(sp->in[1], F_SETFL, O_NONBLOCK);
  fcntl(sp->out[0], F_SETFL, O_NONBLOCK);
  lua_createtable(L, 0, 2); /* the process table: {stdin, stdout, handle} */
  pipe_push(L, loop, sp->in[1], 1, 0);
  lua_setfield(L, -2, "stdin");
  pipe_push(L, loop, sp->out[0], 0, 0);
  lua_setfield(L, -2, "stdout");
  if (sp->stderr_pipe) {
    fcntl(sp->errp[0], F_SETFL, O_NONBLOCK);
    pipe_push(L, loop, sp->errp[0], 0, 0);
    lua_setfield(L, -2, "stderr");
  }
  lua_pushvalue(L, proc);
  lua_setfield(L, -2, "handle");
}

/* core.process_start(opts) -> process; opts {argv, env, env_clear, cwd, stderr, die_with_parent} (see
 * the file header). */
static int core_process_start(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  struct spawn sp = {0};
  spawn_read_opts(L, loop, &sp); /* [2..6] */
  spawn_env(L, loop, &sp);       /* [7] */
  spawn_pipes(L, loop, &sp);
  ignore_sigpipe();
  struct proc *pr = lua_newuserdatauv(L, sizeof *pr, 1);
  memset(pr, 0, sizeof *pr);
  luaL_setmetatable(L, PROC_MT);
  int top = lua_gettop(L);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0)
    spawn_child(&sp, parent);
  spawn_parent(L, loop, &sp, pid, errno, top);
  return 1;
}

/* core.self_exe() -> the engine's own executable (engine/platform.h), to start it as a child. */
static int core_self_exe(lua_State *L)
{
  lua_pushstring(L, abx_platform_exe());
  return 1;
}

static const luaL_Reg pipe_methods[] = {{"read", pipe_read},
                                        {"write", pipe_write},
                                        {"close", pipe_close},
                                        {"fd", pipe_fd},
                                        {NULL, NULL}};
static const luaL_Reg proc_methods[] = {
    {"pid", proc_pid}, {"signal", proc_signal}, {"poll", proc_poll}, {NULL, NULL}};
static const luaL_Reg pipe_funcs[] = {{"stdio", core_stdio},
                                      {"process_start", core_process_start},
                                      {"self_exe", core_self_exe},
                                      {NULL, NULL}};

void abx_core_pipe_register(lua_State *L, struct abx_loop *loop)
{
  luaL_newmetatable(L, PIPE_MT);
  lua_pushcfunction(L, pipe_close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, pipe_close);
  lua_setfield(L, -2, "__close");
  luaL_newlib(L, pipe_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newmetatable(L, PROC_MT);
  lua_pushcfunction(L, proc_gc);
  lua_setfield(L, -2, "__gc");
  luaL_newlib(L, proc_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, pipe_funcs, 1);
}
