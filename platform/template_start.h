/*
 * template_start.h: a template's start and ready commands, run in each of its sandboxes at start.
 *
 * Semantics (E2B's, reference/e2b-v2-and-peers.md §2 item 3 startCmd/readyCmd, §3 template):
 *          once envd is healthy and initialized, start_cmd runs as root (a built template's:
 *          as its USER, in its WORKDIR, template_build.h) through envd
 *          (envd_client.h abx_envd_run: the sandbox's own process spawn path, so it gets the
 *          sandbox's env vars from /init) in the background, in its own session, its stdout and
 *          stderr appended to START_LOG inside the sandbox; then ready_cmd runs (as root, bash -c)
 *          every READY_POLL_MS until it exits 0, for at most READY_TIMEOUT_S. The sandbox is
 *          handed out only then. Templates without the commands (base, snapshots of base) skip
 *          this; a snapshot inherits them from its parent layers (rootfs.h).
 * Errors:  -1 with err naming the template, the ready command, its last exit code and output
 *          (its last 120 bytes), and the last 160 bytes of START_LOG (sized so that the message
 *          fits the 512-byte error of a create).
 */
#ifndef ABX_LOCAL_TEMPLATE_START_H
#define ABX_LOCAL_TEMPLATE_START_H

#include <stddef.h>

#include "rootfs.h"

#define ABX_START_LOG "/var/log/abx/start_cmd.log"
#define ABX_READY_TIMEOUT_S 60
#define ABX_READY_POLL_MS 200

/* The command the sandboxes of `t` run at start, from the nearest layer that sets one (so a
 * snapshot of a code-interpreter-v1 sandbox still starts its server). NULL: none. */
const char *abx_template_start_cmd(const struct abx_template *t);

/* Likewise the ready command. NULL: none (ready once envd is). */
const char *abx_template_ready_cmd(const struct abx_template *t);

/* Run t's start_cmd, then wait for its ready_cmd, in the sandbox whose network namespace is
 * `netns_fd` (envd reachable on 127.0.0.1:49983 there). `token`: envd's access token or NULL.
 * 0 when ready (or the template has neither command). */
int abx_template_start(const struct abx_template *t, int netns_fd, const char *token, char *err,
                       size_t errlen);

#endif
