/*
 * execd_files.c: execd's files and directories routes, run as envd's own identity (execd's).
 *
 * GET /files/info?path=P[&path=Q...] → {"P": FileInfo, ...} (lstat; the key is the path as
 *   given); a missing one → 404 FILE_NOT_FOUND, no path → {}.
 * DELETE /files?path=... → 200; a missing file is no error; a directory → 500 RUNTIME_ERROR.
 * POST /files/mv [{src, dest}...] → 200; missing src → 404 FILE_NOT_FOUND; an existing dest →
 *   500 RUNTIME_ERROR; dest's parent directories are created (0755).
 * POST /files/permissions {"P": {owner?, group?, mode?}} → 200; mode is octal digits written as
 *   a decimal number (755), 0 or absent = unchanged; owner/group by name.
 * GET /files/download?path=P → 200 application/octet-stream, Content-Disposition attachment,
 *   Accept-Ranges bytes; Range "bytes=a-b" | "a-" | "-n" → 206 of the first range with
 *   Content-Range; a malformed Range → 416 {"code":"UNKNOWN"}; a range past the end → 416
 *   "invalid range: failed to overlap" (net/http ServeContent); offset/limit (1-based lines) →
 *   text/plain lines joined by "\n"; both with Range → 400.
 * GET /directories/list?path=P&depth=N (default 1, 0 = nothing) → [FileInfo...] in name order,
 *   children after their parent, symlinks listed but never followed; P a symlink or not a
 *   directory → 400 INVALID_REQUEST_BODY; missing → 404.
 * POST /directories {"P": Permission} → 200 (mkdir -p 0755, then the permission on a directory
 *   this call created). DELETE /directories?path=... → 200 (rm -rf; missing is no error).
 * Bodies: JSON as model/filesystem.go; a malformed body or a field of the wrong type → 400
 *   INVALID_REQUEST_BODY naming it; unknown fields are ignored, as Go's encoding/json does.
 * Source: components/execd/pkg/web/controller/filesystem.go, filesystem_download.go, utils.go
 *   @3bb6fad; opensandbox-group/OpenSandbox specs/execd-api.yaml.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/execd_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BAD_BODY "error parsing request, MAYBE invalid body format. "

/* handleFileError: not-exist → 404 FILE_NOT_FOUND "file not found. <err>", else 500. */
static enum MHD_Result file_error(struct MHD_Connection *c, int er, const char *err)
{
  if (er == ENOENT)
    return execd_send_err(c, 404, "FILE_NOT_FOUND", "file not found. %s", err);
  return execd_send_err(c, 500, "RUNTIME_ERROR", "error accessing file: %s", err);
}

static char *abs_path(const char *p, char **msg)
{
  return execd_expand_path(p, NULL, true, msg);
}

enum MHD_Result execd_files_info(struct execd_req *r)
{
  json_t *paths = execd_query_all(r->c, "path"), *out = json_object(), *v;
  size_t i;
  char eb[128];
  json_array_foreach(paths, i, v)
  {
    const char *p = json_string_value(v);
    char *msg = NULL, *a = abs_path(p, &msg);
    struct stat st;
    if (!a || lstat(a, &st) < 0) {
      int er = a ? errno : EINVAL;
      char *m = NULL;
      if (!a) {
        if (asprintf(&m, "invalid path %s: %s", p, msg ? msg : "") < 0)
          m = NULL;
      } else if (asprintf(&m,
                          er == ENOENT ? "file not found: %s: lstat %s: %s"
                                       : "error accessing file %s: lstat %s: %s",
                          p, a, execd_errstr(er, eb)) < 0)
        m = NULL;
      enum MHD_Result res = file_error(r->c, er, m ? m : "");
      free(m);
      free(msg);
      free(a);
      json_decref(paths);
      json_decref(out);
      return res;
    }
    json_object_set_new(out, p, execd_file_info(a, &st));
    free(a);
  }
  json_decref(paths);
  return execd_send_ok_json(r->c, out);
}

enum MHD_Result execd_files_remove(struct execd_req *r)
{
  json_t *paths = execd_query_all(r->c, "path"), *v;
  size_t i;
  char eb[128];
  enum MHD_Result res = MHD_NO;
  json_array_foreach(paths, i, v)
  {
    const char *p = json_string_value(v);
    char *msg = NULL, *a = abs_path(p, &msg);
    struct stat st;
    const char *fail = NULL;
    char buf[4200];
    if (!a) {
      snprintf(buf, sizeof buf, "invalid path: %s", msg ? msg : "");
      fail = buf;
    } else if (stat(a, &st) < 0) {
      if (errno != ENOENT) {
        snprintf(buf, sizeof buf, "stat %s: %s", a, execd_errstr(errno, eb));
        fail = buf;
      }
    } else if (S_ISDIR(st.st_mode)) {
      snprintf(buf, sizeof buf, "path is a directory: %s", p);
      fail = buf;
    } else if (unlink(a) < 0) {
      snprintf(buf, sizeof buf, "failed to remove file: remove %s: %s", a, execd_errstr(errno, eb));
      fail = buf;
    }
    free(msg);
    free(a);
    if (fail) {
      res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error removing file %s. %s", p, fail);
      json_decref(paths);
      return res;
    }
  }
  json_decref(paths);
  return execd_send_ok(r->c);
}

/* The body as JSON of the wanted type (object or array), else a queued 400 and NULL. */
static json_t *body_json(struct execd_req *r, bool array, enum MHD_Result *res)
{
  json_error_t je;
  json_t *j = json_loadb(r->body ? r->body : "", r->len, JSON_DECODE_ANY, &je);
  if (!j)
    *res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", BAD_BODY "%s", je.text);
  else if (array ? !json_is_array(j) : !json_is_object(j)) {
    *res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", BAD_BODY "the body must be a JSON %s",
                          array ? "array of {src, dest}" : "object of path → Permission");
    json_decref(j);
    j = NULL;
  }
  return j;
}

int execd_perm_parse(json_t *p, long long *mode, const char **owner, const char **group, char **msg)
{
  *mode = 0;
  *owner = *group = "";
  if (!json_is_object(p))
    return asprintf(msg, "a Permission must be an object {owner, group, mode}") < 0 ? -1 : -1;
  json_t *m = json_object_get(p, "mode"), *o = json_object_get(p, "owner"),
         *g = json_object_get(p, "group");
  if (m && !json_is_null(m) && !json_is_integer(m))
    return asprintf(msg, "field 'mode' must be an integer (octal digits, e.g. 755)") < 0 ? -1 : -1;
  if ((o && !json_is_null(o) && !json_is_string(o)) ||
      (g && !json_is_null(g) && !json_is_string(g)))
    return asprintf(msg, "fields 'owner' and 'group' must be strings") < 0 ? -1 : -1;
  *mode = json_is_integer(m) ? json_integer_value(m) : 0;
  *owner = json_is_string(o) ? json_string_value(o) : "";
  *group = json_is_string(g) ? json_string_value(g) : "";
  return 0;
}

int execd_chmod(const char *abs, long long mode, const char *owner, const char *group, char **msg)
{
  char eb[128];
  if (mode != 0) {
    char digits[32], *end = NULL;
    snprintf(digits, sizeof digits, "%lld", mode);
    unsigned long m = strtoul(digits, &end, 8);
    if (mode < 0 || *end || m > 07777)
      return asprintf(msg, "strconv.ParseUint: parsing \"%s\": invalid syntax", digits) < 0 ? -1
                                                                                            : -1;
    if (chmod(abs, (mode_t)m) < 0)
      return asprintf(msg, "chmod %s: %s", abs, execd_errstr(errno, eb)) < 0 ? -1 : -1;
  }
  if (!*owner && !*group)
    return 0;
  uid_t uid = (uid_t)-1;
  gid_t gid = (gid_t)-1;
  char buf[4096];
  if (*owner) {
    struct passwd pw, *pr = NULL;
    if (getpwnam_r(owner, &pw, buf, sizeof buf, &pr) != 0 || !pr)
      return asprintf(msg, "failed to lookup user %s: user: unknown user %s", owner, owner) < 0
                 ? -1
                 : -1;
    uid = pw.pw_uid;
  }
  if (*group) {
    struct group gr, *gp = NULL;
    if (getgrnam_r(group, &gr, buf, sizeof buf, &gp) != 0 || !gp)
      return asprintf(msg, "failed to lookup group %s: group: unknown group %s", group, group) < 0
                 ? -1
                 : -1;
    gid = gr.gr_gid;
  }
  if (chown(abs, uid, gid) < 0)
    return asprintf(msg, "failed to set owner/group for %s: chown %s: %s", abs, abs,
                    execd_errstr(errno, eb)) < 0
               ? -1
               : -1;
  return 0;
}

enum MHD_Result execd_files_chmod(struct execd_req *r)
{
  enum MHD_Result res = MHD_NO;
  json_t *j = body_json(r, false, &res), *p;
  if (!j)
    return res;
  const char *file;
  json_object_foreach(j, file, p)
  {
    long long mode;
    const char *owner, *group;
    char *msg = NULL;
    if (execd_perm_parse(p, &mode, &owner, &group, &msg) < 0) {
      res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", BAD_BODY "%s: %s", file,
                           msg ? msg : "");
      free(msg);
      json_decref(j);
      return res;
    }
    char *a = abs_path(file, &msg);
    if (!a || execd_chmod(a, mode, owner, group, &msg) < 0) {
      res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error changing permissions for %s. %s",
                           file, msg ? msg : "");
      free(msg);
      free(a);
      json_decref(j);
      return res;
    }
    free(a);
  }
  json_decref(j);
  return execd_send_ok(r->c);
}

enum MHD_Result execd_files_mv(struct execd_req *r)
{
  enum MHD_Result res = MHD_NO;
  json_t *j = body_json(r, true, &res), *it;
  if (!j)
    return res;
  size_t i;
  char eb[128];
  json_array_foreach(j, i, it)
  {
    const char *src = json_string_value(json_object_get(it, "src"));
    const char *dst = json_string_value(json_object_get(it, "dest"));
    if (!json_is_object(it) || !src || !dst) {
      res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY",
                           BAD_BODY "item %zu must be {\"src\": string, \"dest\": string}", i);
      json_decref(j);
      return res;
    }
    char *msg = NULL, *as = abs_path(src, &msg), *ad = as ? abs_path(dst, &msg) : NULL;
    char m[8600] = "";
    int er = 0;
    struct stat st;
    if (!as || !ad) {
      snprintf(m, sizeof m, "invalid path: %s", msg ? msg : "");
      er = EINVAL;
    } else if (stat(as, &st) < 0 && errno == ENOENT) {
      snprintf(m, sizeof m, "source path not found: %s: stat %s: %s", src, as,
               execd_errstr(ENOENT, eb));
      er = ENOENT;
    } else {
      char *dir = strdup(ad), *slash = dir ? strrchr(dir, '/') : NULL;
      if (slash)
        slash == dir ? (void)(slash[1] = 0) : (void)(*slash = 0);
      if (dir && envd_mkdir_p(dir, NULL) < 0) {
        er = errno;
        snprintf(m, sizeof m, "failed to create destination directory: mkdir %s: %s", dir,
                 execd_errstr(er, eb));
      } else if (lstat(ad, &st) == 0) {
        er = EEXIST;
        snprintf(m, sizeof m, "destination path already exists: %s", dst);
      } else if (rename(as, ad) < 0) {
        er = errno;
        snprintf(m, sizeof m, "failed to rename file: rename %s %s: %s", as, ad,
                 execd_errstr(er, eb));
      }
      free(dir);
    }
    free(msg);
    free(as);
    free(ad);
    if (er) {
      json_decref(j);
      return file_error(r->c, er, m);
    }
  }
  json_decref(j);
  return execd_send_ok(r->c);
}

enum MHD_Result execd_dirs_make(struct execd_req *r)
{
  enum MHD_Result res = MHD_NO;
  json_t *j = body_json(r, false, &res), *p;
  if (!j)
    return res;
  const char *dir;
  char eb[128];
  json_object_foreach(j, dir, p)
  {
    long long mode;
    const char *owner, *group;
    char *msg = NULL;
    if (execd_perm_parse(p, &mode, &owner, &group, &msg) < 0) {
      res =
          execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", BAD_BODY "%s: %s", dir, msg ? msg : "");
      free(msg);
      json_decref(j);
      return res;
    }
    char *a = abs_path(dir, &msg);
    struct stat st;
    bool existed = a && stat(a, &st) == 0;
    int er = 0;
    char m[4400] = "";
    if (!a) {
      er = EINVAL;
      snprintf(m, sizeof m, "%s", msg ? msg : "");
    } else if (envd_mkdir_p(a, NULL) < 0) {
      er = errno;
      snprintf(m, sizeof m, "mkdir %s: %s", a, execd_errstr(er, eb));
    } else if (!existed && execd_chmod(a, mode, owner, group, &msg) < 0) {
      er = EPERM;
      snprintf(m, sizeof m, "%s", msg ? msg : "");
    }
    free(msg);
    free(a);
    if (er) {
      json_decref(j);
      return file_error(r->c, er, m);
    }
  }
  json_decref(j);
  return execd_send_ok(r->c);
}

enum MHD_Result execd_dirs_remove(struct execd_req *r)
{
  json_t *paths = execd_query_all(r->c, "path"), *v;
  size_t i;
  char eb[128];
  json_array_foreach(paths, i, v)
  {
    const char *p = json_string_value(v);
    char *msg = NULL, *a = execd_expand_path(p, NULL, false, &msg);
    enum MHD_Result res = MHD_NO;
    bool bad = false;
    if (!a) {
      res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error resolving directory %s. %s", p,
                           msg ? msg : "");
      bad = true;
    } else if (*a && envd_remove_all(AT_FDCWD, a) < 0) {
      res =
          execd_send_err(r->c, 500, "RUNTIME_ERROR", "error removing directory %s. unlinkat %s: %s",
                         p, a, execd_errstr(errno, eb));
      bad = true;
    }
    free(msg);
    free(a);
    if (bad) {
      json_decref(paths);
      return res;
    }
  }
  json_decref(paths);
  return execd_send_ok(r->c);
}

static int name_cmp(const struct dirent **a, const struct dirent **b)
{
  return strcmp((*a)->d_name, (*b)->d_name); /* os.ReadDir: sorted by name, bytewise */
}

/* listDirectoryEntries: depth-first, children right after their directory. */
static int walk(const char *dir, int depth, int max, json_t *out, int *er, char **where)
{
  struct dirent **ents = NULL;
  int n = scandir(dir, &ents, NULL, name_cmp);
  if (n < 0) {
    *er = errno;
    *where = strdup(dir);
    return -1;
  }
  int rc = 0;
  for (int i = 0; i < n; i++) {
    const char *nm = ents[i]->d_name;
    if (rc == 0 && strcmp(nm, ".") != 0 && strcmp(nm, "..") != 0) {
      char *p = NULL;
      struct stat st;
      if (asprintf(&p, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", nm) < 0)
        p = NULL;
      if (p && lstat(p, &st) == 0) {
        json_array_append_new(out, execd_file_info(p, &st));
        if (S_ISDIR(st.st_mode) && depth + 1 < max)
          rc = walk(p, depth + 1, max, out, er, where);
      } else if (p && errno != ENOENT) {
        *er = errno;
        *where = strdup(p);
        rc = -1;
      }
      free(p);
    }
    free(ents[i]);
  }
  free(ents);
  return rc;
}

enum MHD_Result execd_dirs_list(struct execd_req *r)
{
  const char *p = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "path");
  if (!p || !*p)
    return execd_send_err(r->c, 400, "MISSING_QUERY", "missing query parameter 'path'");
  const char *d = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "depth");
  long depth = 1;
  if (d && *d) {
    char *end = NULL;
    errno = 0;
    depth = strtol(d, &end, 10);
    if (*end || errno || depth < 0 || depth > 1000000)
      return execd_send_err(r->c, 400, "INVALID_REQUEST_BODY",
                            "invalid query parameter 'depth': %s", d);
  }
  char *msg = NULL, *a = abs_path(p, &msg);
  if (!a) {
    enum MHD_Result res = execd_send_err(
        r->c, 500, "RUNTIME_ERROR", "error converting path %s to absolute. %s", p, msg ? msg : "");
    free(msg);
    return res;
  }
  struct stat st;
  char eb[128], m[4300];
  enum MHD_Result res;
  if (lstat(a, &st) < 0) {
    int er = errno;
    snprintf(m, sizeof m, "lstat %s: %s", a, execd_errstr(er, eb));
    res = file_error(r->c, er, m);
  } else if (S_ISLNK(st.st_mode)) {
    res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY",
                         "path is a symbolic link, refusing to traverse: %s", a);
  } else if (!S_ISDIR(st.st_mode)) {
    res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", "path is not a directory: %s", a);
  } else {
    json_t *out = json_array();
    int er = 0;
    char *where = NULL;
    if (depth > 0 && walk(a, 0, (int)depth, out, &er, &where) < 0) {
      json_decref(out);
      res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error listing directory %s. open %s: %s", a,
                           where ? where : a, execd_errstr(er, eb));
    } else {
      res = execd_send_ok_json(r->c, out);
    }
    free(where);
  }
  free(a);
  return res;
}
