/*
 * secrets.h: the registry of secret values and the masking every output sink goes through.
 *
 * A registered value is also masked in its derived forms: standard base64 (padded and not),
 * URL-encoded, JSON-escaped (with and without "\/", short or \u00xx control escapes), and the HTTP
 * Basic form base64("<value>:"). Each is replaced by "***".
 *
 * Output streams (stdout, stderr) are written through abx_secrets_write, which masks across write
 * boundaries: a secret written in two pieces (two chunks of a command's output a scenario writes
 * as they come) is masked as if written at once. It holds back the longest tail of what was written
 * that is a proper prefix of some registered form (at most the longest form - 1 bytes, usually
 * none), and a group of occurrences that reaches into that tail, until the next write completes or
 * refutes it, abx_secrets_flush, or abx_secrets_free. Held-back bytes are written masked; a tail
 * never completed is written as is (it is not the secret). Masking that waits for a newline would
 * fail for secrets that contain one (.env values may span lines) and delay every status line.
 *
 * A value is masked from the moment it is registered: the engine registers tokens as soon as an
 * answer carrying them has arrived (the -vvv trace registers credential-named JSON fields before
 * printing the body), before any sink can see it. A value sent to the engine in an answer that
 * arrives before the answer issuing it (a platform that leaks another client's token) cannot be
 * known and is not masked.
 * Limits:  values shorter than ABX_SECRET_MIN_LEN bytes are ignored (masking "a" would destroy
 *          every message); at most ABX_SECRETS_MAX forms (about 10 per value), the oldest kept;
 *          ABX_SINKS_MAX output streams hold back (others are masked per write).
 * Errors:  none; allocation failure drops the value from the registry (and says so on stderr).
 */
#ifndef ABX_SECRETS_H
#define ABX_SECRETS_H

#include <stddef.h>
#include <stdio.h>

#define ABX_SECRET_MIN_LEN 6
#define ABX_SECRETS_MAX 65536
#define ABX_SINKS_MAX 4

struct abx_secrets;

/* A new, empty registry, or NULL when out of memory. */
struct abx_secrets *abx_secrets_new(void);
/* Flushes every held-back tail (abx_secrets_flush), then frees the registry. NULL is allowed. */
void abx_secrets_free(struct abx_secrets *s);

/* Registers 'value' (len bytes) and its derived forms. Idempotent. */
void abx_secrets_add(struct abx_secrets *s, const char *value, size_t len);

/* Returns a malloc'd, NUL-terminated masked copy of 'text' (len bytes); *out_len gets its length.
 * Returns NULL only when out of memory. */
char *abx_secrets_mask(const struct abx_secrets *s, const char *text, size_t len, size_t *out_len);

/* Writes text[0, len) to f masked, holding back a tail that may begin a secret (see the top of this
 * file), and flushes f. Returns 0, or -1 when out of memory (what was held is written masked, the
 * new text is dropped). */
int abx_secrets_write(struct abx_secrets *s, FILE *f, const char *text, size_t len);

/* Writes the held-back tail of f (NULL: of every stream) masked and forgets the stream (call it
 * before closing a stream written through abx_secrets_write). */
void abx_secrets_flush(struct abx_secrets *s, FILE *f);

#endif
