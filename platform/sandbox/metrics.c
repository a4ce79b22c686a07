/*
 * metrics.c: per-sandbox rings of metric samples. Contract in metrics.h.
 */
#include "metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "cgroup.h"
#include "sandbox.h"
#include "util/util.h"
#include "template/template.h"

struct sample {
  int64_t ts_ns; /* CLOCK_REALTIME */
  double cpu_pct;
  int cpu_count;
  uint64_t mem_used, mem_total, mem_cache, disk_used, disk_total;
};

struct ring {
  char id[32];
  struct sample s[ABX_METRICS_RING];
  size_t head, n;        /* s[head] is the oldest of n */
  uint64_t cpu_prev_ns;  /* cgroup CPU time at the previous sample (or the (re)start: 0) */
  int64_t cpu_prev_mono; /* when it was read */
  int64_t last_mono;     /* the last sample, 0 before the first */
  struct ring *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct ring *g_rings;

static struct ring *find_locked(const char *id)
{
  for (struct ring *r = g_rings; r; r = r->next)
    if (strcmp(r->id, id) == 0)
      return r;
  return NULL;
}

void abx_metrics_begin(const char *id)
{
  pthread_mutex_lock(&mu);
  struct ring *r = find_locked(id);
  if (!r && (r = calloc(1, sizeof *r)) != NULL) {
    snprintf(r->id, sizeof r->id, "%s", id);
    r->next = g_rings;
    g_rings = r;
  }
  if (r) {
    r->cpu_prev_ns = 0;
    r->cpu_prev_mono = abx_mono_ns();
  }
  pthread_mutex_unlock(&mu);
}

void abx_metrics_sample(struct abx_sandbox *sb)
{
  struct abx_cgroup_stats st;
  abx_cgroup_stats(sb->id, &st);
  uint64_t disk = sb->dir ? abx_rootfs_disk_used(sb->dir) : 0;
  struct statvfs v;
  uint64_t disk_total = statvfs("/", &v) == 0 ? (uint64_t)v.f_blocks * v.f_frsize : 0;
  int64_t mono = abx_mono_ns(), now = abx_now_ns();
  int cpus = sb->cpu_count > 0 ? sb->cpu_count : 1;
  pthread_mutex_lock(&mu);
  struct ring *r = find_locked(sb->id);
  if (r) {
    double pct = 0;
    uint64_t used = st.cpu_ns >= r->cpu_prev_ns ? st.cpu_ns - r->cpu_prev_ns : 0;
    if (mono > r->cpu_prev_mono)
      pct = 100.0 * (double)used / (double)(mono - r->cpu_prev_mono) / (double)cpus;
    if (pct > 100) /* the CFS quota allows a period's slack beyond cpu_count */
      pct = 100;
    r->cpu_prev_ns = st.cpu_ns;
    r->cpu_prev_mono = mono;
    r->last_mono = mono;
    size_t at = (r->head + r->n) % ABX_METRICS_RING;
    if (r->n == ABX_METRICS_RING)
      r->head = (r->head + 1) % ABX_METRICS_RING; /* the oldest goes */
    else
      r->n++;
    r->s[at] = (struct sample){
        now, pct, cpus, st.mem_used, (uint64_t)sb->memory_mb << 20, st.mem_cache, disk, disk_total};
  }
  pthread_mutex_unlock(&mu);
}

/* Under mu: 1 when `id` has a ring whose last sample is at least a period old at `mono`. */
static int due_locked(const char *id, int64_t mono)
{
  struct ring *r = find_locked(id);
  return r && mono - r->last_mono >= (int64_t)ABX_METRICS_PERIOD_S * 1000000000LL;
}

void abx_metrics_tick(void)
{
  /* At most TICK_MAX samples a tick (the main loop also serves the spawner); the due ones left
   * over stay due and come first at a later tick, 100 ms on, so none starves. Lock order: the
   * registry, then mu (nothing takes them the other way round). */
  enum { TICK_MAX = 32 };
  char ids[TICK_MAX][32];
  size_t n = 0;
  int64_t mono = abx_mono_ns();
  abx_registry_lock();
  pthread_mutex_lock(&mu);
  for (struct abx_sandbox *s = abx_registry_head(); s && n < TICK_MAX; s = s->next)
    if (s->listed && !s->paused && due_locked(s->id, mono))
      snprintf(ids[n++], sizeof ids[0], "%s", s->id);
  pthread_mutex_unlock(&mu);
  abx_registry_unlock();
  for (size_t i = 0; i < n; i++) {
    struct abx_sandbox *sb = abx_sandbox_get(ids[i]);
    if (!sb)
      continue;
    if (pthread_mutex_trylock(&sb->op) == 0) {
      abx_registry_lock();
      int ok = sb->listed && !sb->paused && sb->dir && sb->pid > 0;
      abx_registry_unlock();
      if (ok)
        abx_metrics_sample(sb);
      pthread_mutex_unlock(&sb->op);
    }
    abx_sandbox_put(sb);
  }
}

json_t *abx_metrics_json(const char *id, int64_t start_s, int64_t end_s)
{
  json_t *arr = json_array();
  pthread_mutex_lock(&mu);
  struct ring *r = find_locked(id);
  for (size_t i = 0; r && arr && i < r->n; i++) {
    const struct sample *m = &r->s[(r->head + i) % ABX_METRICS_RING];
    int64_t sec = m->ts_ns / 1000000000LL;
    if (sec < start_s || sec > end_s)
      continue;
    char ts[32];
    abx_rfc3339(m->ts_ns, ts);
    json_array_append_new(
        arr, json_pack("{s:I,s:s,s:i,s:f,s:I,s:I,s:I,s:I,s:I}", "timestampUnix", (json_int_t)sec,
                       "timestamp", ts, "cpuCount", m->cpu_count, "cpuUsedPct", m->cpu_pct,
                       "memUsed", (json_int_t)m->mem_used, "memTotal", (json_int_t)m->mem_total,
                       "memCache", (json_int_t)m->mem_cache, "diskUsed", (json_int_t)m->disk_used,
                       "diskTotal", (json_int_t)m->disk_total));
  }
  pthread_mutex_unlock(&mu);
  return arr;
}

void abx_metrics_forget(const char *id)
{
  pthread_mutex_lock(&mu);
  for (struct ring **pp = &g_rings; *pp; pp = &(*pp)->next)
    if (strcmp((*pp)->id, id) == 0) {
      struct ring *r = *pp;
      *pp = r->next;
      free(r);
      break;
    }
  pthread_mutex_unlock(&mu);
}
