/*
 * recover.c: removing what crashed predecessors of `abxlua serve` left. Contract in recover.h.
 */
#include "recover.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "util/util.h"
#include "sandbox.h"

#define MAX_STALE 256

/* Start time (field 22 of /proc/<pid>/stat) and state letter; -1 when the process is gone. */
static int proc_start(pid_t pid, unsigned long long *start, char *state)
{
  char p[64], buf[1024];
  snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
  if (abx_read_small(p, buf, sizeof buf) <= 0)
    return -1;
  char *rp = strrchr(buf, ')');
  if (!rp || !rp[1])
    return -1;
  *state = rp[2];
  char *s = rp + 2;
  for (int field = 3; field < 22 && s; field++) { /* s is at field 3 (state) */
    s = strchr(s, ' ');
    if (s)
      s++;
  }
  if (!s)
    return -1;
  *start = strtoull(s, NULL, 10);
  return 0;
}

/* 1 when /proc/<pid> is an `abxlua serve` process (argv[1] "serve", argv[0] or exe abxlua*). */
static int is_serve_cmd(pid_t pid)
{
  char p[64], buf[512];
  snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
  ssize_t k = abx_read_small(p, buf, sizeof buf);
  if (k <= 0)
    return 0;
  size_t a0 = strlen(buf);
  if ((ssize_t)a0 + 1 >= k || strcmp(buf + a0 + 1, "serve") != 0)
    return 0;
  const char *b0 = strrchr(buf, '/');
  if (strncmp(b0 ? b0 + 1 : buf, "abxlua", 6) == 0)
    return 1;
  char exe[4096];
  snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
  ssize_t e = readlink(p, exe, sizeof exe - 1);
  if (e <= 0)
    return 0;
  exe[e] = 0;
  const char *be = strrchr(exe, '/');
  return strncmp(be ? be + 1 : exe, "abxlua", 6) == 0;
}

/* 1 when pid is a live serve (owner_start: the start time recorded in its state dir, 0 unknown). */
static int serve_alive(pid_t pid, unsigned long long owner_start)
{
  unsigned long long start;
  char state;
  if (pid == getpid())
    return 0; /* a dir named after our pid, made before we started: a predecessor's */
  if (proc_start(pid, &start, &state) != 0 || state == 'Z' || state == 'X')
    return 0;
  if (owner_start)
    return start == owner_start;
  return is_serve_cmd(pid);
}

static unsigned long long owner_start_of(const char *dir)
{
  char p[4200], buf[128];
  snprintf(p, sizeof p, "%s/owner", dir);
  if (abx_read_small(p, buf, sizeof buf) <= 0)
    return 0;
  unsigned long long pid = 0, start = 0;
  if (sscanf(buf, "%llu %llu", &pid, &start) != 2)
    return 0;
  return start;
}

int abx_recover_claim(const char *state_dir)
{
  unsigned long long start;
  char state;
  if (proc_start(getpid(), &start, &state) != 0)
    return -1;
  char p[4200], buf[64];
  snprintf(p, sizeof p, "%s/owner", state_dir);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  int n = snprintf(buf, sizeof buf, "%d %llu\n", (int)getpid(), start);
  int ok = write(fd, buf, (size_t)n) == n;
  close(fd);
  return ok ? 0 : -1;
}

/* 1 when `path` is `dir` or inside it. */
static int under(const char *path, const char *dir)
{
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == 0);
}

/* SIGKILL every process whose root directory is inside `dir`. Returns how many. */
static int kill_rooted(const char *dir)
{
  DIR *d = opendir("/proc");
  if (!d)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!isdigit((unsigned char)e->d_name[0]))
      continue;
    pid_t pid = (pid_t)atoi(e->d_name);
    if (pid <= 1 || pid == getpid())
      continue;
    char p[64], root[4200];
    snprintf(p, sizeof p, "/proc/%d/root", (int)pid);
    ssize_t k = readlink(p, root, sizeof root - 1);
    if (k <= 0)
      continue;
    root[k] = 0;
    if (under(root, dir) && kill(pid, SIGKILL) == 0)
      n++;
  }
  closedir(d);
  return n;
}

/* Decode mountinfo's octal escapes (\040 etc.) in place. */
static void unescape(char *s)
{
  char *o = s;
  for (char *i = s; *i; i++) {
    if (i[0] == '\\' && i[1] >= '0' && i[1] <= '3' && i[2] >= '0' && i[2] <= '7' && i[3] >= '0' &&
        i[3] <= '7') {
      *o++ = (char)((i[1] - '0') * 64 + (i[2] - '0') * 8 + (i[3] - '0'));
      i += 3;
    } else {
      *o++ = *i;
    }
  }
  *o = 0;
}

static int by_length_desc(const void *a, const void *b)
{
  size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
  return la < lb ? 1 : la > lb ? -1 : 0;
}

/* Lazily unmount every mount point inside `dir` (deepest first). Returns how many. */
static int umount_under(const char *dir)
{
  int total = 0;
  for (int pass = 0; pass < 4; pass++) {
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
      return total;
    char **pts = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t llen = 0;
    while (getline(&line, &llen, f) > 0) {
      char *save = NULL, *tok = strtok_r(line, " ", &save);
      for (int i = 1; i < 5 && tok; i++)
        tok = strtok_r(NULL, " ", &save);
      if (!tok)
        continue;
      unescape(tok);
      if (!under(tok, dir))
        continue;
      if (n == cap) {
        cap = cap ? cap * 2 : 16;
        char **np = realloc(pts, cap * sizeof *np);
        if (!np)
          break;
        pts = np;
      }
      pts[n] = strdup(tok);
      if (pts[n])
        n++;
    }
    free(line);
    fclose(f);
    if (n == 0) {
      free(pts);
      break;
    }
    qsort(pts, n, sizeof *pts, by_length_desc);
    int done = 0;
    for (size_t i = 0; i < n; i++) {
      if (umount2(pts[i], MNT_DETACH) == 0)
        done++;
      free(pts[i]);
    }
    free(pts);
    total += done;
    if (!done)
      break;
  }
  return total;
}

struct stale {
  pid_t pid;
  char dir[4096]; /* state dir, "" when only cgroups were found */
};

static void add_stale(struct stale *s, int *n, pid_t pid, const char *dir)
{
  for (int i = 0; i < *n; i++)
    if (s[i].pid == pid) {
      if (dir && !s[i].dir[0])
        snprintf(s[i].dir, sizeof s[i].dir, "%s", dir);
      return;
    }
  if (*n >= MAX_STALE)
    return;
  s[*n].pid = pid;
  snprintf(s[*n].dir, sizeof s[*n].dir, "%s", dir ? dir : "");
  (*n)++;
}

static void scan_tmp(const char *tmp, struct stale *s, int *n)
{
  DIR *d = opendir(tmp);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "abxlua-serve.", 13) != 0)
      continue;
    char *end = NULL;
    long pid = strtol(e->d_name + 13, &end, 10);
    if (end == e->d_name + 13 || *end || pid <= 0 || pid > 4194304)
      continue;
    char dir[4096];
    snprintf(dir, sizeof dir, "%.3000s/%s", tmp, e->d_name);
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
      continue;
    if (serve_alive((pid_t)pid, owner_start_of(dir)))
      continue;
    add_stale(s, n, (pid_t)pid, dir);
  }
  closedir(d);
}

int abx_recover_stale(void)
{
  struct stale *s = calloc(MAX_STALE, sizeof *s);
  if (!s)
    return 0;
  int n = 0;
  const char *tmp = getenv("TMPDIR");
  char tmpdir[3000];
  snprintf(tmpdir, sizeof tmpdir, "%s", tmp && *tmp ? tmp : "/tmp");
  size_t tl = strlen(tmpdir);
  while (tl > 1 && tmpdir[tl - 1] == '/')
    tmpdir[--tl] = 0;
  scan_tmp(tmpdir, s, &n);
  if (strcmp(tmpdir, "/tmp") != 0)
    scan_tmp("/tmp", s, &n);
  pid_t cg[MAX_STALE];
  int ncg = abx_cgroup_list_serves(cg, MAX_STALE);
  for (int i = 0; i < ncg; i++) {
    int known = 0;
    for (int j = 0; j < n; j++)
      known |= s[j].pid == cg[i];
    if (!known && !serve_alive(cg[i], 0))
      add_stale(s, &n, cg[i], NULL);
  }
  for (int i = 0; i < n; i++) {
    int killed = abx_cgroup_kill_serve(s[i].pid);
    int rooted = 0, mounts = 0, removed = 0;
    if (s[i].dir[0]) {
      rooted = kill_rooted(s[i].dir);
      if (killed + rooted > 0) { /* let them exit before their mounts go */
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
      }
      mounts = umount_under(s[i].dir);
      removed = abx_rmtree(s[i].dir) == 0;
    }
    int groups = s[i].pid == getpid() ? 0 : abx_cgroup_remove_serve(s[i].pid);
    abx_slog("recovered crashed serve %d: killed %d process(es), unmounted %d "
             "mount(s), removed %d cgroup dir(s)%s%s%s",
             (int)s[i].pid, killed + rooted, mounts, groups,
             s[i].dir[0] ? (removed ? ", removed state dir " : ", could not remove state dir ")
                         : "",
             s[i].dir, "");
  }
  free(s);
  return n;
}
