/*
 * cleanup.h: a stack of undo steps on one sandbox, run in reverse order when its construction
 * (abx_sandbox_new, sandbox_new.c) or a boot (sandbox.c) fails midway: each step pushes its undo,
 * so a failure undoes exactly what was done, last first (E2B's orchestrator does the same in
 * Factory.CreateSandbox with its Cleanup). Internal to platform/sandbox/.
 *
 * Shapes:  an undo takes the sandbox and tolerates a step that failed halfway or did nothing (a
 *          step may push its undo before it runs, so what it left half made is undone too).
 * Errors:  at most CLEANUP_MAX undos; a construction pushes fewer (a push beyond is a bug: abort).
 */
#ifndef ABX_SANDBOX_CLEANUP_H
#define ABX_SANDBOX_CLEANUP_H

#include <stdlib.h>

struct abx_sandbox;

#define CLEANUP_MAX 8

struct cleanup {
  void (*undo[CLEANUP_MAX])(struct abx_sandbox *sb);
  int n;
};

static inline void cleanup_push(struct cleanup *c, void (*undo)(struct abx_sandbox *sb))
{
  if (c->n >= CLEANUP_MAX)
    abort();
  c->undo[c->n++] = undo;
}

/* Run every undo pushed, last first, and empty the stack. */
static inline void cleanup_run(struct cleanup *c, struct abx_sandbox *sb)
{
  while (c->n > 0)
    c->undo[--c->n](sb);
}

#endif
