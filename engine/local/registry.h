/*
 * registry.h: the live sandboxes of one `abxlua serve`, guarded by one mutex.
 *
 * Shapes:  struct abx_sandbox below; ids are "i" + 20 chars [a-z0-9]
 *          (reference/e2b-control-plane.md §2 "Sandbox ID").
 * Units:   started_ns / end_ns are CLOCK_REALTIME nanoseconds since the epoch.
 * Locking: abx_registry_lock() guards the list and every field of a listed sandbox; a sandbox
 *          removed with abx_registry_take*() belongs to the caller, who destroys it
 *          (abx_sandbox_destroy, sandbox.h) without the lock held.
 */
#ifndef ABX_LOCAL_REGISTRY_H
#define ABX_LOCAL_REGISTRY_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

struct abx_sandbox {
  char id[32];
  char template_id[64];
  char alias[64];
  json_t *metadata;    /* object str -> str, owned */
  int secure;
  char token[48];      /* envdAccessToken when secure, else "" */
  int64_t started_ns;
  int64_t end_ns;      /* TTL deadline */
  pid_t pid;           /* bwrap, leader of its own process group */
  pid_t child_pid;     /* first process inside the sandbox namespaces (bwrap --info-fd) */
  int netns_fd;        /* /proc/<child_pid>/ns/net, held open for the sandbox's lifetime */
  char *dir;           /* <state-dir>/<id>, owned */
  struct abx_sandbox *next;
};

void abx_registry_lock(void);
void abx_registry_unlock(void);

/* Under the lock: the first listed sandbox (iterate with ->next), or NULL. */
struct abx_sandbox *abx_registry_head(void);

/* Under the lock: the sandbox with `id`, or NULL. */
struct abx_sandbox *abx_registry_find(const char *id);

/* Add a fully started sandbox (takes ownership). Takes the lock itself. */
void abx_registry_add(struct abx_sandbox *sb);

/* Remove and return the sandbox with `id` (NULL when unknown). Takes the lock itself. */
struct abx_sandbox *abx_registry_take(const char *id);

/* Remove and return every sandbox whose TTL passed (end_ns <= now_ns) or whose bwrap exited (it
 * is reaped here; pid is then set to 0). A NULL-terminated ->next list. Takes the lock itself. */
struct abx_sandbox *abx_registry_take_expired(int64_t now_ns);

/* Remove and return every sandbox (shutdown). Takes the lock itself. */
struct abx_sandbox *abx_registry_take_all(void);

/* Under the lock: dup() of the sandbox's netns fd, or -1 when `id` is unknown. Takes the lock. */
int abx_registry_netns(const char *id);

#endif
