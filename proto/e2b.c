/*
 * e2b.c: the sandbox-id rule of e2b.h and the minting of an id.
 */
#include "e2b.h"

int abx_e2b_sandbox_id_valid(const char *s, size_t n)
{
  if (n == 0 || n > ABX_E2B_SANDBOX_ID_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return 0;
  }
  return 1;
}

int abx_e2b_sandbox_id_new(char *out, char kind, int (*fill)(void *buf, size_t n))
{
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char raw[ABX_E2B_SANDBOX_ID_RANDOM];
  out[0] = 0;
  if (kind < 'a' || kind > 'z' || fill(raw, sizeof raw) != 0)
    return -1;
  out[0] = kind;
  for (size_t i = 0; i < sizeof raw; i++) {
    unsigned char b = raw[i];
    while (b >= 252) { /* 252 = 7 * 36: above it a modulo would favour the first letters */
      if (fill(&b, 1) != 0) {
        out[0] = 0;
        return -1;
      }
    }
    out[1 + i] = alphabet[b % 36];
  }
  out[1 + sizeof raw] = 0;
  return 0;
}
