/*
 * api_internal.h: what the control-plane files share: the request record, the route table's
 * handler type, body/field parsing, id validation and the sandbox shapes.
 *
 * Files:   api.c (route table, dispatch, auth, these helpers), api_sandboxes.c (create, list,
 *          get, kill, timeout), api_lifecycle.c (connect, resume, pause, refreshes),
 *          api_metrics.c (metrics), api_snapshots.c (snapshots, DELETE /templates), api_fork.c
 *          (fork), api_volumes.c (volumes), api_logs.c (logs), api_apikeys.c (managed API
 *          keys). A new route = one row in api.c's table plus a handler.
 * Shapes:  docs/protocol/e2b-control-plane.md §3.3 (Sandbox, ListedSandbox, SandboxDetail); errors
 *          {"code":<status>,"message"} (§2).
 * Errors:  helpers that can fail queue the error answer themselves and report it through *sent.
 */
#ifndef ABX_API_API_INTERNAL_H
#define ABX_API_API_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>

#include "sandbox/sandbox.h"

#define ABX_API_MAX_PARAMS 2

/* One control-plane request as the handlers see it. params[i] are the raw path segments matched
 * by "{...}" in the route pattern, at most 127 bytes (longer segments get 400), percent-decoded
 * by abx_api_handle before the handler runs. */
struct abx_api_req {
  struct MHD_Connection *c;
  const char *method; /* "HEAD" is reported as "GET" */
  const char *url;
  const char *body; /* may be NULL */
  size_t len;
  char params[ABX_API_MAX_PARAMS][128];
};

typedef enum MHD_Result (*abx_api_fn)(struct abx_api_req *r);

/* One row of the route table: method ("GET" also serves HEAD), path pattern ("{x}" matches one
 * non-empty segment) and handler. */
struct abx_api_route {
  const char *method;
  const char *pattern;
  abx_api_fn fn;
};

/* api.c's route table, in matching order (the first row whose pattern and method fit wins). */
extern const struct abx_api_route abx_api_routes[];
extern const size_t abx_api_nroutes;

/* Match `url` (a path without the query) against `pattern`, segment by segment. Returns 1 when
 * it matches, with r->params[i] set to the segment in the i-th "{x}" place (NUL-terminated); 0
 * when it does not (r->params may be partly written); -1 when a segment standing in a "{x}"
 * place is 128 bytes or longer, which is reported as soon as it is met, before the rest of the
 * path is compared. Only r->params is touched. Extern for tests/fuzz/fuzz_api_route.c. */
int abx_api_match(const char *pattern, const char *url, struct abx_api_req *r);

/* Find the route for `method` ("HEAD" already given as "GET") and `url`: 0 with *route set and
 * r->params filled; 404 when no pattern matches the path; 405 when one does but for other
 * methods; 400 when abx_api_match gave -1 (a parameter too long) on the way. Extern for
 * tests/fuzz/fuzz_api_route.c; abx_api_handle turns the statuses into error answers. */
int abx_api_lookup(const char *method, const char *url, struct abx_api_req *r,
                   const struct abx_api_route **route);

/* Parse a JSON object body. An absent body gives {} unless `required`. On failure queues 400,
 * stores MHD's result in *sent and returns NULL. */
json_t *abx_api_body(struct abx_api_req *r, int required, enum MHD_Result *sent);

/* Integer field: 1 present (*out set), 0 absent or null, -1 wrong type (integral reals accepted). */
int abx_api_get_int(json_t *o, const char *key, long long *out);

/* A {timeout} body (seconds; negative counts as 0; above ABX_MAX_TIMEOUT_S a 400, never a silent
 * clamp). With `required` the body and the field must be there; otherwise *t keeps its default
 * when absent. 0, or -1 with a 400 queued (*sent). */
int abx_api_timeout_body(struct abx_api_req *r, int required, long long *t, enum MHD_Result *sent);

/* Field `key` absent/null or an object of strings (0), else -1 with a validation message. */
int abx_api_check_str_map(json_t *o, const char *key, char *msg, size_t n);

/* Field `key` absent/null or a boolean (0), else -1 with a validation message. */
int abx_api_check_bool(json_t *o, const char *key, char *msg, size_t n);

/* The `metadata` filter of GET /sandboxes and /v2/sandboxes: a query string "k=v&k2=v2" (split
 * at the first '='; keys and values percent-decoded with '+' a space, then, when key and value
 * both survive a second %XX decoding, that result, as the SDKs quote() before urlencode()) into
 * a new object {key: value}. Empty pieces between '&' are skipped, the last of repeated keys
 * wins, q NULL gives {}. NULL when a piece has no '=', a bad escape or an empty key. A pair whose
 * key or value is not UTF-8 is left out of the object (jansson refuses it), which widens the
 * filter. Extern for tests/fuzz/fuzz_api_route.c. */
json_t *abx_api_parse_metadata_filter(const char *q);

/* Sandbox id from a path segment: drop a legacy "-<clientID>" suffix, require ^[a-z0-9]+$
 * (§2 "Sandbox ID"). Returns 0 or -1. */
int abx_api_parse_id(const char *seg, char out[32]);

/* params[0] as a sandbox id into out; on a malformed id queues 400 "Invalid sandbox ID". */
int abx_api_sandbox_id(struct abx_api_req *r, char out[32], enum MHD_Result *sent);

/* 404 with the standard message: Sandbox "<id>" doesn't exist or you don't have access to it. */
enum MHD_Result abx_api_not_found(struct MHD_Connection *c, const char *id);

/* 403 {code, message} "<what> needs an allowlist on <flavor>...": Alibaba's pause/resume and
 * Flash's snapshots (docs/protocol/e2b-control-plane.md §8.1). The reference gives no status or
 * body for this refusal; the shape is ours (flavor.h). Defined in api_lifecycle.c. */
enum MHD_Result abx_api_allowlist_refusal(struct abx_api_req *r, const char *what);

/* Queue a 200 JSON array (stolen) with X-Next-Token when `next` is not NULL (§2 Pagination) and
 * X-Total-Running when total_running ≥ 0 (GET /v2/sandboxes with `running` requested, §3.4). */
enum MHD_Result abx_api_page(struct MHD_Connection *c, json_t *arr, const char *next,
                             long total_running);

/* Shapes (§3.3). Under the registry lock, or on a sandbox not yet listed. */
json_t *abx_api_sandbox_json(const struct abx_sandbox *sb);
json_t *abx_api_listed_json(const struct abx_sandbox *sb, int detail);

/* A TTL in seconds as create, connect, resume, timeout and fork take it: 0 when 1..max, else -1
 * with E2B's 400 message in msg ("Timeout must be greater than 0" for ≤ 0, "Timeout cannot be
 * greater than 24 hours" above ABX_MAX_TIMEOUT_S; infra handlers/timeout_helper.go as quoted in
 * docs/protocol/e2b-control-plane.md §3.2 and docs/protocol/e2b-v2-and-peers.md §1.2-1.3). */
int abx_api_check_timeout(long long t, char *msg, size_t n);

/* api_sandboxes.c: create is POST /sandboxes (v1: timeout 15 s, `secure` as sent) and
 * POST /v2/sandboxes (timeout 300 s, always secured); docs/protocol/e2b-v2-and-peers.md §1.2. */
enum MHD_Result abx_api_sandbox_create(struct abx_api_req *r);
enum MHD_Result abx_api_sandbox_create_v2(struct abx_api_req *r);
enum MHD_Result abx_api_sandbox_list(struct abx_api_req *r);
enum MHD_Result abx_api_sandbox_list_v2(struct abx_api_req *r);
enum MHD_Result abx_api_sandbox_get(struct abx_api_req *r);
enum MHD_Result abx_api_sandbox_kill(struct abx_api_req *r);
enum MHD_Result abx_api_sandbox_timeout(struct abx_api_req *r);

/* api_lifecycle.c */
enum MHD_Result abx_api_sandbox_connect(struct abx_api_req *r);
enum MHD_Result abx_api_sandbox_resume(struct abx_api_req *r);
/* POST /v2/sandboxes/{id}/connect (optional body {timeout?=300, memory?}; 200 running, TTL only
 * extended; 201 resumed; timeout 0 → 400; docs/protocol/e2b-v2-and-peers.md §1.3). */
enum MHD_Result abx_api_sandbox_connect_v2(struct abx_api_req *r);
enum MHD_Result abx_api_sandbox_pause(struct abx_api_req *r);
enum MHD_Result abx_api_sandbox_refreshes(struct abx_api_req *r);

/* api_metrics.c */
enum MHD_Result abx_api_sandbox_metrics(struct abx_api_req *r);
/* GET /sandboxes/{id}/logs and GET /v2/sandboxes/{id}/logs (api_logs.c: query, shapes, errors). */
enum MHD_Result abx_api_sandbox_logs(struct abx_api_req *r);
enum MHD_Result abx_api_sandbox_logs_v2(struct abx_api_req *r);

/* api_snapshots.c */
enum MHD_Result abx_api_snapshot_create(struct abx_api_req *r);
enum MHD_Result abx_api_snapshot_list(struct abx_api_req *r);
enum MHD_Result abx_api_template_delete(struct abx_api_req *r);

/* api_templates.c: the template build API (template_build.h; docs/protocol/e2b-v2-and-peers.md
 * §2) */
enum MHD_Result abx_api_template_request(struct abx_api_req *r);
enum MHD_Result abx_api_template_files(struct abx_api_req *r);
enum MHD_Result abx_api_template_build_start(struct abx_api_req *r);
enum MHD_Result abx_api_template_build_status(struct abx_api_req *r);
enum MHD_Result abx_api_template_build_logs(struct abx_api_req *r);
/* PATCH /templates/{id} and PATCH /v2/templates/{id} {public} (api_templates.c: shapes, errors). */
enum MHD_Result abx_api_template_update(struct abx_api_req *r);
enum MHD_Result abx_api_template_update_v2(struct abx_api_req *r);
enum MHD_Result abx_api_template_tags_assign(struct abx_api_req *r);
enum MHD_Result abx_api_template_tags_delete(struct abx_api_req *r);
enum MHD_Result abx_api_template_tags_list(struct abx_api_req *r);
enum MHD_Result abx_api_template_alias(struct abx_api_req *r);
enum MHD_Result abx_api_template_list(struct abx_api_req *r);
enum MHD_Result abx_api_template_get(struct abx_api_req *r);

/* api_fork.c */
enum MHD_Result abx_api_sandbox_fork(struct abx_api_req *r);

/* api_volumes.c */
enum MHD_Result abx_api_volume_create(struct abx_api_req *r);
enum MHD_Result abx_api_volume_list(struct abx_api_req *r);
enum MHD_Result abx_api_volume_get(struct abx_api_req *r);
enum MHD_Result abx_api_volume_delete(struct abx_api_req *r);

/* api_apikeys.c: GET|POST /api-keys, PATCH|DELETE /api-keys/{apiKeyID} (apikeys.h) */
enum MHD_Result abx_api_keys_list(struct abx_api_req *r);
enum MHD_Result abx_api_keys_create(struct abx_api_req *r);
enum MHD_Result abx_api_keys_rename(struct abx_api_req *r);
enum MHD_Result abx_api_keys_delete(struct abx_api_req *r);

#endif
