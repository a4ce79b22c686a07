/*
 * build_steps.h: runs one template build (template_build.h "Runner", "Apt"): parent, steps,
 * cache layers, finalize, publish. Called on a build worker thread of template_build.c.
 */
#ifndef ABX_BUILD_BUILD_STEPS_H
#define ABX_BUILD_BUILD_STEPS_H

#include <jansson.h>

#include "sandbox/sandbox.h"
#include "template_build.h"

/* What the parts of one build share (build_steps.c: the build; build_exec.c: steps in build
 * sandboxes). */
struct abx_run {
  struct abx_tbuild *b;
  struct abx_template *top; /* chain so far (one ref) */
  char key[65];             /* key of the chain so far */
  char user[64];
  char *workdir; /* NULL: the user's home */
  json_t *env;   /* ENV state */
  char step[24]; /* current step name for log entries */
};

/* Append a log entry to the build (takes the store lock), at the current step. */
void abx_run_log(struct abx_run *r, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A build sandbox over `t` (abx_sandbox_new, kind 'b': not listed; skip_start: no start/ready
 * commands), with `bind_dir` (or NULL) bound read-only at ABX_BUILD_BIND; one ref, the caller's
 * (abx_sandbox_put). NULL with err. */
struct abx_sandbox *abx_run_boot(struct abx_run *r, struct abx_template *t, const char *bind_dir,
                                 int skip_start, char *err, size_t n);

/* Execute one file-changing step (COPY/ADD, RUN, USER, WORKDIR; r->workdir already the new
 * one for WORKDIR) in a fresh build sandbox over r->top: 0 with its layer stored as `key`. */
int abx_run_exec_step(struct abx_run *r, const char *type, json_t *st, const char *key, char *err,
                      size_t n);

/* ENV/ARG: `v` with $VAR and ${VAR} expanded from `env`, else a root shell's PATH and HOME;
 * \$ is a literal $. malloc'd, NULL on OOM. */
char *abx_run_expand(const char *v, json_t *env);

/* args[i] as a string ("" when absent). */
const char *abx_run_arg(json_t *args, size_t i);

/* WORKDIR's new value: absolute, or relative to the current one (default "/"). malloc'd. */
char *abx_run_join_workdir(const char *cur, const char *p);

#define ABX_BUILD_BIND                                                                             \
  "/mnt" /* an existing dir of every root: a bind there adds nothing to a layer */

/* Run build `b` (status building, spec set) to ready or error; every outcome is recorded in `b`
 * under the store lock (logs, reason, result, tags). */
void abx_build_run(struct abx_tbuild *b);

#endif
