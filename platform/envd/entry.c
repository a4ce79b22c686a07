/*
 * entry.c: filesystem.EntryInfo as ProtoJSON.
 * Shapes:  {"name","type":"FILE_TYPE_*","path","size":"<int64 decimal>","mode":<perm bits>,
 *           "permissions":"-rw-r--r--","owner","group","modifiedTime":"RFC3339Z",
 *           "symlinkTarget"?,"metadata"?:{key:value}}; zero values left out (ProtoJSON).
 *          metadata: the entry's own xattrs user.e2b.<key> (not followed through symlinks),
 *          prefix removed; left out when there are none or the filesystem has no xattrs.
 * Source:  docs/protocol/envd-protocol.md §5.1 (EntryInfo), §3 (int64 as string, timestamps).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/envd_int.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static const char *file_type(mode_t m)
{
  if (S_ISREG(m))
    return "FILE_TYPE_FILE";
  if (S_ISDIR(m))
    return "FILE_TYPE_DIRECTORY";
  if (S_ISLNK(m))
    return "FILE_TYPE_SYMLINK";
  return NULL; /* FILE_TYPE_UNSPECIFIED: left out */
}

/* Go os.FileMode.String(): type letters "dalTLDpSugct?" then rwxrwxrwx. */
static void perm_string(mode_t m, char out[24])
{
  size_t o = 0;
  if (S_ISDIR(m))
    out[o++] = 'd';
  if (S_ISLNK(m))
    out[o++] = 'L';
  if (S_ISBLK(m) || S_ISCHR(m))
    out[o++] = 'D';
  if (S_ISFIFO(m))
    out[o++] = 'p';
  if (S_ISSOCK(m))
    out[o++] = 'S';
  if (m & S_ISUID)
    out[o++] = 'u';
  if (m & S_ISGID)
    out[o++] = 'g';
  if (S_ISCHR(m))
    out[o++] = 'c';
  if (m & S_ISVTX)
    out[o++] = 't';
  if (o == 0)
    out[o++] = '-';
  const char *rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; i++)
    out[o++] = (m & (1u << (8 - i))) ? rwx[i] : '-';
  out[o] = 0;
}

static void rfc3339(const struct timespec *ts, char out[64])
{
  struct tm tm;
  gmtime_r(&ts->tv_sec, &tm);
  size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
  long ns = ts->tv_nsec;
  if (ns != 0) {
    if (ns % 1000000 == 0)
      n += (size_t)snprintf(out + n, 64 - n, ".%03ld", ns / 1000000);
    else if (ns % 1000 == 0)
      n += (size_t)snprintf(out + n, 64 - n, ".%06ld", ns / 1000);
    else
      n += (size_t)snprintf(out + n, 64 - n, ".%09ld", ns);
  }
  snprintf(out + n, 64 - n, "Z");
}

json_t *envd_xattr_metadata(const char *path, int fd)
{
  char names[8192];
  ssize_t n = fd >= 0 ? flistxattr(fd, names, sizeof names) : llistxattr(path, names, sizeof names);
  if (n <= 0)
    return NULL;
  json_t *m = NULL;
  static const char pfx[] = ENVD_XATTR_PREFIX;
  for (char *k = names; k < names + n; k += strlen(k) + 1) {
    if (strncmp(k, pfx, sizeof pfx - 1) != 0 || !k[sizeof pfx - 1])
      continue;
    char val[4097];
    ssize_t vl =
        fd >= 0 ? fgetxattr(fd, k, val, sizeof val - 1) : lgetxattr(path, k, val, sizeof val - 1);
    if (vl < 0)
      continue;
    val[vl] = 0;
    if (!m)
      m = json_object();
    json_object_set_new(m, k + sizeof pfx - 1, json_stringn(val, (size_t)vl));
  }
  return m;
}

json_t *envd_entry_info(const char *path, const char *shown)
{
  struct stat ls, ts;
  if (lstat(path, &ls) < 0)
    return NULL;
  if (!shown)
    shown = path;
  json_t *j = json_object();
  const char *base = strrchr(shown, '/');
  base = base && base[1] ? base + 1 : shown;
  if (*base)
    json_object_set_new(j, "name", json_string(base));

  mode_t type_mode = ls.st_mode, perm_mode = ls.st_mode;
  if (S_ISLNK(ls.st_mode)) {
    if (stat(path, &ts) == 0) {
      type_mode = ts.st_mode;
      perm_mode = ts.st_mode;
    } else {
      type_mode = 0;
    }
    char *target = realpath(path, NULL);
    if (!target) {
      char lb[PATH_MAX];
      ssize_t n = readlink(path, lb, sizeof lb - 1);
      if (n >= 0) {
        lb[n] = 0;
        target = strdup(lb);
      }
    }
    if (target)
      json_object_set_new(j, "symlinkTarget", json_string(target));
    free(target);
  }
  const char *t = type_mode ? file_type(type_mode) : NULL;
  if (t && strcmp(t, "FILE_TYPE_SYMLINK") != 0)
    json_object_set_new(j, "type", json_string(t));
  json_object_set_new(j, "path", json_string(shown));
  if (ls.st_size != 0) {
    char sz[32];
    snprintf(sz, sizeof sz, "%lld", (long long)ls.st_size);
    json_object_set_new(j, "size", json_string(sz));
  }
  if (perm_mode & 0777)
    json_object_set_new(j, "mode", json_integer(perm_mode & 0777));
  char ps[24];
  perm_string(ls.st_mode, ps);
  json_object_set_new(j, "permissions", json_string(ps));

  char buf[4096], num[32];
  struct passwd pw, *pr = NULL;
  if (getpwuid_r(ls.st_uid, &pw, buf, sizeof buf, &pr) == 0 && pr) {
    json_object_set_new(j, "owner", json_string(pw.pw_name));
  } else {
    snprintf(num, sizeof num, "%u", (unsigned)ls.st_uid);
    json_object_set_new(j, "owner", json_string(num));
  }
  struct group gr, *grr = NULL;
  if (getgrgid_r(ls.st_gid, &gr, buf, sizeof buf, &grr) == 0 && grr) {
    json_object_set_new(j, "group", json_string(gr.gr_name));
  } else {
    snprintf(num, sizeof num, "%u", (unsigned)ls.st_gid);
    json_object_set_new(j, "group", json_string(num));
  }
  char tb[64];
  rfc3339(&ls.st_mtim, tb);
  json_object_set_new(j, "modifiedTime", json_string(tb));
  json_t *md = envd_xattr_metadata(path, -1);
  if (md)
    json_object_set_new(j, "metadata", md);
  return j;
}
