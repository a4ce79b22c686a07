/*
 * floor.h: the libcurl floor of `make bench` (tests/bench/bench.py, way C): the same HTTP
 * exchanges as the abxlua scenario (tests/bench/abx/bench.lua) and the e2b SDK script, with no
 * SDK and no engine: one CURL easy handle per thread (keep-alive reuse), jansson for JSON.
 * Wire facts: docs/protocol/e2b-control-plane.md §3 (POST /sandboxes, DELETE /sandboxes/{id}),
 * §7.4 (E2b-Sandbox-Id / E2b-Sandbox-Port routing headers); docs/protocol/envd-protocol.md §2.3
 * (Connect envelopes: flags byte, 4-byte big-endian length, JSON), §4 (process.Process/Start
 * events start/data/end; exitCode omitted when 0), §5 (filesystem.Filesystem/ListDir, Stat,
 * Remove), §6 (X-Access-Token, Authorization: Basic "user:"), §7 (POST/GET /files with
 * application/octet-stream).
 */
#ifndef ABX_BENCH_FLOOR_H
#define ABX_BENCH_FLOOR_H

#include <stddef.h>
#include <curl/curl.h>

/* A growing byte buffer (data is NUL-terminated when len < cap). */
struct fbuf {
  char *data;
  size_t len, cap;
};

/* One client: a CURL easy handle reused for every request of one thread, and the platform's
 * address and key (from BENCH_URL, BENCH_KEY). */
struct fclient {
  CURL *curl;
  const char *url; /* "http://127.0.0.1:PORT", no trailing slash */
  const char *key; /* the API key (X-API-Key) */
};

/* A sandbox as POST /sandboxes answered it. */
struct fsandbox {
  char id[128];
  char token[256]; /* envdAccessToken, "" when the answer had none */
};

/* What a process.Process/Start stream gave: exit code (0 when the end event had none), the
 * stdout bytes decoded (kept only when `keep` was set), their count, and -1 for `bad_at` unless
 * the pattern check saw a chunk starting off the line pattern (offset of that chunk). */
struct fresult {
  int exit_code;
  int ended;        /* 1 once the end event arrived */
  size_t out_bytes; /* decoded stdout bytes */
  size_t err_bytes; /* decoded stderr bytes */
  long long bad_at; /* pattern check: offset of the first chunk off the pattern, -1 none */
  struct fbuf out;  /* the stdout bytes (keep = 1 only) */
};

/* Appends n bytes; aborts the process when out of memory (a floor has no recovery path). */
void fbuf_add(struct fbuf *b, const void *p, size_t n);
void fbuf_free(struct fbuf *b);

/* Once per process, before any thread: curl_global_init and the base64 table. */
void floor_init(void);

/* Monotonic clock in milliseconds (CLOCK_MONOTONIC, the clock the harness and core.now use). */
double floor_now_ms(void);

/* Opens a client on BENCH_URL / BENCH_KEY; exits 2 when they are not set. */
void fclient_open(struct fclient *c);
void fclient_close(struct fclient *c);

/* POST /sandboxes {"templateID":"base","timeout":ttl_s,"secure":true}: 0 and *s filled on 201,
 * -1 (message on stderr) otherwise. */
int floor_create(struct fclient *c, int ttl_s, struct fsandbox *s);

/* DELETE /sandboxes/{id}: 0 on 204, -1 otherwise. */
int floor_kill(struct fclient *c, const struct fsandbox *s);

/* process.Process/Start of `/bin/bash -l -c cmd` as user "user" (the call the SDKs and abxlua
 * make), read to its end-stream envelope; stdin closed; Connect-Timeout-Ms = timeout_s * 1000.
 * keep: collect stdout into r->out; check_pattern: check that each stdout chunk continues the
 * bench's 64-byte line (bench.lua LINE). Returns 0 when the stream ended cleanly (r filled),
 * -1 on a transport/HTTP/protocol error (message on stderr). */
int floor_run(struct fclient *c, const struct fsandbox *s, const char *cmd, int timeout_s, int keep,
              int check_pattern, struct fresult *r);
void fresult_free(struct fresult *r);

/* POST /files?path=..&username=user, application/octet-stream: 0 on 200, -1 otherwise. */
int floor_write(struct fclient *c, const struct fsandbox *s, const char *path, const void *data,
                size_t n);

/* GET /files?path=..&username=user into out (replaced): 0 on 200, -1 otherwise. */
int floor_read(struct fclient *c, const struct fsandbox *s, const char *path, struct fbuf *out);

/* A unary Connect JSON call (POST /<rpc>, application/json) as user "user": the answer body in
 * out and 0 on 200, -1 otherwise. */
int floor_unary(struct fclient *c, const struct fsandbox *s, const char *rpc, const char *json,
                struct fbuf *out);

/* The 64-byte line the streaming command repeats (63 characters and "\n"). */
extern const char FLOOR_LINE[65];

#endif
