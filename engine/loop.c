/*
 * loop.c: tasks, timers and the libcurl multi loop. See loop.h.
 *
 * One loop turn: resume the tasks that are ready (first in, first out), perform curl once without
 * waiting and fire the timers; when nothing is ready, poll curl for at most the time until the
 * next timer or deadline, perform, hand finished transfers and stream data to the bindings (which
 * push resume values), then fire sleeps and deadlines.
 */
#include "loop.h"
#include "http.h"

#include <lauxlib.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "secrets.h"

#define TASK_MT "abx.task"
#define MAX_POLL_MS 500

/* A new interrupt: run the Lua handler in a task of its own, then end every interruptible guard
 * (a test body): a waiting one resumes with Interrupted, a ready or busy one raises it at its next
 * instruction of scenario code or wait. The handler is queued first, so it runs (and announces the
 * interrupt) before the tests it stops. */
static void dispatch_interrupt(struct abx_loop *loop)
{
  int n = abx_interrupt_count();
  if (n == loop->interrupts_seen)
    return;
  loop->interrupts_seen = n;
  if (loop->on_interrupt_ref != LUA_NOREF && loop->on_interrupt_ref != 0) {
    lua_rawgeti(loop->L, LUA_REGISTRYINDEX, loop->on_interrupt_ref);
    abx_task_spawn(loop, loop->L, 0);
    lua_pop(loop->L, 1);
  }
  for (struct abx_task *t = loop->tasks; t; t = t->next)
    if (t->interruptible)
      abx_task_abort(t, "Interrupted", "the run was interrupted (SIGINT/SIGTERM)");
}

static const char *const state_names[] = {"ready", "waiting", "parked", "done"};

static int task_status(lua_State *L)
{
  struct abx_task *t = abx_task_check(L, 1);
  const char *s = state_names[t->state];
  if (t->state == ABX_TASK_WAITING && t->wake_ms > 0)
    s = "waiting";
  lua_pushstring(L, s);
  return 1;
}

static int task_tostring(lua_State *L)
{
  struct abx_task *t = abx_task_check(L, 1);
  lua_pushfstring(L, "abx.task(%p, %s)", (void *)t, state_names[t->state]);
  return 1;
}

static const luaL_Reg task_methods[] = {{"status", task_status}, {NULL, NULL}};

/* Lua's allocator: see abx_loop_new. Only a new block is prefaulted: Lua writes a new long
 * string whole right after allocating it, while a growing block (a luaL_Buffer's box) may never
 * be filled to its end, and prefaulting that tail would raise the RSS for nothing. */
static void *lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
  (void)ud, (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (!ptr)
    abx_prefault(p, nsize);
  return p;
}

/* The loop's error value until the bindings install theirs (struct abx_loop, push_error): the
 * string "Kind: message", the message masked. [-0, +1, m] */
static void push_plain_error(lua_State *L, struct abx_secrets *secrets, const char *kind,
                             int status, const char *message)
{
  (void)status;
  size_t n;
  char *masked = secrets ? abx_secrets_mask(secrets, message, strlen(message), &n) : NULL;
  if (secrets && !masked)
    message = "(message dropped: out of memory while masking)";
  lua_pushfstring(L, "%s: %s", kind, masked ? masked : message);
  free(masked);
}

struct abx_loop *abx_loop_new(lua_State *L, struct abx_secrets *secrets)
{
  struct abx_loop *loop = calloc(1, sizeof *loop);
  if (!loop)
    return NULL;
  loop->L = L;
  loop->secrets = secrets;
  loop->push_error = push_plain_error;
  lua_setallocf(L, lua_alloc, NULL);
  /* every thread copies the main thread's extra space when it is created: coroutines a test
   * creates with coroutine.create/wrap reach the loop from the count hook too */
  *(struct abx_loop **)lua_getextraspace(L) = loop;
  loop->on_interrupt_ref = LUA_NOREF;
  loop->multi = curl_multi_init();
  if (!loop->multi) {
    free(loop);
    return NULL;
  }
  if (luaL_newmetatable(L, TASK_MT)) {
    lua_pushcfunction(L, task_tostring);
    lua_setfield(L, -2, "__tostring");
    luaL_newlib(L, task_methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  return loop;
}

void abx_loop_free(struct abx_loop *loop)
{
  if (!loop)
    return;
  curl_multi_cleanup(loop->multi);
  free(loop);
}

struct abx_task *abx_task_check(lua_State *L, int idx)
{
  return luaL_checkudata(L, idx, TASK_MT);
}

static void list_remove(struct abx_loop *loop, struct abx_task *t)
{
  if (t->prev)
    t->prev->next = t->next;
  else
    loop->tasks = t->next;
  if (t->next)
    t->next->prev = t->prev;
  else
    loop->tasks_tail = t->prev;
  t->prev = t->next = NULL;
}

/* Count hook of every task coroutine: a test busy in Lua never reaches a wait where its deadline
 * could stop it, so every HOOK_COUNT instructions the running task's deadline and a pending
 * interrupt are checked here (redis does the same with luaMaskCountHook). Once a guarded task has
 * expired the hook is re-armed to fire at every instruction and raises in every frame of scenario
 * code until the guard is reached: a pcall loop cannot swallow the deadline (redis re-arms its
 * hook the same way after a script's time limit). Frames of the embedded lib/abx modules are left
 * alone so that their own bookkeeping (slot queues, retries) completes; they propagate the error
 * or wait again, and a wait raises at once (abx_task_check_expired). */
#define HOOK_COUNT 100000
#define LIB_CHUNK_PREFIX "@lib/abx/"

static void deadline_hook(lua_State *L, lua_Debug *ar);

static void copy_str(char *dst, size_t size, const char *src)
{
  snprintf(dst, size, "%s", src ? src : "");
}

void abx_task_expire(struct abx_task *t, const char *kind, const char *message)
{
  if (!t->guarded || t->expired_kind)
    return;
  t->expired_kind = kind;
  copy_str(t->expired_msg, sizeof t->expired_msg, message);
  t->deadline_ms = 0;
  lua_sethook(t->co, deadline_hook, LUA_MASKCOUNT, 1);
}

void abx_task_push_expired(lua_State *L, struct abx_task *t)
{
  t->loop->push_error(L, t->loop->secrets, t->expired_kind, 0, t->expired_msg);
  if (t->expired_where[0]) {
    lua_pushstring(L, t->expired_where);
    lua_setfield(L, -2, "where");
  }
}

void abx_task_check_expired(lua_State *L, struct abx_task *t)
{
  if (t->guarded && t->expired_kind && !t->in_handler) {
    abx_task_push_expired(L, t);
    lua_error(L);
  }
}

void abx_task_guard_end(struct abx_task *t)
{
  t->guarded = 0;
  t->interruptible = 0;
  t->deadline_ms = 0;
  t->expired_kind = NULL;
  t->expired_msg[0] = t->expired_where[0] = t->limit[0] = '\0';
  lua_sethook(t->co, deadline_hook, LUA_MASKCOUNT, HOOK_COUNT);
}

void abx_task_deadline_msg(const struct abx_task *t, const char *doing, char *buf, size_t size)
{
  if (t->limit[0])
    snprintf(buf, size, "%s: the deadline passed while it was %s", t->limit, doing);
  else
    snprintf(buf, size, "the test's deadline passed while it was %s", doing);
}

static void deadline_hook(lua_State *L, lua_Debug *ar)
{
  struct abx_loop *loop = *(struct abx_loop **)lua_getextraspace(L);
  struct abx_task *t = loop ? loop->current : NULL;
  if (!t || t->in_handler)
    return;
  if (!t->expired_kind) {
    if (abx_interrupt_count() != loop->interrupts_seen && t->guarded && t->interruptible) {
      abx_task_expire(t, "Interrupted", "the run was interrupted (SIGINT/SIGTERM)");
    } else if (t->deadline_ms != 0 && abx_now_ms() >= t->deadline_ms) {
      if (!t->guarded) { /* a task without a guard: one Timeout, as a wait would raise */
        t->deadline_ms = 0;
        loop->push_error(L, loop->secrets, "Timeout", 0,
                         "the task's deadline passed while it was running Lua code (busy loop?)");
        lua_error(L);
      }
      char msg[sizeof t->expired_msg];
      abx_task_deadline_msg(t, "running Lua code (busy loop?)", msg, sizeof msg);
      abx_task_expire(t, "Timeout", msg);
    } else {
      return;
    }
    if (L != t->co) /* a coroutine of the test's own: it fires at every instruction too */
      lua_sethook(L, deadline_hook, LUA_MASKCOUNT, 1);
  }
  if (!lua_getinfo(L, "Sl", ar) ||
      strncmp(ar->source, LIB_CHUNK_PREFIX, sizeof LIB_CHUNK_PREFIX - 1) == 0)
    return;
  if (!t->expired_where[0] && ar->currentline > 0)
    snprintf(t->expired_where, sizeof t->expired_where, "%s:%d", ar->short_src, ar->currentline);
  abx_task_push_expired(L, t);
  lua_error(L);
}

static void queue_push(struct abx_loop *loop, struct abx_task *t)
{
  if (t->queued)
    return;
  t->queued = 1;
  t->qnext = NULL;
  if (loop->ready_tail)
    loop->ready_tail->qnext = t;
  else
    loop->ready_head = t;
  loop->ready_tail = t;
}

static struct abx_task *queue_pop(struct abx_loop *loop)
{
  struct abx_task *t = loop->ready_head;
  if (!t)
    return NULL;
  loop->ready_head = t->qnext;
  if (!loop->ready_head)
    loop->ready_tail = NULL;
  t->qnext = NULL;
  t->queued = 0;
  return t;
}

struct abx_task *abx_task_spawn(struct abx_loop *loop, lua_State *L, int nargs)
{
  luaL_checkstack(L, 3, "spawning a task");
  struct abx_task *t = lua_newuserdatauv(L, sizeof *t, 1); /* fn args... ud */
  memset(t, 0, sizeof *t);
  luaL_setmetatable(L, TASK_MT);
  lua_State *co = lua_newthread(L); /* fn args... ud co */
  *(struct abx_loop **)lua_getextraspace(co) = loop;
  lua_sethook(co, deadline_hook, LUA_MASKCOUNT, HOOK_COUNT);
  lua_setiuservalue(L, -2, 1); /* fn args... ud */
  lua_insert(L, -(nargs + 2)); /* ud fn args... */
  lua_xmove(L, co, nargs + 1); /* ud */
  t->loop = loop;
  t->co = co;
  t->nargs = nargs;
  t->state = ABX_TASK_READY;
  lua_pushvalue(L, -1);
  t->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  t->prev = loop->tasks_tail; /* oldest first: timers due together fire in age order */
  if (loop->tasks_tail)
    loop->tasks_tail->next = t;
  else
    loop->tasks = t;
  loop->tasks_tail = t;
  loop->live++;
  queue_push(loop, t);
  return t;
}

struct abx_task *abx_task_require(lua_State *L, struct abx_loop *loop, const char *what)
{
  struct abx_task *t = loop->current;
  if (!t)
    luaL_error(L, "%s must be called from a task (inside a test or core.run)", what);
  if (t->co != L)
    luaL_error(L,
               "%s cannot wait inside a coroutine created with coroutine.create/wrap; "
               "call it from the test function itself or use core.spawn",
               what);
  abx_task_check_expired(L, t);
  return t;
}

void abx_task_wait(struct abx_task *t, struct abx_wait *w, enum abx_task_state state)
{
  t->wait = w;
  t->state = state;
}

void abx_task_ready(struct abx_task *t, int nargs)
{
  t->wait = NULL;
  t->wake_ms = 0;
  t->nargs = nargs;
  t->state = ABX_TASK_READY;
  queue_push(t->loop, t);
}

void abx_task_abort(struct abx_task *t, const char *kind, const char *message)
{
  abx_task_expire(t, kind, message);
  if (t->state != ABX_TASK_WAITING && t->state != ABX_TASK_PARKED)
    return;
  struct abx_wait *w = t->wait;
  t->wait = NULL;
  if (w && w->cancel)
    w->cancel(w);
  lua_checkstack(t->co, 3);
  lua_pushboolean(t->co, 0);
  t->loop->push_error(t->co, t->loop->secrets, kind, 0, message);
  abx_task_ready(t, 2);
}

/* A task's coroutine finished (ok or not): report an escaped error, release the task. */
static void task_finish(struct abx_loop *loop, struct abx_task *t, int status)
{
  lua_State *L = loop->L;
  if (status != LUA_OK && status != LUA_YIELD) {
    const char *msg = NULL;
    if (!lua_isstring(t->co, -1)) /* an abx.error (a table) through its __tostring */
      msg = luaL_tolstring(t->co, -1, NULL);
    else
      msg = lua_tostring(t->co, -1);
    luaL_traceback(L, t->co, msg, 0);
    /* through the masked writer, so it lands after any tail stderr still holds back */
    lua_pushliteral(L, "abxlua: internal error in a task: ");
    lua_insert(L, -2);
    lua_pushliteral(L, "\n");
    lua_concat(L, 3);
    size_t n;
    const char *line = lua_tolstring(L, -1, &n);
    abx_secrets_write(loop->secrets, stderr, line, n);
    lua_pop(L, 1);
    loop->task_errors++;
  }
  lua_resetthread(t->co); /* runs pending to-be-closed variables (5.4.4: not lua_closethread) */
  t->state = ABX_TASK_DONE;
  list_remove(loop, t);
  loop->live--;
  luaL_unref(L, LUA_REGISTRYINDEX, t->ref);
  t->ref = LUA_NOREF;
}

static void resume_task(struct abx_loop *loop, struct abx_task *t)
{
  int nres = 0;
  int nargs = t->nargs;
  if (!t->started) {
    t->started = 1;
  }
  t->nargs = 0;
  t->state = ABX_TASK_WAITING; /* a binding that yields sets the precise state */
  loop->current = t;
  int status = lua_resume(t->co, loop->L, nargs, &nres);
  loop->current = NULL;
  if (status == LUA_YIELD) {
    lua_pop(t->co, nres);
    if (t->state == ABX_TASK_WAITING && !t->wait && t->wake_ms == 0) {
      /* coroutine.yield() straight to the loop: treat as a cooperative pause */
      abx_task_ready(t, 0);
    }
    return;
  }
  task_finish(loop, t, status);
}

static double next_timer_ms(struct abx_loop *loop)
{
  double next = 0;
  for (struct abx_task *t = loop->tasks; t; t = t->next) {
    if (t->wake_ms > 0 && (next == 0 || t->wake_ms < next))
      next = t->wake_ms;
    if (t->deadline_ms > 0 && t->state != ABX_TASK_READY && (next == 0 || t->deadline_ms < next))
      next = t->deadline_ms;
  }
  return next;
}

static void fire_timers(struct abx_loop *loop)
{
  double now = abx_now_ms();
  for (struct abx_task *t = loop->tasks; t; t = t->next) {
    if (t->state == ABX_TASK_READY)
      continue;
    if (t->deadline_ms > 0 && t->deadline_ms <= now) {
      t->deadline_ms = 0;
      t->wake_ms = 0;
      char msg[sizeof t->expired_msg];
      abx_task_deadline_msg(t, "waiting", msg, sizeof msg);
      abx_task_abort(t, "Timeout", msg);
    } else if (t->wake_ms > 0 && t->wake_ms <= now) {
      lua_checkstack(t->co, 1);
      lua_pushboolean(t->co, 1);
      abx_task_ready(t, 1);
    }
  }
}

void abx_loop_watch(struct abx_loop *loop, struct abx_fdwatch *w)
{
  if (w->linked)
    return;
  w->prev = NULL;
  w->next = loop->watches;
  if (loop->watches)
    loop->watches->prev = w;
  loop->watches = w;
  w->linked = 1;
  loop->nwatches++;
}

void abx_loop_unwatch(struct abx_loop *loop, struct abx_fdwatch *w)
{
  if (!w->linked)
    return;
  if (w->prev)
    w->prev->next = w->next;
  else
    loop->watches = w->next;
  if (w->next)
    w->next->prev = w->prev;
  w->prev = w->next = NULL;
  w->linked = 0;
  loop->nwatches--;
}

/* The earliest due time of the watches, 0 when none. */
static double next_due_ms(struct abx_loop *loop)
{
  double next = 0;
  for (struct abx_fdwatch *w = loop->watches; w; w = w->next)
    if (w->due_ms > 0 && (next == 0 || w->due_ms < next))
      next = w->due_ms;
  return next;
}

/* Waits up to 'timeout' ms for curl's sockets and the watched descriptors together
 * (curl_multi_poll's extra_fds), then hands each ready or due watch its turn. Each callback may
 * unwatch (or free) its own watch only, so the list is copied first and a watch unlinked by an
 * earlier callback of the same turn is skipped. Returns -1 when curl's multi interface failed. */
static int wait_watches(struct abx_loop *loop, int timeout)
{
  enum { MAX_WATCHES = 256 };
  struct curl_waitfd cfds[MAX_WATCHES];
  struct pollfd pfds[MAX_WATCHES];
  struct abx_fdwatch *polled[MAX_WATCHES], *due[MAX_WATCHES];
  unsigned n = 0, ndue = 0;
  for (struct abx_fdwatch *w = loop->watches; w && n < MAX_WATCHES; w = w->next) {
    if (w->fd < 0 || w->events == 0)
      continue;
    cfds[n].fd = w->fd;
    cfds[n].events = (short)(((w->events & POLLIN) ? CURL_WAIT_POLLIN : 0) |
                             ((w->events & POLLOUT) ? CURL_WAIT_POLLOUT : 0));
    cfds[n].revents = 0;
    pfds[n].fd = w->fd;
    pfds[n].events = w->events;
    pfds[n].revents = 0;
    polled[n++] = w;
  }
  if (curl_multi_poll(loop->multi, cfds, n, timeout, NULL) != CURLM_OK)
    return -1;
  /* curl reports POLLIN/POLLOUT of extra fds but drops POLLHUP and POLLERR (a pipe whose writer
   * closed wakes the poll with neither): one poll(2) of our own, without waiting, tells them */
  if (n > 0 && poll(pfds, n, 0) < 0)
    n = 0;
  double now = abx_now_ms();
  for (struct abx_fdwatch *w = loop->watches; w && ndue < MAX_WATCHES; w = w->next)
    if (w->due_ms > 0 && w->due_ms <= now)
      due[ndue++] = w;
  for (unsigned i = 0; i < n + ndue; i++) {
    struct abx_fdwatch *w = i < n ? polled[i] : due[i - n];
    short ev = i < n ? pfds[i].revents : 0;
    if (!w || (i < n && ev == 0))
      continue;
    int still = 0; /* an earlier callback of this turn may have unwatched it */
    for (struct abx_fdwatch *x = loop->watches; x && !still; x = x->next)
      still = x == w;
    if (!still || !w->on_ready)
      continue;
    if (i < n) {
      for (unsigned j = 0; j < ndue; j++)
        if (due[j] == w)
          due[j] = NULL; /* this turn serves its due time too */
      if (w->due_ms > 0 && w->due_ms <= now)
        w->due_ms = 0;
    } else {
      if (!(w->due_ms > 0 && w->due_ms <= now))
        continue;
      w->due_ms = 0;
    }
    w->on_ready(w, ev);
  }
  return 0;
}

/* No task is ready, no transfer runs and no timer or watch is set: nothing can wake a task. Abort them all
 * (each resumes with an Internal error), so the run ends instead of hanging. */
static void break_deadlock(struct abx_loop *loop)
{
  for (struct abx_task *t = loop->tasks; t; t = t->next)
    if (t->state == ABX_TASK_PARKED || t->state == ABX_TASK_WAITING)
      abx_task_abort(t, "Internal", "deadlock: every task waits and nothing can wake them");
}

/* One non-blocking round of curl: progress transfers, hand finished ones and stream data to the
 * bindings. Returns -1 when curl's multi interface failed. */
static int perform(struct abx_loop *loop)
{
  int running = 0;
  if (curl_multi_perform(loop->multi, &running) != CURLM_OK)
    return -1;
  CURLMsg *msg;
  int left;
  while ((msg = curl_multi_info_read(loop->multi, &left)) != NULL)
    if (msg->msg == CURLMSG_DONE && loop->on_done_msg)
      loop->on_done_msg(loop, msg);
  if (loop->after_perform)
    loop->after_perform(loop);
  return 0;
}

int abx_loop_run(struct abx_loop *loop)
{
  while (loop->live > 0) {
    dispatch_interrupt(loop);
    if (loop->ready_head) {
      /* one pass: the tasks that are ready now, oldest first; those they make ready (and a
       * cooperative pause) wait for the next pass, behind curl and the timers */
      struct abx_task *last = loop->ready_tail;
      for (;;) {
        struct abx_task *t = queue_pop(loop);
        if (!t)
          break;
        if (t->state == ABX_TASK_READY)
          resume_task(loop, t);
        if (t == last)
          break;
      }
      if (loop->nwatches > 0 && wait_watches(loop, 0) != 0)
        return -1;
      if (loop->transfers > 0 && perform(loop) != 0)
        return -1;
      fire_timers(loop);
      continue;
    }

    double next = next_timer_ms(loop);
    double due = next_due_ms(loop);
    if (due > 0 && (next == 0 || due < next))
      next = due;
    if (loop->transfers == 0 && next == 0 && loop->nwatches == 0) {
      break_deadlock(loop);
      continue;
    }
    int timeout = MAX_POLL_MS;
    if (next > 0) {
      double d = next - abx_now_ms();
      timeout = d <= 0 ? 0 : (d < MAX_POLL_MS ? (int)d + 1 : MAX_POLL_MS);
    }
    if (loop->nwatches > 0) {
      if (wait_watches(loop, timeout) != 0)
        return -1;
      if (loop->transfers > 0 && perform(loop) != 0)
        return -1;
    } else if (loop->transfers > 0) {
      if (curl_multi_poll(loop->multi, NULL, 0, timeout, NULL) != CURLM_OK)
        return -1;
      if (perform(loop) != 0)
        return -1;
    } else if (timeout > 0) {
      struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
    fire_timers(loop);
  }
  return 0;
}
