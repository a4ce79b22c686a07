/*
 * build_steps.h: runs one template build (template_build.h "Runner", "Apt"): parent, steps,
 * cache layers, finalize, publish. Called on a build worker thread of template_build.c.
 */
#ifndef ABX_LOCAL_BUILD_STEPS_H
#define ABX_LOCAL_BUILD_STEPS_H

#include "template_build.h"

/* Run build `b` (status building, spec set) to ready or error; every outcome is recorded in `b`
 * under the store lock (logs, reason, result, tags). */
void abx_build_run(struct abx_tbuild *b);

#endif
