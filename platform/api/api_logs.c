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
 *          entries whose message contains it.
 * Shapes:  as E2B's API answers them (e2b_line, e2b_entry below): v1's `line` is a JSON object
 *          text {timestamp, level, message, logger, service, sandboxID, instanceID, envID, and the
 *          entry's fields}, the line E2B's orchestrator writes and `e2b sandbox logs` parses
 *          (JSON.parse); an entry's `fields` are that line less timestamp, level and message.
 * Errors:  400 naming the parameter and its valid values, 404 for a sandbox this serve never ran
 *          (running and paused sandboxes have logs; a killed one's log is kept, sandbox_log.h
 *          abx_sandbox_log_keep, and answered without envID, as E2B answers a killed sandbox's).
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

struct logs_query {
  long long since, limit; /* since: Unix ms or -1 */
  int backward, min_level;
  const char *search;
};

/* The query of a logs request into q. 0, or -1 with the 400 sent (*sent its result). */
static int logs_query(struct abx_api_req *r, int v2, struct logs_query *q, enum MHD_Result *sent)
{
  char msg[200];
  const char *cursor_name = v2 ? "cursor" : "start";
  *q = (struct logs_query){.since = -1, .limit = LOGS_MAX_LIMIT};
  if (query_uint(r, cursor_name, INT64_MAX / 1000000, &q->since) != 0) {
    snprintf(msg, sizeof msg,
             "validation error: query parameter '%s' must be a non-negative "
             "integer (Unix milliseconds)",
             cursor_name);
    *sent = abx_http_error(r->c, 400, msg);
    return -1;
  }
  const char *bad = NULL;
  if (query_uint(r, "limit", LOGS_MAX_LIMIT, &q->limit) != 0)
    bad = "validation error: query parameter 'limit' must be an integer from 0 to 1000";
  if (v2 && !bad) {
    const char *d = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "direction");
    const char *l = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "level");
    q->search = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "search");
    q->backward = d && strcmp(d, "backward") == 0;
    if (d && strcmp(d, "forward") != 0 && !q->backward)
      bad = "validation error: query parameter 'direction' must be 'forward' or 'backward'";
    else if (l && (q->min_level = level_rank(l)) < 0)
      bad = "validation error: query parameter 'level' must be one of debug, info, warn, error";
    else if (q->search && strlen(q->search) > LOGS_MAX_SEARCH)
      bad = "validation error: query parameter 'search' is longer than 256 characters";
  }
  if (!bad)
    return 0;
  *sent = abx_http_error(r->c, 400, bad);
  return -1;
}

/* Stored entry `e` (sandbox_log.h) of sandbox `id` from template `tmpl` as E2B's orchestrator
 * writes a sandbox log line: one flat JSON object with zap's keys (timestamp, level, message,
 * logger) and the sandbox's labels (sandboxID, instanceID, envID, service; E2B's Vector adds
 * teamID, which serve has no notion of), then the entry's own string fields. Sources:
 * e2b-dev/infra packages/shared/pkg/logger/sandbox/logger.go (GetSandboxEncoderConfig, the
 * `logger` field), sandbox/metadata.go (instanceID, envID), e2b-dev/E2B packages/cli
 * src/commands/sandbox/logs.ts @ b8029973 (printLog: JSON.parse(line), level, logger; drops
 * the labels). A new object; NULL when out of memory. */
static json_t *e2b_line(json_t *e, const char *id, const char *tmpl)
{
  json_t *line = json_pack("{s:O,s:O,s:O,s:s,s:s,s:s,s:s}", "timestamp",
                           json_object_get(e, "timestamp"), "level", json_object_get(e, "level"),
                           "message", json_object_get(e, "message"), "logger", "orchestrator",
                           "service", "orchestrator", "sandboxID", id, "instanceID", id);
  if (line && tmpl[0]) /* a killed sandbox's template is no longer known here */
    json_object_set_new(line, "envID", json_string(tmpl));
  const char *k;
  json_t *v;
  json_object_foreach(json_object_get(e, "fields"), k, v)
  {
    if (line && json_is_string(v) && !json_object_get(line, k))
      json_object_set(line, k, v);
  }
  return line;
}

/* SandboxLogEntry of a line: {timestamp, level, message, fields: every other key of the line},
 * as E2B's API maps a line (e2b-dev/infra packages/shared/pkg/logs/loki/loki.go ResponseMapper:
 * fields less message and level; the timestamp is the entry's own). NULL when out of memory. */
static json_t *e2b_entry(json_t *line)
{
  json_t *fields = json_deep_copy(line);
  if (!fields)
    return NULL;
  json_t *e =
      json_pack("{s:O,s:O,s:O}", "timestamp", json_object_get(line, "timestamp"), "level",
                json_object_get(line, "level"), "message", json_object_get(line, "message"));
  json_object_del(fields, "timestamp");
  json_object_del(fields, "level");
  json_object_del(fields, "message");
  if (!e || json_object_set_new(e, "fields", fields) != 0) {
    json_decref(e);
    return NULL;
  }
  return e;
}

/* Whether stored entry `e` passes the query q (time, level, search). */
static int logs_keep(json_t *e, const struct logs_query *q)
{
  int64_t ns = 0;
  if (abx_rfc3339_parse(json_string_value(json_object_get(e, "timestamp")), &ns) != 0)
    return 0;
  long long ms = (long long)(ns / 1000000);
  if (q->since >= 0 && (q->backward ? ms > q->since : ms < q->since))
    return 0;
  if (level_rank(json_string_value(json_object_get(e, "level"))) < q->min_level)
    return 0;
  const char *m = json_string_value(json_object_get(e, "message"));
  return !q->search || (m && strstr(m, q->search));
}

static enum MHD_Result logs(struct abx_api_req *r, int v2)
{
  char id[32], dir[4096] = "", tmpl[64] = "";
  enum MHD_Result sent = MHD_NO;
  struct logs_query q;
  if (abx_api_sandbox_id(r, id, &sent) != 0 || logs_query(r, v2, &q, &sent) != 0)
    return sent;
  abx_registry_lock();
  struct abx_sandbox *sb = abx_registry_find(id);
  if (sb && sb->dir) {
    snprintf(dir, sizeof dir, "%s", sb->dir);
    snprintf(tmpl, sizeof tmpl, "%s", sb->template_id);
  }
  abx_registry_unlock();
  /* a killed sandbox's log is kept (sandbox_log.h): E2B answers it too */
  json_t *all = dir[0] ? abx_sandbox_log_read(dir) : abx_sandbox_log_read_kept(id);
  if (!all && !dir[0])
    return abx_api_not_found(r->c, id);
  json_t *out = json_array(), *lines = json_array();
  int oom = !all || !out || !lines;
  size_t n = json_array_size(all);
  for (size_t k = 0; !oom && k < n && json_array_size(out) < (size_t)q.limit; k++) {
    json_t *e = json_array_get(all, q.backward ? n - 1 - k : k);
    if (!logs_keep(e, &q))
      continue;
    json_t *line = e2b_line(e, id, tmpl), *entry = line ? e2b_entry(line) : NULL;
    char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
    oom = !entry || !text;
    if (!oom) {
      json_array_append_new(out, entry), entry = NULL;
      json_array_append_new(lines, json_pack("{s:O,s:s}", "timestamp",
                                             json_object_get(e, "timestamp"), "line", text));
    }
    json_decref(line), json_decref(entry), free(text);
  }
  json_decref(all);
  if (oom) {
    json_decref(out), json_decref(lines);
    return abx_http_error(r->c, 500, "out of memory");
  }
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
