/*
 * sandbox_log.c: a sandbox's lifecycle log (contract in sandbox_log.h).
 */
#include "sandbox_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
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

/* The entries of the log file at `path` (see abx_sandbox_log_read). */
static json_t *read_file(const char *path)
{
  json_t *arr = json_array();
  if (!arr)
    return NULL;
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

json_t *abx_sandbox_log_read(const char *dir)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/sandbox.log", dir);
  return read_file(path);
}

/* <state-dir>/.logs, known from the first kept log (every sandbox dir has the same parent). */
static char g_kept_dir[4096];
static pthread_mutex_t g_kept_mu = PTHREAD_MUTEX_INITIALIZER;

/* Drops the oldest kept logs (by mtime) past ABX_SANDBOX_LOG_KEPT; under g_kept_mu. */
static void prune_kept(void)
{
  for (;;) {
    DIR *d = opendir(g_kept_dir);
    if (!d)
      return;
    struct dirent *e;
    long n = 0;
    time_t oldest = 0;
    char victim[NAME_MAX + 1] = "";
    while ((e = readdir(d))) {
      struct stat st;
      if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      n++;
      if (!victim[0] || st.st_mtime < oldest)
        oldest = st.st_mtime, snprintf(victim, sizeof victim, "%s", e->d_name);
    }
    if (n > ABX_SANDBOX_LOG_KEPT && victim[0])
      unlinkat(dirfd(d), victim, 0);
    closedir(d);
    if (n <= ABX_SANDBOX_LOG_KEPT || !victim[0])
      return;
  }
}

void abx_sandbox_log_keep(const struct abx_sandbox *sb)
{
  if (!sb || !sb->dir || !sb->id[0])
    return;
  char from[4000], to[4200];
  snprintf(from, sizeof from, "%s", sb->dir);
  char *slash = strrchr(from, '/');
  if (!slash || slash == from)
    return;
  *slash = '\0';
  pthread_mutex_lock(&g_kept_mu);
  snprintf(g_kept_dir, sizeof g_kept_dir, "%s/.logs", from);
  (void)mkdir(g_kept_dir, 0700);
  snprintf(from, sizeof from, "%s/sandbox.log", sb->dir);
  snprintf(to, sizeof to, "%s/%s.log", g_kept_dir, sb->id);
  if (rename(from, to) == 0)
    prune_kept();
  pthread_mutex_unlock(&g_kept_mu);
}

/* The path of id's kept log into out (n bytes); -1 when nothing was kept yet or id is odd. */
static int kept_path(const char *id, char *out, size_t n)
{
  if (!id || !*id || strchr(id, '/') || id[0] == '.')
    return -1;
  pthread_mutex_lock(&g_kept_mu);
  int ok = g_kept_dir[0] != '\0';
  if (ok)
    snprintf(out, n, "%s/%s.log", g_kept_dir, id);
  pthread_mutex_unlock(&g_kept_mu);
  return ok ? 0 : -1;
}

json_t *abx_sandbox_log_read_kept(const char *id)
{
  char path[4200];
  if (kept_path(id, path, sizeof path) != 0 || access(path, F_OK) != 0)
    return NULL;
  return read_file(path);
}
