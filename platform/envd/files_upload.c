/*
 * files_upload.c: POST /files (multipart/form-data parts named `file`, or
 * application/octet-stream with a `path` query), gzip bodies, X-Metadata-* headers. The contract
 * (shapes, metadata limits, errors, ownership) is in files.c's header comment.
 * Source:  docs/protocol/envd-protocol.md §7 (/files), §6.1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/envd_int.h"
#include "envd/mutants.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

#define ENVD_GUNZIP_MAX (1ULL << 30)
#define META_KEY_MAX 246
#define META_TOTAL_MAX 4096

struct envd_upload {
  struct envd *e;
  struct MHD_Connection *c;
  struct envd_user user;
  struct MHD_PostProcessor *pp;
  char *qpath; /* resolved `path` query or NULL */
  int fd;
  char *cur;
  char *cur_target; /* the name `cur` was opened by: query path or part file name */
  size_t cur_written;
  json_t *result, *seen;
  json_t *meta; /* X-Metadata-* as {lowercased key: value} */
  size_t meta_total;
  z_stream *gz; /* Content-Encoding: gzip */
  bool gz_end;  /* the last member ended (more input starts a new member) */
  uint64_t gz_out;
  unsigned fail_status;
  char *fail_msg;
};

static bool up_fail(struct envd_upload *up, unsigned status, const char *fmt, const char *a,
                    const char *b)
{
  if (up->fail_status)
    return false;
  up->fail_status = status;
  if (asprintf(&up->fail_msg, fmt, a, b ? b : "") < 0)
    up->fail_msg = NULL;
  return false;
}

static void close_cur(struct envd_upload *up)
{
  if (up->fd >= 0)
    close(up->fd);
  up->fd = -1;
  free(up->cur);
  up->cur = NULL;
  free(up->cur_target);
  up->cur_target = NULL;
  up->cur_written = 0;
}

/* Replace the user.e2b.* xattrs of the open file with up->meta. */
static bool apply_meta(struct envd_upload *up)
{
  static const char pfx[] = ENVD_XATTR_PREFIX;
  char names[8192];
  ssize_t n = flistxattr(up->fd, names, sizeof names);
  for (char *k = names; n > 0 && k < names + n; k += strlen(k) + 1)
    if (strncmp(k, pfx, sizeof pfx - 1) == 0)
      fremovexattr(up->fd, k);
  const char *key;
  json_t *v;
  json_object_foreach(up->meta, key, v)
  {
    char name[sizeof pfx + META_KEY_MAX];
    snprintf(name, sizeof name, "%s%s", pfx, key);
    const char *val = json_string_value(v);
    if (fsetxattr(up->fd, name, val, strlen(val), 0) < 0) {
      int er = errno;
      if (er == ENOTSUP)
        return up_fail(up, 500,
                       "cannot store metadata on '%s': the filesystem does not support user "
                       "extended attributes (%s)",
                       up->cur, strerror(er));
      return up_fail(up, er == ENOSPC || er == E2BIG ? 400 : envd_files_errno_status(er),
                     "cannot store metadata on '%s': %s", up->cur, strerror(er));
    }
  }
  return true;
}

/* Open `target` (raw path from the query or part filename) for writing as the user. */
static bool open_target(struct envd_upload *up, const char *target)
{
  close_cur(up);
  struct envd_err err = {0};
  char *path = envd_resolve_path(up->e, &up->user, target, &err);
  if (!path) {
    up_fail(up, 400, "%s%s", err.msg ? err.msg : "invalid path", NULL);
    envd_err_clear(&err);
    return false;
  }
  json_t *probe = json_string(path); /* the answer names the file: JSON strings are UTF-8 */
  bool utf8 = probe != NULL;
  json_decref(probe);
  if (!utf8) {
    up_fail(up, 400, "path is not valid UTF-8%s%s", "", NULL);
    free(path);
    return false;
  }
  if (json_object_get(up->seen, path)) {
    up_fail(up, 400, "path '%s' is given more than once%s", path, NULL);
    free(path);
    return false;
  }
  json_object_set_new(up->seen, path, json_true());
  char *pcopy = strdup(path);
  /* missing parents as root, handed to the user (envd_mkdir_p); the file itself as the user */
  int rc = pcopy ? envd_mkdir_p(dirname(pcopy), &up->user) : -1;
  int er = errno, fd = -1;
  if (rc == 0) {
    envd_fs_enter(&up->user);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    er = errno;
    envd_fs_leave();
  }
  free(pcopy);
  if (fd < 0) {
    up_fail(up, envd_files_errno_status(er), "error writing '%s': %s", path, strerror(er));
    free(path);
    return false;
  }
  if (fchown(fd, up->user.uid, up->user.gid) < 0) { /* best effort: already the user's */
  }
  up->fd = fd;
  up->cur = path;
  up->cur_target = strdup(target);
  if (!apply_meta(up))
    return false;
  const char *base = strrchr(path, '/');
  json_t *ent = json_pack("{s:s,s:s,s:s}", "path", path, "name", base && base[1] ? base + 1 : path,
                          "type", "file");
  if (json_object_size(up->meta))
    json_object_set(ent, "metadata", up->meta);
  json_array_append_new(up->result, ent);
  return true;
}

static bool write_all(struct envd_upload *up, const char *data, size_t len)
{
  if (envd_mutant_upload_drop(up->e, &up->fd, up->cur, &up->user, up->cur_written + len))
    return true; /* large-upload-dropped: no file, the usual answer */
  while (len > 0) {
    ssize_t n = write(up->fd, data, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return up_fail(up, envd_files_errno_status(errno), "error writing '%s': %s", up->cur,
                     strerror(errno));
    data += n;
    len -= (size_t)n;
    up->cur_written += (size_t)n;
  }
  return true;
}

static enum MHD_Result part_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size)
{
  struct envd_upload *up = cls;
  if (up->fail_status)
    return MHD_YES;
  if (!key || strcmp(key, "file") != 0)
    return MHD_YES;
  const char *target = up->qpath ? up->qpath : filename;
  /* libmicrohttpd opens every part with a call at offset 0, of 0 bytes when none of the part
   * has arrived yet, and an empty part is that call alone: a call at offset 0 after it is the
   * same part again or the next part. Only the name tells them apart, so two parts under one
   * name, the first empty, make one file (the request named a path twice anyway). */
  bool same = up->fd >= 0 && up->cur_written == 0 && off == 0 && target && up->cur_target &&
              strcmp(target, up->cur_target) == 0;
  if (off == 0 && !same) {
    if (!target || !*target) {
      up_fail(up, 400, "missing file name for part%s%s", "", NULL);
      return MHD_YES;
    }
    if (!open_target(up, target))
      return MHD_YES;
  }
  if (up->fd >= 0 && size > 0)
    write_all(up, data, size);
  return MHD_YES;
}

static enum MHD_Result meta_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
  struct envd_upload *up = cls;
  static const char hp[] = "X-Metadata-";
  if (up->fail_status || !key || strncasecmp(key, hp, sizeof hp - 1) != 0)
    return MHD_YES;
  const char *k = key + sizeof hp - 1;
  size_t kl = strlen(k), vl = value ? strlen(value) : 0;
  if (kl == 0 || kl > META_KEY_MAX) {
    up_fail(up, 400, "metadata key '%s' must have 1 to 246 bytes%s", k, NULL);
    return MHD_YES;
  }
  char lk[META_KEY_MAX + 1];
  for (size_t i = 0; i <= kl; i++)
    lk[i] = (char)tolower((unsigned char)k[i]);
  for (size_t i = 0; i < kl; i++)
    if (k[i] < 0x21 || k[i] > 0x7e) {
      up_fail(up, 400, "metadata key '%s' is not printable ASCII%s", k, NULL);
      return MHD_YES;
    }
  for (size_t i = 0; i < vl; i++)
    if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] > 0x7e) {
      up_fail(up, 400, "metadata value of '%s' is not printable ASCII%s", k, NULL);
      return MHD_YES;
    }
  json_t *old = json_object_get(up->meta, lk);
  if (old)
    up->meta_total -= kl + strlen(json_string_value(old));
  up->meta_total += kl + vl;
  if (up->meta_total > META_TOTAL_MAX) {
    up_fail(up, 400, "metadata exceeds %s bytes in total%s", "4096", NULL);
    return MHD_YES;
  }
  json_object_set_new(up->meta, lk, json_string(value ? value : ""));
  return MHD_YES;
}

struct envd_upload *envd_files_post_begin(struct envd *e, struct MHD_Connection *c, bool *queued)
{
  struct envd_user u;
  enum MHD_Result res;
  *queued = false;
  if (!envd_files_begin(e, c, "write", &u, &res)) {
    *queued = true;
    return NULL;
  }
  struct envd_upload *up = calloc(1, sizeof *up);
  if (!up) {
    *queued = true;
    envd_send_rest_err(c, 500, "out of memory");
    return NULL;
  }
  up->e = e;
  up->c = c;
  up->user = u;
  up->fd = -1;
  up->result = json_array();
  up->seen = json_object();
  up->meta = json_object();
  MHD_get_connection_values(c, MHD_HEADER_KIND, meta_header, up);
  const char *qp = envd_files_query(c, "path");
  const char *ct = envd_header(c, "Content-Type");
  const char *ce = envd_header(c, "Content-Encoding");
  if (qp && *qp)
    up->qpath = strdup(qp);
  bool gz = ce && (strcasecmp(ce, "gzip") == 0 || strcasecmp(ce, "x-gzip") == 0);
  if (up->fail_status) {
    /* invalid metadata: nothing is written */
  } else if (ce && *ce && strcasecmp(ce, "identity") != 0 && !gz) {
    up_fail(up, 400, "unsupported content encoding '%s'%s", ce, NULL);
  } else if (gz &&
             (!(up->gz = calloc(1, sizeof *up->gz)) || inflateInit2(up->gz, 15 + 16) != Z_OK)) {
    free(up->gz);
    up->gz = NULL;
    up_fail(up, 500, "cannot start gzip decoding%s%s", "", NULL);
  } else if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
    up->pp = MHD_create_post_processor(c, 64 * 1024, part_iter, up);
    if (!up->pp)
      up_fail(up, 400, "invalid multipart request%s%s", "", NULL);
  } else if (ct && strncasecmp(ct, "application/octet-stream", 24) == 0) {
    if (!up->qpath)
      up_fail(up, 400, "path query parameter is required for octet-stream uploads%s%s", "", NULL);
    else
      open_target(up, up->qpath);
  } else {
    up_fail(up, 400, "unsupported content type '%s'%s", ct ? ct : "", NULL);
  }
  return up;
}

static bool post_plain(struct envd_upload *up, const char *data, size_t len);

/* Inflate gzip input and pass the output on; bounded by ENVD_GUNZIP_MAX. */
static bool post_gunzip(struct envd_upload *up, const char *data, size_t len)
{
  unsigned char out[64 * 1024];
  up->gz->next_in = (unsigned char *)data;
  up->gz->avail_in = (uInt)len;
  while (up->gz->avail_in > 0 && !up->fail_status) {
    if (up->gz_end) {
      inflateReset(up->gz); /* concatenated gzip members */
      up->gz_end = false;
    }
    up->gz->next_out = out;
    up->gz->avail_out = sizeof out;
    int rc = inflate(up->gz, Z_NO_FLUSH);
    size_t n = sizeof out - up->gz->avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && n > 0))
      return up_fail(up, 400, "invalid gzip body: %s%s", up->gz->msg ? up->gz->msg : "corrupt data",
                     NULL);
    up->gz_out += n;
    if (up->gz_out > ENVD_GUNZIP_MAX)
      return up_fail(up, 400, "decompressed body exceeds %s%s", "1 GiB", NULL);
    if (n && !post_plain(up, (const char *)out, n))
      return false;
    if (rc == Z_STREAM_END)
      up->gz_end = true;
  }
  return !up->fail_status;
}

bool envd_files_post_data(struct envd_upload *up, const char *data, size_t len)
{
  if (up->fail_status)
    return false;
  if (up->gz)
    return post_gunzip(up, data, len);
  return post_plain(up, data, len);
}

static bool post_plain(struct envd_upload *up, const char *data, size_t len)
{
  if (up->fail_status)
    return false;
  if (up->pp) {
    if (MHD_post_process(up->pp, data, len) != MHD_YES)
      up_fail(up, 400, "malformed multipart body%s%s", "", NULL);
    return !up->fail_status;
  }
  return up->fd < 0 || write_all(up, data, len); /* fd < 0 here: the file was dropped */
}

void envd_files_post_free(struct envd_upload *up)
{
  if (!up)
    return;
  if (up->pp)
    MHD_destroy_post_processor(up->pp);
  close_cur(up);
  json_decref(up->result);
  json_decref(up->seen);
  json_decref(up->meta);
  if (up->gz)
    inflateEnd(up->gz);
  free(up->gz);
  free(up->qpath);
  free(up->fail_msg);
  free(up);
}

enum MHD_Result envd_files_post_end(struct envd_upload *up)
{
  struct MHD_Connection *c = up->c;
  if (up->gz && !up->fail_status && !up->gz_end)
    up_fail(up, 400, "invalid gzip body: %s%s", "unexpected end of data", NULL);
  if (up->pp) {
    if (MHD_destroy_post_processor(up->pp) != MHD_YES)
      up_fail(up, 400, "malformed multipart body%s%s", "", NULL);
    up->pp = NULL;
    if (!up->fail_status && json_array_size(up->result) == 0)
      up_fail(up, 400, "no file part in multipart body%s%s", "", NULL);
  }
  close_cur(up);
  enum MHD_Result res = up->fail_status ? envd_send_rest_err(c, up->fail_status, up->fail_msg)
                                        : envd_send_json(c, 200, up->result);
  envd_files_post_free(up);
  return res;
}
