/*
 * spawner.c: fork+exec requests served by the main thread. Contract in spawner.h.
 */
#include "spawner.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct job {
  const char *path;
  char *const *argv;
  char *const *envp;
  int pass_fd, log_fd;
  char *const *cgroups;
  uint64_t keep_caps;
  pid_t pid;
  int done;
  struct job *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_cv = PTHREAD_COND_INITIALIZER;  /* a job was queued */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER; /* a job finished */
static struct job *queue;
static int stopped;

pid_t abx_spawner_run(const char *path, char *const argv[], char *const envp[], int pass_fd,
                      int log_fd, char *const cgroups[], uint64_t keep_caps)
{
  struct job j = {path, argv, envp, pass_fd, log_fd, cgroups, keep_caps, -1, 0, NULL};
  pthread_mutex_lock(&mu);
  if (stopped) {
    pthread_mutex_unlock(&mu);
    return -1;
  }
  struct job **tail = &queue;
  while (*tail)
    tail = &(*tail)->next;
  *tail = &j;
  pthread_cond_broadcast(&job_cv);
  while (!j.done)
    pthread_cond_wait(&done_cv, &mu);
  pthread_mutex_unlock(&mu);
  return j.pid;
}

/* Shrink the capability bounding set to `keep` while the exec'd program (bwrap) still gets every
 * capability this process has: they are made inheritable first, and for root execve gives
 * permitted = bounding | inheritable (capabilities(7)). bwrap then sets the sandbox's permitted,
 * effective and inheritable sets to its --cap-add list, so what runs in the sandbox can never
 * regain more than `keep`, not even through a set-user-ID-root program. 0, or -1. */
static int shrink_bounding(uint64_t keep)
{
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof d);
  if (syscall(SYS_capget, &hdr, d) != 0)
    return -1;
  d[0].inheritable = d[0].permitted;
  d[1].inheritable = d[1].permitted;
  if (syscall(SYS_capset, &hdr, d) != 0)
    return -1;
  for (int cap = 0; cap < 64; cap++) {
    if ((keep >> cap) & 1)
      continue;
    if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0)
      break; /* past the kernel's last capability */
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
      return -1;
  }
  return 0;
}

static void child(struct job *j)
{
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  setpgid(0, 0);
  for (char *const *cg = j->cgroups; cg && *cg; cg++) { /* "0": the writing process (cgroup v1) */
    int fd = open(*cg, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1)
      _exit(125);
    close(fd);
  }
  umask(022); /* bwrap creates the sandbox's intermediate dirs with it */
  int devnull = open("/dev/null", O_RDWR);
  if (devnull < 0)
    _exit(126);
  /* Move the inherited fds above 10 first so the dup2s below cannot clobber each other. */
  int pass = fcntl(j->pass_fd, F_DUPFD, 10),
      log = fcntl(j->log_fd >= 0 ? j->log_fd : devnull, F_DUPFD, 10);
  if (pass < 0 || log < 0 || dup2(devnull, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0 ||
      dup2(pass, 3) < 0)
    _exit(126);
  close_range(4, ~0U, 0);
  if (j->keep_caps && shrink_bounding(j->keep_caps) != 0) {
    static const char msg[] = "abxlua serve: cannot shrink the capability bounding set\n";
    ssize_t w = write(2, msg, sizeof msg - 1); /* the sandbox log */
    (void)w;
    _exit(124);
  }
  execve(j->path, j->argv, j->envp);
  _exit(127);
}

void abx_spawner_poll(int ms)
{
  pthread_mutex_lock(&mu);
  if (!queue) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&job_cv, &mu, &ts);
  }
  while (queue) {
    struct job *j = queue;
    queue = j->next;
    pid_t pid = fork();
    if (pid == 0)
      child(j);
    if (pid > 0)
      setpgid(pid, pid); /* also in the parent: no window where killpg misses it */
    j->pid = pid;
    j->done = 1;
  }
  pthread_cond_broadcast(&done_cv);
  pthread_mutex_unlock(&mu);
}

void abx_spawner_stop(void)
{
  pthread_mutex_lock(&mu);
  stopped = 1;
  for (struct job *j = queue; j; j = j->next) {
    j->pid = -1;
    j->done = 1;
  }
  queue = NULL;
  pthread_cond_broadcast(&done_cv);
  pthread_mutex_unlock(&mu);
}
