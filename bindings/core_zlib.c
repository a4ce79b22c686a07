/*
 * core_zlib.c: core.gzip and core.gunzip (zlib), for gzip on envd's /files
 * (docs/protocol/envd-protocol.md §7: Accept-Encoding / Content-Encoding gzip).
 *
 * core.gzip(bytes [, level]) -> gzip member (level 1..9, default 6)
 * core.gunzip(bytes [, max_bytes]) -> bytes (concatenated members accepted)
 * Limits:  the output of gunzip is at most max_bytes (default 256 MiB); more is a Protocol error.
 * Raises:  Protocol for corrupt or truncated input and for output over the limit; InvalidArgument
 *          for a bad level.
 */
#include <lauxlib.h>
#include <string.h>
#include <zlib.h>

#include "core.h"
#include "errors.h"
#include "loop.h"

#define GUNZIP_DEFAULT_MAX (256.0 * 1024 * 1024)

static int core_gzip(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  int level = (int)luaL_optinteger(L, 2, 6);
  if (level < 1 || level > 9)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0, "gzip level %d (1..9)", level);
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return luaL_error(L, "zlib: deflateInit2 failed");
  uLong bound = deflateBound(&z, (uLong)n);
  luaL_Buffer b;
  unsigned char *out = (unsigned char *)luaL_buffinitsize(L, &b, bound);
  z.next_in = (Bytef *)s;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)bound;
  int rc = deflate(&z, Z_FINISH);
  size_t produced = bound - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END)
    return luaL_error(L, "zlib: deflate did not finish (%d)", rc);
  luaL_pushresultsize(&b, produced);
  return 1;
}

static int core_gunzip(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  double max = luaL_optnumber(L, 2, GUNZIP_DEFAULT_MAX);
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 32) != Z_OK) /* +32: gzip or zlib header, detected */
    return luaL_error(L, "zlib: inflateInit2 failed");
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  z.next_in = (Bytef *)s;
  z.avail_in = (uInt)n;
  size_t total = 0;
  int rc = Z_OK;
  while (z.avail_in > 0 || rc == Z_OK) {
    unsigned char chunk[16384];
    z.next_out = chunk;
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    size_t got = sizeof chunk - z.avail_out;
    total += got;
    if ((double)total > max) {
      inflateEnd(&z);
      return abx_error_raise(L, loop->secrets, "Protocol", 0, "gunzip: output exceeds %d bytes",
                             (int)max);
    }
    luaL_addlstring(&b, (const char *)chunk, got);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0)
        break;
      inflateReset(&z); /* another gzip member follows */
      rc = Z_OK;
      continue;
    }
    if (rc != Z_OK) {
      inflateEnd(&z);
      return abx_error_raise(L, loop->secrets, "Protocol", 0, "gunzip: corrupt data (%s)",
                             z.msg ? z.msg : "zlib error");
    }
    if (z.avail_in == 0 && got == 0) {
      inflateEnd(&z);
      return abx_error_raise(L, loop->secrets, "Protocol", 0, "gunzip: truncated data");
    }
  }
  inflateEnd(&z);
  luaL_pushresult(&b);
  return 1;
}

static const luaL_Reg zlib_funcs[] = {{"gzip", core_gzip}, {"gunzip", core_gunzip}, {NULL, NULL}};

void abx_core_zlib_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, zlib_funcs, 1);
}
