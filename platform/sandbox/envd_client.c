/*
 * envd_client.c: health probe and /init against envd inside a sandbox. Contract in envd_client.h.
 */
#include "envd_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "util/util.h"
#include "net/net.h"

static size_t discard(char *p, size_t sz, size_t n, void *cls)
{
  (void)p;
  (void)cls;
  return sz * n;
}

/* One request; returns the HTTP status, or -1 with err filled. */
static long request(int netns_fd, const char *path, const char *json_body, long timeout_ms,
                    char *err, size_t errlen)
{
  CURL *c = curl_easy_init();
  if (!c) {
    snprintf(err, errlen, "curl_easy_init failed");
    return -1;
  }
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", ABX_E2B_ENVD_PORT, path);
  int fd = netns_fd;
  struct curl_slist *h = NULL;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  abx_netns_curl(c, &fd);
  if (json_body) {
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json_body));
  }
  long status = -1;
  CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  else
    snprintf(err, errlen, "%s", curl_easy_strerror(rc));
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return status;
}

int abx_envd_wait_health(int netns_fd, pid_t bwrap_pid, int *exited, int64_t deadline_mono,
                         char *err, size_t errlen)
{
  *exited = 0;
  /* envd listens a few ms after bwrap started it: a refused connect costs microseconds, so poll
   * at 1 ms and back off to 10 ms (a fixed 50 ms sleep was most of a create's wait) */
  long pause_ms = 1;
  for (;;) {
    char e[160] = "";
    long st = request(netns_fd, "/health", NULL, 1000, e, sizeof e);
    if (st >= 200 && st < 300)
      return 0;
    int ws;
    if (waitpid(bwrap_pid, &ws, WNOHANG) == bwrap_pid) {
      *exited = 1;
      snprintf(err, errlen, "sandbox exited before envd became healthy (status %d)",
               WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
      return -1;
    }
    if (abx_mono_ns() >= deadline_mono) {
      if (st > 0)
        snprintf(err, errlen, "envd health check answered %ld", st);
      else
        snprintf(err, errlen, "envd did not become healthy in time: %s", e);
      return -1;
    }
    struct timespec ts = {0, pause_ms * 1000000L};
    nanosleep(&ts, NULL);
    pause_ms = pause_ms < 5 ? pause_ms * 2 : 10;
  }
}

int abx_envd_init(int netns_fd, json_t *body, char *err, size_t errlen)
{
  char *s = json_dumps(body, JSON_COMPACT);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  char e[160] = "";
  /* 30 s: envd answers /init in milliseconds when quiet; a loaded machine must not fail it */
  long st = request(netns_fd, "/init", s, 30000, e, sizeof e);
  free(s);
  if (st >= 200 && st < 300)
    return 0;
  if (st > 0)
    snprintf(err, errlen, "envd /init answered %ld", st);
  else
    snprintf(err, errlen, "envd /init failed: %s", e);
  return -1;
}

struct buf {
  unsigned char *p;
  size_t n, cap;
};

#define RUN_BODY_MAX (8u * 1024u * 1024u) /* more output than this: the call fails */

static size_t collect(char *p, size_t sz, size_t n, void *cls)
{
  struct buf *b = cls;
  size_t k = sz * n;
  if (b->n + k > RUN_BODY_MAX)
    return 0;
  if (b->n + k > b->cap) {
    size_t cap = (b->n + k) * 2;
    unsigned char *np = realloc(b->p, cap);
    if (!np)
      return 0;
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, k);
  b->n += k;
  return k;
}

/* Append base64 `b64` decoded to the tail buffer out[outlen] (keeping its last bytes). */
static void tail_append(char *out, size_t outlen, const char *b64)
{
  size_t n = strlen(b64);
  unsigned char *d = malloc(n / 4 * 3 + 4);
  if (!d || outlen < 2) {
    free(d);
    return;
  }
  int k = EVP_DecodeBlock(d, (const unsigned char *)b64, (int)n);
  if (k > 0) {
    while (n > 0 && b64[n - 1] == '=') { /* EVP_DecodeBlock counts padding as bytes */
      n--;
      k--;
    }
    size_t have = strlen(out), add = (size_t)k, room = outlen - 1;
    if (add >= room) {
      memcpy(out, d + add - room, room);
      out[room] = 0;
    } else {
      if (have + add > room) {
        memmove(out, out + (have + add - room), room - add);
        have = room - add;
      }
      memcpy(out + have, d, add);
      out[have + add] = 0;
    }
  }
  free(d);
}

/* Parse the Start stream's envelopes; 0 when an end event was seen. */
static int parse_stream(const struct buf *b, int *exit_code, char *out, size_t outlen, char *err,
                        size_t errlen)
{
  int ended = 0;
  for (size_t at = 0; at + 5 <= b->n;) {
    unsigned flags = b->p[at];
    size_t len = (size_t)b->p[at + 1] << 24 | (size_t)b->p[at + 2] << 16 |
                 (size_t)b->p[at + 3] << 8 | b->p[at + 4];
    if (at + 5 + len > b->n)
      break;
    json_t *m = json_loadb((const char *)b->p + at + 5, len, 0, NULL);
    at += 5 + len;
    if (!m)
      continue;
    if (flags & 0x02) { /* end-of-stream: {} or {"error":{code,message}} (§2.3) */
      json_t *e = json_object_get(m, "error");
      if (e && !ended)
        snprintf(err, errlen, "envd: %s: %s", json_string_value(json_object_get(e, "code")),
                 json_string_value(json_object_get(e, "message")));
      json_decref(m);
      break;
    }
    json_t *ev = json_object_get(m, "event");
    json_t *data = json_object_get(ev, "data"), *end = json_object_get(ev, "end");
    const char *o = json_string_value(json_object_get(data, "stdout"));
    const char *e = json_string_value(json_object_get(data, "stderr"));
    if (o)
      tail_append(out, outlen, o);
    if (e)
      tail_append(out, outlen, e);
    if (end) {
      ended = 1;
      *exit_code = (int)json_integer_value(json_object_get(end, "exitCode"));
    }
    json_decref(m);
  }
  if (!ended && !err[0])
    snprintf(err, errlen, "envd's process stream ended without an end event");
  return ended ? 0 : -1;
}

int abx_envd_run(int netns_fd, const char *token, const char *user, const char *script,
                 json_t *envs, long timeout_ms, int *exit_code, char *out, size_t outlen,
                 char *err, size_t errlen)
{
  if (outlen)
    out[0] = 0;
  err[0] = 0;
  json_t *proc = json_pack("{s:s,s:[s,s]}", "cmd", "/bin/bash", "args", "-c", script);
  if (proc && envs)
    json_object_set(proc, "envs", envs);
  json_t *req = proc ? json_pack("{s:o}", "process", proc) : NULL;
  char *js = req ? json_dumps(req, JSON_COMPACT) : NULL;
  json_decref(req);
  CURL *c = curl_easy_init();
  size_t jn = js ? strlen(js) : 0;
  unsigned char *env = js ? malloc(jn + 5) : NULL;
  if (!js || !c || !env) {
    free(js);
    free(env);
    if (c)
      curl_easy_cleanup(c);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  env[0] = 0; /* one uncompressed message (§2.3) */
  env[1] = (unsigned char)(jn >> 24);
  env[2] = (unsigned char)(jn >> 16);
  env[3] = (unsigned char)(jn >> 8);
  env[4] = (unsigned char)jn;
  memcpy(env + 5, js, jn);
  free(js);
  char url[96], auth[160], tok[200];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/process.Process/Start", ABX_E2B_ENVD_PORT);
  /* Basic auth with an empty password names the user (§4.1, users.c) */
  unsigned char cred[80];
  int cn = snprintf((char *)cred, sizeof cred, "%s:", user);
  unsigned char b64[120];
  EVP_EncodeBlock(b64, cred, cn);
  snprintf(auth, sizeof auth, "Authorization: Basic %s", b64);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/connect+json");
  h = curl_slist_append(h, "Connect-Protocol-Version: 1");
  h = curl_slist_append(h, "Expect:");
  h = curl_slist_append(h, auth);
  if (token) {
    snprintf(tok, sizeof tok, "X-Access-Token: %s", token);
    h = curl_slist_append(h, tok);
  }
  struct buf b = {0};
  int fd = netns_fd;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, env);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(jn + 5));
  abx_netns_curl(c, &fd);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  free(env);
  int ret = -1;
  if (rc != CURLE_OK)
    snprintf(err, errlen, "envd process.Process/Start: %s", curl_easy_strerror(rc));
  else if (status != 200)
    snprintf(err, errlen, "envd process.Process/Start answered %ld: %.*s", status,
             (int)(b.n < 200 ? b.n : 200), b.p ? (const char *)b.p : "");
  else
    ret = parse_stream(&b, exit_code, out, outlen, err, errlen);
  free(b.p);
  return ret;
}

/* ---- streamed runs --------------------------------------------------------------------------- */

#define LINE_MAX_BYTES 4096

struct stream_state {
  unsigned char *p; /* envelope bytes not parsed yet */
  size_t n, cap;
  char line[2][LINE_MAX_BYTES + 1];
  size_t ll[2];
  abx_envd_line_fn fn;
  void *cls;
  int ended, exit_code;
  char err[256];
};

static void emit(struct stream_state *s, int k, const unsigned char *d, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (d[i] == '\n' || s->ll[k] == LINE_MAX_BYTES) {
      s->line[k][s->ll[k]] = 0;
      s->fn(s->cls, k + 1, s->line[k]);
      s->ll[k] = 0;
      if (d[i] == '\n')
        continue;
    }
    s->line[k][s->ll[k]++] = (char)d[i];
  }
}

static void emit_b64(struct stream_state *s, int k, const char *b64)
{
  size_t n = strlen(b64);
  unsigned char *d = malloc(n / 4 * 3 + 4);
  if (!d)
    return;
  int len = EVP_DecodeBlock(d, (const unsigned char *)b64, (int)n);
  while (len > 0 && n > 0 && b64[n - 1] == '=') { /* EVP_DecodeBlock counts padding as bytes */
    n--;
    len--;
  }
  if (len > 0)
    emit(s, k, d, (size_t)len);
  free(d);
}

/* Parse every complete envelope in s->p (§2.3), keeping the rest. */
static void stream_parse(struct stream_state *s)
{
  size_t at = 0;
  while (at + 5 <= s->n) {
    unsigned flags = s->p[at];
    size_t len = (size_t)s->p[at + 1] << 24 | (size_t)s->p[at + 2] << 16 |
                 (size_t)s->p[at + 3] << 8 | s->p[at + 4];
    if (at + 5 + len > s->n)
      break;
    json_t *m = json_loadb((const char *)s->p + at + 5, len, 0, NULL);
    at += 5 + len;
    if (!m)
      continue;
    if (flags & 0x02) {
      json_t *e = json_object_get(m, "error");
      if (e && !s->ended)
        snprintf(s->err, sizeof s->err, "envd: %s: %s",
                 json_string_value(json_object_get(e, "code")),
                 json_string_value(json_object_get(e, "message")));
    } else {
      json_t *ev = json_object_get(m, "event");
      json_t *data = json_object_get(ev, "data"), *end = json_object_get(ev, "end");
      const char *o = json_string_value(json_object_get(data, "stdout"));
      const char *e = json_string_value(json_object_get(data, "stderr"));
      if (o)
        emit_b64(s, 0, o);
      if (e)
        emit_b64(s, 1, e);
      if (end) {
        s->ended = 1;
        s->exit_code = (int)json_integer_value(json_object_get(end, "exitCode"));
      }
    }
    json_decref(m);
  }
  memmove(s->p, s->p + at, s->n - at);
  s->n -= at;
}

static size_t stream_cb(char *p, size_t sz, size_t n, void *cls)
{
  struct stream_state *s = cls;
  size_t k = sz * n;
  if (s->n + k > s->cap) {
    size_t cap = (s->n + k) * 2;
    unsigned char *np = realloc(s->p, cap);
    if (!np)
      return 0;
    s->p = np;
    s->cap = cap;
  }
  memcpy(s->p + s->n, p, k);
  s->n += k;
  stream_parse(s);
  return k;
}

int abx_envd_run_stream(int netns_fd, const char *token, const char *user, const char *cwd,
                        const char *script, json_t *envs, long timeout_ms, abx_envd_line_fn fn,
                        void *cls, int *exit_code, char *err, size_t errlen)
{
  err[0] = 0;
  json_t *proc = json_pack("{s:s,s:[s,s]}", "cmd", "/bin/bash", "args", "-c", script);
  if (proc && envs)
    json_object_set(proc, "envs", envs);
  if (proc && cwd && *cwd)
    json_object_set_new(proc, "cwd", json_string(cwd));
  json_t *req = proc ? json_pack("{s:o}", "process", proc) : NULL;
  char *js = req ? json_dumps(req, JSON_COMPACT) : NULL;
  json_decref(req);
  CURL *c = curl_easy_init();
  size_t jn = js ? strlen(js) : 0;
  unsigned char *env = js ? malloc(jn + 5) : NULL;
  struct stream_state *s = calloc(1, sizeof *s);
  if (!js || !c || !env || !s) {
    free(js);
    free(env);
    free(s);
    if (c)
      curl_easy_cleanup(c);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  s->fn = fn;
  s->cls = cls;
  env[0] = 0;
  env[1] = (unsigned char)(jn >> 24);
  env[2] = (unsigned char)(jn >> 16);
  env[3] = (unsigned char)(jn >> 8);
  env[4] = (unsigned char)jn;
  memcpy(env + 5, js, jn);
  free(js);
  char url[96], auth[160], tok[200];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/process.Process/Start", ABX_E2B_ENVD_PORT);
  unsigned char cred[80], b64[120];
  int cn = snprintf((char *)cred, sizeof cred, "%s:", user);
  EVP_EncodeBlock(b64, cred, cn);
  snprintf(auth, sizeof auth, "Authorization: Basic %s", b64);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/connect+json");
  h = curl_slist_append(h, "Connect-Protocol-Version: 1");
  h = curl_slist_append(h, "Expect:");
  h = curl_slist_append(h, auth);
  if (token) {
    snprintf(tok, sizeof tok, "X-Access-Token: %s", token);
    h = curl_slist_append(h, tok);
  }
  int fd = netns_fd;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stream_cb);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, env);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(jn + 5));
  abx_netns_curl(c, &fd);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  free(env);
  for (int k = 0; k < 2; k++)
    if (s->ll[k]) {
      s->line[k][s->ll[k]] = 0;
      fn(cls, k + 1, s->line[k]);
    }
  int ret = -1;
  if (rc != CURLE_OK)
    snprintf(err, errlen, "envd process.Process/Start: %s", curl_easy_strerror(rc));
  else if (status != 200)
    snprintf(err, errlen, "envd process.Process/Start answered %ld", status);
  else if (!s->ended)
    snprintf(err, errlen, "%s", s->err[0] ? s->err : "envd's process stream ended without an end event");
  else {
    *exit_code = s->exit_code;
    ret = 0;
  }
  free(s->p);
  free(s);
  return ret;
}
