/*
 * yaml_lua.c: YAML → Lua with libyaml's event parser. See yaml_lua.h.
 */
#include "yaml_lua.h"

#include <errno.h>
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 64

struct ctx {
  lua_State *L;
  yaml_parser_t parser;
  const char *name;
  char *err;
  size_t errlen;
  int lines; /* stack index of the lines table (abx_yaml_push_lines), 0 when not wanted */
};

/* lines[container][key] = 1-based line of the entry (the key of a mapping entry, the start of a
 * sequence item); container and key are absolute stack indices. [-0, +0, m] */
static void record_line(struct ctx *c, int container, int key, size_t line)
{
  lua_State *L = c->L;
  if (!c->lines)
    return;
  luaL_checkstack(L, 4, "YAML lines");
  lua_pushvalue(L, container);
  if (lua_rawget(L, c->lines) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, container);
    lua_pushvalue(L, -2);
    lua_rawset(L, c->lines);
  }
  lua_pushvalue(L, key);
  lua_pushinteger(L, (lua_Integer)line + 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

static int fail(struct ctx *c, const yaml_mark_t *mark, const char *what)
{
  snprintf(c->err, c->errlen, "%s:%zu:%zu: %s", c->name, mark->line + 1, mark->column + 1, what);
  return -1;
}

static void push_scalar(lua_State *L, const yaml_event_t *ev)
{
  const char *v = (const char *)ev->data.scalar.value;
  size_t n = ev->data.scalar.length;
  if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
    if (n == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0) {
      lua_pushnil(L);
      return;
    }
    if (strcmp(v, "true") == 0 || strcmp(v, "True") == 0) {
      lua_pushboolean(L, 1);
      return;
    }
    if (strcmp(v, "false") == 0 || strcmp(v, "False") == 0) {
      lua_pushboolean(L, 0);
      return;
    }
    if (lua_stringtonumber(L, v) != 0)
      return;
  }
  lua_pushlstring(L, v, n);
}

static int parse_node(struct ctx *c, yaml_event_t *ev, int depth);

static int next_event(struct ctx *c, yaml_event_t *ev)
{
  if (!yaml_parser_parse(&c->parser, ev)) {
    const char *prob = c->parser.problem ? c->parser.problem : "malformed YAML";
    char msg[256];
    snprintf(msg, sizeof msg, "%s (check indentation and quoting)", prob);
    return fail(c, &c->parser.problem_mark, msg);
  }
  return 0;
}

/* Fills the table at the top with the children of a sequence or mapping. For a mapping, a
 * second table (the keys seen, null values included) sits just below it. */
static int parse_children(struct ctx *c, int depth, int mapping)
{
  lua_State *L = c->L;
  lua_Integer i = 1;
  for (;;) {
    yaml_event_t ev;
    if (next_event(c, &ev))
      return -1;
    if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&ev);
      return 0;
    }
    if (mapping) {
      if (ev.type != YAML_SCALAR_EVENT) {
        int r = fail(c, &ev.start_mark, "mapping keys must be plain strings");
        yaml_event_delete(&ev);
        return r;
      }
      lua_pushlstring(L, (const char *)ev.data.scalar.value, ev.data.scalar.length);
      yaml_mark_t mark = ev.start_mark;
      yaml_event_delete(&ev);
      record_line(c, lua_gettop(L) - 1, lua_gettop(L), mark.line);
      lua_pushvalue(L, -1);                /* seen map key key */
      if (lua_rawget(L, -4) != LUA_TNIL) { /* seen map key seen[key] */
        lua_pop(L, 2);
        return fail(c, &mark, "duplicate key in mapping");
      }
      lua_pop(L, 1);
      lua_pushvalue(L, -1);
      lua_pushboolean(L, 1);
      lua_rawset(L, -5); /* seen[key] = true */
      if (next_event(c, &ev))
        return -1;
      if (parse_node(c, &ev, depth + 1))
        return -1;
      lua_rawset(L, -3);
    } else {
      lua_pushinteger(L, i);
      record_line(c, lua_gettop(L) - 1, lua_gettop(L), ev.start_mark.line);
      lua_pop(L, 1);
      if (parse_node(c, &ev, depth + 1))
        return -1;
      lua_rawseti(L, -2, i++);
    }
  }
}

/* Consumes 'ev' (and the events of its children); pushes the value. */
static int parse_node(struct ctx *c, yaml_event_t *ev, int depth)
{
  lua_State *L = c->L;
  if (depth > MAX_DEPTH) {
    int r = fail(c, &ev->start_mark, "nesting deeper than 64 levels");
    yaml_event_delete(ev);
    return r;
  }
  luaL_checkstack(L, 6, "YAML nesting");
  int r = 0;
  switch (ev->type) {
  case YAML_SCALAR_EVENT:
    if (ev->data.scalar.anchor) {
      r = fail(c, &ev->start_mark, "anchors (&name) are not supported; write the value out");
      break;
    }
    push_scalar(L, ev);
    break;
  case YAML_ALIAS_EVENT:
    r = fail(c, &ev->start_mark, "aliases (*name) are not supported; write the value out");
    break;
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: {
    int mapping = ev->type == YAML_MAPPING_START_EVENT;
    if ((mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor) != NULL) {
      r = fail(c, &ev->start_mark, "anchors (&name) are not supported; write the value out");
      break;
    }
    if (mapping)
      lua_newtable(L); /* keys seen, so that a duplicate of a null-valued key is caught */
    lua_newtable(L);
    yaml_event_delete(ev);
    if (parse_children(c, depth, mapping)) {
      lua_pop(L, mapping ? 2 : 1);
      return -1;
    }
    if (mapping)
      lua_remove(L, -2);
    return 0;
  }
  default: r = fail(c, &ev->start_mark, "unexpected YAML event");
  }
  yaml_event_delete(ev);
  return r;
}

static int push_yaml(lua_State *L, const char *name, const char *text, size_t len, char *err,
                     size_t errlen, int want_lines)
{
  struct ctx c = {.L = L, .name = name, .err = err, .errlen = errlen};
  if (!yaml_parser_initialize(&c.parser)) {
    snprintf(err, errlen, "%s: cannot initialise the YAML parser", name);
    return -1;
  }
  yaml_parser_set_input_string(&c.parser, (const unsigned char *)text, len);
  int top = lua_gettop(L);
  if (want_lines) {
    lua_newtable(L);
    c.lines = lua_gettop(L);
  }
  int pushed = 0, rc = 0;
  for (;;) {
    yaml_event_t ev;
    if (next_event(&c, &ev)) {
      rc = -1;
      break;
    }
    if (ev.type == YAML_STREAM_END_EVENT || (pushed && ev.type == YAML_DOCUMENT_END_EVENT)) {
      yaml_event_delete(&ev);
      break;
    }
    if (ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_START_EVENT ||
        ev.type == YAML_DOCUMENT_END_EVENT) {
      yaml_event_delete(&ev);
      continue;
    }
    if (parse_node(&c, &ev, 0)) {
      rc = -1;
      break;
    }
    pushed = 1;
  }
  yaml_parser_delete(&c.parser);
  if (rc) {
    lua_settop(L, top);
    return -1;
  }
  if (!pushed)
    lua_pushnil(L);
  if (want_lines) {
    lua_pushvalue(L, c.lines); /* value, lines */
    lua_remove(L, c.lines);
  }
  return 0;
}

int abx_yaml_push(lua_State *L, const char *name, const char *text, size_t len, char *err,
                  size_t errlen)
{
  return push_yaml(L, name, text, len, err, errlen, 0);
}

int abx_yaml_push_lines(lua_State *L, const char *name, const char *text, size_t len, char *err,
                        size_t errlen)
{
  return push_yaml(L, name, text, len, err, errlen, 1);
}
