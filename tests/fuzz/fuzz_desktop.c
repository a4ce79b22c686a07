/*
 * fuzz_desktop.c: libFuzzer target for the desktop runner's parsers of what a server sends
 * (lib/abx/accept/desktop_ws.lua: the 101's head and RFC 6455 frames; desktop_rfb.lua: RFB 3.8
 * from ProtocolVersion to a Raw FramebufferUpdate, RFC 6143).
 *
 * The engine's own modules (the embedded lib/abx, abx.core on a loop, cjson) are preloaded as
 * bindings/cli.c does, into one lua_State per process; the Lua driver below feeds the input to the
 * parsers as the network would, in pieces of 1 to 4096 bytes. The first byte picks the parser:
 *   0: the upgrade answer's head (desktop_ws._parse_head)
 *   1: WebSocket frames, read as a byte stream in reads of varying size (desktop_ws._over)
 *   2: RFB over a plain transport: handshake (password "abxfuzz1") then capture
 *   3: RFB inside WebSocket frames, as the runner reads it through the ingress
 * Oracles (abort() on violation): a parser ends in a value or in a core error of kind Protocol,
 * Transport or Authentication (RFB's refusals), never in a Lua runtime error (a nil index, a bad
 * string.unpack: a check the parser lacks) or another kind; a read returns exactly the bytes
 * asked for; a capture's RGB is width*height*3 bytes. An input that hangs or grows memory without
 * bound is a finding too (libFuzzer's -timeout and -rss_limit_mb).
 * Coverage: the Lua VM is Debian's uninstrumented build, so a line hook feeds line-to-line
 * transitions of the Lua code into libFuzzer's extra counters, as fuzz_select.c does.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "loop.h"
#include "secrets.h"

#define NCOUNTERS (1u << 14)
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t counters[NCOUNTERS];
static unsigned prev_line;

static void line_hook(lua_State *S, lua_Debug *ar)
{
  (void)S;
  unsigned line = (unsigned)ar->currentline;
  unsigned i = ((prev_line * 2654435761u) ^ line) & (NCOUNTERS - 1);
  if (counters[i] < 255)
    counters[i]++;
  prev_line = line;
}

/* The driver: returns a function(input) -> nil, or a message naming the broken oracle. */
static const char driver[] =
    "local core = require('abx.core')\n"
    "local ws = require('abx.accept.desktop_ws')\n"
    "local rfb = require('abx.accept.desktop_rfb')\n"
    "local PIECES = { 1, 3, 17, 256, 4096, 2, 64 }\n"
    "local READS = { 1, 4, 12, 3, 1000, 7, 65536 }\n"
    "local ALLOWED = { Protocol = true, Transport = true, Authentication = true }\n"
    "local function wire(data)\n"
    "  local pos, k = 1, 0\n"
    "  return { recv = function(_, n)\n"
    "      if pos > #data then return nil end\n"
    "      k = k % #PIECES + 1\n"
    "      local take = math.min(n, PIECES[k])\n"
    "      local b = data:sub(pos, pos + take - 1); pos = pos + take; return b end,\n"
    "    send = function(_, s, i) return #s - (i or 1) + 1 end, close = function() end }\n"
    "end\n"
    "local function plain(data)\n"
    "  local pos = 1\n"
    "  return { read = function(_, n)\n"
    "      if pos + n - 1 > #data then core.error('Transport', 0, 'the stream ended') end\n"
    "      local b = data:sub(pos, pos + n - 1); pos = pos + n; return b end,\n"
    "    write = function() end }\n"
    "end\n"
    "local function checked(t)\n"
    "  return { read = function(_, n)\n"
    "      local b = t:read(n)\n"
    "      if #b ~= n then error('ORACLE: a read of ' .. n .. ' returned ' .. #b .. ' bytes', 0) "
    "end\n"
    "      return b end, write = function(_, s) t:write(s) end }\n"
    "end\n"
    "local function run_rfb(t)\n"
    "  local s = rfb.handshake(t, 'abxfuzz1')\n"
    "  local rgb = rfb.capture(t, s)\n"
    "  if #rgb ~= s.width * s.height * 3 then\n"
    "    error('ORACLE: capture returned ' .. #rgb .. ' bytes for ' .. s.width .. 'x' .. s.height, "
    "0)\n"
    "  end\n"
    "end\n"
    "return function(input)\n"
    "  local mode, data = (input:byte(1) or 0) % 4, input:sub(2)\n"
    "  local ok, err = pcall(function()\n"
    "    if mode == 0 then\n"
    "      ws._parse_head(data)\n"
    "    elseif mode == 1 then\n"
    "      local t, k = checked(ws._over(wire(data))), 0\n"
    "      while true do k = k % #READS + 1; t:read(READS[k]) end\n"
    "    elseif mode == 2 then\n"
    "      run_rfb(checked(plain(data)))\n"
    "    else\n"
    "      run_rfb(checked(ws._over(wire(data))))\n"
    "    end\n"
    "  end)\n"
    "  if ok then return nil end\n"
    "  if not core.is_error(err) then return 'a Lua error, not a core error: ' .. tostring(err) "
    "end\n"
    "  if not ALLOWED[err.kind] then return 'a core error of kind ' .. tostring(err.kind) .. ': ' "
    ".. tostring(err) end\n"
    "  return nil\n"
    "end\n";

static lua_State *L;
static int ref_drive;

static void setup(void)
{
  L = luaL_newstate();
  struct abx_secrets *secrets = abx_secrets_new();
  struct abx_loop *loop = (L && secrets) ? abx_loop_new(L, secrets) : NULL;
  if (!loop)
    abort();
  luaL_openlibs(L);
  abx_cli_preload(L, loop); /* the engine's own modules, as bindings/cli.c loads them */
  if (luaL_loadbuffer(L, driver, sizeof driver - 1, "=fuzz_desktop") != LUA_OK ||
      lua_pcall(L, 0, 1, 0) != LUA_OK || !lua_isfunction(L, -1)) {
    fprintf(stderr, "fuzz_desktop: loading the driver: %s\n", lua_tostring(L, -1));
    abort();
  }
  ref_drive = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_sethook(L, line_hook, LUA_MASKLINE, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!L)
    setup();
  prev_line = 0;
  int base = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref_drive);
  lua_pushlstring(L, (const char *)data, size);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    fprintf(stderr, "fuzz_desktop: the driver raised: %s\n", lua_tostring(L, -1));
    abort();
  }
  if (!lua_isnil(L, -1)) {
    fprintf(stderr, "fuzz_desktop: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_settop(L, base);
  /* A full collection frees this input's garbage now (see fuzz_select.c) */
  lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}
