/*
 * lifecycle.h: state changes of a listed sandbox: pause (with memory or filesystem only),
 * resume/connect, auto-resume on traffic, kill, the TTL (kill or auto-pause) and shutdown.
 *
 * States:  running → paused (pause, or the TTL with autoPause) → running (connect, resume, or
 *          traffic with autoResume); either → gone (kill, TTL without autoPause, shutdown).
 *          A memory pause freezes every process in the sandbox's freezer cgroup, memory intact
 *          (memory_paused = 1); its resume thaws them: same processes, same boot id.
 *          A filesystem-only pause (pause {memory:false}, or the TTL's auto-pause with
 *          autoPauseMemory false) stops every process and keeps the overlay root, so every file
 *          (memory_paused = 0); its resume is a fresh boot on the same files: new bwrap and envd,
 *          no old process, a new /proc/sys/kernel/random/boot_id. A resume with memory false of a
 *          memory-paused sandbox is such a cold boot too (v2 connect {memory:false},
 *          docs/protocol/e2b-v2-and-peers.md §1.3). A paused sandbox has no TTL and its endAt is
 *          the pause time (docs/protocol/e2b-control-plane.md §3.3 SandboxDetail, §3.4).
 * Auto-resume: only a memory-paused sandbox created with autoResume {enabled:true} resumes on
 *          traffic; a filesystem-only one must be resumed explicitly (e2b-dev/infra
 *          api/internal/handlers/proxy_grpc.go getAutoResumeSnapshot). Its TTL becomes
 *          now + max(timeout_s, 300 s), at most ABX_MAX_TIMEOUT_S: E2B records the create
 *          timeout raised to the "minimum-autoresume-timeout" flag (300 s) and uses it for every
 *          traffic resume (handlers/timeout_helper.go calculateAutoResumeTimeout,
 *          sandbox_create.go; shared/pkg/featureflags/flags.go MinAutoResumeTimeoutSeconds).
 * Locking: every function takes the sandbox's op mutex, then checks it is still listed; callers
 *          hold a ref (abx_sandbox_get). Concurrent resumes of one sandbox run one after the
 *          other: the first resumes it, the others find it running.
 * Errors:  int functions return 0 or an HTTP status: 404 gone, 409 wrong state, 500 freezer or
 *          reboot failed (reboot: the sandbox stays paused, filesystem only, files kept).
 */
#ifndef ABX_SANDBOX_LIFECYCLE_H
#define ABX_SANDBOX_LIFECYCLE_H

#include <stdint.h>

#include "registry.h"

#define ABX_FREEZE_DEADLINE_NS (5LL * 1000000000LL)
#define ABX_AUTO_RESUME_MIN_TIMEOUT_S 300

/* Pause a running sandbox with its memory (freeze). 409 when already paused. */
int abx_lifecycle_pause(struct abx_sandbox *sb);

/* Pause a running sandbox: keep_memory 1 as abx_lifecycle_pause, 0 filesystem only (processes
 * stopped, files kept). 409 when already paused. */
int abx_lifecycle_pause_mem(struct abx_sandbox *sb, int keep_memory);

/* abx_lifecycle_resume_mem with keep_memory 1. */
int abx_lifecycle_resume(struct abx_sandbox *sb, int64_t timeout_s, int require_paused,
                         int *resumed);

/* Resume a paused sandbox and set its TTL to now + timeout_s (*resumed = 1): a memory-paused one
 * is thawed when keep_memory, else cold-booted from its files; a filesystem-paused one is always
 * cold-booted. On a running one only extend the TTL to now + timeout_s when that is later
 * (*resumed = 0). With `require_paused` (deprecated /resume) a running sandbox gives 409. */
int abx_lifecycle_resume_mem(struct abx_sandbox *sb, int64_t timeout_s, int require_paused,
                             int keep_memory, int *resumed);

/* abx_lifecycle_resume_mem, but a running sandbox's TTL is left alone unless `extend_running`
 * (CubeSandbox: "connect on running does not extend TTL", docs/protocol/e2b-v2-and-peers.md §5;
 * flavor.h). */
int abx_lifecycle_reattach(struct abx_sandbox *sb, int64_t timeout_s, int require_paused,
                           int keep_memory, int extend_running, int *resumed);

/* Auto-resume for the ingress: 0 when the sandbox is running on return (thawed by this call, or
 * already running: its TTL is left alone), 409 when auto-resume does not apply (not enabled, or
 * paused filesystem only), 404 gone, 500 thaw failed. */
int abx_lifecycle_auto_resume(struct abx_sandbox *sb);

/* The TTL an auto-resume gives `sb`, in seconds (see "Auto-resume" above). */
int64_t abx_lifecycle_auto_resume_ttl_s(const struct abx_sandbox *sb);

/* Unlist and stop the sandbox (thawing it first when paused). 404 when already gone. The
 * caller's ref is left to the caller. `why` (static text, e.g. "killed by API") ends serve's log
 * line "sandbox <id> stopped: <why>" (util/log.h). */
int abx_lifecycle_kill(struct abx_sandbox *sb, const char *why);

/* The main loop's tick: sandboxes past their TTL are paused (autoPause, with memory unless
 * autoPauseMemory is false) or killed; sandboxes whose bwrap exited are killed (not those paused
 * filesystem only: they have no process). It only try-locks each sandbox's op mutex (the main
 * thread runs the spawner, which an op holder may be waiting for); a busy one waits a tick. */
void abx_lifecycle_tick(int64_t now_ns);

/* Kill every sandbox (shutdown). */
void abx_lifecycle_shutdown(void);

#endif
