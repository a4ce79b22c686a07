/*
 * mutant.c: the mutant catalogue of `abxlua serve --mutant` and the set turned on (contract and
 * sources in mutant.h; the table is documented row by row in docs/mutants.md).
 */
#include "mutant.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define END NULL

/* The flavours of E2B's family (flavor.h): the api mutants change the E2B front and the ingress
 * mutants requests to envd's port (49983); OpenSandbox's own API and execd port have neither. */
#define E2B_FAMILY "e2b", "alicloud-fc", "alicloud-express", "acs", "cubesandbox"
static const char *const e2b_family[] = {E2B_FAMILY, END};
/* envd's lies reach OpenSandbox's execd routes too (envd's execd*.c serve them from the same
 * process table and files): every flavour. */
static const char *const every_flavor[] = {E2B_FAMILY, "opensandbox", END};
/* Pause is behind an allowlist on Alibaba's flavours (flavor.h pause_needs_allowlist): no paused
 * sandbox to resume there. */
static const char *const can_pause[] = {"e2b", "acs", "cubesandbox", END};
static const char *const nothing[] = {END};
static const char *const pause_cap[] = {"pause", END};

#define CUBE "https://github.com/TencentCloud/CubeSandbox/"
#define KRUISE "https://github.com/openkruise/agents/"
#define OSB "https://github.com/opensandbox-group/OpenSandbox/"
#define ISSUE27 "abxlua issue 27"

/* One row each, indexed by enum abx_mutant (tests/platform/test_mutants.py checks that `--mutant
 * list` names all 18 with every field filled). */
static const struct abx_mutant_row rows[ABX_MUT_COUNT] = {
    [ABX_MUT_RESUME_NOOP] = {"resume-noop", CUBE "issues/13 " CUBE "issues/221",
                             "POST /sandboxes/{id}/resume, /connect and /v2/sandboxes/{id}/connect "
                             "of a paused sandbox answer as if it resumed (the resumed status and "
                             "the Sandbox); it stays paused",
                             can_pause, pause_cap, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_KILL_NOOP] = {"kill-noop", KRUISE "issues/535",
                           "DELETE /sandboxes/{id} of a sandbox answers 204; nothing is killed",
                           e2b_family, nothing, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_SET_TIMEOUT_NOOP] = {"set-timeout-noop", ISSUE27,
                                  "POST /sandboxes/{id}/timeout answers 204; the TTL (endAt) is "
                                  "unchanged",
                                  e2b_family, nothing, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_NEXT_TOKEN_IGNORED] = {"next-token-ignored", CUBE "issues/1792",
                                    "GET /v2/sandboxes ignores nextToken: every page is the first, "
                                    "with X-Next-Token whenever more rows follow it",
                                    e2b_family, nothing, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_METADATA_FILTER_IGNORED] = {"metadata-filter-ignored", "agent-sandbox PR#11",
                                         "GET /sandboxes and GET /v2/sandboxes ignore the metadata "
                                         "filter (a filter that matches nothing returns every "
                                         "sandbox)",
                                         e2b_family, nothing, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_STATE_FILTER_IGNORED] = {"state-filter-ignored", CUBE "issues/177",
                                      "GET /v2/sandboxes ignores the state filter (running and "
                                      "paused sandboxes are listed whatever it asks)",
                                      e2b_family, nothing, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_END_AT_MISSING] =
        {"end-at-missing", CUBE "pull/862",
         "the sandbox JSON of GET /sandboxes/{id}, GET /sandboxes and GET "
         "/v2/sandboxes lacks endAt (create and connect answers have none in "
         "E2B's shape either)",
         e2b_family, nothing, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_METADATA_DROPPED] = {"metadata-dropped", ISSUE27,
                                  "create stores no metadata: get and list show metadata {} (and "
                                  "a metadata filter matches nothing of it)",
                                  e2b_family, nothing, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_CONNECT_SHORTENS_TTL] = {"connect-shortens-ttl", KRUISE "issues/304",
                                      "connect (v1 and v2) sets the TTL to now + its timeout even "
                                      "when that is shorter than the TTL the sandbox had",
                                      e2b_family, nothing, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_V2_ROUTES_405] = {"v2-routes-405", CUBE "issues/1784",
                               "POST /v2/sandboxes and GET /v2/sandboxes answer 405 {code, "
                               "message: method not allowed}",
                               e2b_family, nothing, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_CREATE_BEFORE_READY] = {"create-before-ready", ISSUE27,
                                     "create answers before envd is ready: envd requests of a new "
                                     "sandbox (through the ingress) answer a bare HTML 502 for the "
                                     "first 2 s after its create (or fork) answered",
                                     e2b_family, nothing, ABX_MUT_LAYER_API, 0, 0, 0},
    [ABX_MUT_TRANSIENT_502] = {"transient-502", "https://github.com/e2b-dev/E2B/issues/1262",
                               "1 in N envd requests through the ingress (default 2, NAME:N, N "
                               "1..1000; drawn from the request's number over all sandboxes by a "
                               "fixed function, so a run is reproducible) is answered with a bare "
                               "text/html " ABX_MUT_BARE_502 " and not forwarded",
                               e2b_family, nothing, ABX_MUT_LAYER_INGRESS, 2, 1, 1000},
    [ABX_MUT_BINARY_READ_MANGLED] = {"binary-read-mangled", CUBE "issues/1570",
                                     "file reads (envd's GET /files, execd's GET /files/download) "
                                     "come back with every invalid UTF-8 byte replaced by U+FFFD",
                                     every_flavor, nothing, ABX_MUT_LAYER_ENVD, 0, 0, 0},
    [ABX_MUT_LARGE_UPLOAD_DROPPED] = {"large-upload-dropped", OSB "issues/1016",
                                      "an upload (envd's POST /files, execd's POST /files/upload) "
                                      "over 18 KiB answers success and writes nothing",
                                      every_flavor, nothing, ABX_MUT_LAYER_ENVD, 0, 0, 0},
    [ABX_MUT_EXIT_CODE_ZERO] = {"exit-code-zero", ISSUE27,
                                "every process end event (execd's execution_complete) reports "
                                "exit code 0",
                                every_flavor, nothing, ABX_MUT_LAYER_ENVD, 0, 0, 0},
    [ABX_MUT_STDERR_AS_STDOUT] = {"stderr-as-stdout", ISSUE27,
                                  "a process's stderr data is sent as stdout", every_flavor,
                                  nothing, ABX_MUT_LAYER_ENVD, 0, 0, 0},
    [ABX_MUT_STREAM_NO_END] = {"stream-no-end", OSB "issues/1277",
                               "a process stream (envd's Start and Connect, execd's command "
                               "SSE) never sends its end event (it stays open)",
                               every_flavor, nothing, ABX_MUT_LAYER_ENVD, 0, 0, 0},
    [ABX_MUT_COMMAND_TAIL_1S] = {"command-tail-1s", OSB "issues/1661",
                                 "every process's end event is sent 1 s after the process ended",
                                 every_flavor, nothing, ABX_MUT_LAYER_ENVD, 0, 0, 0},
};

/* What is on: 0 off, else 1 + the parameter (a row without one: 1). Set before serving. */
static long g_on[ABX_MUT_COUNT];

const struct abx_mutant_row *abx_mutant_row(enum abx_mutant m)
{
  return (unsigned)m < ABX_MUT_COUNT ? &rows[m] : NULL;
}

const char *abx_mutant_layer_name(enum abx_mutant_layer layer)
{
  static const char *const names[] = {"api", "ingress", "envd"};
  return (unsigned)layer < 3 ? names[layer] : "?";
}

const char *abx_mutant_names(void)
{
  static char names[ABX_MUT_COUNT * 32];
  if (!names[0])
    for (int m = 0; m < ABX_MUT_COUNT; m++) {
      size_t k = strlen(names);
      snprintf(names + k, sizeof names - k, "%s%s", m ? "|" : "", rows[m].name);
    }
  return names;
}

static int listed(const char *const *list, const char *s)
{
  for (; *list; list++)
    if (strcmp(*list, s) == 0)
      return 1;
  return 0;
}

/* `a, b, c` of a NULL-terminated list into buf. */
static void join(const char *const *list, char *buf, size_t n)
{
  buf[0] = 0;
  for (size_t k = 0; *list; list++, k = strlen(buf))
    snprintf(buf + k, n - k, "%s%s", k ? ", " : "", *list);
}

/* One piece "NAME[:N]" of a --mutant list, checked, into *m and *value (1 + N, or 1). 0, or -1
 * with msg. */
static int parse_one(const char *piece, const char *flavor, unsigned layers, enum abx_mutant *m,
                     long *value, char *msg, size_t n)
{
  size_t len = strcspn(piece, ":");
  int found = -1;
  for (int i = 0; i < ABX_MUT_COUNT && found < 0; i++)
    if (strlen(rows[i].name) == len && strncmp(rows[i].name, piece, len) == 0)
      found = i;
  if (found < 0 || !(layers & (1u << rows[found].layer))) {
    snprintf(msg, n, "unknown mutant '%.*s'%s: valid mutants are %s", (int)(len > 64 ? 64 : len),
             piece, found < 0 ? "" : " here", abx_mutant_names());
    return -1;
  }
  const struct abx_mutant_row *r = &rows[found];
  if (flavor && !listed(r->flavors, flavor)) {
    char fl[200];
    join(r->flavors, fl, sizeof fl);
    snprintf(msg, n, "mutant %s does not apply to the flavor %s (it applies to: %s)", r->name,
             flavor, fl);
    return -1;
  }
  *m = (enum abx_mutant)found;
  *value = 1 + r->param_default;
  if (!piece[len])
    return 0;
  char *end = NULL;
  errno = 0;
  long v = strtol(piece + len + 1, &end, 10);
  if (!r->param_default) {
    snprintf(msg, n, "mutant %s takes no parameter (':%.32s')", r->name, piece + len + 1);
    return -1;
  }
  if (!piece[len + 1] || *end || errno || v < r->param_min || v > r->param_max) {
    snprintf(msg, n, "mutant %s: the parameter N of %s:N must be an integer %ld..%ld, got '%.32s'",
             r->name, r->name, r->param_min, r->param_max, piece + len + 1);
    return -1;
  }
  *value = 1 + v;
  return 0;
}

int abx_mutant_enable(const char *list, const char *flavor, unsigned layers, char *msg, size_t n)
{
  long next[ABX_MUT_COUNT];
  memcpy(next, g_on, sizeof next);
  char *dup = strdup(list ? list : "");
  if (!dup) {
    snprintf(msg, n, "out of memory");
    return -1;
  }
  int rc = 0;
  for (char *p = dup, *comma = dup; rc == 0 && comma; p = comma + 1) {
    if ((comma = strchr(p, ',')))
      *comma = 0;
    enum abx_mutant m = ABX_MUT_COUNT;
    long value = 0;
    if (!*p) {
      snprintf(msg, n, "an empty mutant name in '%.64s': give NAME[:N][,NAME...] (valid: %s)",
               list ? list : "", abx_mutant_names());
      rc = -1;
    } else if (parse_one(p, flavor, layers, &m, &value, msg, n) != 0) {
      rc = -1;
    } else if (next[m]) {
      snprintf(msg, n, "mutant %s is named twice", rows[m].name);
      rc = -1;
    } else {
      next[m] = value;
    }
  }
  free(dup);
  if (rc == 0)
    memcpy(g_on, next, sizeof g_on);
  return rc;
}

int abx_mutant_on(enum abx_mutant m)
{
  return (unsigned)m < ABX_MUT_COUNT && g_on[m] != 0;
}

long abx_mutant_param(enum abx_mutant m)
{
  return abx_mutant_on(m) && rows[m].param_default ? g_on[m] - 1 : 0;
}

int abx_mutant_names_on(unsigned layers, const char *sep, int with_param, char *buf, size_t n)
{
  int count = 0;
  buf[0] = 0;
  for (int m = 0; m < ABX_MUT_COUNT; m++) {
    if (!g_on[m] || !(layers & (1u << rows[m].layer)))
      continue;
    size_t k = strlen(buf);
    if (with_param && rows[m].param_default)
      snprintf(buf + k, n - k, "%s%s:%ld", count ? sep : "", rows[m].name, g_on[m] - 1);
    else
      snprintf(buf + k, n - k, "%s%s", count ? sep : "", rows[m].name);
    count++;
  }
  return count;
}

static json_t *string_array(const char *const *list)
{
  json_t *a = json_array();
  for (; a && *list; list++)
    json_array_append_new(a, json_string(*list));
  return a;
}

char *abx_mutant_catalogue_json(void)
{
  json_t *arr = json_array();
  for (int m = 0; arr && m < ABX_MUT_COUNT; m++) {
    const struct abx_mutant_row *r = &rows[m];
    json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:s}", "name", r->name, "source", r->source, "wire",
                          r->wire, "flavors", string_array(r->flavors), "requires",
                          string_array(r->requires), "layer", abx_mutant_layer_name(r->layer));
    if (o && r->param_default)
      json_object_set_new(o, "parameter",
                          json_pack("{s:I,s:I,s:I}", "default", (json_int_t)r->param_default, "min",
                                    (json_int_t)r->param_min, "max", (json_int_t)r->param_max));
    if (!o || json_array_append_new(arr, o) != 0) {
      json_decref(arr);
      return NULL;
    }
  }
  char *s = arr ? json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
  json_decref(arr);
  char *out = s ? realloc(s, strlen(s) + 2) : NULL;
  if (!out) {
    free(s);
    return NULL;
  }
  strcat(out, "\n");
  return out;
}
