/*
 * yaml_lua.h: a YAML file as a Lua table (libyaml).
 *
 * Mappings become tables with string keys, sequences become arrays (1-based), plain scalars
 * "true"/"false", "null"/"~"/"" and numbers become booleans, nil and numbers; quoted scalars stay
 * strings. Anchors and aliases are refused (a config needs none, and they allow "billion laughs").
 * Limits: nesting depth <= 64; file size <= 4 MiB.
 * Errors: a message naming the file, line and column of the problem, and the fix when known.
 */
#ifndef ABX_YAML_LUA_H
#define ABX_YAML_LUA_H

#include <lua.h>
#include <stddef.h>

/* Parses 'len' bytes of YAML ('name' is used in messages) and pushes the first document's value
 * (nil for an empty document). On failure pushes nothing, writes a message into 'err' and returns
 * -1. [-0, +(0|1), m] */
int abx_yaml_push(lua_State *L, const char *name, const char *text, size_t len, char *err,
                  size_t errlen);

/* Like abx_yaml_push, and also pushes, above the value, where each entry was: a table mapping
 * every mapping or sequence table of the value to {[key or index] = 1-based line} (for error
 * messages that name the line: lib/abx/run/recipe.lua). [-0, +(0|2), m] */
int abx_yaml_push_lines(lua_State *L, const char *name, const char *text, size_t len, char *err,
                        size_t errlen);

#endif
