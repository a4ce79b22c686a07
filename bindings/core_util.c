/*
 * core_util.c: "abx.core" utilities: encodings (base64 from proto/, sha256 from OpenSSL), YAML,
 * files, environment, the platform child and masked output (contract: docs/ENGINE.md "Utilities").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "core.h"
#include "dotenv.h"
#include "errors.h"
#include "loop.h"
#include "platform.h"
#include "secrets.h"
#include "yaml_lua.h"

#define MAX_READ_FILE (64 * 1024 * 1024)

/* core.b64encode(bytes) -> standard base64 with padding (proto/base64.h) */
static int core_b64encode(lua_State *L)
{
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, ABX_B64_LEN(n) + 1);
  luaL_pushresultsize(&b, abx_b64_encode(out, s, n, ABX_B64_STD));
  return 1;
}

/* core.b64decode(text) -> bytes | nil, message. Accepts the standard and URL-safe alphabets,
 * with or without padding (ProtoJSON parsers accept all four: docs/protocol/envd-protocol.md §3),
 * and skips line breaks and spaces; anything else malformed is nil, "invalid base64". */
static int core_b64decode(lua_State *L)
{
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  luaL_Buffer b;
  unsigned char *out = (unsigned char *)luaL_buffinitsize(L, &b, ABX_B64_DECODED_MAX(n));
  long len = abx_b64_decode(out, s, n, ABX_B64_SPACE);
  if (len < 0) {
    luaL_pushresultsize(&b, 0);
    lua_pop(L, 1);
    lua_pushnil(L);
    lua_pushliteral(L, "invalid base64");
    return 2;
  }
  luaL_pushresultsize(&b, (size_t)len);
  return 1;
}

/* core.sha256(bytes) -> lower-case hex digest */
static int core_sha256(lua_State *L)
{
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (!EVP_Digest(s, n, md, &mdlen, EVP_sha256(), NULL))
    return luaL_error(L, "sha256 failed");
  char hex[2 * EVP_MAX_MD_SIZE + 1];
  for (unsigned int i = 0; i < mdlen; i++)
    snprintf(hex + 2 * i, 3, "%02x", md[i]);
  lua_pushlstring(L, hex, 2 * mdlen);
  return 1;
}

/* core.random_hex(nbytes) -> 2*nbytes hex characters from the OpenSSL CSPRNG */
static int core_random_hex(lua_State *L)
{
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_argcheck(L, n > 0 && n <= 256, 1, "between 1 and 256 bytes");
  unsigned char buf[256];
  if (RAND_bytes(buf, (int)n) != 1)
    return luaL_error(L, "no randomness available");
  char hex[513];
  for (lua_Integer i = 0; i < n; i++)
    snprintf(hex + 2 * i, 3, "%02x", buf[i]);
  lua_pushlstring(L, hex, (size_t)(2 * n));
  return 1;
}

/* Reads a whole file into a malloc'd buffer; NULL with errno on failure. */
static char *slurp(const char *path, size_t *len, size_t max)
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
  char *buf = slurp(path, &n, MAX_READ_FILE);
  if (!buf) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_pushlstring(L, buf, n);
  free(buf);
  return 1;
}

/* core.yaml_load(path [, with_lines]) -> value [, lines]. Raises InvalidArgument
 * "file:line:col: problem". With 'with_lines' true also returns lines: {[table] = {[key or
 * index] = line}} for every mapping and sequence of the value (bindings/yaml_lua.h). */
static int core_yaml_load(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  const char *path = luaL_checkstring(L, 1);
  int want_lines = lua_toboolean(L, 2);
  size_t n;
  char *buf = slurp(path, &n, 4 * 1024 * 1024);
  if (!buf)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0, "%s: %s", path,
                           strerror(errno));
  char err[512];
  int rc = want_lines ? abx_yaml_push_lines(L, path, buf, n, err, sizeof err)
                     : abx_yaml_push(L, path, buf, n, err, sizeof err);
  free(buf);
  if (rc != 0)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0, "%s", err);
  return want_lines ? 2 : 1;
}

extern char **environ;

/* core.environ() -> {NAME = value}: the whole environment of the process (an entry without '='
 * is left out). */
static int core_environ(lua_State *L)
{
  lua_newtable(L);
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || eq == *e)
      continue;
    lua_pushlstring(L, *e, (size_t)(eq - *e));
    lua_pushstring(L, eq + 1);
    lua_rawset(L, -3);
  }
  return 1;
}

static int core_getenv(lua_State *L)
{
  const char *v = getenv(luaL_checkstring(L, 1));
  if (v)
    lua_pushstring(L, v);
  else
    lua_pushnil(L);
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

/* core.platform_start(extra_args, timeout_s, log_path) -> { pid = n, ready = json }: starts
 * `abxlua serve` (engine/platform.h); its stdout and stderr are appended to log_path (created or
 * made mode 0600, never through a symlink; nil: /dev/null), masked with every secret registered
 * so far (engine/platform.h: a log writer process). Raises Transport when it does not start. */
static int core_platform_start(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  const char *extra[32];
  int n = 0;
  if (lua_istable(L, 1)) {
    for (int i = 1; i <= 30; i++) {
      if (lua_rawgeti(L, 1, i) != LUA_TSTRING) {
        lua_pop(L, 1);
        break;
      }
      extra[n++] = lua_tostring(L, -1);
      lua_pop(L, 1); /* the string stays alive in the table */
    }
  }
  extra[n] = NULL;
  double timeout = luaL_optnumber(L, 2, 20);
  const char *log = luaL_optstring(L, 3, NULL);
  struct abx_platform p;
  char err[512];
  if (abx_platform_start(&p, extra, log, loop->secrets, (int)(timeout * 1000), err,
                         sizeof err) != 0)
    return abx_error_raise(L, loop->secrets, "Transport", 0, "%s", err);
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, p.pid);
  lua_setfield(L, -2, "pid");
  lua_pushstring(L, p.ready);
  lua_setfield(L, -2, "ready");
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

/* core.platform_stop(pid, timeout_s) -> exit status */
static int core_platform_stop(lua_State *L)
{
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  double timeout = luaL_optnumber(L, 2, 10);
  lua_pushinteger(L, abx_platform_stop(pid, (int)(timeout * 1000)));
  return 1;
}

static int write_masked(lua_State *L, FILE *f)
{
  struct abx_loop *loop = abx_core_loop(L);
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  if (abx_secrets_write(loop->secrets, f, s, n) != 0)
    return luaL_error(L, "out of memory while masking");
  if (lua_toboolean(L, 2))
    abx_secrets_flush(loop->secrets, f);
  return 0;
}

/* core.write(text [, flush]), core.ewrite(text [, flush]): writes text to stdout / stderr, masked
 * across calls (a secret written in two pieces is masked; engine/secrets.h). A tail that may begin
 * a secret is held back until the next write; flush = true writes it now (a status line that the
 * next write erases). Raises: a Lua error when out of memory. */
static int core_write(lua_State *L) { return write_masked(L, stdout); }
static int core_ewrite(lua_State *L) { return write_masked(L, stderr); }

static int core_isatty(lua_State *L)
{
  lua_pushboolean(L, isatty(luaL_optinteger(L, 1, 1)));
  return 1;
}

/* core.term_width([fd = 1]) -> columns | nil: the width of the terminal on fd (ioctl TIOCGWINSZ),
 * nil when fd is not a terminal or the terminal reports no width. [-0, +1, -] */
static int core_term_width(lua_State *L)
{
  struct winsize ws;
  if (ioctl((int)luaL_optinteger(L, 1, 1), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    lua_pushinteger(L, ws.ws_col);
  else
    lua_pushnil(L);
  return 1;
}

static int core_version(lua_State *L)
{
  lua_pushstring(L, ABX_VERSION);
  lua_pushstring(L, ABX_GIT_COMMIT);
  return 2;
}

/* core.dotenv_parse(text) -> { KEY = value, ... }, { {line =, message =}, ... }
 * The syntax is engine/dotenv.h's; a later binding of a key wins. Raises for input over 1 MiB. */
struct dotenv_ud {
  lua_State *L;
  int pairs, errors;
};

static void dotenv_pair(void *ud, const char *key, const char *value, size_t vlen)
{
  struct dotenv_ud *d = ud;
  lua_pushlstring(d->L, value, vlen);
  lua_setfield(d->L, d->pairs, key);
}

static void dotenv_error(void *ud, int line, const char *msg)
{
  struct dotenv_ud *d = ud;
  lua_createtable(d->L, 0, 2);
  lua_pushinteger(d->L, line);
  lua_setfield(d->L, -2, "line");
  lua_pushstring(d->L, msg);
  lua_setfield(d->L, -2, "message");
  lua_rawseti(d->L, d->errors, (lua_Integer)lua_rawlen(d->L, d->errors) + 1);
}

static int core_dotenv_parse(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  size_t n;
  const char *text = luaL_checklstring(L, 1, &n);
  if (n > ABX_DOTENV_MAX)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                           "a .env text is at most 1 MiB (got %zu bytes)", n);
  lua_settop(L, 1);
  lua_newtable(L); /* 2: pairs */
  lua_newtable(L); /* 3: errors */
  struct dotenv_ud d = {L, 2, 3};
  if (abx_dotenv_parse(text, n, dotenv_pair, dotenv_error, &d) < 0)
    return abx_error_raise(L, loop->secrets, "Internal", 0, "out of memory parsing a .env text");
  return 2;
}

static const luaL_Reg util_funcs[] = {
  {"b64encode", core_b64encode}, {"b64decode", core_b64decode}, {"sha256", core_sha256},
  {"random_hex", core_random_hex}, {"read_file", core_read_file}, {"yaml_load", core_yaml_load},
  {"getenv", core_getenv}, {"environ", core_environ}, {"isdir", core_isdir},
  {"exists", core_exists}, {"list_files", core_list_files},
  {"platform_start", core_platform_start}, {"platform_stop", core_platform_stop},
  {"write", core_write}, {"ewrite", core_ewrite}, {"isatty", core_isatty},
  {"term_width", core_term_width},
  {"state_dir", core_state_dir}, {"write_private", core_write_private},
  {"version", core_version}, {"dotenv_parse", core_dotenv_parse}, {NULL, NULL}};

void abx_core_util_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, util_funcs, 1);
}
