/*
 * warm_pool.c: ready sandboxes per template, filled by one thread at a low CPU weight, claimed
 * by creates. Contract in warm_pool.h.
 */
#include "sandbox.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "net/net.h"
#include "template/template.h"
#include "util/util.h"

/* A failed boot is tried again after this many seconds (a template that cannot start is not
 * booted in a loop). */
#define RETRY_S 30
/* The warm-up command's bound (a loaded machine can take seconds). */
#define WARM_CMD_MS 30000

struct entry {
  char name[64];             /* the template as --pool names it */
  int want;                  /* sandboxes to keep ready */
  int active;                /* filled now (--pool), or after the first create (the default) */
  int64_t retry_at;          /* CLOCK_MONOTONIC ns: no boot before this (after a failure) */
  struct abx_template *tmpl; /* the record the ready ones were booted from (a ref), or NULL */
  struct abx_sandbox *ready[ABX_WARM_POOL_MAX];
  int n_ready;
};

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct entry e[ABX_WARM_POOL_TEMPLATES];
  int n;
  int stop;
  int started;
  pthread_t filler;
  struct abx_sandbox *booting; /* the filler's boot in progress (its start can be cancelled) */
  const struct abx_template *boot_tmpl; /* the template of the boot under way: set from its
                                          * choice until its sandbox is kept or put */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* ---- configuration -------------------------------------------------------------------------- */

static int parse_one(const char *part, int active, char *err, size_t n)
{
  const char *eq = strchr(part, '=');
  char *end = NULL;
  long want = eq ? strtol(eq + 1, &end, 10) : -1;
  size_t len = eq ? (size_t)(eq - part) : 0;
  if (!eq || len == 0 || len >= sizeof g.e[0].name || !eq[1] || *end || want < 0 ||
      want > ABX_WARM_POOL_MAX) {
    snprintf(err, n, "--pool: '%s' is not TEMPLATE=N with N 0..%d (e.g. code-interpreter-v1=1)",
             part, ABX_WARM_POOL_MAX);
    return -1;
  }
  for (int i = 0; i < g.n; i++)
    if (strncmp(g.e[i].name, part, len) == 0 && g.e[i].name[len] == 0) {
      snprintf(err, n, "--pool: template '%.*s' is named twice", (int)len, part);
      return -1;
    }
  if (g.n == ABX_WARM_POOL_TEMPLATES) {
    snprintf(err, n, "--pool: at most %d templates", ABX_WARM_POOL_TEMPLATES);
    return -1;
  }
  struct entry *e = &g.e[g.n++];
  memset(e, 0, sizeof *e);
  memcpy(e->name, part, len);
  e->want = (int)want;
  e->active = active;
  return 0;
}

int abx_warm_pool_configure(const char *spec, char *err, size_t errlen)
{
  int active = spec != NULL; /* the default fills on first use only */
  if (!spec)
    spec = ABX_WARM_POOL_DEFAULT;
  g.n = 0;
  if (strcmp(spec, "none") == 0)
    return 0;
  char *dup = strdup(spec), *save = NULL;
  if (!dup) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  int rc = 0;
  for (char *p = strtok_r(dup, ",", &save); p && rc == 0; p = strtok_r(NULL, ",", &save))
    rc = parse_one(p, active, err, errlen);
  free(dup);
  if (rc == 0 && g.n == 0) {
    snprintf(err, errlen, "--pool: give TEMPLATE=N[,TEMPLATE=N...] or none");
    rc = -1;
  }
  return rc;
}

/* ---- filling -------------------------------------------------------------------------------- */

/* The entry whose template is `t` (by the name --pool gave: its id or alias), or NULL. */
static struct entry *entry_of(const struct abx_template *t)
{
  for (int i = 0; i < g.n; i++)
    if (strcmp(g.e[i].name, t->id) == 0 || (t->alias[0] && strcmp(g.e[i].name, t->alias) == 0))
      return &g.e[i];
  return NULL;
}

/* Boots one sandbox of `t` for the pool (lock not held). NULL on failure, logged. */
static struct abx_sandbox *boot_one(struct abx_template *t)
{
  struct abx_sandbox_spec spec = {
      .tmpl = t, .origin = "warm pool", .defer_start = 1, .auto_pause_memory = 1};
  char err[ABX_START_ERR_MAX + 64];
  int st = 0;
  struct abx_sandbox *sb = abx_sandbox_new(&spec, &st, err, sizeof err);
  if (!sb) {
    abx_slog("warm pool: cannot make a sandbox of %s: %s", t->id, err);
    return NULL;
  }
  sb->pooled = 1;
  pthread_mutex_lock(&g.mu);
  int stopping = g.stop;
  if (!stopping)
    g.booting = sb;
  pthread_mutex_unlock(&g.mu);
  json_t *env = json_object();
  int rc = stopping || !env ? -1 : abx_sandbox_start(sb, env, err, sizeof err);
  json_decref(env);
  if (rc != 0) {
    pthread_mutex_lock(&g.mu);
    g.booting = NULL; /* cleared before the put: a holder of the lock may kill it meanwhile */
    pthread_mutex_unlock(&g.mu);
    abx_sandbox_put(sb);
    return NULL;
  }
  /* one command as the default user, as a create's first command would: its shell's files are
   * then in the page cache, so a claim's first command costs what a later one does. Its
   * failure is no failure of the boot (the claim's commands say what is wrong). */
  char out[64], e[128];
  int code = 0;
  if (abx_envd_run(sb->netns_fd, NULL, "user", "true", NULL, WARM_CMD_MS, &code, out, sizeof out, e,
                   sizeof e) != 0)
    abx_slog("warm pool: sandbox %s: its warm-up command failed: %s", sb->id, e);
  return sb;
}

/* Drops the ready sandboxes of `e` (lock held; they are put after the unlock by the caller). */
static int take_ready(struct entry *e, struct abx_sandbox **out, int max)
{
  int n = 0;
  while (e->n_ready > 0 && n < max)
    out[n++] = e->ready[--e->n_ready];
  return n;
}

/* One pass: the first entry that lacks a sandbox gets one. 1 when a boot was tried. */
static int fill_once(void)
{
  struct abx_sandbox *stale[ABX_WARM_POOL_MAX];
  int n_stale = 0;
  struct entry *lacking = NULL;
  struct abx_template *t = NULL;
  pthread_mutex_lock(&g.mu);
  for (int i = 0; i < g.n && !lacking && !g.stop; i++) {
    struct entry *e = &g.e[i];
    if (!e->active || e->n_ready >= e->want || abx_mono_ns() < e->retry_at)
      continue;
    t = abx_template_get(e->name, 0);
    if (t && t != e->tmpl) { /* a new record of the template (rebuilt): the old ones go */
      n_stale = take_ready(e, stale, ABX_WARM_POOL_MAX);
      if (e->tmpl)
        abx_template_put(e->tmpl, 0);
      e->tmpl = t;
      abx_template_ref(t, 0);
    }
    if (t)
      lacking = e; /* else not (yet) a template: looked up again at the next wake-up (1 s) */
  }
  g.boot_tmpl = lacking ? t : NULL;
  pthread_mutex_unlock(&g.mu);
  for (int i = 0; i < n_stale; i++)
    abx_sandbox_put(stale[i]);
  if (!lacking)
    return 0;
  int64_t t0 = abx_mono_ns();
  struct abx_sandbox *sb = boot_one(t); /* g.booting is still sb (its warm-up included) */
  pthread_mutex_lock(&g.mu);
  g.booting = NULL;
  if (sb && !g.stop && lacking->tmpl == t && lacking->n_ready < lacking->want) {
    lacking->ready[lacking->n_ready++] = sb;
    abx_slog("warm pool: a sandbox of %s is ready (%d of %d, booted in %lld ms)", lacking->name,
             lacking->n_ready, lacking->want, (long long)((abx_mono_ns() - t0) / 1000000));
    sb = NULL;
  } else if (!sb) {
    lacking->retry_at = abx_mono_ns() + (int64_t)RETRY_S * 1000000000LL;
  }
  pthread_mutex_unlock(&g.mu);
  abx_sandbox_put(sb); /* not kept (serve stops, the template changed or is being deleted) */
  abx_template_put(t, 0);
  pthread_mutex_lock(&g.mu);
  g.boot_tmpl = NULL; /* a release waiting for this boot's end may go on (end_boot_of) */
  pthread_cond_broadcast(&g.cv);
  pthread_mutex_unlock(&g.mu);
  return 1;
}

static void *filler(void *arg)
{
  (void)arg;
  /* the boots' serve-side work (mounts, cgroups, the envd probes) runs only on an idle CPU, so
   * a refill right after a claim does not slow that sandbox's first commands (sched(7)
   * SCHED_IDLE; per thread on Linux). Best effort: without it the weight still applies. */
  struct sched_param sp = {.sched_priority = 0};
  if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
    abx_slog("warm pool: its thread keeps the normal scheduling class");
  for (;;) {
    pthread_mutex_lock(&g.mu);
    int stop = g.stop;
    pthread_mutex_unlock(&g.mu);
    if (stop)
      break;
    if (fill_once())
      continue;
    /* nothing to boot now: wait for a claim, a first use, a retry time or the stop */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_mutex_lock(&g.mu);
    if (!g.stop)
      pthread_cond_timedwait(&g.cv, &g.mu, &ts);
    pthread_mutex_unlock(&g.mu);
  }
  return NULL;
}

int abx_warm_pool_start(void)
{
  if (g.n == 0)
    return 0;
  if (pthread_create(&g.filler, NULL, filler, NULL) != 0) {
    abx_slog("warm pool: cannot start its thread: %s", strerror(errno));
    return -1;
  }
  g.started = 1;
  for (int i = 0; i < g.n; i++)
    abx_slog("warm pool: %d sandbox(es) of %s%s", g.e[i].want, g.e[i].name,
             g.e[i].active ? "" : ", filled after its first create");
  return 0;
}

/* ---- claims --------------------------------------------------------------------------------- */

/* Whether the create asks only for what a booted sandbox can take afterwards. */
static int claimable(const struct abx_sandbox_spec *spec, json_t *req)
{
  if ((spec->kind && spec->kind != 'i') || spec->bind_dir || spec->network_from ||
      json_array_size(spec->volume_mounts) > 0 || spec->cpu_count || spec->memory_mb ||
      spec->skip_start || spec->defer_start || spec->template_id || spec->alias)
    return 0;
  json_t *net = json_object_get(req, "network");
  if (!net || json_is_null(net))
    return 1;
  json_t *pub = json_object_get(net, "allowPublicTraffic"),
         *mask = json_object_get(net, "maskRequestHost"),
         *proxy = json_object_get(net, "egressProxy");
  return json_is_object(net) && (!pub || json_is_true(pub)) &&
         (!mask || json_is_null(mask) || (json_is_string(mask) && !*json_string_value(mask))) &&
         (!proxy || json_is_null(proxy));
}

/* The create's outbound rules on the claimed sandbox (only when they differ from the pool's
 * boot: open egress). 0, 400 (bad rules, msg) or 500. */
static int apply_network(struct abx_sandbox *sb, json_t *req, char *msg, size_t n)
{
  struct abx_net_rules rules = {0};
  json_t *net = json_object_get(req, "network");
  if (abx_network_parse_rules(req, json_is_object(net) ? net : NULL, &rules, msg, n) != 0)
    return 400;
  if (rules.internet && json_array_size(rules.allow) == 0 && json_array_size(rules.deny) == 0) {
    json_decref(rules.allow);
    json_decref(rules.deny);
    return 0;
  }
  int fd = dup(sb->netns_fd);
  int st = abx_network_update(sb->id, fd, &rules, msg, n);
  return st == 204 ? 0 : 500;
}

/* Applies the create to a claimed sandbox (it holds the only ref). 0, or an HTTP status. */
static int apply(struct abx_sandbox *sb, const struct abx_sandbox_spec *spec, json_t *req,
                 char *err, size_t errlen)
{
  json_t *meta = json_is_object(spec->metadata) ? json_deep_copy(spec->metadata) : json_object();
  if (!meta) {
    snprintf(err, errlen, "out of memory");
    return 500;
  }
  json_decref(sb->metadata);
  sb->metadata = meta;
  sb->secure = spec->secure;
  sb->token[0] = 0;
  if (sb->secure && abx_rand_hex(sb->token, 32) != 0) {
    snprintf(err, errlen, "no randomness available");
    return 500;
  }
  sb->auto_pause = spec->auto_pause;
  sb->auto_pause_memory = spec->auto_pause_memory;
  sb->auto_resume = spec->auto_resume;
  sb->origin = NULL;
  int st = apply_network(sb, req, err, errlen);
  if (st != 0)
    return st;
  json_t *env = json_is_object(spec->env_vars) ? json_incref(spec->env_vars) : json_object();
  int rc = env ? abx_sandbox_init_again(sb, env, err, errlen) : -1;
  json_decref(env);
  if (rc != 0)
    return 500;
  sb->pooled = 0;
  if (abx_cgroup_set_weight(sb->id, 1000 * sb->cpu_count, err, errlen) != 0)
    return 500;
  return 0;
}

struct abx_sandbox *abx_warm_pool_claim(const struct abx_sandbox_spec *spec, json_t *req,
                                        int *status, char *err, size_t errlen)
{
  *status = 0;
  if (!g.started || !spec->tmpl || !claimable(spec, req))
    return NULL;
  struct abx_sandbox *sb = NULL;
  pthread_mutex_lock(&g.mu);
  struct entry *e = entry_of(spec->tmpl);
  if (e && !e->active) {
    e->active = 1; /* a default pool fills from its template's first create on */
    abx_slog("warm pool: filling %s (its first create)", e->name);
  }
  if (e && e->tmpl == spec->tmpl && e->n_ready > 0)
    sb = e->ready[--e->n_ready];
  if (e)
    pthread_cond_signal(&g.cv); /* refill */
  pthread_mutex_unlock(&g.mu);
  if (!sb)
    return NULL;
  int64_t t0 = abx_mono_ns();
  int st = apply(sb, spec, req, err, errlen);
  if (st != 0) {
    abx_slog("sandbox %s: claim from the warm pool failed: %s", sb->id, err);
    abx_sandbox_put(sb);
    *status = st == 400 ? 400 : 0; /* a bad request is the caller's answer; else boot anew */
    return NULL;
  }
  abx_sandbox_log(sb, "info",
                  "sandbox claimed from the warm pool (started earlier from template %s)",
                  sb->template_id);
  abx_slog("sandbox %s claimed from the warm pool of %s in %lld ms", sb->id, e->name,
           (long long)((abx_mono_ns() - t0) / 1000000));
  return sb;
}

/* ---- release (before a template delete) --------------------------------------------------- */

/* How long a release waits for a cancelled boot to let its sandbox go (with its processes killed,
 * each of its waits fails at once; the bound only keeps a stuck boot from holding a delete). */
#define RELEASE_WAIT_MS 10000

/* A cancelled boot is killed again this often until it has ended (its waits are each bounded in
 * seconds, and a dead envd fails each at once): at a release and at serve's stop. */
#define KILL_POLL_MS 100

/* CLOCK_REALTIME KILL_POLL_MS from now: the deadline of one timed wait for a boot's end. */
static struct timespec kill_poll_deadline(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += KILL_POLL_MS * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* Cancels the filler's boot under way, if any, and kills its processes (lock held: g.booting is
 * cleared under the lock before the filler puts it, so it is alive while we hold it). */
static void cancel_boot(void)
{
  if (g.booting) {
    g.booting->start_cancel = 1;
    abx_cgroup_kill_all(g.booting->id);
  }
}

/* Waits (lock held) until the filler's boot of `t`, if one is under way, has ended and let its
 * sandbox go: cancelled and its processes killed again every KILL_POLL_MS, as at serve's stop. */
static void end_boot_of(const struct abx_template *t)
{
  int64_t end = abx_mono_ns() + (int64_t)RELEASE_WAIT_MS * 1000000LL;
  while (g.boot_tmpl == t && abx_mono_ns() < end) {
    cancel_boot();
    struct timespec ts = kill_poll_deadline();
    pthread_cond_timedwait(&g.cv, &g.mu, &ts);
  }
}

int abx_warm_pool_release(const char *ref)
{
  struct abx_template *t = ref ? abx_template_get(ref, 0) : NULL;
  if (!t)
    return 0;
  struct abx_sandbox *gone[ABX_WARM_POOL_MAX];
  struct abx_template *held = NULL;
  int n = 0;
  pthread_mutex_lock(&g.mu);
  struct entry *e = g.started ? entry_of(t) : NULL;
  if (e) {
    if (e->tmpl == t) { /* a boot of it that ends now is not kept (fill_once) */
      held = e->tmpl;
      e->tmpl = NULL;
    }
    e->retry_at = abx_mono_ns() + (int64_t)RETRY_S * 1000000000LL;
    end_boot_of(t);
    n = take_ready(e, gone, ABX_WARM_POOL_MAX);
  }
  pthread_mutex_unlock(&g.mu);
  for (int i = 0; i < n; i++)
    abx_sandbox_put(gone[i]);
  if (held)
    abx_template_put(held, 0);
  if (e)
    abx_slog("warm pool: %d sandbox(es) of %s let go (its template is being deleted; refilled "
             "from %d s on if it still exists)",
             n, e->name, RETRY_S);
  abx_template_put(t, 0);
  return n;
}

/* Ends the filler: its boot in progress is cancelled and its processes killed, again every
 * KILL_POLL_MS until the thread has ended, so no wait of the boot (envd's health, /init, the
 * warm-up command, the ready probes: each bounded in seconds) holds serve's stop: a dead envd
 * fails each of them at once. */
static void end_filler(void)
{
  for (;;) {
    struct timespec ts = kill_poll_deadline();
    if (pthread_timedjoin_np(g.filler, NULL, &ts) == 0)
      return;
    pthread_mutex_lock(&g.mu);
    cancel_boot();
    pthread_mutex_unlock(&g.mu);
  }
}

void abx_warm_pool_stop(void)
{
  pthread_mutex_lock(&g.mu);
  int started = g.started;
  g.stop = 1;
  g.started = 0;
  if (g.booting)
    g.booting->start_cancel = 1;
  pthread_cond_broadcast(&g.cv);
  pthread_mutex_unlock(&g.mu);
  if (started)
    end_filler();
  for (int i = 0; i < g.n; i++) {
    struct abx_sandbox *all[ABX_WARM_POOL_MAX];
    pthread_mutex_lock(&g.mu);
    int k = take_ready(&g.e[i], all, ABX_WARM_POOL_MAX);
    struct abx_template *t = g.e[i].tmpl;
    g.e[i].tmpl = NULL;
    pthread_mutex_unlock(&g.mu);
    for (int j = 0; j < k; j++)
      abx_sandbox_put(all[j]);
    if (t)
      abx_template_put(t, 0);
  }
}
