/*
 * http_util.h: small helpers shared by the local platform's control plane and ingress: JSON and
 * error responses on libmicrohttpd, random identifiers, percent-decoding, RFC3339 time, base64url.
 *
 * Shapes:  error body {"code":<status>,"message":"..."} with code == HTTP status
 *          (docs/protocol/e2b-control-plane.md §2 "Error body").
 * Units:   times are int64 nanoseconds since the Unix epoch (CLOCK_REALTIME) unless named _mono.
 * Errors:  functions returning int give 0 on success, -1 on failure; they never abort on bad input.
 */
#ifndef ABX_LOCAL_HTTP_UTIL_H
#define ABX_LOCAL_HTTP_UTIL_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Queue `body` (stolen reference; NULL sends an empty body) as JSON with `status`. Returns MHD's result. */
enum MHD_Result abx_http_json(struct MHD_Connection *c, unsigned status, json_t *body);

/* Queue {"code":status,"message":msg} with `status` (§2 error body). */
enum MHD_Result abx_http_error(struct MHD_Connection *c, unsigned status, const char *msg);

/* Queue a body of `len` bytes copied from `data` with `status` and optional content type. */
enum MHD_Result abx_http_text(struct MHD_Connection *c, unsigned status, const char *ctype,
                              const char *data, size_t len);

/* Fill `out` with `n` random lowercase hex digits (getrandom) and a NUL; out holds n+1 bytes.
 * Returns 0, or -1 when the kernel gives no randomness. */
int abx_rand_hex(char *out, size_t n);

/* Fill `out` with `n` random chars from [a-z0-9] and a NUL; out holds n+1 bytes. Returns 0 or -1. */
int abx_rand_alnum(char *out, size_t n);

/* Decode %XX escapes (and '+' as space when plus_space) in place. Returns 0, or -1 on a bad escape
 * or a decoded NUL byte. */
int abx_percent_decode(char *s, int plus_space);

/* Format `ns` as RFC3339 UTC with millisecond precision ("2025-01-02T03:04:05.678Z") into out[32]. */
void abx_rfc3339(int64_t ns, char out[32]);

/* Parse an RFC3339 date-time ("2025-01-02T03:04:05Z", optional fraction, "Z" or "±hh:mm") into
 * nanoseconds since the epoch. 0, or -1 when `s` is not one (trailing text included). */
int abx_rfc3339_parse(const char *s, int64_t *ns);

/* Current CLOCK_REALTIME / CLOCK_MONOTONIC time in nanoseconds. */
int64_t abx_now_ns(void);
int64_t abx_mono_ns(void);

/* Reads at most n - 1 bytes of a small file (a /proc or cgroup entry) into buf, NUL-terminated.
 * Returns the byte count, or -1 (errno set) when it cannot be opened or read. */
ssize_t abx_read_small(const char *path, char *buf, size_t n);


#endif
