/*
 * lifecycle.c: pause, resume, auto-resume, kill and the TTL. Contract in lifecycle.h.
 */
#include "lifecycle.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>

#include "e2b.h" /* ABX_MAX_TIMEOUT_S */
#include "cgroup.h"
#include "util/util.h"
#include "metrics.h"
#include "sandbox.h"
#include "sandbox_log.h"

/* Under sb->op. `why`: what paused it, for serve's log ("paused by API", ...). */
static int pause_locked(struct abx_sandbox *sb, int keep_memory, const char *why)
{
  if (!sb->listed)
    return 404;
  if (sb->paused)
    return 409;
  if (keep_memory && abx_cgroup_freeze(sb->id, abx_mono_ns() + ABX_FREEZE_DEADLINE_NS) != 0)
    return 500;
  int64_t now = abx_now_ns();
  abx_registry_lock(); /* paused first: the ingress stops handing out the namespace */
  sb->paused = 1;
  sb->memory_paused = keep_memory;
  sb->paused_ns = now;
  sb->end_ns = now;
  abx_registry_unlock();
  if (!keep_memory)
    abx_sandbox_halt(sb);
  abx_sandbox_log(sb, "info",
                  keep_memory ? "sandbox paused (memory kept)"
                              : "sandbox paused (filesystem only)");
  abx_slog("sandbox %s stopped: %s (%s)", sb->id, why,
           keep_memory ? "memory kept" : "filesystem only");
  return 0;
}

int abx_lifecycle_pause_mem(struct abx_sandbox *sb, int keep_memory)
{
  pthread_mutex_lock(&sb->op);
  int rc = pause_locked(sb, keep_memory, "paused by API");
  pthread_mutex_unlock(&sb->op);
  return rc;
}

int abx_lifecycle_pause(struct abx_sandbox *sb)
{
  return abx_lifecycle_pause_mem(sb, 1);
}

/* Under sb->op, sb listed and paused: make it run again with TTL `end` (ns). */
static int wake_locked(struct abx_sandbox *sb, int keep_memory, int64_t end)
{
  int thaw = sb->memory_paused && keep_memory;
  if (thaw) {
    if (abx_cgroup_thaw(sb->id) != 0)
      return 500;
  } else {
    if (sb->memory_paused) { /* a cold boot from its files: the frozen processes go */
      abx_sandbox_halt(sb);
      abx_registry_lock();
      sb->memory_paused = 0;
      abx_registry_unlock();
    }
    char err[ABX_START_ERR_MAX];
    if (abx_sandbox_reboot(sb, err, sizeof err) != 0) /* logged by sandbox.c */
      return 500;
  }
  abx_registry_lock();
  sb->paused = 0;
  sb->memory_paused = 0;
  sb->end_ns = end;
  abx_registry_unlock();
  abx_sandbox_log(sb, "info", "sandbox resumed");
  abx_slog("sandbox %s started: resumed (%s)", sb->id, thaw ? "memory kept" : "cold boot");
  return 0;
}

int abx_lifecycle_resume_mem(struct abx_sandbox *sb, int64_t timeout_s, int require_paused,
                             int keep_memory, int *resumed)
{
  return abx_lifecycle_reattach(sb, timeout_s, require_paused, keep_memory, 1, resumed);
}

int abx_lifecycle_reattach(struct abx_sandbox *sb, int64_t timeout_s, int require_paused,
                           int keep_memory, int extend_running, int *resumed)
{
  int rc = 0;
  *resumed = 0;
  pthread_mutex_lock(&sb->op);
  int64_t end = abx_now_ns() + timeout_s * 1000000000LL;
  if (!sb->listed) {
    rc = 404;
  } else if (sb->paused) {
    rc = wake_locked(sb, keep_memory, end);
    *resumed = rc == 0;
  } else if (require_paused) {
    rc = 409;
  } else {
    abx_registry_lock();
    if (extend_running && end > sb->end_ns)
      sb->end_ns = end;
    abx_registry_unlock();
  }
  pthread_mutex_unlock(&sb->op);
  return rc;
}

int abx_lifecycle_resume(struct abx_sandbox *sb, int64_t timeout_s, int require_paused,
                         int *resumed)
{
  return abx_lifecycle_resume_mem(sb, timeout_s, require_paused, 1, resumed);
}

int64_t abx_lifecycle_auto_resume_ttl_s(const struct abx_sandbox *sb)
{
  int64_t t = sb->timeout_s;
  if (t < ABX_AUTO_RESUME_MIN_TIMEOUT_S)
    t = ABX_AUTO_RESUME_MIN_TIMEOUT_S;
  return t > ABX_MAX_TIMEOUT_S ? ABX_MAX_TIMEOUT_S : t;
}

int abx_lifecycle_auto_resume(struct abx_sandbox *sb)
{
  int rc = 0;
  pthread_mutex_lock(&sb->op); /* a second request waits here, then finds it running */
  if (!sb->listed)
    rc = 404;
  else if (sb->paused && (!sb->auto_resume || !sb->memory_paused))
    rc = 409;
  else if (sb->paused)
    rc = wake_locked(sb, 1, abx_now_ns() + abx_lifecycle_auto_resume_ttl_s(sb) * 1000000000LL);
  pthread_mutex_unlock(&sb->op);
  return rc;
}

/* Under sb->op. `why`: what killed it, for serve's log. */
static int kill_locked(struct abx_sandbox *sb, const char *why)
{
  if (!abx_registry_unlist(sb))
    return 404;
  abx_sandbox_stop(sb);
  abx_slog("sandbox %s stopped: %s", sb->id, why);
  return 0;
}

int abx_lifecycle_kill(struct abx_sandbox *sb, const char *why)
{
  pthread_mutex_lock(&sb->op);
  int rc = kill_locked(sb, why);
  pthread_mutex_unlock(&sb->op);
  if (rc == 0)
    abx_sandbox_put(sb); /* the list's ref */
  return rc;
}

/* Take a ref on every listed sandbox that is due: running and past its TTL, or whose bwrap exited
 * (reaped here, pid set to 0, only while its op mutex is free: try-locked; one with pid 0 stays
 * due until handled, unless paused filesystem only). At most `max` into out[]; returns the count.
 * Takes the registry lock. */
static size_t due_sandboxes(int64_t now_ns, struct abx_sandbox **out, size_t max)
{
  size_t n = 0;
  abx_registry_lock();
  for (struct abx_sandbox *s = abx_registry_head(); s && n < max; s = s->next) {
    int due = !s->paused && s->end_ns <= now_ns;
    /* bwrap exited: reaped now, or at an earlier tick that could not take the op mutex
     * (abx_lifecycle_tick only try-locks); a sandbox paused filesystem only has no process.
     * Reaping needs op too (a try: the lock order is op, then registry, and a try never waits):
     * a halt or teardown under op waits for its bwrap without reaping it and then kills its
     * process group; reaped here meanwhile, that pid (or 0, serve's own group) would be hit. */
    if (!due && pthread_mutex_trylock(&s->op) == 0) {
      int st;
      if (s->pid > 0 && waitpid(s->pid, &st, WNOHANG) == s->pid)
        s->pid = 0, due = 1;
      else if (s->pid == 0 && !(s->paused && !s->memory_paused))
        due = 1;
      pthread_mutex_unlock(&s->op);
    }
    if (due)
      out[n++] = abx_sandbox_ref(s);
  }
  abx_registry_unlock();
  return n;
}

void abx_lifecycle_tick(int64_t now_ns)
{
  struct abx_sandbox *due[64];
  size_t n = due_sandboxes(now_ns, due, sizeof due / sizeof due[0]);
  for (size_t i = 0; i < n; i++) {
    struct abx_sandbox *sb = due[i];
    /* Only try: the thread holding op may be waiting for this (main) thread's spawner, e.g. a
     * connect {memory:false} cold-booting the sandbox after halting it (a deadlock seen under
     * ASan). A busy sandbox stays due (due_sandboxes) and is seen at a later tick. */
    if (pthread_mutex_trylock(&sb->op) != 0) {
      abx_sandbox_put(sb);
      continue;
    }
    abx_registry_lock();
    int expired = sb->listed && !sb->paused && sb->end_ns <= now_ns;
    /* bwrap gone: killed, unless the sandbox is paused filesystem only (it has no process) */
    int exited = sb->listed && sb->pid == 0 && !(sb->paused && !sb->memory_paused);
    int auto_pause = sb->auto_pause, keep_memory = sb->auto_pause_memory;
    abx_registry_unlock();
    int killed = 0;
    if (exited)
      killed = kill_locked(sb, "its processes exited") == 0;
    else if (expired && !(auto_pause && pause_locked(sb, keep_memory, "TTL expired, paused") == 0))
      killed = kill_locked(sb, "TTL expired") == 0;
    pthread_mutex_unlock(&sb->op);
    if (killed)
      abx_sandbox_put(sb);
    abx_sandbox_put(sb);
  }
  abx_metrics_tick(); /* metrics.h: the time series behind GET /sandboxes/{id}/metrics */
}

void abx_lifecycle_shutdown(void)
{
  struct abx_sandbox *s = abx_registry_take_all();
  while (s) {
    struct abx_sandbox *next = s->next;
    pthread_mutex_lock(&s->op);
    abx_sandbox_stop(s);
    abx_slog("sandbox %s stopped: serve shut down", s->id);
    pthread_mutex_unlock(&s->op);
    abx_sandbox_put(s);
    s = next;
  }
  abx_sandbox_drain_trash(); /* the state dirs those stops handed to the trash worker */
}
