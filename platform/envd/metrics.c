/*
 * metrics.c: GET /metrics of envd (behind the access token).
 * Shape:   200 {"ts":<unix s>,"cpu_count":N,"cpu_used_pct":<float, 2 decimals>,"mem_total":B,
 *          "mem_used":B,"mem_cache":B,"mem_total_mib":M,"mem_used_mib":M,"disk_used":B,
 *          "disk_total":B}; memory and disk in bytes, the _mib fields (deprecated) in MiB.
 * Sources: cpu from /proc/stat, busy share of the jiffies since the previous call (the first call
 *          takes two samples 100 ms apart); mem from /proc/meminfo (used = MemTotal -
 *          MemAvailable, cache = Cached); disk from statvfs("/") (used = blocks - free).
 *          In an `abxlua serve` sandbox, whose own cgroups are mounted at /sys/fs/cgroup/{memory,
 *          cpu,cpuacct} (docs/PLATFORM.md "A sandbox's CPU and memory"), the sandbox's figures
 *          instead, as E2B's envd reports its VM's: cpu_count = ceil(cfs_quota / cfs_period), busy =
 *          cpuacct.usage over that many CPUs; mem_total = memory.limit_in_bytes (when below
 *          MemTotal), used = usage_in_bytes - total_inactive_file, cache = memory.stat cache.
 * Shared:  envd_metrics_read is also execd's GET /metrics and /metrics/watch (execd_metrics.c).
 * Source:  docs/protocol/envd-protocol.md §7 (/metrics).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/envd_int.h"
#include "envd/process.h" /* envd_now_ns: envd's one clock */

#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define CG "/sys/fs/cgroup/"

/* The first unsigned integer in file `path` into *v. 0, or -1 when unreadable. */
static int read_ull(const char *path, unsigned long long *v)
{
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  int n = fscanf(f, "%llu", v);
  fclose(f);
  return n == 1 ? 0 : -1;
}

/* The sandbox's CPU count from its CFS quota, or 0 when it has none (or no cgroup view). */
static long cgroup_cpus(void)
{
  long long quota = 0;
  unsigned long long period = 0;
  FILE *f = fopen(CG "cpu/cpu.cfs_quota_us", "re");
  if (!f)
    return 0;
  int n = fscanf(f, "%lld", &quota);
  fclose(f);
  if (n != 1 || quota <= 0 || read_ull(CG "cpu/cpu.cfs_period_us", &period) != 0 || period == 0)
    return 0;
  return (long)(((unsigned long long)quota + period - 1) / period);
}

/* Total and idle CPU time since some fixed point. With the sandbox's cgroups (ncpu > 0 from its
 * quota): ns of monotonic time times ncpu, and that minus cpuacct.usage; else the aggregate "cpu"
 * line of /proc/stat: total and idle (idle + iowait) jiffies. 0 or -1. */
static int cpu_sample(long cg_cpus, unsigned long long *total, unsigned long long *idle)
{
  unsigned long long used = 0;
  if (cg_cpus > 0 && read_ull(CG "cpuacct/cpuacct.usage", &used) == 0) {
    *total = (unsigned long long)envd_now_ns() * (unsigned long long)cg_cpus;
    *idle = *total > used ? *total - used : 0;
    return 0;
  }
  FILE *f = fopen("/proc/stat", "re");
  if (!f)
    return -1;
  unsigned long long v[10] = {0};
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                 &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
  fclose(f);
  if (n < 4)
    return -1;
  /* guest and guest_nice (8, 9) are already counted in user and nice */
  *total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
  *idle = v[3] + v[4];
  return 0;
}

/* kB value of a /proc/meminfo key, in bytes (0 when missing). */
static unsigned long long meminfo(const char *text, const char *key)
{
  size_t kl = strlen(key);
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    unsigned long long kb = 0;
    if (strncmp(p, key, kl) == 0 && p[kl] == ':' && sscanf(p + kl + 1, "%llu", &kb) == 1)
      return kb * 1024ULL;
  }
  return 0;
}

/* The CPU busy share in percent (2 decimals) since the sample in *prev (0: none yet, then two
 * samples 100 ms apart), which is moved on to now. */
static double cpu_pct(long cg_cpus, struct envd_cpu_prev *prev)
{
  unsigned long long tot = 0, idle = 0;
  if (prev->total == 0) {
    cpu_sample(cg_cpus, &prev->total, &prev->idle);
    usleep(100 * 1000);
  }
  double pct = 0;
  if (cpu_sample(cg_cpus, &tot, &idle) != 0)
    return 0;
  if (tot > prev->total) {
    unsigned long long dt = tot - prev->total, di = idle >= prev->idle ? idle - prev->idle : 0;
    pct = di >= dt ? 0 : 100.0 * (double)(dt - di) / (double)dt;
    pct = (double)(long long)(pct * 100.0 + 0.5) / 100.0;
  }
  prev->total = tot;
  prev->idle = idle;
  return pct;
}

/* Memory total, used and cache in bytes: /proc/meminfo, or the sandbox's memory cgroup. */
static void mem_sample(struct envd_metrics_sample *m)
{
  char text[8192] = "";
  FILE *f = fopen("/proc/meminfo", "re");
  if (f) {
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
  }
  unsigned long long mtotal = meminfo(text, "MemTotal"), avail = meminfo(text, "MemAvailable");
  unsigned long long cached = meminfo(text, "Cached");
  if (!avail)
    avail = meminfo(text, "MemFree") + cached + meminfo(text, "Buffers");
  unsigned long long mused = mtotal > avail ? mtotal - avail : 0;
  unsigned long long limit = 0, usage = 0;
  if (read_ull(CG "memory/memory.limit_in_bytes", &limit) == 0 && limit < mtotal &&
      read_ull(CG "memory/memory.usage_in_bytes", &usage) == 0) {
    unsigned long long inactive = 0, cache = 0, v = 0;
    char key[64];
    FILE *st = fopen(CG "memory/memory.stat", "re");
    while (st && fscanf(st, "%63s %llu", key, &v) == 2) {
      if (strcmp(key, "total_inactive_file") == 0)
        inactive = v;
      else if (strcmp(key, "cache") == 0)
        cache = v;
    }
    if (st)
      fclose(st);
    mtotal = limit;
    mused = usage > inactive ? usage - inactive : 0;
    cached = cache;
  }
  m->mem_total = mtotal;
  m->mem_used = mused;
  m->mem_cache = cached;
}

void envd_metrics_read(struct envd *e, struct envd_cpu_prev *prev, struct envd_metrics_sample *m)
{
  memset(m, 0, sizeof *m);
  long cg_cpus = cgroup_cpus();
  if (prev)
    m->cpu_used_pct = cpu_pct(cg_cpus, prev);
  else {
    pthread_mutex_lock(&e->mu);
    struct envd_cpu_prev shared = e->cpu_prev;
    pthread_mutex_unlock(&e->mu);
    m->cpu_used_pct = cpu_pct(cg_cpus, &shared);
    pthread_mutex_lock(&e->mu);
    e->cpu_prev = shared;
    pthread_mutex_unlock(&e->mu);
  }
  mem_sample(m);
  struct statvfs sv;
  if (statvfs("/", &sv) == 0) {
    m->disk_total = (unsigned long long)sv.f_blocks * sv.f_frsize;
    m->disk_used = (unsigned long long)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
  }
  long ncpu = cg_cpus > 0 ? cg_cpus : sysconf(_SC_NPROCESSORS_ONLN);
  m->cpu_count = ncpu > 0 ? ncpu : 1;
}

enum MHD_Result envd_metrics(struct envd *e, struct MHD_Connection *c)
{
  struct envd_metrics_sample m;
  envd_metrics_read(e, NULL, &m);
  json_t *j = json_pack(
      "{s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "ts", (json_int_t)time(NULL), "cpu_count",
      (json_int_t)m.cpu_count, "cpu_used_pct", m.cpu_used_pct, "mem_total", (json_int_t)m.mem_total,
      "mem_used", (json_int_t)m.mem_used, "mem_cache", (json_int_t)m.mem_cache, "mem_total_mib",
      (json_int_t)(m.mem_total >> 20), "mem_used_mib", (json_int_t)(m.mem_used >> 20), "disk_used",
      (json_int_t)m.disk_used, "disk_total", (json_int_t)m.disk_total);
  if (!j)
    return envd_send_rest_err(c, 500, "out of memory");
  enum MHD_Result ok = envd_send_json(c, 200, j);
  json_decref(j);
  return ok;
}
