/*
 * execd_upload.c: execd's file transfer routes, POST /files/upload and GET /files/download.
 *
 * Upload:  multipart/form-data; parts named `metadata` (a file part holding FileMetadata JSON
 *          {path, owner?, group?, mode?}) and `file` (the bytes), the i-th file written to the
 *          i-th metadata's path (filesystem_upload.go pairs them by index). Parts without a
 *          file name are form values, which execd does not read: ignored here too. Each file is
 *          written while it arrives, so a metadata part must come before its file part (the
 *          spec's order; a file part with no metadata before it → 400 INVALID_FILE_METADATA).
 *          Parents are created (0777 & ~umask), the file opened O_TRUNC with 0777 & ~umask
 *          (execd's os.ModePerm), synced, then mode/owner/group applied as POST
 *          /files/permissions does. → 200 (empty). Errors: not multipart → 400 INVALID_FILE
 *          "multipart form is empty"; no metadata part → 400 INVALID_FILE_METADATA "metadata
 *          file is missing"; no file part → 400 INVALID_FILE_CONTENT "file is missing"; unequal
 *          counts → 400 INVALID_FILE; bad metadata JSON or empty path → 400
 *          INVALID_FILE_METADATA; write or chmod failures → 500 RUNTIME_ERROR. Unlike execd,
 *          which checks the counts before writing, files before a late error stay written.
 * Download: see execd_files.c's header (Range, offset/limit). Bodies stream from the file.
 * Mutants: binary-read-mangled and large-upload-dropped change both routes (mutants.h).
 * Source:  components/execd/pkg/web/controller/filesystem_upload.go, filesystem_download.go,
 *          utils.go ParseRange @3bb6fad; opensandbox-group/OpenSandbox specs/execd-api.yaml.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/execd_int.h"
#include "envd/mutants.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define META_MAX (64u * 1024u)

struct execd_upload {
  struct envd *e;
  struct MHD_Connection *c;
  struct MHD_PostProcessor *pp;
  int kind; /* current part: 0 none/ignored, 1 metadata, 2 file */
  char key[16], *filename;
  uint64_t bytes;
  char *meta;
  size_t meta_len;
  json_t *pending; /* parsed metadata waiting for their file parts */
  int nmeta, nfile;
  int fd;
  char *path;
  json_t *cur_meta;
  unsigned status;
  const char *code;
  char *msg;
};

static void up_fail(struct execd_upload *u, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void up_fail(struct execd_upload *u, unsigned status, const char *code, const char *fmt, ...)
{
  if (u->status)
    return;
  u->status = status;
  u->code = code;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&u->msg, fmt, ap) < 0)
    u->msg = NULL;
  va_end(ap);
}

/* The current part is complete: parse a metadata part, or finish a file. */
static void end_part(struct execd_upload *u)
{
  char eb[128];
  if (u->kind == 1) {
    json_error_t je;
    json_t *m = json_loadb(u->meta ? u->meta : "", u->meta_len, 0, &je);
    const char *path = json_string_value(json_object_get(m, "path"));
    long long mode;
    const char *o, *g;
    char *why = NULL;
    if (!json_is_object(m))
      up_fail(u, 400, "INVALID_FILE_METADATA", "invalid metadata format. %s",
              m ? "metadata must be a JSON object" : je.text);
    else if (json_object_get(m, "path") && !path && !json_is_null(json_object_get(m, "path")))
      up_fail(u, 400, "INVALID_FILE_METADATA",
              "invalid metadata format. field 'path' must be a "
              "string");
    else if (execd_perm_parse(m, &mode, &o, &g, &why) < 0)
      up_fail(u, 400, "INVALID_FILE_METADATA", "invalid metadata format. %s", why ? why : "");
    else if (!path || !*path)
      up_fail(u, 400, "INVALID_FILE_METADATA", "metadata path is empty");
    else
      json_array_append(u->pending, m);
    free(why);
    json_decref(m);
    free(u->meta);
    u->meta = NULL;
    u->meta_len = 0;
  } else if (u->kind == 2 && u->fd >= 0) {
    fsync(u->fd);
    close(u->fd);
    u->fd = -1;
    char *dir = strdup(u->path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) {
      *slash = 0;
      int dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd >= 0) { /* best effort, as execd: some filesystems refuse a directory fsync */
        fsync(dfd);
        close(dfd);
      }
    }
    free(dir);
    long long mode;
    const char *o, *g;
    char *why = NULL;
    if (execd_perm_parse(u->cur_meta, &mode, &o, &g, &why) == 0 &&
        execd_chmod(u->path, mode, o, g, &why) < 0)
      up_fail(u, 500, "RUNTIME_ERROR", "error chmoding file %s. %s", u->path, why ? why : "");
    free(why);
    (void)eb;
  }
  json_decref(u->cur_meta);
  u->cur_meta = NULL;
  free(u->path);
  u->path = NULL;
  u->kind = 0;
}

static void start_file(struct execd_upload *u)
{
  char eb[128];
  u->nfile++;
  if (json_array_size(u->pending) == 0) {
    up_fail(u, 400, "INVALID_FILE_METADATA",
            "file part %d has no metadata part before it: send each metadata part before its "
            "file part",
            u->nfile);
    return;
  }
  u->cur_meta = json_incref(json_array_get(u->pending, 0));
  json_array_remove(u->pending, 0);
  const char *target = json_string_value(json_object_get(u->cur_meta, "path"));
  char *why = NULL;
  u->path = execd_expand_path(target, NULL, false, &why);
  if (!u->path) {
    up_fail(u, 500, "RUNTIME_ERROR", "error resolving target path %s. %s", target, why ? why : "");
    free(why);
    return;
  }
  char *dir = strdup(u->path), *slash = dir ? strrchr(dir, '/') : NULL;
  if (slash && slash != dir) {
    *slash = 0;
    if (envd_mkdir_p(dir, NULL) < 0) {
      up_fail(u, 500, "RUNTIME_ERROR", "error creating target directory %s. mkdir %s: %s", dir, dir,
              execd_errstr(errno, eb));
      free(dir);
      return;
    }
  }
  free(dir);
  u->fd = open(u->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0777);
  if (u->fd < 0)
    up_fail(u, 500, "RUNTIME_ERROR", "error opening destination file %s. open %s: %s", u->path,
            u->path, execd_errstr(errno, eb));
}

static enum MHD_Result part_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size)
{
  struct execd_upload *u = cls;
  if (u->status)
    return MHD_YES;
  /* A part opens with a call at offset 0 (of 0 bytes when none of it has arrived); an empty
   * part is that call alone, so only the name tells a repeat of it from the next part. */
  bool same = u->bytes == 0 && off == 0 && key && strcmp(key, u->key) == 0 &&
              (filename ? u->filename && strcmp(filename, u->filename) == 0 : !u->filename);
  if (off == 0 && !same) {
    end_part(u);
    if (u->status)
      return MHD_YES;
    snprintf(u->key, sizeof u->key, "%s", key ? key : "");
    free(u->filename);
    u->filename = filename ? strdup(filename) : NULL;
    u->bytes = 0;
    if (filename && key && strcmp(key, "metadata") == 0) {
      u->kind = 1;
      u->nmeta++;
    } else if (filename && key && strcmp(key, "file") == 0) {
      u->kind = 2;
      start_file(u);
    }
  }
  u->bytes += size;
  if (u->kind == 1 && size) {
    if (u->meta_len + size > META_MAX) {
      up_fail(u, 400, "INVALID_FILE_METADATA", "metadata part over %u bytes", META_MAX);
      return MHD_YES;
    }
    char *m = realloc(u->meta, u->meta_len + size);
    if (!m)
      return MHD_NO;
    memcpy(m + u->meta_len, data, size);
    u->meta = m;
    u->meta_len += size;
  } else if (u->kind == 2 && u->fd >= 0) {
    if (envd_mutant_upload_drop(u->e, &u->fd, u->path, NULL, u->bytes))
      return MHD_YES; /* large-upload-dropped: no file, the usual answer */
    while (size > 0) {
      ssize_t w = write(u->fd, data, size);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        char eb[128];
        up_fail(u, 500, "RUNTIME_ERROR", "error copying file %s. write %s: %s", u->path, u->path,
                execd_errstr(errno, eb));
        return MHD_YES;
      }
      data += w;
      size -= (size_t)w;
    }
  }
  return MHD_YES;
}

struct execd_upload *execd_upload_begin(struct envd *e, struct MHD_Connection *c, bool *queued)
{
  struct execd_upload *u = calloc(1, sizeof *u);
  if (!u)
    return NULL;
  u->e = e;
  u->c = c;
  u->fd = -1;
  u->pending = json_array();
  const char *ct = envd_header(c, "Content-Type");
  if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0)
    u->pp = MHD_create_post_processor(c, 64 * 1024, part_iter, u);
  if (!u->pp)
    up_fail(u, 400, "INVALID_FILE", "multipart form is empty");
  *queued = false;
  return u;
}

void execd_upload_data(struct execd_upload *u, const char *data, size_t len)
{
  if (u->status || !u->pp)
    return;
  if (MHD_post_process(u->pp, data, len) != MHD_YES)
    up_fail(u, 400, "INVALID_FILE", "multipart form is empty");
}

enum MHD_Result execd_upload_end(struct execd_upload *u)
{
  if (!u->status)
    end_part(u);
  if (!u->status) {
    if (u->nmeta == 0)
      up_fail(u, 400, "INVALID_FILE_METADATA", "metadata file is missing");
    else if (u->nfile == 0)
      up_fail(u, 400, "INVALID_FILE_CONTENT", "file is missing");
    else if (u->nmeta != u->nfile)
      up_fail(u, 400, "INVALID_FILE", "metadata and file count mismatch: %d vs %d", u->nmeta,
              u->nfile);
  }
  enum MHD_Result res = u->status
                            ? execd_send_err(u->c, u->status, u->code, "%s", u->msg ? u->msg : "")
                            : execd_send_ok(u->c);
  execd_upload_free(u);
  return res;
}

void execd_upload_free(struct execd_upload *u)
{
  if (!u)
    return;
  if (u->pp)
    MHD_destroy_post_processor(u->pp);
  if (u->fd >= 0)
    close(u->fd);
  free(u->filename);
  free(u->meta);
  free(u->path);
  free(u->msg);
  json_decref(u->cur_meta);
  json_decref(u->pending);
  free(u);
}

/* ---- GET /files/download ----------------------------------------------------------------- */

/* utils.go ParseRange: the first satisfiable range of "bytes=..." in *start and *len. Returns 1 with
 * a range, 0 when none overlaps the file, -1 when malformed. */
static int parse_range(const char *s, long long size, long long *start, long long *len)
{
  if (strncmp(s, "bytes=", 6) != 0)
    return -1;
  char *dup = strdup(s + 6), *save = NULL;
  int found = 0;
  for (char *ra = dup ? strtok_r(dup, ",", &save) : NULL; ra; ra = strtok_r(NULL, ",", &save)) {
    while (*ra == ' ' || *ra == '\t')
      ra++;
    char *dash = strchr(ra, '-');
    if (!*ra)
      continue;
    if (!dash) {
      found = -1;
      break;
    }
    *dash = 0;
    char *a = ra, *b = dash + 1, *end;
    long long st, ln;
    if (!*a) {
      long long n = strtoll(b, &end, 10);
      if (!*b || *end || n < 0) {
        found = -1;
        break;
      }
      if (n > size)
        n = size;
      st = size - n;
      ln = n;
    } else {
      st = strtoll(a, &end, 10);
      if (*end || st < 0) {
        found = -1;
        break;
      }
      if (!*b)
        ln = size - st;
      else {
        long long j = strtoll(b, &end, 10);
        if (*end || j < st) {
          found = -1;
          break;
        }
        ln = j - st + 1;
      }
    }
    if (st >= size)
      continue;
    if (st + ln > size)
      ln = size - st;
    if (!found) {
      *start = st;
      *len = ln;
      found = 1;
    }
  }
  free(dup);
  return found;
}

struct lines_rd {
  FILE *f;
  long long offset, limit, lineno, written;
  char *line; /* the line being sent, with its "\n" separator in front when not the first */
  size_t cap, len, pos;
};

/* serveLineRange: lines from `offset` (1-based), at most `limit`, "\r\n" stripped, joined by
 * "\n" (no newline after the last). */
static ssize_t lines_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct lines_rd *l = cls;
  (void)pos;
  while (l->pos >= l->len) {
    if (l->limit >= 0 && l->written >= l->limit)
      return MHD_CONTENT_READER_END_OF_STREAM;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, l->f);
    if (n <= 0) {
      free(line);
      return MHD_CONTENT_READER_END_OF_STREAM;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
      n--;
    if (++l->lineno < l->offset) {
      free(line);
      continue;
    }
    free(l->line);
    l->line = malloc((size_t)n + 1);
    if (!l->line) {
      free(line);
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    l->len = 0;
    if (l->written > 0)
      l->line[l->len++] = '\n';
    memcpy(l->line + l->len, line, (size_t)n);
    l->len += (size_t)n;
    l->pos = 0;
    l->written++;
    free(line);
  }
  return envd_stream_take(l->line, l->len, &l->pos, buf, max);
}

static void lines_free(void *cls)
{
  struct lines_rd *l = cls;
  fclose(l->f);
  free(l->line);
  free(l);
}

static bool parse_pos(const char *s, long long *out)
{
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno || v < 1)
    return false;
  *out = v;
  return true;
}

/* Lines offset.. (1-based; default 1) of the file on fd, at most limit of them (default all),
 * from the query's ro / rl, as text/plain. Takes fd over. */
static enum MHD_Result answer_lines(struct MHD_Connection *c, int fd, const char *ro,
                                    const char *rl)
{
  enum MHD_Result res;
  long long off = 1, lim = -1;
  if (ro && *ro && !parse_pos(ro, &off))
    res =
        execd_send_err(c, 400, "INVALID_REQUEST_BODY", "invalid query parameter 'offset': %s", ro);
  else if (rl && *rl && !parse_pos(rl, &lim))
    res = execd_send_err(c, 400, "INVALID_REQUEST_BODY", "invalid query parameter 'limit': %s", rl);
  else {
    struct lines_rd *l = calloc(1, sizeof *l);
    FILE *f = l ? fdopen(fd, "r") : NULL;
    if (!f) {
      free(l);
      close(fd);
      return MHD_NO;
    }
    fd = -1;
    l->f = f;
    l->offset = off;
    l->limit = lim;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, lines_cb, l, lines_free);
    if (!resp) {
      lines_free(l);
      return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
    res = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
  }
  if (fd >= 0)
    close(fd);
  return res;
}

/* 416 for a Range that does not overlap a file of size bytes (net/http ServeContent's text). */
static enum MHD_Result answer_no_overlap(struct MHD_Connection *c, long long size)
{
  static const char m[] = "invalid range: failed to overlap\n";
  char hb[64];
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(sizeof m - 1, (void *)m, MHD_RESPMEM_PERSISTENT);
  if (!resp)
    return MHD_NO;
  snprintf(hb, sizeof hb, "bytes */%lld", size);
  MHD_add_response_header(resp, "Content-Range", hb);
  MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
  enum MHD_Result res = MHD_queue_response(c, 416, resp);
  MHD_destroy_response(resp);
  return res;
}

/* The file at path, open on fd with stat st, as an attachment: whole (200) or the bytes of the
 * Range header range (206; 416 when it does not parse or overlap). Takes fd over. */
static enum MHD_Result answer_bytes(struct MHD_Connection *c, int fd, const struct stat *st,
                                    const char *path, const char *range)
{
  char hb[4200];
  long long start = 0, len = st->st_size;
  unsigned status = 200;
  int pr = range && *range ? parse_range(range, st->st_size, &start, &len) : 0;
  if (pr < 0) {
    close(fd);
    return execd_send_err(c, 416, "UNKNOWN", "%s", "");
  }
  if (pr == 0 && range && *range && st->st_size > 0) { /* ServeContent: no overlap */
    close(fd);
    return answer_no_overlap(c, (long long)st->st_size);
  }
  if (pr == 1)
    status = 206;
  struct MHD_Response *resp =
      MHD_create_response_from_fd_at_offset64((uint64_t)len, fd, (uint64_t)start);
  if (!resp) {
    close(fd);
    return MHD_NO;
  }
  const char *base = strrchr(path, '/');
  snprintf(hb, sizeof hb, "attachment; filename=\"%s\"", base ? base + 1 : path);
  MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
  MHD_add_response_header(resp, "Content-Disposition", hb);
  if (status == 200) { /* net/http ServeContent's; the 206 path is execd's own copy */
    struct tm tm;
    gmtime_r(&st->st_mtim.tv_sec, &tm);
    strftime(hb, sizeof hb, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    MHD_add_response_header(resp, "Accept-Ranges", "bytes");
    MHD_add_response_header(resp, "Last-Modified", hb);
  } else {
    snprintf(hb, sizeof hb, "bytes %lld-%lld/%lld", start, start + len - 1, (long long)st->st_size);
    MHD_add_response_header(resp, "Content-Range", hb);
  }
  enum MHD_Result res = MHD_queue_response(c, status, resp);
  MHD_destroy_response(resp);
  return res;
}

enum MHD_Result execd_files_download(struct execd_req *r)
{
  struct MHD_Connection *c = r->c;
  const char *p = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
  if (!p || !*p)
    return execd_send_err(c, 400, "MISSING_QUERY", "missing query parameter 'path'");
  char *why = NULL, *path = execd_expand_path(p, NULL, false, &why);
  if (!path) {
    enum MHD_Result res = execd_send_err(c, 500, "RUNTIME_ERROR",
                                         "error resolving file path: %s. %s", p, why ? why : "");
    free(why);
    return res;
  }
  const char *ro = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "offset");
  const char *rl = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
  const char *range = envd_header(c, "Range");
  bool lines = (ro && *ro) || (rl && *rl);
  enum MHD_Result res;
  char eb[128], hb[4200];
  if (lines && range && *range) {
    free(path);
    return execd_send_err(c, 400, "INVALID_REQUEST_BODY",
                          "line-based reading (offset/limit) and byte range (Range header) are "
                          "mutually exclusive");
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    int er = errno;
    snprintf(hb, sizeof hb, "open %s: %s", path, execd_errstr(er, eb));
    free(path);
    return er == ENOENT ? execd_send_err(c, 404, "FILE_NOT_FOUND", "file not found. %s", hb)
                        : execd_send_err(c, 500, "RUNTIME_ERROR", "error accessing file: %s", hb);
  }
  if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
    close(fd);
    res = execd_send_err(c, 500, "RUNTIME_ERROR", "error accessing file: read %s: is a directory",
                         path);
  } else if (envd_mutant_on(r->e, ENVD_MUT_BINARY_READ_MANGLED) &&
             (fd = envd_mutant_mangle_fd(fd, &st)) < 0) {
    res = execd_send_err(c, 500, "RUNTIME_ERROR", "error accessing file: read %s", path);
  } else if (lines) {
    res = answer_lines(c, fd, ro, rl);
  } else {
    res = answer_bytes(c, fd, &st, path, range);
  }
  free(path);
  return res;
}
