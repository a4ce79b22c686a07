/*
 * core_encode.c: "abx.core" encodings: base64 (proto/base64.h), SHA-256 of a string
 * and random hex (OpenSSL) (contract: docs/ENGINE.md "Utilities").
 */
#include <lauxlib.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>

#include "base64.h"
#include "core.h"

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

static const luaL_Reg encode_funcs[] = {{"b64encode", core_b64encode},
                                        {"b64decode", core_b64decode},
                                        {"sha256", core_sha256},
                                        {"random_hex", core_random_hex},
                                        {NULL, NULL}};

void abx_core_encode_register(lua_State *L, struct abx_loop *loop)
{
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, encode_funcs, 1);
}
