/*
 * layer_cache.c: COPY archives, build layers and upload URLs. Contract in layer_cache.h.
 */
#include "layer_cache.h"
#include "rootfs.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

static char g_dir[3900];
static char g_secret[65];
static int g_tls;
static unsigned g_seq;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int mkdir_p(const char *path, mode_t mode)
{
  char p[4096];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/')
      continue;
    *s = 0;
    if (mkdir(p, mode) != 0 && errno != EEXIST)
      return -1;
    *s = '/';
  }
  return mkdir(p, mode) != 0 && errno != EEXIST ? -1 : 0;
}

void abx_lcache_default_dir(const char *state_dir, char *out, size_t n)
{
  const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME"), *tmp = getenv("TMPDIR");
  if (state_dir && *state_dir)
    snprintf(out, n, "%s/build-cache", state_dir);
  else if (xdg && *xdg == '/')
    snprintf(out, n, "%s/abxlua/build-cache", xdg);
  else if (home && *home == '/')
    snprintf(out, n, "%s/.local/state/abxlua/build-cache", home);
  else
    snprintf(out, n, "%s/abxlua-state-%u/build-cache", tmp && *tmp ? tmp : "/tmp",
             (unsigned)geteuid());
}

int abx_lcache_init(const char *dir, char *err, size_t errlen)
{
  if (strlen(dir) >= 3000 || dir[0] != '/') {
    snprintf(err, errlen, "--build-cache must be an absolute path shorter than 3000 bytes: %s",
             dir);
    return -1;
  }
  snprintf(g_dir, sizeof g_dir, "%s", dir);
  static const char *const sub[] = {"", "/files", "/layers", "/tmp"};
  for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s%s", g_dir, sub[i]);
    if (mkdir_p(p, 0700) != 0) {
      snprintf(err, errlen, "cannot create the build cache dir %s: %s", p, strerror(errno));
      return -1;
    }
  }
  /* work in progress of serves that are gone (tmp/<pid>.<seq>); another serve may share the
   * cache and be using its own entries right now */
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s/tmp", g_dir);
  DIR *d = opendir(tmp);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    long pid = strtol(e->d_name, NULL, 10);
    if (e->d_name[0] == '.' ||
        (pid > 0 && pid != getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)))
      continue;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", tmp, e->d_name);
    abx_rmtree(p);
  }
  if (d)
    closedir(d);
  if (abx_rand_hex(g_secret, 64) != 0) {
    snprintf(err, errlen, "no randomness available");
    return -1;
  }
  return 0;
}

const char *abx_lcache_dir(void)
{
  return g_dir;
}

void abx_lcache_config_tls(int tls)
{
  g_tls = tls;
}

int abx_lcache_valid_hash(const char *h)
{
  size_t n = 0;
  for (; h[n]; n++)
    if (!((h[n] >= '0' && h[n] <= '9') || (h[n] >= 'a' && h[n] <= 'f')))
      return 0;
  return n == 64;
}

void abx_lcache_files_path(const char *hash, char *out)
{
  snprintf(out, 4096, "%s/files/%s.tar", g_dir, hash);
}
void abx_lcache_layer_path(const char *key, char *out)
{
  snprintf(out, 4096, "%s/layers/%s", g_dir, key);
}

static int exists(const char *p)
{
  struct stat st;
  return lstat(p, &st) == 0;
}

int abx_lcache_files_present(const char *hash)
{
  char p[4096];
  abx_lcache_files_path(hash, p);
  return exists(p);
}

int abx_lcache_layer_present(const char *key)
{
  char p[4096];
  abx_lcache_layer_path(key, p);
  return exists(p);
}

int abx_lcache_done_present(const char *key)
{
  char p[4200];
  snprintf(p, sizeof p, "%s/layers/%s.done", g_dir, key);
  return exists(p);
}

int abx_lcache_done_mark(const char *key)
{
  char p[4200];
  snprintf(p, sizeof p, "%s/layers/%s.done", g_dir, key);
  int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  return fd < 0 ? -1 : close(fd);
}

int abx_lcache_tmpdir(char *out, char *err, size_t errlen)
{
  pthread_mutex_lock(&mu);
  unsigned seq = ++g_seq;
  pthread_mutex_unlock(&mu);
  snprintf(out, 4096, "%s/tmp/%d.%u", g_dir, (int)getpid(), seq);
  abx_rmtree(out);
  if (mkdir(out, 0700) != 0) {
    snprintf(err, errlen, "cannot create %s: %s", out, strerror(errno));
    return -1;
  }
  return 0;
}

int abx_lcache_layer_store(const char *key, const char *upper, char *err, size_t errlen)
{
  char final[4096], tmp[4096];
  abx_lcache_layer_path(key, final);
  if (exists(final))
    return 0; /* another build made it first: same key, same content */
  if (abx_lcache_tmpdir(tmp, err, errlen) != 0)
    return -1;
  char staged[4200];
  snprintf(staged, sizeof staged, "%s/layer", tmp);
  int rc = rename(upper, staged);
  if (rc != 0 && errno == EXDEV) { /* the state dir is on another filesystem */
    rc = mkdir(staged, 0755) == 0 && abx_copy_tree(upper, staged) == 0 ? 0 : -1;
    if (rc == 0)
      abx_rmtree(upper);
  }
  if (rc == 0 && rename(staged, final) != 0 && !exists(final))
    rc = -1;
  if (rc != 0)
    snprintf(err, errlen, "cannot store the layer %s: %s", final, strerror(errno));
  abx_rmtree(tmp);
  return rc;
}

int abx_lcache_extract(const char *hash, const char *dst, char *err, size_t errlen)
{
  char src[4096];
  abx_lcache_files_path(hash, src);
  struct archive *a = archive_read_new(), *w = archive_write_disk_new();
  if (!a || !w) {
    snprintf(err, errlen, "out of memory");
    archive_read_free(a);
    archive_write_free(w);
    return -1;
  }
  archive_read_support_filter_all(a);
  archive_read_support_format_tar(a);
  /* entries must be relative (checked below: the dst prefix makes every path absolute) */
  archive_write_disk_set_options(w, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                        ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  int rc = 0;
  if (archive_read_open_filename(a, src, 65536) != ARCHIVE_OK) {
    snprintf(err, errlen, "cannot read the files archive %s: %s", hash, archive_error_string(a));
    rc = -1;
  }
  struct archive_entry *e;
  while (rc == 0) {
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF)
      break;
    if (r != ARCHIVE_OK) {
      snprintf(err, errlen, "files archive %s: %s", hash, archive_error_string(a));
      rc = -1;
      break;
    }
    const char *name = archive_entry_pathname(e);
    if (!name || name[0] == '/') {
      snprintf(err, errlen, "files archive %s: absolute path %s", hash, name ? name : "(none)");
      rc = -1;
      break;
    }
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dst, name);
    archive_entry_set_pathname(e, path);
    const char *hl = archive_entry_hardlink(e);
    if (hl) {
      char hp[8192];
      snprintf(hp, sizeof hp, "%s/%s", dst, hl);
      archive_entry_set_hardlink(e, hp);
    }
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    if (archive_write_header(w, e) != ARCHIVE_OK) {
      snprintf(err, errlen, "files archive %s: %s", hash, archive_error_string(w));
      rc = -1;
      break;
    }
    const void *buf;
    size_t len;
    la_int64_t off;
    while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK)
      if (archive_write_data_block(w, buf, len, off) != ARCHIVE_OK) {
        r = ARCHIVE_FATAL;
        break;
      }
    if (r != ARCHIVE_EOF || archive_write_finish_entry(w) != ARCHIVE_OK) {
      snprintf(err, errlen, "files archive %s: cannot unpack %s", hash, archive_entry_pathname(e));
      rc = -1;
    }
  }
  archive_read_free(a);
  archive_write_free(w);
  return rc;
}

/* ---- keys ------------------------------------------------------------------------------------ */

struct abx_key {
  EVP_MD_CTX *md;
};

struct abx_key *abx_key_new(void)
{
  struct abx_key *k = calloc(1, sizeof *k);
  if (k && (!(k->md = EVP_MD_CTX_new()) || EVP_DigestInit_ex(k->md, EVP_sha256(), NULL) != 1)) {
    EVP_MD_CTX_free(k->md);
    free(k);
    return NULL;
  }
  return k;
}

void abx_key_addn(struct abx_key *k, const void *p, size_t n)
{
  if (!k)
    return;
  char len[24];
  int l = snprintf(len, sizeof len, "%zu:", n); /* length-prefixed: no two lists collide */
  EVP_DigestUpdate(k->md, len, (size_t)l);
  EVP_DigestUpdate(k->md, p, n);
}

void abx_key_add(struct abx_key *k, const char *s)
{
  abx_key_addn(k, s ? s : "", s ? strlen(s) : 0);
}

void abx_key_add_file(struct abx_key *k, const char *path)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    abx_key_add(k, "(absent)");
    return;
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    abx_key_addn(k, buf, (size_t)n);
  close(fd);
}

static struct abx_key *g_tree_key; /* nftw has no user pointer: guarded by tree_mu */
static size_t g_tree_skip;
static pthread_mutex_t tree_mu = PTHREAD_MUTEX_INITIALIZER;

static int tree_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)flag, (void)ftw;
  char meta[64];
  snprintf(meta, sizeof meta, "%o %lld", (unsigned)st->st_mode, (long long)st->st_size);
  abx_key_add(g_tree_key, path + g_tree_skip);
  abx_key_add(g_tree_key, meta);
  if (S_ISREG(st->st_mode))
    abx_key_add_file(g_tree_key, path);
  else if (S_ISLNK(st->st_mode)) {
    char t[4096];
    ssize_t n = readlink(path, t, sizeof t - 1);
    abx_key_addn(g_tree_key, t, n > 0 ? (size_t)n : 0);
  }
  return 0;
}

void abx_key_add_tree(struct abx_key *k, const char *dir)
{
  pthread_mutex_lock(&tree_mu);
  g_tree_key = k;
  g_tree_skip = strlen(dir);
  nftw(dir, tree_cb, 16, FTW_PHYS); /* nftw's order is readdir's: stable for one unchanged dir */
  pthread_mutex_unlock(&tree_mu);
}

void abx_key_end(struct abx_key *k, char out[65])
{
  unsigned char d[32];
  unsigned dl = 0;
  out[0] = 0;
  if (!k)
    return;
  EVP_DigestFinal_ex(k->md, d, &dl);
  for (unsigned i = 0; i < dl; i++)
    sprintf(out + 2 * i, "%02x", d[i]);
  EVP_MD_CTX_free(k->md);
  free(k);
}

/* ---- uploads --------------------------------------------------------------------------------- */

#define UPLOAD_PREFIX "/build-files/"

static void sign(const char *hash, char out[65])
{
  struct abx_key *k = abx_key_new();
  abx_key_add(k, g_secret);
  abx_key_add(k, hash);
  abx_key_end(k, out);
}

void abx_lcache_upload_url(struct MHD_Connection *c, const char *hash, char *out, size_t n)
{
  const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
  char sig[65];
  sign(hash, sig);
  snprintf(out, n, "%s://%s" UPLOAD_PREFIX "%s?sig=%s", g_tls ? "https" : "http",
           host ? host : "127.0.0.1", hash, sig);
}

struct abx_upload {
  char hash[65];
  char tmp[4096];
  int fd;
  int status; /* 0 = fine so far, else the status to answer */
  char msg[200];
  unsigned long long want, got;
};

int abx_upload_match(const char *method, const char *path)
{
  return strcmp(method, "PUT") == 0 && strncmp(path, UPLOAD_PREFIX, strlen(UPLOAD_PREFIX)) == 0;
}

static void fail(struct abx_upload *u, int status, const char *msg)
{
  if (u->status)
    return;
  u->status = status;
  snprintf(u->msg, sizeof u->msg, "%s", msg);
}

struct abx_upload *abx_upload_begin(struct MHD_Connection *c, const char *path)
{
  struct abx_upload *u = calloc(1, sizeof *u);
  if (!u)
    return NULL;
  u->fd = -1;
  const char *h = path + strlen(UPLOAD_PREFIX);
  snprintf(u->hash, sizeof u->hash, "%.64s", h);
  const char *sig = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sig");
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
  char want[65];
  if (!abx_lcache_valid_hash(h)) {
    fail(u, 404, "not found");
    return u;
  }
  sign(u->hash, want);
  if (!sig || strcmp(sig, want) != 0) {
    fail(u, 403, "upload URL signature is missing or wrong");
    return u;
  }
  char *end = NULL;
  if (!cl || !*cl || (u->want = strtoull(cl, &end, 10), *end)) {
    fail(u, 411, "Content-Length is required (the exact size of the archive)");
    return u;
  }
  if (u->want > ABX_UPLOAD_MAX) {
    fail(u, 413, "archive too large");
    return u;
  }
  char err[200];
  if (abx_lcache_tmpdir(u->tmp, err, sizeof err) != 0) {
    fail(u, 500, err);
    return u;
  }
  char p[4200];
  snprintf(p, sizeof p, "%s/upload.tar", u->tmp);
  u->fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (u->fd < 0)
    fail(u, 500, "cannot create the upload file");
  return u;
}

void abx_upload_data(struct abx_upload *u, const char *data, size_t n)
{
  if (u->status)
    return;
  u->got += n;
  if (u->got > u->want) {
    fail(u, 400, "body longer than its Content-Length");
    return;
  }
  while (n > 0) {
    ssize_t k = write(u->fd, data, n);
    if (k <= 0) {
      fail(u, 500, "cannot write the upload file");
      return;
    }
    data += k;
    n -= (size_t)k;
  }
}

/* 0 when `path` is a tar archive libarchive reads to its end (gzip or not). */
static int readable_tar(const char *path, char *msg, size_t n)
{
  struct archive *a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_tar(a);
  int rc = archive_read_open_filename(a, path, 65536) == ARCHIVE_OK ? 0 : -1;
  struct archive_entry *e;
  int r = ARCHIVE_OK, entries = 0;
  while (rc == 0 && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
    entries++;
    if (archive_read_data_skip(a) != ARCHIVE_OK)
      rc = -1;
  }
  if (rc == 0 && r != ARCHIVE_EOF)
    rc = -1;
  if (rc != 0)
    snprintf(msg, n, "the upload is not a readable tar or tar.gz archive: %s",
             archive_error_string(a) ? archive_error_string(a) : "unknown format");
  else if (entries == 0) {
    snprintf(msg, n, "the upload is an empty archive");
    rc = -1;
  }
  archive_read_free(a);
  return rc;
}

enum MHD_Result abx_upload_finish(struct abx_upload *u, struct MHD_Connection *c)
{
  if (!u->status && u->got != u->want)
    fail(u, 400, "body shorter than its Content-Length");
  if (u->fd >= 0 && close(u->fd) != 0)
    fail(u, 500, "cannot write the upload file");
  u->fd = -1;
  char p[4200], final[4096];
  snprintf(p, sizeof p, "%s/upload.tar", u->tmp);
  if (!u->status && readable_tar(p, u->msg, sizeof u->msg) != 0)
    u->status = 400;
  abx_lcache_files_path(u->hash, final);
  if (!u->status && rename(p, final) != 0)
    fail(u, 500, "cannot store the upload");
  if (u->status)
    return abx_http_error(c, (unsigned)u->status, u->msg);
  return abx_http_text(c, 200, "text/plain", "", 0);
}

void abx_upload_free(struct abx_upload *u)
{
  if (!u)
    return;
  if (u->fd >= 0)
    close(u->fd);
  if (u->tmp[0])
    abx_rmtree(u->tmp);
  free(u);
}
