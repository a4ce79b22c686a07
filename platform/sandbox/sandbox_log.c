/*
 * sandbox_log.c: a sandbox's lifecycle log (contract in sandbox_log.h).
 */
#include "sandbox_log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"
#include "registry.h"

void abx_sandbox_log(const struct abx_sandbox *sb, const char *level, const char *fmt, ...)
{
  if (!sb || !sb->dir)
    return;
  char msg[512], ts[32], path[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  abx_rfc3339(abx_now_ns(), ts);
  json_t *e = json_pack("{s:s,s:s,s:s,s:{s:s}}", "timestamp", ts, "level", level, "message", msg,
                        "fields", "source", "platform");
  char *line = e ? json_dumps(e, JSON_COMPACT) : NULL;
  json_decref(e);
  if (!line)
    return;
  snprintf(path, sizeof path, "%s/sandbox.log", sb->dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    struct stat st;
    size_t n = strlen(line);
    line[n] = '\n'; /* json_dumps's buffer: its NUL becomes the newline, written with n + 1 */
    if (fstat(fd, &st) == 0 && (size_t)st.st_size + n + 1 <= ABX_SANDBOX_LOG_MAX) {
      ssize_t w = write(fd, line, n + 1);
      (void)w;
    }
    close(fd);
  }
  free(line);
}

json_t *abx_sandbox_log_read(const char *dir)
{
  json_t *arr = json_array();
  if (!arr)
    return NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/sandbox.log", dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return arr;
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    return arr;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  size_t total = 0;
  while ((n = getline(&line, &cap, f)) > 0 && total <= ABX_SANDBOX_LOG_MAX) {
    total += (size_t)n;
    json_t *e = json_loads(line, 0, NULL);
    if (e && json_is_string(json_object_get(e, "timestamp")) &&
        json_is_string(json_object_get(e, "level")) &&
        json_is_string(json_object_get(e, "message")))
      json_array_append_new(arr, e);
    else
      json_decref(e);
  }
  free(line);
  fclose(f);
  return arr;
}
