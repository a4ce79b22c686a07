/*
 * sandbox_log.h: a sandbox's log, what GET /sandboxes/{id}/logs and GET /v2/sandboxes/{id}/logs
 * answer (api_logs.c). The platform writes one entry per lifecycle event of the sandbox (started,
 * booted again, paused, resumed) to <state-dir>/<id>/sandbox.log, one JSON object a line:
 * {"timestamp": RFC 3339 UTC with ms, "level": "info"|"warn"|"error", "message", "fields":
 * {"source": "platform", ...}} (SandboxLogEntry, docs/protocol/e2b-control-plane.md §3.3). When
 * the sandbox is killed the file moves to <state-dir>/.logs/ (abx_sandbox_log_keep).
 * Limits: at most ABX_SANDBOX_LOG_MAX bytes; an entry that would pass it is dropped (the log is
 *          a record of events, never a reason for an operation to fail).
 * Threads: appends are single write(2)s with O_APPEND: whole lines, in any thread.
 */
#ifndef ABX_SANDBOX_SANDBOX_LOG_H
#define ABX_SANDBOX_SANDBOX_LOG_H

#include <jansson.h>
#include <stdint.h>

#define ABX_SANDBOX_LOG_MAX (1024 * 1024)

struct abx_sandbox;

/* Appends an entry to sb's log: `level` "info", "warn" or "error"; `message` printf-style.
 * Silently nothing when the directory is gone or the log is full (see Limits). */
void abx_sandbox_log(const struct abx_sandbox *sb, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The entries of the log in directory `dir` (a sandbox's), oldest first, as a new JSON array of
 * SandboxLogEntry objects; an absent log gives []. Lines that are not entries are skipped. NULL
 * only when out of memory. */
json_t *abx_sandbox_log_read(const char *dir);

/* At most this many logs of killed sandboxes are kept (abx_sandbox_log_keep); the oldest goes. */
#define ABX_SANDBOX_LOG_KEPT 256

/* Keeps sb's log once the sandbox is gone: called by abx_sandbox_stop before the directory is
 * removed, it moves <dir>/sandbox.log to <state-dir>/.logs/<id>.log (the state dir is the
 * directory's parent). E2B answers a killed sandbox's logs (e2b-dev/infra
 * packages/api/internal/handlers/sandbox_logs.go: a Loki query over 7 days, no check that the
 * sandbox runs), and `e2b sandbox logs -f` (e2b-dev/E2B packages/cli
 * src/commands/sandbox/logs.ts @ b8029973) ask once more after the sandbox ends. Nothing when
 * there is no log; failures are silent (the log is a record, never a reason to fail a kill). */
void abx_sandbox_log_keep(const struct abx_sandbox *sb);

/* The kept log of killed sandbox `id` as abx_sandbox_log_read answers it, or NULL when none is
 * kept (or out of memory). */
json_t *abx_sandbox_log_read_kept(const char *id);

#endif
