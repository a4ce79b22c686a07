/*
 * base64.h: base64 encoder and strict decoder shared by the engine and the platform (no Lua, no
 * I/O). One implementation for every base64 in abxlua: ProtoJSON bytes fields (process output and
 * input, Basic auth, file checksums), core.b64encode/b64decode, the platform's page tokens.
 *
 * Shapes:  encode: n bytes -> ABX_B64_LEN(n) characters, padded with '=', NUL-terminated.
 *          decode: text in the standard alphabet (+ /) or the URL-safe one (- _), padded or not.
 * Strict:  a byte outside the alphabet, '=' anywhere but the last one or two places, a length of
 *          4k+1 characters (no byte ends there) or more than two '=' is malformed. With
 *          ABX_B64_SPACE, ' ', '\n' and '\r' are skipped first (line-wrapped input).
 * Errors:  decode returns -1 on malformed text (nothing is written past the output bound); the
 *          allocating forms return NULL on malformed text or out of memory.
 * Source:  RFC 4648 §4 (standard) and §5 (URL-safe); ProtoJSON accepts both, padded or not
 *          (docs/protocol/envd-protocol.md §3).
 */
#ifndef ABX_BASE64_H
#define ABX_BASE64_H

#include <stddef.h>

/* Encoded length of n bytes, padding included, NUL excluded. */
#define ABX_B64_LEN(n) (((n) + 2) / 3 * 4)
/* Upper bound of the bytes decoded from n characters. */
#define ABX_B64_DECODED_MAX(n) ((n) / 4 * 3 + 3)

/* Encoder alphabets. */
enum abx_b64_alphabet { ABX_B64_STD = 0, ABX_B64_URL = 1 };

/* Decoder flags (or-ed). ABX_B64_URL_ONLY: refuse '+' and '/' (tokens abxlua itself wrote in the
 * URL-safe alphabet). ABX_B64_SPACE: skip ' ', '\n', '\r'. */
enum { ABX_B64_URL_ONLY = 1u, ABX_B64_SPACE = 2u };

/* Writes the padded base64 of in[0..n) into out (ABX_B64_LEN(n) + 1 bytes: the text and a NUL).
 * Returns the text's length, ABX_B64_LEN(n). */
size_t abx_b64_encode(char *out, const void *in, size_t n, enum abx_b64_alphabet alphabet);

/* Decodes in[0..n) into out (at least ABX_B64_DECODED_MAX(n) bytes). Returns the byte count, or
 * -1 when the text is malformed (see "Strict" above). */
long abx_b64_decode(unsigned char *out, const char *in, size_t n, unsigned flags);

/* abx_b64_encode into a malloc'd NUL-terminated string; NULL on out of memory. */
char *abx_b64_encode_alloc(const void *in, size_t n, enum abx_b64_alphabet alphabet);

/* abx_b64_decode of the NUL-terminated s into a malloc'd buffer with a NUL after the bytes
 * (*out_len gets the byte count, the NUL excluded); NULL on malformed text or out of memory. */
unsigned char *abx_b64_decode_alloc(const char *s, unsigned flags, size_t *out_len);

#endif
