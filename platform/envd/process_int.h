/*
 * process_int.h: the process table's records, shared by process.c (table, spawn, subscribers,
 * reaper) and process_output.c (the reader thread that fans output out to subscribers).
 * Not a public interface: the contract is process.h.
 * Locking: table mutex before process mutex. One condition variable per process is broadcast
 * on every change (new output, queue drained, exit, unsubscribe).
 */
#ifndef ABX_ENVD_PROCESS_INT_H
#define ABX_ENVD_PROCESS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "envd/process.h"

struct qitem {
  struct qitem *next;
  size_t len;
  char data[];
};

struct envd_sub {
  struct envd_sub *next;
  struct qitem *head, *tail;
  size_t bytes;
  bool end_queued;
};

struct envd_proc {
  struct envd_procs *tab;
  struct envd_proc *next;
  int refs; /* guarded by tab->mu */
  pid_t pid;
  char *tag;
  json_t *config;
  pthread_mutex_t mu;
  pthread_cond_t cond;
  pthread_mutex_t in_mu;
  int in_fd, out_fd, err_fd; /* PTY: out_fd is the master, in_fd a dup of it, err_fd -1 */
  int wake_fd;               /* eventfd: the reaper and shutdown wake the reader's poll */
  bool pty;
  bool exited, ended, timed_out;
  int wstatus;
  int64_t ended_at, deadline;
  char *end_env;
  size_t end_len;
  struct envd_sub *subs;
  pthread_t reader;
};

struct envd_procs {
  struct envd *e;
  pthread_mutex_t mu;
  struct envd_proc *list;
  pthread_t reaper;
  volatile int stop;
};

/* pthread_cond_timedwait until until_ms (CLOCK_MONOTONIC ms; the conds use that clock). */
void envd_proc_wait_until(pthread_cond_t *c, pthread_mutex_t *m, int64_t until_ms);

/* Wake p's reader thread out of its poll (exit, shutdown); never blocks. */
void envd_proc_wake_reader(struct envd_proc *p);

/* Append a copy of one envelope to s's queue (dropped when out of memory). Caller holds p->mu. */
void envd_proc_queue_push(struct envd_sub *s, const char *data, size_t len);

/* Thread entry: read p's stdout/stderr (or PTY) until they close, publish data events, then
 * queue the end event once the reaper reports the exit. arg is the struct envd_proc. */
void *envd_proc_reader_main(void *arg);

#endif
