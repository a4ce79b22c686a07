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
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n)
      v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n)
      v |= p[i + 2];
    *w++ = a[(v >> 18) & 63];
    *w++ = a[(v >> 12) & 63];
    *w++ = i + 1 < n ? a[(v >> 6) & 63] : '=';
    *w++ = i + 2 < n ? a[v & 63] : '=';
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

static int is_space(unsigned char c)
{
  return c == ' ' || c == '\n' || c == '\r';
}

long abx_b64_decode(unsigned char *out, const char *in, size_t n, unsigned flags)
{
  size_t o = 0, digits = 0, pad = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
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
