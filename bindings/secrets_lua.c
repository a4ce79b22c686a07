/*
 * secrets_lua.c: masked strings for Lua. See secrets_lua.h.
 */
#include "secrets_lua.h"

#include <stdlib.h>
#include <string.h>

void abx_secrets_push_masked(lua_State *L, const struct abx_secrets *s, const char *text)
{
  size_t n;
  char *m = abx_secrets_mask(s, text, strlen(text), &n);
  if (!m) {
    lua_pushliteral(L, "(message dropped: out of memory while masking)");
    return;
  }
  lua_pushlstring(L, m, n);
  free(m);
}
