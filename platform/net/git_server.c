/*
 * git_server.c: the read-only git server of `abxlua serve --git-root` (contract in git_server.h):
 * a listener in the hub namespace and one `git daemon --inetd` child per connection.
 */
#include "git_server.h"

#include "hub_service.h"
#include "netns.h"
#include "network.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define GIT_BIN "/usr/bin/git"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_running;
static struct abx_hub_service g_service = ABX_HUB_SERVICE_INIT(
    "git server", "sandboxes could not reach a git server", ABX_GIT_SERVER_PORT, 32);
static pid_t g_children[ABX_GIT_SERVER_MAX_CHILDREN]; /* 0: free slot */
static char g_root[PATH_MAX];
static char g_base_arg[PATH_MAX + 16];

/* Reap the children that ended (WNOHANG); under g_mu. Returns how many are still running. */
static int reap(void)
{
  int live = 0;
  for (int i = 0; i < ABX_GIT_SERVER_MAX_CHILDREN; i++) {
    if (g_children[i] <= 0)
      continue;
    pid_t r = waitpid(g_children[i], NULL, WNOHANG);
    if (r == g_children[i] || (r < 0 && errno == ECHILD))
      g_children[i] = 0;
    else
      live++;
  }
  return live;
}

/* One `git daemon --inetd` with the connection `fd` as stdin and stdout; under g_mu. The pid,
 * or -1. */
static pid_t spawn_child(int fd)
{
  char init_t[40], idle_t[40];
  snprintf(init_t, sizeof init_t, "--init-timeout=%d", ABX_GIT_SERVER_INIT_TIMEOUT_S);
  snprintf(idle_t, sizeof idle_t, "--timeout=%d", ABX_GIT_SERVER_IDLE_TIMEOUT_S);
  char *argv[] = {GIT_BIN,
                  "daemon",
                  "--inetd",
                  "--verbose",
                  "--export-all",
                  "--informative-errors",
                  g_base_arg,
                  init_t,
                  idle_t,
                  "--disable=receive-pack",
                  "--forbid-override=receive-pack",
                  "--disable=upload-archive",
                  "--forbid-override=upload-archive",
                  "--enable=upload-pack",
                  "--forbid-override=upload-pack",
                  g_root,
                  NULL};
  char home[PATH_MAX + 8];
  snprintf(home, sizeof home, "HOME=%s", g_root);
  char *envp[] = {"PATH=/usr/bin:/bin",          home,       "GIT_CONFIG_NOSYSTEM=1",
                  "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C", NULL};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t none, dfl;
  sigemptyset(&none);
  sigemptyset(&dfl);
  sigaddset(&dfl, SIGPIPE);
  sigaddset(&dfl, SIGINT);
  sigaddset(&dfl, SIGTERM);
  sigaddset(&dfl, SIGCHLD);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd, 0);
  posix_spawn_file_actions_adddup2(&fa, fd, 1);
  posix_spawnattr_init(&at);
  /* the child must not inherit serve's blocked signals: SIGKILL needs none of this, but the
   * daemon's own SIGTERM/SIGPIPE handling does */
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &dfl);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, GIT_BIN, &fa, &at, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (rc != 0) {
    abx_slog("git server: cannot start %s daemon: %s", GIT_BIN, strerror(rc));
    return -1;
  }
  return pid;
}

static void *accept_main(void *arg)
{
  (void)arg;
  for (;;) {
    /* a bounded wait: ended children are reaped within half a second */
    int ready = abx_hub_service_wait(&g_service, 500);
    pthread_mutex_lock(&g_mu);
    int live = reap();
    pthread_mutex_unlock(&g_mu);
    if (ready < 0)
      break;
    if (!ready)
      continue;
    int fd = accept4(g_service.listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    pthread_mutex_lock(&g_mu);
    if (live >= ABX_GIT_SERVER_MAX_CHILDREN) {
      abx_slog("git server: %d connections already: one refused", live);
    } else {
      for (int i = 0; i < ABX_GIT_SERVER_MAX_CHILDREN; i++) {
        if (g_children[i] == 0) {
          pid_t pid = spawn_child(fd);
          if (pid > 0)
            g_children[i] = pid;
          break;
        }
      }
    }
    pthread_mutex_unlock(&g_mu);
    close(fd); /* the child has its own copies */
  }
  return NULL;
}

int abx_git_server_start(const char *root, char *err, size_t errlen)
{
  pthread_mutex_lock(&g_mu);
  if (g_running) {
    snprintf(err, errlen, "the git server is already started");
    goto fail;
  }
  struct stat st;
  if (!realpath(root, g_root) || stat(g_root, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "--git-root %s: not a directory", root);
    goto fail;
  }
  if (access(GIT_BIN, X_OK) != 0) {
    snprintf(err, errlen, "%s is missing (Debian package git)", GIT_BIN);
    goto fail;
  }
  snprintf(g_base_arg, sizeof g_base_arg, "--base-path=%s", g_root);
  if (abx_hub_service_start(&g_service, accept_main, NULL, err, errlen) != 0)
    goto fail;
  g_running = 1;
  pthread_mutex_unlock(&g_mu);
  return 0;
fail:
  pthread_mutex_unlock(&g_mu);
  return -1;
}

void abx_git_server_stop(void)
{
  pthread_mutex_lock(&g_mu);
  int running = g_running;
  g_running = 0;
  pthread_mutex_unlock(&g_mu);
  if (!running)
    return;
  abx_hub_service_stop(&g_service);
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < ABX_GIT_SERVER_MAX_CHILDREN; i++) {
    if (g_children[i] > 0) {
      kill(g_children[i], SIGKILL);
      while (waitpid(g_children[i], NULL, 0) < 0 && errno == EINTR)
        ;
      g_children[i] = 0;
    }
  }
  pthread_mutex_unlock(&g_mu);
}
