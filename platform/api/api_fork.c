/*
 * api_fork.c: POST /sandboxes/{id}/fork {timeout?, count?}.
 *
 * Shapes:  request SandboxForkRequest {timeout (s, default 15), count (default 1)}; answer 201
 *          with one SandboxForkResult per fork, in order: {"sandbox": Sandbox} (the shape of
 *          create's answer) or {"error": {"code", "message"}} (docs/protocol/e2b-control-plane.md
 *          §3.2, §3.3; docs/protocol/e2b-v2-and-peers.md §1.4).
 * Errors:  400 bad id, body, timeout ("Timeout must be greater than 0", "Timeout cannot be greater
 *          than 24 hours") or count ("Count must be at least 1", "Count cannot be greater than
 *          100"); 404 unknown or killed sandbox; 409 paused ("Sandbox '<id>' is paused and cannot be
 *          forked; resume it first"); 500 freezer or copy failed. All before any fork is tried;
 *          a fork that cannot start is an error entry (code 500), the others still start
 *          (e2b-dev/infra api/internal/handlers/sandbox_fork.go). E2B's 400 for count at or above
 *          the team's concurrency limit does not apply: this platform has no such limit.
 * What:    the source is frozen while its upper dirs are copied into one new layer
 *          (rootfs.h abx_template_fork_layer), then thawed: it keeps running with its id and TTL.
 *          Every fork boots fresh on that layer, so it has the source's files as of the fork and
 *          none of its processes or memory (there is no process checkpoint here; E2B forks
 *          restore the memory too). Each fork copies what E2B's resume-from-snapshot copies
 *          (sandbox_resume.go buildResumeSandboxDataFromSnapshot): template id and alias,
 *          metadata, network settings (rules, internet access, public traffic with a new traffic
 *          token, maskRequestHost), autoPause, autoPauseMemory, autoResume, volume mounts, secure
 *          (a new envd access token); and the envVars of the source's start, given to the new
 *          envd. Its TTL is now + timeout.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_internal.h"
#include "sandbox/sandbox.h"
#include "util/util.h"
#include "net/net.h"
#include "template/template.h"

#define FORK_MAX_COUNT 100

/* What the forks take from the source, copied under its op mutex. */
struct fork_src {
  char id[32];
  char template_id[64];
  char alias[64];
  json_t *metadata, *env_vars, *volume_mounts; /* owned copies */
  int secure, auto_pause, auto_pause_memory, auto_resume, cpu_count, memory_mb;
  struct abx_template *layer; /* one ref */
  int64_t timeout_s;
};

struct fork_job {
  const struct fork_src *src;
  json_t *result; /* SandboxForkResult */
  pthread_t th;
  int started;
};

static json_t *fork_error(int code, const char *msg)
{
  return json_pack("{s:{s:i,s:s}}", "error", "code", code, "message", msg);
}

/* Start one fork; returns its SandboxForkResult. */
static json_t *fork_one(const struct fork_src *src)
{
  char msg[ABX_START_ERR_MAX + 64];
  struct abx_sandbox_spec spec = {
      .origin = "forked",
      .tmpl = src->layer,
      .template_id = src->template_id,
      .alias = src->alias,
      .metadata = src->metadata,
      .secure = src->secure,
      .cpu_count = src->cpu_count,
      .memory_mb = src->memory_mb,
      .auto_pause = src->auto_pause,
      .auto_pause_memory = src->auto_pause_memory,
      .auto_resume = src->auto_resume,
      .volume_mounts = src->volume_mounts,
      .network_from = src->id,
      .env_vars = src->env_vars,
      .start_failed = "failed to start forked sandbox",
  };
  int status;
  struct abx_sandbox *sb = abx_sandbox_new(&spec, &status, msg, sizeof msg);
  if (!sb)
    return fork_error(500, msg);
  sb->timeout_s = src->timeout_s;
  sb->started_ns = abx_now_ns();
  sb->end_ns = sb->started_ns + src->timeout_s * 1000000000LL;
  json_t *out = abx_api_sandbox_json(sb);
  abx_registry_add(sb);
  return json_pack("{s:o}", "sandbox", out);
}

static void *fork_thread(void *cls)
{
  struct fork_job *j = cls;
  j->result = fork_one(j->src);
  return NULL;
}

/* Under s->op, s listed and running: freeze, copy its upper dirs into src->layer, thaw, and copy
 * what the forks take. 0, or an HTTP status with msg. */
static int checkpoint(struct abx_sandbox *s, struct fork_src *src, char *msg, size_t n)
{
  if (abx_cgroup_freeze(s->id, abx_mono_ns() + ABX_FREEZE_DEADLINE_NS) != 0) {
    snprintf(msg, n, "the sandbox's freezer cgroup did not answer");
    return 500;
  }
  src->layer = abx_template_fork_layer(s->tmpl, s->dir, s->id, msg, n);
  abx_cgroup_thaw(s->id);
  if (!src->layer)
    return 500;
  abx_registry_lock();
  snprintf(src->template_id, sizeof src->template_id, "%s", s->template_id);
  snprintf(src->alias, sizeof src->alias, "%s", s->alias);
  src->metadata = json_deep_copy(s->metadata);
  src->volume_mounts = s->volume_mounts ? json_deep_copy(s->volume_mounts) : json_array();
  src->secure = s->secure;
  src->auto_pause = s->auto_pause;
  src->auto_pause_memory = s->auto_pause_memory;
  src->auto_resume = s->auto_resume;
  src->cpu_count = s->cpu_count;
  src->memory_mb = s->memory_mb;
  abx_registry_unlock();
  src->env_vars = s->env_vars ? json_deep_copy(s->env_vars) : json_object();
  if (!src->metadata || !src->volume_mounts || !src->env_vars) {
    snprintf(msg, n, "out of memory");
    return 500;
  }
  return 0;
}

/* timeout and count of the body. 0, or -1 with the 400 queued in *sent. */
static int fork_body(struct abx_api_req *r, long long *timeout, long long *count,
                     enum MHD_Result *sent)
{
  json_t *req = abx_api_body(r, 0, sent);
  if (!req)
    return -1;
  int ti = abx_api_get_int(req, "timeout", timeout), ci = abx_api_get_int(req, "count", count);
  json_decref(req);
  const char *bad = NULL;
  char msg[120];
  if (ti < 0)
    bad = "validation error: field 'timeout' must be an integer (seconds)";
  else if (ci < 0)
    bad = "validation error: field 'count' must be an integer";
  else if (abx_api_check_timeout(*timeout, msg, sizeof msg) != 0)
    bad = msg;
  else if (*count < 1)
    bad = "Count must be at least 1";
  else if (*count > FORK_MAX_COUNT) {
    snprintf(msg, sizeof msg, "Count cannot be greater than %d", FORK_MAX_COUNT);
    bad = msg;
  }
  if (!bad)
    return 0;
  *sent = abx_http_error(r->c, 400, bad);
  return -1;
}

enum MHD_Result abx_api_sandbox_fork(struct abx_api_req *r)
{
  char id[32], msg[300];
  enum MHD_Result sent = MHD_NO;
  long long timeout = 15, count = 1;
  if (abx_api_sandbox_id(r, id, &sent) != 0 || fork_body(r, &timeout, &count, &sent) != 0)
    return sent;
  struct abx_sandbox *s = abx_sandbox_get(id);
  if (!s)
    return abx_api_not_found(r->c, id);
  struct fork_src src = {.timeout_s = timeout};
  snprintf(src.id, sizeof src.id, "%s", id);
  pthread_mutex_lock(&s->op);
  int status = !s->listed ? 404 : s->paused ? 409 : checkpoint(s, &src, msg, sizeof msg);
  pthread_mutex_unlock(&s->op);
  abx_sandbox_put(s);
  if (status == 404 || status == 409) {
    if (status == 404)
      sent = abx_api_not_found(r->c, id);
    snprintf(msg, sizeof msg, "Sandbox '%s' is paused and cannot be forked; resume it first", id);
  }
  json_t *results = status ? NULL : json_array();
  struct fork_job *jobs = status ? NULL : calloc((size_t)count, sizeof *jobs);
  if (!status && (!results || !jobs)) {
    status = 500;
    snprintf(msg, sizeof msg, "out of memory");
  }
  for (long long i = 0; !status && i < count; i++) { /* the forks boot side by side, as E2B's */
    jobs[i].src = &src;
    jobs[i].started = pthread_create(&jobs[i].th, NULL, fork_thread, &jobs[i]) == 0;
    if (!jobs[i].started)
      jobs[i].result = fork_error(500, "cannot start a thread for the fork");
  }
  for (long long i = 0; !status && i < count; i++) {
    if (jobs[i].started)
      pthread_join(jobs[i].th, NULL);
    json_array_append_new(results,
                          jobs[i].result ? jobs[i].result : fork_error(500, "out of memory"));
  }
  free(jobs);
  abx_template_put(src.layer, 0);
  json_decref(src.metadata);
  json_decref(src.env_vars);
  json_decref(src.volume_mounts);
  if (status == 404)
    return sent;
  if (status != 0) {
    json_decref(results);
    return abx_http_error(r->c, (unsigned)status, msg);
  }
  return abx_http_json(r->c, 201, results);
}
