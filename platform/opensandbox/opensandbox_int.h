/*
 * os_api_internal.h: what the opensandbox flavour's files share (contract in os_api.h).
 *
 * Files:   os_api.c (dispatch, auth, answers, get, list, delete, pause, resume, renew,
 *          endpoints, the tick), os_create.c (create's validation), os_worker.c (the worker
 *          threads: start, pause, resume, kill), os_ingress.c (ingress routing, its refusals).
 * Records: one struct os_rec per sandbox the flavour created, on a list under os_lock(): what
 *          OpenSandbox reports and E2B's registry does not keep (image, entrypoint, platform,
 *          expiresAt, the Pending/Failed states, Pausing/Resuming while a worker runs). A
 *          record's sandbox is in the registry (registry.h) from the end of its start.
 * Locking: os_lock, then (inside it) the registry lock; never a sandbox's op mutex under
 *          os_lock (workers take it).
 */
#ifndef ABX_OPENSANDBOX_OPENSANDBOX_INT_H
#define ABX_OPENSANDBOX_OPENSANDBOX_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

/* Error codes of OpenSandbox's server (services/constants.py SandboxErrorCodes, the Docker
 * runtime's where the runtime names one; middleware/auth.py; api/lifecycle.py). */
#define OS_E_INVALID "SANDBOX::INVALID_PARAMETER"
#define OS_E_NOT_SUPPORTED "SANDBOX::API_NOT_SUPPORTED"
#define OS_E_NOT_FOUND "DOCKER::SANDBOX_NOT_FOUND"
#define OS_E_NOT_RUNNING "DOCKER::SANDBOX_NOT_RUNNING"
#define OS_E_NOT_PAUSED "DOCKER::SANDBOX_NOT_PAUSED"
#define OS_E_EXPIRATION "DOCKER::INVALID_EXPIRATION"
#define OS_E_ENTRYPOINT "DOCKER::INVALID_ENTRYPOINT"
#define OS_E_PORT "DOCKER::INVALID_PORT"
#define OS_E_METADATA "SANDBOX::INVALID_METADATA_LABEL"
#define OS_E_INTERNAL "SANDBOX::UNKNOWN_ERROR"
#define OS_E_IMAGE_PULL "DOCKER::SANDBOX_IMAGE_PULL_FAILED"

#define OS_MIN_TIMEOUT_S 60       /* spec CreateSandboxRequest.timeout minimum */
#define OS_FAILED_KEEP_S 3600     /* docker_service.py PENDING_FAILURE_TTL_SECONDS default */
#define OS_NEVER INT64_MAX        /* expires_ns of a sandbox without automatic expiration */

enum os_state { OS_PENDING, OS_FAILED, OS_LIVE };
enum os_op { OS_OP_NONE, OS_OP_PAUSING, OS_OP_RESUMING, OS_OP_KILLING };

struct os_rec {
  char id[32];
  enum os_state state;
  enum os_op op;          /* a worker is changing the sandbox's state */
  int deleted;            /* DELETE while Pending: the start's worker kills it at the end */
  int64_t created_ns;     /* CLOCK_REALTIME ns */
  int64_t transition_ns;  /* status.lastTransitionAt */
  int64_t expires_ns;     /* expiresAt, or OS_NEVER (timeout null) */
  char image[256];        /* image.uri as sent (a local template name) */
  json_t *entrypoint;     /* array of strings, owned */
  json_t *metadata;       /* object of strings, owned */
  json_t *platform;       /* {os, arch} or NULL, owned */
  int secure;             /* secureAccess: envd (and execd) take the sandbox's access token */
  char token[48];         /* that token, "" unless secure */
  char reason[48];        /* status.reason, status.message */
  char message[1100];
  struct os_rec *next;
};

void os_lock(void);
void os_unlock(void);

/* Under os_lock: the record of `id`, or NULL. */
struct os_rec *os_find(const char *id);

/* Add a new record (owned by the list from now on). Takes os_lock. */
void os_add(struct os_rec *r);

/* Under os_lock: unlink and free `r`. */
void os_drop(struct os_rec *r);

/* Queue {code, message} with `status`, X-Request-ID and Content-Type (os_api.c). */
enum MHD_Result os_error(struct MHD_Connection *c, unsigned status, const char *code,
                         const char *msg);

/* Queue `body` (stolen; NULL: an empty body) with `status`, X-Request-ID, and Location when
 * `location` is not NULL. */
enum MHD_Result os_send(struct MHD_Connection *c, unsigned status, json_t *body,
                        const char *location);

/* Under os_lock (the registry lock is taken inside): the spec's Sandbox object for `r`, or the
 * CreateSandboxResponse when `created` (no image, as the spec's 202 says). NULL when the record's
 * sandbox is gone. */
json_t *os_sandbox_json(const struct os_rec *r, int created);

/* Under os_lock (the registry lock is taken inside): 1 when the record's sandbox is listed. */
int os_sandbox_json_alive(const struct os_rec *r);

/* POST /v1/sandboxes (os_create.c): validate, answer 202 Pending, start on a worker. */
enum MHD_Result os_create(struct MHD_Connection *c, const char *body, size_t len);

struct abx_sandbox;

/* Start `sb` (prepared as api_sandboxes.c does; its record added, Pending) on a worker thread
 * (os_worker.c): abx_sandbox_start with `env` (object), then the CPU limit in thousandths when
 * `millis` is not whole CPUs (cgroup.h abx_cgroup_set_cpu_millis), then `entrypoint` (array of
 * strings) in the background as root through envd, its output in /var/log/abx/entrypoint.log
 * (its program not found in PATH: a failed start);
 * then the sandbox is listed with end_ns = the record's expiresAt and the record is Running
 * (or, when it was deleted meanwhile, killed and dropped). Any failure: the record is Failed
 * (reason PROVISIONING_ERROR as docker_service.py _mark_pending_failed, the error as message)
 * and the sandbox destroyed. Takes `sb`, `env` and `entrypoint`; 0, or -1 when no thread could
 * be made (then they are freed here and the caller drops the record). */
int os_worker_create(struct abx_sandbox *sb, json_t *env, json_t *entrypoint, int millis);

/* Run a state change of a live sandbox on a worker thread (os_create.c): OS_OP_PAUSING (memory
 * pause), OS_OP_RESUMING (thaw; end_ns back to the record's expiresAt) or OS_OP_KILLING. The
 * caller has set the record's op under os_lock; the worker clears it. 0, or -1 when no thread
 * could be made (op cleared again). */
int os_worker_op(const char *id, enum os_op op);

/* Block until no worker runs (os_api.h abx_os_api_drain). */
void os_workers_drain(void);

/* "RFC 3339 UTC with milliseconds" of `ns`, or JSON null for OS_NEVER. */
json_t *os_time_json(int64_t ns);

#endif
