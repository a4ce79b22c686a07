/*
 * secrets.h: the registry of secret values and the masking every output sink goes through.
 *
 * A registered value is also masked in its derived forms: standard base64, URL-encoded,
 * JSON-escaped, and the HTTP Basic form base64("<value>:"). Each is replaced by "***".
 * Limits:  values shorter than ABX_SECRET_MIN_LEN bytes are ignored (masking "a" would destroy
 *          every message); at most ABX_SECRETS_MAX forms (about 7 per value), the oldest kept.
 * Errors:  none; allocation failure drops the value from the registry (and says so on stderr).
 */
#ifndef ABX_SECRETS_H
#define ABX_SECRETS_H

#include <lua.h>
#include <stddef.h>

#define ABX_SECRET_MIN_LEN 6
#define ABX_SECRETS_MAX 65536

struct abx_secrets;

struct abx_secrets *abx_secrets_new(void);
void abx_secrets_free(struct abx_secrets *s);

/* Registers 'value' (len bytes) and its derived forms. Idempotent. */
void abx_secrets_add(struct abx_secrets *s, const char *value, size_t len);

/* Returns a malloc'd, NUL-terminated masked copy of 'text' (len bytes); *out_len gets its length.
 * Returns NULL only when out of memory. */
char *abx_secrets_mask(const struct abx_secrets *s, const char *text, size_t len, size_t *out_len);

/* Pushes the masked form of the NUL-terminated 'text'. [-0, +1, m] */
void abx_secrets_push_masked(lua_State *L, const struct abx_secrets *s, const char *text);

#endif
