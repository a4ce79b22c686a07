/*
 * sandbox.h: templates and the lifecycle of one sandbox: an isolated process tree run with
 * bubblewrap (pid, net, uts, ipc and mount namespaces) whose first program is envd.
 *
 * Layout:  <state-dir>/<id>/{home,root,tmp,passwd,group,envd.log}; inside the sandbox home is
 *          /home/user (uid 1000, 0755), root is /root (0700), tmp is /tmp (1777); /usr, /etc and the
 *          host's /bin /lib /lib64 /sbin layout are read-only; the abxlua binary is /opt/abx/abxlua
 *          and runs `envd --port 49983`. The state dir, host /root, /home, /work and /tmp are never
 *          mounted in. Network: a namespace of its own with loopback only (DESIGN.md "The local
 *          platform"; reference/envd-protocol.md §7 /init).
 * Units:   deadlines in CLOCK_MONOTONIC nanoseconds.
 * Errors:  abx_sandbox_start returns 0, or -1 with a message in err (the sandbox is then torn down).
 */
#ifndef ABX_LOCAL_SANDBOX_H
#define ABX_LOCAL_SANDBOX_H

#include <jansson.h>
#include <stddef.h>

#include "local/registry.h"

/* A template: a name clients pass as templateID and how its root filesystem is built. */
struct abx_template {
  const char *id;     /* templateID reported back */
  const char *alias;  /* alias reported back */
  const char *rootfs; /* "host": read-only /usr, /etc and the /bin /lib layout of the host */
};

/* Look up `ref` ("base" or "base:default"/"base:latest"); NULL when unknown. */
const struct abx_template *abx_template_find(const char *ref);

/* Set once at startup: the state directory and the resolved path of the abxlua executable.
 * Both strings are borrowed for the life of the process. */
void abx_sandbox_config(const char *state_dir, const char *exe_path);

/* Start `sb` (id, template_id, secure and token already set): create its state dir, spawn bwrap,
 * wait (10 s) for envd's /health, then POST /init with `env_vars` (object, borrowed) and the
 * token. Fills pid, child_pid, netns_fd, dir. On failure everything started is torn down, the
 * fields are reset, and -1 is returned with err set. */
int abx_sandbox_start(struct abx_sandbox *sb, json_t *env_vars, char *err, size_t errlen);

/* SIGKILL the whole sandbox, wait for bwrap and the namespace's first process to die (2 s
 * deadline for the latter), remove its state dir and free `sb` with everything it owns. */
void abx_sandbox_destroy(struct abx_sandbox *sb);

/* Remove a directory tree without following symlinks or crossing mounts. Returns 0 or -1. */
int abx_rmtree(const char *path);

#endif
