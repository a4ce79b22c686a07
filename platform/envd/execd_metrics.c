/*
 * execd_metrics.c: execd's GET /metrics and GET /metrics/watch on envd's own readings
 * (metrics.c envd_metrics_read: the sandbox's cgroup figures where it has them).
 *
 * GET /metrics → 200 Metrics {"cpu_count":N.0,"cpu_used_pct":P,"mem_total_mib":M,
 *   "mem_used_mib":M,"timestamp":<unix ms>} (model/metric.go; numbers are floats but the
 *   timestamp). cpu_used_pct is the busy share since the previous reading of envd's shared series
 *   (the first over 100 ms), not execd's fresh 1 s sample (gopsutil cpu.Percent(time.Second)).
 * GET /metrics/watch → 200 text/event-stream whose body is one Metrics JSON object then "\n"
 *   every second, each over the second before it (the stream's own series), as
 *   controller/metric.go WatchMetrics writes them (no "data:" prefix, no blank line); it ends when
 *   the client hangs up or envd stops.
 * Source: components/execd/pkg/web/controller/metric.go, model/metric.go @3bb6fad;
 *   specs/execd-api.yaml (/metrics, /metrics/watch, Metrics).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/execd_int.h"
#include "envd/process.h" /* envd_now_ms */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WATCH_EVERY_MS 1000

/* The Metrics object of one reading (a new reference). */
static json_t *metrics_json(const struct envd_metrics_sample *m)
{
  return json_pack("{s:f,s:f,s:f,s:f,s:I}", "cpu_count", (double)m->cpu_count, "cpu_used_pct",
                   m->cpu_used_pct, "mem_total_mib", (double)m->mem_total / 1024.0 / 1024.0,
                   "mem_used_mib", (double)m->mem_used / 1024.0 / 1024.0, "timestamp",
                   (json_int_t)execd_wall_ms());
}

enum MHD_Result execd_metrics_get(struct execd_req *r)
{
  struct envd_metrics_sample m;
  envd_metrics_read(r->e, NULL, &m);
  json_t *j = metrics_json(&m);
  if (!j)
    return execd_send_err(r->c, 500, "RUNTIME_ERROR",
                          "error reading runtime metrics. out of memory");
  return execd_send_ok_json(r->c, j);
}

/* One watch stream: its CPU series, the line being sent, when the next one is due. */
struct watch {
  struct envd *e;
  struct envd_cpu_prev prev;
  char *out;
  size_t len, pos;
  int64_t next_ms;
  int fd;
};

static ssize_t watch_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct watch *w = cls;
  (void)pos;
  while (w->pos >= w->len) {
    if (w->e->stopping || envd_client_gone(w->fd))
      return MHD_CONTENT_READER_END_OF_STREAM;
    int64_t now = envd_now_ms();
    if (now < w->next_ms) {
      int64_t d = w->next_ms - now;
      usleep((useconds_t)((d < 200 ? d : 200) * 1000)); /* wakes to notice a hang-up */
      continue;
    }
    w->next_ms = now + WATCH_EVERY_MS;
    struct envd_metrics_sample m;
    envd_metrics_read(w->e, &w->prev, &m);
    json_t *j = metrics_json(&m);
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    free(w->out);
    w->out = NULL;
    w->len = w->pos = 0;
    if (s && asprintf(&w->out, "%s\n", s) >= 0)
      w->len = strlen(w->out);
    else
      w->out = NULL;
    free(s);
  }
  return envd_stream_take(w->out, w->len, &w->pos, buf, max);
}

static void watch_free(void *cls)
{
  struct watch *w = cls;
  free(w->out);
  free(w);
}

enum MHD_Result execd_metrics_watch(struct execd_req *r)
{
  struct watch *w = calloc(1, sizeof *w);
  if (!w)
    return MHD_NO;
  w->e = r->e;
  w->fd = envd_conn_fd(r->c);
  w->next_ms = envd_now_ms() + WATCH_EVERY_MS;
  struct envd_metrics_sample first;
  envd_metrics_read(r->e, &w->prev, &first); /* starts the stream's own CPU series */
  struct MHD_Response *resp =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, watch_cb, w, watch_free);
  if (!resp) {
    watch_free(w);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type", "text/event-stream");
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  MHD_add_response_header(resp, "X-Accel-Buffering", "no");
  enum MHD_Result ok = MHD_queue_response(r->c, 200, resp);
  MHD_destroy_response(resp);
  return ok;
}
