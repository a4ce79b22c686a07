/*
 * lifecycle.c: pause, resume, kill and the TTL. Contract in lifecycle.h.
 */
#include "lifecycle.h"

#include <pthread.h>

#include "cgroup.h"
#include "http_util.h"
#include "metrics.h"
#include "sandbox.h"

/* Under sb->op. */
static int pause_locked(struct abx_sandbox *sb)
{
  if (!sb->listed)
    return 404;
  if (sb->paused)
    return 409;
  if (abx_cgroup_freeze(sb->id, abx_mono_ns() + ABX_FREEZE_DEADLINE_NS) != 0)
    return 500;
  int64_t now = abx_now_ns();
  abx_registry_lock();
  sb->paused = 1;
  sb->paused_ns = now;
  sb->end_ns = now;
  abx_registry_unlock();
  return 0;
}

int abx_lifecycle_pause(struct abx_sandbox *sb)
{
  pthread_mutex_lock(&sb->op);
  int rc = pause_locked(sb);
  pthread_mutex_unlock(&sb->op);
  return rc;
}

int abx_lifecycle_resume(struct abx_sandbox *sb, int64_t timeout_s, int require_paused, int *resumed)
{
  int rc = 0;
  *resumed = 0;
  pthread_mutex_lock(&sb->op);
  int64_t end = abx_now_ns() + timeout_s * 1000000000LL;
  if (!sb->listed) {
    rc = 404;
  } else if (sb->paused) {
    if (abx_cgroup_thaw(sb->id) != 0) {
      rc = 500;
    } else {
      abx_registry_lock();
      sb->paused = 0;
      sb->end_ns = end;
      abx_registry_unlock();
      *resumed = 1;
    }
  } else if (require_paused) {
    rc = 409;
  } else {
    abx_registry_lock();
    if (end > sb->end_ns)
      sb->end_ns = end;
    abx_registry_unlock();
  }
  pthread_mutex_unlock(&sb->op);
  return rc;
}

/* Under sb->op. */
static int kill_locked(struct abx_sandbox *sb)
{
  if (!abx_registry_unlist(sb))
    return 404;
  abx_sandbox_stop(sb);
  return 0;
}

int abx_lifecycle_kill(struct abx_sandbox *sb)
{
  pthread_mutex_lock(&sb->op);
  int rc = kill_locked(sb);
  pthread_mutex_unlock(&sb->op);
  if (rc == 0)
    abx_registry_put(sb); /* the list's ref */
  return rc;
}

void abx_lifecycle_tick(int64_t now_ns)
{
  struct abx_sandbox *due[64];
  size_t n = abx_registry_due(now_ns, due, sizeof due / sizeof due[0]);
  for (size_t i = 0; i < n; i++) {
    struct abx_sandbox *sb = due[i];
    pthread_mutex_lock(&sb->op);
    abx_registry_lock();
    int expired = sb->listed && !sb->paused && sb->end_ns <= now_ns;
    int exited = sb->listed && sb->pid == 0;
    int auto_pause = sb->auto_pause;
    abx_registry_unlock();
    int killed = 0;
    if (exited || (expired && !(auto_pause && pause_locked(sb) == 0)))
      killed = kill_locked(sb) == 0;
    pthread_mutex_unlock(&sb->op);
    if (killed)
      abx_registry_put(sb);
    abx_registry_put(sb);
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
    pthread_mutex_unlock(&s->op);
    abx_registry_put(s);
    s = next;
  }
}

int abx_lifecycle_connect(struct abx_sandbox *sb, int64_t timeout_s, int keep_memory, int *resumed)
{
  (void)keep_memory; /* memory is always kept until filesystem-only resumes exist */
  return abx_lifecycle_resume(sb, timeout_s, 0, resumed);
}
