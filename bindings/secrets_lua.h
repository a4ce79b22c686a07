/*
 * secrets_lua.h: masked strings for Lua: the engine's secrets registry (engine/secrets.h) seen from
 * the bindings, which alone push strings onto a Lua stack.
 */
#ifndef ABX_SECRETS_LUA_H
#define ABX_SECRETS_LUA_H

#include <lua.h>

#include "secrets.h"

/* Pushes the masked form of the NUL-terminated 'text' (or a note saying it was dropped when
 * masking runs out of memory: never the text unmasked). [-0, +1, m] */
void abx_secrets_push_masked(lua_State *L, const struct abx_secrets *s, const char *text);

#endif
