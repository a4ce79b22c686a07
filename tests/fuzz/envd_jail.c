/*
 * envd_jail.c: the in-process envd of the fuzz targets, chrooted into a scratch tree. Contract
 * in envd_jail.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd_jail.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "envd/envd_int.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#endif
#ifdef HAVE_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define DIE(...)                                                                                   \
  do {                                                                                             \
    fprintf(stderr, "envd_jail: " __VA_ARGS__);                                                    \
    fputc('\n', stderr);                                                                           \
    abort();                                                                                       \
  } while (0)

static const struct {
  const char *path, *text;
} fixtures[] = {
    {"/etc/passwd", "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n"},
    {"/etc/group", "root:x:0:\nuser:x:1000:\n"},
    /* only the files database: nothing for NSS to load inside the jail */
    {"/etc/nsswitch.conf", "passwd: files\ngroup: files\n"},
};
static const char *const fixture_dirs[] = {"", "/etc", "/root", "/home", JAIL_USER_HOME};

static char g_base[PATH_MAX], g_root[PATH_MAX];
static size_t g_root_len;
static int g_host_root = -1, g_cwd = -1;
static struct envd g_envd; /* no token, default user root: what a fresh sandbox has */
static struct MHD_Daemon *g_daemon;

void jail_put(struct jail_buf *b, const void *data, size_t n)
{
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
      DIE("out of memory");
    b->p = p;
    b->cap = cap;
  }
  if (n)
    memcpy(b->p + b->n, data, n);
  b->n += n;
  b->p[b->n] = 0;
}

void jail_putf(struct jail_buf *b, const char *fmt, ...)
{
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  jail_put(b, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

const char *jail_root(size_t *len)
{
  *len = g_root_len;
  return g_root;
}

int jail_fixture_dir(const char *rel)
{
  for (size_t i = 0; i < sizeof fixture_dirs / sizeof fixture_dirs[0]; i++)
    if (strcmp(rel, fixture_dirs[i]) == 0)
      return 1;
  return 0;
}

const char *jail_fixture_text(const char *rel)
{
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
    if (strcmp(rel, fixtures[i].path) == 0)
      return fixtures[i].text;
  return NULL;
}

void jail_restore_fixtures(void)
{
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
    char p[PATH_MAX * 2];
    snprintf(p, sizeof p, "%s%s", g_root, fixtures[i].path);
    FILE *f = fopen(p, "w");
    if (!f || fputs(fixtures[i].text, f) < 0 || fclose(f) != 0)
      DIE("cannot write %s: %s", p, strerror(errno));
  }
}

static void jail_enter(void)
{
  if (chroot(g_root) != 0)
    DIE("chroot %s: %s (the fuzz target needs root)", g_root, strerror(errno));
}

/* A root process leaves a chroot through a directory outside it: the host's "/" held open. */
static void jail_leave(void)
{
  if (fchdir(g_host_root) != 0 || chroot(".") != 0 || fchdir(g_cwd) != 0)
    DIE("leaving the jail: %s", strerror(errno));
}

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
  return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void remove_tree(void)
{
  nftw(g_base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void jail_setup(void)
{
  if (g_daemon)
    return;
  if (unshare(CLONE_FS) != 0) /* the chroot and umask stay on this thread */
    DIE("unshare(CLONE_FS): %s", strerror(errno));
  umask(022); /* as abx_envd_main */
  signal(SIGPIPE, SIG_IGN);
  const char *tmp = getenv("TMPDIR");
  snprintf(g_base, sizeof g_base, "%s/envd_jail.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_base))
    DIE("mkdtemp %s: %s", g_base, strerror(errno));
  atexit(remove_tree);
  g_root_len = (size_t)snprintf(g_root, sizeof g_root, "%s/root", g_base);
  for (size_t i = 0; i < sizeof fixture_dirs / sizeof fixture_dirs[0]; i++) {
    char p[PATH_MAX * 2];
    snprintf(p, sizeof p, "%s%s", g_root, fixture_dirs[i]);
    if (mkdir(p, 0755) != 0)
      DIE("mkdir %s: %s", p, strerror(errno));
  }
  char home[PATH_MAX + sizeof JAIL_USER_HOME];
  snprintf(home, sizeof home, "%s" JAIL_USER_HOME, g_root);
  if (chown(home, JAIL_USER_UID, JAIL_USER_UID) != 0)
    DIE("chown %s: %s (the fuzz target needs root)", home, strerror(errno));
  jail_restore_fixtures();
  g_host_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  g_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (g_host_root < 0 || g_cwd < 0)
    DIE("cannot open / or the cwd: %s", strerror(errno));
  struct stat want, got;
  if (stat(g_root, &want) != 0)
    DIE("stat %s: %s", g_root, strerror(errno));
  jail_enter();
  int rc = stat("/", &got);
  jail_leave();
  if (rc != 0 || got.st_ino != want.st_ino || got.st_dev != want.st_dev)
    DIE("the jail does not hold: / is not %s inside it", g_root);
#ifdef HAVE_ASAN
  char sym[256]; /* a report from inside the jail could not exec llvm-symbolizer */
  __sanitizer_symbolize_pc(__builtin_return_address(0), "%p %F %L", sym, sizeof sym);
#endif
  pthread_mutex_init(&g_envd.mu, NULL);
  g_daemon = MHD_start_daemon(MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, envd_on_request, &g_envd,
                              MHD_OPTION_NOTIFY_COMPLETED, envd_on_completed, NULL,
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)ENVD_CONNECTION_MEMORY,
                              MHD_OPTION_END);
  if (!g_daemon)
    DIE("cannot start the daemon");
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned connections(void)
{
  const union MHD_DaemonInfo *i =
      MHD_get_daemon_info(g_daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
  return i ? i->num_connections : 0;
}

void jail_exchange(const struct jail_buf *req, struct jail_buf *ans)
{
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
    DIE("socketpair: %s", strerror(errno));
  size_t off = 0;
  int wdone = 0, eof = 0;
  ssize_t w;
  /* Usually the whole request fits the socket buffer: the daemon then reads it in one piece,
   * which keeps runs of one input alike. */
  while (off < req->n && (w = send(sv[0], req->p + off, req->n - off, MSG_NOSIGNAL)) > 0)
    off += (size_t)w;
  struct sockaddr_in peer = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (MHD_add_connection(g_daemon, sv[1], (struct sockaddr *)&peer, sizeof peer) != MHD_YES)
    DIE("MHD_add_connection: %s", strerror(errno));
  double deadline = now_s() + 8;
  for (unsigned turns = 0;; turns++) {
    jail_enter();
    MHD_run(g_daemon);
    jail_leave();
    while (!wdone && off < req->n) {
      w = send(sv[0], req->p + off, req->n - off, MSG_NOSIGNAL);
      if (w <= 0) {
        wdone = w < 0 && errno != EAGAIN; /* the daemon answered early and closed */
        break;
      }
      off += (size_t)w;
    }
    char tmp[4096];
    ssize_t r = -1;
    while (!eof && (r = recv(sv[0], tmp, sizeof tmp, 0)) > 0)
      jail_put(ans, tmp, (size_t)r);
    eof |= r == 0 || (r < 0 && errno != EAGAIN);
    if (eof && connections() == 0)
      break;
    if (turns > 1000 && now_s() > deadline)
      DIE("no complete exchange within 8 s (%zu bytes of answer: '%.300s')", ans->n,
          ans->p ? ans->p : "");
  }
  close(sv[0]);
}
