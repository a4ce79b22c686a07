/*
 * spawn.c: fork/exec of a Start request as the sandbox user.
 * Environment: PATH, HOME, USER, LOGNAME, E2B_SANDBOX=true, then /init envVars, then the
 * request envs (last wins); envd's own environment never reaches the child.
 * Child: new session (own process group), signals unblocked and reset, all fds but 0-2 closed,
 * supplementary groups, gid, uid, cwd, execve. Exec failure is reported through a CLOEXEC pipe.
 * PTY: posix_openpt master kept by envd; the slave (chowned to the user) becomes the child's
 * controlling terminal (setsid + TIOCSCTTY) and its fds 0-2; the size is set before fork.
 * Source: docs/protocol/envd-protocol.md §4.4 (Start).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Merged environment as a NULL-terminated malloc'd array of malloc'd "K=V" strings. */
static char **build_env(struct envd *e, const struct envd_spawn *s)
{
  json_t *m = json_object();
  json_object_set_new(m, "PATH", json_string(ENVD_PATH_ENV));
  json_object_set_new(m, "HOME", json_string(s->user->home));
  json_object_set_new(m, "USER", json_string(s->user->name));
  json_object_set_new(m, "LOGNAME", json_string(s->user->name));
  json_object_set_new(m, "E2B_SANDBOX", json_string("true"));
  pthread_mutex_lock(&e->mu);
  if (e->env_vars)
    json_object_update(m, e->env_vars);
  pthread_mutex_unlock(&e->mu);
  if (json_is_object(s->envs))
    json_object_update(m, s->envs);
  size_t n = json_object_size(m), i = 0;
  char **env = calloc(n + 1, sizeof *env);
  const char *k;
  json_t *v;
  json_object_foreach(m, k, v)
  {
    if (!env || !json_is_string(v) || !*k || strchr(k, '='))
      continue;
    if (asprintf(&env[i], "%s=%s", k, json_string_value(v)) >= 0)
      i++;
  }
  json_decref(m);
  return env;
}

static void free_strv(char **v)
{
  if (!v)
    return;
  for (size_t i = 0; v[i]; i++)
    free(v[i]);
  free(v);
}

static const char *env_get(char **env, const char *key)
{
  size_t kl = strlen(key);
  for (size_t i = 0; env && env[i]; i++)
    if (strncmp(env[i], key, kl) == 0 && env[i][kl] == '=')
      return env[i] + kl + 1;
  return NULL;
}

char *envd_path_lookup(const char *path, const char *cmd, int absolute_only)
{
  char *dup = strdup(path), *save = NULL, *found = NULL;
  for (char *d = dup ? strtok_r(dup, ":", &save) : NULL; d && !found;
       d = strtok_r(NULL, ":", &save)) {
    char *cand = NULL;
    struct stat st;
    if ((absolute_only && *d != '/') || asprintf(&cand, "%s/%s", d, cmd) < 0)
      continue;
    if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
      found = cand;
    else
      free(cand);
  }
  free(dup);
  return found;
}

/* Command path: as given when it has a '/', else the first executable on the child's PATH. */
static char *resolve_cmd(const char *cmd, char **env)
{
  if (strchr(cmd, '/'))
    return strdup(cmd);
  const char *path = env_get(env, "PATH");
  return envd_path_lookup(path ? path : ENVD_PATH_ENV, cmd, 0);
}

static void close_pair(int p[2])
{
  if (p[0] >= 0)
    close(p[0]);
  if (p[1] >= 0)
    close(p[1]);
  p[0] = p[1] = -1;
}

/* In the child after fork: only async-signal-safe work (raw syscalls). */
static void child(const struct envd_spawn *s, const char *path, char **argv, char **env, int in,
                  int out, int errfd, int report)
{
  sigset_t none;
  sigemptyset(&none);
  for (int sig = 1; sig < NSIG; sig++)
    signal(sig, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, NULL);
  setsid();
  if (s->pty && ioctl(in, TIOCSCTTY, 0) < 0)
    goto fail;
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
    goto fail;
  if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
    for (int fd = 3; fd < 65536; fd++)
      if (fd != report)
        close(fd);
  }
  if (syscall(SYS_setgroups, (size_t)s->user->ngroups, s->user->groups) < 0)
    goto fail;
  if (syscall(SYS_setresgid, s->user->gid, s->user->gid, s->user->gid) < 0)
    goto fail;
  if (syscall(SYS_setresuid, s->user->uid, s->user->uid, s->user->uid) < 0)
    goto fail;
  if (chdir(s->cwd) < 0)
    goto fail;
  execve(path, argv, env);
fail:;
  int er = errno;
  ssize_t w = write(report, &er, sizeof er);
  (void)w;
  _exit(127);
}

/* Read the child's exec report: 0 when exec succeeded (EOF), else fills err and returns -1. */
static int exec_report(int fd, const char *cmd, struct envd_err *err)
{
  int child_errno = 0;
  ssize_t n;
  do
    n = read(fd, &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t)sizeof child_errno)
    return 0;
  /* The child failed before exec and exits 127; the reaper collects it. */
  envd_fail(err, "invalid_argument", "error starting process '%s': %s", cmd, strerror(child_errno));
  return -1;
}

/* PTY variant of the fork: master to *out_fd (and a dup to *in_fd for writes and resizes). */
static pid_t fork_pty(const struct envd_spawn *s, const char *path, char **argv, char **env,
                      int *in_fd, int *out_fd, int *err_fd, struct envd_err *err)
{
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), slave = -1, rep[2] = {-1, -1};
  int in_dup = -1;
  pid_t pid = -1;
  char name[128];
  if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
      ptsname_r(master, name, sizeof name) != 0) {
    envd_fail(err, "internal", "error creating pty: %s", strerror(errno));
    goto out;
  }
  slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) {
    envd_fail(err, "internal", "error opening pty slave %s: %s", name, strerror(errno));
    goto out;
  }
  if (fchown(slave, s->user->uid, (gid_t)-1) < 0) { /* best effort: tty(1) works without it */
  }
  struct winsize ws = {.ws_row = s->rows ? s->rows : 24, .ws_col = s->cols ? s->cols : 80};
  ioctl(master, TIOCSWINSZ, &ws);
  in_dup = fcntl(master, F_DUPFD_CLOEXEC, 3);
  if (in_dup < 0 || pipe2(rep, O_CLOEXEC) < 0) {
    envd_fail(err, "internal", "pipe: %s", strerror(errno));
    goto out;
  }
  pid = fork();
  if (pid < 0) {
    envd_fail(err, "invalid_argument", "error starting process: fork: %s", strerror(errno));
    goto out;
  }
  if (pid == 0)
    child(s, path, argv, env, slave, slave, slave, rep[1]);
  close(rep[1]);
  rep[1] = -1;
  if (exec_report(rep[0], s->cmd, err) < 0) {
    pid = -1;
    goto out;
  }
  fcntl(in_dup, F_SETFL, O_NONBLOCK); /* shared file description: the reader tolerates EAGAIN */
  *out_fd = master;
  *in_fd = in_dup;
  *err_fd = -1;
  master = in_dup = -1;
out:
  if (master >= 0)
    close(master);
  if (in_dup >= 0)
    close(in_dup);
  if (slave >= 0)
    close(slave);
  if (rep[0] >= 0)
    close(rep[0]);
  if (rep[1] >= 0)
    close(rep[1]);
  return pid;
}

pid_t envd_fork_exec(struct envd *e, const struct envd_spawn *s, int *in_fd, int *out_fd,
                     int *err_fd, struct envd_err *err)
{
  struct stat st;
  if (stat(s->cwd, &st) < 0 || !S_ISDIR(st.st_mode)) {
    envd_fail(err, "invalid_argument", "cwd '%s' does not exist", s->cwd);
    return -1;
  }
  char **env = build_env(e, s);
  char *path = env ? resolve_cmd(s->cmd, env) : NULL;
  char **argv = calloc(s->nargs + 2, sizeof *argv);
  int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1}, rep[2] = {-1, -1};
  pid_t pid = -1;
  if (!env || !argv) {
    envd_fail(err, "internal", "out of memory");
    goto out;
  }
  if (!path) {
    envd_fail(err, "invalid_argument",
              "error starting process: exec: \"%s\": executable file not found in $PATH", s->cmd);
    goto out;
  }
  argv[0] = (char *)s->cmd;
  for (size_t i = 0; i < s->nargs; i++)
    argv[i + 1] = (char *)s->args[i];
  if (s->pty) {
    pid = fork_pty(s, path, argv, env, in_fd, out_fd, err_fd, err);
    goto out;
  }
  if (pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0) {
    envd_fail(err, "internal", "pipe: %s", strerror(errno));
    goto out;
  }
  if (s->stdin_pipe) {
    if (pipe2(pin, O_CLOEXEC) < 0) {
      envd_fail(err, "internal", "pipe: %s", strerror(errno));
      goto out;
    }
  } else {
    pin[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (pin[0] < 0) {
      envd_fail(err, "internal", "/dev/null: %s", strerror(errno));
      goto out;
    }
  }
  pid = fork();
  if (pid < 0) {
    envd_fail(err, "invalid_argument", "error starting process: fork: %s", strerror(errno));
    goto out;
  }
  if (pid == 0)
    child(s, path, argv, env, pin[0], pout[1], perr[1], rep[1]);
  close(rep[1]);
  rep[1] = -1;
  if (exec_report(rep[0], s->cmd, err) < 0) {
    pid = -1;
    goto out;
  }
  *out_fd = pout[0];
  *err_fd = perr[0];
  *in_fd = s->stdin_pipe ? pin[1] : -1;
  if (*in_fd >= 0)
    fcntl(*in_fd, F_SETFL, O_NONBLOCK); /* writes wait in poll, with a deadline */
  pout[0] = perr[0] = -1;
  if (s->stdin_pipe)
    pin[1] = -1;
out:
  close_pair(pin);
  close_pair(pout);
  close_pair(perr);
  close_pair(rep);
  free(argv);
  free(path);
  free_strv(env);
  return pid;
}
