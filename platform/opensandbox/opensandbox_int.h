/*
 * opensandbox_int.h: what the opensandbox flavour's files share (contract in opensandbox.h). Every
 * name here carries the flavour's one prefix, opensandbox_ (OPENSANDBOX_ for constants).
 *
 * Files:   control.c (dispatch, auth, answers, get, list, delete, pause, resume, renew,
 *          endpoints, the tick), create.c (create's validation), snapshot.c (snapshots),
 *          egress.c (the egress sidecar's policy API),
 *          worker.c (the worker
 *          threads: start, pause, resume, kill), front.c (the front: ingress routing, its
 *          refusals).
 * Records: one struct opensandbox_rec per sandbox the flavour created, on a list under
 *          opensandbox_lock(): what OpenSandbox reports and E2B's registry does not keep (image,
 *          entrypoint, platform, expiresAt, the Pending/Failed states, Pausing/Resuming while a
 *          worker runs). A record's sandbox is in the registry (registry.h) from the end of its
 *          start.
 * Locking: opensandbox_lock, then (inside it) the registry lock; never a sandbox's op mutex under
 *          opensandbox_lock (workers take it).
 */
#ifndef ABX_OPENSANDBOX_OPENSANDBOX_INT_H
#define ABX_OPENSANDBOX_OPENSANDBOX_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

/* Set once serve listens (the front's `listening`): the API key and the "host:port" endpoints
 * name (no scheme, as the spec's Endpoint example
 * "endpoint.opensandbox.io/sandboxes/abc123/port/8080"). Both borrowed. */
void abx_opensandbox_config(const char *api_key, const char *endpoint_host);

/* Answer one control-plane request (the front's `control`). `path` is the raw path (no query),
 * `body` the whole body (`len` bytes, may be NULL). */
enum MHD_Result abx_opensandbox_control(struct MHD_Connection *c, const char *method,
                                        const char *path, const char *body, size_t len);

/* The main loop's tick (the front's `tick`): paused sandboxes past their expiresAt are killed
 * (running ones are killed by lifecycle.h's TTL: their end_ns is the expiresAt), and records of
 * sandboxes that are gone are dropped. Never blocks on a sandbox (the kill runs on a worker). */
void abx_opensandbox_tick(int64_t now_ns);

/* Wait for every worker (create, pause, resume, kill) to finish (the front's `drain`): after
 * abx_spawner_stop (so starts fail fast) and before the last abx_lifecycle_shutdown (which kills
 * what they started). */
void abx_opensandbox_drain(void);

/* Error codes of OpenSandbox's server (services/constants.py SandboxErrorCodes, the Docker
 * runtime's where the runtime names one; middleware/auth.py; api/lifecycle.py). */
#define OPENSANDBOX_E_INVALID "SANDBOX::INVALID_PARAMETER"
#define OPENSANDBOX_E_NOT_SUPPORTED "SANDBOX::API_NOT_SUPPORTED"
#define OPENSANDBOX_E_NOT_FOUND "DOCKER::SANDBOX_NOT_FOUND"
#define OPENSANDBOX_E_NOT_RUNNING "DOCKER::SANDBOX_NOT_RUNNING"
#define OPENSANDBOX_E_NOT_PAUSED "DOCKER::SANDBOX_NOT_PAUSED"
#define OPENSANDBOX_E_EXPIRATION "DOCKER::INVALID_EXPIRATION"
#define OPENSANDBOX_E_ENTRYPOINT "DOCKER::INVALID_ENTRYPOINT"
#define OPENSANDBOX_E_PORT "DOCKER::INVALID_PORT"
#define OPENSANDBOX_E_METADATA "SANDBOX::INVALID_METADATA_LABEL"
#define OPENSANDBOX_E_INTERNAL "SANDBOX::UNKNOWN_ERROR"
#define OPENSANDBOX_E_IMAGE_PULL "DOCKER::SANDBOX_IMAGE_PULL_FAILED"
#define OPENSANDBOX_E_SNAP_NOT_FOUND "SNAPSHOT::NOT_FOUND"         /* snapshot_service.py */
#define OPENSANDBOX_E_SNAP_SOURCE "SNAPSHOT::INVALID_SOURCE_STATE" /* constants.py */
#define OPENSANDBOX_E_SNAP_STATE "SNAPSHOT::INVALID_STATE"         /* snapshot_service.py */

#define OPENSANDBOX_MIN_TIMEOUT_S 60   /* spec CreateSandboxRequest.timeout minimum */
#define OPENSANDBOX_FAILED_KEEP_S 3600 /* docker_service.py PENDING_FAILURE_TTL_SECONDS default */
#define OPENSANDBOX_NEVER INT64_MAX    /* expires_ns of a sandbox without automatic expiration */

enum opensandbox_state { OPENSANDBOX_PENDING, OPENSANDBOX_FAILED, OPENSANDBOX_LIVE };
enum opensandbox_op {
  OPENSANDBOX_OP_NONE,
  OPENSANDBOX_OP_PAUSING,
  OPENSANDBOX_OP_RESUMING,
  OPENSANDBOX_OP_KILLING
};

struct opensandbox_rec {
  char id[32];
  enum opensandbox_state state;
  enum opensandbox_op op; /* a worker is changing the sandbox's state */
  int deleted;            /* DELETE while Pending: the start's worker kills it at the end */
  int64_t created_ns;     /* CLOCK_REALTIME ns */
  int64_t transition_ns;  /* status.lastTransitionAt */
  int64_t expires_ns;     /* expiresAt, or OPENSANDBOX_NEVER (timeout null) */
  char image[256];        /* image.uri as sent (a local template name), "" when snapshot_id */
  char snapshot_id[40];   /* snapshotId restored from, "" when created from image */
  json_t *entrypoint;     /* array of strings, owned */
  json_t *metadata;       /* object of strings, owned */
  json_t *platform;       /* {os, arch} or NULL, owned */
  int secure;             /* secureAccess: envd (and execd) take the sandbox's access token */
  char token[48];         /* that token, "" unless secure */
  json_t *egress;         /* the egress sidecar's NetworkPolicy (egress.c), owned */
  char reason[48];        /* status.reason, status.message */
  char message[1100];
  struct opensandbox_rec *next;
};

void opensandbox_lock(void);
void opensandbox_unlock(void);

/* Under opensandbox_lock: the record of `id`, or NULL. */
struct opensandbox_rec *opensandbox_find(const char *id);

/* Add a new record (owned by the list from now on). Takes opensandbox_lock. */
void opensandbox_add(struct opensandbox_rec *r);

/* Under opensandbox_lock: unlink and free `r`. */
void opensandbox_drop(struct opensandbox_rec *r);

/* Queue {code, message} with `status`, X-Request-ID and Content-Type (control.c). */
enum MHD_Result opensandbox_error(struct MHD_Connection *c, unsigned status, const char *code,
                                  const char *msg);

/* Queue `body` (stolen; NULL: an empty body) with `status`, X-Request-ID, and Location when
 * `location` is not NULL. */
enum MHD_Result opensandbox_send(struct MHD_Connection *c, unsigned status, json_t *body,
                                 const char *location);

/* Under opensandbox_lock (the registry lock is taken inside): the spec's Sandbox object for `r`,
 * or the CreateSandboxResponse when `created` (no image, as the spec's 202 says). NULL when the
 * record's sandbox is gone. */
json_t *opensandbox_sandbox_json(const struct opensandbox_rec *r, int created);

/* Under opensandbox_lock (the registry lock is taken inside): 1 when the record's sandbox is
 * listed. */
int opensandbox_sandbox_json_alive(const struct opensandbox_rec *r);

/* POST /v1/sandboxes (create.c): validate, answer 202 Pending, start on a worker. */
enum MHD_Result opensandbox_create(struct MHD_Connection *c, const char *body, size_t len);

struct abx_sandbox;

/* Start `sb` (prepared as api_sandboxes.c does; its record added, Pending) on a worker thread
 * (worker.c): abx_sandbox_start with `env` (object), then the CPU limit in thousandths when
 * `millis` is not whole CPUs (cgroup.h abx_cgroup_set_cpu_millis), then `entrypoint` (array of
 * strings) in the background as root through envd, its output in /var/log/abx/entrypoint.log
 * (its program not found in PATH: a failed start);
 * then the sandbox is listed with end_ns = the record's expiresAt and the record is Running
 * (or, when it was deleted meanwhile, killed and dropped). Any failure: the record is Failed
 * (reason PROVISIONING_ERROR as docker_service.py _mark_pending_failed, the error as message)
 * and the sandbox destroyed. Takes `sb`, `env` and `entrypoint`; 0, or -1 when no thread could
 * be made (then they are freed here and the caller drops the record). */
int opensandbox_worker_create(struct abx_sandbox *sb, json_t *env, json_t *entrypoint, int millis);

/* Run a state change of a live sandbox on a worker thread (worker.c): OPENSANDBOX_OP_PAUSING
 * (memory pause), OPENSANDBOX_OP_RESUMING (thaw; end_ns back to the record's expiresAt) or
 * OPENSANDBOX_OP_KILLING. The caller has set the record's op under opensandbox_lock; the worker
 * clears it. 0, or -1 when no thread could be made (op cleared again). */
int opensandbox_worker_op(const char *id, enum opensandbox_op op);

/* Block until no worker runs (opensandbox.h abx_opensandbox_drain). */
void opensandbox_workers_drain(void);

/* Query parameter `name`: `dflt` when absent, else an integer 1..max into *out; -1 when bad. */
int opensandbox_query_int(struct MHD_Connection *c, const char *name, long dflt, long max,
                          long *out);

/* Snapshots (snapshot.c): POST /v1/sandboxes/{id}/snapshots (CreateSnapshotRequest `body`), and
 * the routes under /v1/snapshots (`rest`: what follows it, "" or "/{snapshotId}"). */
enum MHD_Result opensandbox_snapshot_create(struct MHD_Connection *c, const char *id,
                                            const char *body, size_t len);
enum MHD_Result opensandbox_snapshot_route(struct MHD_Connection *c, const char *method,
                                           const char *rest);

/* The egress sidecar's port (OpenSandbox components/egress: the policy API on :18080). */
#define OPENSANDBOX_EGRESS_PORT 18080

/* A NetworkPolicy (`in`, borrowed; NULL, null or {}: deny-all, as the sidecar's ParsePolicy)
 * normalized into *out (new: {defaultAction, egress [{action, target}]}); 0, or -1 with a 400
 * message (egress.c). */
int opensandbox_policy_parse(json_t *in, json_t **out, char *msg, size_t n);

/* The E2B-shaped network fields of a normalized policy, as net/network.h abx_network_create
 * reads them: {allowInternetAccess: defaultAction == allow, network {allowOut: the allow
 * targets, denyOut: the IP/CIDR deny targets}} (new). */
json_t *opensandbox_policy_network(const json_t *pol);

/* Answer one request to the egress sidecar of sandbox `id`: `rest` is the path inside it
 * ("/policy"), `body` the whole body (egress.c). */
enum MHD_Result opensandbox_egress(struct MHD_Connection *c, const char *method, const char *id,
                                   const char *rest, const char *body, size_t len);

/* Whether a request reached the front's control plane for the egress sidecar's port (front.c:
 * the ingress header naming <id>-18080, or the path /sandboxes/<id>/port/18080[/rest]): 1 with
 * id (idn bytes) and *rest (the path inside: "/rest", or "" ), else 0. */
int opensandbox_egress_target(struct MHD_Connection *c, const char *path, char *id, size_t idn,
                              const char **rest);

/* 1 when `id` is a snapshot of this serve (create.c's snapshotId). */
int opensandbox_snapshot_exists(const char *id);

/* "RFC 3339 UTC with milliseconds" of `ns`, or JSON null for OPENSANDBOX_NEVER. */
json_t *opensandbox_time_json(int64_t ns);

#endif
