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
 * Disk:    the store outlives serve (template_disk.c): <build cache>/templates/ (layer_cache.h
 *          abx_lcache_dir; its builds are made of that cache's layers, so one store per cache,
 *          shared by every serve on it) holds one file per template name, <name>.json ('/' of
 *          "ns/alias" written '~'), mode 0600, format abxlua-template-store/1: {format,
 *          templateID, name, createdNs, builds: [{buildID, cpuCount, memoryMB, createdNs,
 *          finishedNs, tags, spec, imageKey?}]}: each ready build a tag points at, with its
 *          tags, its TemplateBuildStartV2 body and, from a Debian image, the key of the image
 *          root it was built on (<cache>/images/<key>: a replay takes that root as it is,
 *          neither resolving the suite nor building a root). Written (aside, then renamed) when a build gets ready and
 *          when tags change; removed with the template. At startup serve replays each stored
 *          build from the build cache alone (template_build.h abx_tbuild_restore), oldest first
 *          (a template built from another comes after it), so the template, its id, names and
 *          tags are back before serve listens; a build whose layers the cache no longer has
 *          fails (its template is listed with buildStatus error, the reason in its build log),
 *          and its record stays on disk. Build logs are not kept (the CLI saves its own).
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
  int started;        /* POST .../builds/{buildID} was accepted */
  int restore;        /* a replay of a build of the disk store (Disk): from the build cache only */
  char image_key[96]; /* restore of a fromImage build: its image root's key (image_debian.h) */
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

/* Free a template that is in no store list, with its builds (their results' refs dropped). */
void abx_tstore_free_template(struct abx_ttemplate *t);

/* Add template `t` (not yet listed) to the store: 0, or -1 when its id or name is taken. Takes
 * the lock. */
int abx_tstore_insert(struct abx_ttemplate *t);

/* Disk (template_disk.c). Open the store dir <abx_lcache_dir()>/templates (created 0700): 0, or
 * -1 with err (then nothing is kept on disk). Once, after abx_lcache_init. */
int abx_tstore_disk_init(char *err, size_t n);

/* The store dir ("" before abx_tstore_disk_init). */
const char *abx_tstore_disk_dir(void);

/* Under the lock: write t's file (Disk), or remove it when t has no build to keep. A failure is
 * logged (serve's log), never fatal: the template still works in this serve. */
void abx_tstore_save(const struct abx_ttemplate *t);

/* Remove the file of template name `name` (a deleted template). */
void abx_tstore_forget(const char *name);

/* Read every store file into the store (a malformed file, or a template this store already has,
 * is skipped with a warning in serve's log) and return its builds to replay (*out, malloc'd,
 * the caller frees the array; waiting, started, restore set), oldest first. Once, at startup. */
size_t abx_tstore_load(struct abx_tbuild ***out);

#endif
