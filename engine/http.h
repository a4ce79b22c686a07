/*
 * http.h: HTTP transfers over libcurl's multi interface (no Lua).
 *
 * A transfer is one request. Plain transfers collect the whole body; stream transfers feed a 200
 * body into a decoder and queue what it finds for the consumer: Connect envelopes
 * (ABX_HTTP_CONNECT, proto/connect.h) or NDJSON lines (ABX_HTTP_NDJSON, proto/ndjson.h: each
 * non-empty line is one message, 'seq' its line number; a last line without "\n" is queued when
 * the body ends) or raw chunks of the body as they arrive (ABX_HTTP_RAW, for bodies too large to
 * hold). A stream whose status is not 200 collects its body like a plain transfer. A request body
 * is either a buffer ('body', copied unless 'body_borrowed') or read as the transfer goes
 * ('body_read': a file).
 * Units:   timeout_ms for the whole transfer (0: none, then the task's deadline bounds it);
 *          headers_timeout_ms from the start until the response headers, body_timeout_ms from the
 *          headers until the end of the body (0: none; checked by curl's progress callback, at
 *          least once a second), as the code interpreter's SDK clients bound them
 *          (docs/protocol/envd-protocol.md §10 "Client behaviour").
 * Limits:  response headers <= ABX_HTTP_MAX_HEADERS bytes in all; plain bodies, non-200 stream
 *          bodies and raw streams <= max_body bytes, checked against the announced
 *          Content-Length as soon as the headers are in (so a 2 GiB announcement fails at once)
 *          and against the running count as the body arrives;
 *          an NDJSON line <= max_line bytes (default ABX_NDJSON_MAX_LINE, 16 MiB); queued stream
 *          messages <= ABX_HTTP_STREAM_QUEUE bytes (the transfer is paused beyond, so a slow
 *          consumer applies backpressure instead of growing memory). Over a limit the transfer
 *          fails with ABX_HTTP_EOVERFLOW or ABX_HTTP_EPROTO (error kind Protocol).
 * Errors:  'result' holds the CURLcode; 'failure' classifies it (see enum abx_http_failure).
 * Source:  curl/curl docs/examples/multi-app.c and ephiperfifo.c (CURLOPT_PRIVATE back-pointer).
 */
#ifndef ABX_HTTP_H
#define ABX_HTTP_H

#include <curl/curl.h>
#include <stddef.h>

#include "connect.h"
#include "ndjson.h"

#define ABX_HTTP_MAX_HEADERS (256u * 1024u)
#define ABX_HTTP_STREAM_QUEUE (8u * 1024u * 1024u)
#define ABX_HTTP_ERROR_BODY (64u * 1024u * 1024u) /* a raw stream's non-200 body at most */

enum abx_http_failure {
  ABX_HTTP_OK = 0,
  ABX_HTTP_ETIMEOUT,   /* curl's timeout elapsed */
  ABX_HTTP_ETRANSPORT, /* connection refused, reset, DNS, ... */
  ABX_HTTP_EOVERFLOW,  /* body or headers over the limit */
  ABX_HTTP_EPROTO,     /* malformed Connect envelope stream, NDJSON line over its bound */
  ABX_HTTP_ESOURCE,    /* the request body's reader failed (a closed or unreadable file) */
};

/* What a transfer does with a 200 body ('streaming' of a request and a transfer). */
enum abx_http_framing {
  ABX_HTTP_PLAIN = 0,   /* collect it (max_body) */
  ABX_HTTP_CONNECT = 1, /* Connect envelopes */
  ABX_HTTP_NDJSON = 2,  /* NDJSON lines */
  ABX_HTTP_RAW = 3,     /* the bytes as they arrive, one message per chunk (max_body in all) */
};

/* Reads the next bytes of a request body into buf (at most n). Returns the number read, 0 at the
 * end, or ABX_HTTP_READ_ERROR with a reason written to err (errlen bytes). */
#define ABX_HTTP_READ_ERROR ((size_t)-1)
typedef size_t (*abx_http_body_read)(void *cookie, char *buf, size_t n, char *err, size_t errlen);

struct abx_buf {
  char *data;
  size_t len, cap;
  size_t faulted; /* data[0..faulted) was prefaulted (abx_prefault) or written */
};

struct abx_http_header {
  char *name;  /* lower-cased */
  char *value; /* trimmed */
};

struct abx_stream_msg {
  struct abx_stream_msg *next;
  unsigned flags; /* Connect envelope flags; 0 for NDJSON lines */
  size_t seq;     /* NDJSON: the line number (1-based, empty lines counted) */
  size_t len;
  char data[]; /* payload, NUL-terminated for convenience */
};

struct abx_transfer {
  CURL *easy;
  struct curl_slist *req_headers;
  struct curl_slist *connect_to; /* CURLOPT_CONNECT_TO list */
  char *req_body;                /* owned copy (NULL when the body is borrowed) */
  size_t req_body_len;
  abx_http_body_read body_read; /* or the body is read as it goes (cookie owned by the caller) */
  void *body_cookie;
  size_t raw_bytes; /* ABX_HTTP_RAW: body bytes queued so far */
  int nobody;       /* HEAD: a Content-Length announces no body */
  size_t max_body;
  long status;      /* final HTTP status (not 1xx) */
  int headers_done; /* the final response's headers are complete */
  struct abx_http_header *headers;
  size_t nheaders, headers_bytes;
  struct abx_buf body; /* plain transfers, or a stream whose status is not 200 */
  int done;            /* curl reported the transfer finished */
  CURLcode result;
  enum abx_http_failure failure;
  char error[CURL_ERROR_SIZE + 128];  /* what failed, once done (curl's error buffer until then) */
  char reason[CURL_ERROR_SIZE + 128]; /* our own reason for a failure (limits, framing, timeouts),
                                         copied to 'error' when the transfer is done */
  /* streams */
  int streaming; /* enum abx_http_framing */
  struct abx_connect_decoder decoder;
  struct abx_ndjson ndjson;
  long headers_timeout_ms, body_timeout_ms; /* 0: none */
  double started_ms, headers_ms;            /* CLOCK_MONOTONIC, for the two timeouts */
  struct abx_stream_msg *q_head, *q_tail;
  size_t q_bytes;
  size_t held_peak; /* the most bytes a stream held at once: queued messages plus the
                           * partial envelope or NDJSON line being assembled (abx_transfer_held) */
  int paused;
  int saw_end; /* the end-of-stream envelope arrived */
  int dirty;   /* something for the consumer arrived since it last looked */
  void *owner; /* the binding object that owns this transfer */
};

struct abx_http_request {
  const char *method;
  const char *url;
  const char *const *headers; /* "Name: value" strings, NULL-terminated */
  const char *body;
  size_t body_len;
  int body_borrowed;            /* 1: 'body' is sent from where it is, not copied: it must stay
                               * alive and unchanged until the transfer is freed (the bindings
                               * anchor the Lua string; a 100 MiB upload was held twice) */
  abx_http_body_read body_read; /* instead of 'body': called as curl sends; NULL: none */
  void *body_cookie;            /* for body_read; must outlive the transfer */
  long long body_size;          /* with body_read: bytes it will give, -1 unknown (sent chunked) */
  long timeout_ms;
  size_t max_body;
  const char *connect_to;  /* "HOST:PORT" or NULL */
  int fresh_connect;       /* 1: a new connection (CURLOPT_FRESH_CONNECT), so libcurl never
                               * resends the request on a reused connection that died before an
                               * answer: for a call that must not run twice (a create) */
  int streaming;           /* enum abx_http_framing */
  size_t max_line;         /* NDJSON: bound on a line in bytes; 0: ABX_NDJSON_MAX_LINE */
  long headers_timeout_ms; /* 0: none */
  long body_timeout_ms;    /* 0: none */
};

/* The PEM file of CA certificates every later transfer verifies HTTPS servers with
 * (CURLOPT_CAINFO), or NULL for curl's default bundle again. Process-wide: a run talks to one
 * provider, and `abxlua serve --tls` run by the engine (lib/abx/run/provider.lua) has its own CA.
 * It replaces the bundle file only: curl's CA directory (Debian: /etc/ssl/certs, CURLOPT_CAPATH)
 * stays. The path is copied; the file is read by each transfer. Returns 0, or -1 for a path of
 * ABX_HTTP_MAX_CA_PATH bytes or more (the setting is then unchanged). Not thread-safe: call it
 * from the loop's thread, between transfers. */
#define ABX_HTTP_MAX_CA_PATH 4096
int abx_http_set_ca_file(const char *path);

/* The CA bundle set by abx_http_set_ca_file, or NULL for curl's default (a transfer made outside
 * this file, bindings/core_wire.c's raw streams, applies it the same way). */
const char *abx_http_ca_file(void);

/* Prefaults p[0..n) for writing in one call (madvise MADV_POPULATE_WRITE, Linux 5.14) when
 * n >= ABX_POPULATE_MIN, for a block about to be filled whole (a 256 MiB command output, a file
 * body becoming a Lua string): one call instead of a page fault per 4 KiB (the faults were a
 * fifth of the engine's CPU collecting a large output, issue 14). Only a hint: on an older kernel
 * (EINVAL) the pages fault in as before. Used by Lua's allocator (engine/loop.c),
 * core.sink and plain bodies (each just ahead of the bytes written, never a whole buffer). */
#define ABX_POPULATE_MIN (4u * 1024u * 1024u)
void abx_prefault(void *p, size_t n);

/* Creates a transfer for 'req' (copies everything it needs). Returns NULL when out of memory;
 * the caller adds t->easy to its multi handle. */
struct abx_transfer *abx_transfer_new(const struct abx_http_request *req);

/* Removes nothing from any multi handle; frees the easy handle and every buffer. */
void abx_transfer_free(struct abx_transfer *t);

/* Records curl's final result for the transfer (called when CURLMSG_DONE arrives). */
void abx_transfer_finish(struct abx_transfer *t, CURLcode result);

/* Pops the next stream message (caller frees it), or NULL. Unpauses a paused transfer once the
 * queue is small again. */
struct abx_stream_msg *abx_transfer_pop(struct abx_transfer *t);

/* Bytes a stream transfer holds now for its consumer: the queued messages plus the buffer of the
 * partial Connect envelope or NDJSON line being assembled (not curl's own receive buffer, which
 * is fixed, CURLOPT_BUFFERSIZE). t->held_peak is the most this was at any moment so far: the
 * engine's own accounting of what a stream keeps, so that a test can bound it without measuring
 * the whole process's RSS (issue 22). Bounded by ABX_HTTP_STREAM_QUEUE plus one message. */
size_t abx_transfer_held(const struct abx_transfer *t);

/* First value of header 'name' (lower case), or NULL. */
const char *abx_transfer_header(const struct abx_transfer *t, const char *name);

#endif
