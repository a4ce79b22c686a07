/*
 * template_build.h: templates built through E2B's template build API
 * (docs/protocol/e2b-v2-and-peers.md §2, docs/protocol/e2b-control-plane.md §4): the store of
 * templates, builds, names and tags (template_store.c), and the build runner (template_build.c).
 * HTTP in api_templates.c.
 *
 * Store:   a template has an id (20 of [a-z0-9], as E2B's id.Generate), one name (E2B's
 *          identifier: "alias" or "namespace/alias", ^[a-z0-9-_]+$ each, trimmed and
 *          lower-cased: infra shared/pkg/id ParseName) and builds; tags (^[a-z0-9-_.]+$, not a
 *          UUID) point at builds. A build's request tags (the name's tag first, else "default":
 *          infra template_request_build_v3.go, register_build.go) are assigned when it is ready.
 *          A sandbox reference "x" or "x:tag" (x a name or a template id; no tag = "default")
 *          resolves to the tagged build's template record (abx_tstore_resolve).
 * Builds:  waiting (requested, or queued) → building → ready | error. At most ABX_BUILDS_MAX run
 *          at once; the others wait in a FIFO. Logs are kept in memory with the build.
 * Runner:  the steps run in build sandboxes (sandbox.h, not listed, skip_start) over the parent's
 *          layers: every step but ENV/ARG boots one, runs, is halted, and its upper dirs become a
 *          cache layer (layer_cache.h) keyed by sha256(parent key, TYPE, args, filesHash, the
 *          user/workdir/env state): a key already in the cache is "CACHED". Semantics of each
 *          step as E2B's orchestrator (infra orchestrator/pkg/template/build/commands/{run,copy,user,workdir,env}.go): the
 *          steps start as user "user" (the v2 builds' USER phase after the base phase, which
 *          runs as root), RUN is `bash -c` as args[1] or the current user with the ENV state, in
 *          the WORKDIR (unset: the user's home); COPY/ADD unpacks the archive and moves the
 *          source (the path before any glob) to dest, owned by args[2] or the current user, mode
 *          args[3]; USER creates a missing user (useradd --create-home); WORKDIR creates the dir
 *          owned by the current user; ENV/ARG values are expanded ($VAR, ${VAR}) against the ENV
 *          state. Any other type: "command type X is not implemented". The final state is the
 *          template's: ENV → its sandboxes' env vars, USER → envd's default user, WORKDIR → the
 *          default workdir. With startCmd/readyCmd a sandbox of the result is booted once and
 *          must get ready (template_start.h), else the build fails at step "finalize".
 *          readyTimeout (an abxlua extension of TemplateBuildStartV2, which E2B lacks: its
 *          servers ignore unknown keys, docs/protocol/e2b-v2-and-peers.md §2 item 3): a whole
 *          number of seconds 1..ABX_READY_TIMEOUT_MAX_S the template's ready_cmd may take, at the
 *          build's finalize and at each sandbox start (template_start.h); absent: the parent's,
 *          else ABX_READY_TIMEOUT_DEFAULT_S.
 * Apt:     a build over a chain without it starts with a layer holding a copy of the host's
 *          /var/lib/dpkg, /var/lib/apt and /var/cache/debconf (the base template's /usr is the
 *          host's, so dpkg must know what is installed): `apt-get install` works in builds. Not
 *          over an image root (fromImage, rootfs.h "Images"): the image has its own dpkg
 *          database and no apt lists (a recipe runs `apt-get update` first, as aptInstall does).
 * Locking: one store mutex (abx_tstore_lock), taken before the templates mutex of rootfs.c.
 */
#ifndef ABX_LOCAL_TEMPLATE_BUILD_H
#define ABX_LOCAL_TEMPLATE_BUILD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "rootfs.h"

#define ABX_BUILDS_MAX 2          /* builds running at once */
#define ABX_BUILD_STEP_TIMEOUT_S 1800
#define ABX_BUILD_LOGS_PAGE 100   /* status: at most this many log entries per call (§2 item 4) */

enum abx_build_status { ABX_BUILD_WAITING, ABX_BUILD_BUILDING, ABX_BUILD_READY, ABX_BUILD_ERROR };

struct abx_ttemplate;

struct abx_tbuild {
  char id[40];                  /* buildID, a UUID */
  struct abx_ttemplate *tmpl;   /* owner */
  enum abx_build_status status;
  int started;                  /* POST .../builds/{buildID} was accepted */
  int cpu_count, memory_mb;
  int64_t created_ns, updated_ns, finished_ns;
  json_t *spec;                 /* TemplateBuildStartV2, owned, once started */
  json_t *tags;                 /* tags to assign when ready (array of strings) */
  json_t *logs;                 /* [{timestamp, level, message, step?}] */
  char *reason;                 /* error: message */
  char reason_step[24];         /* error: "base", "1".., "finalize" */
  size_t reason_from;           /* error: index of the failing step's first log entry */
  struct abx_template *result;  /* ready: the template record (one ref, the build's) */
  struct abx_tbuild *next;      /* the template's builds, newest first */
  struct abx_tbuild *qnext;     /* run queue */
};

struct abx_ttemplate {
  char id[32];
  char name[136];
  int64_t created_ns, updated_ns, last_spawned_ns;
  long spawn_count;
  json_t *tags;                 /* {tag: {"buildID", "createdAt"}} */
  struct abx_tbuild *builds;
  struct abx_ttemplate *next;
};

void abx_tstore_lock(void);
void abx_tstore_unlock(void);

/* Under the lock: the first template (iterate ->next). */
struct abx_ttemplate *abx_tstore_head(void);

/* Under the lock: the template whose id or name is `x` (no tag), or NULL. */
struct abx_ttemplate *abx_tstore_find(const char *x);

/* Under the lock: the build `id` of `t`, or NULL. */
struct abx_tbuild *abx_tstore_build(struct abx_ttemplate *t, const char *id);

/* POST /v3/templates: parse `name` ("n", "ns/n", with ":tag"), validate `tags` (array of strings
 * or NULL); find the template by name or make it; add a build (waiting, not started) with the
 * limits. 0 with *out = TemplateRequestResponseV3; else the HTTP status with msg (400 "Name is
 * required", "Invalid name: ...", "Invalid tag: ..."). Takes the lock. */
int abx_tstore_request(const char *name, json_t *tags, int cpu_count, int memory_mb, json_t **out,
                       char *msg, size_t n);

/* Parse "x[:tag]" into its name-or-id and tag ("default" when none). 0, or -1 when malformed. */
int abx_tstore_split_ref(const char *ref, char *x, size_t xn, char *tag, size_t tn);

/* Resolve a sandbox's template reference (see Store) and take a ref (and a sandbox use);
 * NULL when unknown. Takes the lock. Called by rootfs.c abx_template_get. */
struct abx_template *abx_tstore_resolve(const char *ref, int sandbox);

/* Under the lock: append a log entry to `b` (level "info", "warn", "error", "debug"; step may
 * be NULL). */
void abx_tstore_log(struct abx_tbuild *b, const char *level, const char *step, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Under the lock: the Template (list) / TemplateWithBuilds / TemplateBuildInfo shapes. */
json_t *abx_tstore_template_json(const struct abx_ttemplate *t);
json_t *abx_tstore_template_builds_json(const struct abx_ttemplate *t);
json_t *abx_tstore_status_json(const struct abx_tbuild *b, size_t offset, size_t limit,
                               const char *level);

/* Under the lock: assign `tags` (validated) of template `t` to build `b` (ready). */
void abx_tstore_tag(struct abx_ttemplate *t, const struct abx_tbuild *b, const char *tag);

/* Validate and dedupe tags (E2B's ValidateAndDeduplicateTags): a new array, or NULL with msg. */
json_t *abx_tstore_clean_tags(json_t *tags, char *msg, size_t n);

/* DELETE /templates/{x}: 0 deleted (names and tags gone; builds' records released), 404
 * unknown, 400 while a sandbox uses one of its builds. Takes the lock. */
int abx_tstore_delete(const char *x, char *msg, size_t n);

/* Drop every template (shutdown, after every sandbox is gone). */
void abx_tstore_shutdown(void);

/* Runner (template_build.c). Validate a TemplateBuildStartV2 body (with abxlua's readyTimeout):
 * 0, or -1 with msg naming the field (fail closed on unknown keys of the body and of its steps,
 * but COPY's forceUpload, resolveSymlinks and gzip, which the SDK sends; §2 item 3). */
int abx_tbuild_validate(json_t *spec, char *msg, size_t n);

/* Queue build `b` (spec set, started) to run; under the lock. */
void abx_tbuild_enqueue(struct abx_tbuild *b);

/* The base template's layer key (set at startup: covers the host's /var/lib/dpkg/status and
 * base's generated layer), for builds from base. */
void abx_tbuild_init_keys(void);

/* Shutdown, in two parts around the spawner's stop (serve.c): abx_tbuild_stop fails the queued
 * builds, marks the store as stopping (running builds fail at their next step: "serve is
 * stopping") and kills the build sandboxes running a step (SIGKILL to bwrap's process group)
 * and a fromImage root's mmdebstrap (image_debian.h abx_image_stop);
 * abx_tbuild_wait then waits (at most 30 s) for the build workers to end: 0, or -1 when some
 * still run (then the store must not be freed: serve leaves it to the exit). */
void abx_tbuild_stop(void);
int abx_tbuild_wait(void);

/* Fail closed on a JSON object's fields: 0 when every key of `o` is one of keys[0..nk), else -1
 * with msg "validation error: unknown field '<what><key>' (valid: k1, k2, ...)" (`what` names
 * the enclosing field, e.g. "steps[2]."; "" at top level). For the build API's bodies. */
int abx_tbuild_only_keys(json_t *o, const char *const *keys, size_t nk, const char *what,
                         char *msg, size_t n);

/* 1 once abx_tbuild_stop ran. Under the store lock or not (a plain read). */
int abx_tbuild_stopping(void);

/* A build sandbox's bwrap pid while it runs a step (add 1), or no longer (add 0): what
 * abx_tbuild_stop kills. */
void abx_tbuild_track(int pid, int add);

/* The parent of a fromImage build (image_root.c): "e2bdev/base" (the SDK's default base image,
 * which E2B's base template is built from) is the base template; a Debian image is its
 * image_debian.h root, built (blocking: 40-70 s cold, on the build's thread) or found in
 * <cache>/images, as a rootfs.h image record; every other image is image_debian.h's refusal
 * ("image '<ref>': image registry <r> is unreachable from this machine: only Debian images
 * (debian:<suite>) are built locally, from Debian packages"). Each line of the image build's
 * output goes to log(ud, line) (may be NULL). A record with one ref (the caller's), or NULL with
 * err. */
struct abx_template *abx_tbuild_image_root(const char *image, void (*log)(void *ud, const char *line),
                                           void *ud, char *err, size_t errlen);

#endif
