/*
 * api_metrics.c: GET /sandboxes/{id}/metrics[?start=&end=]. Contract in api.h; the samples are
 * metrics.h's.
 *
 * Query:   start, end: integer Unix seconds, each optional; a sample is returned when
 *          start <= its timestampUnix <= end. An absent bound is open, so no query returns every
 *          sample kept, as E2B returns the sandbox's whole lifetime (e2b-dev/infra
 *          packages/clickhouse/pkg/utils/sandbox.go GetSandboxStartEndTime: absent start/end =
 *          the sandbox's own start/end). The SDK sends both as integers
 *          (docs/protocol/e2b-control-plane.md §3.4 metrics row).
 * Errors:  400 naming the parameter when one is not an integer, 400 when start > end (E2B:
 *          "start time cannot be after end time", infra clickhouse/pkg/utils/validate.go), 404
 *          when the sandbox is unknown. 200 [] before the first sample (never for a started one).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "api.h"
#include "api_internal.h"
#include "util/util.h"
#include "sandbox/sandbox.h"

/* Query parameter `name` as int64 seconds into *out (unchanged when absent). 0, or -1 when it is
 * present but not a decimal integer in range. */
static int query_s(struct abx_api_req *r, const char *name, int64_t *out)
{
  const char *q = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, name);
  if (!q)
    return 0;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(q, &end, 10);
  if (!*q || *end || errno == ERANGE)
    return -1;
  *out = (int64_t)v;
  return 0;
}

enum MHD_Result abx_api_sandbox_metrics(struct abx_api_req *r)
{
  char id[32], msg[160];
  enum MHD_Result sent = MHD_NO;
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  int64_t start = INT64_MIN, end = INT64_MAX;
  static const char *const names[] = {"start", "end"};
  for (int i = 0; i < 2; i++)
    if (query_s(r, names[i], i ? &end : &start) != 0) {
      snprintf(msg, sizeof msg,
               "validation error: query parameter '%s' must be an integer (Unix seconds)",
               names[i]);
      return abx_http_error(r->c, 400, msg);
    }
  if (start > end) {
    snprintf(msg, sizeof msg, "validation error: 'start' (%lld) cannot be after 'end' (%lld)",
             (long long)start, (long long)end);
    return abx_http_error(r->c, 400, msg);
  }
  abx_registry_lock();
  int known = abx_registry_find(id) != NULL;
  abx_registry_unlock();
  if (!known)
    return abx_api_not_found(r->c, id);
  json_t *arr = abx_metrics_json(id, start, end);
  if (!arr)
    return abx_http_error(r->c, 500, "out of memory");
  size_t i;
  json_t *row;
  if (abx_flavor()->metrics_cpu_mem_only) /* FC: "disk and page-cache fields are placeholders" */
    json_array_foreach(arr, i, row)
    {
      json_object_set_new(row, "memCache", json_integer(0));
      json_object_set_new(row, "diskUsed", json_integer(0));
      json_object_set_new(row, "diskTotal", json_integer(0));
    }
  return abx_http_json(r->c, 200, arr);
}
