/*
 * http_util.c: JSON/error responses, random ids, percent-decoding, time and base64url helpers.
 * Contract in http_util.h.
 */
#include "http_util.h"

#include "faults.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

enum MHD_Result abx_http_text(struct MHD_Connection *c, unsigned status, const char *ctype,
                              const char *data, size_t len)
{
  struct MHD_Response *r = abx_faults_response(data, len); /* copies; faults.h */
  if (!r)
    return MHD_NO;
  if (ctype)
    MHD_add_response_header(r, "Content-Type", ctype);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

enum MHD_Result abx_http_json(struct MHD_Connection *c, unsigned status, json_t *body)
{
  if (!body)
    return abx_http_text(c, status, NULL, "", 0);
  char *s = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (!s)
    return MHD_NO;
  enum MHD_Result ret = abx_http_text(c, status, "application/json", s, strlen(s));
  free(s);
  return ret;
}

enum MHD_Result abx_http_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
  return abx_http_json(c, status, json_pack("{s:i,s:s}", "code", (int)status, "message", msg));
}

static int rand_bytes(unsigned char *buf, size_t n)
{
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
  if (n > sizeof buf || rand_bytes(buf, n) != 0)
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
  if (n > sizeof buf || rand_bytes(buf, n) != 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    unsigned char b = buf[i];
    while (b >= 252) { /* reject to avoid modulo bias (252 = 7 * 36) */
      if (rand_bytes(&b, 1) != 0)
        return -1;
    }
    out[i] = al[b % 36];
  }
  out[n] = 0;
  return 0;
}

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
  } else if ((*p == '+' || *p == '-') && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' &&
             p[2] <= '9' && p[3] == ':' && p[4] >= '0' && p[4] <= '9' && p[5] >= '0' &&
             p[5] <= '9') {
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

int64_t abx_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t abx_mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

ssize_t abx_read_small(const char *path, char *buf, size_t n)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t k = read(fd, buf, n - 1);
  int e = errno;
  close(fd);
  if (k < 0) {
    errno = e;
    return -1;
  }
  buf[k] = 0;
  return k;
}
