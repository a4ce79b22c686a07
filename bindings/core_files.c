/*
 * core_files.c: "abx.core" files: whole-file reads, directory tests and listings, the
 * private state directory and private files (contract: docs/ENGINE.md "Utilities").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

#define MAX_READ_FILE (64 * 1024 * 1024)

/* See core.h. */
char *abx_core_slurp(const char *path, size_t *len, size_t max)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 8192, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    if (n == cap) {
      if (cap >= max) {
        free(buf);
        fclose(f);
        errno = EFBIG;
        return NULL;
      }
      cap *= 2;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0)
      break;
  }
  fclose(f);
  *len = n;
  return buf;
}

/* core.read_file(path) -> bytes | nil, message */
static int core_read_file(lua_State *L)
{
  const char *path = luaL_checkstring(L, 1);
  size_t n;
  char *buf = abx_core_slurp(path, &n, MAX_READ_FILE);
  if (!buf) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_pushlstring(L, buf, n);
  free(buf);
  return 1;
}

/* core.isdir(path) -> boolean; core.exists(path) -> boolean */
static int core_isdir(lua_State *L)
{
  struct stat st;
  lua_pushboolean(L, stat(luaL_checkstring(L, 1), &st) == 0 && S_ISDIR(st.st_mode));
  return 1;
}

static int core_exists(lua_State *L)
{
  struct stat st;
  lua_pushboolean(L, stat(luaL_checkstring(L, 1), &st) == 0);
  return 1;
}

/* Appends the regular files below 'dir' to the table at absolute index 'tbl'. */
static int collect(lua_State *L, int tbl, const char *dir, lua_Integer *n, int depth)
{
  if (depth > 32)
    return 0;
  struct dirent **names;
  int count = scandir(dir, &names, NULL, alphasort);
  if (count < 0)
    return -1;
  for (int i = 0; i < count; i++) {
    const char *nm = names[i]->d_name;
    if (nm[0] == '.') { /* ".", "..", and hidden files are never scenarios */
      free(names[i]);
      continue;
    }
    lua_pushfstring(L, "%s/%s", dir, nm);
    const char *full = lua_tostring(L, -1);
    struct stat st;
    if (stat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
      collect(L, tbl, full, n, depth + 1);
      lua_pop(L, 1);
    } else if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
      lua_rawseti(L, tbl, ++*n);
    } else {
      lua_pop(L, 1);
    }
    free(names[i]);
  }
  free(names);
  return 0;
}

/* core.list_files(dir) -> array of regular files below dir, sorted by path (depth first). */
static int core_list_files(lua_State *L)
{
  const char *dir = luaL_checkstring(L, 1);
  lua_newtable(L);
  lua_Integer n = 0;
  if (collect(L, lua_gettop(L), dir, &n, 0) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", dir, strerror(errno));
    return 2;
  }
  return 1;
}

/* Creates 'path' and its missing parents mode 0700. The directory itself must end up a real
 * directory (not a symlink) owned by the effective user, mode 0700 (set if it was wider). Returns
 * 0, or -1 with a message in err. */
static int private_dir(const char *path, char *err, size_t errlen)
{
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
    snprintf(err, errlen, "path too long: %.400s", path);
    return -1;
  }
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char c = *p;
    *p = '\0';
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
      snprintf(err, errlen, "cannot create %.400s: %s", buf, strerror(errno));
      return -1;
    }
    *p = c;
    if (!c)
      break;
  }
  struct stat st;
  if (lstat(buf, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    snprintf(err, errlen, "%.400s is not a directory of this user", buf);
    return -1;
  }
  if ((st.st_mode & 077) && chmod(buf, 0700) != 0) {
    snprintf(err, errlen, "cannot make %.400s private: %s", buf, strerror(errno));
    return -1;
  }
  return 0;
}

/* core.state_dir() -> path | nil, message: abxlua's private state directory, created mode 0700:
 * $XDG_STATE_HOME/abxlua (an absolute XDG_STATE_HOME), else $HOME/.local/state/abxlua, else
 * ${TMPDIR:-/tmp}/abxlua-state-<uid>. nil and a message when it cannot be created or is not a
 * directory of this user. */
static int core_state_dir(lua_State *L)
{
  const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME"), *tmp = getenv("TMPDIR");
  char path[4096], err[512];
  if (xdg && xdg[0] == '/')
    snprintf(path, sizeof path, "%s/abxlua", xdg);
  else if (home && home[0] == '/')
    snprintf(path, sizeof path, "%s/.local/state/abxlua", home);
  else
    snprintf(path, sizeof path, "%s/abxlua-state-%u", tmp && *tmp ? tmp : "/tmp",
             (unsigned)geteuid());
  if (private_dir(path, err, sizeof err) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushstring(L, path);
  return 1;
}

/* core.write_private(path, data) -> true | nil, message: writes data to path, created or
 * truncated mode 0600 (an existing file is made 0600 first), never through a symlink
 * (O_NOFOLLOW). For files that hold a credential, such as the sandbox CLI's state file with the
 * local platform's API key: io.open would create them with the umask's mode. */
static int core_write_private(lua_State *L)
{
  const char *path = luaL_checkstring(L, 1);
  size_t n;
  const char *data = luaL_checklstring(L, 2, &n);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  int err = 0;
  if (fd < 0 || fchmod(fd, 0600) != 0)
    err = errno;
  for (size_t off = 0; !err && off < n;) {
    ssize_t w = write(fd, data + off, n - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      err = errno;
    else
      off += (size_t)w;
  }
  if (fd >= 0 && close(fd) != 0 && !err)
    err = errno;
  if (err) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(err));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg files_funcs[] = {{"read_file", core_read_file},
                                       {"isdir", core_isdir},
                                       {"exists", core_exists},
                                       {"list_files", core_list_files},
                                       {"state_dir", core_state_dir},
                                       {"write_private", core_write_private},
                                       {NULL, NULL}};

void abx_core_files_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, files_funcs, 1);
}
