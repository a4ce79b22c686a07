/*
 * ingress.c: routing by Host or E2b-Sandbox-* headers, and a streaming reverse proxy into sandbox
 * network namespaces: the checks and the request's setup (on a pool thread), the answer's head
 * (on the daemon's thread); the transfers themselves run in ingress_loop.c. Contract in ingress.h.
 */
#include "ingress.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "e2b.h"
#include "util/util.h"
#include "sandbox/sandbox.h"
#include "net/net.h"
#include "ingress_int.h"

static const char *g_domain;
static const struct abx_front *g_front; /* the API family served (front.h) */

int abx_ingress_config(const char *domain, const struct abx_front *front)
{
  g_domain = domain;
  g_front = front;
  if (abx_ingress_upgrade_init() != 0)
    return -1;
  return abx_stream_loop_start();
}

/* ---- routing ------------------------------------------------------------------------------ */

static int parse_port(const char *s, size_t n)
{
  if (n == 0 || n > 5)
    return -1;
  int p = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i]))
      return -1;
    p = p * 10 + (s[i] - '0');
  }
  return p >= 1 && p <= 65535 ? p : -1;
}

int abx_ingress_route(struct MHD_Connection *c, struct abx_route *route, char *msg, size_t msglen)
{
  const char *hv = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
  char host[256] = "";
  if (hv)
    snprintf(host, sizeof host, "%s", hv);
  /* Drop ":port" (an IPv6 literal keeps its brackets until checked below). */
  char *colon = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
  if (colon)
    colon[host[0] == '[' ? 1 : 0] = 0;
  /* Host label form: <port>-<id>.<anything> */
  char *dot = strchr(host, '.'), *dash = strchr(host, '-');
  if (dot && dash && dash < dot) {
    int port = parse_port(host, (size_t)(dash - host));
    if (port > 0) {
      size_t idlen = (size_t)(dot - dash - 1);
      if (!abx_e2b_sandbox_id_valid(dash + 1, idlen)) {
        snprintf(msg, msglen, "Invalid sandbox ID in host");
        return -1;
      }
      memcpy(route->id, dash + 1, idlen);
      route->id[idlen] = 0;
      route->port = port;
      return 1;
    }
  }
  /* Header form, only on a shared host: localhost, an IP literal, or sandbox.<domain>. */
  const char *hid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id");
  const char *hport = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port");
  if (!hid && !hport)
    return 0;
  char bare[256];
  snprintf(bare, sizeof bare, "%s", host[0] == '[' ? host + 1 : host);
  char *rb = strchr(bare, ']');
  if (rb)
    *rb = 0;
  unsigned char addr[16];
  char shared[300];
  snprintf(shared, sizeof shared, "sandbox.%s", g_domain ? g_domain : "");
  int is_shared = strcasecmp(bare, "localhost") == 0 || inet_pton(AF_INET, bare, addr) == 1 ||
                  inet_pton(AF_INET6, bare, addr) == 1 || strcasecmp(bare, shared) == 0 || !*bare;
  if (!is_shared)
    return 0;
  if (!hid || !hport) {
    snprintf(msg, msglen, "both E2b-Sandbox-Id and E2b-Sandbox-Port headers are required");
    return -1;
  }
  int port = parse_port(hport, strlen(hport));
  size_t idlen = strcspn(hid, "-"); /* legacy "<id>-<clientID>" */
  if (port < 0 || !abx_e2b_sandbox_id_valid(hid, idlen)) {
    snprintf(msg, msglen, "invalid E2b-Sandbox-Id or E2b-Sandbox-Port header");
    return -1;
  }
  memcpy(route->id, hid, idlen);
  route->id[idlen] = 0;
  route->port = port;
  return 1;
}

/* ---- the edge's own answers ---------------------------------------------------------------- */

/* The edge's own answers, one documented shape each so that a client tells them apart by status
 * and fields, not message text (ingress.h "Errors"). A paused sandbox is a 502, as E2B's edge
 * answers it (the SDK's isRunning() reads only a 502 as "not running", and E2B's own tests assert
 * isRunning() false after a pause), with canAutoResume so a client can still tell paused from
 * gone. */
enum MHD_Result abx_ingress_e2b_error(struct MHD_Connection *c, const struct abx_edge_error *e)
{
  switch (e->kind) {
  case ABX_EDGE_BAD_ROUTE: return abx_http_error(c, 400, e->message);
  case ABX_EDGE_PAUSED:
    return abx_http_json(c, 502,
                         json_pack("{s:s,s:s,s:i,s:b}", "sandboxId", e->id, "message",
                                   "The sandbox is paused", "code", 502, "canAutoResume",
                                   e->can_resume));
  case ABX_EDGE_PORT_CLOSED:
    return abx_http_json(c, 502,
                         json_pack("{s:s,s:s,s:i,s:i}", "sandboxId", e->id, "message",
                                   "The sandbox is running but port is not open", "port", e->port,
                                   "code", 502));
  case ABX_EDGE_NOT_FOUND: break;
  }
  return abx_http_json(
      c, 502, json_pack("{s:s,s:s,s:i}", "sandboxId", e->id, "message", e->message, "code", 502));
}

/* One of the edge's own answers, in the words of the front served (E2B's until configured). */
static enum MHD_Result edge_error(struct MHD_Connection *c, enum abx_edge_error_kind kind,
                                  const char *id, int port, const char *message, int can_resume)
{
  const struct abx_edge_error e = {kind, id, port, message, can_resume};
  return g_front ? g_front->ingress_error(c, &e) : abx_ingress_e2b_error(c, &e);
}

static enum MHD_Result proxy_error(struct MHD_Connection *c, const char *id, const char *message)
{
  return edge_error(c, ABX_EDGE_NOT_FOUND, id, 0, message, 0);
}

enum MHD_Result abx_ingress_port_closed(struct MHD_Connection *c, const struct abx_route *route)
{
  return edge_error(c, ABX_EDGE_PORT_CLOSED, route->id, route->port, NULL, 0);
}

static enum MHD_Result sandbox_paused(struct MHD_Connection *c, const char *id, int can_resume)
{
  return edge_error(c, ABX_EDGE_PAUSED, id, 0, NULL, can_resume);
}

/* ---- the mutants of the edge (util/mutant.h, ingress.h "Mutants") --------------------------- */

/* splitmix64's finalizer (Steele, Lea, Flood: "Fast splittable pseudorandom number generators",
 * OOPSLA 2014): a request number mixed into an evenly spread 64-bit value. */
static uint64_t mix64(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* 1 when this envd request into sandbox `id` is to be answered with a gateway's bare 502 instead
 * of forwarded: create-before-ready while the sandbox is in its first 2 s (since its started_ns,
 * set when its create or fork answered), else transient-502 on 1 in N envd requests, drawn from
 * the request's number (one counter for every sandbox) mixed by a fixed function: the same order
 * of requests gets the same 502s in every run, and a retry is not always the lucky next request
 * (as with every Nth), so N = 2 also shows calls that fail every attempt. The 502s of
 * create-before-ready are not counted. */
static int mutant_bare_502(const char *id)
{
  if (abx_mutant_on(ABX_MUT_CREATE_BEFORE_READY)) {
    abx_registry_lock();
    struct abx_sandbox *sb = abx_registry_find(id);
    int young = sb && abx_now_ns() - sb->started_ns < 2000000000LL;
    abx_registry_unlock();
    if (young)
      return 1;
  }
  if (!abx_mutant_on(ABX_MUT_TRANSIENT_502))
    return 0;
  static unsigned long count;
  unsigned long k = __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED);
  return mix64((uint64_t)k) % (uint64_t)abx_mutant_param(ABX_MUT_TRANSIENT_502) == 0;
}

/* ---- the request's setup ------------------------------------------------------------------- */

/* Constant time over the expected token's length. */
static int token_eq(const char *want, const char *got)
{
  size_t n = strlen(want);
  unsigned diff = !got || strlen(got) != n;
  const char *t = diff ? want : got;
  for (size_t i = 0; i < n; i++)
    diff |= (unsigned char)want[i] ^ (unsigned char)t[i];
  return diff == 0;
}

/* A request reached a paused sandbox. With autoResume (and a memory pause) it is resumed when the
 * request carries the credentials its port needs (e2b-dev/infra api/internal/handlers/
 * proxy_grpc.go ResumeSandbox: the traffic access token on other ports, the envd access token
 * X-Access-Token on envd's of a secure sandbox; else 403 sandbox_resume_permission_denied.go).
 * 0: it runs now (*netns set); otherwise the answer is queued in *sent. */
static int wake(struct MHD_Connection *c, const struct abx_route *route, int *netns,
                enum MHD_Result *sent)
{
  struct abx_sandbox *sb = abx_sandbox_get(route->id);
  if (!sb) {
    *sent = proxy_error(c, route->id, "The sandbox was not found");
    return -1;
  }
  abx_registry_lock();
  int can = sb->auto_resume && sb->memory_paused, secure = sb->secure;
  char token[sizeof sb->token];
  memcpy(token, sb->token, sizeof token);
  abx_registry_unlock();
  int allowed = 1;
  const char *traffic = MHD_lookup_connection_value(c, MHD_HEADER_KIND, ABX_NET_TOKEN_HEADER);
  if (can && route->port != ABX_E2B_ENVD_PORT)
    allowed = !abx_network_traffic_denied(route->id, route->port, traffic);
  else if (can && secure)
    allowed = token_eq(token, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token"));
  int rc = !can ? 409 : !allowed ? 403 : abx_lifecycle_auto_resume(sb);
  abx_sandbox_put(sb);
  if (rc == 0 && (*netns = abx_registry_netns_running(route->id)) >= 0)
    return 0;
  if (rc == 403)
    *sent = abx_http_json(c, 403,
                          json_pack("{s:s,s:s,s:i}", "sandboxId", route->id, "message",
                                    "This sandbox can't be resumed with the credentials "
                                    "provided. Check your access token and try again.",
                                    "code", 403));
  else if (rc == 404 || (rc == 0 && *netns == -1))
    *sent = proxy_error(c, route->id, "The sandbox was not found");
  else /* 409: no auto-resume; 500 or paused again at once: it would resume, but did not */
    *sent = sandbox_paused(c, route->id, rc != 409);
  return -1;
}

struct hdr_ctx {
  struct curl_slist *list;
  int has_accept, has_ctype;
  int masked; /* the Host is masked: the client's own X-Forwarded-Host is replaced */
};

static enum MHD_Result copy_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
  (void)kind;
  struct hdr_ctx *h = cls;
  if (!key || abx_ingress_hop_by_hop(key, strlen(key)))
    return MHD_YES;
  const char *routing = g_front ? g_front->route_header : NULL; /* consumed by the route */
  if ((h->masked && strcasecmp(key, "X-Forwarded-Host") == 0) ||
      (routing && strcasecmp(key, routing) == 0))
    return MHD_YES;
  if (strcasecmp(key, "Accept") == 0)
    h->has_accept = 1;
  if (strcasecmp(key, "Content-Type") == 0)
    h->has_ctype = 1;
  char *line = NULL;
  if (asprintf(&line, value && *value ? "%s: %s" : "%s;", key, value ? value : "") < 0)
    return MHD_YES;
  struct curl_slist *nl = curl_slist_append(h->list, line);
  if (nl)
    h->list = nl;
  free(line);
  return MHD_YES;
}

/* The transfer's libcurl options: `method` to `url` (NULL when out of memory), with p's headers
 * and body (`len` bytes), inside p's network namespace. */
static void set_transfer(struct abx_stream *p, const char *url, const char *method, size_t len)
{
  CURL *curl = p->curl;
  curl_easy_setopt(curl, CURLOPT_URL, url ? url : "http://127.0.0.1/");
  curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROXY, "");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 30000L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, p->req_hdrs);
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, (long)ABX_INGRESS_CHUNK);
  /* one multi handle serves every sandbox, and its connection cache would hand a connection made
   * in one sandbox's network namespace to a request for another's 127.0.0.1:<port>: never reuse */
  curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
  curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
  abx_netns_curl(curl, &p->netns_fd);
  abx_stream_setup(p);
  int head = strcmp(method, "HEAD") == 0, get = strcmp(method, "GET") == 0;
  if (head) {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (!get || len > 0) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, p->body ? p->body : "");
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    if (strcmp(method, "POST") != 0)
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  }
}

enum MHD_Result abx_ingress_handle(struct MHD_Connection *c, const struct abx_route *route,
                                   const char *method, const char *raw_uri, char **body, size_t len,
                                   struct abx_stream **pending)
{
  *pending = NULL;
  if (abx_stream_stopping()) /* serve stops: its sandboxes are gone or going */
    return proxy_error(c, route->id, "The sandbox was not found");
  int netns = abx_registry_netns_running(route->id);
  enum MHD_Result sent = MHD_NO;
  if (netns == -2 && wake(c, route, &netns, &sent) != 0)
    return sent;
  if (netns < 0)
    return proxy_error(c, route->id, "The sandbox was not found");
  const char *denied = abx_network_traffic_denied(
      route->id, route->port,
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, ABX_NET_TOKEN_HEADER));
  if (denied) {
    close(netns);
    return abx_http_json(
        c, 403, json_pack("{s:s,s:s,s:i}", "sandboxId", route->id, "message", denied, "code", 403));
  }
  if (route->port == ABX_E2B_ENVD_PORT && mutant_bare_502(route->id)) {
    close(netns);
    return abx_http_text(c, 502, "text/html", ABX_MUT_BARE_502, strlen(ABX_MUT_BARE_502));
  }
  struct abx_stream *p = abx_stream_new();
  if (!p) {
    close(netns);
    return abx_http_error(c, 500, "out of memory");
  }
  p->netns_fd = netns;
  p->body = *body;
  *body = NULL;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  p->client_fd = ci ? ci->connect_fd : -1;

  const char *path = raw_uri && *raw_uri ? raw_uri : "/";
  if (strncmp(path, "http://", 7) == 0 || strncmp(path, "https://", 8) == 0) {
    const char *s = strchr(strstr(path, "//") + 2, '/');
    path = s ? s : "/";
  }
  char *url = NULL;
  if (asprintf(&url, "http://127.0.0.1:%d%s", route->port, path) < 0)
    url = NULL;
  char mask[300], hosthdr[320];
  struct hdr_ctx h = {NULL, 0, 0, abx_network_mask_host(route->id, route->port, mask, sizeof mask)};
  MHD_get_connection_values(c, MHD_HEADER_KIND, copy_header, &h);
  if (h.masked) { /* network.maskRequestHost (network.h) */
    const char *in = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    snprintf(hosthdr, sizeof hosthdr, "X-Forwarded-Host: %.256s", in ? in : "");
    if (in && *in)
      h.list = curl_slist_append(h.list, hosthdr);
    snprintf(hosthdr, sizeof hosthdr, "Host: %s", mask);
  } else {
    snprintf(hosthdr, sizeof hosthdr, "Host: localhost:%d", route->port);
  }
  h.list = curl_slist_append(h.list, hosthdr);
  const char *upgrade = abx_ingress_upgrade_wanted(c);
  if (upgrade) {      /* WebSocket and the like: relayed as a byte stream (ingress_upgrade.c) */
    p->netns_fd = -1; /* the upgrade closes it */
    enum MHD_Result ur = abx_ingress_upgrade(c, route, netns, method, path, h.list, upgrade,
                                             p->body ? p->body : "", len);
    curl_slist_free_all(h.list);
    free(url);
    abx_stream_release(p);
    abx_stream_release(p);
    return ur;
  }
  h.list = curl_slist_append(h.list, "Expect:");
  if (!h.has_accept)
    h.list = curl_slist_append(h.list, "Accept:");
  if (!h.has_ctype)
    h.list = curl_slist_append(h.list, "Content-Type:");
  p->req_hdrs = h.list;
  set_transfer(p, url, method, len);
  free(url); /* curl copies CURLOPT_URL */
  *pending = p;
  return MHD_YES;
}

void abx_ingress_start(struct abx_stream *s, struct MHD_Connection *c)
{
  abx_stream_start(s, c);
}

void abx_ingress_drop(struct abx_stream *s)
{
  abx_stream_drop(s);
}

enum MHD_Result abx_ingress_respond(struct MHD_Connection *c, const struct abx_route *route,
                                    struct abx_stream *p)
{
  pthread_mutex_lock(&p->mu);
  int failed = p->failed || p->aborted, aborted = p->aborted;
  CURLcode rc = p->result;
  long status = p->status;
  long long clen = p->clen;
  pthread_mutex_unlock(&p->mu);
  if (aborted) { /* the client left while the head was awaited, or serve stops */
    abx_stream_drop(p);
    return MHD_NO;
  }
  if (failed) {
    abx_stream_drop(p);
    if (rc == CURLE_COULDNT_CONNECT)
      return abx_ingress_port_closed(c, route);
    int still = abx_registry_netns(route->id);
    if (still < 0)
      return proxy_error(c, route->id, "The sandbox was not found");
    close(still);
    char msg[200];
    snprintf(msg, sizeof msg, "The sandbox is running but the port answered badly: %s",
             curl_easy_strerror(rc));
    return proxy_error(c, route->id, msg);
  }
  enum MHD_Result instead; /* faults.h: status ... after: true replaces the upstream's answer */
  if (abx_faults_instead(c, &instead)) {
    abx_stream_drop(p);
    return instead;
  }
  uint64_t size = MHD_SIZE_UNKNOWN;
  if (status == 204 || status == 304)
    size = 0;
  else if (clen >= 0)
    size = (uint64_t)clen;
  char ctype[128] = "";
  pthread_mutex_lock(&p->mu); /* the head is final once head_done is set */
  for (struct curl_slist *l = p->resp; l; l = l->next)
    if (strncasecmp(l->data, "content-type:", 13) == 0)
      snprintf(ctype, sizeof ctype, "%s", l->data + 13 + strspn(l->data + 13, " \t"));
  p->conn = c; /* the reader suspends and the loop resumes this connection from now on */
  pthread_mutex_unlock(&p->mu);
  /* faults.h: a body fault of `abxlua serve --faults` wraps the stream */
  struct MHD_Response *r =
      abx_faults_stream(size, ABX_INGRESS_CHUNK, abx_stream_read, p, abx_stream_free, ctype);
  if (!r) {
    abx_stream_drop(p);
    return MHD_NO;
  }
  pthread_mutex_lock(&p->mu);
  for (struct curl_slist *l = p->resp; l; l = l->next) {
    char *colon = strchr(l->data, ':');
    if (!colon)
      continue;
    *colon = 0;
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
      v++;
    MHD_add_response_header(r, l->data, v);
    *colon = ':';
  }
  pthread_mutex_unlock(&p->mu);
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return ret;
}

void abx_ingress_stop(void)
{
  abx_ingress_upgrade_stop();
  abx_stream_loop_stop();
}
