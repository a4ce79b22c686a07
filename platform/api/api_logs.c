/*
 * api_logs.c: a sandbox's logs (the entries of sandbox_log.h).
 *
 * Routes:  GET /sandboxes/{id}/logs?start&limit (deprecated) -> 200 {logs: [{timestamp, line}],
 *          logEntries: [SandboxLogEntry]}; GET /v2/sandboxes/{id}/logs?cursor&limit&direction&
 *          level&search -> 200 {logs: [SandboxLogEntry]} (docs/protocol/e2b-control-plane.md §3.4,
 *          the two logs rows; SandboxLogEntry {timestamp, level, message, fields} §3.3).
 * Query:   start / cursor: Unix milliseconds, entries at or after it (forward) or at or before it
 *          (backward); limit: 0..1000 (default 1000; the reference gives v2's bound, v1 takes the
 *          same); direction: forward (default, oldest first) or backward (newest first); level:
 *          debug, info, warn or error, entries of that level or above; search: at most 256 bytes,
 *          entries whose message contains it. v1's `line` is the entry's message.
 * Errors:  400 naming the parameter and its valid values, 404 for an unknown sandbox (running or
 *          paused sandboxes have logs; a killed one is gone, its log with it).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_internal.h"
#include "util/util.h"
#include "sandbox/sandbox.h"

#define LOGS_MAX_LIMIT 1000
#define LOGS_MAX_SEARCH 256

static const char *const LEVELS[] = {"debug", "info", "warn", "error"};

static int level_rank(const char *l)
{
  for (int i = 0; i < 4; i++)
    if (l && strcmp(l, LEVELS[i]) == 0)
      return i;
  return -1;
}

/* Query parameter `name` as a non-negative integer in [0, max] (unchanged when absent). 0, or -1
 * when present and not one. */
static int query_uint(struct abx_api_req *r, const char *name, long long max, long long *out)
{
  const char *q = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, name);
  if (!q)
    return 0;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(q, &end, 10);
  if (!*q || *end || errno == ERANGE || v < 0 || v > max)
    return -1;
  *out = v;
  return 0;
}

static enum MHD_Result logs(struct abx_api_req *r, int v2)
{
  char id[32], msg[200];
  enum MHD_Result sent = MHD_NO;
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  long long since = -1, limit = LOGS_MAX_LIMIT;
  const char *cursor_name = v2 ? "cursor" : "start";
  if (query_uint(r, cursor_name, INT64_MAX / 1000000, &since) != 0) {
    snprintf(msg, sizeof msg,
             "validation error: query parameter '%s' must be a non-negative "
             "integer (Unix milliseconds)",
             cursor_name);
    return abx_http_error(r->c, 400, msg);
  }
  if (query_uint(r, "limit", LOGS_MAX_LIMIT, &limit) != 0)
    return abx_http_error(r->c, 400,
                          "validation error: query parameter 'limit' must be an "
                          "integer from 0 to 1000");
  int backward = 0, min_level = 0;
  const char *search = NULL;
  if (v2) {
    const char *d = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "direction");
    if (d && strcmp(d, "forward") != 0 && strcmp(d, "backward") != 0)
      return abx_http_error(r->c, 400,
                            "validation error: query parameter 'direction' must be "
                            "'forward' or 'backward'");
    backward = d && strcmp(d, "backward") == 0;
    const char *l = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "level");
    if (l && (min_level = level_rank(l)) < 0)
      return abx_http_error(r->c, 400,
                            "validation error: query parameter 'level' must be one of "
                            "debug, info, warn, error");
    search = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "search");
    if (search && strlen(search) > LOGS_MAX_SEARCH)
      return abx_http_error(r->c, 400,
                            "validation error: query parameter 'search' is longer "
                            "than 256 characters");
  }
  char dir[4096] = "";
  abx_registry_lock();
  struct abx_sandbox *sb = abx_registry_find(id);
  if (sb && sb->dir)
    snprintf(dir, sizeof dir, "%s", sb->dir);
  abx_registry_unlock();
  if (!dir[0])
    return abx_api_not_found(r->c, id);
  json_t *all = abx_sandbox_log_read(dir), *out = json_array(), *lines = json_array();
  if (!all || !out || !lines) {
    json_decref(all), json_decref(out), json_decref(lines);
    return abx_http_error(r->c, 500, "out of memory");
  }
  size_t n = json_array_size(all);
  for (size_t k = 0; k < n && json_array_size(out) < (size_t)limit; k++) {
    json_t *e = json_array_get(all, backward ? n - 1 - k : k);
    int64_t ns = 0;
    if (abx_rfc3339_parse(json_string_value(json_object_get(e, "timestamp")), &ns) != 0)
      continue;
    long long ms = (long long)(ns / 1000000);
    if (since >= 0 && (backward ? ms > since : ms < since))
      continue;
    if (level_rank(json_string_value(json_object_get(e, "level"))) < min_level)
      continue;
    const char *m = json_string_value(json_object_get(e, "message"));
    if (search && !strstr(m, search))
      continue;
    json_array_append(out, e);
    json_array_append_new(
        lines, json_pack("{s:O,s:s}", "timestamp", json_object_get(e, "timestamp"), "line", m));
  }
  json_decref(all);
  if (v2) {
    json_decref(lines);
    return abx_http_json(r->c, 200, json_pack("{s:o}", "logs", out));
  }
  return abx_http_json(r->c, 200, json_pack("{s:o,s:o}", "logs", lines, "logEntries", out));
}

enum MHD_Result abx_api_sandbox_logs(struct abx_api_req *r)
{
  return logs(r, 0);
}

enum MHD_Result abx_api_sandbox_logs_v2(struct abx_api_req *r)
{
  return logs(r, 1);
}
