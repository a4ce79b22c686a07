/*
 * envd_client.h: the platform's own calls to envd inside a sandbox (health probe and /init), over
 * sockets opened in the sandbox's network namespace (netns.h).
 *
 * Shapes:  GET /health → 204 (any 2xx accepted); POST /init JSON {"envVars":{..},"accessToken"?:..,
 *          "defaultUser":"user"} → 204 (any 2xx accepted). reference/envd-protocol.md §7, §6.1–6.2.
 * Units:   deadlines are CLOCK_MONOTONIC nanoseconds (http_util.h abx_mono_ns()).
 * Errors:  0 on success, -1 with a message in err[errlen].
 */
#ifndef ABX_LOCAL_ENVD_CLIENT_H
#define ABX_LOCAL_ENVD_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "e2b.h" /* ABX_E2B_ENVD_PORT */

/* Poll GET /health every 50 ms until a 2xx answer or `deadline_mono`. Gives up early when
 * `bwrap_pid` has exited (it is then reaped and *exited set to 1). */
int abx_envd_wait_health(int netns_fd, pid_t bwrap_pid, int *exited, int64_t deadline_mono,
                         char *err, size_t errlen);

/* POST /init with `body` (borrowed), 5 s timeout. */
int abx_envd_init(int netns_fd, json_t *body, char *err, size_t errlen);

#endif
