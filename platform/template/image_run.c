/*
 * image_run.c: the programs image_debian.c runs (ldd, dpkg -S, mmdebstrap, cp, chroot), each in
 * its own process group and mount namespace, and abx_image_stop. Contract in image_debian.h
 * (abx_image_stop) and image_debian_int.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "image_debian.h"
#include "image_debian_int.h"

/* The process groups of the programs running now, for abx_image_stop: one per abx_image_root
 * call at a time, and at most ABX_BUILDS_MAX (2) builds run, so 8 slots are plenty. */
static pthread_mutex_t g_run_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t g_running[8];
static int g_stop;

static int track(pid_t pid, int add)
{
  pthread_mutex_lock(&g_run_mu);
  int stopped = g_stop;
  for (size_t i = 0; i < sizeof g_running / sizeof g_running[0]; i++)
    if (add ? g_running[i] == 0 : g_running[i] == pid) {
      g_running[i] = add ? pid : 0;
      break;
    }
  if (add && stopped)
    kill(-pid, SIGKILL);
  pthread_mutex_unlock(&g_run_mu);
  return stopped;
}

void abx_image_stop(void)
{
  pthread_mutex_lock(&g_run_mu);
  g_stop = 1;
  for (size_t i = 0; i < sizeof g_running / sizeof g_running[0]; i++)
    if (g_running[i] > 0)
      kill(-g_running[i], SIGKILL);
  pthread_mutex_unlock(&g_run_mu);
}

int abx_image_stopping(void)
{
  pthread_mutex_lock(&g_run_mu);
  int st = g_stop;
  pthread_mutex_unlock(&g_run_mu);
  return st;
}

int abx_image_run(const char *const argv[], void (*line)(void *, const char *), void *ud,
                  char *last, size_t lastlen, int timeout_s)
{
  static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LC_ALL=C",
                               "DEBIAN_FRONTEND=noninteractive", NULL};
  int o[2];
  if (last && lastlen)
    last[0] = 0;
  if (pipe2(o, O_CLOEXEC) != 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* a mount namespace of its own: what mmdebstrap mounts in the root (proc, sys, dev) goes
     * with its last process, also when it is killed (timeout, abx_image_stop) */
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
      _exit(125);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(o[1], 1) < 0 || dup2(o[1], 2) < 0)
      _exit(126);
    close_range(3, ~0U, 0);
    execve(argv[0], (char *const *)argv, envp);
    _exit(127);
  }
  close(o[1]);
  if (pid < 0) {
    close(o[0]);
    return -1;
  }
  track(pid, 1);
  char buf[4096];
  size_t len = 0;
  time_t end = time(NULL) + timeout_s;
  int timed_out = 0;
  for (;;) {
    struct pollfd p = {o[0], POLLIN, 0};
    int left = (int)(end - time(NULL));
    if (left <= 0 || poll(&p, 1, left * 1000) == 0) {
      timed_out = 1;
      kill(-pid, SIGKILL);
      break;
    }
    ssize_t k = read(o[0], buf + len, sizeof buf - 1 - len);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
    len += (size_t)k;
    buf[len] = 0;
    char *s = buf, *nl;
    while ((nl = strchr(s, '\n')) != NULL || (s == buf && len == sizeof buf - 1)) {
      if (nl)
        *nl = 0;
      if (line && *s)
        line(ud, s);
      if (last && *s) {
        size_t m = strlen(s) < lastlen - 1 ? strlen(s) : lastlen - 1;
        memcpy(last, s, m);
        last[m] = 0;
      }
      s = nl ? nl + 1 : buf + len;
    }
    len -= (size_t)(s - buf);
    memmove(buf, s, len);
  }
  if (len && line) {
    buf[len] = 0;
    line(ud, buf);
  }
  close(o[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (track(pid, 0))
    return -2;
  if (timed_out)
    return 124;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}
