/*
 * files.c: the /files REST endpoint: GET downloads raw bytes, POST uploads (multipart/form-data
 * parts named `file`, or application/octet-stream with a `path` query).
 *
 * Auth:    no token set → allowed; X-Access-Token header must match if present; otherwise a v1
 *          signature: "v1_" + base64 (std, no padding) of sha256(path:op:username:token[:exp]),
 *          op "read"/"write", compared in constant time; signature_expiration < now → 401.
 * Shapes:  GET → 200 application/octet-stream, streamed from the file descriptor.
 *          POST → 200 [{"path":"/abs","name":"base","type":"file"}...].
 *          Errors {"code":<status>,"message":".."}: 400 (directory, no path, bad content type,
 *          duplicate path), 401 (auth, unknown user), 403 (permission), 404 (missing),
 *          507 (disk full), 500.
 * Files:   parents created (0755) and files created (0666 & ~umask 022) as the user, so owned by
 *          the user; existing files truncated and fchown'ed to the user.
 * Source:  reference/envd-protocol.md §7 (/files), §8 (signatures), §6.1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "local/envd/envd_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *query(struct MHD_Connection *c, const char *k) {
  return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

/* §8 validation order. Returns 0 or an HTTP status with *msg (static). */
static unsigned files_auth(struct envd *e, struct MHD_Connection *c, const char *op,
                           const char **msg) {
  pthread_mutex_lock(&e->mu);
  char *token = e->token ? strdup(e->token) : NULL;
  pthread_mutex_unlock(&e->mu);
  unsigned status = 0;
  if (!token) return 0;
  const char *hdr = envd_header(c, "X-Access-Token");
  const char *sig = query(c, "signature"), *exp = query(c, "signature_expiration");
  if (hdr) {
    if (!envd_str_eq_ct(hdr, token)) {
      status = 401;
      *msg = "access token present in header but does not match";
    }
    goto out;
  }
  if (!sig || !*sig) {
    status = 401;
    *msg = "missing signature query parameter";
    goto out;
  }
  const char *path = query(c, "path"), *user = query(c, "username");
  char *raw = NULL;
  int n = exp ? asprintf(&raw, "%s:%s:%s:%s:%s", path ? path : "", op, user ? user : "", token,
                         exp)
              : asprintf(&raw, "%s:%s:%s:%s", path ? path : "", op, user ? user : "", token);
  if (n < 0) {
    status = 500;
    *msg = "out of memory";
    goto out;
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256((const unsigned char *)raw, (size_t)n, digest);
  free(raw);
  char *b64 = envd_b64_encode(digest, sizeof digest);
  char want[64] = "v1_";
  if (b64) {
    size_t l = strlen(b64);
    while (l > 0 && b64[l - 1] == '=') b64[--l] = 0;
    snprintf(want + 3, sizeof want - 3, "%s", b64);
  }
  free(b64);
  if (!envd_str_eq_ct(sig, want)) {
    status = 401;
    *msg = "invalid signature";
    goto out;
  }
  if (exp) {
    char *end = NULL;
    long long x = strtoll(exp, &end, 10);
    if (!*exp || *end) {
      status = 401;
      *msg = "invalid signature expiration";
    } else if (x < (long long)time(NULL)) {
      status = 401;
      *msg = "signature is already expired";
    }
  }
out:
  free(token);
  return status;
}

/* Auth, then the user from the `username` query. Queues the error reply on failure. */
static bool files_begin(struct envd *e, struct MHD_Connection *c, const char *op,
                        struct envd_user *u, enum MHD_Result *res) {
  const char *msg = NULL;
  unsigned st = files_auth(e, c, op, &msg);
  if (st) {
    *res = envd_send_rest_err(c, st, msg);
    return false;
  }
  struct envd_err err = {0};
  if (envd_user_lookup(e, query(c, "username"), u, &err) < 0) {
    *res = envd_send_rest_err(c, 401, err.msg);
    envd_err_clear(&err);
    return false;
  }
  return true;
}

static unsigned errno_status(int er) {
  switch (er) {
    case ENOENT: return 404;
    case EACCES:
    case EPERM:
    case EROFS: return 403;
    case EISDIR:
    case ENOTDIR:
    case ENAMETOOLONG:
    case EINVAL: return 400;
    case ENOSPC:
    case EDQUOT: return 507;
    default: return 500;
  }
}

enum MHD_Result envd_files_get(struct envd *e, struct MHD_Connection *c) {
  struct envd_user u;
  enum MHD_Result res = MHD_NO;
  if (!files_begin(e, c, "read", &u, &res)) return res;
  struct envd_err err = {0};
  char *path = envd_resolve_path(e, &u, query(c, "path"), &err);
  if (!path) {
    res = envd_send_rest_err(c, 400, err.msg);
    envd_err_clear(&err);
    return res;
  }
  char msg[4200];
  envd_fs_enter(&u);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  int er = errno;
  envd_fs_leave();
  struct stat st;
  if (fd < 0) {
    snprintf(msg, sizeof msg, er == ENOENT ? "path '%s' does not exist" : "error opening '%s': %s",
             path, strerror(er));
    res = envd_send_rest_err(c, errno_status(er), msg);
  } else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    snprintf(msg, sizeof msg, "path '%s' is a directory or not a regular file", path);
    res = envd_send_rest_err(c, 400, msg);
  } else {
    fcntl(fd, F_SETFL, 0);
    struct MHD_Response *r = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
    if (!r) {
      close(fd);
    } else {
      const char *base = strrchr(path, '/');
      snprintf(msg, sizeof msg, "inline; filename=\"%s\"", base ? base + 1 : path);
      MHD_add_response_header(r, "Content-Type", "application/octet-stream");
      MHD_add_response_header(r, "Content-Disposition", msg);
      res = MHD_queue_response(c, 200, r);
      MHD_destroy_response(r);
    }
  }
  free(path);
  return res;
}

struct envd_upload {
  struct envd *e;
  struct MHD_Connection *c;
  struct envd_user user;
  struct MHD_PostProcessor *pp;
  char *qpath; /* resolved `path` query or NULL */
  int fd;
  char *cur;
  size_t cur_written;
  json_t *result, *seen;
  unsigned fail_status;
  char *fail_msg;
};

static bool up_fail(struct envd_upload *up, unsigned status, const char *fmt, const char *a,
                    const char *b) {
  if (up->fail_status) return false;
  up->fail_status = status;
  if (asprintf(&up->fail_msg, fmt, a, b ? b : "") < 0) up->fail_msg = NULL;
  return false;
}

static void close_cur(struct envd_upload *up) {
  if (up->fd >= 0) close(up->fd);
  up->fd = -1;
  free(up->cur);
  up->cur = NULL;
  up->cur_written = 0;
}

/* Open `target` (raw path from the query or part filename) for writing as the user. */
static bool open_target(struct envd_upload *up, const char *target) {
  close_cur(up);
  struct envd_err err = {0};
  char *path = envd_resolve_path(up->e, &up->user, target, &err);
  if (!path) {
    up_fail(up, 400, "%s%s", err.msg ? err.msg : "invalid path", NULL);
    envd_err_clear(&err);
    return false;
  }
  if (json_object_get(up->seen, path)) {
    up_fail(up, 400, "path '%s' is given more than once%s", path, NULL);
    free(path);
    return false;
  }
  json_object_set_new(up->seen, path, json_true());
  char *pcopy = strdup(path);
  envd_fs_enter(&up->user);
  int rc = pcopy ? envd_mkdir_p(dirname(pcopy)) : -1;
  int fd = rc == 0 ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : -1;
  int er = errno;
  envd_fs_leave();
  free(pcopy);
  if (fd < 0) {
    up_fail(up, errno_status(er), "error writing '%s': %s", path, strerror(er));
    free(path);
    return false;
  }
  if (fchown(fd, up->user.uid, up->user.gid) < 0) { /* best effort: already the user's */
  }
  up->fd = fd;
  up->cur = path;
  const char *base = strrchr(path, '/');
  json_array_append_new(up->result, json_pack("{s:s,s:s,s:s}", "path", path, "name",
                                               base && base[1] ? base + 1 : path, "type", "file"));
  return true;
}

static bool write_all(struct envd_upload *up, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(up->fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return up_fail(up, errno_status(errno), "error writing '%s': %s", up->cur,
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
                                 size_t size) {
  struct envd_upload *up = cls;
  if (up->fail_status) return MHD_YES;
  if (!key || strcmp(key, "file") != 0) return MHD_YES;
  const char *target = up->qpath ? up->qpath : filename;
  bool same = up->fd >= 0 && up->cur_written == 0 && off == 0;
  if (off == 0 && !same) {
    if (!target || !*target) {
      up_fail(up, 400, "missing file name for part%s%s", "", NULL);
      return MHD_YES;
    }
    if (!open_target(up, target)) return MHD_YES;
  }
  if (up->fd >= 0 && size > 0) write_all(up, data, size);
  return MHD_YES;
}

struct envd_upload *envd_files_post_begin(struct envd *e, struct MHD_Connection *c,
                                          bool *queued) {
  struct envd_user u;
  enum MHD_Result res;
  *queued = false;
  if (!files_begin(e, c, "write", &u, &res)) {
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
  const char *qp = query(c, "path");
  const char *ct = envd_header(c, "Content-Type");
  const char *ce = envd_header(c, "Content-Encoding");
  if (qp && *qp) up->qpath = strdup(qp);
  if (ce && *ce && strcasecmp(ce, "identity") != 0) {
    up_fail(up, 400, "unsupported content encoding '%s'%s", ce, NULL);
  } else if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
    up->pp = MHD_create_post_processor(c, 64 * 1024, part_iter, up);
    if (!up->pp) up_fail(up, 400, "invalid multipart request%s%s", "", NULL);
  } else if (ct && strncasecmp(ct, "application/octet-stream", 24) == 0) {
    if (!up->qpath)
      up_fail(up, 400, "path query parameter is required for octet-stream uploads%s%s", "",
              NULL);
    else
      open_target(up, up->qpath);
  } else {
    up_fail(up, 400, "unsupported content type '%s'%s", ct ? ct : "", NULL);
  }
  return up;
}

bool envd_files_post_data(struct envd_upload *up, const char *data, size_t len) {
  if (up->fail_status) return false;
  if (up->pp) {
    if (MHD_post_process(up->pp, data, len) != MHD_YES)
      up_fail(up, 400, "malformed multipart body%s%s", "", NULL);
    return !up->fail_status;
  }
  return up->fd >= 0 && write_all(up, data, len);
}

void envd_files_post_free(struct envd_upload *up) {
  if (!up) return;
  if (up->pp) MHD_destroy_post_processor(up->pp);
  close_cur(up);
  json_decref(up->result);
  json_decref(up->seen);
  free(up->qpath);
  free(up->fail_msg);
  free(up);
}

enum MHD_Result envd_files_post_end(struct envd_upload *up) {
  struct MHD_Connection *c = up->c;
  if (up->pp) {
    if (MHD_destroy_post_processor(up->pp) != MHD_YES)
      up_fail(up, 400, "malformed multipart body%s%s", "", NULL);
    up->pp = NULL;
    if (!up->fail_status && json_array_size(up->result) == 0)
      up_fail(up, 400, "no file part in multipart body%s%s", "", NULL);
  }
  close_cur(up);
  enum MHD_Result res = up->fail_status
                            ? envd_send_rest_err(c, up->fail_status, up->fail_msg)
                            : envd_send_json(c, 200, up->result);
  envd_files_post_free(up);
  return res;
}
