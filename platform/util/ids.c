/*
 * ids.c: random identifiers from getrandom. Contract in ids.h.
 */
#include "ids.h"

#include <errno.h>
#include <sys/random.h>
#include <sys/types.h>

int abx_rand_bytes(void *out, size_t n)
{
  unsigned char *buf = out;
  size_t got = 0;
  while (got < n) {
    ssize_t k = getrandom(buf + got, n - got, 0);
    if (k < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    got += (size_t)k;
  }
  return 0;
}

int abx_rand_hex(char *out, size_t n)
{
  static const char hex[] = "0123456789abcdef";
  unsigned char buf[256];
  if (n > sizeof buf || abx_rand_bytes(buf, n) != 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    out[i] = hex[buf[i] & 15];
  out[n] = 0;
  return 0;
}

int abx_rand_alnum(char *out, size_t n)
{
  static const char al[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char buf[256];
  if (n > sizeof buf || abx_rand_bytes(buf, n) != 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned char b = buf[i];
    while (b >= 252) { /* reject to avoid modulo bias (252 = 7 * 36) */
      if (abx_rand_bytes(&b, 1) != 0)
        return -1;
    }
    out[i] = al[b % 36];
  }
  out[n] = 0;
  return 0;
}
