/*
 * sandbox.h: templates and the lifecycle of one sandbox: an isolated process tree run with
 * bubblewrap (pid, net, uts, ipc and mount namespaces) whose first program is envd.
 *
 * Layout:  <state-dir>/<id>/{upper,work,rootfs,envd.log,boot_id}: / is the writable overlay root of the
 *          sandbox's template (rootfs.h: /home/user uid 1000 0755, /root 0700, /tmp 1777, /usr and
 *          /etc writable copy-on-write); /opt/abx/abxlua (read-only) is abxlua-envd when it sits
 *          beside the serving abxlua (envd and sudo only, fewer libraries), else abxlua itself, and
 *          runs `envd --port 49983`; volumes are bound at their paths (read-only when asked); boot_id (a
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

/* Start `sb` (id, template_id, tmpl, volumes, secure and token already set; a deep copy of
 * env_vars is kept in sb->env_vars for reboots): create its state dir,
 * mount its root, create its cgroups, spawn bwrap,
 * wait (60 s) for envd's /health, then POST /init (30 s) with `env_vars` (object, borrowed) and
 * the token, then run the template's start and ready commands (template_start.h: up to its ready
 * timeout). Fills pid, child_pid, netns_fd, dir. On failure everything started is torn down, the
 * fields are reset, and -1 is returned with err set (give ABX_START_ERR_MAX bytes). */
int abx_sandbox_start(struct abx_sandbox *sb, json_t *env_vars, char *err, size_t errlen);

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

/* abx_sandbox_stop, then free `sb` with everything it owns (template ref, volume uses). */
void abx_sandbox_destroy(struct abx_sandbox *sb);

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

#endif
