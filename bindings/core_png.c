/*
 * core_png.c: PNG files of 8-bit RGB pixels (libpng's simplified API, png.h "Simplified API"),
 * for the desktop runner's screenshot (lib/abx/accept/desktop.lua) and its tests.
 *
 * core.png_write(path, width, height, rgb) -> size in bytes of the file written
 *     rgb: width*height*3 bytes, rows top to bottom, R G B per pixel. width and height 1..16384.
 *     InvalidArgument for other sizes or a wrong length, and for a file that cannot be written
 *     (naming the path and libpng's message).
 * core.png_read(path [, max_pixels]) -> width, height, rgb
 *     Any PNG libpng reads (palette, grey, alpha, 16-bit) converted to 8-bit RGB (alpha composed
 *     over black, libpng's default). max_pixels (default 16384*16384) bounds the allocation,
 *     checked against the header before any pixel is read. InvalidArgument for a file that is
 *     not a readable PNG or is over the bound.
 */
#include <lauxlib.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core.h"
#include "errors.h"
#include "loop.h"

#define PNG_MAX_SIDE 16384

static int core_png_write(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  const char *path = luaL_checkstring(L, 1);
  lua_Integer w = luaL_checkinteger(L, 2), h = luaL_checkinteger(L, 3);
  size_t n;
  const char *rgb = luaL_checklstring(L, 4, &n);
  if (w < 1 || h < 1 || w > PNG_MAX_SIDE || h > PNG_MAX_SIDE)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                           "png_write: width and height must be 1..%d, got %lldx%lld", PNG_MAX_SIDE,
                           (long long)w, (long long)h);
  if (n != (size_t)w * (size_t)h * 3)
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                           "png_write: %zu bytes of pixels for %lldx%lld RGB (need %zu)", n,
                           (long long)w, (long long)h, (size_t)w * (size_t)h * 3);
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = (png_uint_32)w;
  img.height = (png_uint_32)h;
  img.format = PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&img, path, 0, rgb, (png_int_32)(w * 3), NULL)) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s", img.message);
    png_image_free(&img);
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0, "png_write %s: %s", path, msg);
  }
  struct stat st;
  lua_pushinteger(L, stat(path, &st) == 0 ? (lua_Integer)st.st_size : 0);
  return 1;
}

static int core_png_read(lua_State *L)
{
  struct abx_loop *loop = abx_core_loop(L);
  const char *path = luaL_checkstring(L, 1);
  lua_Integer max = luaL_optinteger(L, 2, (lua_Integer)PNG_MAX_SIDE * PNG_MAX_SIDE);
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path)) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s", img.message);
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0, "png_read %s: %s", path, msg);
  }
  if ((lua_Integer)img.width * (lua_Integer)img.height > max || img.width > PNG_MAX_SIDE ||
      img.height > PNG_MAX_SIDE) {
    png_image_free(&img);
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0,
                           "png_read %s: %ux%u is over the bound of %lld pixels", path,
                           (unsigned)img.width, (unsigned)img.height, (long long)max);
  }
  img.format = PNG_FORMAT_RGB;
  size_t size = PNG_IMAGE_SIZE(img);
  unsigned char *buf = malloc(size ? size : 1);
  if (!buf) {
    png_image_free(&img);
    return luaL_error(L, "png_read: out of memory");
  }
  if (!png_image_finish_read(&img, NULL, buf, 0, NULL)) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s", img.message);
    free(buf);
    return abx_error_raise(L, loop->secrets, "InvalidArgument", 0, "png_read %s: %s", path, msg);
  }
  lua_pushinteger(L, (lua_Integer)img.width);
  lua_pushinteger(L, (lua_Integer)img.height);
  lua_pushlstring(L, (const char *)buf, size);
  free(buf);
  return 3;
}

static const luaL_Reg png_funcs[] = {
    {"png_write", core_png_write}, {"png_read", core_png_read}, {NULL, NULL}};

void abx_core_png_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, png_funcs, 1);
}
