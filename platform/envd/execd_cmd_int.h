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

struct evitem {
  struct evitem *next;
  size_t len;
  char data[];
};

struct execd_cmd {
  struct execd_cmds *tab;
  struct execd_cmd *next;
  int refs; /* guarded by the table's mutex, as is everything below but the constant fields */
  char id[33];
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
};

struct execd_cmds {
  struct envd *e;
  pthread_mutex_t mu;
  struct execd_cmd *list;
  int watchers;
  pthread_cond_t idle;
};

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
