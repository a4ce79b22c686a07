/*
 * floor_http.c: the HTTP exchanges of the libcurl floor (floor.h). Wire facts: see floor.h.
 */
#include "floor.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char FLOOR_LINE[65] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_\n";

void fbuf_add(struct fbuf *b, const void *p, size_t n)
{
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
      fprintf(stderr, "floor: out of memory (%zu bytes)\n", cap);
      exit(3);
    }
    b->data = d;
    b->cap = cap;
  }
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0;
}

void fbuf_free(struct fbuf *b)
{
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

double floor_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

void fclient_open(struct fclient *c)
{
  c->url = getenv("BENCH_URL");
  c->key = getenv("BENCH_KEY");
  if (!c->url || !c->key) {
    fprintf(stderr,
            "floor: BENCH_URL and BENCH_KEY must be set (run through tests/bench/bench.py)\n");
    exit(2);
  }
  c->curl = curl_easy_init();
  if (!c->curl) {
    fprintf(stderr, "floor: curl_easy_init failed\n");
    exit(3);
  }
}

void fclient_close(struct fclient *c)
{
  curl_easy_cleanup(c->curl);
  c->curl = NULL;
}

static size_t to_buf(char *p, size_t sz, size_t n, void *ud)
{
  fbuf_add(ud, p, sz * n);
  return sz * n;
}

/* One request on c's handle: body (n bytes, NULL for none), headers, answer body into out;
 * returns the HTTP status or -1 on a transport error. */
static long exchange(struct fclient *c, const char *method, const char *url, struct curl_slist *h,
                     const void *body, size_t n, curl_write_callback sink, void *ud)
{
  CURL *e = c->curl;
  curl_easy_reset(e);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, ud);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  if (body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
  } else if (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
  }
  CURLcode rc = curl_easy_perform(e);
  if (rc != CURLE_OK) {
    fprintf(stderr, "floor: %s %s: %s\n", method, url, curl_easy_strerror(rc));
    return -1;
  }
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

int floor_create(struct fclient *c, int ttl_s, struct fsandbox *s)
{
  char url[512], key[512], body[128];
  snprintf(url, sizeof url, "%s/sandboxes", c->url);
  snprintf(key, sizeof key, "X-API-Key: %s", c->key);
  snprintf(body, sizeof body, "{\"templateID\":\"base\",\"timeout\":%d,\"secure\":true}", ttl_s);
  struct curl_slist *h = curl_slist_append(NULL, key);
  h = curl_slist_append(h, "Content-Type: application/json");
  struct fbuf out = {0};
  long st = exchange(c, "POST", url, h, body, strlen(body), to_buf, &out);
  curl_slist_free_all(h);
  int rc = -1;
  json_t *j = st == 201 ? json_loadb(out.data, out.len, 0, NULL) : NULL;
  const char *id = json_string_value(json_object_get(j, "sandboxID"));
  const char *tok = json_string_value(json_object_get(j, "envdAccessToken"));
  if (id && strlen(id) < sizeof s->id && (!tok || strlen(tok) < sizeof s->token)) {
    snprintf(s->id, sizeof s->id, "%s", id);
    snprintf(s->token, sizeof s->token, "%s", tok ? tok : "");
    rc = 0;
  } else {
    fprintf(stderr, "floor: POST /sandboxes answered %ld: %.300s\n", st, out.data ? out.data : "");
  }
  json_decref(j);
  fbuf_free(&out);
  return rc;
}

int floor_kill(struct fclient *c, const struct fsandbox *s)
{
  char url[512], key[512];
  snprintf(url, sizeof url, "%s/sandboxes/%s", c->url, s->id);
  snprintf(key, sizeof key, "X-API-Key: %s", c->key);
  struct curl_slist *h = curl_slist_append(NULL, key);
  struct fbuf out = {0};
  long st = exchange(c, "DELETE", url, h, NULL, 0, to_buf, &out);
  curl_slist_free_all(h);
  fbuf_free(&out);
  if (st != 204)
    fprintf(stderr, "floor: DELETE /sandboxes/%s answered %ld\n", s->id, st);
  return st == 204 ? 0 : -1;
}

/* The envd headers of every call: routing, access token, user (floor.h). */
static struct curl_slist *envd_headers(const struct fsandbox *s, const char *content_type)
{
  char line[512];
  struct curl_slist *h = NULL;
  snprintf(line, sizeof line, "E2b-Sandbox-Id: %s", s->id);
  h = curl_slist_append(h, line);
  h = curl_slist_append(h, "E2b-Sandbox-Port: 49983");
  if (s->token[0]) {
    snprintf(line, sizeof line, "X-Access-Token: %s", s->token);
    h = curl_slist_append(h, line);
  }
  h = curl_slist_append(h, "Authorization: Basic dXNlcjo="); /* base64("user:") */
  snprintf(line, sizeof line, "Content-Type: %s", content_type);
  h = curl_slist_append(h, line);
  return h;
}

/* ---- process.Process/Start ------------------------------------------------------------------ */

static signed char B64[256];

void floor_init(void)
{
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  memset(B64, -1, sizeof B64);
  for (int i = 0; i < 64; i++)
    B64[(unsigned char)a[i]] = (signed char)i;
}

/* Decodes standard base64 (with padding) into dst; returns the byte count or -1. */
static long b64_decode(const char *s, size_t n, unsigned char *dst)
{
  if (n % 4)
    return -1;
  size_t o = 0;
  for (size_t i = 0; i < n; i += 4) {
    int a = B64[(unsigned char)s[i]], b = B64[(unsigned char)s[i + 1]];
    int pc = s[i + 2] == '=', pd = s[i + 3] == '=';
    int cc = pc ? 0 : B64[(unsigned char)s[i + 2]], d = pd ? 0 : B64[(unsigned char)s[i + 3]];
    if (a < 0 || b < 0 || cc < 0 || d < 0 || (pc && !pd) || ((pc || pd) && i + 4 != n))
      return -1;
    uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)cc << 6 | (uint32_t)d;
    dst[o++] = (unsigned char)(v >> 16);
    if (!pc)
      dst[o++] = (unsigned char)(v >> 8);
    if (!pd)
      dst[o++] = (unsigned char)v;
  }
  return (long)o;
}

struct stream {
  struct fbuf in;  /* bytes not yet parsed into envelopes */
  struct fbuf dec; /* scratch for one decoded chunk */
  struct fresult *r;
  int keep, check, failed, done;
};

/* Takes one decoded stdout (k = 0) or stderr (k = 1) chunk of `sl` base64 characters at `s`. */
static int on_chunk(struct stream *st, int k, const char *s, size_t sl)
{
  if (st->dec.cap < sl + 1) { /* scratch large enough for the decoded chunk */
    free(st->dec.data);
    st->dec.data = malloc(sl + 1);
    if (!st->dec.data) {
      fprintf(stderr, "floor: out of memory\n");
      exit(3);
    }
    st->dec.cap = sl + 1;
  }
  long got = b64_decode(s, sl, (unsigned char *)st->dec.data);
  if (got < 0) {
    fprintf(stderr, "floor: bad base64 in a data event\n");
    return -1;
  }
  if (k) {
    st->r->err_bytes += (size_t)got;
    return 0;
  }
  if (st->check && got > 0 && st->r->bad_at < 0 &&
      st->dec.data[0] != FLOOR_LINE[st->r->out_bytes % 64])
    st->r->bad_at = (long long)st->r->out_bytes;
  if (st->keep)
    fbuf_add(&st->r->out, st->dec.data, (size_t)got);
  st->r->out_bytes += (size_t)got;
  return 0;
}

/* The data events envd writes compactly, {"event":{"data":{"stdout":"<base64>"}}}, are taken
 * without a JSON parser (a floor does the least a correct client must: base64 has no escapes, so
 * the string ends at the first quote); anything else goes through jansson. 1: taken, 0: not this
 * shape, -1: protocol error. */
static int fast_data(struct stream *st, const char *p, size_t n)
{
  static const char pre[] = "{\"event\":{\"data\":{\"std";
  const size_t pl = sizeof pre - 1, tail = 4; /* "}}} after the closing quote */
  if (n < pl + 10 || memcmp(p, pre, pl) != 0)
    return 0;
  int k;
  if (memcmp(p + pl, "out\":\"", 6) == 0)
    k = 0;
  else if (memcmp(p + pl, "err\":\"", 6) == 0)
    k = 1;
  else
    return 0;
  const char *s = p + pl + 6;
  size_t sl = n - (pl + 6) - tail;
  if (memcmp(s + sl, "\"}}}", tail) != 0 || memchr(s, '"', sl))
    return 0;
  return on_chunk(st, k, s, sl) < 0 ? -1 : 1;
}

/* Handles one message of the stream; returns -1 on a protocol error. */
static int on_message(struct stream *st, const char *p, size_t n, int end_stream)
{
  if (!end_stream) {
    int f = fast_data(st, p, n);
    if (f)
      return f < 0 ? -1 : 0;
  }
  json_error_t jerr;
  json_t *j = json_loadb(p, n, 0, &jerr);
  if (!j) {
    fprintf(stderr, "floor: stream message is not JSON: %s\n", jerr.text);
    return -1;
  }
  int rc = 0;
  if (end_stream) {
    if (json_object_get(j, "error")) {
      char *txt = json_dumps(j, 0);
      fprintf(stderr, "floor: end-stream error %s\n", txt ? txt : "?");
      free(txt);
      rc = -1;
    }
    st->done = 1;
    json_decref(j);
    return rc;
  }
  json_t *ev = json_object_get(j, "event");
  json_t *data = json_object_get(ev, "data"), *end = json_object_get(ev, "end");
  for (int k = 0; data && k < 2; k++) {
    json_t *v = json_object_get(data, k ? "stderr" : "stdout");
    if (!v)
      continue;
    const char *s = json_string_value(v);
    if (!s || on_chunk(st, k, s, json_string_length(v)) < 0) {
      rc = -1;
      break;
    }
  }
  if (end) {
    st->r->ended = 1;
    st->r->exit_code = (int)json_integer_value(json_object_get(end, "exitCode"));
  }
  json_decref(j);
  return rc;
}

static size_t on_stream(char *p, size_t sz, size_t n, void *ud)
{
  struct stream *st = ud;
  fbuf_add(&st->in, p, sz * n);
  size_t off = 0;
  while (!st->failed && st->in.len - off >= 5) {
    const unsigned char *e = (const unsigned char *)st->in.data + off;
    uint32_t len = (uint32_t)e[1] << 24 | (uint32_t)e[2] << 16 | (uint32_t)e[3] << 8 | e[4];
    if (e[0] & ~2u) {
      fprintf(stderr, "floor: envelope flags 0x%02x\n", e[0]);
      st->failed = 1;
      break;
    }
    if (st->in.len - off - 5 < len)
      break;
    if (on_message(st, (const char *)e + 5, len, e[0] & 2) < 0)
      st->failed = 1;
    off += 5 + len;
  }
  memmove(st->in.data, st->in.data + off, st->in.len - off);
  st->in.len -= off;
  return st->failed ? 0 : sz * n; /* 0 aborts the transfer */
}

int floor_run(struct fclient *c, const struct fsandbox *s, const char *cmd, int timeout_s, int keep,
              int check_pattern, struct fresult *r)
{
  memset(r, 0, sizeof *r);
  r->bad_at = -1;
  json_t *msg = json_pack("{s:{s:s,s:[s,s,s],s:{}},s:b}", "process", "cmd", "/bin/bash", "args",
                          "-l", "-c", cmd, "envs", "stdin", 0);
  char *m = json_dumps(msg, JSON_COMPACT);
  json_decref(msg);
  size_t ml = strlen(m);
  unsigned char *body = malloc(ml + 5);
  body[0] = 0;
  body[1] = (unsigned char)(ml >> 24);
  body[2] = (unsigned char)(ml >> 16);
  body[3] = (unsigned char)(ml >> 8);
  body[4] = (unsigned char)ml;
  memcpy(body + 5, m, ml);
  free(m);
  char url[512], line[64];
  snprintf(url, sizeof url, "%s/process.Process/Start", c->url);
  struct curl_slist *h = envd_headers(s, "application/connect+json");
  h = curl_slist_append(h, "Connect-Protocol-Version: 1");
  h = curl_slist_append(h, "Keepalive-Ping-Interval: 50");
  snprintf(line, sizeof line, "Connect-Timeout-Ms: %d", timeout_s * 1000);
  h = curl_slist_append(h, line);
  struct stream st = {.r = r, .keep = keep, .check = check_pattern};
  long status = exchange(c, "POST", url, h, body, ml + 5, on_stream, &st);
  curl_slist_free_all(h);
  free(body);
  int rc = 0;
  if (status != 200 || st.failed || !st.done || st.in.len || !r->ended) {
    fprintf(
        stderr,
        "floor: Start %s: status %ld, failed %d, end-stream %d, %zu trailing bytes, end event %d\n",
        cmd, status, st.failed, st.done, st.in.len, r->ended);
    rc = -1;
  }
  fbuf_free(&st.in);
  fbuf_free(&st.dec);
  return rc;
}

void fresult_free(struct fresult *r)
{
  fbuf_free(&r->out);
}

/* ---- /files and unary calls ----------------------------------------------------------------- */

static void files_url(struct fclient *c, const char *path, char *url, size_t n)
{
  char *q = curl_easy_escape(c->curl, path, 0);
  snprintf(url, n, "%s/files?path=%s&username=user", c->url, q);
  curl_free(q);
}

int floor_write(struct fclient *c, const struct fsandbox *s, const char *path, const void *data,
                size_t n)
{
  char url[1024];
  files_url(c, path, url, sizeof url);
  struct curl_slist *h = envd_headers(s, "application/octet-stream");
  h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip (as the engine sends) */
  struct fbuf out = {0};
  long st = exchange(c, "POST", url, h, data, n, to_buf, &out);
  curl_slist_free_all(h);
  if (st != 200)
    fprintf(stderr, "floor: POST /files %s answered %ld: %.200s\n", path, st,
            out.data ? out.data : "");
  fbuf_free(&out);
  return st == 200 ? 0 : -1;
}

int floor_read(struct fclient *c, const struct fsandbox *s, const char *path, struct fbuf *out)
{
  char url[1024];
  files_url(c, path, url, sizeof url);
  struct curl_slist *h = envd_headers(s, "application/octet-stream");
  out->len = 0;
  long st = exchange(c, "GET", url, h, NULL, 0, to_buf, out);
  curl_slist_free_all(h);
  if (st != 200)
    fprintf(stderr, "floor: GET /files %s answered %ld\n", path, st);
  return st == 200 ? 0 : -1;
}

int floor_unary(struct fclient *c, const struct fsandbox *s, const char *rpc, const char *json,
                struct fbuf *out)
{
  char url[512];
  snprintf(url, sizeof url, "%s/%s", c->url, rpc);
  struct curl_slist *h = envd_headers(s, "application/json");
  h = curl_slist_append(h, "Connect-Protocol-Version: 1");
  out->len = 0;
  long st = exchange(c, "POST", url, h, json, strlen(json), to_buf, out);
  curl_slist_free_all(h);
  if (st != 200)
    fprintf(stderr, "floor: %s answered %ld: %.200s\n", rpc, st, out->data ? out->data : "");
  return st == 200 ? 0 : -1;
}
