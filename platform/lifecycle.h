/*
 * lifecycle.h: state changes of a listed sandbox: pause, resume/connect, kill, the TTL (kill or
 * auto-pause) and shutdown.
 *
 * States:  running → paused (pause, or the TTL with autoPause) → running (connect, resume);
 *          either → gone (kill, TTL without autoPause, shutdown). A paused sandbox's processes are
 *          frozen in its freezer cgroup with their memory intact; it has no TTL and its endAt is
 *          the pause time (reference/e2b-control-plane.md §3.3 SandboxDetail, §3.4).
 * Locking: every function takes the sandbox's op mutex, then checks it is still listed; callers
 *          hold a ref (abx_registry_get).
 * Errors:  int functions return 0 or an HTTP status: 404 gone, 409 wrong state, 500 freezer.
 */
#ifndef ABX_LOCAL_LIFECYCLE_H
#define ABX_LOCAL_LIFECYCLE_H

#include <stdint.h>

#include "registry.h"

#define ABX_FREEZE_DEADLINE_NS (5LL * 1000000000LL)

/* Freeze a running sandbox. 409 when already paused. */
int abx_lifecycle_pause(struct abx_sandbox *sb);

/* Thaw a paused sandbox and set its TTL to now + timeout_s (*resumed = 1); on a running one only
 * extend the TTL to now + timeout_s when that is later (*resumed = 0). With `require_paused`
 * (deprecated /resume) a running sandbox gives 409. */
int abx_lifecycle_resume(struct abx_sandbox *sb, int64_t timeout_s, int require_paused, int *resumed);

/* v2 connect (e2b-v2-and-peers.md §1.3): like abx_lifecycle_resume(sb, timeout_s, 0, resumed);
 * with keep_memory 0 a paused sandbox comes back from its filesystem as a fresh boot. */
int abx_lifecycle_connect(struct abx_sandbox *sb, int64_t timeout_s, int keep_memory, int *resumed);

/* Unlist and stop the sandbox (thawing it first when paused). 404 when already gone. The
 * caller's ref is left to the caller. */
int abx_lifecycle_kill(struct abx_sandbox *sb);

/* The main loop's tick: sandboxes past their TTL are paused (autoPause) or killed; sandboxes whose
 * bwrap exited are killed. */
void abx_lifecycle_tick(int64_t now_ns);

/* Kill every sandbox (shutdown). */
void abx_lifecycle_shutdown(void);

#endif
