/*
 * util/log.h: the lines `abxlua serve` writes to its log (stderr, and stdout for the start-up
 * lines; the engine sends both to <state>/abxlua/serve-<run id>.log, engine/platform.c).
 *
 * Format:  one line per call: "<UTC time, ISO 8601 with ms> abxlua serve: <message>\n", e.g.
 *          "2026-12-03T19:48:52.123Z abxlua serve: sandbox ixyz stopped: killed by API". A
 *          newline or other control character inside the message becomes a space, so every line
 *          of the log starts with its time. A message longer than ABX_SLOG_MAX bytes is cut
 *          and ends in "...".
 * Threads: any thread; each line is one write(2) (whole lines in an O_APPEND file), under a
 *          mutex so that a partial write is finished before another line starts.
 * Secrets: the callers never pass the API key, envd access tokens or traffic tokens; a request
 *          line carries the path only, never the query string (abx_slog_request).
 */
#ifndef ABX_UTIL_LOG_H
#define ABX_UTIL_LOG_H

#include <stdarg.h>
#include <stdint.h>

#define ABX_SLOG_MAX 1024
/* A request whose answer took longer than this is logged even when it succeeded. */
#define ABX_SLOG_SLOW_MS 5000

/* Writes one line to stderr (fd 2), printf-style message. Errors of write(2) are ignored: the
 * log never makes an operation fail. */
void abx_slog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes one line to file descriptor `fd` (1: serve's start-up lines on stdout). */
void abx_slog_fd(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* libmicrohttpd's error logger (MHD_OPTION_EXTERNAL_LOGGER; `cls` unused): its messages as lines
 * "libmicrohttpd: <message>" on stderr. */
void abx_slog_mhd(void *cls, const char *fmt, va_list ap);

/* Logs one finished request when it failed (status >= 400, 0: no answer was sent, or `ended` set)
 * or was slow (answer_ms > ABX_SLOG_SLOW_MS): "request <method> <path> status=<n>|none
 * ms=<answer_ms> total_ms=<total_ms>[ sandbox=<id>][ ended=<ended>][ (slow)]". `ended`: NULL when
 * the request completed, else how it ended early ("error", "timeout", "client-left",
 * "read-error", "shutdown"). `target` is the raw request target: only its path (up to
 * the first '?' or '#', at most 200 bytes) is written. `sandbox`: the ingress's sandbox id, or
 * NULL (then the id in a "/sandboxes/<id>" path, if any). answer_ms: until the answer's status
 * was queued; total_ms: until the request completed (a proxied stream's whole body). */
void abx_slog_request(const char *method, const char *target, unsigned status, const char *sandbox,
                      int64_t answer_ms, int64_t total_ms, const char *ended);

#endif
