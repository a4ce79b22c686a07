/*
 * files.c: the /files REST endpoint: GET downloads raw bytes, POST uploads (multipart/form-data
 * parts named `file`, or application/octet-stream with a `path` query). This file has the
 * authentication (§8) and GET; files_upload.c has POST.
 *
 * Auth:    no token set → allowed; X-Access-Token header must match if present; otherwise a v1
 *          signature: "v1_" + base64 (std, no padding) of sha256(path:op:username:token[:exp]),
 *          op "read"/"write", compared in constant time; signature_expiration < now → 401.
 * Shapes:  GET → 200 application/octet-stream, streamed from the file descriptor; with
 *          Accept-Encoding: gzip (q > 0) the body is gzip (Content-Encoding: gzip), compressed
 *          while streaming; Vary: Accept-Encoding always.
 *          POST → 200 [{"path":"/abs","name":"base","type":"file","metadata"?:{..}}...].
 *          Content-Encoding: gzip bodies (octet-stream or multipart) are inflated while they
 *          arrive (concatenated members allowed); more than ENVD_GUNZIP_MAX (1 GiB) of output,
 *          corrupt or truncated data → 400.
 * Metadata: X-Metadata-<Key>: <value> headers → xattrs user.e2b.<lowercased key> on every
 *          uploaded file, replacing its whole user.e2b.* set (no headers: the set is cleared).
 *          Printable ASCII only, key ≤ 246 bytes, keys + values ≤ 4096 bytes, else 400; a
 *          filesystem without user xattrs → 500 naming the path (only when metadata is sent).
 *          Errors {"code":<status>,"message":".."}: 400 (directory, no path, bad content type,
 *          duplicate path, a path that is not UTF-8, refused before anything is written),
 *          401 (auth, unknown user), 403 (permission), 404 (missing), 507 (disk full), 500.
 * Files:   missing parents created (0755) as root and chowned to the user, as E2B's envd does
 *          (only the directories created; envd_mkdir_p); files created (0666 & ~umask 022) as
 *          the user, so owned by the user; existing files truncated and fchown'ed to the user.
 * Mutants: binary-read-mangled (GET) and large-upload-dropped (POST) lie here (mutants.h).
 * Source:  docs/protocol/envd-protocol.md §7 (/files), §8 (signatures), §6.1.
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
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

const char *envd_files_query(struct MHD_Connection *c, const char *k)
{
  return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

/* §8 validation order. Returns 0 or an HTTP status with *msg (static). */
static unsigned files_auth(struct envd *e, struct MHD_Connection *c, const char *op,
                           const char **msg)
{
  pthread_mutex_lock(&e->mu);
  char *token = e->token ? strdup(e->token) : NULL;
  pthread_mutex_unlock(&e->mu);
  unsigned status = 0;
  if (!token)
    return 0;
  const char *hdr = envd_header(c, "X-Access-Token");
  const char *sig = envd_files_query(c, "signature"),
             *exp = envd_files_query(c, "signature_expiration");
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
  const char *path = envd_files_query(c, "path"), *user = envd_files_query(c, "username");
  char *raw = NULL;
  int n = exp ? asprintf(&raw, "%s:%s:%s:%s:%s", path ? path : "", op, user ? user : "", token, exp)
              : asprintf(&raw, "%s:%s:%s:%s", path ? path : "", op, user ? user : "", token);
  if (n < 0) {
    status = 500;
    *msg = "out of memory";
    goto out;
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256((const unsigned char *)raw, (size_t)n, digest);
  free(raw);
  char *b64 = abx_b64_encode_alloc(digest, sizeof digest, ABX_B64_STD);
  char want[64] = "v1_";
  if (b64) {
    size_t l = strlen(b64);
    while (l > 0 && b64[l - 1] == '=')
      b64[--l] = 0;
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

bool envd_files_begin(struct envd *e, struct MHD_Connection *c, const char *op, struct envd_user *u,
                      enum MHD_Result *res)
{
  const char *msg = NULL;
  unsigned st = files_auth(e, c, op, &msg);
  if (st) {
    *res = envd_send_rest_err(c, st, msg);
    return false;
  }
  struct envd_err err = {0};
  if (envd_user_lookup(e, envd_files_query(c, "username"), u, &err) < 0) {
    *res = envd_send_rest_err(c, 401, err.msg);
    envd_err_clear(&err);
    return false;
  }
  return true;
}

unsigned envd_files_errno_status(int er)
{
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

/* Whether Accept-Encoding lists gzip with a non-zero q. */
static bool wants_gzip(struct MHD_Connection *c)
{
  const char *h = envd_header(c, "Accept-Encoding");
  while (h && *h) {
    while (*h == ' ' || *h == '\t' || *h == ',')
      h++;
    size_t tl = strcspn(h, ",;");
    size_t n = tl;
    while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
      n--;
    bool gz =
        (n == 4 && strncasecmp(h, "gzip", 4) == 0) || (n == 6 && strncasecmp(h, "x-gzip", 6) == 0);
    const char *end = h + strcspn(h, ",");
    bool q0 = false;
    const char *q = h + tl;
    if (*q == ';') {
      const char *qq = strstr(q, "q=");
      if (qq && qq < end)
        q0 = strtod(qq + 2, NULL) <= 0;
    }
    if (gz && !q0)
      return true;
    h = end;
  }
  return false;
}

struct gz_get {
  int fd;
  bool eof, done;
  z_stream z;
  unsigned char in[64 * 1024];
};

static ssize_t gz_get_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct gz_get *g = cls;
  if (g->done)
    return MHD_CONTENT_READER_END_OF_STREAM;
  g->z.next_out = (unsigned char *)buf;
  g->z.avail_out = (uInt)(max > (1u << 30) ? (1u << 30) : max);
  for (;;) {
    if (g->z.avail_in == 0 && !g->eof) {
      ssize_t n = read(g->fd, g->in, sizeof g->in);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
      if (n == 0)
        g->eof = true;
      g->z.next_in = g->in;
      g->z.avail_in = (uInt)n;
    }
    int rc = deflate(&g->z, g->eof ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_ERROR)
      return MHD_CONTENT_READER_END_WITH_ERROR;
    size_t produced = (size_t)((char *)g->z.next_out - buf);
    if (rc == Z_STREAM_END)
      g->done = true;
    if (produced > 0)
      return (ssize_t)produced;
    if (g->done)
      return MHD_CONTENT_READER_END_OF_STREAM;
  }
}

static void gz_get_free(void *cls)
{
  struct gz_get *g = cls;
  deflateEnd(&g->z);
  close(g->fd);
  free(g);
}

/* A streamed gzip response of fd (taken over), or NULL (fd closed). */
static struct MHD_Response *gzip_response(int fd)
{
  struct gz_get *g = calloc(1, sizeof *g);
  if (!g || deflateInit2(&g->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    free(g);
    close(fd);
    return NULL;
  }
  g->fd = fd;
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, gz_get_cb, g, gz_get_free);
  if (!r)
    gz_get_free(g);
  return r;
}

enum MHD_Result envd_files_get(struct envd *e, struct MHD_Connection *c)
{
  struct envd_user u;
  enum MHD_Result res = MHD_NO;
  if (!envd_files_begin(e, c, "read", &u, &res))
    return res;
  struct envd_err err = {0};
  char *path = envd_resolve_path(e, &u, envd_files_query(c, "path"), &err);
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
    res = envd_send_rest_err(c, envd_files_errno_status(er), msg);
  } else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    snprintf(msg, sizeof msg, "path '%s' is a directory or not a regular file", path);
    res = envd_send_rest_err(c, 400, msg);
  } else {
    fcntl(fd, F_SETFL, 0);
    if (envd_mutant_on(e, ENVD_MUT_BINARY_READ_MANGLED))
      fd = envd_mutant_mangle_fd(fd, &st);
    bool gz = wants_gzip(c);
    struct MHD_Response *r = fd < 0 ? NULL
                             : gz   ? gzip_response(fd)
                                    : MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
    if (!r) {
      if (!gz && fd >= 0)
        close(fd);
    } else {
      if (gz)
        MHD_add_response_header(r, "Content-Encoding", "gzip");
      MHD_add_response_header(r, "Vary", "Accept-Encoding");
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
