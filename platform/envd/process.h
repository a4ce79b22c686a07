/*
 * process.h: the process table of envd: spawn, output fan-out to subscribed streams, reaping.
 *
 * Shapes:  each process has a pid (its own process group and session), optional tag, the
 *          original ProcessConfig JSON, an optional stdin pipe, and subscribers. A subscriber
 *          is a queue of ready-to-send stream envelopes (ProcessEvent data/end messages).
 *          Output read while nobody is subscribed is discarded (§4.4).
 * Units:   times in milliseconds of CLOCK_MONOTONIC; sizes in bytes.
 * Limits:  reads of ENVD_CHUNK (32 KiB) for pipes, ENVD_PTY_CHUNK (16 KiB) for a PTY; a
 *          subscriber queue holds at most ENVD_SUB_MAX (4 MiB)
 *          before the reader blocks (backpressure: no output is lost for a subscribed stream).
 *          Ended processes are retained ENVD_RETAIN_MS (30 s) for Connect.
 * Errors:  Connect codes through struct envd_err: invalid_argument (spawn failure),
 *          internal (stdin closed or disabled, write failure), not_found.
 * Source:  docs/protocol/envd-protocol.md §4.3 (event sequence), §4.4 (server semantics).
 */
#ifndef ABX_ENVD_PROCESS_H
#define ABX_ENVD_PROCESS_H

#include "envd/envd_int.h"

#define ENVD_SUB_MAX (4u * 1024u * 1024u)
#define ENVD_PTY_CHUNK (16u * 1024u)
#define ENVD_RETAIN_MS 30000

struct envd_proc;
struct envd_sub;

/* What Start asks for. `config` is the original ProcessConfig (a reference is taken). */
struct envd_spawn {
  const char *cmd;
  const char **args; /* nargs strings */
  size_t nargs;
  json_t *envs;    /* object or NULL */
  const char *cwd; /* resolved absolute path */
  json_t *config;
  const char *tag; /* NULL: none */
  bool stdin_pipe;
  bool pty; /* run on a pseudo-terminal of cols x rows (stdin_pipe ignored) */
  uint16_t cols, rows;
  const struct envd_user *user;
  int64_t timeout_ms; /* 0: no limit; >0: SIGKILL the group when elapsed */
};

/* envd's one clock: CLOCK_MONOTONIC in nanoseconds, and the same in milliseconds (the unit of
 * envd's deadlines). */
int64_t envd_now_ns(void);
int64_t envd_now_ms(void);

/* Create the table and start the reaper thread (PR_SET_CHILD_SUBREAPER). 0 or -1. */
int envd_procs_init(struct envd *e);

/* Kill every live process group, join all threads, free the table. */
void envd_procs_shutdown(struct envd *e);

/* Spawn a process; on success returns a referenced proc with *sub already subscribed (so no
 * output is lost). Errors: invalid_argument (cwd missing, command not found, exec failure). */
struct envd_proc *envd_proc_spawn(struct envd *e, const struct envd_spawn *s, struct envd_sub **sub,
                                  struct envd_err *err);

/* Find by pid (tag NULL) or by tag; live processes first, then ended ones still retained.
 * Returns a reference or NULL. */
struct envd_proc *envd_proc_find(struct envd *e, uint32_t pid, const char *tag);

/* Drop a reference. */
void envd_proc_unref(struct envd_proc *p);

/* Subscribe to live events; an ended process gets its retained end event queued. */
struct envd_sub *envd_proc_subscribe(struct envd_proc *p);

/* Unsubscribe and free the queue; wakes a reader blocked on this subscriber. */
void envd_proc_unsubscribe(struct envd_proc *p, struct envd_sub *s);

/* Next envelope for a subscriber, waiting until `until_ms` (monotonic) at most.
 * Returns 1 with a malloc'd envelope in *buf and *len, 0 on timeout, 2 after the end event was
 * delivered (no more events). */
int envd_sub_next(struct envd_proc *p, struct envd_sub *s, int64_t until_ms, char **buf,
                  size_t *len);

/* pid of p; whether p was killed by its Start deadline. */
uint32_t envd_proc_pid(const struct envd_proc *p);
bool envd_proc_timed_out(struct envd_proc *p);

/* ListResponse JSON {"processes":[ProcessInfo...]} of live processes (new reference). */
json_t *envd_proc_list(struct envd *e);

/* Write to stdin (waits at most 10 s for pipe space). Errors: internal. */
int envd_proc_write_stdin(struct envd_proc *p, const void *data, size_t len, struct envd_err *err);

/* Close stdin; idempotent. Errors: unknown "cannot close stdin for PTY process" on a PTY. */
int envd_proc_close_stdin(struct envd_proc *p, struct envd_err *err);

/* Write to the PTY master (waits at most 10 s). Errors: internal (no tty, closed, failure). */
int envd_proc_write_pty(struct envd_proc *p, const void *data, size_t len, struct envd_err *err);

/* Resize the PTY (TIOCSWINSZ). Errors: internal "error resizing tty: ..." (no tty, ended). */
int envd_proc_resize(struct envd_proc *p, uint16_t cols, uint16_t rows, struct envd_err *err);

/* Send sig to the process group (and the process). Errors: internal. */
int envd_proc_signal(struct envd_proc *p, int sig, struct envd_err *err);

/* spawn.c: build the environment, resolve the command on PATH, fork and exec as the user in a
 * new session. Returns the pid with the parent ends of the pipes (*in_fd -1 without a stdin
 * pipe) or -1 with err (invalid_argument). With s->pty the child gets the PTY slave as its
 * controlling terminal on fds 0-2; *out_fd is the master, *in_fd a dup of it, *err_fd -1.
 * Called with the table lock held so the reaper cannot lose the child's exit before it is
 * registered. */
pid_t envd_fork_exec(struct envd *e, const struct envd_spawn *s, int *in_fd, int *out_fd,
                     int *err_fd, struct envd_err *err);

/* Queues the Start/Connect stream response (process_stream.c) on c's connection; takes over p and
 * s (released on every path). deadline: CLOCK_MONOTONIC ms after which the stream ends with
 * deadline_exceeded (0: none); start_call: Start with a process deadline (the process group is
 * killed when it passes). Returns MHD_NO when the response cannot be queued. */
enum MHD_Result envd_proc_send_stream(struct envd_call *c, struct envd_proc *p, struct envd_sub *s,
                                      int64_t deadline, bool start_call);

#endif
