/*
 * core_wire.c: a raw byte stream to a URL's host (TCP, or TLS for https), for protocols that run
 * over an HTTP upgrade (the desktop runner's WebSocket to a sandbox's VNC server through the
 * ingress, lib/abx/accept/desktop_ws.lua), and the two digests those protocols need.
 *
 * core.wire_open(opts) -> wire, opts {url, connect_to = "HOST:PORT" | nil, connect_timeout = s}.
 *     connect_timeout defaults to 15 s. libcurl CONNECT_ONLY on a multi handle of its own (so connecting never blocks the loop):
 *     the connection, and the TLS handshake for https (verified against the CA bundle of
 *     core.set_ca_file, engine/http.h abx_http_ca_file, as every other transfer), no request.
 * wire:step() -> true once connected, false while connecting (the caller sleeps and calls again);
 *     raises Transport (refused, resolve, TLS, connect_timeout).
 * wire:send(bytes [, from]) -> bytes written from position `from` (1-based, default 1), 0 when
 *     the socket would block now. Raises Transport; InvalidArgument before step() said true.
 * wire:recv(max) -> bytes (at most max, 1..1 MiB), "" when nothing is there now, nil at the end
 *     of the stream. Raises Transport.
 * wire:close() idempotent; also __gc and __close.
 * Non-blocking throughout: the Lua side (desktop_ws.lua) polls with core.sleep, so deadlines and
 * interrupts apply to every wait.
 *
 * core.sha1(bytes) -> 20 raw bytes (nettle): WebSocket's Sec-WebSocket-Accept, RFC 6455 §4.2.2.
 * core.vnc_auth(password, challenge) -> 16 bytes: VNC authentication's response.
 *     RFC 6143 §7.2.2: the 16-byte challenge encrypted with single DES in ECB mode (nettle), the key the
 *     password's first 8 bytes padded with NUL, each key byte with its bits mirrored (the key
 *     schedule every VNC server uses: libvncserver common/d3des.c takes key bits least
 *     significant first; RFC 6143 leaves it out). InvalidArgument unless the challenge is 16
 *     bytes.
 */
#include <curl/curl.h>
#include <lauxlib.h>
#include <nettle/des.h>
#include <nettle/sha1.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "errors.h"
#include "http.h"
#include "loop.h"

#define WIRE_MT "abx.wire"
#define WIRE_MAX_RECV (1024 * 1024)

struct wire {
  CURLM *multi;
  CURL *easy;
  struct curl_slist *connect_to;
  int connected;
  char url[512];
  char err[CURL_ERROR_SIZE];
  char *rbuf;  /* recv's buffer, kept: a fresh one of up to 1 MiB at every call (most calls get */
  size_t rcap; /* nothing or a few KiB) cost an mmap and its page faults each time */
};

static struct wire *check_wire(lua_State *L)
{
  return luaL_checkudata(L, 1, WIRE_MT);
}

static void wire_free(struct wire *w)
{
  if (w->easy) {
    curl_multi_remove_handle(w->multi, w->easy);
    curl_easy_cleanup(w->easy);
    w->easy = NULL;
  }
  if (w->multi) {
    curl_multi_cleanup(w->multi);
    w->multi = NULL;
  }
  curl_slist_free_all(w->connect_to);
  w->connect_to = NULL;
  w->connected = 0;
  free(w->rbuf);
  w->rbuf = NULL;
  w->rcap = 0;
}

static int raise_(lua_State *L, const char *kind, const char *fmt, const char *a, const char *b)
{
  struct abx_loop *loop = abx_core_loop(L);
  return abx_error_raise(L, loop->secrets, kind, 0, fmt, a, b);
}

static int core_wire_open(lua_State *L)
{
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "url");
  const char *url = luaL_checkstring(L, -1);
  lua_getfield(L, 1, "connect_to");
  const char *ct = luaL_optstring(L, -1, NULL);
  lua_getfield(L, 1, "connect_timeout");
  double timeout = luaL_optnumber(L, -1, 15);
  if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
    return raise_(L, "InvalidArgument", "wire_open: not an http(s) URL: %s%s", url, "");
  if (strlen(url) >= 512 || (ct && strlen(ct) > 300))
    return raise_(L, "InvalidArgument", "wire_open: URL or connect_to too long%s%s", "", "");
  if (!(timeout > 0 && timeout <= 600))
    return raise_(L, "InvalidArgument", "wire_open: connect_timeout must be in (0, 600]%s%s", "",
                  "");
  struct wire *w = lua_newuserdatauv(L, sizeof *w, 0);
  memset(w, 0, sizeof *w);
  luaL_setmetatable(L, WIRE_MT);
  snprintf(w->url, sizeof w->url, "%s", url);
  w->multi = curl_multi_init();
  w->easy = curl_easy_init();
  if (!w->multi || !w->easy) {
    wire_free(w);
    return luaL_error(L, "wire_open: out of memory");
  }
  CURL *e = w->easy;
  curl_easy_setopt(e, CURLOPT_URL, w->url);
  curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout * 1000));
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, w->err);
  const char *ca = abx_http_ca_file();
  if (ca)
    curl_easy_setopt(e, CURLOPT_CAINFO, ca);
  if (ct) { /* "::HOST:PORT": whatever the URL's host and port, connect there (engine/http.c) */
    char entry[320];
    snprintf(entry, sizeof entry, "::%s", ct);
    w->connect_to = curl_slist_append(NULL, entry);
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, w->connect_to);
  }
  if (curl_multi_add_handle(w->multi, e) != CURLM_OK) {
    wire_free(w);
    return luaL_error(L, "wire_open: curl_multi_add_handle failed");
  }
  return 1;
}

static int wire_step(lua_State *L)
{
  struct wire *w = check_wire(L);
  if (!w->easy)
    return raise_(L, "InvalidArgument", "wire: closed%s%s", "", "");
  if (w->connected) {
    lua_pushboolean(L, 1);
    return 1;
  }
  int running = 0;
  curl_multi_perform(w->multi, &running);
  int left;
  CURLMsg *m;
  while ((m = curl_multi_info_read(w->multi, &left))) {
    if (m->msg != CURLMSG_DONE)
      continue;
    if (m->data.result != CURLE_OK) {
      char why[CURL_ERROR_SIZE + 64];
      snprintf(why, sizeof why, "%s", w->err[0] ? w->err : curl_easy_strerror(m->data.result));
      wire_free(w);
      return raise_(L, "Transport", "connecting to %s: %s", w->url, why);
    }
    w->connected = 1;
  }
  lua_pushboolean(L, w->connected);
  return 1;
}

static int wire_send(lua_State *L)
{
  struct wire *w = check_wire(L);
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n);
  lua_Integer from = luaL_optinteger(L, 3, 1);
  if (!w->easy || !w->connected)
    return raise_(L, "InvalidArgument", "wire: send before the connection is up%s%s", "", "");
  if (from < 1 || (size_t)from > n + 1)
    return raise_(L, "InvalidArgument", "wire: send position out of range%s%s", "", "");
  size_t sent = 0;
  CURLcode rc = curl_easy_send(w->easy, s + from - 1, n - (size_t)(from - 1), &sent);
  if (rc == CURLE_AGAIN) {
    lua_pushinteger(L, 0);
    return 1;
  }
  if (rc != CURLE_OK)
    return raise_(L, "Transport", "sending to %s: %s", w->url, curl_easy_strerror(rc));
  lua_pushinteger(L, (lua_Integer)sent);
  return 1;
}

static int wire_recv(lua_State *L)
{
  struct wire *w = check_wire(L);
  lua_Integer max = luaL_checkinteger(L, 2);
  if (!w->easy || !w->connected)
    return raise_(L, "InvalidArgument", "wire: recv before the connection is up%s%s", "", "");
  if (max < 1 || max > WIRE_MAX_RECV)
    return raise_(L, "InvalidArgument", "wire: recv size must be 1..1048576%s%s", "", "");
  if (w->rcap < (size_t)max) {
    char *nb = realloc(w->rbuf, (size_t)max);
    if (!nb)
      return raise_(L, "Internal", "wire: out of memory for a %s of %s", "recv buffer",
                    "up to 1 MiB");
    w->rbuf = nb;
    w->rcap = (size_t)max;
  }
  size_t got = 0;
  CURLcode rc = curl_easy_recv(w->easy, w->rbuf, (size_t)max, &got);
  if (rc == CURLE_AGAIN) {
    lua_pushliteral(L, "");
    return 1;
  }
  if (rc != CURLE_OK)
    return raise_(L, "Transport", "reading from %s: %s", w->url, curl_easy_strerror(rc));
  if (got == 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushlstring(L, w->rbuf, got);
  return 1;
}

static int wire_close(lua_State *L)
{
  wire_free(check_wire(L));
  return 0;
}

static int core_sha1(lua_State *L)
{
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  struct sha1_ctx c;
  uint8_t d[SHA1_DIGEST_SIZE];
  sha1_init(&c);
  sha1_update(&c, n, (const uint8_t *)s);
  sha1_digest(&c, sizeof d, d);
  lua_pushlstring(L, (const char *)d, sizeof d);
  return 1;
}

static int core_vnc_auth(lua_State *L)
{
  size_t plen, clen;
  const char *pw = luaL_checklstring(L, 1, &plen);
  const char *ch = luaL_checklstring(L, 2, &clen);
  if (clen != 16)
    return raise_(L, "InvalidArgument", "vnc_auth: the challenge must be 16 bytes%s%s", "", "");
  uint8_t key[DES_KEY_SIZE] = {0};
  for (size_t i = 0; i < DES_KEY_SIZE && i < plen; i++) {
    unsigned v = (unsigned char)pw[i], r = 0;
    for (int b = 0; b < 8; b++)
      r |= ((v >> b) & 1u) << (7 - b);
    key[i] = (uint8_t)r;
  }
  struct des_ctx ctx;
  des_set_key(&ctx, key); /* 0 for a weak key: still a valid schedule, as VNC servers use it */
  uint8_t out[16];
  des_encrypt(&ctx, 16, out, (const uint8_t *)ch); /* ECB: each 8-byte block on its own */
  memset(key, 0, sizeof key);
  memset(&ctx, 0, sizeof ctx);
  lua_pushlstring(L, (const char *)out, sizeof out);
  return 1;
}

static const luaL_Reg wire_methods[] = {{"step", wire_step},
                                        {"send", wire_send},
                                        {"recv", wire_recv},
                                        {"close", wire_close},
                                        {NULL, NULL}};

static const luaL_Reg wire_funcs[] = {
    {"wire_open", core_wire_open}, {"sha1", core_sha1}, {"vnc_auth", core_vnc_auth}, {NULL, NULL}};

void abx_core_wire_register(lua_State *L, struct abx_loop *loop)
{
  if (luaL_newmetatable(L, WIRE_MT)) {
    luaL_newlibtable(L, wire_methods);
    lua_pushlightuserdata(L, loop); /* abx_core_loop: the methods raise abx errors too */
    luaL_setfuncs(L, wire_methods, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, wire_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, wire_close);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  lua_pushlightuserdata(L, loop);
  luaL_setfuncs(L, wire_funcs, 1);
}
