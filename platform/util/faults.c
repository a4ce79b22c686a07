/*
 * faults.c: `abxlua serve --faults FILE`: choosing when a rule fires and applying its action
 * (the rules are loaded by faults_load.c). Contract in faults.h.
 */
#include "faults.h"

#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "connect.h"
#include "faults_int.h"
#include "clock.h"
#include "log.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* the rules' counters and generators */
static atomic_int g_stop;

/* This thread's pending fault, between abx_faults_before and abx_faults_after. */
static __thread const struct fault_rule *t_rule;

void abx_faults_stop(void)
{
  atomic_store(&g_stop, 1);
}

/* ---- firing ------------------------------------------------------------------------------- */

static double next_unit(uint64_t *s) /* xorshift64*, [0, 1) */
{
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

static const char *kind_name(const struct fault_rule *r, char *buf, size_t n)
{
  static const char *env[] = {"huge_length", "compressed", "garbage"};
  switch (r->kind) {
  case K_STATUS: snprintf(buf, n, "status %d%s", r->status, r->status_after ? " after" : ""); break;
  case K_RESET: snprintf(buf, n, "reset %s", r->reset_after ? "after" : "before"); break;
  case K_TRUNCATE: snprintf(buf, n, "truncate_after %llu", r->truncate); break;
  case K_MALFORMED: snprintf(buf, n, "malformed_json"); break;
  case K_ENVELOPE: snprintf(buf, n, "bad_envelope %s", env[r->envelope]); break;
  case K_NO_ANSWER: snprintf(buf, n, "no_answer"); break;
  default: buf[0] = 0; break;
  }
  if (r->delay_ms) {
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, "%sdelay_ms %ld", l ? " after " : "", r->delay_ms);
  }
  return buf;
}

/* The rule that fires for this request (counters updated), or NULL; *no gets its number. */
static const struct fault_rule *pick(const char *method, const char *path, size_t *no)
{
  const struct fault_rule *hit = NULL;
  pthread_mutex_lock(&g_mu);
  size_t nrules;
  struct fault_rule *rules = abx_faults_table(&nrules);
  for (size_t i = 0; i < nrules && !hit; i++) {
    struct fault_rule *r = &rules[i];
    if (strcmp(r->method, "*") != 0 && strcasecmp(r->method, method) != 0)
      continue;
    if (fnmatch(r->glob, path, 0) != 0)
      continue;
    r->seen++;
    int fire = r->every ? r->seen % r->every == 0 : next_unit(&r->rng) < r->probability;
    if (!fire || (r->limit >= 0 && r->fired >= (unsigned long long)r->limit))
      continue;
    r->fired++;
    hit = r;
    *no = i + 1;
  }
  pthread_mutex_unlock(&g_mu);
  return hit;
}

static int client_gone(struct MHD_Connection *c)
{
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci)
    return 0;
  char b;
  ssize_t k = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Sleep up to ms in 50 ms steps; stop early when serve stops or (watch_client) the client leaves. */
static void hold(struct MHD_Connection *c, long ms, int watch_client)
{
  int64_t end = abx_mono_ns() + (int64_t)ms * 1000000;
  while (!atomic_load(&g_stop) && abx_mono_ns() < end) {
    if (watch_client && client_gone(c))
      return;
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
  }
}

/* Queue the answer of a status rule on c. */
static enum MHD_Result queue_status(struct MHD_Connection *c, const struct fault_rule *r)
{
  char dflt[96];
  snprintf(dflt, sizeof dflt, "{\"code\":%d,\"message\":\"injected fault\"}", r->status);
  const char *b = r->body ? r->body : dflt;
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(strlen(b), (void *)b, MHD_RESPMEM_MUST_COPY);
  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", "application/json");
  for (size_t i = 0; i < r->nhdrs; i++)
    MHD_add_response_header(resp, r->hdrs[i].name, r->hdrs[i].value);
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
  MHD_destroy_response(resp);
  return ret;
}

int abx_faults_before(struct MHD_Connection *c, const char *method, const char *path,
                      enum MHD_Result *ret)
{
  t_rule = NULL;
  size_t loaded;
  abx_faults_table(&loaded);
  if (!loaded)
    return 0;
  char p[2048];
  snprintf(p, sizeof p, "%s", path && *path ? path : "/");
  p[strcspn(p, "?")] = 0;
  size_t no = 0;
  const struct fault_rule *r = pick(method, p, &no);
  if (!r)
    return 0;
  char what[96];
  abx_slog("fault %zu %s on %s %s", no, kind_name(r, what, sizeof what), method, p);
  if (r->delay_ms)
    hold(c, r->delay_ms, 0);
  switch (r->kind) {
  case K_NONE: return 0;
  case K_STATUS:
    if (r->status_after)
      break; /* handled first; abx_faults_instead answers */
    *ret = queue_status(c, r);
    return 1;
  case K_RESET:
    if (r->reset_after)
      break;
    *ret = MHD_NO;
    return 1;
  case K_NO_ANSWER:
    hold(c, ABX_FAULT_MAX_HOLD_MS, 1);
    *ret = MHD_NO;
    return 1;
  default: break;
  }
  t_rule = r;
  return 0;
}

int abx_faults_instead(struct MHD_Connection *c, enum MHD_Result *ret)
{
  const struct fault_rule *r = t_rule;
  if (!r || r->kind != K_STATUS || !r->status_after)
    return 0;
  *ret = queue_status(c, r);
  return 1;
}

enum MHD_Result abx_faults_after(enum MHD_Result handled)
{
  const struct fault_rule *r = t_rule;
  t_rule = NULL;
  if (r && r->kind == K_RESET && r->reset_after)
    return MHD_NO;
  return handled;
}

const void *abx_faults_detach(void)
{
  const struct fault_rule *r = t_rule;
  t_rule = NULL;
  return r;
}

void abx_faults_attach(const void *fault)
{
  t_rule = fault;
}

/* ---- body faults -------------------------------------------------------------------------- */

/* The replacement body of a malformed_json or bad_envelope rule (malloc'd, *n its length). */
static char *replacement(const struct fault_rule *r, int connect, size_t *n)
{
  static const char bad_json[] = "{\"abx_fault\": [1, 2,, \"malformed";
  char *b = malloc(64 + sizeof bad_json);
  if (!b)
    return NULL;
  size_t pl = sizeof bad_json - 1;
  if (r->kind == K_MALFORMED && !connect) {
    memcpy(b, bad_json, pl);
    *n = pl;
    return b;
  }
  /* a Connect envelope (proto/connect.h): flags (1 byte), big-endian length (4 bytes), payload */
  uint32_t len = (uint32_t)pl;
  unsigned char flags = 0;
  if (r->kind == K_ENVELOPE && r->envelope == E_HUGE)
    len = 0x7ffffff0u;
  if (r->kind == K_ENVELOPE && r->envelope == E_COMPRESSED)
    flags = ABX_CONNECT_FLAG_COMPRESSED;
  if (r->kind == K_ENVELOPE && r->envelope == E_GARBAGE) {
    static const char noise[] = "\x7e\xff\xfe\x00\x10GARBAGE\x01\x02\x03 not an envelope \xc3\x28";
    memcpy(b, noise, sizeof noise - 1);
    *n = sizeof noise - 1;
    return b;
  }
  abx_connect_prefix((unsigned char *)b, flags, len);
  memcpy(b + 5, bad_json, pl);
  *n = 5 + pl;
  return b;
}

struct MHD_Response *abx_faults_response(const char *data, size_t len)
{
  const struct fault_rule *r = t_rule;
  if (!data)
    data = "";
  if (r && r->kind == K_TRUNCATE && r->truncate < len)
    len = (size_t)r->truncate;
  if (r && (r->kind == K_MALFORMED || r->kind == K_ENVELOPE)) {
    size_t n = 0;
    char *b = replacement(r, r->kind == K_ENVELOPE, &n);
    if (!b)
      return NULL;
    return MHD_create_response_from_buffer(n, b, MHD_RESPMEM_MUST_FREE);
  }
  return MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
}

struct wrap {
  MHD_ContentReaderCallback crc;
  MHD_ContentReaderFreeCallback crfc;
  void *cls;
  unsigned long long limit, pos; /* truncate */
  char *repl;                    /* replacement body, or NULL */
  size_t repl_len;
};

static ssize_t wrap_read(void *cls, uint64_t pos, char *out, size_t max)
{
  struct wrap *w = cls;
  if (w->repl) {
    if (pos >= w->repl_len)
      return MHD_CONTENT_READER_END_OF_STREAM;
    size_t k = w->repl_len - (size_t)pos < max ? w->repl_len - (size_t)pos : max;
    memcpy(out, w->repl + pos, k);
    return (ssize_t)k;
  }
  if (w->pos >= w->limit)
    return MHD_CONTENT_READER_END_OF_STREAM;
  if (max > w->limit - w->pos)
    max = (size_t)(w->limit - w->pos);
  ssize_t k = w->crc(w->cls, pos, out, max);
  if (k > 0)
    w->pos += (unsigned long long)k;
  return k;
}

static void wrap_free(void *cls)
{
  struct wrap *w = cls;
  if (w->crfc)
    w->crfc(w->cls);
  free(w->repl);
  free(w);
}

struct MHD_Response *abx_faults_stream(uint64_t size, size_t block, MHD_ContentReaderCallback crc,
                                       void *cls, MHD_ContentReaderFreeCallback crfc,
                                       const char *ctype)
{
  const struct fault_rule *r = t_rule;
  if (!r || (r->kind != K_TRUNCATE && r->kind != K_MALFORMED && r->kind != K_ENVELOPE))
    return MHD_create_response_from_callback(size, block, crc, cls, crfc);
  struct wrap *w = calloc(1, sizeof *w);
  if (!w)
    return NULL;
  w->crc = crc;
  w->cls = cls;
  w->limit = r->kind == K_TRUNCATE ? r->truncate : 0;
  if (r->kind != K_TRUNCATE) {
    int connect = ctype && strncasecmp(ctype, "application/connect+", 20) == 0;
    w->repl = replacement(r, connect || r->kind == K_ENVELOPE, &w->repl_len);
    if (!w->repl) {
      free(w);
      return NULL;
    }
    size = w->repl_len;
  } else if (size != MHD_SIZE_UNKNOWN && size > w->limit) {
    size = w->limit;
  }
  struct MHD_Response *resp =
      MHD_create_response_from_callback(size, block, wrap_read, w, wrap_free);
  if (!resp) {
    free(w->repl);
    free(w); /* the caller frees cls */
    return NULL;
  }
  w->crfc = crfc;
  return resp;
}
