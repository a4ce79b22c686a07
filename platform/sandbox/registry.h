/*
 * registry.h: the live sandboxes of one `abxlua serve`, guarded by one mutex.
 *
 * Shapes:  struct abx_sandbox below; ids are "i" + 20 chars [a-z0-9]
 *          (docs/protocol/e2b-control-plane.md §2 "Sandbox ID").
 * Units:   started_ns / end_ns are CLOCK_REALTIME nanoseconds since the epoch.
 * Locking: abx_registry_lock() guards the list and the plain fields of a listed sandbox. The
 *          registry only lists; sandboxes count their own references (sandbox.h: the list holds
 *          one, each abx_sandbox_get() another, and the last abx_sandbox_put() frees).
 *          Operations that touch a sandbox's processes or files hold its `op` mutex (order: op,
 *          then registry) and check `listed` first: a killed sandbox is unlisted.
 */
#ifndef ABX_SANDBOX_REGISTRY_H
#define ABX_SANDBOX_REGISTRY_H

#include <jansson.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>

struct abx_template;

struct abx_sandbox {
  char id[32];
  char template_id[64];
  char alias[64];
  json_t *metadata; /* object str -> str, owned */
  int secure;
  char token[48]; /* envdAccessToken when secure, else "" */
  int64_t started_ns;
  int64_t end_ns;  /* TTL deadline */
  pid_t pid;       /* bwrap, leader of its own process group */
  pid_t child_pid; /* first process inside the sandbox namespaces (bwrap --info-fd) */
  int netns_fd;    /* /proc/<child_pid>/ns/net, held open for the sandbox's lifetime */
  char *dir;       /* <state-dir>/<id>, owned */
  struct abx_sandbox *next;
  /* lifecycle (api_sandboxes.c, lifecycle.c) */
  struct abx_template *tmpl; /* ref + sandbox use held (rootfs.h) */
  int auto_pause;            /* TTL pauses instead of killing */
  int auto_pause_memory;     /* 1: the TTL's auto-pause keeps memory (freezer); 0: filesystem
                              * only, the resume is a fresh boot (v2 autoPauseMemory, default 1) */
  int auto_resume;           /* traffic to a paused sandbox resumes it (v2 autoResume.enabled) */
  int memory_paused;         /* paused with memory (frozen) = 1; filesystem only = 0 */
  int64_t timeout_s;         /* the create (or fork) request's timeout; an auto-resume's TTL is
                              * max(timeout_s, 300) (lifecycle.h); 0 = not recorded */
  json_t *env_vars;          /* the create request's envVars, owned (sandbox.c), for reboots */
  int cpu_count;             /* limits applied as cgroup limits and reported by get_info and */
  int memory_mb;             /* metrics; 0 = not yet set (the template's defaults apply) */
  int paused;                /* frozen (cgroup.h); paused sandboxes have no TTL */
  int64_t paused_ns;         /* when it was paused (endAt while paused) */
  json_t *volume_mounts;     /* [{name,path,readOnly}], owned; a use of each volume is held */
  char **volume_dirs;        /* host dirs, parallel to volume_mounts, owned */
  int skip_start;            /* a build sandbox (template_build.h): no start_cmd/ready_cmd */
  const char *origin;        /* static: why it starts, for serve's log ("forked", "build" for a
                              * build's sandbox, id "b..."; NULL: "created") */
  int pooled;                /* booted for the warm pool, not yet claimed (warm_pool.h): a low
                              * CPU weight, never listed */
  volatile int start_cancel; /* non-zero: its start's readiness wait ends (template_start.h) */
  int refs;                  /* atomic: the list's ref + abx_sandbox_get()s (sandbox.h) */
  int listed;
  pthread_mutex_t op; /* serializes pause/resume/snapshot/kill of this sandbox */
};

void abx_registry_lock(void);
void abx_registry_unlock(void);

/* Under the lock: the first listed sandbox (iterate with ->next), or NULL. */
struct abx_sandbox *abx_registry_head(void);

/* Under the lock: the sandbox with `id`, or NULL. */
struct abx_sandbox *abx_registry_find(const char *id);

/* Add a fully started sandbox: the caller's ref (abx_sandbox_new) becomes the list's. Takes the
 * lock itself. */
void abx_registry_add(struct abx_sandbox *sb);

/* Unlist and return every sandbox as a ->next list; each list ref passes to the caller
 * (shutdown). Takes the lock itself. */
struct abx_sandbox *abx_registry_take_all(void);

/* Unlist `sb` (its list ref then belongs to the caller, who puts it). Returns 1 when it was
 * listed, 0 when someone else unlisted it first. Takes the lock itself. */
int abx_registry_unlist(struct abx_sandbox *sb);

/* Under the lock: dup() of the sandbox's netns fd, or -1 when `id` is unknown. Takes the lock. */
int abx_registry_netns(const char *id);

/* Like abx_registry_netns, but -2 when the sandbox is paused. */
int abx_registry_netns_running(const char *id);

#endif
