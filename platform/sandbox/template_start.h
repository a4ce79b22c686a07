/*
 * template_start.h: a template's start and ready commands, run in each of its sandboxes at start.
 *
 * Semantics (E2B's, docs/protocol/e2b-v2-and-peers.md §2 item 3 startCmd/readyCmd, §3 template):
 *          once envd is healthy and initialized, start_cmd runs as root (a built template's:
 *          as its USER, in its WORKDIR, template_build.h) through envd
 *          (envd_client.h abx_envd_run: the sandbox's own process spawn path, so it gets the
 *          sandbox's env vars from /init) in the background, in its own session, its stdout and
 *          stderr appended to START_LOG inside the sandbox; then ready_cmd runs (as root, bash -c)
 *          every READY_POLL_MS until it exits 0, for at most the template's ready timeout
 *          (abx_template_ready_timeout). The sandbox is handed out only then. Templates without
 *          the commands (base, snapshots of base) skip this; a snapshot inherits them from its
 *          parent layers (rootfs.h).
 *          A probe whose envd call fails (envd slow to answer on a loaded machine, or a ready_cmd
 *          that hangs: each call may take a quarter of the ready timeout, 2..30 s) is not a
 *          verdict: it is counted and the probe is tried again until the deadline. The last
 *          probe may end up to that call bound after the deadline.
 * Errors:  -1 with err naming the template, the ready command, the seconds waited, the number of
 *          probes (and of those whose envd call failed), the last completed probe's exit code
 *          and output (its last 200 bytes; or, when none completed, the last envd error), and
 *          the last 320 bytes of START_LOG; the message fits ABX_START_ERR_MAX (sandbox.h), the
 *          error buffer every caller of abx_sandbox_start gives.
 */
#ifndef ABX_SANDBOX_TEMPLATE_START_H
#define ABX_SANDBOX_TEMPLATE_START_H

#include <stddef.h>

#include "template/template.h"

#define ABX_START_LOG "/var/log/abx/start_cmd.log"
#define ABX_READY_POLL_MS 200
/* The ready timeout of a template that sets none (base's commands, the built-in
 * code-interpreter-v1, a recipe without ready_timeout): 180 s. Quiet, code-interpreter-v1 is
 * ready in ~5 s and took 13-19 s beside a busy suite (issue 22), where a fixed 60 s failed; 180 s
 * is that many times over, and still ends a never-ready create well inside a test's default
 * 300 s limit (config defaults.test_timeout), so the readiness error, not a test timeout, is
 * what the test reports. */
#define ABX_READY_TIMEOUT_DEFAULT_S 180
/* The largest ready timeout a build may set (readyTimeout, template_build.h): 10 minutes. */
#define ABX_READY_TIMEOUT_MAX_S 600

/* The command the sandboxes of `t` run at start, from the nearest layer that sets one (so a
 * snapshot of a code-interpreter-v1 sandbox still starts its server). NULL: none. */
const char *abx_template_start_cmd(const struct abx_template *t);

/* Likewise the ready command. NULL: none (ready once envd is). */
const char *abx_template_ready_cmd(const struct abx_template *t);

/* Seconds t's ready_cmd may take: from the nearest layer that sets a ready timeout, else
 * ABX_READY_TIMEOUT_DEFAULT_S. */
int abx_template_ready_timeout(const struct abx_template *t);

/* Run t's start_cmd, then wait for its ready_cmd, in the sandbox whose network namespace is
 * `netns_fd` (envd reachable on 127.0.0.1:49983 there). `token`: envd's access token or NULL.
 * `cancel` (NULL: none): the wait ends at the next probe once *cancel is non-zero, -1 with an
 * error saying so (a warm pool's boot when serve stops, warm_pool.h). 0 when ready (or the
 * template has neither command). */
int abx_template_start(const struct abx_template *t, int netns_fd, const char *token,
                       const volatile int *cancel, char *err, size_t errlen);

#endif
