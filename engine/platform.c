/*
 * platform.c: start and stop the local platform child. See platform.h.
 *
 * This runs before the event loop starts and after it ends, so its bounded blocking waits
 * (poll with a deadline) do not stall any test.
 *
 * Serve's log is masked: serve writes into a pipe, and a log writer (a fork of the engine, so it
 * holds a copy of the secrets registry as it was at the start) appends what it reads to the log
 * through abx_secrets_write. Serve's own children inherit the pipe, so their output is masked too.
 */
#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"
#include "secrets.h"

/* The engine's executable. Set once at start-up, before any child exists; read-only after. */
static char self_exe[4096] = "/proc/self/exe";

void abx_platform_set_exe(const char *argv0)
{
  char resolved[4096];
  if (argv0 && strchr(argv0, '/') && realpath(argv0, resolved))
    snprintf(self_exe, sizeof self_exe, "%s", resolved);
}

const char *abx_platform_exe(void)
{
  return self_exe;
}

/* Serve's log writers: which child of the engine writes the log of which serve. */
#define LOG_WRITERS_MAX 8
static struct {
  pid_t serve, writer;
} log_writers[LOG_WRITERS_MAX];

/* The log writer's loop (never returns): reads serve's output from fd 0 and appends it to fd 1
 * masked with 's', the registry this fork copied from the engine. Only its own stream of 's' is
 * flushed: the engine's held-back tails in the copy are not this process's to write. */
static void write_log(struct abx_secrets *s)
{
  FILE *out = fdopen(1, "w");
  char buf[16384];
  for (;;) {
    ssize_t got = read(0, buf, sizeof buf);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0 || !out)
      break;
    abx_secrets_write(s, out, buf, (size_t)got);
  }
  if (out)
    abx_secrets_flush(s, out);
  _exit(0);
}

/* Opens serve's log (appended; created or made 0600; never through a symlink), or /dev/null when
 * 'path' is NULL or cannot be opened: the output is dropped rather than mixed into the engine's. */
static int open_log(const char *path)
{
  int log = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600)
                 : open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (log >= 0 && path && fchmod(log, 0600) != 0) {
    close(log);
    log = -1;
  }
  if (log < 0)
    log = open("/dev/null", O_WRONLY | O_CLOEXEC);
  return log;
}

/* Starts the writer of a serve's log: a child of the engine reading the returned pipe end (serve's
 * stdout and stderr) until every writer has closed it. It ignores SIGINT, SIGTERM and SIGHUP, so
 * serve's last lines (written while it stops) reach the log. Returns the write end (O_CLOEXEC) and
 * the writer's pid in *pid, or -1 with errno set. */
static int start_log_writer(struct abx_secrets *s, int log, pid_t *pid)
{
  int lp[2];
  if (pipe2(lp, O_CLOEXEC) != 0)
    return -1;
  fflush(NULL);
  *pid = fork();
  if (*pid < 0) {
    int e = errno;
    close(lp[0]);
    close(lp[1]);
    errno = e;
    return -1;
  }
  if (*pid == 0) {
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    setpgid(0, 0);                    /* a terminal's Ctrl-C is the engine's to handle */
    prctl(PR_SET_NAME, "abxlua-log"); /* in ps: not taken for a second engine */
    if (dup2(lp[0], 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0) /* nothing to the console */
      _exit(1);
    close_range(3, ~0U, 0); /* the pipe's write end above all: EOF comes when serve is gone */
    write_log(s);
  }
  close(lp[0]);
  return lp[1];
}

/* Remembers the log writer of serve 'pid' for abx_platform_stop (a full table: not waited for). */
static void remember_writer(pid_t serve, pid_t writer)
{
  for (int i = 0; i < LOG_WRITERS_MAX; i++)
    if (log_writers[i].serve == 0) {
      log_writers[i].serve = serve;
      log_writers[i].writer = writer;
      return;
    }
}

/* Waits up to 'timeout_ms' for the log writer of serve 'pid' (gone: it has written everything). */
static void wait_writer(pid_t serve, int timeout_ms)
{
  for (int i = 0; i < LOG_WRITERS_MAX; i++) {
    if (log_writers[i].serve != serve)
      continue;
    pid_t w = log_writers[i].writer;
    log_writers[i].serve = log_writers[i].writer = 0;
    double deadline = abx_now_ms() + timeout_ms;
    while (waitpid(w, NULL, WNOHANG) == 0 && abx_now_ms() < deadline) {
      struct timespec ts = {0, 10 * 1000000L};
      nanosleep(&ts, NULL);
    }
    return;
  }
}

/* Where serve's output goes: its log through a log writer that masks it when there are secrets
 * and a log path (*writer gets the writer's pid, else 0), the log itself, or /dev/null (open_log).
 * Returns the descriptor (O_CLOEXEC), or -1 when not even /dev/null opens. */
static int serve_output(const char *log_path, struct abx_secrets *secrets, pid_t *writer)
{
  int log = open_log(log_path);
  *writer = 0;
  if (log >= 0 && secrets && log_path) {
    int w = start_log_writer(secrets, log, writer);
    if (w < 0) { /* fail closed: no unmasked log; the log says why it is empty */
      dprintf(log, "abxlua: serve's output is dropped: no log writer to mask it (%s)\n",
              strerror(errno));
      w = open("/dev/null", O_WRONLY | O_CLOEXEC);
    }
    close(log);
    log = w;
  }
  return log;
}

/* In the forked child: dies with the engine 'parent', writes the ready line to fd 3 ('ready_fd'),
 * its output to 'log', and execs '<the engine> serve --port 0 --ready-fd 3 <extra...>'. Never
 * returns. */
static _Noreturn void exec_serve(int ready_fd, int log, const char *const *extra, pid_t parent)
{
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) /* the engine died before prctl took effect */
    _exit(1);
  setpgid(0, 0); /* a terminal's Ctrl-C reaches the engine, which stops us in order */
  if (dup2(ready_fd, 3) < 0)
    _exit(127);
  if (log >= 0) {
    dup2(log, 1);
    dup2(log, 2);
  }
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0)
    dup2(devnull, 0);
  const char *argv[64];
  int n = 0;
  argv[n++] = "abxlua";
  argv[n++] = "serve";
  argv[n++] = "--port";
  argv[n++] = "0";
  argv[n++] = "--ready-fd";
  argv[n++] = "3";
  for (const char *const *e = extra; e && *e && n < 62; e++)
    argv[n++] = *e;
  argv[n] = NULL;
  execv(self_exe, (char *const *)argv);
  _exit(127);
}

/* Reads serve's ready line from 'fd' into p->ready (its newline removed) within 'timeout_ms'.
 * Returns 0, or -1 with a message in err (no line in time, or serve exited first; both name
 * 'log_path'). */
static int read_ready(struct abx_platform *p, int fd, int timeout_ms, const char *log_path,
                      char *err, size_t errlen)
{
  size_t have = 0;
  double deadline = abx_now_ms() + timeout_ms;
  while (have < sizeof p->ready - 1) {
    int left = (int)(deadline - abx_now_ms());
    if (left <= 0) {
      snprintf(err, errlen, "the local platform did not report ready within %d ms (log: %s)",
               timeout_ms, log_path ? log_path : "none");
      return -1;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int r = poll(&pfd, 1, left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue;
    ssize_t got = read(fd, p->ready + have, sizeof p->ready - 1 - have);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      snprintf(err, errlen, "the local platform exited before it was ready (log: %s)",
               log_path ? log_path : "none");
      return -1;
    }
    have += (size_t)got;
    p->ready[have] = '\0';
    if (strchr(p->ready, '\n'))
      break;
  }
  char *nl = strchr(p->ready, '\n');
  if (nl)
    *nl = '\0';
  return 0;
}

int abx_platform_start(struct abx_platform *p, const char *const *extra, const char *log_path,
                       struct abx_secrets *secrets, int timeout_ms, char *err, size_t errlen)
{
  int fds[2];
  memset(p, 0, sizeof *p);
  if (pipe2(fds, O_CLOEXEC) != 0) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    return -1;
  }
  pid_t writer;
  int log = serve_output(log_path, secrets, &writer);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errlen, "fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    if (log >= 0)
      close(log);
    if (writer > 0)
      waitpid(writer, NULL, 0); /* its pipe's last write end is closed: it ends now */
    return -1;
  }
  if (pid == 0)
    exec_serve(fds[1], log, extra, parent);
  close(fds[1]);
  if (log >= 0)
    close(log);
  p->pid = pid;
  if (writer > 0)
    remember_writer(pid, writer);
  int rc = read_ready(p, fds[0], timeout_ms, log_path, err, errlen);
  close(fds[0]);
  if (rc != 0) {
    abx_platform_stop(pid, 2000);
    p->pid = 0;
  }
  return rc;
}

int abx_platform_stop(pid_t pid, int timeout_ms)
{
  if (pid <= 0)
    return -1;
  kill(pid, SIGTERM);
  double deadline = abx_now_ms() + timeout_ms;
  int status;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      wait_writer(pid, 2000); /* serve's last lines are in the log when the caller reads it */
      return status;
    }
    if (r < 0 && errno != EINTR)
      return -1;
    if (abx_now_ms() > deadline)
      break;
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  wait_writer(pid, 2000);
  return status;
}
