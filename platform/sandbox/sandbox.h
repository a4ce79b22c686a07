/*
 * sandbox.h: templates and the lifecycle of one sandbox: an isolated process tree run with
 * bubblewrap (pid, net, uts, ipc and mount namespaces) whose first program is envd.
 *
 * Layout:  <state-dir>/<id>/{upper,work,rootfs,envd.log,boot_id}: / is the writable overlay root of the
 *          sandbox's template (rootfs.h: /home/user uid 1000 0755, /root 0700, /tmp 1777, /usr and
 *          /etc writable copy-on-write); /opt/abx/abxlua (read-only) is abxlua-envd when it sits
 *          beside the serving abxlua (envd and sudo only, fewer libraries), else abxlua itself, and
 *          runs `envd --port 49983` (with ABX_ENVD_MUTANTS="name,..." in its environment when
 *          `serve --mutant` turned envd mutants on, util/mutant.h; never in a build's sandbox);
 *          volumes are bound at their paths (read-only when asked); boot_id (a
 *          UUID made for each boot) is bound read-only over /proc/sys/kernel/random/boot_id. The state
 *          dir, host /root, /home, /work and /tmp are never mounted in. Every process is in the
 *          sandbox's cgroups (cgroup.h) from the start. Network: a namespace of its own with
 *          loopback and eth0, a veth link into the platform's hub namespace, with outbound rules
 *          (network.h; DESIGN.md "The local platform"; docs/protocol/envd-protocol.md §7 /init).
 * Units:   deadlines in CLOCK_MONOTONIC nanoseconds.
 * Errors:  abx_sandbox_start returns 0, or -1 with a message in err (the sandbox is then torn down).
 */
#ifndef ABX_SANDBOX_SANDBOX_H
#define ABX_SANDBOX_SANDBOX_H

#include <jansson.h>
#include <stddef.h>

#include "registry.h"

/* Set once at startup: the state directory and the resolved path of the abxlua executable.
 * Both strings are borrowed for the life of the process. Removes <state-dir>/.trash (the state
 * dirs of sandboxes a previous serve stopped but had not removed yet). */
void abx_sandbox_config(const char *state_dir, const char *exe_path);

/* What a sandbox is made from (abx_sandbox_new). Zero is the default of every field. */
struct abx_sandbox_spec {
  char kind;                 /* its id's first letter: 'i' (0: 'i') a sandbox of the API, listed
                                * once started; 'b' a template build's, never listed */
  const char *origin;        /* static, why it starts, for serve's log ("forked", "build");
                                * NULL: "created" */
  struct abx_template *tmpl; /* borrowed: the sandbox takes its own ref and sandbox use */
  const char *template_id;   /* the template id and alias it reports; NULL: tmpl's own */
  const char *alias;
  json_t *metadata;         /* object str -> str, borrowed (copied); NULL: {} */
  int secure;               /* an envd access token is minted */
  int cpu_count, memory_mb; /* both 0: the template's */
  int auto_pause, auto_pause_memory, auto_resume; /* registry.h */
  json_t *volume_mounts; /* [{name, path, readOnly}], borrowed, already checked: a use of
                                * each named volume is taken (abx_volume_use) */
  const char *bind_dir;  /* instead: a host dir bound read-only at bind_path, no volume (a
                                * build step's files) */
  const char *bind_path;
  json_t *network;          /* a create request, borrowed: its network fields (net/network.h
                                * abx_network_create); NULL: the defaults (open egress) */
  const char *network_from; /* instead: the network settings of this sandbox (a fork) */
  json_t *env_vars;         /* object, borrowed: the envVars given to envd; NULL: {} */
  int skip_start;           /* no start_cmd/ready_cmd (a build's sandbox) */
  int defer_start;          /* made but not started: the caller calls abx_sandbox_start (the
                                * OpenSandbox flavour starts in a worker) */
  const char *start_failed; /* a start error's message becomes "<start_failed>: <error>";
                                * NULL: the error alone */
};

/* Make a sandbox from `spec`, in this order: the object (op mutex, netns_fd -1), a ref and use
 * of the template, the plain fields and a copy of the metadata, the volumes, the id
 * (abx_e2b_sandbox_id_new) and the token, the network settings, the start (abx_sandbox_start,
 * unless defer_start). Each step pushes its undo on a cleanup stack (cleanup.h); a failure runs
 * them in reverse, so nothing is left behind. The sandbox is not listed: the caller sets its TTL
 * (started_ns, end_ns, timeout_s) and lists it (abx_registry_add).
 * Returns the sandbox with one ref, the caller's (abx_sandbox_put; abx_registry_add makes it the
 * list's), and *status 0. NULL on failure with *status an HTTP status and err set (give
 * ABX_START_ERR_MAX + 64 bytes): 400 when the request is what is wrong (an unknown volume, bad
 * network fields: abx_network_create's messages), 500 otherwise ("out of memory", "no randomness
 * available", a volume or network failure, or the start's error behind spec->start_failed). */
struct abx_sandbox *abx_sandbox_new(const struct abx_sandbox_spec *spec, int *status, char *err,
                                    size_t errlen);

/* References (registry.h "Locking"): atomic, so no lock is needed. abx_sandbox_ref takes one more
 * on a sandbox the caller holds one of, and returns it. abx_sandbox_get finds listed sandbox
 * `id` and takes a ref (NULL when unknown or unlisted; takes the registry lock). abx_sandbox_put
 * drops one; the last one stops the sandbox (abx_sandbox_stop) and frees it with everything it
 * owns (template ref, volume uses, network settings, metrics); call it without the registry lock
 * and without the sandbox's op mutex. NULL is ignored. */
struct abx_sandbox *abx_sandbox_ref(struct abx_sandbox *sb);
struct abx_sandbox *abx_sandbox_get(const char *id);
void abx_sandbox_put(struct abx_sandbox *sb);

/* Start `sb` (abx_sandbox_new calls this, unless its spec says defer_start; a deep copy of
 * env_vars is kept in sb->env_vars for reboots): create its state dir,
 * mount its root, create its cgroups, spawn bwrap,
 * wait (60 s) for envd's /health, then POST /init (30 s) with `env_vars` (object, borrowed) and
 * the token, then run the template's start and ready commands (template_start.h: up to its ready
 * timeout). Fills pid, child_pid, netns_fd, dir. On failure everything started is torn down, the
 * fields are reset, and -1 is returned with err set (give ABX_START_ERR_MAX bytes). */
int abx_sandbox_start(struct abx_sandbox *sb, json_t *env_vars, char *err, size_t errlen);

/* POST /init to a running sandbox's envd again, as its start did: `env_vars` (object, borrowed;
 * the template's ENV under them), the default user and workdir, and sb->token when sb->secure
 * (envd replaces its env vars and token: envd.c handle_init). A copy of env_vars is kept for
 * reboots. For a claim from the warm pool (warm_pool.h): the create's envVars and token reach
 * every later command. 0, or -1 with err. The caller holds the only reference. */
int abx_sandbox_init_again(struct abx_sandbox *sb, json_t *env_vars, char *err, size_t errlen);

/* The error buffer a caller of abx_sandbox_start / abx_sandbox_reboot gives: room for the
 * readiness error with its probe output and start log tail (template_start.h). */
#define ABX_START_ERR_MAX 1024

/* Stop every process of the sandbox (thawing it when frozen) and delete its network link, but
 * keep its state dir, overlay root (so every file) and cgroups: a filesystem-only pause. Sets
 * pid, child_pid to 0 and netns_fd to -1. The op mutex is held by the caller. */
void abx_sandbox_halt(struct abx_sandbox *sb);

/* Boot a halted sandbox again on the same root: new bwrap, new envd (POST /init with the
 * envVars of its start and its token), a new link with its network settings, a new boot id.
 * 0, or -1 with err (the sandbox is halted again, its files kept). Op mutex held by the caller. */
int abx_sandbox_reboot(struct abx_sandbox *sb, char *err, size_t errlen);

/* SIGKILL the whole sandbox (thawing it when paused), wait for bwrap and the namespace's first
 * process to die (2 s deadline for the latter), remove its cgroups, unmount its root, remove its
 * state dir (its path at once: the files in the background, abx_sandbox_drain_trash). Idempotent. The sandbox's op mutex is held by the caller when it is shared. */
void abx_sandbox_stop(struct abx_sandbox *sb);

/* Wait until the state dirs of stopped sandboxes are removed (abx_sandbox_stop renames a
 * sandbox's dir into <state-dir>/.trash and a worker thread removes it), then remove the trash
 * itself. Called at shutdown (abx_lifecycle_shutdown). */
void abx_sandbox_drain_trash(void);

/* The rest of the wing's contract: platform/sandbox/ is reached through this header alone
 * (tests/layout/wings.py). */
#include "registry.h"
#include "lifecycle.h"
#include "metrics.h"
#include "cgroup.h"
#include "volume.h"
#include "sandbox_log.h"
#include "recover.h"
#include "spawner.h"
#include "envd_client.h"
#include "template_start.h"
#include "warm_pool.h"

#endif
