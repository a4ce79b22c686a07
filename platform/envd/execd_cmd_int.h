/*
 * execd_cmd_int.h: the command records execd_command.c (table, routes) and execd_stream.c
 * (watcher thread, SSE answer) share. Not a public interface; the contract is in
 * execd_command.c's header comment.
 * Locking: the table's one mutex guards the list, every record's mutable fields and its event
 * queue; each record's cond (CLOCK_MONOTONIC) is broadcast on every change. The mutex is taken
 * before a process's own (process_int.h), never after.
 */
#ifndef ABX_ENVD_EXECD_CMD_INT_H
#define ABX_ENVD_EXECD_CMD_INT_H

#include "envd/execd_int.h"
#include "envd/process.h"

#include <time.h>

/* pthread_cond_timedwait until until_ms of CLOCK_MONOTONIC (the conds here use that clock). */
static inline void execd_wait_until(pthread_cond_t *c, pthread_mutex_t *m, int64_t until_ms)
{
  struct timespec ts = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000};
  pthread_cond_timedwait(c, m, &ts);
}

#define EXECD_LINE_MAX (64u * 1024u)
#define EXECD_QUEUE_MAX (1024u * 1024u)
#define EXECD_PING_MS 3000
#define EXECD_LINGER_MS 1000

struct execd_srun;     /* execd_session.c: one run of a bash session */
struct execd_sessions; /* execd_session.c: the bash sessions */

struct evitem {
  struct evitem *next;
  size_t len;
  char data[];
};

struct execd_cmd {
  struct execd_cmds *tab;
  struct execd_cmd *next;
  int refs;    /* guarded by the table's mutex, as is everything below but the constant fields */
  char id[40]; /* a command's 32 hex digits, or a bash session's UUID (its runs' init event) */
  char *content;
  bool background;
  struct timespec started, finished;
  int64_t start_mono;
  bool running;
  int exit_code;
  char *error;
  char *log_path;
  int log_fd; /* the watcher's */
  struct envd_proc *p;
  struct envd_sub *sub;
  struct evitem *head, *tail;
  size_t qbytes;
  bool final_queued, gone;
  pthread_cond_t cond;
  struct execd_srun *srun; /* a bash session's run (unlisted, its lines filtered), else NULL */
};

struct execd_cmds {
  struct envd *e;
  struct execd_sessions *sessions;
  pthread_mutex_t mu;
  struct execd_cmd *list;
  int watchers;
  pthread_cond_t idle;
};

/* execd_command.c. A new foreground (or background) record of `content`, started now, in no
 * table and with no reference counted yet; NULL when out of memory. */
struct execd_cmd *execd_cmd_new(struct execd_cmds *t, const char *content, bool background);
/* Started record c (c->p and c->sub set): counted as watched, put in the table's list when
 * `listed` (GET /command/status finds it), and its watcher thread started. References: the
 * list's (when listed), the watcher's, a foreground stream's. */
void execd_cmd_watch(struct execd_cmd *c, bool listed);
/* buildCredential: uid's passwd entry (gid and groups), else uid with gid 0; gid overrides; a
 * negative uid is envd's own. */
void execd_user_for(long long uid, long long gid, struct envd_user *u);

/* execd_bash.c. What a session run's markers said: inside the dump, its variables, its pwd. */
struct execd_dump {
  bool in_env;
  json_t *env; /* name → value of each `declare -x` line */
  char *pwd;   /* malloc'd; NULL: none */
};
/* The script of a run of `command` from session variables `env` (object or NULL) in `cwd` (NULL
 * or "": none); malloc'd, NULL when out of memory. */
char *execd_bash_script(const char *command, json_t *env, const char *cwd);
/* Whether output line s (n bytes) is a marker or a dump line (then kept in d). */
bool execd_dump_line(struct execd_dump *d, const char *s, size_t n);
/* Go's time.Duration.String of ms > 0 milliseconds: "500ms", "1.5s", "2m0s", "1h0m0.25s". */
void execd_go_duration(long long ms, char out[64]);

/* execd_session.c, called by the watcher of a session run (no mutex held). Whether output line
 * s (n bytes, no terminator) is the run's own bookkeeping (markers, the environment dump), which
 * is kept in the run and not sent. */
bool execd_srun_filter(struct execd_srun *r, const char *s, size_t n);
/* The run ended: its environment and directory become its session's (unless it timed out).
 * Returns true with *tail (malloc'd, *len bytes) the answer that ends the stream instead of the
 * final event when it timed out. */
bool execd_srun_end(struct execd_srun *r, bool timed_out, char **tail, size_t *len);
/* Free a run (with its record). */
void execd_srun_free(struct execd_srun *r);
/* The sessions of table t: 0 or -1; shutdown SIGKILLs their runs and frees them. */
int execd_sessions_init(struct execd_cmds *t);
void execd_sessions_shutdown(struct execd_cmds *t);
/* Frees the session table once execd_sessions_shutdown ran and no run is left (no watcher). */
void execd_sessions_free(struct execd_cmds *t);

/* Drop a reference with the table's mutex held; the last one puts c on *dead for freeing. */
void execd_cmd_unref_locked(struct execd_cmd *c, struct execd_cmd **dead);
/* Free a record nobody references. */
void execd_cmd_free(struct execd_cmd *c);
/* Drop a reference (takes the mutex). */
void execd_cmd_unref(struct execd_cmd *c);

/* execd_stream.c. A JSON string of n bytes, invalid UTF-8 as U+FFFD (Go's json.Marshal). */
json_t *execd_json_text(const char *s, size_t n);
/* One event's wire bytes {"type", "text"?, extra..., "timestamp"} + "\n\n" (text, extra
 * stolen); malloc'd, *len set; NULL when out of memory. */
char *execd_event_bytes(const char *type, json_t *text, json_t *extra, size_t *len);
/* Thread entry of a command's watcher (arg: the record, whose reference it owns). */
void *execd_watcher_main(void *arg);
/* The stream is gone: mark it, SIGKILL a foreground command's group. */
void execd_kill_on_gone(struct execd_cmd *c);
/* Queue the SSE answer of foreground command c (takes a reference of c over). */
enum MHD_Result execd_sse_command(struct MHD_Connection *conn, struct execd_cmd *c);
/* Queue an SSE answer of init(id) then the bytes tail (stolen), then the linger. */
enum MHD_Result execd_sse_fixed(struct MHD_Connection *conn, const char *id, char *tail,
                                size_t tail_len);

#endif
