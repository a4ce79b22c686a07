/*
 * base64.c: RFC 4648 base64, both alphabets. See base64.h for the contract.
 */
#include "base64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char std_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t abx_b64_encode(char *out, const void *in, size_t n, enum abx_b64_alphabet alphabet)
{
  const char *a = alphabet == ABX_B64_URL ? url_alpha : std_alpha;
  const unsigned char *p = in;
  char *w = out;
  size_t i = 0;
  /* whole triples without a test per byte: envd encodes every output chunk (the encoder was
   * most of envd's CPU on a 256 MiB output, issue 14) */
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    w[0] = a[v >> 18];
    w[1] = a[(v >> 12) & 63];
    w[2] = a[(v >> 6) & 63];
    w[3] = a[v & 63];
    w += 4;
  }
  if (i < n) { /* one or two bytes left: padded */
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n)
      v |= (uint32_t)p[i + 1] << 8;
    *w++ = a[(v >> 18) & 63];
    *w++ = a[(v >> 12) & 63];
    *w++ = i + 1 < n ? a[(v >> 6) & 63] : '=';
    *w++ = '=';
  }
  *w = '\0';
  return (size_t)(w - out);
}

/* The 6-bit value of one character, or -1 outside the alphabets the flags allow. */
static int value(unsigned char c, unsigned flags)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '-')
    return 62;
  if (c == '_')
    return 63;
  if (flags & ABX_B64_URL_ONLY)
    return -1;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

/* value() of every byte for both alphabets at once, 255 outside them: the fast path of
 * abx_b64_decode reads four characters with four loads instead of a chain of compares (the
 * decode of a 256 MiB command output was 8 percent of the client's CPU, issue 14). */
static const unsigned char dec_table[256] = {
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 62,  255, 62,  255, 63,  52,  53,  54,  55,  56,  57,  58,  59,  60,
    61,  255, 255, 255, 255, 255, 255, 255, 0,   1,   2,   3,   4,   5,   6,   7,   8,   9,   10,
    11,  12,  13,  14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  255, 255, 255, 255,
    63,  255, 26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,  41,  42,
    43,  44,  45,  46,  47,  48,  49,  50,  51,  255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255,
};

static int is_space(unsigned char c)
{
  return c == ' ' || c == '\n' || c == '\r';
}

long abx_b64_decode(unsigned char *out, const char *in, size_t n, unsigned flags)
{
  size_t o = 0, digits = 0, pad = 0, i = 0;
  uint32_t acc = 0;
  int bits = 0;
  if (!(flags & ABX_B64_URL_ONLY)) {
    /* Whole quads of alphabet characters; the first '=', space or stray byte leaves the rest,
     * from that quad on, to the strict loop below, whose state at a quad boundary is this. */
    const unsigned char *s = (const unsigned char *)in;
    for (; i + 4 <= n; i += 4) {
      unsigned a = dec_table[s[i]], b = dec_table[s[i + 1]], c = dec_table[s[i + 2]],
               d = dec_table[s[i + 3]];
      if ((a | b | c | d) & 0x80u)
        break;
      uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | d;
      out[o] = (unsigned char)(v >> 16);
      out[o + 1] = (unsigned char)(v >> 8);
      out[o + 2] = (unsigned char)v;
      o += 3;
    }
    digits = i;
  }
  for (; i < n; i++) {
    unsigned char c = (unsigned char)in[i];
    if ((flags & ABX_B64_SPACE) && is_space(c))
      continue;
    if (c == '=') {
      pad++;
      continue;
    }
    if (pad > 0) /* a digit after padding */
      return -1;
    int v = value(c, flags);
    if (v < 0)
      return -1;
    digits++;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (unsigned char)((acc >> bits) & 0xff);
    }
  }
  if (digits % 4 == 1 || pad > 2 || (pad > 0 && (digits + pad) % 4 != 0))
    return -1;
  return (long)o;
}

char *abx_b64_encode_alloc(const void *in, size_t n, enum abx_b64_alphabet alphabet)
{
  char *out = malloc(ABX_B64_LEN(n) + 1);
  if (out)
    abx_b64_encode(out, in, n, alphabet);
  return out;
}

unsigned char *abx_b64_decode_alloc(const char *s, unsigned flags, size_t *out_len)
{
  size_t n = strlen(s);
  unsigned char *out = malloc(ABX_B64_DECODED_MAX(n) + 1);
  if (!out)
    return NULL;
  long k = abx_b64_decode(out, s, n, flags);
  if (k < 0) {
    free(out);
    return NULL;
  }
  out[k] = '\0';
  *out_len = (size_t)k;
  return out;
}
