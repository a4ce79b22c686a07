/*
 * ids.h: random identifiers (sandbox ids, tokens, names) from getrandom.
 */
#ifndef ABX_UTIL_IDS_H
#define ABX_UTIL_IDS_H

#include <stddef.h>

/* Fill buf with n random bytes (getrandom, retried on EINTR). 0, or -1 when the kernel gives
 * none. The byte source of abx_e2b_sandbox_id_new (proto/e2b.h). */
int abx_rand_bytes(void *buf, size_t n);

/* Fill `out` with `n` random lowercase hex digits (getrandom) and a NUL; out holds n+1 bytes.
 * Returns 0, or -1 when the kernel gives no randomness. */
int abx_rand_hex(char *out, size_t n);

/* Fill `out` with `n` random chars from [a-z0-9] and a NUL; out holds n+1 bytes. Returns 0 or -1. */
int abx_rand_alnum(char *out, size_t n);

#endif
