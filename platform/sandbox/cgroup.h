/*
 * cgroup.h: one cgroup per sandbox in the cgroup v1 freezer, memory, cpuacct and cpu
 * hierarchies: pause (freeze with memory intact), resume (thaw), the sandbox's CPU and memory
 * limits, and the figures behind GET /metrics.
 *
 * Layout:  /sys/fs/cgroup/<h><own cgroup of serve in h>/abxlua/serve.<pid>/<sandbox id> for h in
 *          freezer, memory, cpuacct, cpu (nested under serve's own cgroup so any limit on serve
 *          still holds). bwrap joins them between fork and exec (spawner.h), so every sandbox
 *          process is inside from its first instruction. A hierarchy that is not mounted (or not
 *          writable) is skipped: without the freezer, pause answers 500; without memory or cpu
 *          that limit is not enforced (abx_cgroup_can_limit says which; serve warns at startup).
 * Limits:  memory: memory.limit_in_bytes = memory.memsw.limit_in_bytes (when the kernel accounts
 *          swap) = memory_mb MiB, so the kernel's OOM killer acts inside the sandbox's group
 *          (kernel Documentation/admin-guide/cgroup-v1/memory.rst §2.5, §10 OOM Control); cpu:
 *          CFS bandwidth, cpu.cfs_quota_us = cpu_count * cpu.cfs_period_us (the period is the
 *          kernel's, 100 ms by default), i.e. at most cpu_count CPUs' worth of time per period
 *          (kernel Documentation/scheduler/sched-bwc.rst).
 * Weights: cpu.shares of a sandbox's group = 1024 (the kernel's default, one host thread's
 *          weight) per CPU (millis * 1024 / 1000 for abx_cgroup_set_cpu_millis); serve.<pid>'s =
 *          the sum of its sandboxes', abxlua's = the sum of the serves', each of the two at most
 *          1024 per online CPU of the machine (all clamped to the kernel's 2..262144), kept
 *          current as sandboxes come and go. Why: sibling groups share CPU by weight (kernel
 *          Documentation/scheduler/sched-design-CFS.rst "group scheduler extensions"), so with
 *          the default 1024 at every level all sandboxes of all serves together weighed what ONE
 *          host process weighs, and on a busy machine got a fraction of the CPU their processes
 *          would get uncontained (issue 22: a code-interpreter-v1 create took 16-19 s beside a
 *          second suite and four CPU loops). The cap is Kubernetes' model (the kubepods group
 *          weighs the node's allocatable CPUs, a pod its CPU request: kubernetes/kubernetes
 *          pkg/kubelet/cm/helpers_linux.go MilliCPUToShares): the sandboxes together weigh as
 *          much as the machine's CPUs' worth of busy threads, never so much that they starve
 *          the test engine and serve that drive them (uncapped, 10 sandboxes outweighed the
 *          engine 20 to 1, and its loopback health check timed out beside a busy suite).
 * Units:   bytes, nanoseconds of CPU time; deadlines CLOCK_MONOTONIC ns.
 * Errors:  int functions return 0, or -1 (errno set where it means something).
 * Source:  DESIGN.md "The local platform"; kernel Documentation/admin-guide/cgroup-v1/freezer-subsystem.rst.
 */
#ifndef ABX_SANDBOX_CGROUP_H
#define ABX_SANDBOX_CGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ABX_CGROUP_MAX 4 /* hierarchies */

/* Find the hierarchies and create serve's parent cgroups. Call once at startup. Returns the
 * number of usable hierarchies (0 is not an error: no pause, no metrics figures). */
int abx_cgroup_init(void);

/* 1 when the freezer hierarchy is usable. */
int abx_cgroup_can_freeze(void);

/* Create the sandbox's cgroups and fill procs[] with the malloc'd paths of their cgroup.procs
 * files, NULL-terminated (procs must hold ABX_CGROUP_MAX + 1). Returns 0 or -1. */
int abx_cgroup_create(const char *id, char *procs[ABX_CGROUP_MAX + 1]);

/* Which limits can be enforced: *memory and *cpu get 1 when that hierarchy is usable. Returns 1
 * when both are. */
int abx_cgroup_can_limit(int *memory, int *cpu);

/* The sandbox's group directory in `hierarchy` ("memory", "cpu", "cpuacct", "freezer") into out.
 * 0, or -1 when that hierarchy is not usable. */
int abx_cgroup_dir(const char *hierarchy, const char *id, char *out, size_t n);

/* Apply the sandbox's limits (Limits above) and weight (Weights) to its groups, after
 * abx_cgroup_create and before any process joins. cpu_count >= 1, memory_mb >= 1 (MiB). Hierarchies that are not usable are
 * skipped. 0, or -1 with a message naming the file in err. */
int abx_cgroup_set_limits(const char *id, int cpu_count, int memory_mb, char *err, size_t errlen);

/* Set the CPU limit to `millis` thousandths of a CPU (Kubernetes "500m" = half a CPU, as
 * OpenSandbox's resourceLimits.cpu: platform/opensandbox/create.c):
 * cpu.cfs_quota_us = period * millis / 1000, at least 1000 us (the kernel's minimum quota, so
 * millis >= 10 at the default 100 ms period).
 * Skipped when the cpu hierarchy is not usable, as abx_cgroup_set_limits. 0, or -1 with err. */
int abx_cgroup_set_cpu_millis(const char *id, int millis, char *err, size_t errlen);

/* Set only the sandbox's CPU weight (Weights above) to `millis` thousandths of a CPU (at least
 * the kernel's minimum of 2 shares) and rebalance serve's and abxlua's groups; its CPU limit is
 * left alone. A warm pool's sandbox boots at a low weight and gets its own back when a create
 * claims it (warm_pool.h). Skipped (0) when the cpu hierarchy is not usable. 0, or -1 with err. */
int abx_cgroup_set_weight(const char *id, int millis, char *err, size_t errlen);

/* Freeze every process of the sandbox and wait until the freezer reports FROZEN (deadline
 * CLOCK_MONOTONIC ns). On failure the sandbox is thawed again and -1 returned. */
int abx_cgroup_freeze(const char *id, int64_t deadline_mono);

/* Thaw the sandbox. Returns 0 or -1. */
int abx_cgroup_thaw(const char *id);

/* SIGKILL every process listed in the sandbox's freezer cgroup, then thaw it so they can die. */
void abx_cgroup_kill_all(const char *id);

struct abx_cgroup_stats {
  uint64_t cpu_ns;    /* cpuacct.usage */
  uint64_t mem_used;  /* memory.usage_in_bytes */
  uint64_t mem_cache; /* "cache" in memory.stat */
  uint64_t mem_limit; /* memory.limit_in_bytes (huge when unlimited) */
};

/* Read the figures (missing ones are 0). Returns 0, or -1 when no hierarchy could be read. */
int abx_cgroup_stats(const char *id, struct abx_cgroup_stats *st);

/* Remove the sandbox's cgroups (waits up to 2 s for the last processes to leave). */
void abx_cgroup_remove(const char *id);

/* Remove serve's parent cgroups (shutdown). */
void abx_cgroup_shutdown(void);

/* Crash recovery (recover.h), after abx_cgroup_init. The pids P of the serve.<P> groups beside
 * ours (any hierarchy), at most `max`, into out; returns how many. */
int abx_cgroup_list_serves(pid_t *out, int max);

/* Thaw every sandbox group of serve.<pid> and SIGKILL every process in them; returns how many
 * processes were signalled. */
int abx_cgroup_kill_serve(pid_t pid);

/* Remove serve.<pid> and its sandbox groups (waits up to 2 s for processes to leave); returns
 * how many directories were removed. */
int abx_cgroup_remove_serve(pid_t pid);

#endif
