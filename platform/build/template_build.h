/*
 * template_build.h: templates built through E2B's template build API
 * (docs/protocol/e2b-v2-and-peers.md §2, docs/protocol/e2b-control-plane.md §4): the store of
 * the build runner (template_build.c) over the store of templates, builds, names and tags
 * (template_store.h).
 * HTTP in api_templates.c.
 *
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
#ifndef ABX_BUILD_TEMPLATE_BUILD_H
#define ABX_BUILD_TEMPLATE_BUILD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define ABX_BUILD_STEP_TIMEOUT_S 1800

#include "template/template.h"

/* Runner (template_build.c). Validate a TemplateBuildStartV2 body (with abxlua's readyTimeout):
 * 0, or -1 with msg naming the field (fail closed on unknown keys of the body and of its steps,
 * but COPY's forceUpload, resolveSymlinks and gzip, which the SDK sends; §2 item 3). */
int abx_tbuild_validate(json_t *spec, char *msg, size_t n);

/* Queue build `b` (spec set, started) to run; under the lock. */
void abx_tbuild_enqueue(struct abx_tbuild *b);

/* The base template's layer key (set at startup: covers the host's /var/lib/dpkg/status and
 * base's generated layer), for builds from base. */
void abx_tbuild_init_keys(void);

/* Restore the disk store's templates (template_store.h "Disk"): load them and replay each
 * build on this thread from the build cache alone, oldest first, before serve listens. A build
 * that cannot be replayed (malformed body, a layer or finalize no longer cached, a parent gone)
 * fails with the reason in its log, and serve's log names it. Returns the builds restored. */
int abx_tbuild_restore(void);

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
int abx_tbuild_only_keys(json_t *o, const char *const *keys, size_t nk, const char *what, char *msg,
                         size_t n);

/* 1 once abx_tbuild_stop ran. Under the store lock or not (a plain read). */
int abx_tbuild_stopping(void);

/* A build sandbox's bwrap pid while it runs a step (add 1), or no longer (add 0): what
 * abx_tbuild_stop kills. */
void abx_tbuild_track(int pid, int add);

#endif
