/*
 * fuzz_multipart.c: libFuzzer target for envd's POST /files upload (platform/envd/files_upload.c)
 * along the path `abxlua envd` runs it: libmicrohttpd's request parser and multipart post
 * processor, envd's access handler and part callback, path resolution, file creation with the
 * user's fsuid, X-Metadata-* headers, gzip bodies. Each input is one HTTP/1.1 request to an
 * in-process envd chrooted into a scratch tree (tests/fuzz/envd_jail.h; needs root).
 *
 * Input: three lines, then the body.
 *   line 1: byte 0 = flags, then the `path` query value (any bytes; percent-encoded here).
 *     flags & 3: Content-Type 0 multipart/form-data; boundary=<line 2>,
 *                1 application/octet-stream, 2 <line 2> as it is, 3 none;
 *     (flags >> 2) & 3: Content-Encoding 0 none, 1 gzip (the body is compressed here),
 *                2 gzip (the body is sent as it is), 3 br (unsupported);
 *     16: username=user (else envd's default user, root); 32: send the path query;
 *     64: Transfer-Encoding: chunked, in chunks of 1..97 bytes (split points for the parser);
 *     128: parts mode: the body is a list of parts "filename US content" separated by RS
 *          (0x1f, 0x1e), rendered here as a well-formed multipart body named `file` each
 *          (Content-Type and line 2 are then set here), so the answer can be predicted.
 *   line 2: the boundary or the Content-Type, as flags say.
 *   line 3: X-Metadata-<k>: <v> headers, written "k:v|k2:v2".
 * Oracles (abort() on violation):
 *   - every request gets a complete answer from envd: 200 with a JSON array, or 400, 401, 403,
 *     404, 500 or 507 with {"code": <status>, "message": string}; libmicrohttpd's own 431 page
 *     only for a request head of at least HEAD_431_MIN bytes (envd_int.h ENVD_CONNECTION_MEMORY);
 *   - 200: at least one entry {path, name, type "file", metadata?}; paths absolute, clean and
 *     unique, names their last component; each a regular file of the acting user holding the
 *     whole body (octet-stream) or one contiguous run of it (multipart), the body before
 *     compression when gzip is applied here; no other file appeared in the tree;
 *   - parts mode: a part without a name, or whose name does not resolve to UTF-8, or two
 *     parts naming one path, mean no 200; a 200 names every part in order at the path
 *     envd_resolve_path gives, holding exactly its bytes (a part right after an empty part of
 *     the same name continues that file: libmicrohttpd cannot tell where an empty part ended);
 *   - as `user`: nothing that was there is changed, whatever the answer; what is created
 *     belongs to uid 1000 (missing parents are made by root and handed to the user, as E2B
 *     envd's EnsureDirs; files are made with the user's fsuid), and no file lands directly in
 *     a directory that existed before outside /home/user.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "envd_jail.h"
#include "envd/envd_int.h"

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    fprintf(stderr, "fuzz_multipart: " __VA_ARGS__);                                               \
    fputc('\n', stderr);                                                                           \
    abort();                                                                                       \
  } while (0)

#define F_USER 16
#define F_PATH 32
#define F_CHUNKED 64
#define F_PARTS 128
#define PARTS_BOUNDARY "fuzz-parts-1c9e"
/* The smallest request head that may exhaust envd's connection memory (256 KiB for the head and
 * about 50 bytes of table per field: 16 KiB of head is some 3,000 fields at least). */
#define HEAD_431_MIN (16u * 1024u)

struct part {
  char *name; /* file name as sent (quotes, CR, LF and NUL dropped) */
  const char *data;
  size_t len;
};

struct input {
  unsigned flags;
  const char *path, *line2, *meta;
  size_t path_n, line2_n, meta_n;
  struct jail_buf body; /* as the client means it (before gzip) */
  struct part *parts;   /* parts mode */
  size_t nparts;
  int predictable; /* parts mode and no part holds the boundary */
};

struct check {
  const struct input *in;
  size_t head_len; /* bytes of the request head, its blank line included */
  char **want;     /* parts mode, predictable: the files a 200 names, in order */
  size_t *from;    /* from[i]: the part whose bytes want[i] holds */
  size_t nwant;
  unsigned status;
  unsigned uid;
  char **reported; /* paths of a 200 answer */
  size_t nreported;
  int fixtures_dirty;
  const char *root;
  size_t root_len;
};

/* ---- the request ------------------------------------------------------------------------ */

/* Percent-encode every byte but [A-Za-z0-9._~/-]. */
static void put_pct(struct jail_buf *b, const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        (c && strchr("._~/-", c)))
      jail_put(b, &s[i], 1);
    else
      jail_putf(b, "%%%02X", c);
  }
}

/* A header value: the bytes of s but CR, LF and NUL, which would end the header. */
static void put_value(struct jail_buf *b, const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (s[i] != '\r' && s[i] != '\n' && s[i] != 0)
      jail_put(b, &s[i], 1);
}

/* A header-name byte: an RFC 9110 token character, or a byte from 0x80, which libmicrohttpd
 * passes on too. Metadata keys keep only these, so envd, not the HTTP parser, judges them. */
static int tchar(unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80 ||
         (c && strchr("!#$%&'*+-.^_`~", c));
}

/* Append the gzip member of in[0..n) to out. */
static void gzip_into(const char *in, size_t n, struct jail_buf *out)
{
  z_stream z = {0};
  unsigned char tmp[8192];
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    FAIL("deflateInit2");
  z.next_in = (unsigned char *)in;
  z.avail_in = (uInt)n;
  int rc;
  do {
    z.next_out = tmp;
    z.avail_out = sizeof tmp;
    rc = deflate(&z, Z_FINISH);
    jail_put(out, tmp, sizeof tmp - z.avail_out);
  } while (rc == Z_OK);
  deflateEnd(&z);
}

/* Parts mode: split the raw body into parts and render them as multipart/form-data. */
static void render_parts(struct input *in, const char *raw, size_t n)
{
  in->predictable = 1;
  for (const char *p = raw, *end = raw + n; n > 0 && p <= end;) {
    const char *rs = memchr(p, 0x1e, (size_t)(end - p)), *stop = rs ? rs : end;
    const char *us = memchr(p, 0x1f, (size_t)(stop - p)), *nend = us ? us : stop;
    struct part *np = realloc(in->parts, (in->nparts + 1) * sizeof *np);
    char *name = malloc((size_t)(nend - p) + 1);
    if (!np || !name)
      FAIL("out of memory");
    in->parts = np;
    size_t k = 0;
    for (const char *c = p; c < nend; c++)
      if (*c != '"' && *c != '\r' && *c != '\n' && *c != 0)
        name[k++] = *c;
    name[k] = 0;
    struct part *pt = &in->parts[in->nparts++];
    pt->name = name;
    pt->data = us ? us + 1 : stop;
    pt->len = (size_t)(stop - pt->data);
    if (memmem(pt->data, pt->len, PARTS_BOUNDARY, sizeof PARTS_BOUNDARY - 1))
      in->predictable = 0; /* the part would end early: no prediction */
    jail_putf(&in->body, "--" PARTS_BOUNDARY "\r\nContent-Disposition: form-data; name=\"file\"; "
                         "filename=\"");
    jail_put(&in->body, name, k);
    jail_putf(&in->body, "\"\r\nContent-Type: application/octet-stream\r\n\r\n");
    jail_put(&in->body, pt->data, pt->len);
    jail_putf(&in->body, "\r\n");
    if (!rs)
      break;
    p = rs + 1;
  }
  jail_putf(&in->body, "--" PARTS_BOUNDARY "--\r\n");
}

static void build_request(const struct input *in, struct jail_buf *req)
{
  jail_putf(req, "POST /files");
  const char *sep = "?";
  if (in->flags & F_USER) {
    jail_putf(req, "%susername=user", sep);
    sep = "&";
  }
  if (in->flags & F_PATH) {
    jail_putf(req, "%spath=", sep);
    put_pct(req, in->path, in->path_n);
  }
  jail_putf(req, " HTTP/1.1\r\nHost: envd\r\nConnection: close\r\n");
  unsigned ctype = in->flags & 3;
  if (in->flags & F_PARTS) {
    jail_putf(req, "Content-Type: multipart/form-data; boundary=" PARTS_BOUNDARY "\r\n");
  } else if (ctype != 3) {
    static const char *const ct[] = {"multipart/form-data; boundary=", "application/octet-stream",
                                     ""};
    jail_putf(req, "Content-Type: %s", ct[ctype]);
    if (ctype != 1)
      put_value(req, in->line2, in->line2_n);
    jail_putf(req, "\r\n");
  }
  static const char *const enc[] = {NULL, "gzip", "gzip", "br"};
  unsigned e = (in->flags >> 2) & 3;
  if (enc[e])
    jail_putf(req, "Content-Encoding: %s\r\n", enc[e]);
  for (const char *p = in->meta, *end = in->meta + in->meta_n; p < end;) {
    const char *bar = memchr(p, '|', (size_t)(end - p)), *stop = bar ? bar : end;
    const char *colon = memchr(p, ':', (size_t)(stop - p));
    jail_putf(req, "X-Metadata-");
    for (const char *k = p; k < (colon ? colon : stop); k++)
      if (tchar((unsigned char)*k))
        jail_put(req, k, 1);
    jail_putf(req, ": ");
    if (colon)
      put_value(req, colon + 1, (size_t)(stop - colon - 1));
    jail_putf(req, "\r\n");
    p = bar ? bar + 1 : end;
  }
  struct jail_buf z = {0};
  const char *body = in->body.p;
  size_t n = in->body.n;
  if (e == 1) {
    gzip_into(body, n, &z);
    body = z.p;
    n = z.n;
  }
  if (in->flags & F_CHUNKED) {
    jail_putf(req, "Transfer-Encoding: chunked\r\n\r\n");
    for (size_t off = 0, i = 0; off < n; i++) {
      size_t k = 1 + (i * 37 + n) % 97;
      if (k > n - off)
        k = n - off;
      jail_putf(req, "%zx\r\n", k);
      jail_put(req, body + off, k);
      jail_putf(req, "\r\n");
      off += k;
    }
    jail_putf(req, "0\r\n\r\n");
  } else {
    jail_putf(req, "Content-Length: %zu\r\n\r\n", n);
    jail_put(req, body, n);
  }
  free(z.p);
}

/* ---- oracles ------------------------------------------------------------------------------ */

static int is_clean_abs(const char *p)
{
  if (p[0] != '/' || strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../"))
    return 0;
  size_t n = strlen(p);
  return !(n > 1 && p[n - 1] == '/') && !(n >= 2 && strcmp(p + n - 2, "/.") == 0) &&
         !(n >= 3 && strcmp(p + n - 3, "/..") == 0);
}

/* The content of the 200 answer's i-th file, checked against what the body says. */
static void check_file(struct check *ck, size_t i, const char *path)
{
  char full[8192];
  snprintf(full, sizeof full, "%s%s", ck->root, path);
  struct stat st;
  if (lstat(full, &st) != 0 || !S_ISREG(st.st_mode))
    FAIL("200 names '%s', which is not a regular file", path);
  if (st.st_uid != ck->uid)
    FAIL("'%s' belongs to uid %u, the upload ran as %u", path, (unsigned)st.st_uid, ck->uid);
  const struct input *in = ck->in;
  unsigned enc = (in->flags >> 2) & 3, ctype = in->flags & 3;
  if (enc >= 2 || (!(in->flags & F_PARTS) && ctype >= 2))
    return; /* the body is not known in the clear, or its content type is the input's */
  char *data = malloc((size_t)st.st_size + 1);
  int fd = open(full, O_RDONLY | O_CLOEXEC);
  ssize_t n = data && fd >= 0 ? read(fd, data, (size_t)st.st_size + 1) : -1;
  if (fd >= 0)
    close(fd);
  if (n != st.st_size)
    FAIL("cannot read '%s'", path);
  const char *body = in->body.p;
  size_t bn = in->body.n;
  if (ck->want) {
    const struct part *pt = &in->parts[ck->from[i]];
    if ((size_t)n != pt->len || memcmp(data, pt->data, pt->len) != 0)
      FAIL("'%s' holds %zd bytes, not the %zu of part %zu", path, n, pt->len, ck->from[i]);
  } else if (!(in->flags & F_PARTS) && ctype == 1) {
    if ((size_t)n != bn || memcmp(data, body, bn) != 0)
      FAIL("'%s' holds %zd bytes that are not the %zu-byte octet-stream body", path, n, bn);
  } else if (n > 0 && !memmem(body, bn, data, (size_t)n)) {
    FAIL("'%s' holds %zd bytes that are no contiguous run of the multipart body", path, n);
  }
  free(data);
}

/* Parts mode: what envd must answer, from the parts' names and envd's own path resolution:
 * fills ck->want, ck->from and ck->nwant; returns 1 when a 200 is allowed. A part right after
 * an empty part of the same name continues it (libmicrohttpd cannot tell envd where an empty
 * part ended, see files_upload.c's part_iter). */
static int predict(struct check *ck)
{
  const struct input *in = ck->in;
  struct envd e = {0};
  struct envd_user u = {0};
  snprintf(u.home, sizeof u.home, "%s", (in->flags & F_USER) ? JAIL_USER_HOME : "/root");
  char *qpath = (in->flags & F_PATH) ? strndup(in->path, in->path_n) : NULL; /* cut at a NUL */
  ck->want = calloc(in->nparts + 1, sizeof *ck->want);
  ck->from = calloc(in->nparts + 1, sizeof *ck->from);
  if (!ck->want || !ck->from)
    FAIL("out of memory");
  int ok = in->nparts > 0;
  const char *prev = NULL; /* the name of the last file, while it is still empty */
  for (size_t i = 0; ok && i < in->nparts; i++) {
    const char *target = qpath && *qpath ? qpath : in->parts[i].name;
    if (prev && strcmp(prev, target) == 0) {
      ck->from[ck->nwant - 1] = i;
      prev = in->parts[i].len ? NULL : prev;
      continue;
    }
    struct envd_err err = {0};
    char *path = *target ? envd_resolve_path(&e, &u, target, &err) : NULL;
    envd_err_clear(&err);
    json_t *utf8 = path ? json_string(path) : NULL; /* a JSON answer can only name UTF-8 */
    ok = utf8 != NULL;
    json_decref(utf8);
    for (size_t k = 0; ok && k < ck->nwant; k++)
      ok = strcmp(ck->want[k], path) != 0;
    ck->from[ck->nwant] = i;
    ck->want[ck->nwant++] = path;
    prev = in->parts[i].len ? NULL : target;
  }
  free(qpath);
  return ok;
}

static void check_answer(struct check *ck, const struct jail_buf *ans)
{
  unsigned st = 0;
  char *hend = ans->p ? strstr(ans->p, "\r\n\r\n") : NULL;
  if (!hend || sscanf(ans->p, "HTTP/1.1 %3u", &st) != 1)
    FAIL("no complete answer (%zu bytes: '%.200s')", ans->n, ans->p ? ans->p : "");
  ck->status = st;
  const char *body = hend + 4;
  size_t blen = ans->n - (size_t)(body - ans->p);
  char *cl = strcasestr(ans->p, "\r\nContent-Length:");
  if (cl && cl < hend && strtoull(cl + 17, NULL, 10) != blen)
    FAIL("answer %u: Content-Length %.20s disagrees with %zu body bytes", st, cl + 17, blen);
  int may_200 = ck->in->predictable ? predict(ck) : 1;
  json_error_t je;
  json_t *j = json_loadb(body, blen, 0, &je);
  if (st == 200) {
    if (!may_200)
      FAIL("200 for parts that cannot all be written: '%.300s'", body);
    if (!json_is_array(j) || json_array_size(j) == 0)
      FAIL("200 without a non-empty JSON array: '%.200s'", body);
    ck->nreported = json_array_size(j);
    if (ck->want && ck->nreported != ck->nwant)
      FAIL("200 names %zu files, the %zu parts make %zu: '%.300s'", ck->nreported, ck->in->nparts,
           ck->nwant, body);
    ck->reported = calloc(ck->nreported, sizeof *ck->reported);
    size_t i;
    json_t *e;
    json_array_foreach(j, i, e)
    {
      const char *path = json_string_value(json_object_get(e, "path"));
      const char *name = json_string_value(json_object_get(e, "name"));
      const char *type = json_string_value(json_object_get(e, "type"));
      json_t *meta = json_object_get(e, "metadata");
      if (!path || !name || !type || strcmp(type, "file") != 0 || (meta && !json_is_object(meta)))
        FAIL("200 entry %zu is malformed: '%.200s'", i, body);
      if (!is_clean_abs(path) || strcmp(name, strrchr(path, '/') + 1) != 0)
        FAIL("200 entry %zu: path '%s' is not clean and absolute or '%s' not its name", i, path,
             name);
      if (ck->want && strcmp(path, ck->want[i]) != 0)
        FAIL("200 entry %zu is '%s', not '%s'", i, path, ck->want[i]);
      for (size_t k = 0; k < i; k++)
        if (strcmp(ck->reported[k], path) == 0)
          FAIL("200 names '%s' twice", path);
      ck->reported[i] = strdup(path);
      check_file(ck, i, path);
    }
  } else if (st == 431 && ck->head_len >= HEAD_431_MIN) {
    /* libmicrohttpd's page: the head did not fit envd's connection memory */
  } else {
    static const unsigned ok[] = {400, 401, 403, 404, 500, 507};
    int known = 0;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
      known |= st == ok[i];
    json_t *code = json_object_get(j, "code");
    if (!known || !json_is_integer(code) || json_integer_value(code) != st ||
        !json_is_string(json_object_get(j, "message")))
      FAIL("answer %u is not envd's error shape: '%.200s'", st, body);
  }
  json_decref(j);
}

static struct check *g_ck; /* for the tree walk's callback */

/* After each request: judge every entry of the tree, remove what the request created. */
static int walk_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
  struct check *ck = g_ck;
  const char *rel = path + ck->root_len;
  if (jail_fixture_dir(rel))
    return 0;
  int is_user = ck->uid == JAIL_USER_UID;
  const char *text = jail_fixture_text(rel);
  if (text) {
    size_t n = strlen(text);
    char tmp[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, tmp, sizeof tmp) : -1;
    if (fd >= 0)
      close(fd);
    if (got != (ssize_t)n || memcmp(tmp, text, n) != 0) {
      if (is_user)
        FAIL("an upload as user changed %s", rel);
      ck->fixtures_dirty = 1;
    }
    return 0;
  }
  /* As envd's EnsureDirs (E2B's): an upload's missing parents are made by root and handed to the
   * user, anywhere; the file itself is made as the user, so it never lands in a directory that
   * was there before unless that is the user's home tree. */
  if (is_user && type == FTW_F && strncmp(rel, JAIL_USER_HOME "/", sizeof JAIL_USER_HOME) != 0) {
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", rel);
    char *slash = strrchr(parent, '/');
    if (slash)
      *slash = 0;
    if (jail_fixture_dir(parent))
      FAIL("an upload as user created %s in the root-owned %s", rel, parent[0] ? parent : "/");
  }
  if (is_user && sb->st_uid != JAIL_USER_UID)
    FAIL("an upload as user created %s owned by uid %u", rel, (unsigned)sb->st_uid);
  if (type != FTW_DP && !(type == FTW_F && S_ISREG(sb->st_mode)))
    FAIL("the upload left %s of nftw type %d, mode %o", rel, type, (unsigned)sb->st_mode);
  if (type == FTW_F && ck->status == 200) {
    int named = 0;
    for (size_t i = 0; i < ck->nreported && !named; i++)
      named = strcmp(ck->reported[i], rel) == 0;
    if (!named)
      FAIL("a 200 upload created %s without naming it", rel);
  }
  if ((type == FTW_DP ? rmdir(path) : unlink(path)) != 0)
    FAIL("cannot remove %s: %m", path);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  jail_setup();
  if (size < 1)
    return 0;
  const char *end = (const char *)data + size, *cur = (const char *)data + 1;
  struct input in = {.flags = data[0]};
  const char *line[3];
  size_t len[3];
  for (int i = 0; i < 3; i++) {
    const char *nl = cur < end ? memchr(cur, '\n', (size_t)(end - cur)) : NULL;
    line[i] = cur;
    len[i] = nl ? (size_t)(nl - cur) : (size_t)(end - cur);
    cur = nl ? nl + 1 : end;
  }
  in.path = line[0], in.path_n = len[0];
  in.line2 = line[1], in.line2_n = len[1];
  in.meta = line[2], in.meta_n = len[2];
  if (in.flags & F_PARTS)
    render_parts(&in, cur, (size_t)(end - cur));
  else
    jail_put(&in.body, cur, (size_t)(end - cur));

  struct jail_buf req = {0}, ans = {0};
  build_request(&in, &req);
  jail_exchange(&req, &ans);
  if (getenv("FUZZ_MULTIPART_TRACE")) /* writing seeds: what each input got */
    fprintf(stderr, "fuzz_multipart: %.*s\n", (int)(ans.n > 600 ? 600 : ans.n), ans.p);
  struct check ck = {.in = &in, .uid = (in.flags & F_USER) ? JAIL_USER_UID : 0};
  const char *req_end = req.p ? memmem(req.p, req.n, "\r\n\r\n", 4) : NULL;
  ck.head_len = req_end ? (size_t)(req_end - req.p) + 4 : req.n;
  ck.root = jail_root(&ck.root_len);
  check_answer(&ck, &ans);
  g_ck = &ck;
  if (nftw(ck.root, walk_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    FAIL("cannot walk %s: %m", ck.root);
  if (ck.fixtures_dirty)
    jail_restore_fixtures();
  for (size_t i = 0; i < ck.nreported; i++)
    free(ck.reported[i]);
  free(ck.reported);
  for (size_t i = 0; i < ck.nwant; i++)
    free(ck.want[i]);
  free(ck.want);
  free(ck.from);
  for (size_t i = 0; i < in.nparts; i++)
    free(in.parts[i].name);
  free(in.parts);
  free(in.body.p);
  free(req.p);
  free(ans.p);
  return 0;
}
