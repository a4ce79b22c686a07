/*
 * faults.c: `abxlua serve --faults FILE`: loading the rules (libyaml), choosing when one fires,
 * and applying its action. Contract in faults.h.
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
#include <yaml.h>

#include "connect.h"
#include "http_util.h"

enum kind { K_NONE, K_STATUS, K_RESET, K_TRUNCATE, K_MALFORMED, K_ENVELOPE, K_NO_ANSWER };
enum envelope { E_HUGE, E_COMPRESSED, E_GARBAGE };

struct hdr {
  char *name, *value;
};

struct rule {
  char method[16];  /* "*" for any */
  char *glob;
  unsigned long every;
  double probability; /* < 0: not set */
  uint64_t rng;
  long long limit;    /* < 0: none */
  /* counters, under g_mu */
  unsigned long long seen, fired;
  /* action */
  enum kind kind;
  long delay_ms;
  int status;
  char *body;
  struct hdr *hdrs;
  size_t nhdrs;
  int reset_after;
  unsigned long long truncate;
  enum envelope envelope;
};

static struct rule *g_rules;
static size_t g_nrules;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_stop;

/* This thread's pending fault, between abx_faults_before and abx_faults_after. */
static __thread const struct rule *t_rule;


void abx_faults_stop(void) { atomic_store(&g_stop, 1); }

static void free_rule(struct rule *r)
{
  free(r->glob);
  free(r->body);
  for (size_t i = 0; i < r->nhdrs; i++) {
    free(r->hdrs[i].name);
    free(r->hdrs[i].value);
  }
  free(r->hdrs);
}

void abx_faults_free(void)
{
  for (size_t i = 0; i < g_nrules; i++)
    free_rule(&g_rules[i]);
  free(g_rules);
  g_rules = NULL;
  g_nrules = 0;
}

/* ---- loading ------------------------------------------------------------------------------ */

struct loader {
  const char *file;
  yaml_document_t *doc;
  char *err;
  size_t errlen;
};

static int fail(struct loader *L, yaml_node_t *n, const char *fmt, const char *arg)
{
  char msg[256];
  snprintf(msg, sizeof msg, fmt, arg ? arg : "");
  snprintf(L->err, L->errlen, "%s:%lu: %s", L->file, n ? (unsigned long)n->start_mark.line + 1 : 0UL,
           msg);
  return -1;
}

static const char *scalar(yaml_node_t *n)
{
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int get_long(struct loader *L, yaml_node_t *n, const char *key, long long lo, long long hi,
                    long long *out)
{
  const char *s = scalar(n);
  char *end = NULL;
  errno = 0;
  long long v = s ? strtoll(s, &end, 10) : 0;
  if (!s || !*s || *end || errno || v < lo || v > hi) {
    char msg[160];
    snprintf(msg, sizeof msg, "'%s' must be an integer in %lld..%lld", key, lo, hi);
    return fail(L, n, "%s", msg);
  }
  *out = v;
  return 0;
}

static int get_bool(struct loader *L, yaml_node_t *n, const char *key, int *out)
{
  const char *s = scalar(n);
  if (s && (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0))
    *out = 1;
  else if (s && (strcmp(s, "false") == 0 || strcmp(s, "no") == 0))
    *out = 0;
  else
    return fail(L, n, "'%s' must be true or false", key);
  return 0;
}

static int set_kind(struct loader *L, yaml_node_t *n, struct rule *r, enum kind k, const char *key)
{
  if (r->kind != K_NONE)
    return fail(L, n, "key '%s': an action has one kind (plus delay_ms at most)", key);
  r->kind = k;
  return 0;
}

static int load_action(struct loader *L, yaml_node_t *a, struct rule *r)
{
  if (a->type != YAML_MAPPING_NODE)
    return fail(L, a, "'action' must be a mapping%s", NULL);
  for (yaml_node_pair_t *p = a->data.mapping.pairs.start; p < a->data.mapping.pairs.top; p++) {
    yaml_node_t *kn = yaml_document_get_node(L->doc, p->key);
    yaml_node_t *vn = yaml_document_get_node(L->doc, p->value);
    const char *k = scalar(kn);
    long long v;
    int b;
    if (!k)
      return fail(L, kn, "action keys must be scalars%s", NULL);
    if (strcmp(k, "status") == 0) {
      if (get_long(L, vn, k, 100, 599, &v) != 0 || set_kind(L, kn, r, K_STATUS, k) != 0)
        return -1;
      r->status = (int)v;
    } else if (strcmp(k, "body") == 0) {
      if (!scalar(vn))
        return fail(L, vn, "'body' must be a string%s", NULL);
      free(r->body);
      r->body = strdup(scalar(vn));
    } else if (strcmp(k, "headers") == 0) {
      if (vn->type != YAML_MAPPING_NODE)
        return fail(L, vn, "'headers' must be a mapping of strings%s", NULL);
      for (yaml_node_pair_t *h = vn->data.mapping.pairs.start; h < vn->data.mapping.pairs.top; h++) {
        const char *hk = scalar(yaml_document_get_node(L->doc, h->key));
        const char *hv = scalar(yaml_document_get_node(L->doc, h->value));
        if (!hk || !hv || !*hk || strpbrk(hk, ": \r\n") || strpbrk(hv, "\r\n"))
          return fail(L, vn, "'headers' must be a mapping of header names to strings%s", NULL);
        struct hdr *nh = realloc(r->hdrs, (r->nhdrs + 1) * sizeof *nh);
        if (!nh)
          return fail(L, vn, "out of memory%s", NULL);
        r->hdrs = nh;
        r->hdrs[r->nhdrs].name = strdup(hk);
        r->hdrs[r->nhdrs].value = strdup(hv);
        r->nhdrs++;
      }
    } else if (strcmp(k, "delay_ms") == 0) {
      if (get_long(L, vn, k, 0, ABX_FAULT_MAX_HOLD_MS, &v) != 0)
        return -1;
      r->delay_ms = (long)v;
    } else if (strcmp(k, "reset") == 0) {
      const char *s = scalar(vn);
      if (s && strcmp(s, "after") == 0)
        r->reset_after = 1;
      else if (!(s && (strcmp(s, "before") == 0 || strcmp(s, "true") == 0)))
        return fail(L, vn, "'reset' must be true, before or after%s", NULL);
      if (set_kind(L, kn, r, K_RESET, k) != 0)
        return -1;
    } else if (strcmp(k, "truncate_after") == 0) {
      if (get_long(L, vn, k, 0, 1LL << 40, &v) != 0 || set_kind(L, kn, r, K_TRUNCATE, k) != 0)
        return -1;
      r->truncate = (unsigned long long)v;
    } else if (strcmp(k, "malformed_json") == 0 || strcmp(k, "no_answer") == 0) {
      if (get_bool(L, vn, k, &b) != 0)
        return -1;
      if (!b)
        return fail(L, vn, "'%s' can only be true", k);
      if (set_kind(L, kn, r, k[0] == 'm' ? K_MALFORMED : K_NO_ANSWER, k) != 0)
        return -1;
    } else if (strcmp(k, "bad_envelope") == 0) {
      const char *s = scalar(vn);
      if (s && strcmp(s, "huge_length") == 0)
        r->envelope = E_HUGE;
      else if (s && strcmp(s, "compressed") == 0)
        r->envelope = E_COMPRESSED;
      else if (s && strcmp(s, "garbage") == 0)
        r->envelope = E_GARBAGE;
      else
        return fail(L, vn, "'bad_envelope' must be huge_length, compressed or garbage%s", NULL);
      if (set_kind(L, kn, r, K_ENVELOPE, k) != 0)
        return -1;
    } else {
      return fail(L, kn, "unknown key '%s' in an action", k);
    }
  }
  if (r->kind == K_NONE && r->delay_ms == 0)
    return fail(L, a, "the action is empty (status, delay_ms, reset, truncate_after, malformed_json, "
                      "bad_envelope or no_answer)%s", NULL);
  if ((r->body || r->nhdrs) && r->kind != K_STATUS)
    return fail(L, a, "'body' and 'headers' go with 'status'%s", NULL);
  return 0;
}

static int load_route(struct loader *L, yaml_node_t *n, struct rule *r)
{
  const char *s = scalar(n);
  if (!s || !*s)
    return fail(L, n, "'route' must be \"METHOD /path-glob\" or \"/path-glob\"%s", NULL);
  const char *sp = strchr(s, ' ');
  const char *glob = s;
  snprintf(r->method, sizeof r->method, "*");
  if (sp) {
    size_t ml = (size_t)(sp - s);
    if (ml == 0 || ml >= sizeof r->method)
      return fail(L, n, "'route' has a bad method%s", NULL);
    memcpy(r->method, s, ml);
    r->method[ml] = 0;
    glob = sp;
    while (*glob == ' ')
      glob++;
  }
  if (*glob != '/' && *glob != '*')
    return fail(L, n, "'route' path glob must start with / or *%s", NULL);
  r->glob = strdup(glob);
  return r->glob ? 0 : fail(L, n, "out of memory%s", NULL);
}

static int load_rule(struct loader *L, yaml_node_t *n, struct rule *r)
{
  r->probability = -1;
  r->limit = -1;
  r->rng = 1;
  if (n->type != YAML_MAPPING_NODE)
    return fail(L, n, "a fault rule must be a mapping%s", NULL);
  yaml_node_t *action = NULL;
  int has_every = 0;
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *kn = yaml_document_get_node(L->doc, p->key);
    yaml_node_t *vn = yaml_document_get_node(L->doc, p->value);
    const char *k = scalar(kn);
    long long v;
    if (!k)
      return fail(L, kn, "rule keys must be scalars%s", NULL);
    if (strcmp(k, "route") == 0) {
      if (load_route(L, vn, r) != 0)
        return -1;
    } else if (strcmp(k, "every") == 0) {
      if (get_long(L, vn, k, 1, 1000000000, &v) != 0)
        return -1;
      r->every = (unsigned long)v;
      has_every = 1;
    } else if (strcmp(k, "probability") == 0) {
      const char *s = scalar(vn);
      char *end = NULL;
      double d = s ? strtod(s, &end) : -1;
      if (!s || !*s || *end || !(d >= 0 && d <= 1))
        return fail(L, vn, "'probability' must be a number in 0..1%s", NULL);
      r->probability = d;
    } else if (strcmp(k, "seed") == 0) {
      if (get_long(L, vn, k, 0, (1LL << 62), &v) != 0)
        return -1;
      r->rng = (uint64_t)v * 0x9E3779B97F4A7C15ULL + 1; /* never 0 (xorshift) */
    } else if (strcmp(k, "limit") == 0) {
      if (get_long(L, vn, k, 0, 1LL << 40, &v) != 0)
        return -1;
      r->limit = v;
    } else if (strcmp(k, "action") == 0) {
      action = vn;
    } else {
      return fail(L, kn, "unknown key '%s' in a fault rule", k);
    }
  }
  if (!r->glob)
    return fail(L, n, "a fault rule needs 'route'%s", NULL);
  if (!action)
    return fail(L, n, "a fault rule needs 'action'%s", NULL);
  if (has_every && r->probability >= 0)
    return fail(L, n, "a fault rule has 'every' or 'probability', not both%s", NULL);
  if (!has_every)
    r->every = r->probability >= 0 ? 0 : 1;
  return load_action(L, action, r);
}

int abx_faults_load(const char *file, char *err, size_t errlen)
{
  abx_faults_free();
  FILE *f = fopen(file, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", file, strerror(errno));
    return -1;
  }
  yaml_parser_t parser;
  yaml_document_t doc;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_file(&parser, f);
  int rc = -1;
  if (!yaml_parser_load(&parser, &doc)) {
    snprintf(err, errlen, "%s:%lu: %s", file, (unsigned long)parser.problem_mark.line + 1,
             parser.problem ? parser.problem : "YAML syntax error");
    yaml_parser_delete(&parser);
    fclose(f);
    return -1;
  }
  struct loader L = {file, &doc, err, errlen};
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  yaml_node_t *list = NULL;
  if (!root || root->type != YAML_MAPPING_NODE) {
    fail(&L, root, "the file must be a mapping with 'faults'%s", NULL);
    goto out;
  }
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
    yaml_node_t *kn = yaml_document_get_node(&doc, p->key);
    const char *k = scalar(kn);
    if (k && strcmp(k, "faults") == 0) {
      list = yaml_document_get_node(&doc, p->value);
    } else {
      fail(&L, kn, "unknown key '%s' at the top level (only 'faults')", k ? k : "?");
      goto out;
    }
  }
  if (!list || list->type != YAML_SEQUENCE_NODE) {
    fail(&L, list ? list : root, "'faults' must be a list of rules%s", NULL);
    goto out;
  }
  size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
  g_rules = calloc(n ? n : 1, sizeof *g_rules);
  if (!g_rules) {
    snprintf(err, errlen, "%s: out of memory", file);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    g_nrules = i + 1; /* so abx_faults_free frees a half-loaded rule */
    yaml_node_t *rn = yaml_document_get_node(&doc, list->data.sequence.items.start[i]);
    if (load_rule(&L, rn, &g_rules[i]) != 0)
      goto out;
  }
  rc = 0;
out:
  if (rc != 0)
    abx_faults_free();
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  fclose(f);
  return rc;
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

static const char *kind_name(const struct rule *r, char *buf, size_t n)
{
  static const char *env[] = {"huge_length", "compressed", "garbage"};
  switch (r->kind) {
  case K_STATUS: snprintf(buf, n, "status %d", r->status); break;
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
static const struct rule *pick(const char *method, const char *path, size_t *no)
{
  const struct rule *hit = NULL;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_nrules && !hit; i++) {
    struct rule *r = &g_rules[i];
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
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
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

int abx_faults_before(struct MHD_Connection *c, const char *method, const char *path,
                      enum MHD_Result *ret)
{
  t_rule = NULL;
  if (!g_nrules)
    return 0;
  char p[2048];
  snprintf(p, sizeof p, "%s", path && *path ? path : "/");
  p[strcspn(p, "?")] = 0;
  size_t no = 0;
  const struct rule *r = pick(method, p, &no);
  if (!r)
    return 0;
  char what[96];
  fprintf(stderr, "abxlua serve: fault %zu %s on %s %s\n", no, kind_name(r, what, sizeof what),
          method, p);
  if (r->delay_ms)
    hold(c, r->delay_ms, 0);
  switch (r->kind) {
  case K_NONE:
    return 0;
  case K_STATUS: {
    char dflt[96];
    snprintf(dflt, sizeof dflt, "{\"code\":%d,\"message\":\"injected fault\"}", r->status);
    const char *b = r->body ? r->body : dflt;
    struct MHD_Response *resp =
      MHD_create_response_from_buffer(strlen(b), (void *)b, MHD_RESPMEM_MUST_COPY);
    if (!resp) {
      *ret = MHD_NO;
      return 1;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    for (size_t i = 0; i < r->nhdrs; i++)
      MHD_add_response_header(resp, r->hdrs[i].name, r->hdrs[i].value);
    *ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return 1;
  }
  case K_RESET:
    if (r->reset_after)
      break;
    *ret = MHD_NO;
    return 1;
  case K_NO_ANSWER:
    hold(c, ABX_FAULT_MAX_HOLD_MS, 1);
    *ret = MHD_NO;
    return 1;
  default:
    break;
  }
  t_rule = r;
  return 0;
}

enum MHD_Result abx_faults_after(enum MHD_Result handled)
{
  const struct rule *r = t_rule;
  t_rule = NULL;
  if (r && r->kind == K_RESET && r->reset_after)
    return MHD_NO;
  return handled;
}

/* ---- body faults -------------------------------------------------------------------------- */

/* The replacement body of a malformed_json or bad_envelope rule (malloc'd, *n its length). */
static char *replacement(const struct rule *r, int connect, size_t *n)
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
  const struct rule *r = t_rule;
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
  const struct rule *r = t_rule;
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
  struct MHD_Response *resp = MHD_create_response_from_callback(size, block, wrap_read, w, wrap_free);
  if (!resp) {
    free(w->repl);
    free(w); /* the caller frees cls */
    return NULL;
  }
  w->crfc = crfc;
  return resp;
}
