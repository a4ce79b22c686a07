/*
 * api_lifecycle.c: the lifecycle routes of a sandbox: connect, resume (deprecated), pause (with
 * memory or filesystem only) and refreshes (metrics: api_metrics.c). Contract in api.h; behaviour
 * docs/protocol/e2b-control-plane.md §3.4.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_internal.h"
#include "util/util.h"
#include "sandbox/sandbox.h"

/* Answer a lifecycle status: 0 → `ok_status` with `body` (stolen), 404 standard, 409 `msg409`. */
static enum MHD_Result answer(struct abx_api_req *r, const char *id, int rc, unsigned ok_status,
                              json_t *body, const char *msg409)
{
  if (rc == 0)
    return abx_http_json(r->c, ok_status, body);
  json_decref(body);
  if (rc == 404)
    return abx_api_not_found(r->c, id);
  if (rc == 409)
    return abx_http_error(r->c, 409, msg409);
  return abx_http_error(r->c, 500,
                        "the sandbox could not change state (freezer or reboot failed; "
                        "see the serve log)");
}

/* Optional boolean `memory` of a pause or connect body (default true). 0, or -1 with 400 queued. */
static int memory_field(struct abx_api_req *r, json_t *req, int *keep, enum MHD_Result *sent)
{
  char msg[128];
  if (abx_api_check_bool(req, "memory", msg, sizeof msg) != 0) {
    *sent = abx_http_error(r->c, 400, msg);
    return -1;
  }
  *keep = !json_is_false(json_object_get(req, "memory"));
  return 0;
}

enum MHD_Result abx_api_allowlist_refusal(struct abx_api_req *r, const char *what)
{
  char msg[200];
  snprintf(msg, sizeof msg, "%s needs an allowlist on %s, and this account is not on it", what,
           abx_flavor()->name);
  return abx_http_error(r->c, 403, msg);
}

enum reattach { CONNECT_V1, RESUME_V1, CONNECT_V2 };

/* The three ways back to a sandbox. CONNECT_V1 {timeout (required), memory?}; RESUME_V1
 * {timeout = 15} (a running sandbox: 409); CONNECT_V2, body optional {timeout? = 300 (≥ 1: 0 is a
 * 400), memory?} (docs/protocol/e2b-v2-and-peers.md §1.3). A running sandbox's TTL is only extended
 * (200); a paused one is resumed (201): thawed (memory pause, memory true) or cold-booted from its
 * files (filesystem pause, or memory false) (lifecycle.h). */
static enum MHD_Result reattach(struct abx_api_req *r, enum reattach how)
{
  char id[32], msg[128];
  enum MHD_Result sent = MHD_NO;
  long long t = how == CONNECT_V2 ? ABX_V2_TIMEOUT_S : 15;
  int keep = 1;
  if (abx_api_sandbox_id(r, id, &sent) != 0 ||
      abx_api_timeout_body(r, how == CONNECT_V1, &t, &sent) != 0)
    return sent;
  if (how == CONNECT_V2 && abx_api_check_timeout(t, msg, sizeof msg) != 0)
    return abx_http_error(r->c, 400, msg);
  if (how != RESUME_V1) {
    json_t *req = abx_api_body(r, how == CONNECT_V1, &sent); /* parsed once already: well-formed */
    int bad = !req || memory_field(r, req, &keep, &sent) != 0;
    json_decref(req);
    if (bad)
      return sent;
  }
  const struct abx_flavor *fl = abx_flavor();
  if (how == RESUME_V1 && fl->pause_needs_allowlist)
    return abx_api_allowlist_refusal(r, "resume");
  struct abx_sandbox *s = abx_sandbox_get(id);
  if (!s)
    return abx_api_not_found(r->c, id);
  int resumed = 0;
  abx_registry_lock();
  int was_paused = s->paused;
  abx_registry_unlock();
  if (was_paused && t < fl->resume_min_ttl)
    /* OpenKruise: "min resume timeout 300" (docs/protocol/e2b-v2-and-peers.md §5) */
    t = fl->resume_min_ttl;
  int rc = 0;
  if (was_paused && abx_mutant_on(ABX_MUT_RESUME_NOOP))
    resumed = 1; /* mutant resume-noop: answered as resumed, left paused */
  else
    rc = abx_lifecycle_reattach(s, t, how == RESUME_V1, keep, fl->connect_extends, &resumed);
  json_t *out = NULL;
  if (rc == 0) {
    abx_registry_lock();
    if (how != RESUME_V1 && !s->paused && abx_mutant_on(ABX_MUT_CONNECT_SHORTENS_TTL))
      s->end_ns = abx_now_ns() + (int64_t)t * 1000000000LL; /* mutant: even when shorter */
    out = abx_api_sandbox_json(s);
    abx_registry_unlock();
  }
  abx_sandbox_put(s);
  if (how == RESUME_V1)
    snprintf(msg, sizeof msg, "Sandbox %s is already running", id);
  else
    snprintf(msg, sizeof msg, "Sandbox %s is changing state, try again", id);
  if (how == RESUME_V1 && fl->resume_status == 204) { /* OpenKruise: resume → 204, no body */
    json_decref(out);
    out = NULL;
  }
  unsigned ok = how == RESUME_V1 ? fl->resume_status : resumed ? fl->connect_resumed_status : 200;
  return answer(r, id, rc, ok, out, msg);
}

/* POST /sandboxes/{id}/connect {timeout, memory?} (docs/protocol/e2b-control-plane.md §3.4). */
enum MHD_Result abx_api_sandbox_connect(struct abx_api_req *r)
{
  return reattach(r, CONNECT_V1);
}

/* POST /sandboxes/{id}/resume {timeout=15} (deprecated): paused → 201; running → 409. */
enum MHD_Result abx_api_sandbox_resume(struct abx_api_req *r)
{
  return reattach(r, RESUME_V1);
}

/* POST /v2/sandboxes/{id}/connect [{timeout?, memory?}] (docs/protocol/e2b-v2-and-peers.md
 * §1.3). */
enum MHD_Result abx_api_sandbox_connect_v2(struct abx_api_req *r)
{
  return reattach(r, CONNECT_V2);
}

/* POST /sandboxes/{id}/pause [{memory=true}]: 204; 409 when already paused. memory false pauses
 * filesystem only: processes stopped, files kept, the resume is a fresh boot (lifecycle.h;
 * docs/protocol/e2b-control-plane.md §3.2 SandboxPauseRequest). */
enum MHD_Result abx_api_sandbox_pause(struct abx_api_req *r)
{
  char id[32], msg[160];
  enum MHD_Result sent = MHD_NO;
  int keep = 1;
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  if (abx_flavor()->pause_needs_allowlist)
    return abx_api_allowlist_refusal(r, "pause");
  json_t *req = abx_api_body(r, 0, &sent);
  if (!req)
    return sent;
  int bad = memory_field(r, req, &keep, &sent) != 0;
  json_decref(req);
  if (bad)
    return sent;
  struct abx_sandbox *s = abx_sandbox_get(id);
  int rc = s ? abx_lifecycle_pause_mem(s, keep) : 404;
  if (s)
    abx_sandbox_put(s);
  snprintf(msg, sizeof msg, "Error pausing sandbox - sandbox '%s' is already paused", id);
  return answer(r, id, rc, 204, NULL, msg);
}

/* POST /sandboxes/{id}/refreshes [{duration 0..3600}]: TTL = max(TTL, now + max(duration, 15)). */
enum MHD_Result abx_api_sandbox_refreshes(struct abx_api_req *r)
{
  char id[32];
  enum MHD_Result sent = MHD_NO;
  if (abx_api_sandbox_id(r, id, &sent) != 0)
    return sent;
  json_t *req = abx_api_body(r, 0, &sent);
  if (!req)
    return sent;
  long long d = 15;
  int ri = abx_api_get_int(req, "duration", &d);
  json_decref(req);
  if (ri < 0 || d < 0 || d > 3600)
    return abx_http_error(r->c, 400,
                          "validation error: field 'duration' must be an integer 0..3600");
  if (d < 15)
    d = 15;
  int64_t end = abx_now_ns() + (int64_t)d * 1000000000LL;
  abx_registry_lock();
  struct abx_sandbox *s = abx_registry_find(id);
  int ok = s && !s->paused;
  if (ok && end > s->end_ns)
    s->end_ns = end;
  abx_registry_unlock();
  return ok ? abx_http_json(r->c, 204, NULL) : abx_api_not_found(r->c, id);
}
