/*
 * test_yaml_lua.c: unit tests of bindings/yaml_lua.h (YAML text → Lua value).
 */
#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "yaml_lua.h"

static lua_State *L;
static char err[512];

/* Parses 'text' as "cfg.yaml". On success leaves the value on the stack and returns 0; on failure
 * returns -1 with err set. Checks that the stack grew by exactly one value or not at all. */
static int parse(const char *text)
{
  int top = lua_gettop(L);
  err[0] = '\0';
  int rc = abx_yaml_push(L, "cfg.yaml", text, strlen(text), err, sizeof err);
  CHECK(rc == 0 || rc == -1);
  if (rc == 0)
    CHECK(lua_gettop(L) == top + 1);
  else
    CHECK(lua_gettop(L) == top);
  if (rc == 0 && lua_gettop(L) != top + 1)
    fprintf(stderr, "  stack %d → %d for: %s\n", top, lua_gettop(L), text);
  return rc;
}

/* Evaluates a Lua expression over the parsed value (as the local `v`) and returns its boolean. */
static int holds(const char *expr)
{
  char chunk[1024];
  snprintf(chunk, sizeof chunk, "local v = ... return %s", expr);
  if (luaL_loadstring(L, chunk) != LUA_OK) {
    fprintf(stderr, "  bad test expression: %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  lua_pushvalue(L, -2);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    fprintf(stderr, "  error evaluating %s: %s\n", expr, lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  int ok = lua_toboolean(L, -1);
  if (!ok)
    fprintf(stderr, "  does not hold: %s\n", expr);
  lua_pop(L, 1);
  return ok;
}

#define CHECK_HOLDS(expr) CHECK(holds(expr))

static void test_mapping(void)
{
  CHECK(parse("name: local\nport: 8080\nurl: http://127.0.0.1:1/x\n") == 0);
  CHECK(lua_type(L, -1) == LUA_TTABLE);
  CHECK_HOLDS("v.name == 'local'");
  CHECK_HOLDS("math.type(v.port) == 'integer' and v.port == 8080");
  CHECK_HOLDS("v.url == 'http://127.0.0.1:1/x'");
  CHECK_HOLDS("(function() local n = 0 for _ in pairs(v) do n = n + 1 end return n end)() == 3");
  lua_pop(L, 1);

  CHECK(parse("{a: 1, b: x}") == 0);
  CHECK_HOLDS("v.a == 1 and v.b == 'x'");
  lua_pop(L, 1);

  /* numeric-looking keys stay strings */
  CHECK(parse("1: one\n") == 0);
  CHECK_HOLDS("v['1'] == 'one' and v[1] == nil");
  lua_pop(L, 1);
}

static void test_sequence(void)
{
  CHECK(parse("- a\n- 2\n- true\n- \"x y\"\n") == 0);
  CHECK(lua_type(L, -1) == LUA_TTABLE);
  CHECK(lua_rawlen(L, -1) == 4);
  CHECK_HOLDS("v[1] == 'a' and v[2] == 2 and v[3] == true and v[4] == 'x y'");
  lua_pop(L, 1);

  CHECK(parse("[]") == 0);
  CHECK_HOLDS("type(v) == 'table' and next(v) == nil");
  lua_pop(L, 1);

  CHECK(parse("[10, 20, 30]") == 0);
  CHECK_HOLDS("#v == 3 and v[1] == 10 and v[3] == 30");
  lua_pop(L, 1);
}

static void test_scalars(void)
{
  CHECK(parse("t: true\nT: True\nf: false\nF: False\nn: null\nN: Null\ntilde: ~\nempty:\n"
              "i: 42\nneg: -7\nf1: 1.5\nexp: 2e3\nstr: hello world\n"
              "qt: \"true\"\nqf: 'false'\nqn: \"null\"\nqtilde: '~'\nqi: \"42\"\nqf1: '1.5'\n"
              "qe: \"\"\n") == 0);
  CHECK_HOLDS("v.t == true and v.T == true");
  CHECK_HOLDS("v.f == false and v.F == false");
  CHECK_HOLDS("v.n == nil and v.N == nil and v.tilde == nil and v.empty == nil");
  CHECK_HOLDS("math.type(v.i) == 'integer' and v.i == 42");
  CHECK_HOLDS("v.neg == -7");
  CHECK_HOLDS("math.type(v.f1) == 'float' and v.f1 == 1.5");
  CHECK_HOLDS("v.exp == 2000");
  CHECK_HOLDS("v.str == 'hello world'");
  CHECK_HOLDS("v.qt == 'true' and v.qf == 'false' and v.qn == 'null' and v.qtilde == '~'");
  CHECK_HOLDS("v.qi == '42' and math.type(v.qi) == nil and v.qf1 == '1.5'");
  CHECK_HOLDS("v.qe == ''");
  lua_pop(L, 1);

  /* a document that is one scalar */
  CHECK(parse("42\n") == 0);
  CHECK(lua_isinteger(L, -1) && lua_tointeger(L, -1) == 42);
  lua_pop(L, 1);
  CHECK(parse("'42'\n") == 0);
  CHECK(lua_type(L, -1) == LUA_TSTRING);
  lua_pop(L, 1);
  CHECK(parse("false\n") == 0);
  CHECK(lua_isboolean(L, -1) && !lua_toboolean(L, -1));
  lua_pop(L, 1);

  /* block scalars keep their text */
  CHECK(parse("script: |\n  echo 1\n  echo 2\n") == 0);
  CHECK_HOLDS("v.script == 'echo 1\\necho 2\\n'");
  lua_pop(L, 1);
}

static void test_nested(void)
{
  CHECK(parse("defaults:\n"
              "  jobs: 4\n"
              "providers:\n"
              "  local:\n"
              "    kind: local\n"
              "    ports: [1, 2]\n"
              "  list:\n"
              "    - name: a\n"
              "      tags: {x: 1}\n"
              "    - - deep\n"
              "      - 3\n") == 0);
  CHECK_HOLDS("v.defaults.jobs == 4");
  CHECK_HOLDS("v.providers['local'].kind == 'local'");
  CHECK_HOLDS("#v.providers['local'].ports == 2 and v.providers['local'].ports[2] == 2");
  CHECK_HOLDS("v.providers.list[1].name == 'a' and v.providers.list[1].tags.x == 1");
  CHECK_HOLDS("v.providers.list[2][1] == 'deep' and v.providers.list[2][2] == 3");
  lua_pop(L, 1);
}

static void test_duplicate_keys(void)
{
  CHECK(parse("a: 1\nb: 2\na: 3\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:3:1:");
  CHECK_CONTAINS(err, "duplicate");

  /* nested, not at column 1 */
  CHECK(parse("top:\n  x: 1\n  y: 2\n  x: 3\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:4:3:");
  CHECK_CONTAINS(err, "duplicate");

  /* the same key in two different mappings is fine */
  CHECK(parse("a: {k: 1}\nb: {k: 2}\n") == 0);
  lua_pop(L, 1);

  /* a key whose first value is null (or empty) is still a duplicate */
  CHECK(parse("a: ~\nb: 1\na: 2\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:3:1:");
  if (err[0] == '\0')
    lua_pop(L, 1);
  CHECK(parse("a:\na: 2\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:2:1:");
  if (err[0] == '\0')
    lua_pop(L, 1);
}

static void test_malformed(void)
{
  /* an unclosed flow sequence: the error names the file and a line */
  CHECK(parse("a: 1\nb: [1, 2\nc: 3\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:");
  /* a bad indentation on line 3 */
  CHECK(parse("a: 1\nb: 2\n  c: 3\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:3:");
  /* a tab used for indentation on line 2 */
  CHECK(parse("a:\n\tb: 1\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:2:");
  /* an unterminated quoted string */
  CHECK(parse("a: \"open\nb: 1\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:");
  /* a complex (non-scalar) mapping key */
  CHECK(parse("? [1, 2]\n: x\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:1:");
  /* the stack is clean after all of these (checked in parse) and the state still works */
  CHECK(parse("ok: yes\n") == 0);
  CHECK_HOLDS("v.ok == 'yes'");
  lua_pop(L, 1);
}

static void test_anchors_aliases(void)
{
  CHECK(parse("base: &b {x: 1}\nother: *b\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:1:");
  CHECK_CONTAINS(err, "anchor");

  CHECK(parse("list: &l\n  - 1\n") == -1);
  CHECK_CONTAINS(err, "anchor");

  CHECK(parse("a: 1\nb: *nowhere\n") == -1);
  CHECK_CONTAINS(err, "cfg.yaml:2:");

  /* billion laughs: refused, not expanded */
  CHECK(parse("a: &a [x, x, x, x, x, x, x, x, x]\n"
              "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
              "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n") == -1);

  /* an anchor on a scalar is an anchor too */
  CHECK(parse("a: &x 1\n") == -1);
  CHECK_CONTAINS(err, "anchor");
  if (err[0] == '\0')
    lua_pop(L, 1);
}

static char *nested_flow(int levels)
{
  char *s = malloc((size_t)levels * 2 + 4);
  size_t o = 0;
  for (int i = 0; i < levels; i++)
    s[o++] = '[';
  s[o++] = '7';
  for (int i = 0; i < levels; i++)
    s[o++] = ']';
  s[o++] = '\n';
  s[o] = '\0';
  return s;
}

static void test_depth(void)
{
  /* 64 levels of nesting: accepted, the innermost value intact */
  char *ok = nested_flow(64);
  CHECK(parse(ok) == 0);
  if (!err[0]) {
    CHECK_HOLDS("(function() local x = v for _ = 1, 64 do x = x[1] end return x end)() == 7");
    lua_pop(L, 1);
  }
  free(ok);

  /* 65 levels: refused */
  char *deep = nested_flow(65);
  CHECK(parse(deep) == -1);
  CHECK_CONTAINS(err, "cfg.yaml:1:");
  CHECK_CONTAINS(err, "64");
  free(deep);

  /* far deeper: refused, no crash */
  char *very = nested_flow(100000);
  CHECK(parse(very) == -1);
  CHECK_CONTAINS(err, "64");
  free(very);

  /* block mappings count the same way */
  char buf[8192];
  size_t o = 0;
  for (int i = 0; i < 70; i++)
    o += (size_t)snprintf(buf + o, sizeof buf - o, "%*sk%d:\n", i, "", i);
  snprintf(buf + o, sizeof buf - o, "%*sleaf: 1\n", 70, "");
  CHECK(parse(buf) == -1);
  CHECK_CONTAINS(err, "nesting");
}

static void test_empty(void)
{
  static const char *empties[] = {"", "\n\n", "# only a comment\n", "---\n", "---\n...\n"};
  for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
    CHECK(parse(empties[i]) == 0);
    CHECK(lua_isnil(L, -1));
    if (!err[0])
      lua_pop(L, 1);
  }
  /* only the first document counts */
  CHECK(parse("a: 1\n---\nb: 2\n") == 0);
  CHECK_HOLDS("v.a == 1 and v.b == nil");
  lua_pop(L, 1);
}

/* abx_yaml_push_lines: the value, then {[table] = {[key or index] = line}}; nothing on failure. */
static void test_lines(void)
{
  const char *text = "# c\nfrom: base\nsteps:\n  - run: x\n  - copy: {src: a,\n      dest: b}\n";
  int top = lua_gettop(L);
  CHECK(abx_yaml_push_lines(L, "t.yaml", text, strlen(text), err, sizeof err) == 0);
  CHECK(lua_gettop(L) == top + 2);
  CHECK(luaL_loadstring(L,
                        "local v, l = ... return l[v].from == 2 and l[v].steps == 3 and "
                        "l[v.steps][1] == 4 and l[v.steps][2] == 5 and l[v.steps[1]].run == 4 and "
                        "l[v.steps[2].copy].src == 5 and l[v.steps[2].copy].dest == 6") == LUA_OK);
  lua_pushvalue(L, -3);
  lua_pushvalue(L, -3);
  CHECK(lua_pcall(L, 2, 1, 0) == LUA_OK && lua_toboolean(L, -1));
  lua_settop(L, top);
  CHECK(abx_yaml_push_lines(L, "t.yaml", "a: [1\n", 6, err, sizeof err) == -1);
  CHECK(lua_gettop(L) == top);
}

int main(void)
{
  L = luaL_newstate();
  luaL_openlibs(L);
  lua_pushliteral(L, "sentinel"); /* the parser must leave what is below its value alone */
  RUN(test_mapping);
  RUN(test_sequence);
  RUN(test_scalars);
  RUN(test_nested);
  RUN(test_duplicate_keys);
  RUN(test_malformed);
  RUN(test_anchors_aliases);
  RUN(test_depth);
  RUN(test_empty);
  RUN(test_lines);
  CHECK(lua_gettop(L) == 1 && strcmp(lua_tostring(L, 1), "sentinel") == 0);
  lua_close(L);
  return check_report();
}
