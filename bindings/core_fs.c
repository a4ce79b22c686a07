/*
 * core_fs.c: "abx.core" file-tree primitives for template builds (contract: docs/ENGINE.md
 * "Template files"): lstat, readdir, realpath, an incremental sha256 (OpenSSL EVP) and a tar.gz
 * writer (libarchive). The E2B build API's files hash and upload archive are made from these in
 * Lua (lib/abx/run/recipe.lua), the way the 2.51 SDK makes them (sdk-src/template/utils.ts
 * calculateFilesHash and spoolTarArchive; docs/protocol/e2b-v2-and-peers.md §2 item 2).
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "errors.h"
#include "loop.h"

#define SHA256_MT "abx.sha256"

/* core.lstat(path) -> {type = "file"|"dir"|"link"|"other", mode = st_mode (file type bits
 * included, as Node's fs.Stats.mode), size = st_size (bytes), mtime = st_mtime (Unix seconds),
 * target = readlink (links only)} | nil, message. Never follows a symlink. */
static int core_lstat(lua_State *L)
{
  const char *path = luaL_checkstring(L, 1);
  struct stat st;
  if (lstat(path, &st) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_createtable(L, 0, 5);
  const char *type = S_ISREG(st.st_mode)   ? "file"
                     : S_ISDIR(st.st_mode) ? "dir"
                     : S_ISLNK(st.st_mode) ? "link"
                                           : "other";
  lua_pushstring(L, type);
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)st.st_mode);
  lua_setfield(L, -2, "mode");
  lua_pushinteger(L, (lua_Integer)st.st_size);
  lua_setfield(L, -2, "size");
  lua_pushinteger(L, (lua_Integer)st.st_mtime);
  lua_setfield(L, -2, "mtime");
  if (S_ISLNK(st.st_mode)) {
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof buf);
    if (n < 0 || (size_t)n >= sizeof buf) {
      lua_pushnil(L);
      lua_pushfstring(L, "%s: readlink: %s", path, n < 0 ? strerror(errno) : "target too long");
      return 2;
    }
    lua_pushlstring(L, buf, (size_t)n);
    lua_setfield(L, -2, "target");
  }
  return 1;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* core.readdir(dir) -> array of entry names (no "." or ".."), sorted bytewise | nil, message */
static int core_readdir(lua_State *L)
{
  const char *path = luaL_checkstring(L, 1);
  DIR *d = opendir(path);
  if (!d) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  size_t n = 0, cap = 16;
  char **names = malloc(cap * sizeof *names);
  struct dirent *e;
  while (names && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (n == cap) {
      char **nn = realloc(names, 2 * cap * sizeof *names);
      if (!nn)
        break;
      names = nn;
      cap *= 2;
    }
    names[n] = strdup(e->d_name);
    if (!names[n])
      break;
    n++;
  }
  closedir(d);
  if (!names)
    return luaL_error(L, "readdir: out of memory");
  qsort(names, n, sizeof *names, cmp_str);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
    free(names[i]);
  }
  free(names);
  return 1;
}

/* core.realpath(path) -> absolute path with every symlink resolved | nil, message */
static int core_realpath(lua_State *L)
{
  const char *path = luaL_checkstring(L, 1);
  char *r = realpath(path, NULL);
  if (!r) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_pushstring(L, r);
  free(r);
  return 1;
}

/* core.sha256_new() -> hasher: h:update(bytes) -> h; h:update_file(path) -> h (streams the file;
 * raises InvalidArgument when it cannot be read); h:hex() -> lower-case hex digest (once; the
 * hasher is finished after it). */
static EVP_MD_CTX **check_hasher(lua_State *L)
{
  EVP_MD_CTX **p = luaL_checkudata(L, 1, SHA256_MT);
  if (!*p)
    luaL_error(L, "sha256: hasher already finished");
  return p;
}

static int sha_new(lua_State *L)
{
  EVP_MD_CTX **p = lua_newuserdatauv(L, sizeof *p, 0);
  *p = EVP_MD_CTX_new();
  luaL_setmetatable(L, SHA256_MT);
  if (!*p || !EVP_DigestInit_ex(*p, EVP_sha256(), NULL))
    return luaL_error(L, "sha256: cannot initialise");
  return 1;
}

static int sha_update(lua_State *L)
{
  EVP_MD_CTX **p = check_hasher(L);
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n);
  if (!EVP_DigestUpdate(*p, s, n))
    return luaL_error(L, "sha256: update failed");
  lua_settop(L, 1);
  return 1;
}

static int sha_update_file(lua_State *L)
{
  EVP_MD_CTX **p = check_hasher(L);
  const char *path = luaL_checkstring(L, 2);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return abx_error_raise(L, NULL, "InvalidArgument", 0, "%s: %s", path, strerror(errno));
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      return abx_error_raise(L, NULL, "InvalidArgument", 0, "%s: read: %s", path, strerror(e));
    }
    if (n == 0)
      break;
    EVP_DigestUpdate(*p, buf, (size_t)n);
  }
  close(fd);
  lua_settop(L, 1);
  return 1;
}

static int sha_hex(lua_State *L)
{
  EVP_MD_CTX **p = check_hasher(L);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  int ok = EVP_DigestFinal_ex(*p, md, &len);
  EVP_MD_CTX_free(*p);
  *p = NULL;
  if (!ok)
    return luaL_error(L, "sha256: final failed");
  char hex[2 * EVP_MAX_MD_SIZE + 1];
  for (unsigned int i = 0; i < len; i++)
    snprintf(hex + 2 * i, 3, "%02x", md[i]);
  lua_pushlstring(L, hex, 2 * len);
  return 1;
}

static int sha_gc(lua_State *L)
{
  EVP_MD_CTX **p = luaL_checkudata(L, 1, SHA256_MT);
  if (*p)
    EVP_MD_CTX_free(*p);
  *p = NULL;
  return 0;
}

/* Adds one path (relative to the open directory 'dirfd') to the archive. 0, or -1 with 'err'. */
static int tar_add(struct archive *a, int dirfd, const char *rel, char *err, size_t errlen)
{
  struct stat st;
  if (fstatat(dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    snprintf(err, errlen, "%s: %s", rel, strerror(errno));
    return -1;
  }
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
    snprintf(err, errlen, "%s: not a regular file, directory or symlink", rel);
    return -1;
  }
  struct archive_entry *e = archive_entry_new();
  archive_entry_copy_stat(e, &st);
  archive_entry_set_pathname(e, rel);
  int fd = -1, rc = 0;
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlinkat(dirfd, rel, target, sizeof target - 1);
    if (n < 0) {
      snprintf(err, errlen, "%s: readlink: %s", rel, strerror(errno));
      archive_entry_free(e);
      return -1;
    }
    target[n] = '\0';
    archive_entry_set_symlink(e, target);
    archive_entry_set_size(e, 0);
  } else if (S_ISDIR(st.st_mode)) {
    archive_entry_set_size(e, 0);
  } else {
    fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      snprintf(err, errlen, "%s: %s", rel, strerror(errno));
      archive_entry_free(e);
      return -1;
    }
  }
  if (archive_write_header(a, e) != ARCHIVE_OK) {
    snprintf(err, errlen, "%s: %s", rel, archive_error_string(a));
    rc = -1;
  }
  if (rc == 0 && fd >= 0) {
    char buf[65536];
    off_t left = st.st_size; /* exactly the size the header announced */
    while (left > 0) {
      ssize_t n = read(fd, buf, sizeof buf < (size_t)left ? sizeof buf : (size_t)left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        snprintf(err, errlen, "%s: %s", rel,
                 n < 0 ? strerror(errno) : "file shrank while archived");
        rc = -1;
        break;
      }
      if (archive_write_data(a, buf, (size_t)n) < 0) {
        snprintf(err, errlen, "%s: %s", rel, archive_error_string(a));
        rc = -1;
        break;
      }
      left -= n;
    }
  }
  if (fd >= 0)
    close(fd);
  archive_entry_free(e);
  return rc;
}

/* core.tar_gz(dir, paths, out) -> size in bytes of the written archive. Writes a gzip-compressed
 * POSIX tar (pax where needed, as node-tar does) to 'out' with one entry per element of 'paths'
 * (relative to 'dir', in the order given; a directory's entry only, never its contents: the
 * SDK's tar.create noDirRecurse), symlinks stored as links (the SDK's resolveSymlinks=false).
 * Raises InvalidArgument naming the path for anything that cannot be read or written. */
static int core_tar_gz(lua_State *L)
{
  const char *dir = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *out = luaL_checkstring(L, 3);
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return abx_error_raise(L, abx_core_loop(L)->secrets, "InvalidArgument", 0, "%s: %s", dir,
                           strerror(errno));
  struct archive *a = archive_write_new();
  char err[PATH_MAX + 256] = "";
  int rc = 0;
  if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
      archive_write_add_filter_gzip(a) != ARCHIVE_OK ||
      archive_write_open_filename(a, out) != ARCHIVE_OK) {
    snprintf(err, sizeof err, "%s: %s", out, archive_error_string(a));
    rc = -1;
  }
  lua_Integer n = (lua_Integer)luaL_len(L, 2);
  for (lua_Integer i = 1; rc == 0 && i <= n; i++) {
    lua_rawgeti(L, 2, i);
    const char *rel = lua_tostring(L, -1);
    if (!rel || rel[0] == '/' || rel[0] == '\0') {
      snprintf(err, sizeof err, "paths[%lld] must be a non-empty relative path", (long long)i);
      rc = -1;
    } else {
      rc = tar_add(a, dirfd, rel, err, sizeof err);
    }
    lua_pop(L, 1);
  }
  if (archive_write_close(a) != ARCHIVE_OK && rc == 0) {
    snprintf(err, sizeof err, "%s: %s", out, archive_error_string(a));
    rc = -1;
  }
  archive_write_free(a);
  close(dirfd);
  if (rc != 0) {
    unlink(out);
    return abx_error_raise(L, abx_core_loop(L)->secrets, "InvalidArgument", 0, "tar_gz: %s", err);
  }
  struct stat st;
  if (stat(out, &st) != 0)
    return abx_error_raise(L, abx_core_loop(L)->secrets, "InvalidArgument", 0, "%s: %s", out,
                           strerror(errno));
  lua_pushinteger(L, (lua_Integer)st.st_size);
  return 1;
}

static const luaL_Reg sha_methods[] = {
    {"update", sha_update}, {"update_file", sha_update_file}, {"hex", sha_hex}, {NULL, NULL}};

static const luaL_Reg fs_funcs[] = {{"lstat", core_lstat},       {"readdir", core_readdir},
                                    {"realpath", core_realpath}, {"sha256_new", sha_new},
                                    {"tar_gz", core_tar_gz},     {NULL, NULL}};

void abx_core_fs_register(lua_State *L, struct abx_loop *loop)
{
  if (luaL_newmetatable(L, SHA256_MT)) {
    luaL_newlib(L, sha_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, sha_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, fs_funcs, 1);
}
