/*
 * envd_client.h: the platform's own calls to envd inside a sandbox (health probe, /init and
 * process runs through process.Process/Start), over sockets opened in the sandbox's network
 * namespace (netns.h). The Connect envelopes and base64 are proto/'s (connect.h, base64.h).
 *
 * Shapes:  GET /health → 204 (any 2xx accepted); POST /init JSON {"envVars":{..},"accessToken"?:..,
 *          "defaultUser":"user"} → 204 (any 2xx accepted). docs/protocol/envd-protocol.md §7,
 *          §6.1–6.2.
 * Units:   deadlines are CLOCK_MONOTONIC nanoseconds (util/clock.h abx_mono_ns()).
 * Errors:  0 on success, -1 with a message in err[errlen].
 */
#ifndef ABX_SANDBOX_ENVD_CLIENT_H
#define ABX_SANDBOX_ENVD_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "e2b.h" /* ABX_E2B_ENVD_PORT */

/* Poll GET /health (1 ms after a failed probe, doubling up to 10 ms) until a 2xx answer or `deadline_mono`. Gives up early when
 * `bwrap_pid` has exited (it is then reaped and *exited set to 1). */
int abx_envd_wait_health(int netns_fd, pid_t bwrap_pid, int *exited, int64_t deadline_mono,
                         char *err, size_t errlen);

/* POST /init with `body` (borrowed), 30 s timeout (a loaded machine can take seconds). */
int abx_envd_init(int netns_fd, json_t *body, char *err, size_t errlen);

/* Run `script` with /bin/bash -c as `user` (envd's Basic auth user, e.g. "root") through envd's
 * process.Process/Start, a Connect server stream in the JSON codec (docs/protocol/envd-protocol.md
 * §2.1 content types, §2.3 envelopes, §4.1–4.3 StartRequest and the event sequence), and wait for
 * its end event. `envs` (borrowed, may be NULL) are extra environment variables; `token` is the
 * sandbox's envd access token or NULL. `timeout_ms` bounds the whole call. On return 0,
 * *exit_code is the process's exitCode (-1 for a signal) and out[outlen] holds the last bytes of
 * its stdout and stderr, interleaved as they came. -1 with err: envd unreachable, an error
 * end-of-stream, or no end event before the timeout. */
int abx_envd_run(int netns_fd, const char *token, const char *user, const char *script,
                 json_t *envs, long timeout_ms, int *exit_code, char *out, size_t outlen, char *err,
                 size_t errlen);

/* One line of a streamed process's output: `stream` 1 stdout, 2 stderr; `line` without its
 * newline, NUL-terminated (a last line without a newline is given at the end; lines longer than
 * 4 KiB are given in 4 KiB pieces). */
typedef void (*abx_envd_line_fn)(void *cls, int stream, const char *line);

/* abx_envd_run with the output streamed as it comes, line by line, to `fn` (called on the
 * caller's thread), instead of a tail buffer, and with a working dir: `cwd` NULL or "" leaves it
 * to envd (its default workdir, else the user's home; docs/protocol/envd-protocol.md §4.1
 * ProcessConfig.cwd). No output limit. 0 with *exit_code, or -1 with err as abx_envd_run. */
int abx_envd_run_stream(int netns_fd, const char *token, const char *user, const char *cwd,
                        const char *script, json_t *envs, long timeout_ms, abx_envd_line_fn fn,
                        void *cls, int *exit_code, char *err, size_t errlen);

#endif
