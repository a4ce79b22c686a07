/*
 * http.c: libcurl transfers. See http.h.
 */
#include "http.h"
#include "clock.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static char g_ca_file[ABX_HTTP_MAX_CA_PATH]; /* "" = curl's default bundle */

const char *abx_http_ca_file(void)
{
  return g_ca_file[0] ? g_ca_file : NULL;
}

int abx_http_set_ca_file(const char *path)
{
  if (!path) {
    g_ca_file[0] = '\0';
    return 0;
  }
  if (strlen(path) >= sizeof g_ca_file)
    return -1;
  memcpy(g_ca_file, path, strlen(path) + 1);
  return 0;
}

/* Prefaults the next ABX_POPULATE_MIN bytes of 'b' (at most up to its capacity) once writes
 * reach them: a 100 MiB body faulted 25,000 times. Never ahead of the data by more than that, so
 * an announced size that never arrives costs no memory. */
static void buf_prefault(struct abx_buf *b, size_t upto)
{
  if (upto <= b->faulted || b->cap < ABX_POPULATE_MIN)
    return;
  size_t from = b->len > b->faulted ? b->len : b->faulted;
  size_t to = upto + ABX_POPULATE_MIN < b->cap ? upto + ABX_POPULATE_MIN : b->cap;
  if (to > from)
    abx_prefault(b->data + from, to - from);
  b->faulted = to;
}

static int buf_append(struct abx_buf *b, const char *data, size_t len)
{
  if (b->len + len + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + len + 1)
      cap *= 2;
    char *n = realloc(b->data, cap);
    if (!n)
      return -1;
    b->data = n;
    b->cap = cap;
  }
  buf_prefault(b, b->len + len + 1);
  memcpy(b->data + b->len, data, len);
  b->len += len;
  b->data[b->len] = '\0';
  return 0;
}

void abx_prefault(void *p, size_t n)
{
  if (!p || n < ABX_POPULATE_MIN)
    return;
  uintptr_t page = 4096, start = ((uintptr_t)p + page - 1) & ~(page - 1);
  uintptr_t end = ((uintptr_t)p + n) & ~(page - 1);
  if (end > start)
    (void)madvise((void *)start, end - start, 23 /* MADV_POPULATE_WRITE */);
}

/* Grows 'b' to hold at least 'want' bytes and a NUL (a body whose size was announced). */
static void buf_reserve(struct abx_buf *b, size_t want)
{
  if (want + 1 <= b->cap)
    return;
  char *n = realloc(b->data, want + 1);
  if (n) {
    b->data = n;
    b->cap = want + 1;
  }
}

/* Whether the body of a response with 'status' is bounded by max_body: plain transfers, any
 * non-200 answer, and raw streams (Connect and NDJSON bodies are bounded per message). */
static int body_bounded(const struct abx_transfer *t, long status)
{
  return !t->streaming || status != 200 || t->streaming == ABX_HTTP_RAW;
}

/* The bound on a body with 'status': max_body, except that the error body of a raw stream (whose
 * max_body is often unlimited) is held in memory, so it gets ABX_HTTP_ERROR_BODY at most. */
static size_t body_limit(const struct abx_transfer *t, long status)
{
  if (t->streaming == ABX_HTTP_RAW && status != 200 && t->max_body > ABX_HTTP_ERROR_BODY)
    return ABX_HTTP_ERROR_BODY;
  return t->max_body;
}

/* At the end of the final headers: a Content-Length over max_body fails the transfer before any
 * byte of the body is read; an announced size within it sizes a plain body's buffer once.
 * Returns 0 when the transfer must stop. */
static int check_length(struct abx_transfer *t, long status)
{
  const char *cl = abx_transfer_header(t, "content-length");
  if (!cl || t->nobody || status == 204 || status == 304 || !body_bounded(t, status))
    return 1;
  char *end;
  unsigned long long n = strtoull(cl, &end, 10);
  if (end == cl)
    return 1; /* not a number: curl itself rejects it */
  if (n > body_limit(t, status)) {
    t->failure = ABX_HTTP_EOVERFLOW;
    snprintf(t->reason, sizeof t->reason,
             "response body exceeds %zu bytes (Content-Length announces %llu)",
             body_limit(t, status), n);
    return 0;
  }
  if (!t->streaming || status != 200)
    buf_reserve(&t->body, (size_t)n);
  return 1;
}

static void clear_headers(struct abx_transfer *t)
{
  for (size_t i = 0; i < t->nheaders; i++) {
    free(t->headers[i].name);
    free(t->headers[i].value);
  }
  free(t->headers);
  t->headers = NULL;
  t->nheaders = 0;
  t->headers_bytes = 0;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
  struct abx_transfer *t = ud;
  size_t len = size * nmemb;
  t->headers_bytes += len;
  if (t->headers_bytes > ABX_HTTP_MAX_HEADERS) {
    t->failure = ABX_HTTP_EOVERFLOW;
    snprintf(t->reason, sizeof t->reason, "response headers exceed %u bytes", ABX_HTTP_MAX_HEADERS);
    return 0;
  }
  if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new response: drop 1xx headers */
    clear_headers(t);
    t->headers_bytes = len;
    return len;
  }
  if (len <= 2 && (data[0] == '\r' || data[0] == '\n')) {
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200) {
      if (!check_length(t, code))
        return 0;
      t->status = code;
      t->headers_done = 1;
      t->headers_ms = abx_now_ms();
      t->dirty = 1;
    }
    return len;
  }
  const char *colon = memchr(data, ':', len);
  if (!colon)
    return len;
  size_t nlen = (size_t)(colon - data);
  const char *v = colon + 1, *end = data + len;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
    end--;
  struct abx_http_header *h = realloc(t->headers, (t->nheaders + 1) * sizeof *h);
  if (!h)
    return 0;
  t->headers = h;
  char *name = strndup(data, nlen), *value = strndup(v, (size_t)(end - v));
  if (!name || !value) {
    free(name);
    free(value);
    return 0;
  }
  for (char *p = name; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  h[t->nheaders].name = name;
  h[t->nheaders].value = value;
  t->nheaders++;
  return len;
}

size_t abx_transfer_held(const struct abx_transfer *t)
{
  return t->q_bytes + t->decoder.payload_cap + t->ndjson.cap;
}

/* Raises t->held_peak to what the stream holds now. */
static void note_held(struct abx_transfer *t)
{
  size_t held = abx_transfer_held(t);
  if (held > t->held_peak)
    t->held_peak = held;
}

/* Queues one stream message (an envelope's payload or an NDJSON line). */
static int enqueue(struct abx_transfer *t, unsigned flags, size_t seq, const char *payload,
                   size_t len)
{
  struct abx_stream_msg *m = malloc(sizeof *m + len + 1);
  if (!m)
    return -1;
  m->next = NULL;
  m->flags = flags;
  m->seq = seq;
  m->len = len;
  memcpy(m->data, payload, len);
  m->data[len] = '\0';
  if (t->q_tail)
    t->q_tail->next = m;
  else
    t->q_head = m;
  t->q_tail = m;
  t->q_bytes += len;
  t->dirty = 1;
  note_held(t); /* with the envelope's buffer the payload was copied from: both exist now */
  return 0;
}

static int on_message(void *ud, unsigned flags, const char *payload, size_t len)
{
  struct abx_transfer *t = ud;
  if (enqueue(t, flags, 0, payload, len) != 0)
    return -1;
  if (flags & ABX_CONNECT_FLAG_END)
    t->saw_end = 1;
  return 0;
}

/* An NDJSON line: empty ones carry nothing and are dropped (their number still counts). */
static int on_line(void *ud, const struct abx_ndjson_line *line)
{
  if (line->len == 0)
    return 0;
  return enqueue(ud, 0, line->number, line->data, line->len);
}

/* Enforces headers_timeout_ms and body_timeout_ms; curl calls it at least once a second, also
 * while nothing arrives. Non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK). */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
  struct abx_transfer *t = ud;
  double now = abx_now_ms();
  if (!t->headers_done && t->headers_timeout_ms > 0 &&
      now - t->started_ms > (double)t->headers_timeout_ms) {
    t->failure = ABX_HTTP_ETIMEOUT;
    snprintf(t->reason, sizeof t->reason, "no response headers within %ld ms",
             t->headers_timeout_ms);
    return 1;
  }
  if (t->headers_done && t->body_timeout_ms > 0 &&
      now - t->headers_ms > (double)t->body_timeout_ms) {
    t->failure = ABX_HTTP_ETIMEOUT;
    snprintf(t->reason, sizeof t->reason, "response body not complete within %ld ms of its headers",
             t->body_timeout_ms);
    return 1;
  }
  return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
  struct abx_transfer *t = ud;
  size_t len = size * nmemb;
  if (t->streaming && t->status == 200) {
    if (t->q_bytes > ABX_HTTP_STREAM_QUEUE) {
      t->paused = 1; /* curl hands the same bytes over again after unpausing */
      return CURL_WRITEFUNC_PAUSE;
    }
    if (t->streaming == ABX_HTTP_RAW) {
      if (t->raw_bytes + len > t->max_body) {
        t->failure = ABX_HTTP_EOVERFLOW;
        snprintf(t->reason, sizeof t->reason, "response body exceeds %zu bytes", t->max_body);
        return 0;
      }
      if (enqueue(t, 0, 0, data, len) != 0) {
        t->failure = ABX_HTTP_EOVERFLOW;
        snprintf(t->reason, sizeof t->reason, "out of memory queueing a %zu-byte chunk", len);
        return 0;
      }
      t->raw_bytes += len;
      return len;
    }
    if (t->streaming == ABX_HTTP_NDJSON) {
      if (abx_ndjson_feed(&t->ndjson, data, len, on_line, t) != ABX_NDJSON_OK) {
        t->failure = ABX_HTTP_EPROTO;
        snprintf(t->reason, sizeof t->reason, "malformed NDJSON stream: %s", t->ndjson.error);
        return 0;
      }
      note_held(t); /* a line split across chunks stays in the splitter's buffer */
      return len;
    }
    if (t->saw_end)
      return len; /* bytes after the end-of-stream envelope are ignored */
    if (abx_connect_feed(&t->decoder, data, len, on_message, t) != ABX_CONNECT_OK) {
      t->failure = ABX_HTTP_EPROTO;
      snprintf(t->reason, sizeof t->reason, "malformed Connect stream: %s", t->decoder.error);
      return 0;
    }
    note_held(t); /* an envelope split across chunks stays in the decoder's buffer */
    return len;
  }
  if (t->body.len + len > body_limit(t, t->status)) {
    t->failure = ABX_HTTP_EOVERFLOW;
    snprintf(t->reason, sizeof t->reason, "response body exceeds %zu bytes",
             body_limit(t, t->status));
    return 0;
  }
  if (buf_append(&t->body, data, len) != 0) {
    t->failure = ABX_HTTP_EOVERFLOW;
    snprintf(t->reason, sizeof t->reason, "out of memory for a %zu-byte response body",
             t->body.len + len);
    return 0;
  }
  t->dirty = 1;
  return len;
}

/* CURLOPT_READFUNCTION for a body read as it goes. */
static size_t on_read(char *buf, size_t size, size_t nitems, void *ud)
{
  struct abx_transfer *t = ud;
  size_t n = t->body_read(t->body_cookie, buf, size * nitems, t->reason, sizeof t->reason);
  if (n == ABX_HTTP_READ_ERROR) {
    t->failure = ABX_HTTP_ESOURCE;
    return CURL_READFUNC_ABORT;
  }
  return n;
}

/* The request's headers (each "Name: value", plus "Expect:" against curl's 100-continue round
 * trip) and its connect_to override, kept in t for abx_transfer_free. Returns 0, or -1 when out
 * of memory. */
static int set_headers(struct abx_transfer *t, const struct abx_http_request *req)
{
  CURL *e = t->easy;
  if (req->connect_to) { /* "::HOST:PORT": any host and port of the URL connect there */
    char entry[512];
    snprintf(entry, sizeof entry, "::%s", req->connect_to);
    t->connect_to = curl_slist_append(NULL, entry);
    if (!t->connect_to)
      return -1;
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, t->connect_to);
  }
  struct curl_slist *h = NULL;
  for (const char *const *p = req->headers; p && *p; p++) {
    struct curl_slist *n = curl_slist_append(h, *p);
    if (!n)
      return -1;
    h = n;
  }
  struct curl_slist *n = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
  if (!n)
    return -1;
  t->req_headers = n;
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->req_headers);
  return 0;
}

/* The request's body: read as it goes (body_read), borrowed, or copied into t. Returns 0, or -1
 * when out of memory. */
static int set_body(struct abx_transfer *t, const struct abx_http_request *req)
{
  CURL *e = t->easy;
  if (req->body_read) {
    t->body_read = req->body_read;
    t->body_cookie = req->body_cookie;
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(e, CURLOPT_READDATA, t);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_size);
  } else if (req->body && req->body_borrowed) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
  } else if (req->body) {
    t->req_body = malloc(req->body_len ? req->body_len : 1);
    if (!t->req_body)
      return -1;
    memcpy(t->req_body, req->body, req->body_len);
    t->req_body_len = req->body_len;
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->req_body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)t->req_body_len);
  }
  return 0;
}

/* The buffer size for the kind of transfer, and the method. */
static void set_method(struct abx_transfer *t, const struct abx_http_request *req)
{
  CURL *e = t->easy;
  /* Fewer, larger reads for bodies collected whole or read in pieces: a 100 MiB files:read took
   * a fifth less engine CPU (task-clock, 6 runs A/B, issue 14). Not for Connect and NDJSON
   * streams: curl 7.88 keeps the buffer per handle, and a run may hold thousands of streams. */
  if (req->streaming == ABX_HTTP_RAW || req->streaming == ABX_HTTP_PLAIN)
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024L);
  if (strcmp(req->method, "GET") == 0 && !req->body && !req->body_read)
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  else if (strcmp(req->method, "HEAD") == 0) {
    t->nobody = 1;
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
}

struct abx_transfer *abx_transfer_new(const struct abx_http_request *req)
{
  struct abx_transfer *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->easy = curl_easy_init();
  if (!t->easy)
    goto fail;
  t->max_body = req->max_body ? req->max_body : 64u * 1024u * 1024u;
  t->streaming = req->streaming;
  abx_connect_decoder_init(&t->decoder);
  abx_ndjson_init(&t->ndjson, req->max_line);
  t->headers_timeout_ms = req->headers_timeout_ms;
  t->body_timeout_ms = req->body_timeout_ms;
  t->started_ms = abx_now_ms();
  CURL *e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, req->url);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)t);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 15000L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, req->timeout_ms > 0 ? req->timeout_ms : 0L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_USERAGENT, "abxlua/" ABX_VERSION);
  if (g_ca_file[0])
    curl_easy_setopt(e, CURLOPT_CAINFO, g_ca_file);
  if (t->headers_timeout_ms > 0 || t->body_timeout_ms > 0) {
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, t);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  }
  if (req->fresh_connect)
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
  if (set_headers(t, req) != 0 || set_body(t, req) != 0)
    goto fail;
  set_method(t, req);
  return t;
fail:
  abx_transfer_free(t);
  return NULL;
}

void abx_transfer_free(struct abx_transfer *t)
{
  if (!t)
    return;
  if (t->easy)
    curl_easy_cleanup(t->easy);
  curl_slist_free_all(t->req_headers);
  curl_slist_free_all(t->connect_to);
  free(t->req_body);
  clear_headers(t);
  free(t->body.data);
  abx_connect_decoder_free(&t->decoder);
  abx_ndjson_free(&t->ndjson);
  while (t->q_head) {
    struct abx_stream_msg *m = t->q_head;
    t->q_head = m->next;
    free(m);
  }
  free(t);
}

void abx_transfer_finish(struct abx_transfer *t, CURLcode result)
{
  t->done = 1;
  t->dirty = 1;
  t->result = result;
  if (result == CURLE_OK && t->failure == ABX_HTTP_OK && t->streaming == ABX_HTTP_NDJSON &&
      t->status == 200 && abx_ndjson_finish(&t->ndjson, on_line, t) != ABX_NDJSON_OK) {
    t->failure = ABX_HTTP_EPROTO; /* the last line, without "\n", is over the bound */
    snprintf(t->reason, sizeof t->reason, "malformed NDJSON stream: %s", t->ndjson.error);
  }
  if (t->failure != ABX_HTTP_OK && t->reason[0]) /* ours, not curl's "Failure writing output" */
    snprintf(t->error, sizeof t->error, "%s", t->reason);
  if (result == CURLE_OK || t->failure != ABX_HTTP_OK)
    return;
  if (result == CURLE_OPERATION_TIMEDOUT)
    t->failure = ABX_HTTP_ETIMEOUT;
  else
    t->failure = ABX_HTTP_ETRANSPORT;
  if (t->error[0] == '\0')
    snprintf(t->error, sizeof t->error, "%s", curl_easy_strerror(result));
}

struct abx_stream_msg *abx_transfer_pop(struct abx_transfer *t)
{
  struct abx_stream_msg *m = t->q_head;
  if (!m)
    return NULL;
  t->q_head = m->next;
  if (!t->q_head)
    t->q_tail = NULL;
  t->q_bytes -= m->len;
  if (t->paused && t->q_bytes <= ABX_HTTP_STREAM_QUEUE / 2 && !t->done) {
    t->paused = 0;
    curl_easy_pause(t->easy, CURLPAUSE_CONT);
  }
  return m;
}

const char *abx_transfer_header(const struct abx_transfer *t, const char *name)
{
  for (size_t i = 0; i < t->nheaders; i++)
    if (strcmp(t->headers[i].name, name) == 0)
      return t->headers[i].value;
  return NULL;
}
