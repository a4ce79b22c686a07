/*
 * execd_search.c: execd's GET /files/search and POST /files/replace, run as envd's own identity
 * (execd's).
 *
 * GET /files/search?path=P[&pattern=G] → 200 [FileInfo...] of every entry under P that is not a
 *   directory (files, symlinks, others; symlinks never followed) whose base name matches G
 *   (default "**"), in filepath.Walk's order (names sorted bytewise, depth first). Glob: * ? [..]
 *   ([!..] and [^..] negate), {a,b} alternatives, a leading "**" + "/" matches nothing (a base
 *   name has no separator); "!(..)" and the other extglob forms are glibc fnmatch's. No path →
 *   400 MISSING_QUERY; P missing → 404 FILE_NOT_FOUND "file not found. stat P: ..."; a bad
 *   pattern (unclosed [ or {, trailing \) once a file is seen, or an unreadable directory → 500
 *   RUNTIME_ERROR "error searching files. ...". P may be a file (then it alone is matched).
 * POST /files/replace[?verbose=true] {"P": {"old": "x", "new": "y"}, ...} → 200 (empty), or with
 *   verbose {"P": {"replacedCount": N}} (P as given); every occurrence of old replaced
 *   (non-overlapping, left to right, as strings.ReplaceAll), the file rewritten in place (owner
 *   and mode kept). Files are done in body order (execd: Go's map order, random); the first
 *   failure stops the rest: a missing file → 404 FILE_NOT_FOUND, an empty or absent old → 400
 *   INVALID_REQUEST_BODY "old content must not be empty" (checked after the file is read, as
 *   execd does), a directory or unreadable file → 500 RUNTIME_ERROR "error accessing file: ..".
 *   A body that is not an object of {old, new} strings → 400 INVALID_REQUEST_BODY naming the
 *   field; unknown fields are ignored (encoding/json).
 * Source: components/execd/pkg/web/controller/filesystem.go (SearchFiles, ReplaceContent),
 *   pkg/util/glob/match.go, model/filesystem.go @3bb6fad; specs/execd-api.yaml.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/execd_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BAD_BODY "error parsing request, MAYBE invalid body format. "

/* ---- glob -------------------------------------------------------------------------------- */

/* The index of the '}' closing the '{' at p[0], or -1. */
static long brace_end(const char *p)
{
  int depth = 0;
  for (long i = 0; p[i]; i++) {
    if (p[i] == '\\' && p[i + 1])
      i++;
    else if (p[i] == '{')
      depth++;
    else if (p[i] == '}' && --depth == 0)
      return i;
  }
  return -1;
}

/* Whether the pattern is well formed: every [ and { closed, no trailing lone backslash. */
static bool glob_valid(const char *p)
{
  for (size_t i = 0; p[i]; i++) {
    if (p[i] == '\\' && !p[++i])
      return false;
    if (p[i] == '{' && brace_end(p + i) < 0)
      return false;
    if (p[i] == '[') {
      size_t j = i + 1;
      if (p[j] == '!' || p[j] == '^')
        j++;
      if (p[j] == ']' || !p[j])
        return false;
      while (p[j] && p[j] != ']')
        j += p[j] == '\\' && p[j + 1] ? 2 : 1;
      if (!p[j])
        return false;
      i = j;
    }
  }
  return true;
}

/* Whether base name `name` matches glob `p` (valid): its {a,b} alternatives expanded, then
 * fnmatch without FNM_PERIOD (a leading dot is matched by *, as execd's matcher does). */
static bool glob_match(const char *p, const char *name)
{
  while (strncmp(p, "**/", 3) == 0)
    p += 3;
  const char *open = NULL;
  for (const char *q = p; *q && !open; q++) {
    if (*q == '\\' && q[1])
      q++;
    else if (*q == '{')
      open = q;
  }
  if (!open)
    return fnmatch(p, name, FNM_EXTMATCH) == 0;
  long end = brace_end(open);
  const char *close = open + end, *alt = open + 1;
  size_t plen = strlen(p);
  char *buf = malloc(plen + 1);
  bool hit = false;
  int depth = 0;
  for (const char *q = alt; buf && q <= close && !hit; q++) {
    if (*q == '\\' && q + 1 < close) {
      q++;
      continue;
    }
    depth += *q == '{' ? 1 : *q == '}' && q < close ? -1 : 0;
    if (q == close || (*q == ',' && depth == 0)) {
      snprintf(buf, plen + 1, "%.*s%.*s%s", (int)(open - p), p, (int)(q - alt), alt, close + 1);
      hit = glob_match(buf, name);
      alt = q + 1;
    }
  }
  free(buf);
  return hit;
}

/* ---- GET /files/search ------------------------------------------------------------------- */

struct search {
  const char *pattern;
  bool pattern_ok;
  json_t *out;
  char err[4400]; /* set: the walk stopped with this error */
};

static int name_cmp(const struct dirent **a, const struct dirent **b)
{
  return strcmp((*a)->d_name, (*b)->d_name);
}

/* filepath.Walk's visit of `path` (lstat result st): a directory's entries in name order, any
 * other entry matched on its base name. */
static void visit(struct search *s, const char *path, const struct stat *st)
{
  char eb[128];
  if (!S_ISDIR(st->st_mode)) {
    if (!s->pattern_ok) {
      snprintf(s->err, sizeof s->err, "invalid pattern %s: syntax error in pattern", s->pattern);
      return;
    }
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    if (glob_match(s->pattern, base))
      json_array_append_new(s->out, execd_file_info(path, st));
    return;
  }
  struct dirent **names = NULL;
  int n = scandir(path, &names, NULL, name_cmp);
  if (n < 0) {
    snprintf(s->err, sizeof s->err, "error accessing path %s: open %s: %s", path, path,
             execd_errstr(errno, eb));
    return;
  }
  for (int i = 0; i < n; i++) {
    const char *d = names[i]->d_name;
    if (!s->err[0] && strcmp(d, ".") != 0 && strcmp(d, "..") != 0) {
      char *child = NULL;
      struct stat cst;
      if (asprintf(&child, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/", d) < 0)
        child = NULL;
      if (!child)
        snprintf(s->err, sizeof s->err, "out of memory");
      else if (lstat(child, &cst) < 0) {
        if (errno != ENOENT) /* gone since it was listed: skipped, as execd does */
          snprintf(s->err, sizeof s->err, "error accessing path %s: lstat %s: %s", child, child,
                   execd_errstr(errno, eb));
      } else
        visit(s, child, &cst);
      free(child);
    }
    free(names[i]);
  }
  free(names);
}

enum MHD_Result execd_files_search(struct execd_req *r)
{
  const char *p = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "path");
  if (!p || !*p)
    return execd_send_err(r->c, 400, "MISSING_QUERY", "missing query parameter 'path'");
  char *msg = NULL, *a = execd_expand_path(p, NULL, true, &msg);
  if (!a) {
    enum MHD_Result res =
        execd_send_err(r->c, 500, "RUNTIME_ERROR", "error converting path %s to absolute. %s", p,
                       msg ? msg : "out of memory");
    free(msg);
    return res;
  }
  struct stat st;
  char eb[128];
  if (stat(a, &st) < 0 || lstat(a, &st) < 0) {
    int er = errno;
    enum MHD_Result res =
        er == ENOENT ? execd_send_err(r->c, 404, "FILE_NOT_FOUND", "file not found. stat %s: %s", a,
                                      execd_errstr(er, eb))
                     : execd_send_err(r->c, 500, "RUNTIME_ERROR",
                                      "error accessing file: stat %s: %s", a, execd_errstr(er, eb));
    free(a);
    return res;
  }
  const char *g = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "pattern");
  struct search s = {.pattern = g && *g ? g : "**", .out = json_array()};
  s.pattern_ok = glob_valid(s.pattern);
  visit(&s, a, &st);
  free(a);
  if (s.err[0]) {
    json_decref(s.out);
    return execd_send_err(r->c, 500, "RUNTIME_ERROR", "error searching files. %s", s.err);
  }
  return execd_send_ok_json(r->c, s.out);
}

/* ---- POST /files/replace ----------------------------------------------------------------- */

/* The whole of file `path` (malloc'd, *n bytes), or NULL with errno set. */
static char *read_all(const char *path, size_t *n)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  size_t cap = 1 << 16, len = 0;
  char *b = malloc(cap);
  for (;;) {
    if (b && len == cap) {
      char *nb = realloc(b, cap *= 2);
      if (!nb) {
        free(b);
        b = NULL;
      } else
        b = nb;
    }
    if (!b) {
      close(fd);
      errno = ENOMEM;
      return NULL;
    }
    ssize_t k = read(fd, b + len, cap - len);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      int er = errno;
      close(fd);
      if (k < 0) {
        free(b);
        errno = er;
        return NULL;
      }
      *n = len;
      return b;
    }
    len += (size_t)k;
  }
}

/* strings.ReplaceAll of old (non-empty) by new_ in data: the result (malloc'd, *out_n bytes) and
 * the count in *count; NULL when out of memory. */
static char *replace_all(const char *data, size_t n, const char *old, size_t on, const char *new_,
                         size_t nn, size_t *out_n, long long *count)
{
  *count = 0;
  for (const char *q = data; (q = memmem(q, n - (size_t)(q - data), old, on)); q += on)
    (*count)++;
  size_t total = n + (size_t)*count * nn - (size_t)*count * on;
  char *o = malloc(total + 1), *w = o;
  if (!o)
    return NULL;
  const char *from = data;
  for (const char *q; (q = memmem(from, n - (size_t)(from - data), old, on)); from = q + on) {
    memcpy(w, from, (size_t)(q - from));
    w += q - from;
    memcpy(w, new_, nn);
    w += nn;
  }
  memcpy(w, from, n - (size_t)(from - data));
  *out_n = total;
  return o;
}

/* os.WriteFile onto an existing file: truncate and write in place (inode, owner, mode kept).
 * 0 or -1 with errno. */
static int write_all(const char *path, const char *d, size_t n)
{
  int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0)
    return -1;
  while (n > 0) {
    ssize_t w = write(fd, d, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int er = w < 0 ? errno : EIO;
      close(fd);
      errno = er;
      return -1;
    }
    d += w;
    n -= (size_t)w;
  }
  return close(fd);
}

/* The body's types: an object of {old, new} objects whose old and new are strings when present.
 * "" when they fit, else msg says which field is wrong. */
static void check_replace_body(json_t *j, char *msg, size_t n)
{
  const char *file, *k;
  json_t *item, *v;
  msg[0] = 0;
  if (!json_is_object(j)) {
    snprintf(msg, n, "the body must be a JSON object of path → {old, new}");
    return;
  }
  json_object_foreach(j, file, item)
  {
    if (!json_is_object(item) && !json_is_null(item)) {
      snprintf(msg, n, "%s: must be an object {old, new}", file);
      return;
    }
    json_object_foreach(item, k, v) if ((strcmp(k, "old") == 0 || strcmp(k, "new") == 0) &&
                                        !json_is_string(v) && !json_is_null(v))
    {
      snprintf(msg, n, "%s: field '%s' must be a string", file, k);
      return;
    }
  }
}

/* One file's replacement: 0 with *count set, or -1 after queueing the answer (*res). */
static int replace_one(struct execd_req *r, const char *file, json_t *item, long long *count,
                       enum MHD_Result *res)
{
  char eb[128], *msg = NULL, *a = execd_expand_path(file, NULL, true, &msg);
  struct stat st;
  size_t n = 0, out_n = 0;
  char *data = NULL, *out = NULL;
  const char *old = json_string_value(json_object_get(item, "old"));
  const char *nw = json_string_value(json_object_get(item, "new"));
  int rc = -1;
  if (!a)
    *res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error accessing file: %s",
                          msg ? msg : "out of memory");
  else if (stat(a, &st) < 0)
    *res = errno == ENOENT
               ? execd_send_err(r->c, 404, "FILE_NOT_FOUND", "file not found. stat %s: %s", a,
                                execd_errstr(errno, eb))
               : execd_send_err(r->c, 500, "RUNTIME_ERROR", "error accessing file: stat %s: %s", a,
                                execd_errstr(errno, eb));
  else if (!(data = S_ISDIR(st.st_mode) ? (errno = EISDIR, NULL) : read_all(a, &n)))
    *res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error accessing file: read %s: %s", a,
                          execd_errstr(errno, eb));
  else if (!old || !*old)
    *res = execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", "old content must not be empty");
  else if (!(out = replace_all(data, n, old, strlen(old), nw ? nw : "", nw ? strlen(nw) : 0, &out_n,
                               count)))
    *res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error accessing file: out of memory");
  else if (write_all(a, out, out_n) < 0)
    *res = execd_send_err(r->c, 500, "RUNTIME_ERROR", "error accessing file: open %s: %s", a,
                          execd_errstr(errno, eb));
  else
    rc = 0;
  free(out);
  free(data);
  free(msg);
  free(a);
  return rc;
}

enum MHD_Result execd_files_replace(struct execd_req *r)
{
  const char *vq = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "verbose");
  bool verbose = vq && strcmp(vq, "true") == 0;
  json_error_t je;
  json_t *j = json_loadb(r->body ? r->body : "", r->len, JSON_DECODE_ANY, &je), *item;
  if (!j)
    return execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", BAD_BODY "%s", je.text);
  char msg[512];
  check_replace_body(j, msg, sizeof msg);
  if (msg[0]) {
    json_decref(j);
    return execd_send_err(r->c, 400, "INVALID_REQUEST_BODY", BAD_BODY "%s", msg);
  }
  json_t *results = json_object();
  const char *file;
  enum MHD_Result res = MHD_NO;
  json_object_foreach(j, file, item)
  {
    long long count = 0;
    if (replace_one(r, file, item, &count, &res) < 0) {
      json_decref(results);
      json_decref(j);
      return res;
    }
    json_object_set_new(results, file, json_pack("{s:I}", "replacedCount", (json_int_t)count));
  }
  json_decref(j);
  if (verbose)
    return execd_send_ok_json(r->c, results);
  json_decref(results);
  return execd_send_ok(r->c);
}
