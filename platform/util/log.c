/*
 * util/log.c: timestamped whole lines in serve's log. Contract in util/log.h.
 */
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t g_write = PTHREAD_MUTEX_INITIALIZER;

/* Writes "<time> abxlua serve: <message>\n" to fd as one write (see util/log.h). */
static void vline(int fd, const char *fmt, va_list ap)
{
  char line[ABX_SLOG_MAX + 64];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(line, 32, "%Y-%m-%dT%H:%M:%S", &tm);
  n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ abxlua serve: ", ts.tv_nsec / 1000000L);
  size_t start = n, room = ABX_SLOG_MAX + 1;
  int m = vsnprintf(line + n, room, fmt, ap);
  if (m < 0)
    m = 0;
  if ((size_t)m >= room) { /* cut: the message's first bytes, then "..." */
    m = (int)(room - 1);
    memcpy(line + n + m - 3, "...", 3);
  }
  n += (size_t)m;
  for (size_t i = start; i < n; i++) /* one line: every line of the log starts with its time */
    if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
      line[i] = ' ';
  while (n > start && line[n - 1] == ' ') /* a message's own "\n" (libmicrohttpd's) */
    n--;
  line[n++] = '\n';
  pthread_mutex_lock(&g_write);
  for (size_t off = 0; off < n;) {
    ssize_t w = write(fd, line + off, n - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  pthread_mutex_unlock(&g_write);
}

void abx_slog(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vline(2, fmt, ap);
  va_end(ap);
}

void abx_slog_fd(int fd, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vline(fd, fmt, ap);
  va_end(ap);
}

void abx_slog_mhd(void *cls, const char *fmt, va_list ap)
{
  (void)cls;
  char msg[ABX_SLOG_MAX];
  vsnprintf(msg, sizeof msg, fmt, ap);
  abx_slog("libmicrohttpd: %s", msg);
}

void abx_slog_request(const char *method, const char *target, unsigned status, const char *sandbox,
                      int64_t answer_ms, int64_t total_ms, const char *ended)
{
  if (status > 0 && status < 400 && answer_ms <= ABX_SLOG_SLOW_MS && !ended)
    return;
  const char *t = target ? target : "";
  int plen = (int)strcspn(t, "?#"); /* the path only: a query may carry a signature */
  if (plen > 200)
    plen = 200;
  char sb[40] = "";
  if (sandbox && *sandbox) {
    snprintf(sb, sizeof sb, " sandbox=%.30s", sandbox);
  } else {
    const char *p = strstr(t, "/sandboxes/");
    if (p && p - t < plen) {
      p += strlen("/sandboxes/");
      int idl = (int)strcspn(p, "/?#");
      if (idl > 0 && idl <= 30)
        snprintf(sb, sizeof sb, " sandbox=%.*s", idl, p);
    }
  }
  char st[16] = "none";
  if (status)
    snprintf(st, sizeof st, "%u", status);
  abx_slog("request %s %.*s status=%s ms=%" PRId64 " total_ms=%" PRId64 "%s%s%s%s",
           method ? method : "?", plen, t, st, answer_ms, total_ms, sb, ended ? " ended=" : "",
           ended ? ended : "", answer_ms > ABX_SLOG_SLOW_MS ? " (slow)" : "");
}
