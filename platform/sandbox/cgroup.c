/*
 * cgroup.c: per-sandbox cgroup v1 freezer, memory, cpuacct and cpu groups. Contract in cgroup.h.
 */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

enum { H_FREEZER, H_MEMORY, H_CPUACCT, H_CPU };
static const char *const names[ABX_CGROUP_MAX] = {"freezer", "memory", "cpuacct", "cpu"};
static char g_base[ABX_CGROUP_MAX][600]; /* .../abxlua/serve.<pid>, "" when unusable */
static char g_abx[ABX_CGROUP_MAX][512];  /* .../abxlua */

/* serve's own cgroup path in hierarchy `h` from /proc/self/cgroup ("/" when not found). */
static void own_path(const char *h, char *out, size_t n)
{
  snprintf(out, n, "/");
  FILE *f = fopen("/proc/self/cgroup", "re");
  if (!f)
    return;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    *c2 = 0;
    char *ctl = c1 + 1, *path = c2 + 1;
    path[strcspn(path, "\n")] = 0;
    char *save = NULL;
    for (char *tok = strtok_r(ctl, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
      if (strcmp(tok, h) == 0) {
        snprintf(out, n, "%s", path);
        fclose(f);
        return;
      }
  }
  fclose(f);
}

int abx_cgroup_init(void)
{
  int ok = 0;
  for (int h = 0; h < ABX_CGROUP_MAX; h++) {
    char root[64], own[256];
    g_base[h][0] = g_abx[h][0] = 0;
    snprintf(root, sizeof root, "/sys/fs/cgroup/%s/cgroup.procs", names[h]);
    if (access(root, W_OK) != 0)
      continue;
    own_path(names[h], own, sizeof own);
    if (strcmp(own, "/") == 0)
      own[0] = 0;
    snprintf(g_abx[h], sizeof g_abx[h], "/sys/fs/cgroup/%s%s/abxlua", names[h], own);
    snprintf(g_base[h], sizeof g_base[h], "%.500s/serve.%d", g_abx[h], (int)getpid());
    if ((mkdir(g_abx[h], 0755) != 0 && errno != EEXIST) ||
        (mkdir(g_base[h], 0755) != 0 && errno != EEXIST)) {
      g_base[h][0] = 0;
      continue;
    }
    ok++;
  }
  if (!g_base[H_MEMORY][0] || !g_base[H_CPU][0])
    abx_slog("warning: no usable cgroup v1 %s hierarchy: sandbox %s limits "
             "are reported but not enforced",
             g_base[H_MEMORY][0] ? "cpu" : "memory", g_base[H_MEMORY][0] ? "CPU" : "memory");
  return ok;
}

int abx_cgroup_can_freeze(void)
{
  return g_base[H_FREEZER][0] != 0;
}

static int write_str(const char *path, const char *s)
{
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t n = strlen(s);
  int ok = write(fd, s, n) == (ssize_t)n;
  close(fd);
  return ok ? 0 : -1;
}

static uint64_t read_u64(const char *path);

static void file_of(int h, const char *id, const char *file, char *out, size_t n)
{
  snprintf(out, n, "%.590s/%.40s%s%.40s", g_base[h], id, file ? "/" : "", file ? file : "");
}

int abx_cgroup_create(const char *id, char *procs[ABX_CGROUP_MAX + 1])
{
  int k = 0;
  for (int h = 0; h < ABX_CGROUP_MAX; h++) {
    if (!g_base[h][0])
      continue;
    char dir[1024];
    file_of(h, id, NULL, dir, sizeof dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
      goto fail;
    if (asprintf(&procs[k], "%s/cgroup.procs", dir) < 0)
      goto fail;
    k++;
  }
  procs[k] = NULL;
  return 0;
fail:
  for (int i = 0; i < k; i++)
    free(procs[i]);
  procs[0] = NULL;
  abx_cgroup_remove(id);
  return -1;
}

int abx_cgroup_can_limit(int *memory, int *cpu)
{
  *memory = g_base[H_MEMORY][0] != 0;
  *cpu = g_base[H_CPU][0] != 0;
  return *memory && *cpu;
}

int abx_cgroup_dir(const char *hierarchy, const char *id, char *out, size_t n)
{
  for (int h = 0; h < ABX_CGROUP_MAX; h++)
    if (strcmp(names[h], hierarchy) == 0 && g_base[h][0]) {
      file_of(h, id, NULL, out, n);
      return 0;
    }
  return -1;
}

/* Write `value` to the sandbox's `file` in hierarchy h; on failure a message naming it in err. */
static int set_value(int h, const char *id, const char *file, unsigned long long value, char *err,
                     size_t errlen)
{
  char p[1024], v[32];
  file_of(h, id, file, p, sizeof p);
  snprintf(v, sizeof v, "%llu", value);
  if (write_str(p, v) == 0)
    return 0;
  snprintf(err, errlen, "cannot set %s to %s: %s", file, v, strerror(errno));
  return -1;
}

/* ---- CPU weights (Weights in cgroup.h) ---------------------------------------------------- */

enum { SHARES_PER_CPU = 1024, SHARES_MIN = 2, SHARES_MAX = 262144 }; /* kernel's default, bounds */
static pthread_mutex_t g_weight_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t clamp_shares(uint64_t v)
{
  return v < SHARES_MIN ? SHARES_MIN : v > SHARES_MAX ? SHARES_MAX : v;
}

/* Sum of cpu.shares of the child groups of `dir` whose names start with `prefix`. */
static uint64_t child_shares(const char *dir, const char *prefix)
{
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  uint64_t sum = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || e->d_type != DT_DIR ||
        strncmp(e->d_name, prefix, strlen(prefix)) != 0)
      continue;
    char p[1200];
    snprintf(p, sizeof p, "%.900s/%.200s/cpu.shares", dir, e->d_name);
    sum += read_u64(p);
  }
  closedir(d);
  return sum;
}

static void write_shares(const char *dir, uint64_t shares)
{
  char p[1024], v[32];
  snprintf(p, sizeof p, "%.1000s/cpu.shares", dir);
  snprintf(v, sizeof v, "%llu", (unsigned long long)clamp_shares(shares));
  write_str(p, v);
}

/* The most a group of sandboxes weighs: the machine's online CPUs, SHARES_PER_CPU each. */
static uint64_t group_cap(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return SHARES_PER_CPU * (uint64_t)(n > 0 ? n : 1);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
  return a < b ? a : b;
}

/* Sets serve.<pid>'s weight to the sum of its sandboxes' and abxlua's to the sum of the serves',
 * each at most group_cap() (an flock on the abxlua group orders this against other serves'
 * rebalancing). Best effort: a weight that cannot be written leaves the kernel's default. */
static void rebalance_weights(void)
{
  if (!g_abx[H_CPU][0])
    return;
  pthread_mutex_lock(&g_weight_lock);
  int fd = open(g_abx[H_CPU], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0)
    flock(fd, LOCK_EX);
  uint64_t cap = group_cap();
  if (g_base[H_CPU][0] && access(g_base[H_CPU], F_OK) == 0)
    write_shares(g_base[H_CPU], min_u64(child_shares(g_base[H_CPU], ""), cap));
  write_shares(g_abx[H_CPU], min_u64(child_shares(g_abx[H_CPU], "serve."), cap));
  if (fd >= 0)
    close(fd); /* releases the flock */
  pthread_mutex_unlock(&g_weight_lock);
}

/* The sandbox's own weight: `millis` thousandths of a CPU, SHARES_PER_CPU per whole CPU. */
static int set_weight(const char *id, uint64_t millis, char *err, size_t errlen)
{
  char p[1024], v[32];
  file_of(H_CPU, id, "cpu.shares", p, sizeof p);
  snprintf(v, sizeof v, "%llu", (unsigned long long)clamp_shares(millis * SHARES_PER_CPU / 1000));
  if (write_str(p, v) != 0) {
    snprintf(err, errlen, "cannot set cpu.shares to %s: %s", v, strerror(errno));
    return -1;
  }
  rebalance_weights();
  return 0;
}

int abx_cgroup_set_limits(const char *id, int cpu_count, int memory_mb, char *err, size_t errlen)
{
  if (cpu_count < 1 || memory_mb < 1) {
    snprintf(err, errlen, "invalid limits: %d CPUs, %d MiB", cpu_count, memory_mb);
    return -1;
  }
  if (g_base[H_MEMORY][0]) {
    unsigned long long bytes = (unsigned long long)memory_mb << 20;
    char p[1024];
    if (set_value(H_MEMORY, id, "memory.limit_in_bytes", bytes, err, errlen) != 0)
      return -1;
    /* memory + swap: without it a host with swap lets the sandbox page out past its limit.
     * Written after memory.limit_in_bytes, which must never exceed it. Absent when the kernel
     * accounts no swap (swapaccount=0): then there is nothing to hide the limit behind. */
    file_of(H_MEMORY, id, "memory.memsw.limit_in_bytes", p, sizeof p);
    if (access(p, F_OK) == 0 &&
        set_value(H_MEMORY, id, "memory.memsw.limit_in_bytes", bytes, err, errlen) != 0)
      return -1;
  }
  if (g_base[H_CPU][0]) {
    char p[1024];
    file_of(H_CPU, id, "cpu.cfs_period_us", p, sizeof p);
    uint64_t period = read_u64(p);
    if (period == 0) {
      period = 100000; /* the kernel's default period, 100 ms */
      if (set_value(H_CPU, id, "cpu.cfs_period_us", period, err, errlen) != 0)
        return -1;
    }
    if (set_value(H_CPU, id, "cpu.cfs_quota_us", period * (uint64_t)cpu_count, err, errlen) != 0 ||
        set_weight(id, 1000 * (uint64_t)cpu_count, err, errlen) != 0)
      return -1;
  }
  return 0;
}

int abx_cgroup_set_cpu_millis(const char *id, int millis, char *err, size_t errlen)
{
  if (!g_base[H_CPU][0])
    return 0;
  char p[1024];
  file_of(H_CPU, id, "cpu.cfs_period_us", p, sizeof p);
  uint64_t period = read_u64(p);
  uint64_t quota = (period ? period : 100000) * (uint64_t)(millis > 0 ? millis : 1) / 1000;
  if (quota < 1000) {
    snprintf(err, errlen,
             "a CPU limit of %dm is below the kernel's minimum quota (1 ms per "
             "%llu us period)",
             millis, (unsigned long long)period);
    return -1;
  }
  if (set_value(H_CPU, id, "cpu.cfs_quota_us", quota, err, errlen) != 0)
    return -1;
  return set_weight(id, (uint64_t)(millis > 0 ? millis : 1), err, errlen);
}

int abx_cgroup_set_weight(const char *id, int millis, char *err, size_t errlen)
{
  if (!g_abx[H_CPU][0])
    return 0;
  return set_weight(id, (uint64_t)(millis > 0 ? millis : 1), err, errlen);
}

int abx_cgroup_freeze(const char *id, int64_t deadline_mono)
{
  if (!abx_cgroup_can_freeze())
    return -1;
  char p[1024], st[64];
  file_of(H_FREEZER, id, "freezer.state", p, sizeof p);
  if (write_str(p, "FROZEN") != 0)
    return -1;
  for (;;) {
    if (abx_read_small(p, st, sizeof st) >= 0 && strncmp(st, "FROZEN", 6) == 0)
      return 0;
    if (abx_mono_ns() >= deadline_mono)
      break;
    write_str(p, "FROZEN"); /* v1: a FREEZING group retries on each write */
    struct timespec ts = {0, 2 * 1000000L};
    nanosleep(&ts, NULL);
  }
  write_str(p, "THAWED");
  errno = ETIMEDOUT;
  return -1;
}

int abx_cgroup_thaw(const char *id)
{
  if (!abx_cgroup_can_freeze())
    return -1;
  char p[1024];
  file_of(H_FREEZER, id, "freezer.state", p, sizeof p);
  return write_str(p, "THAWED");
}

void abx_cgroup_kill_all(const char *id)
{
  if (!abx_cgroup_can_freeze())
    return;
  char p[1024];
  file_of(H_FREEZER, id, "cgroup.procs", p, sizeof p);
  FILE *f = fopen(p, "re");
  if (f) {
    long pid;
    while (fscanf(f, "%ld", &pid) == 1)
      if (pid > 1)
        kill((pid_t)pid, SIGKILL);
    fclose(f);
  }
  abx_cgroup_thaw(id);
}

static uint64_t read_u64(const char *path)
{
  char buf[64];
  if (abx_read_small(path, buf, sizeof buf) < 0)
    return 0;
  return strtoull(buf, NULL, 10);
}

int abx_cgroup_stats(const char *id, struct abx_cgroup_stats *st)
{
  memset(st, 0, sizeof *st);
  char p[1024];
  int got = 0;
  if (g_base[H_CPUACCT][0]) {
    file_of(H_CPUACCT, id, "cpuacct.usage", p, sizeof p);
    st->cpu_ns = read_u64(p);
    got++;
  }
  if (g_base[H_MEMORY][0]) {
    file_of(H_MEMORY, id, "memory.usage_in_bytes", p, sizeof p);
    st->mem_used = read_u64(p);
    file_of(H_MEMORY, id, "memory.limit_in_bytes", p, sizeof p);
    st->mem_limit = read_u64(p);
    file_of(H_MEMORY, id, "memory.stat", p, sizeof p);
    FILE *f = fopen(p, "re");
    if (f) {
      char key[64];
      unsigned long long v;
      while (fscanf(f, "%63s %llu", key, &v) == 2)
        if (strcmp(key, "cache") == 0)
          st->mem_cache = v;
      fclose(f);
    }
    got++;
  }
  return got ? 0 : -1;
}

void abx_cgroup_remove(const char *id)
{
  for (int h = 0; h < ABX_CGROUP_MAX; h++) {
    if (!g_base[h][0])
      continue;
    char dir[1024];
    file_of(h, id, NULL, dir, sizeof dir);
    if (h == H_FREEZER)
      abx_cgroup_thaw(id);
    int64_t deadline = abx_mono_ns() + 2000000000LL;
    while (rmdir(dir) != 0 && errno == EBUSY && abx_mono_ns() < deadline) {
      struct timespec ts = {0, 5 * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  rebalance_weights();
}

void abx_cgroup_shutdown(void)
{
  for (int h = 0; h < ABX_CGROUP_MAX; h++)
    if (g_base[h][0])
      rmdir(g_base[h]);
  rebalance_weights(); /* the serves still running share abxlua's weight without ours */
  for (int h = 0; h < ABX_CGROUP_MAX; h++)
    if (g_abx[h][0])
      rmdir(g_abx[h]); /* fails while another serve uses it: fine */
}

/* ---- crash recovery ----------------------------------------------------------------------- */

int abx_cgroup_list_serves(pid_t *out, int max)
{
  int n = 0;
  for (int h = 0; h < ABX_CGROUP_MAX; h++) {
    if (!g_abx[h][0])
      continue;
    DIR *d = opendir(g_abx[h]);
    if (!d)
      continue;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
      char *end = NULL;
      if (strncmp(e->d_name, "serve.", 6) != 0)
        continue;
      long pid = strtol(e->d_name + 6, &end, 10);
      if (end == e->d_name + 6 || *end || pid <= 0 || pid == (long)getpid())
        continue;
      int dup = 0;
      for (int i = 0; i < n; i++)
        dup |= out[i] == (pid_t)pid;
      if (!dup)
        out[n++] = (pid_t)pid;
    }
    closedir(d);
  }
  return n;
}

/* Calls fn(dir of one sandbox group) for every sandbox group of serve.<pid> in hierarchy h. */
static int each_group(int h, pid_t pid, int (*fn)(int h, const char *dir))
{
  char base[700];
  snprintf(base, sizeof base, "%.512s/serve.%d", g_abx[h], (int)pid);
  DIR *d = opendir(base);
  if (!d)
    return 0;
  int total = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || e->d_type != DT_DIR)
      continue;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%.200s", base, e->d_name);
    total += fn(h, dir);
  }
  closedir(d);
  return total;
}

static int kill_group(int h, const char *dir)
{
  char p[1100];
  int n = 0;
  snprintf(p, sizeof p, "%s/cgroup.procs", dir);
  FILE *f = fopen(p, "re");
  if (f) {
    long pid;
    while (fscanf(f, "%ld", &pid) == 1)
      if (pid > 1 && kill((pid_t)pid, SIGKILL) == 0 && (h == H_FREEZER || !g_abx[H_FREEZER][0]))
        n++; /* counted once: every hierarchy lists the same processes */
    fclose(f);
  }
  if (h == H_FREEZER) {
    snprintf(p, sizeof p, "%s/freezer.state", dir);
    write_str(p, "THAWED");
  }
  return n;
}

static int rmdir_group(int h, const char *dir)
{
  (void)h;
  int64_t deadline = abx_mono_ns() + 2000000000LL;
  while (rmdir(dir) != 0) {
    if (errno != EBUSY || abx_mono_ns() >= deadline)
      return 0;
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return 1;
}

int abx_cgroup_kill_serve(pid_t pid)
{
  int n = 0;
  for (int h = 0; h < ABX_CGROUP_MAX; h++)
    if (g_abx[h][0])
      n += each_group(h, pid, kill_group);
  return n;
}

int abx_cgroup_remove_serve(pid_t pid)
{
  int n = 0;
  for (int h = 0; h < ABX_CGROUP_MAX; h++) {
    if (!g_abx[h][0])
      continue;
    n += each_group(h, pid, rmdir_group);
    char base[700];
    snprintf(base, sizeof base, "%.512s/serve.%d", g_abx[h], (int)pid);
    n += rmdir(base) == 0;
  }
  rebalance_weights();
  return n;
}
