/*
 * platform.c: start and stop the local platform child. See platform.h.
 *
 * This runs before the event loop starts and after it ends, so its bounded blocking waits
 * (poll with a deadline) do not stall any test.
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

int abx_platform_start(struct abx_platform *p, const char *const *extra, const char *log_path,
                       int timeout_ms, char *err, size_t errlen)
{
  int fds[2];
  memset(p, 0, sizeof *p);
  if (pipe2(fds, O_CLOEXEC) != 0) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    return -1;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errlen, "fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) /* the engine died before prctl took effect */
      _exit(1);
    setpgid(0, 0); /* a terminal's Ctrl-C reaches the engine, which stops us in order */
    if (dup2(fds[1], 3) < 0)
      _exit(127);
    /* the log is private: created 0600, an existing one made 0600, never through a symlink */
    int log = log_path ? open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600)
                       : open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (log >= 0 && log_path && fchmod(log, 0600) != 0) {
      close(log);
      log = -1;
    }
    if (log < 0) /* the output is dropped rather than mixed into the engine's */
      log = open("/dev/null", O_WRONLY | O_CLOEXEC);
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
  close(fds[1]);
  p->pid = pid;
  size_t have = 0;
  double deadline = abx_now_ms() + timeout_ms;
  while (have < sizeof p->ready - 1) {
    int left = (int)(deadline - abx_now_ms());
    if (left <= 0) {
      snprintf(err, errlen, "the local platform did not report ready within %d ms (log: %s)",
               timeout_ms, log_path ? log_path : "none");
      goto fail;
    }
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    int r = poll(&pfd, 1, left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue;
    ssize_t got = read(fds[0], p->ready + have, sizeof p->ready - 1 - have);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      snprintf(err, errlen, "the local platform exited before it was ready (log: %s)",
               log_path ? log_path : "none");
      goto fail;
    }
    have += (size_t)got;
    p->ready[have] = '\0';
    if (strchr(p->ready, '\n'))
      break;
  }
  close(fds[0]);
  char *nl = strchr(p->ready, '\n');
  if (nl)
    *nl = '\0';
  return 0;
fail:
  close(fds[0]);
  abx_platform_stop(pid, 2000);
  p->pid = 0;
  return -1;
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
    if (r == pid)
      return status;
    if (r < 0 && errno != EINTR)
      return -1;
    if (abx_now_ms() > deadline)
      break;
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return status;
}
