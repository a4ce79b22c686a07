/*
 * sandbox.c: templates, sandbox state dirs, bwrap spawn and teardown. Contract in sandbox.h.
 */
#include "sandbox.h"
#include "sandbox_log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "e2b.h"
#include "envd_client.h"
#include "util/util.h"
#include "template_start.h"
#include "metrics.h"
#include "net/net.h"
#include "template/template.h"
#include "spawner.h"
#include "volume.h"

#define BWRAP "/usr/bin/bwrap"
/* bwrap's child pid and envd's /health, from the spawn: 60 s. Quiet, envd answers in
 * milliseconds; beside a busy suite a 10 s bound is too near (issue 22). A sandbox whose bwrap
 * exits is reported at once (abx_envd_wait_health), so the bound only limits a hang. */
#define START_DEADLINE_NS (60LL * 1000000000LL)

static const char *g_state_dir;
static const char *g_exe;
static char
    g_sandbox_exe[4096]; /* bound at /opt/abx/abxlua: abxlua-envd beside g_exe, else g_exe */

void abx_sandbox_config(const char *state_dir, const char *exe_path)
{
  g_state_dir = state_dir;
  g_exe = exe_path;
  /* abxlua-envd (envd and sudo only, a tenth of the libraries: platform/envd_bin/main.c) when it
   * sits beside this binary, as the build and the package put it; else this binary itself */
  const char *slash = strrchr(exe_path, '/');
  snprintf(g_sandbox_exe, sizeof g_sandbox_exe, "%.*s/abxlua-envd",
           slash ? (int)(slash - exe_path) : 1, slash ? exe_path : ".");
  if (access(g_sandbox_exe, X_OK) != 0)
    snprintf(g_sandbox_exe, sizeof g_sandbox_exe, "%s", exe_path);
  char trash[4096]; /* what a serve that died left in the trash */
  snprintf(trash, sizeof trash, "%s/.trash", state_dir);
  abx_rmtree(trash);
}

/* A killed sandbox's state dir is renamed into <state>/.trash at once and removed there by one
 * worker thread: removing a tree of files costs tens of ms on a disk mounted with `discard`, and
 * a kill need not wait for it (its path is gone as soon as the rename returns). */
static pthread_mutex_t g_trash_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_trash_cv = PTHREAD_COND_INITIALIZER;
static int g_trash_started, g_trash_pending; /* renamed dirs not yet removed */
static unsigned long g_trash_seq;

static void *trash_worker(void *arg)
{
  (void)arg;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/.trash", g_state_dir);
  for (;;) {
    pthread_mutex_lock(&g_trash_mu);
    while (g_trash_pending == 0)
      pthread_cond_wait(&g_trash_cv, &g_trash_mu);
    pthread_mutex_unlock(&g_trash_mu);
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
      if (e->d_name[0] == '.')
        continue;
      char p[4400];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      abx_rmtree(p);
      n++;
    }
    if (d)
      closedir(d);
    pthread_mutex_lock(&g_trash_mu);
    g_trash_pending = n > g_trash_pending || !d ? 0 : g_trash_pending - n;
    pthread_cond_broadcast(&g_trash_cv);
    pthread_mutex_unlock(&g_trash_mu);
  }
  return NULL;
}

/* Remove `dir` (a sandbox's state dir): renamed into the trash and removed by the worker, or
 * removed here when the rename or the worker is not available. */
static void discard_dir(const char *dir)
{
  char trash[4096], to[4200];
  snprintf(trash, sizeof trash, "%s/.trash", g_state_dir);
  pthread_mutex_lock(&g_trash_mu);
  int ok = 0;
  if (!g_trash_started) {
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    g_trash_started = (mkdir(trash, 0700) == 0 || errno == EEXIST) &&
                              pthread_create(&t, &at, trash_worker, NULL) == 0
                          ? 1
                          : -1;
    pthread_attr_destroy(&at);
  }
  if (g_trash_started > 0) {
    snprintf(to, sizeof to, "%s/%lu", trash, ++g_trash_seq);
    ok = rename(dir, to) == 0;
    if (ok) {
      g_trash_pending++;
      pthread_cond_broadcast(&g_trash_cv);
    }
  }
  pthread_mutex_unlock(&g_trash_mu);
  if (!ok)
    abx_rmtree(dir);
}

void abx_sandbox_drain_trash(void)
{
  pthread_mutex_lock(&g_trash_mu);
  while (g_trash_started > 0 && g_trash_pending > 0)
    pthread_cond_wait(&g_trash_cv, &g_trash_mu);
  pthread_mutex_unlock(&g_trash_mu);
  if (g_state_dir) { /* left by a serve that stopped before its worker was done */
    char trash[4096];
    snprintf(trash, sizeof trash, "%s/.trash", g_state_dir);
    abx_rmtree(trash);
  }
}

static int prepare_dir(struct abx_sandbox *sb)
{
  if (asprintf(&sb->dir, "%s/%s", g_state_dir, sb->id) < 0) {
    sb->dir = NULL;
    return -1;
  }
  return mkdir(sb->dir, 0700);
}

/* argv for bwrap; strings are owned by `store` (freed by the caller). */
struct argv_buf {
  char *v[160];
  int n;
  char *own[24];
  int nown;
};

static void add(struct argv_buf *a, const char *s)
{
  if (a->n < 159)
    a->v[a->n++] = (char *)s;
}

static const char *own(struct argv_buf *a, char *s)
{
  if (s && a->nown < 24)
    a->own[a->nown++] = s;
  return s ? s : "";
}

static const char *path_in(struct argv_buf *a, const char *dir, const char *name)
{
  char *s = NULL;
  if (asprintf(&s, "%s/%s", dir, name) < 0)
    s = NULL;
  return own(a, s);
}

/* Root in the sandbox keeps these (bwrap --cap-add) and its bounding set holds nothing else
 * (spawner.h keep_caps), so no mount, module loading or raw network access, ever. */
static const char *caps[] = {"CAP_SETUID",       "CAP_SETGID", "CAP_CHOWN",
                             "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_KILL"};
#define KEEP_CAPS                                                                                  \
  ((1ULL << CAP_SETUID) | (1ULL << CAP_SETGID) | (1ULL << CAP_CHOWN) |                             \
   (1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_FOWNER) | (1ULL << CAP_KILL))

/* The sandbox's own memory, cpu and cpuacct groups, read-only at /sys/fs/cgroup/<h> (on a tmpfs
 * /sys, read-only too), as a container sees its groups: cgroup-aware programs (the JVM, Node, Go)
 * size themselves from the limits, and envd's /metrics reads them. Nothing else of the host's
 * /sys is visible; the pids in cgroup.procs are those of the sandbox's pid namespace. */
static int bind_cgroups(struct argv_buf *a, struct abx_sandbox *sb)
{
  static const char *const hs[] = {"memory", "cpu", "cpuacct"};
  int any = 0;
  for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) {
    char dir[1024], *d = NULL, *dest = NULL;
    if (abx_cgroup_dir(hs[i], sb->id, dir, sizeof dir) != 0)
      continue;
    if (!any) {
      add(a, "--tmpfs");
      add(a, "/sys");
      add(a, "--perms"); /* bwrap makes missing parents 0700: readable by every user instead */
      add(a, "0755");
      add(a, "--dir");
      add(a, "/sys/fs");
      add(a, "--perms");
      add(a, "0755");
      add(a, "--dir");
      add(a, "/sys/fs/cgroup");
      any = 1;
    }
    d = strdup(dir);
    if (asprintf(&dest, "/sys/fs/cgroup/%s", hs[i]) < 0)
      dest = NULL;
    add(a, "--ro-bind");
    add(a, own(a, d));
    add(a, own(a, dest));
  }
  return any; /* the caller remounts /sys read-only after the volumes (one may be under /sys) */
}

static void build_argv(struct argv_buf *a, struct abx_sandbox *sb)
{
  add(a, "bwrap");
  add(a, "--unshare-pid");
  add(a, "--unshare-net");
  add(a, "--unshare-uts");
  add(a, "--unshare-ipc");
  add(a, "--die-with-parent");
  add(a, "--new-session");
  add(a, "--hostname");
  add(a, sb->id);
  add(a, "--cap-drop");
  add(a, "ALL");
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
    add(a, "--cap-add");
    add(a, caps[i]);
  }
  add(a, "--bind"); /* the overlay root (rootfs.h), recursively: its per-directory overlays too */
  add(a, path_in(a, sb->dir, "rootfs"));
  add(a, "/");
  add(a, "--proc");
  add(a, "/proc");
  add(a, "--dev");
  add(a, "/dev");
  add(a, "--ro-bind"); /* this boot's id over the host's (write_boot_id) */
  add(a, path_in(a, sb->dir, "boot_id"));
  add(a, "/proc/sys/kernel/random/boot_id");
  add(a, "--ro-bind");
  add(a, g_sandbox_exe);
  add(a, "/opt/abx/abxlua");
  int sys = bind_cgroups(a, sb);
  size_t nv = json_array_size(sb->volume_mounts);
  for (size_t i = 0; i < nv && sb->volume_dirs; i++) {
    json_t *m = json_array_get(sb->volume_mounts, i);
    add(a, json_is_true(json_object_get(m, "readOnly")) ? "--ro-bind" : "--bind");
    add(a, sb->volume_dirs[i]);
    add(a, json_string_value(json_object_get(m, "path")));
  }
  if (sys) {
    add(a, "--remount-ro");
    add(a, "/sys");
  }
  add(a, "--chdir");
  add(a, "/");
  add(a, "--info-fd");
  add(a, "3");
  add(a, "/opt/abx/abxlua");
  add(a, "envd");
  add(a, "--port");
  add(a, ABX_E2B_ENVD_PORT_STR);
  if (abx_flavor()->execd) { /* OpenSandbox: the execd data plane on its port, from envd */
    add(a, "--execd-port");
    add(a, ABX_EXECD_PORT_STR);
  }
  a->v[a->n] = NULL;
}

/* Read bwrap's {"child-pid": N} from `fd` until `deadline`. Returns the pid or -1. */
static pid_t read_child_pid(int fd, int64_t deadline)
{
  char buf[512];
  size_t len = 0;
  for (;;) {
    int64_t left = (deadline - abx_mono_ns()) / 1000000;
    if (left <= 0)
      return -1;
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, (int)left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    ssize_t k = read(fd, buf + len, sizeof buf - 1 - len);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    len += (size_t)k;
    buf[len] = 0;
    json_t *j = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
    if (j) {
      json_int_t pid = json_integer_value(json_object_get(j, "child-pid"));
      json_decref(j);
      return pid > 1 ? (pid_t)pid : -1;
    }
    if (len >= sizeof buf - 1)
      return -1;
  }
}

static void log_tail(const char *dir, char *out, size_t outlen)
{
  char p[4096];
  snprintf(p, sizeof p, "%s/envd.log", dir);
  out[0] = 0;
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  off_t end = lseek(fd, 0, SEEK_END);
  off_t from = end > 300 ? end - 300 : 0;
  ssize_t k = pread(fd, out, outlen - 1, from);
  close(fd);
  out[k > 0 ? k : 0] = 0;
  for (char *c = out; *c; c++)
    if (*c == '\n' || *c == '"')
      *c = ' ';
}

/* A fresh random UUID (version 4, as the kernel's) in <dir>/boot_id, bound read-only over
 * /proc/sys/kernel/random/boot_id: every boot of the sandbox has its own id, a thaw keeps it. */
static int write_boot_id(struct abx_sandbox *sb)
{
  char h[33], id[40], p[4096];
  if (abx_rand_hex(h, 32) != 0)
    return -1;
  h[12] = '4';                              /* version 4 */
  h[16] = "89ab"[(unsigned char)h[16] & 3]; /* variant 10xx */
  snprintf(id, sizeof id, "%.8s-%.4s-%.4s-%.4s-%.12s\n", h, h + 8, h + 12, h + 16, h + 20);
  snprintf(p, sizeof p, "%s/boot_id", sb->dir);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
  if (fd < 0)
    return -1;
  size_t n = strlen(id);
  int ok = write(fd, id, n) == (ssize_t)n;
  close(fd);
  return ok ? 0 : -1;
}

/* Wait until process `pid` has exited (a zombie counts; it is not reaped) or `ms` passed, on a
 * pidfd (readable once the process exits, child or not), so a kill is not held by a sleep loop.
 * 1 when it exited or no longer exists, 0 at the deadline, -1 when pidfds are unavailable. */
static int wait_exited(pid_t pid, int ms)
{
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0)
    return errno == ESRCH ? 1 : -1;
  int64_t deadline = abx_mono_ns() + (int64_t)ms * 1000000LL;
  int r;
  for (;;) {
    int64_t left = (deadline - abx_mono_ns()) / 1000000;
    struct pollfd p = {fd, POLLIN, 0};
    r = poll(&p, 1, left > 0 ? (int)left : 0);
    if (r < 0 && errno == EINTR)
      continue;
    break;
  }
  close(fd);
  return r > 0 ? 1 : r == 0 ? 0 : -1;
}

/* Stop every process of the sandbox and drop its link; its files, mounts and cgroups stay. */
static void halt(struct abx_sandbox *sb)
{
  /* Kill the namespace's first process first: the outer bwrap then reaps it and exits by itself,
   * so no zombie is left to the host's init. Then make sure with SIGKILL to the whole group. */
  if (sb->child_pid > 0)
    kill(sb->child_pid, SIGKILL);
  if (sb->dir)
    abx_cgroup_kill_all(sb->id); /* a paused sandbox: SIGKILL everything, then thaw so it dies */
  pid_t pid = sb->pid;           /* one read: a killpg(0) would hit serve's own process group */
  if (pid > 0) {
    /* Wait (1 s) for bwrap to exit without reaping it, so its pid and group stay reserved for
     * the killpg below; then reap. Nobody else reaps it meanwhile: the caller holds sb->op and
     * the lifecycle tick (due_sandboxes, lifecycle.c) only reaps sandboxes whose op it can take. */
    int64_t deadline = abx_mono_ns() + 1000000000LL;
    for (int r = wait_exited(pid, 1000); r < 0;) { /* no pidfd: poll every 5 ms */
      siginfo_t si = {0};
      if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
        break;
      if (abx_mono_ns() >= deadline)
        break;
      struct timespec ts = {0, 5 * 1000000L};
      nanosleep(&ts, NULL);
    }
    killpg(pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
  }
  if (sb->child_pid > 0) {
    /* The namespace's first process dies last; when it is gone (or a zombie) all are gone. */
    int64_t deadline = abx_mono_ns() + 2000000000LL;
    char p[64], st[256];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)sb->child_pid);
    int r = wait_exited(sb->child_pid, 2000);
    while (r < 0 && abx_mono_ns() < deadline) { /* no pidfd: poll every 10 ms */
      int fd = open(p, O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        break;
      ssize_t k = read(fd, st, sizeof st - 1);
      close(fd);
      st[k > 0 ? k : 0] = 0;
      char *rp = strrchr(st, ')');
      if (!rp || rp[1] == 0 || rp[2] == 'Z' || rp[2] == 'X')
        break;
      struct timespec ts = {0, 10 * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  abx_network_detach(sb->id);
  abx_registry_lock(); /* a listed sandbox (a filesystem pause): netns_of() reads these */
  int netns = sb->netns_fd;
  sb->netns_fd = -1;
  sb->pid = sb->child_pid = 0;
  abx_registry_unlock();
  if (netns >= 0)
    close(netns);
}

/* The template's name for serve's log: its alias (what the create named), else its id. */
static const char *tmpl_name(const struct abx_sandbox *sb)
{
  return sb->alias[0] ? sb->alias : sb->template_id;
}

/* abx_template_start for sb (its start_cmd, then its ready_cmd), with one line in serve's log
 * when the template has either: the outcome and the time waited. 0 when ready. */
static int readiness(struct abx_sandbox *sb, char *err, size_t errlen)
{
  int has = abx_template_start_cmd(sb->tmpl) || abx_template_ready_cmd(sb->tmpl);
  int64_t t0 = abx_mono_ns();
  int rc = abx_template_start(sb->tmpl, sb->netns_fd, sb->secure ? sb->token : NULL,
                              &sb->start_cancel, err, errlen);
  long long ms = (long long)((abx_mono_ns() - t0) / 1000000);
  if (has && rc == 0)
    abx_slog("sandbox %s: template %s ready after %lld ms (start/ready commands)", sb->id,
             tmpl_name(sb), ms);
  else if (has)
    abx_slog("sandbox %s: template %s not ready after %lld ms: %s", sb->id, tmpl_name(sb), ms, err);
  return rc;
}

/* ---- boot: its steps, each pushing its undo on a cleanup stack (cleanup.h) ------------------- */

/* What a boot holds until it ends, failed or not: bwrap's info pipe, the log fd, bwrap's argv and
 * the cgroup dirs it is spawned into. */
struct boot {
  int64_t deadline; /* CLOCK_MONOTONIC ns: bwrap's child pid and envd's /health */
  int pipefd[2], logfd;
  struct argv_buf a;
  char *cgroups[ABX_CGROUP_MAX + 1];
};

static void boot_release(struct boot *b)
{
  if (b->pipefd[0] >= 0)
    close(b->pipefd[0]);
  if (b->pipefd[1] >= 0)
    close(b->pipefd[1]);
  if (b->logfd >= 0)
    close(b->logfd);
  for (int i = 0; i < b->a.nown; i++)
    free(b->a.own[i]);
  for (int i = 0; b->cgroups[i]; i++)
    free(b->cgroups[i]);
}

/* The undos of a fresh boot: with halt, in reverse, they are abx_sandbox_stop's steps. */
static void remove_dir(struct abx_sandbox *sb)
{
  if (sb->dir)
    discard_dir(sb->dir);
  free(sb->dir);
  sb->dir = NULL;
}

static void umount_root(struct abx_sandbox *sb)
{
  if (sb->dir)
    abx_rootfs_umount(sb->dir);
}

static void remove_cgroups(struct abx_sandbox *sb)
{
  if (sb->dir)
    abx_cgroup_remove(sb->id);
}

/* A fresh sandbox's state dir and overlay root, then (every boot) its boot id. 0, or -1 with err.
 * Each undo is pushed before its step: a step failing halfway leaves part of it. */
static int make_root(struct abx_sandbox *sb, int fresh, struct cleanup *undo, char *err,
                     size_t errlen)
{
  if (fresh) {
    cleanup_push(undo, remove_dir);
    if (prepare_dir(sb) != 0) {
      snprintf(err, errlen, "cannot prepare sandbox state dir: %s", strerror(errno));
      return -1;
    }
    cleanup_push(undo, umount_root);
    if (abx_rootfs_mount(sb->tmpl, sb->dir, err, errlen) != 0)
      return -1;
  }
  if (write_boot_id(sb) != 0) {
    snprintf(err, errlen, "cannot write the sandbox's boot id: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/* Its cgroups (a reboot's exist already and stay) with its limits, the template's unless set. */
static int make_cgroups(struct abx_sandbox *sb, int fresh, struct boot *b, struct cleanup *undo,
                        char *err, size_t errlen)
{
  if (fresh)
    cleanup_push(undo, remove_cgroups);
  if (abx_cgroup_create(sb->id, b->cgroups) != 0) {
    snprintf(err, errlen, "cannot create the sandbox's cgroups: %s", strerror(errno));
    return -1;
  }
  if (sb->cpu_count <= 0 || sb->memory_mb <= 0) { /* the template's limits (rootfs.h) */
    sb->cpu_count = sb->tmpl->cpu_count;
    sb->memory_mb = sb->tmpl->memory_mb;
  }
  if (abx_cgroup_set_limits(sb->id, sb->cpu_count, sb->memory_mb, err, errlen) != 0)
    return -1;
  /* a warm pool's boot yields to every other sandbox (warm_pool.h); its claim restores it */
  if (sb->pooled && abx_cgroup_set_weight(sb->id, ABX_WARM_POOL_CPU_MILLIS, err, errlen) != 0)
    return -1;
  abx_metrics_begin(sb->id);
  return 0;
}

/* bwrap running envd, in the cgroups from the start, its output appended to envd.log; then the
 * pid of its child (the namespaces' first process) from --info-fd. 0, or -1 with err. */
static int spawn(struct abx_sandbox *sb, struct boot *b, char *err, size_t errlen)
{
  char logp[4096];
  snprintf(logp, sizeof logp, "%s/envd.log", sb->dir);
  b->logfd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (b->logfd < 0 || pipe2(b->pipefd, O_CLOEXEC) != 0) {
    snprintf(err, errlen, "cannot create pipes: %s", strerror(errno));
    return -1;
  }
  build_argv(&b->a, sb);
  /* `serve --mutant`'s envd mutants (util/mutant.h) reach envd as ABX_ENVD_MUTANTS, in every
   * sandbox but a template build's, whose steps must not be lied to */
  char mutants[600] = "ABX_ENVD_MUTANTS=";
  size_t k = strlen(mutants);
  int lie = sb->id[0] != 'b' &&
            abx_mutant_names_on(ABX_MUT_LAYERS(ENVD), ",", 0, mutants + k, sizeof mutants - k) > 0;
  char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
                  "LANG=C.UTF-8", lie ? mutants : NULL, NULL};
  sb->pid = abx_spawner_run(BWRAP, b->a.v, envp, b->pipefd[1], b->logfd, b->cgroups, KEEP_CAPS);
  close(b->pipefd[1]);
  b->pipefd[1] = -1;
  if (sb->pid <= 0) {
    sb->pid = 0;
    snprintf(err, errlen, "cannot start bwrap");
    return -1;
  }
  sb->child_pid = read_child_pid(b->pipefd[0], b->deadline);
  if (sb->child_pid <= 0) {
    sb->child_pid = 0;
    char tail[320];
    log_tail(sb->dir, tail, sizeof tail);
    snprintf(err, errlen, "bwrap did not report its child: %s", tail);
    return -1;
  }
  return 0;
}

/* Hold the sandbox's network namespace open and give it its link and rules (network.h). */
static int join_network(struct abx_sandbox *sb, char *err, size_t errlen)
{
  int netns = abx_netns_open(sb->child_pid);
  abx_registry_lock(); /* a reboot's sandbox is listed: netns_of() reads it */
  sb->netns_fd = netns;
  abx_registry_unlock();
  if (sb->netns_fd < 0) {
    snprintf(err, errlen, "cannot open the sandbox network namespace: %s", strerror(errno));
    return -1;
  }
  return abx_network_attach(sb->id, sb->netns_fd, err, errlen);
}

/* envd's /health until the deadline; a failure carries the tail of envd.log. */
static int wait_envd(struct abx_sandbox *sb, int64_t deadline, char *err, size_t errlen)
{
  int exited = 0;
  if (abx_envd_wait_health(sb->netns_fd, sb->pid, &exited, deadline, err, errlen) == 0)
    return 0;
  if (exited)
    sb->pid = 0;
  char tail[320], msg[256];
  log_tail(sb->dir, tail, sizeof tail);
  snprintf(msg, sizeof msg, "%s", err);
  snprintf(err, errlen, "%s; envd log: %s", msg, tail);
  return -1;
}

/* POST /init: the envVars (the template's ENV under the create's), the default user and workdir
 * of a built template, and the access token of a secure sandbox. */
static int init_envd(struct abx_sandbox *sb, json_t *env_vars, char *err, size_t errlen)
{
  /* a built template's ENV, USER and WORKDIR are its sandboxes' defaults; the create's envVars
   * win over the template's (template_build.h) */
  json_t *tenv = abx_template_env(sb->tmpl);
  json_t *envs = tenv ? json_deep_copy(tenv) : json_object();
  if (envs)
    json_object_update(envs, env_vars);
  const char *duser = abx_template_user(sb->tmpl), *dwd = abx_template_workdir(sb->tmpl);
  json_t *init =
      envs ? json_pack("{s:o,s:s}", "envVars", envs, "defaultUser", duser ? duser : "user") : NULL;
  if (init && dwd)
    json_object_set_new(init, "defaultWorkdir", json_string(dwd));
  if (init && sb->secure)
    json_object_set_new(init, "accessToken", json_string(sb->token));
  int rc = init ? abx_envd_init(sb->netns_fd, init, err, errlen) : -1;
  json_decref(init);
  return rc;
}

/* Boot the sandbox: with `fresh` its state dir and root are made first (a new sandbox), else
 * they are reused (a reboot after halt()). On failure a fresh sandbox is torn down; a reboot is
 * halted again with its files kept. */
static int boot(struct abx_sandbox *sb, json_t *env_vars, int fresh, char *err, size_t errlen)
{
  struct boot b = {.deadline = abx_mono_ns() + START_DEADLINE_NS, .pipefd = {-1, -1}, .logfd = -1};
  struct cleanup undo = {.n = 0};
  sb->netns_fd = -1;
  sb->pid = sb->child_pid = 0;
  if (!fresh)
    cleanup_push(&undo, halt); /* a reboot keeps its files, whatever fails */
  int rc = make_root(sb, fresh, &undo, err, errlen);
  if (rc == 0)
    rc = make_cgroups(sb, fresh, &b, &undo, err, errlen);
  if (rc == 0 && fresh)
    cleanup_push(&undo, halt);
  if (rc == 0)
    rc = spawn(sb, &b, err, errlen);
  if (rc == 0)
    rc = join_network(sb, err, errlen);
  if (rc == 0)
    rc = wait_envd(sb, b.deadline, err, errlen);
  if (rc == 0)
    rc = init_envd(sb, env_vars, err, errlen);
  /* the template's start_cmd, then its ready_cmd: handed out only once ready (template_start.h) */
  if (rc == 0 && !sb->skip_start)
    rc = readiness(sb, err, errlen);
  if (rc == 0)
    abx_metrics_sample(sb); /* E2B collects one at the start of the sandbox (metrics.h) */
  boot_release(&b);
  if (rc != 0)
    cleanup_run(&undo, sb);
  return rc != 0 ? -1 : 0;
}

int abx_sandbox_init_again(struct abx_sandbox *sb, json_t *env_vars, char *err, size_t errlen)
{
  json_t *copy = json_deep_copy(env_vars);
  if (!copy) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (init_envd(sb, env_vars, err, errlen) != 0) {
    json_decref(copy);
    return -1;
  }
  json_decref(sb->env_vars);
  sb->env_vars = copy; /* for reboots */
  return 0;
}

int abx_sandbox_start(struct abx_sandbox *sb, json_t *env_vars, char *err, size_t errlen)
{
  json_decref(sb->env_vars);
  sb->env_vars = json_deep_copy(env_vars); /* for reboots (abx_sandbox_reboot) */
  if (!sb->env_vars) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  const char *why = sb->origin ? sb->origin : "created";
  int64_t t0 = abx_mono_ns();
  int rc = boot(sb, env_vars, 1, err, errlen);
  long long ms = (long long)((abx_mono_ns() - t0) / 1000000);
  if (rc == 0) {
    abx_sandbox_log(sb, "info", "sandbox started from template %s (envd pid %d)", sb->template_id,
                    (int)sb->child_pid);
    abx_slog("sandbox %s started: %s from template %s in %lld ms", sb->id, why, tmpl_name(sb), ms);
  } else {
    abx_slog("sandbox %s failed to start: %s from template %s, after %lld ms: %s", sb->id, why,
             tmpl_name(sb), ms, err);
  }
  return rc;
}

void abx_sandbox_halt(struct abx_sandbox *sb)
{
  halt(sb);
}

int abx_sandbox_reboot(struct abx_sandbox *sb, char *err, size_t errlen)
{
  if (!sb->dir) {
    snprintf(err, errlen, "the sandbox has no state dir");
    return -1;
  }
  json_t *env = sb->env_vars ? json_incref(sb->env_vars) : json_object();
  int64_t t0 = abx_mono_ns();
  int rc = boot(sb, env, 0, err, errlen);
  json_decref(env);
  long long ms = (long long)((abx_mono_ns() - t0) / 1000000);
  if (rc == 0) {
    abx_sandbox_log(sb, "info", "sandbox booted again from its filesystem (envd pid %d)",
                    (int)sb->child_pid);
    abx_slog("sandbox %s booted again from its filesystem in %lld ms", sb->id, ms);
  } else {
    abx_slog("sandbox %s failed to boot again, after %lld ms: %s", sb->id, ms, err);
  }
  return rc;
}

void abx_sandbox_stop(struct abx_sandbox *sb)
{
  halt(sb);
  remove_cgroups(sb);
  umount_root(sb);
  abx_sandbox_log_keep(sb); /* E2B answers a killed sandbox's logs (sandbox_log.h) */
  remove_dir(sb);
}
