/*
 * sudo_broker.c: envd's side of `sudo` in a sandbox (contract and wire in sudo.h). A single-
 * threaded child of envd accepts on SUDO_SOCK and forks a handler per request; the handler takes
 * the caller's uid from SO_PEERCRED, applies the sudoers (sudo_policy.c), runs the command as
 * the target user with sudo's environment and relays signals and the exit status. The command is
 * the handler's child, never envd's, so envd's reaper (waitpid(-1)) cannot take its status.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/sudo.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Signals the client may forward (sudo.h); anything else is ignored. */
static int forwardable(uint32_t sig)
{
  return sig == SIGHUP || sig == SIGINT || sig == SIGQUIT || sig == SIGTERM || sig == SIGUSR1 ||
         sig == SIGUSR2 || sig == SIGALRM || sig == SIGWINCH;
}

static void send_status(int c, uint32_t st)
{
  send(c, &st, sizeof st, MSG_NOSIGNAL);
}

static struct passwd *user_by(const char *spec)
{
  if (spec[0] == '#') {
    char *end = NULL;
    unsigned long id = strtoul(spec + 1, &end, 10);
    return spec[1] && !*end ? getpwuid((uid_t)id) : NULL;
  }
  return getpwnam(spec);
}

static struct group *group_by(const char *spec)
{
  if (spec[0] == '#') {
    char *end = NULL;
    unsigned long id = strtoul(spec + 1, &end, 10);
    return spec[1] && !*end ? getgrgid((gid_t)id) : NULL;
  }
  return getgrnam(spec);
}

/* Copy a passwd entry (getpw* reuse one static buffer). */
static struct passwd *pw_copy(const struct passwd *p)
{
  struct passwd *c = p ? calloc(1, sizeof *c) : NULL;
  if (!c)
    return NULL;
  *c = *p;
  c->pw_name = strdup(p->pw_name);
  c->pw_dir = strdup(p->pw_dir ? p->pw_dir : "/");
  c->pw_shell = strdup(p->pw_shell && *p->pw_shell ? p->pw_shell : "/bin/sh");
  c->pw_passwd = NULL;
  c->pw_gecos = NULL;
  return c->pw_name && c->pw_dir && c->pw_shell ? c : NULL;
}

/* In the command's child: identity, fds, cwd, exec. Reports errno on `rep` when exec fails. */
static void exec_child(const struct sudo_plan *pl, char **env, int fds[3], const gid_t *groups,
                       int ng, uid_t uid, gid_t gid, mode_t um, const struct sudo_pty *pty, int rep)
{
  sigset_t none;
  sigemptyset(&none);
  for (int sig = 1; sig < NSIG; sig++)
    signal(sig, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, NULL);
  /* Its own group, so a killed client SIGKILLs it and what it started; with a pty its own
   * session (setsid, which a group leader could not call) and so its own group too. */
  if (pty->master >= 0)
    sudo_pty_child(pty, fds);
  else
    setpgid(0, 0);
  for (int i = 0; i < 3; i++)
    if (dup2(fds[i], i) < 0)
      goto fail;
  if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
    for (int fd = 3; fd < 65536; fd++)
      if (fd != rep)
        close(fd);
  if (setgroups((size_t)ng, groups) < 0 || setresgid(gid, gid, gid) < 0 ||
      setresuid(uid, uid, uid) < 0)
    goto fail;
  umask(um | 022);          /* sudo: the union of the user's umask and sudoers' 022 */
  if (chdir(pl->cwd) < 0) { /* sudo goes on without the cwd unless -D was given */
    sudo_say(2, "sudo: unable to change directory to %s: %s", pl->cwd, strerror(errno));
  }
  execve(pl->path, pl->argv, env);
fail:;
  int er = errno;
  if (write(rep, &er, sizeof er) < 0) {
  }
  _exit(1);
}

/* Until command pid ends (SIGCHLD on sfd): relay its pty, forward the signals the client on c
 * sends (SIGWINCH resizes the pty), and SIGKILL its group when the client goes away. Its wait
 * status (0 when poll fails). */
static int supervise(int c, pid_t pid, int sfd, struct sudo_pty *pty)
{
  int gone = 0, st = 0;
  for (;;) {
    struct pollfd p[4] = {{sfd, POLLIN, 0}, {gone ? -1 : c, POLLIN, 0}};
    int np = 2 + sudo_pty_pollfds(pty, p + 2);
    if (poll(p, (nfds_t)np, -1) < 0 && errno != EINTR)
      break;
    sudo_pty_events(pty, p + 2, np - 2);
    if (p[0].revents) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) < 0) {
      }
      pid_t w = waitpid(pid, &st, WNOHANG);
      if (w == pid)
        break;
    }
    if (p[1].revents) {
      uint32_t sig = 0;
      ssize_t n = recv(c, &sig, sizeof sig, MSG_WAITALL);
      if (n == (ssize_t)sizeof sig) {
        if (sig == SIGWINCH && pty->master >= 0)
          sudo_pty_winch(pty); /* the pty tells the command's foreground group itself */
        else if (forwardable(sig))
          kill(pid, (int)sig);
      } else if (n == 0 || (n < 0 && errno != EINTR)) {
        kill(-pid, SIGKILL); /* the client was killed outright: so is its command */
        kill(pid, SIGKILL);
        gone = 1;
      }
    }
  }
  return st;
}

/* Run the plan and relay until the command ends; returns the status word for the client. */
static uint32_t run(int c, const struct sudo_plan *pl, char **env, int fds[3],
                    const struct passwd *t, gid_t gid, mode_t um, int foreground)
{
  struct sudo_pty pty;
  if (sudo_pty_open(&pty, fds, foreground, t->pw_uid) < 0) {
    sudo_say(fds[2], "sudo: unable to allocate pty: %s", strerror(errno));
    return 1;
  }
  gid_t groups[256];
  int ng = 255;
  if (getgrouplist(t->pw_name, t->pw_gid, groups, &ng) < 0) {
    groups[0] = t->pw_gid;
    ng = 1;
  }
  if (gid != t->pw_gid)
    groups[ng++] = gid;
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC), rep[2];
  if (sfd < 0 || pipe2(rep, O_CLOEXEC) < 0) {
    sudo_say(fds[2], "sudo: cannot start the command: %s", strerror(errno));
    return 1;
  }
  pid_t pid = fork();
  if (pid == 0)
    exec_child(pl, env, fds, groups, ng, t->pw_uid, gid, um, &pty, rep[1]);
  close(rep[1]);
  if (pty.slave >= 0) { /* the command's now: the master sees EIO once it and its children end */
    close(pty.slave);
    pty.slave = -1;
  }
  if (pid < 0) {
    sudo_say(fds[2], "sudo: unable to fork: %s", strerror(errno));
    sudo_pty_close(&pty);
    return 1;
  }
  int er = 0;
  ssize_t k;
  while ((k = read(rep[0], &er, sizeof er)) < 0 && errno == EINTR)
    ;
  close(rep[0]);
  if (k == (ssize_t)sizeof er)
    sudo_say(fds[2], "sudo: unable to execute %s: %s", pl->path, strerror(er));
  for (int i = 0; i < 3; i++) /* the command has them; the client's pipes end with it */
    close(fds[i]);
  int st = supervise(c, pid, sfd, &pty);
  sudo_pty_close(&pty);
  if (k == (ssize_t)sizeof er)
    return 1;
  if (WIFSIGNALED(st))
    return SUDO_SIGNALED | (uint32_t)WTERMSIG(st);
  return (uint32_t)WEXITSTATUS(st);
}

/* Receive the header and the three fds, then the records. 0 or -1. */
static int recv_req(int c, int fds[3], char **buf, size_t *len)
{
  struct sudo_hdr h;
  union {
    struct cmsghdr align;
    char b[CMSG_SPACE(3 * sizeof(int))];
  } cm;
  struct iovec iov = {&h, sizeof h};
  struct msghdr m = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b};
  ssize_t n = recvmsg(c, &m, MSG_WAITALL | MSG_CMSG_CLOEXEC);
  int got = 0;
  for (struct cmsghdr *x = CMSG_FIRSTHDR(&m); x; x = CMSG_NXTHDR(&m, x)) {
    if (x->cmsg_level != SOL_SOCKET || x->cmsg_type != SCM_RIGHTS)
      continue;
    int k = (int)((x->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    int *fp = (int *)CMSG_DATA(x);
    for (int i = 0; i < k; i++) {
      if (got < 3)
        fds[got++] = fp[i];
      else
        close(fp[i]);
    }
  }
  if (n != (ssize_t)sizeof h || got != 3 || (m.msg_flags & MSG_CTRUNC) || h.magic != SUDO_MAGIC ||
      h.version != SUDO_VERSION || h.len == 0 || h.len > SUDO_MAX_REQ)
    return -1;
  *buf = malloc(h.len);
  if (!*buf)
    return -1;
  size_t have = 0;
  while (have < h.len) {
    ssize_t k = recv(c, *buf + have, h.len - have, MSG_WAITALL);
    if (k <= 0)
      return -1;
    have += (size_t)k;
  }
  *len = h.len;
  return 0;
}

static const char *deny_msg(const struct sudo_policy *p, const char *name, char *out, size_t n)
{
  switch (p->verdict) {
  case SUDO_PASSWORD: snprintf(out, n, "sudo: a password is required"); break;
  case SUDO_NOT_LISTED: snprintf(out, n, "sudo: %s is not in the sudoers file.", name); break;
  case SUDO_UNSUPPORTED:
    snprintf(out, n,
             "sudo: %s: a sudoers rule for %s has a form this sandbox's sudo does not apply "
             "(only WHO ALL=(ALL[:ALL]) [NOPASSWD:] ALL): refused",
             p->why, name);
    break;
  case SUDO_BAD_FILE:
    snprintf(out, n, "sudo: %s\nsudo: no valid sudoers sources found, quitting", p->why);
    break;
  default: return NULL;
  }
  return out;
}

/* The caller (uid from the kernel: cr) against the sudoers into *pol; root may run anything as
 * anyone (and could rewrite the sudoers anyway). Its passwd entry (a copy) into *caller. 0 when
 * allowed, else 1 after telling errfd why. */
static int authorize(int errfd, const struct ucred *cr, struct passwd **caller,
                     struct sudo_policy *pol)
{
  char msg[1200];
  *caller = pw_copy(getpwuid(cr->uid));
  if (!*caller) {
    sudo_say(errfd, "sudo: you do not exist in the passwd database");
    return 1;
  }
  gid_t groups[256];
  int ng = 256;
  if (getgrouplist((*caller)->pw_name, (*caller)->pw_gid, groups, &ng) < 0) {
    groups[0] = (*caller)->pw_gid;
    ng = 1;
  }
  sudo_policy_eval((*caller)->pw_name, cr->uid, groups, ng, pol);
  if (cr->uid == 0) {
    pol->verdict = SUDO_ALLOW;
    pol->runas_group = 1;
  }
  if (pol->verdict != SUDO_ALLOW) {
    sudo_say(errfd, "%s", deny_msg(pol, (*caller)->pw_name, msg, sizeof msg));
    return 1;
  }
  return 0;
}

/* The user (-u; the caller with -g alone; else root) and group (-g; else the user's) to run
 * as, into *target and *gid. 0, or 1 after telling errfd which is unknown or not allowed. */
static int resolve_target(int errfd, const struct sudo_req *r, struct passwd *caller,
                          const struct sudo_policy *pol, const char *host, struct passwd **target,
                          gid_t *gid)
{
  *target = r->user ? pw_copy(user_by(r->user)) : r->group ? caller : pw_copy(getpwuid(0));
  if (!*target) {
    sudo_say(errfd, "sudo: unknown user %s", r->user ? r->user : "root");
    return 1;
  }
  *gid = (*target)->pw_gid;
  if (!r->group)
    return 0;
  struct group *g = group_by(r->group);
  if (!g) {
    sudo_say(errfd, "sudo: unknown group %s", r->group);
    return 1;
  }
  if (!pol->runas_group) {
    sudo_say(errfd, "sudo: Sorry, user %s is not allowed to execute commands as %s:%s on %s.",
             caller->pw_name, (*target)->pw_name, g->gr_name, host);
    return 1;
  }
  *gid = g->gr_gid;
  return 0;
}

/* sudo -l: with a command, the command as it would run (nothing, status 1, when it would not
 * run); without, the caller's privileges. Written to out; the status word. */
static uint32_t list_privileges(int out, const struct sudo_req *r, const struct passwd *caller,
                                const struct sudo_policy *pol, const char *host)
{
  if (r->nargs) {
    char *p = sudo_find_cmd(r->args[0], r->cwd, pol->secure_path);
    if (!p)
      return 1;
    dprintf(out, "%s", p);
    for (size_t i = 1; i < r->nargs; i++)
      dprintf(out, " %s", r->args[i]);
    dprintf(out, "\n");
    free(p);
    return 0;
  }
  dprintf(out, "User %s may run the following commands on %s:\n    %s ALL\n", caller->pw_name, host,
          pol->runas_group ? "(ALL : ALL) NOPASSWD:" : "(ALL) NOPASSWD:");
  return 0;
}

/* The command's environment (sudoers' env_reset and the request's -E, -H, -i, VAR=value, per
 * sudo_build_env); NULL when out of memory. */
static char **command_env(const struct sudo_req *r, const struct ucred *cr,
                          const struct passwd *caller, const struct passwd *target,
                          const struct sudo_policy *pol, const struct sudo_plan *pl)
{
  struct sudo_env_in in = {.caller = r->env,
                           .ncaller = r->nenv,
                           .keep = r->keep,
                           .nkeep = r->nkeep,
                           .sets = r->sets,
                           .nsets = r->nsets,
                           .preserve = sudo_req_has(r, 'E') && !sudo_req_has(r, 'i'),
                           .set_home = sudo_req_has(r, 'H') || sudo_req_has(r, 'i'),
                           .secure_path = pol->secure_path,
                           .target_name = target->pw_name,
                           .target_home = target->pw_dir,
                           .target_shell = target->pw_shell,
                           .command = pl->command,
                           .caller_name = caller->pw_name,
                           .caller_uid = cr->uid,
                           .caller_gid = caller->pw_gid};
  return sudo_build_env(&in);
}

/* One request, in the handler process. Returns the status word for the client. */
static uint32_t handle(int c)
{
  struct ucred cr;
  socklen_t cl = sizeof cr;
  int fds[3] = {-1, -1, -1};
  char *buf = NULL;
  size_t len = 0;
  struct timeval tv = {10, 0};
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || recv_req(c, fds, &buf, &len) != 0)
    return 1; /* not our client: nothing to tell it */
  struct timeval none = {0, 0};
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  int errfd = fds[2];
  struct sudo_req r;
  if (sudo_req_parse(buf, len, &r) != 0) {
    sudo_say(errfd, "sudo: malformed request to the sudo broker");
    return 1;
  }
  struct passwd *caller, *target;
  struct sudo_policy pol;
  if (authorize(errfd, &cr, &caller, &pol) != 0)
    return 1;
  if (sudo_req_has(&r, 'v'))
    return 0;
  gid_t gid;
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  if (resolve_target(errfd, &r, caller, &pol, host, &target, &gid) != 0)
    return 1;
  if (sudo_req_has(&r, 'l'))
    return list_privileges(fds[1], &r, caller, &pol, host);
  struct sudo_plan pl;
  if (sudo_plan_make(&r, caller, target, pol.secure_path, errfd, &pl) != 0) {
    sudo_plan_free(&pl);
    return 1;
  }
  char **env = command_env(&r, &cr, caller, target, &pol, &pl);
  if (!env) {
    sudo_say(errfd, "sudo: out of memory");
    return 1;
  }
  return run(c, &pl, env, fds, target, gid, r.umask, sudo_req_has(&r, 'F'));
}

static void broker_loop(int lfd)
{
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGCHLD, SIG_IGN); /* handlers are reaped by the kernel */
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  for (;;) {
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
          errno == ENOMEM) {
        if (errno != EINTR && errno != ECONNABORTED)
          sleep(1);
        continue;
      }
      _exit(1);
    }
    pid_t h = fork();
    if (h == 0) {
      close(lfd);
      signal(SIGCHLD, SIG_DFL); /* the handler waits for its command */
      send_status(c, handle(c));
      _exit(0);
    }
    close(c);
  }
}

pid_t envd_sudo_broker_start(void)
{
  if (geteuid() != 0)
    return 0;
  struct stat st;
  mkdir("/run", 0755);
  if (mkdir(SUDO_SOCK_DIR, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "envd: sudo broker: cannot create %s: %s\n", SUDO_SOCK_DIR, strerror(errno));
    return -1;
  }
  if (lstat(SUDO_SOCK_DIR, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
      (st.st_mode & 022)) {
    fprintf(stderr, "envd: sudo broker: %s is not a directory of root's that only root can write\n",
            SUDO_SOCK_DIR);
    return -1;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", SUDO_SOCK);
  unlink(SUDO_SOCK); /* a previous envd's (a filesystem-only resume, a snapshot's copy) */
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || chmod(SUDO_SOCK, 0666) != 0 ||
      listen(fd, 64) != 0) {
    fprintf(stderr, "envd: sudo broker: cannot listen on %s: %s\n", SUDO_SOCK, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  pid_t parent = getpid(), pid = fork();
  if (pid != 0) {
    close(fd);
    if (pid < 0)
      fprintf(stderr, "envd: sudo broker: fork: %s\n", strerror(errno));
    return pid;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(0);
  prctl(PR_SET_NAME, "envd-sudo");
  broker_loop(fd);
  _exit(0);
}

void envd_sudo_broker_stop(pid_t pid)
{
  if (pid <= 0)
    return;
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
  unlink(SUDO_SOCK);
}
