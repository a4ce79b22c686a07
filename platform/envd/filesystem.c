/*
 * filesystem.c: the filesystem.Filesystem service, unary RPCs: Stat, MakeDir, Move, ListDir,
 * Remove; the watch RPCs (WatchDir, CreateWatcher, GetWatcherEvents, RemoveWatcher) are in
 * watch.c. Every operation runs under the requesting
 * user's filesystem identity (envd_fs_enter), so permissions are the user's, except that
 * MakeDir and Move's missing destination parents are created as root and chowned to the user
 * (envd_mkdir_p), as E2B's envd does.
 * Shapes:  responses {"entry":EntryInfo} (Stat, MakeDir, Move), {"entries":[EntryInfo...]}
 *          (ListDir), {} (Remove); EntryInfo in entry.c.
 * Errors:  not_found (missing), already_exists (MakeDir on a dir), invalid_argument (not a
 *          directory, exists as a file, bad path), permission_denied, failed_precondition
 *          (symlink loop), internal.
 * Source:  docs/protocol/envd-protocol.md §5.1, §5.2.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/envd_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Resolve the string field `name` of req into an absolute path. */
static char *req_path(struct envd_call *c, json_t *req, const char *name, struct envd_err *err)
{
  json_t *v = envd_jget(req, name, NULL);
  if (v && !json_is_string(v)) {
    envd_fail(err, "invalid_argument", "%s must be a string", name);
    return NULL;
  }
  return envd_resolve_path(c->e, &c->user, v ? json_string_value(v) : "", err);
}

static int fs_errno(struct envd_err *err, int er, const char *what, const char *path)
{
  if (er == ENOENT)
    return envd_fail(err, "not_found", "%s: path '%s' not found", what, path);
  return envd_fail(err, envd_errno_code(er), "%s '%s': %s", what, path, strerror(er));
}

static int wrap_entry(const char *path, json_t **out, struct envd_err *err, const char *what)
{
  json_t *e = envd_entry_info(path, NULL);
  if (!e)
    return fs_errno(err, errno, what, path);
  *out = json_pack("{s:o}", "entry", e);
  return 0;
}

static int rpc_stat(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  char *path = req_path(c, req, "path", err);
  if (!path)
    return -1;
  envd_fs_enter(&c->user);
  int rc = wrap_entry(path, out, err, "error getting file info");
  envd_fs_leave();
  free(path);
  return rc;
}

static int rpc_make_dir(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  char *path = req_path(c, req, "path", err);
  if (!path)
    return -1;
  int rc;
  struct stat st;
  /* as root, handing what it creates to the user: E2B envd's EnsureDirs (envd_mkdir_p) */
  if (stat(path, &st) == 0) {
    rc = S_ISDIR(st.st_mode)
             ? envd_fail(err, "already_exists", "directory '%s' already exists", path)
             : envd_fail(err, "invalid_argument",
                         "path '%s' already exists and it is not a directory", path);
  } else if (envd_mkdir_p(path, &c->user) < 0) {
    rc = fs_errno(err, errno, "error creating directory", path);
  } else {
    rc = wrap_entry(path, out, err, "error getting file info");
  }
  free(path);
  return rc;
}

static int rpc_move(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  char *src = req_path(c, req, "source", err);
  char *dst = src ? req_path(c, req, "destination", err) : NULL;
  int rc = -1;
  if (!src || !dst)
    goto out;
  struct stat st;
  envd_fs_enter(&c->user);
  if (lstat(src, &st) < 0) {
    rc = fs_errno(err, errno, "error getting source", src);
  } else {
    char *dcopy = strdup(dst);
    char *parent = dcopy ? dirname(dcopy) : NULL;
    envd_fs_leave(); /* missing parents as root, handed to the user (envd_mkdir_p) */
    int made = parent ? envd_mkdir_p(parent, &c->user) : -1;
    int er = errno;
    envd_fs_enter(&c->user);
    if (made < 0)
      rc = fs_errno(err, er, "error creating destination parent", dst);
    else if (rename(src, dst) < 0)
      rc = fs_errno(err, errno, "error renaming", src);
    else
      rc = wrap_entry(dst, out, err, "error getting file info");
    free(dcopy);
  }
  envd_fs_leave();
out:
  free(src);
  free(dst);
  return rc;
}

/* Append entries of `real` (shown as `shown`) up to `left` more levels; symlinks inside are not
 * followed. Entries that vanish mid-walk are skipped. */
static void walk(const char *real, const char *shown, unsigned left, json_t *arr)
{
  struct dirent **names = NULL;
  int n = scandir(real, &names, NULL, alphasort);
  for (int i = 0; i < n; i++) {
    const char *nm = names[i]->d_name;
    if (strcmp(nm, ".") != 0 && strcmp(nm, "..") != 0) {
      char *rp = NULL, *sp = NULL;
      bool sl = strcmp(shown, "/") == 0, rl = strcmp(real, "/") == 0;
      if (asprintf(&rp, "%s%s%s", real, rl ? "" : "/", nm) >= 0 &&
          asprintf(&sp, "%s%s%s", shown, sl ? "" : "/", nm) >= 0) {
        json_t *e = envd_entry_info(rp, sp);
        struct stat st;
        if (e) {
          json_array_append_new(arr, e);
          if (left > 1 && lstat(rp, &st) == 0 && S_ISDIR(st.st_mode))
            walk(rp, sp, left - 1, arr);
        }
      }
      free(rp);
      free(sp);
    }
    free(names[i]);
  }
  free(names);
}

static int rpc_list_dir(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  uint32_t depth = 0;
  if (envd_jget_u32(req, "depth", NULL, &depth) < 0)
    return envd_fail(err, "invalid_argument", "depth must be an unsigned integer");
  if (depth == 0)
    depth = 1;
  char *path = req_path(c, req, "path", err);
  if (!path)
    return -1;
  int rc = 0;
  struct stat st;
  envd_fs_enter(&c->user);
  char *real = realpath(path, NULL);
  if (!real || stat(real, &st) < 0) {
    rc = errno == ELOOP ? envd_fail(err, "failed_precondition", "symlink loop at '%s'", path)
                        : fs_errno(err, errno, "error resolving path", path);
  } else if (!S_ISDIR(st.st_mode)) {
    rc = envd_fail(err, "invalid_argument", "path '%s' is not a directory", path);
  } else if (access(real, R_OK | X_OK) < 0) {
    rc = fs_errno(err, errno, "error reading directory", path);
  } else {
    json_t *arr = json_array();
    walk(real, path, depth, arr);
    *out = json_object();
    if (json_array_size(arr))
      json_object_set_new(*out, "entries", arr);
    else
      json_decref(arr);
  }
  envd_fs_leave();
  free(real);
  free(path);
  return rc;
}

/* rm -rf below dirfd/name. Returns 0 or -1 with errno (ENOENT is success). */
int envd_remove_all(int dfd, const char *name)
{
  if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
    return 0;
  if (errno != EISDIR && errno != EPERM)
    return -1;
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0 : -1;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return -1;
  }
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (envd_remove_all(dirfd(d), de->d_name) < 0)
      rc = -1;
  }
  int er = errno;
  closedir(d);
  if (rc < 0) {
    errno = er;
    return -1;
  }
  if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    return -1;
  return 0;
}

static int rpc_remove(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err)
{
  char *path = req_path(c, req, "path", err);
  if (!path)
    return -1;
  int rc = 0;
  envd_fs_enter(&c->user);
  if (strcmp(path, "/") == 0)
    rc = envd_fail(err, "invalid_argument", "refusing to remove '/'");
  else if (envd_remove_all(AT_FDCWD, path) < 0)
    rc = fs_errno(err, errno, "error removing", path);
  envd_fs_leave();
  free(path);
  return rc;
}

const struct envd_method envd_filesystem_methods[] = {
    {"Stat", ENVD_UNARY, rpc_stat, NULL},
    {"MakeDir", ENVD_UNARY, rpc_make_dir, NULL},
    {"Move", ENVD_UNARY, rpc_move, NULL},
    {"ListDir", ENVD_UNARY, rpc_list_dir, NULL},
    {"Remove", ENVD_UNARY, rpc_remove, NULL},
    {"WatchDir", ENVD_SERVER_STREAM, NULL, envd_rpc_watch_dir},
    {"CreateWatcher", ENVD_UNARY, envd_rpc_create_watcher, NULL},
    {"GetWatcherEvents", ENVD_UNARY, envd_rpc_get_watcher_events, NULL},
    {"RemoveWatcher", ENVD_UNARY, envd_rpc_remove_watcher, NULL},
    {NULL, ENVD_UNARY, NULL, NULL}};
