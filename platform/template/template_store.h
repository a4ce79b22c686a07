/*
 * template_store.h: the store of templates built through E2B's template build API
 * (docs/protocol/e2b-v2-and-peers.md §2, docs/protocol/e2b-control-plane.md §4): templates,
 * their builds (status and logs), names and tags. The runner of builds is template_build.h.
 *
 * Store:   a template has an id (20 of [a-z0-9], as E2B's id.Generate), one name (E2B's
 *          identifier: "alias" or "namespace/alias", ^[a-z0-9-_]+$ each, trimmed and
 *          lower-cased: infra shared/pkg/id ParseName) and builds; tags (^[a-z0-9-_.]+$, not a
 *          UUID) point at builds. A build's request tags (the name's tag first, else "default":
 *          infra template_request_build_v3.go, register_build.go) are assigned when it is ready.
 *          A sandbox reference "x" or "x:tag" (x a name or a template id; no tag = "default")
 *          resolves to the tagged build's template record (abx_tstore_resolve).
 * Locking: one store mutex (abx_tstore_lock), taken before the templates mutex of rootfs.c.
 */
#ifndef ABX_TEMPLATE_TEMPLATE_STORE_H
#define ABX_TEMPLATE_TEMPLATE_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "rootfs.h"

#define ABX_BUILDS_MAX 2        /* builds running at once */
#define ABX_BUILD_LOGS_PAGE 100 /* status: at most this many log entries per call (§2 item 4) */

enum abx_build_status { ABX_BUILD_WAITING, ABX_BUILD_BUILDING, ABX_BUILD_READY, ABX_BUILD_ERROR };

struct abx_ttemplate;

struct abx_tbuild {
  char id[40];                /* buildID, a UUID */
  struct abx_ttemplate *tmpl; /* owner */
  enum abx_build_status status;
  int started; /* POST .../builds/{buildID} was accepted */
  int cpu_count, memory_mb;
  int64_t created_ns, updated_ns, finished_ns;
  json_t *spec;                /* TemplateBuildStartV2, owned, once started */
  json_t *tags;                /* tags to assign when ready (array of strings) */
  json_t *logs;                /* [{timestamp, level, message, step?}] */
  char *reason;                /* error: message */
  char reason_step[24];        /* error: "base", "1".., "finalize" */
  size_t reason_from;          /* error: index of the failing step's first log entry */
  struct abx_template *result; /* ready: the template record (one ref, the build's) */
  struct abx_tbuild *next;     /* the template's builds, newest first */
  struct abx_tbuild *qnext;    /* run queue */
};

struct abx_ttemplate {
  char id[32];
  char name[136];
  int64_t created_ns, updated_ns, last_spawned_ns;
  long spawn_count;
  int is_public; /* PATCH /v2/templates/{id} {public}: only what the list and aliases answer */
  json_t *tags;  /* {tag: {"buildID", "createdAt"}} */
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

#endif
