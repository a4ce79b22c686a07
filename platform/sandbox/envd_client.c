/*
 * envd_client.c: health probe, /init and process runs against envd inside a sandbox. Contract in
 * envd_client.h. The Connect envelopes and base64 are proto/'s (connect.h, base64.h).
 */
#include "envd_client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "base64.h"
#include "connect.h"
#include "net/net.h"
#include "util/util.h"

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

/* ---- process.Process/Start: one call, its output to a consumer -------------------------------- */

/* A chunk of the process's output as it comes: `stream` 1 stdout, 2 stderr; `bytes` decoded from
 * the event's base64, valid only during the call. */
typedef void (*output_fn)(void *cls, int stream, const unsigned char *bytes, size_t n);

/* One process.Process/Start call: what to run and how the caller wants it bounded. */
struct start_call {
  int netns_fd;
  const char *token;       /* the sandbox's envd access token, or NULL */
  const char *user;        /* envd's Basic auth user */
  const char *cwd;         /* NULL or "": envd's default */
  const char *script;      /* run with /bin/bash -c */
  json_t *envs;            /* borrowed, may be NULL */
  long timeout_ms;         /* the whole call */
  long connect_timeout_ms; /* the connect alone */
  size_t max_body_bytes;   /* more response than this fails the call; 0: no limit */
  int quote_refusal;       /* a non-200 answer's error quotes its first bytes */
};

#define REFUSAL_QUOTE_BYTES 200

/* What the call has seen so far; the Connect decoder frames the envelopes (proto/connect.h). */
struct start_state {
  const struct start_call *call;
  output_fn on_output;
  void *cls;
  CURL *curl;
  struct abx_connect_decoder decoder;
  long status; /* 0 until the first body byte */
  size_t body_bytes;
  char refusal[REFUSAL_QUOTE_BYTES];
  size_t refusal_len;
  int closed;           /* the end-of-stream envelope came: nothing after it counts */
  int ended, exit_code; /* the end event came, with this exitCode */
  char stream_err[256]; /* an error end-of-stream */
};

/* The StartRequest (§4.1) framed as one uncompressed envelope (§2.3); NULL on out of memory. */
static unsigned char *start_request(const struct start_call *call, size_t *len)
{
  json_t *proc = json_pack("{s:s,s:[s,s]}", "cmd", "/bin/bash", "args", "-c", call->script);
  if (proc && call->envs)
    json_object_set(proc, "envs", call->envs);
  if (proc && call->cwd && *call->cwd)
    json_object_set_new(proc, "cwd", json_string(call->cwd));
  json_t *req = proc ? json_pack("{s:o}", "process", proc) : NULL;
  char *js = req ? json_dumps(req, JSON_COMPACT) : NULL;
  json_decref(req);
  if (!js)
    return NULL;
  size_t jn = strlen(js);
  unsigned char *env = malloc(jn + 5);
  if (env) {
    abx_connect_prefix(env, 0, (uint32_t)jn);
    memcpy(env + 5, js, jn);
    *len = jn + 5;
  }
  free(js);
  return env;
}

/* The Connect stream's headers; Basic auth with an empty password names the user (§4.1,
 * users.c). */
static struct curl_slist *start_headers(const struct start_call *call)
{
  char cred[80], b64[ABX_B64_LEN(sizeof cred) + 1], auth[160], tok[200];
  int cn = snprintf(cred, sizeof cred, "%s:", call->user);
  size_t credlen = cn < 0 ? 0 : (size_t)cn < sizeof cred ? (size_t)cn : sizeof cred - 1;
  abx_b64_encode(b64, cred, credlen, ABX_B64_STD);
  snprintf(auth, sizeof auth, "Authorization: Basic %s", b64);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/connect+json");
  h = curl_slist_append(h, "Connect-Protocol-Version: 1");
  h = curl_slist_append(h, "Expect:");
  h = curl_slist_append(h, auth);
  if (call->token) {
    snprintf(tok, sizeof tok, "X-Access-Token: %s", call->token);
    h = curl_slist_append(h, tok);
  }
  return h;
}

/* One stdout or stderr field (base64) of a data event, decoded, to the consumer. */
static void give_output(struct start_state *s, int stream, const char *b64)
{
  size_t n;
  unsigned char *d = abx_b64_decode_alloc(b64, 0, &n);
  if (d && n > 0)
    s->on_output(s->cls, stream, d, n);
  free(d);
}

/* One event message (§4.3): data goes to the consumer, end keeps the exit code. */
static void take_event(struct start_state *s, json_t *m)
{
  json_t *ev = json_object_get(m, "event");
  json_t *data = json_object_get(ev, "data"), *end = json_object_get(ev, "end");
  const char *o = json_string_value(json_object_get(data, "stdout"));
  const char *e = json_string_value(json_object_get(data, "stderr"));
  if (o)
    give_output(s, 1, o);
  if (e)
    give_output(s, 2, e);
  if (end) {
    s->ended = 1;
    s->exit_code = (int)json_integer_value(json_object_get(end, "exitCode"));
  }
}

/* abx_connect_msg_fn: one envelope of the stream. A payload that is not JSON is skipped. */
static int take_message(void *ud, unsigned flags, const char *payload, size_t len)
{
  struct start_state *s = ud;
  if (s->closed)
    return 0;
  json_t *m = json_loadb(payload, len, 0, NULL);
  if (!m)
    return 0;
  if (flags & ABX_CONNECT_FLAG_END) { /* {} or {"error":{code,message}} (§2.3) */
    s->closed = 1;
    json_t *e = json_object_get(m, "error");
    if (e && !s->ended)
      snprintf(s->stream_err, sizeof s->stream_err, "envd: %s: %s",
               json_string_value(json_object_get(e, "code")),
               json_string_value(json_object_get(e, "message")));
  } else {
    take_event(s, m);
  }
  json_decref(m);
  return 0;
}

/* CURLOPT_WRITEFUNCTION: a 200 answer is decoded as it comes; another keeps its first bytes. */
static size_t take_body(char *p, size_t sz, size_t n, void *cls)
{
  struct start_state *s = cls;
  size_t k = sz * n;
  s->body_bytes += k;
  if (s->call->max_body_bytes && s->body_bytes > s->call->max_body_bytes)
    return 0;
  if (!s->status)
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
  if (s->status != 200) {
    size_t keep = sizeof s->refusal - s->refusal_len;
    keep = keep < k ? keep : k;
    memcpy(s->refusal + s->refusal_len, p, keep);
    s->refusal_len += keep;
    return k;
  }
  return abx_connect_feed(&s->decoder, p, k, take_message, s) == ABX_CONNECT_OK ? k : 0;
}

/* The call's outcome: 0 with *exit_code once the end event came, else -1 with err. */
static int start_outcome(struct start_state *s, CURLcode rc, long status, int *exit_code, char *err,
                         size_t errlen)
{
  if (rc != CURLE_OK)
    snprintf(err, errlen, "envd process.Process/Start: %s",
             s->decoder.dead ? s->decoder.error : curl_easy_strerror(rc));
  else if (status != 200 && s->call->quote_refusal)
    snprintf(err, errlen, "envd process.Process/Start answered %ld: %.*s", status,
             (int)s->refusal_len, s->refusal);
  else if (status != 200)
    snprintf(err, errlen, "envd process.Process/Start answered %ld", status);
  else if (!s->ended)
    snprintf(err, errlen, "%s",
             s->stream_err[0] ? s->stream_err : "envd's process stream ended without an end event");
  else {
    *exit_code = s->exit_code;
    return 0;
  }
  return -1;
}

/* Runs call->script through process.Process/Start (a Connect server stream in the JSON codec,
 * §2.1, §2.3, §4.1-4.3) and waits for the stream's end; each chunk of output goes to on_output
 * as it comes, on this thread. 0 with *exit_code (the end event's exitCode), or -1 with err:
 * envd unreachable or refusing, an error end-of-stream, no end event, a malformed envelope. */
static int start_process(const struct start_call *call, output_fn on_output, void *cls,
                         int *exit_code, char *err, size_t errlen)
{
  size_t body_len = 0;
  unsigned char *body = start_request(call, &body_len);
  struct start_state *s = calloc(1, sizeof *s);
  CURL *c = curl_easy_init();
  if (!body || !s || !c) {
    free(body);
    free(s);
    if (c)
      curl_easy_cleanup(c);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  *s = (struct start_state){.call = call, .on_output = on_output, .cls = cls, .curl = c};
  abx_connect_decoder_init(&s->decoder);
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/process.Process/Start", ABX_E2B_ENVD_PORT);
  struct curl_slist *h = start_headers(call);
  int fd = call->netns_fd;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, call->timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, call->connect_timeout_ms);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
  abx_netns_curl(c, &fd);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  free(body);
  int ret = start_outcome(s, rc, status, exit_code, err, errlen);
  abx_connect_decoder_free(&s->decoder);
  free(s);
  return ret;
}

/* ---- a run with the output's tail ------------------------------------------------------------- */

#define RUN_BODY_MAX (8u * 1024u * 1024u) /* more output than this: the call fails */

struct tail {
  char *out; /* NUL-terminated: the last outlen - 1 bytes of the output */
  size_t outlen;
};

/* output_fn: appends the bytes to the tail, keeping its last bytes. */
static void tail_append(void *cls, int stream, const unsigned char *d, size_t add)
{
  struct tail *t = cls;
  (void)stream; /* stdout and stderr interleave in one tail */
  if (t->outlen < 2)
    return;
  char *out = t->out;
  size_t have = strlen(out), room = t->outlen - 1;
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

int abx_envd_run(int netns_fd, const char *token, const char *user, const char *script,
                 json_t *envs, long timeout_ms, int *exit_code, char *out, size_t outlen, char *err,
                 size_t errlen)
{
  if (outlen)
    out[0] = 0;
  err[0] = 0;
  struct start_call call = {.netns_fd = netns_fd,
                            .token = token,
                            .user = user,
                            .script = script,
                            .envs = envs,
                            .timeout_ms = timeout_ms,
                            .connect_timeout_ms = timeout_ms,
                            .max_body_bytes = RUN_BODY_MAX,
                            .quote_refusal = 1};
  struct tail t = {out, outlen};
  return start_process(&call, tail_append, &t, exit_code, err, errlen);
}

/* ---- streamed runs --------------------------------------------------------------------------- */

#define LINE_MAX_BYTES 4096

struct lines {
  char line[2][LINE_MAX_BYTES + 1]; /* stdout's and stderr's line so far */
  size_t ll[2];
  abx_envd_line_fn fn;
  void *cls;
};

/* output_fn: cuts the bytes into lines (4 KiB pieces at most) and gives each to the caller. */
static void emit(void *cls, int stream, const unsigned char *d, size_t n)
{
  struct lines *s = cls;
  int k = stream - 1;
  for (size_t i = 0; i < n; i++) {
    if (d[i] == '\n' || s->ll[k] == LINE_MAX_BYTES) {
      s->line[k][s->ll[k]] = 0;
      s->fn(s->cls, stream, s->line[k]);
      s->ll[k] = 0;
      if (d[i] == '\n')
        continue;
    }
    s->line[k][s->ll[k]++] = (char)d[i];
  }
}

int abx_envd_run_stream(int netns_fd, const char *token, const char *user, const char *cwd,
                        const char *script, json_t *envs, long timeout_ms, abx_envd_line_fn fn,
                        void *cls, int *exit_code, char *err, size_t errlen)
{
  err[0] = 0;
  struct lines *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  s->fn = fn;
  s->cls = cls;
  struct start_call call = {.netns_fd = netns_fd,
                            .token = token,
                            .user = user,
                            .cwd = cwd,
                            .script = script,
                            .envs = envs,
                            .timeout_ms = timeout_ms,
                            .connect_timeout_ms = 10000L};
  int ret = start_process(&call, emit, s, exit_code, err, errlen);
  for (int k = 0; k < 2; k++)
    if (s->ll[k]) { /* a last line without its newline */
      s->line[k][s->ll[k]] = 0;
      fn(cls, k + 1, s->line[k]);
    }
  free(s);
  return ret;
}
