/*
 * text.c: percent-decoding and RFC3339 time. Contract in text.h.
 */
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int hexval(char ch)
{
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

int abx_percent_decode(char *s, int plus_space)
{
  char *w = s;
  for (const char *r = s; *r; r++) {
    if (*r == '%') {
      int hi = hexval(r[1]), lo = hi < 0 ? -1 : hexval(r[2]);
      if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
        return -1;
      *w++ = (char)(hi * 16 + lo);
      r += 2;
    } else if (*r == '+' && plus_space) {
      *w++ = ' ';
    } else {
      *w++ = *r;
    }
  }
  *w = 0;
  return 0;
}

void abx_rfc3339(int64_t ns, char out[32])
{
  time_t secs = (time_t)(ns / 1000000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char base[24];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, 32, "%s.%03dZ", base, (int)((ns / 1000000) % 1000));
}

int abx_rfc3339_parse(const char *s, int64_t *ns)
{
  struct tm tm = {0};
  const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
  if (!p || s[4] != '-' || s[10] != 'T')
    return -1;
  int64_t frac = 0, scale = 1000000000;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9')
      return -1;
    for (; *p >= '0' && *p <= '9'; p++)
      if (scale > 1) {
        scale /= 10;
        frac += (*p - '0') * scale;
      }
  }
  long off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if ((*p == '+' || *p == '-') && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' && p[2] <= '9' &&
             p[3] == ':' && p[4] >= '0' && p[4] <= '9' && p[5] >= '0' && p[5] <= '9') {
    off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600L + ((p[4] - '0') * 10 + (p[5] - '0')) * 60L;
    if (*p == '-')
      off = -off;
    p += 6;
  } else {
    return -1;
  }
  if (*p)
    return -1;
  time_t t = timegm(&tm);
  if (t == (time_t)-1 && !(tm.tm_year == 69 && tm.tm_mday == 31))
    return -1;
  *ns = ((int64_t)t - off) * 1000000000 + frac;
  return 0;
}
