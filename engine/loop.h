/*
 * loop.h: the engine's event loop: libcurl multi, timers, and tasks (one Lua coroutine each).
 *
 * Model:   one engine thread, one lua_State. A binding that waits (HTTP, timer, park) registers an
 *          abx_wait on the current task and yields (lua_yieldk). The loop resumes a task only from
 *          its own turn, never from inside a libcurl callback. Resume values are pushed onto the
 *          task's coroutine by whoever completes the wait: (true, results...) or (false, error).
 * Units:   times are milliseconds of CLOCK_MONOTONIC (double) in C; Lua speaks seconds.
 * Order:   ready tasks run first in, first out: a task made ready (spawned, woken, paused with
 *          coroutine.yield) goes to the tail of the queue; each pass runs the tasks that were
 *          ready when it began, then curl is performed once without waiting, so I/O is never
 *          starved by busy tasks and no task waits behind a newer one.
 * Limits:  a poll never sleeps longer than 500 ms, so deadlines are honoured within that.
 * Errors:  an error that escapes a task is printed (masked) with its traceback on stderr and
 *          counted in loop->task_errors; the run then exits 3.
 */
#ifndef ABX_LOOP_H
#define ABX_LOOP_H

#include <curl/curl.h>
#include <lua.h>

#include "clock.h" /* abx_now_ms: the engine's one clock */

struct abx_secrets;
struct abx_task;

/* Something a task waits on. 'cancel' releases its resources when the wait is abandoned (the
 * task's deadline passed, or the run is shutting down); it must not touch Lua. */
struct abx_wait {
  void (*cancel)(struct abx_wait *w);
};

enum abx_task_state { ABX_TASK_READY, ABX_TASK_WAITING, ABX_TASK_PARKED, ABX_TASK_DONE };

struct abx_task {
  struct abx_loop *loop;
  lua_State *co; /* the coroutine; anchored by the task userdata's user value */
  int ref;       /* registry ref to the task userdata while not done */
  enum abx_task_state state;
  int nargs;                    /* values pushed onto co for the next resume */
  int started;                  /* 0 until the first resume (co holds function + args) */
  double deadline_ms;           /* 0: none */
  double wake_ms;               /* sleep: when to wake; 0: not sleeping */
  struct abx_wait *wait;        /* what a WAITING task waits on (NULL for park and sleep) */
  struct abx_task *prev, *next; /* the loop's list of live tasks */
  struct abx_task *qnext;       /* the loop's ready queue (FIFO) */
  int queued;                   /* 1 while in the ready queue */
  int guarded;                  /* inside core.guard: a deadline or an interrupt cannot be caught */
  int interruptible;            /* the guard ends on SIGINT/SIGTERM (test bodies; not teardowns) */
  int in_handler;               /* running core.guard's message handler: the hook stays quiet */
  const char *expired_kind;     /* set once the guarded call must end: "Timeout", "Interrupted" */
  char expired_msg[768];        /* its message */
  char limit[512];              /* core.guard's `limit`: how a deadline failure names the limit
                                * ("the test ran 300 s, its limit (...)"); "" when none */
  char expired_where[256];      /* "file:line" of the scenario code running when it expired */
};

/* A file descriptor the loop polls for a binding (a pipe, a child's output, an HTTP server's epoll
 * fd), and/or a time at which the binding wants a turn. 'on_ready' runs on the loop's turn, never
 * inside a curl callback; it may push resume values onto a waiting task and make it ready (as a
 * finished transfer does), and may unwatch or free its own watch, but no other. */
struct abx_fdwatch {
  int fd;        /* -1: no descriptor, only the due time */
  short events;  /* POLLIN and/or POLLOUT; 0: not polled for now */
  double due_ms; /* CLOCK_MONOTONIC ms at which on_ready(w, 0) runs; 0: none */
  void (*on_ready)(struct abx_fdwatch *w, short revents); /* revents 0: the due time came */
  struct abx_fdwatch *prev, *next; /* the loop's list (owned by the loop while linked) */
  int linked;
};

struct abx_loop {
  lua_State *L; /* main state */
  CURLM *multi;
  struct abx_secrets *secrets;
  struct abx_task *tasks, *tasks_tail;      /* live tasks (not done), oldest first */
  struct abx_task *ready_head, *ready_tail; /* ready tasks, oldest first */
  struct abx_task *current;                 /* the task being resumed, or NULL */
  int live;                                 /* number of live tasks */
  int task_errors;                          /* errors that escaped a task */
  int transfers;                            /* curl easy handles in 'multi' */
  int trace; /* HTTP traces on stderr: 0 off, 1 requests and answers (-vv),
                                  2 also body excerpts (-vvv); always masked */
  /* Pushes the error value a task resumes with or raises: {kind, status, message}, message masked
   * with 'secrets'. The bindings set it to abx_error_push (the typed abx.error, bindings/errors.h)
   * when abx.core opens, so the loop needs no Lua-facing header; until then a plain string
   * "Kind: message". [-0, +1, m] */
  void (*push_error)(lua_State *L, struct abx_secrets *secrets, const char *kind, int status,
                     const char *message);
  void (*after_perform)(struct abx_loop *loop);             /* bindings: deliver stream events */
  void (*on_done_msg)(struct abx_loop *loop, CURLMsg *msg); /* bindings: a transfer ended */
  void *streams;               /* bindings/core_http.c: live Connect streams */
  int on_interrupt_ref;        /* registry ref of the Lua interrupt handler, or LUA_NOREF */
  int interrupts_seen;         /* interrupts already handed to the handler */
  struct abx_fdwatch *watches; /* abx_loop_watch: polled with curl's sockets */
  int nwatches;
};

/* Creates a loop over 'L' (kept, not owned). Returns NULL when curl cannot be initialised.
 * It replaces L's allocator with one that is realloc and free as luaL_newstate's (so blocks
 * from before are freed alike) plus abx_prefault on large blocks. */
struct abx_loop *abx_loop_new(lua_State *L, struct abx_secrets *secrets);
void abx_loop_free(struct abx_loop *loop);

/* Creates a task running the function at the top of L's stack with the 'nargs' values above it
 * (popped). Pushes the task userdata ("abx.task"). [-(nargs+1), +1, m] */
struct abx_task *abx_task_spawn(struct abx_loop *loop, lua_State *L, int nargs);

/* The task userdata at 'idx', or raises a type error. [-0, +0, v] */
struct abx_task *abx_task_check(lua_State *L, int idx);

/* The task that is running now; raises when called outside a task or from a coroutine the task
 * created itself (a yield there would not reach the loop). [-0, +0, v] */
struct abx_task *abx_task_require(lua_State *L, struct abx_loop *loop, const char *what);

/* Marks the current task as waiting on 'w' (NULL: parked or sleeping). */
void abx_task_wait(struct abx_task *t, struct abx_wait *w, enum abx_task_state state);

/* Makes a waiting task ready; the caller has pushed 'nargs' resume values onto t->co. */
void abx_task_ready(struct abx_task *t, int nargs);

/* Cancels the task's wait (if any) and makes it ready with (false, error{kind,message}). Inside
 * core.guard the task is also marked expired (abx_task_expire), so catching the error does not
 * let it go on. */
void abx_task_abort(struct abx_task *t, const char *kind, const char *message);

/* Marks a guarded task as one that must end: from now on its count hook raises error{kind,
 * message} at every instruction of scenario code (code outside the embedded lib/abx modules) and
 * every wait it starts raises at once, until the guard returns; the guard then returns
 * (false, that error) even if the body caught it. The first call wins; no-op outside a guard. */
void abx_task_expire(struct abx_task *t, const char *kind, const char *message);

/* Pushes the task's expiry error (kind, message, and `where` when known). [-0, +1, m] */
void abx_task_push_expired(lua_State *L, struct abx_task *t);

/* The message of a Timeout that ends the task's guard while it was 'doing' ("waiting", "running
 * Lua code (busy loop?)"), into buf (size bytes, always terminated): "<limit>: the deadline passed
 * while it was <doing>" when the guard was given a `limit` text (abx.run.limits writes it: the
 * limit, its source and how to change it), else "the test's deadline passed while it was <doing>".
 * Callers match "deadline passed" to tell the test's own deadline from a call's Timeout. */
void abx_task_deadline_msg(const struct abx_task *t, const char *doing, char *buf, size_t size);

/* Leaves the guard: clears the deadline, the limit text and the expiry and restores the normal
 * hook interval. */
void abx_task_guard_end(struct abx_task *t);

/* Raises the task's expiry error if it is guarded and expired (used before every wait).
 * [-0, +0, v] */
void abx_task_check_expired(lua_State *L, struct abx_task *t);

/* Signals (engine/signals.c). Installs SIGINT and SIGTERM handlers. The first signal is counted
 * and handed to the loop (which spawns the Lua handler registered with core.on_interrupt); a
 * second one writes 'note' (set with abx_interrupt_note) to stderr and exits 2 at once. */
void abx_signals_install(void);

/* The text printed when a second signal ends the process (copied; at most 1 KiB). */
void abx_interrupt_note(const char *note);

/* Number of SIGINT/SIGTERM received so far. */
int abx_interrupt_count(void);

/* Adds 'w' to the descriptors and due times the loop waits on (idempotent). A task waiting on a
 * watched descriptor is not a deadlock. Polling is level-triggered: set w->events to 0 (or unwatch)
 * while nobody wants the descriptor. */
void abx_loop_watch(struct abx_loop *loop, struct abx_fdwatch *w);

/* Removes 'w' (idempotent); after it the loop never touches 'w' again. */
void abx_loop_unwatch(struct abx_loop *loop, struct abx_fdwatch *w);

/* Runs until no task is live. Returns 0, or -1 when curl's multi interface failed. */
int abx_loop_run(struct abx_loop *loop);

#endif
