/*
 * warm_pool.h: ready sandboxes kept per template, so a create of a template whose start is costly
 * (a start or ready command: code-interpreter-v1 boots Jupyter and a kernel) claims one that is
 * already up instead of booting (issue 26; the field's warm pools: OpenKruise's SandboxSet,
 * OpenSandbox's BatchSandbox pool).
 *
 * Configuration (serve --pool SPEC): "TEMPLATE=N[,TEMPLATE=N...]" (N 0..ABX_WARM_POOL_MAX, a
 * template id or alias), each filled as soon as serve runs; "none" keeps no pool. Without --pool
 * the default is ABX_WARM_POOL_DEFAULT: code-interpreter-v1=1, filled only after the first create
 * of that template (so a serve that never creates one never boots Jupyter in the background).
 * Filling:  one thread boots the missing sandboxes, one at a time, as a create would (the same
 *          constructor, the template's start and ready commands) but at a CPU weight of
 *          ABX_WARM_POOL_CPU_MILLIS (cgroup.h abx_cgroup_set_weight), so a boot yields to every
 *          create and command; it never holds a lock a create takes. A failed boot is logged and
 *          tried again after a pause.
 * Claims:  abx_warm_pool_claim hands out a ready sandbox of the create's template when the create
 *          asks for nothing a booted sandbox cannot take afterwards (see abx_warm_pool_claim), and
 *          applies what it asks as if the sandbox were created now: metadata, secure and a new
 *          envd access token, envVars for every later command (POST /init again), the lifecycle
 *          flags, outbound rules and internet access (the create's network rules: net/network.h
 *          abx_network_update), its CPU weight; the caller then sets the TTL and lists it. What a
 *          hit skips: the start command ran at the pool's boot, with the template's environment
 *          only (not the create's envVars), and its output, its start log and the sandbox's
 *          first log lines belong to that boot; the id was made at that boot.
 * Never listed, never counted: a pooled sandbox is not in the registry (no list, no TTL, no API
 *          route reaches it) until claimed; abx_warm_pool_stop kills every one, and
 *          abx_warm_pool_release those of a template about to be deleted.
 * Threads: claims from request threads, the filler thread; one mutex guards the pool.
 * Errors:  abx_warm_pool_configure returns 0, or -1 with a message naming the spec and its form.
 */
#ifndef ABX_SANDBOX_WARM_POOL_H
#define ABX_SANDBOX_WARM_POOL_H

#include <jansson.h>
#include <stddef.h>

struct abx_sandbox;
struct abx_sandbox_spec;

#define ABX_WARM_POOL_MAX 8                           /* sandboxes kept per template, at most */
#define ABX_WARM_POOL_DEFAULT "code-interpreter-v1=1" /* filled after the first create */
#define ABX_WARM_POOL_CPU_MILLIS 10                   /* a pooled sandbox's CPU weight */
#define ABX_WARM_POOL_TEMPLATES 8                     /* templates with a pool, at most */

/* Read --pool's value (NULL: the default, filled on first use). Call once before
 * abx_warm_pool_start. 0, or -1 with err naming the bad part and the form. */
int abx_warm_pool_configure(const char *spec, char *err, size_t errlen);

/* Start the filler thread (after the templates are loaded). 0, or -1 (no thread: no pool). */
int abx_warm_pool_start(void);

/* A ready sandbox for a create described by `spec` and `req` (the create request, borrowed: its
 * network fields), with the create applied, and *status 0; or NULL when there is none to claim or
 * the create asks for what a booted sandbox cannot take (then the caller creates one as usual;
 * *status 0), or NULL with *status 400 and err when the request's network rules are invalid.
 * A claim is possible when the create is an API create (kind 'i') of a pooled template with its
 * own limits (no cpu_count or memory_mb), no volume mounts, public traffic allowed and no
 * maskRequestHost or egressProxy. The sandbox comes with one ref, the caller's. A miss also
 * marks the template used, which starts filling a default pool. */
struct abx_sandbox *abx_warm_pool_claim(const struct abx_sandbox_spec *spec, json_t *req,
                                        int *status, char *err, size_t errlen);

/* Before a template is deleted (the API's DELETE /templates/{id}): the pooled sandboxes of the
 * template `ref` names (id, alias or build name, as abx_template_get takes it) are killed, a boot
 * of it under way is cancelled and waited for (at most 10 s), and its pool is not refilled for
 * 30 s (then again only if the template still exists: a refused delete gets its pool back). So
 * the pool's own sandboxes never keep a template from being deleted. Returns how many ready
 * sandboxes were let go; 0 when `ref` is unknown or has no pool. */
int abx_warm_pool_release(const char *ref);

/* Stop the filler (a boot in progress is cancelled: template_start.h) and kill every pooled
 * sandbox. Idempotent. */
void abx_warm_pool_stop(void);

#endif
