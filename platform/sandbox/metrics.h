/*
 * metrics.h: the time series behind GET /sandboxes/{id}/metrics: a bounded ring of samples per
 * sandbox, one at the end of every (re)start and then one every ABX_METRICS_PERIOD_S while the
 * sandbox runs, taken by the main loop's tick (lifecycle.h abx_lifecycle_tick).
 *
 * Why:     E2B answers metrics from a store of samples its orchestrator collects every few seconds
 *          ("metric timestamps are aligned to collection buckets, currently 5s", E2B's own test
 *          packages/js-sdk/tests/sandbox/metrics.test.ts @ b8029973), and selects them by
 *          [start, end] (e2b-dev/infra packages/clickhouse/pkg/utils/sandbox.go: an absent bound is
 *          the sandbox's own start or end). A single sample made at request time cannot answer a
 *          range in the past.
 * Shape:   one sample = SandboxMetric (docs/protocol/e2b-control-plane.md §3.3): cpuCount (the
 *          sandbox's limit), cpuUsedPct (share of those CPUs used since the previous sample,
 *          0..100), memUsed / memCache (its memory cgroup), memTotal (its memory limit), diskUsed
 *          (its upper layer), diskTotal (the state dir's file system), bytes.
 * Bounds:  ABX_METRICS_RING samples per sandbox (one hour at the period); older ones are dropped.
 *          A paused sandbox gets no samples; its ring is kept. The ring goes with the sandbox
 *          (abx_metrics_forget from the last abx_sandbox_put).
 * Locking: one mutex inside metrics.c for the rings; sampling reads a sandbox's cgroups and
 *          upper dir under its op mutex (the tick only try-locks it, so a long snapshot or boot
 *          never stalls the main loop).
 */
#ifndef ABX_SANDBOX_METRICS_H
#define ABX_SANDBOX_METRICS_H

#include <jansson.h>
#include <stdint.h>

#include "registry.h"

#define ABX_METRICS_PERIOD_S 5
#define ABX_METRICS_RING 720

/* A (re)start of sandbox `id`: make its ring if it has none (keeping any earlier samples) and
 * restart the CPU baseline, since its cgroups are new. Call right after the cgroups are made. */
void abx_metrics_begin(const char *id);

/* Take one sample of `sb` now. The caller holds sb->op (or owns sb before it is listed) and sb's
 * cgroups and dir exist. */
void abx_metrics_sample(struct abx_sandbox *sb);

/* The main loop: sample the listed running sandboxes whose last sample is at least
 * ABX_METRICS_PERIOD_S old, at most 32 a tick (the rest stay due for the next tick; a busy op
 * mutex also postpones one to a later tick). Takes the registry lock, then the rings' mutex. */
void abx_metrics_tick(void);

/* The samples of `id` with timestampUnix in [start_s, end_s] (seconds; pass INT64_MIN /
 * INT64_MAX for an open bound), oldest first, as a new JSON array of SandboxMetric; [] when
 * `id` has no ring. */
json_t *abx_metrics_json(const char *id, int64_t start_s, int64_t end_s);

/* Drop the ring of `id`. */
void abx_metrics_forget(const char *id);

#endif
