/*
 * ingress_upgrade.c: protocol upgrades (WebSocket and any other `Upgrade:`) through the ingress,
 * as E2B's edge passes them: its proxies are Go's httputil.ReverseProxy (e2b-dev/infra
 * packages/shared/pkg/proxy/pool/client.go), which forwards `Connection: Upgrade` and `Upgrade`
 * when the request has both, and on a 101 whose Upgrade names the protocol asked for relays the
 * bytes both ways (net/http/httputil reverseproxy.go handleUpgradeResponse); any other answer is
 * an ordinary response. This is how a VNC client outside reaches a sandbox's RFB server behind
 * websockify (the desktop template, docs/templates.md). Contract in ingress_int.h.
 *
 * Threads: the request is set up on a pool thread (blocking connect and head, bounded below);
 *          once libmicrohttpd has sent the 101, one relay thread per upgraded connection copies
 *          bytes (at most ABX_UPGRADE_MAX at once; a relay never blocks: poll on both sockets and
 *          the stop pipe). abx_ingress_upgrade_stop ends them all before the daemon stops.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/util.h"
#include "ingress.h"
#include "ingress_int.h"
#include "net/net.h"

#define HEAD_MAX (16u * 1024)   /* the upstream answer's head */
#define BODY_MAX (1024u * 1024) /* a non-101 answer's body */
#define IO_TIMEOUT_MS 30000     /* connect, head and body, as the HTTP proxy's connect */
#define RELAY_BUF (64u * 1024)

struct relay {
  int up;            /* the sandbox side */
  MHD_socket client; /* libmicrohttpd's side (a socketpair end under TLS) */
  struct MHD_UpgradeResponseHandle *urh;
  char *early; /* upstream bytes read with the head: sent first */
  size_t early_len;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_active, g_stopping, g_stop_pipe[2] = {-1, -1};

/* The comma-separated header value `v` holds `token` (case-insensitive, RFC 9110 §5.6.1). */
static int has_token(const char *v, const char *token)
{
  size_t n = strlen(token);
  while (v && *v) {
    v += strspn(v, " \t,");
    size_t len = strcspn(v, ",");
    size_t e = len;
    while (e > 0 && (v[e - 1] == ' ' || v[e - 1] == '\t'))
      e--;
    if (e == n && strncasecmp(v, token, n) == 0)
      return 1;
    v += len;
  }
  return 0;
}

const char *abx_ingress_upgrade_wanted(struct MHD_Connection *c)
{
  const char *conn = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connection");
  const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
  return conn && up && *up && has_token(conn, "upgrade") ? up : NULL;
}

static int wait_fd(int fd, short ev, int ms)
{
  struct pollfd p = {fd, ev, 0};
  int r;
  do
    r = poll(&p, 1, ms);
  while (r < 0 && errno == EINTR);
  return r;
}

/* Writes all of buf (fd non-blocking); 0 or -1. */
static int send_all(int fd, const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n > 0) {
      buf += n, len -= (size_t)n;
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (wait_fd(fd, POLLOUT, IO_TIMEOUT_MS) <= 0)
        return -1;
    } else {
      return -1;
    }
  }
  return 0;
}

/* Reads until the end of the head ("\r\n\r\n") into buf (cap bytes). Returns the bytes read
 * (head and whatever came after it), *head_len the head's length; -1 on EOF, error, timeout or
 * a head over cap. */
static ssize_t read_head(int fd, char *buf, size_t cap, size_t *head_len)
{
  size_t got = 0;
  while (got < cap) {
    if (wait_fd(fd, POLLIN, IO_TIMEOUT_MS) <= 0)
      return -1;
    ssize_t n = recv(fd, buf + got, cap - got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (n <= 0)
      return -1;
    got += (size_t)n;
    for (size_t i = 3; i < got; i++)
      if (memcmp(buf + i - 3, "\r\n\r\n", 4) == 0)
        return *head_len = i + 1, (ssize_t)got;
  }
  return -1;
}

/* The value of header `name` in a raw head (lines after the status line), copied to out. */
static int head_value(const char *head, const char *name, char *out, size_t outlen)
{
  size_t n = strlen(name);
  for (const char *l = strstr(head, "\r\n"); l && l[2] && !(l[2] == '\r');
       l = strstr(l + 2, "\r\n")) {
    const char *s = l + 2;
    if (strncasecmp(s, name, n) == 0 && s[n] == ':') {
      s += n + 1;
      s += strspn(s, " \t");
      size_t len = strcspn(s, "\r");
      while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
      snprintf(out, outlen, "%.*s", (int)len, s);
      return 1;
    }
  }
  return 0;
}

/* Copies the head's headers into r, leaving out hop-by-hop ones (ingress_int.h). */
static void add_headers(struct MHD_Response *r, char *head)
{
  char *save = NULL;
  char *line = strtok_r(head, "\r\n", &save); /* the status line */
  while ((line = strtok_r(NULL, "\r\n", &save))) {
    char *colon = strchr(line, ':');
    if (!colon || abx_ingress_hop_by_hop(line, (size_t)(colon - line)))
      continue;
    *colon = 0;
    const char *v = colon + 1;
    v += strspn(v, " \t");
    MHD_add_response_header(r, line, v);
  }
}

static void *relay_main(void *arg)
{
  struct relay *rl = arg;
  char *b[2] = {malloc(RELAY_BUF), malloc(RELAY_BUF)}; /* [0] client->up, [1] up->client */
  size_t len[2] = {0, 0}, off[2] = {0, 0};
  int eof[2] = {0, 0}; /* [0] the client ended its side, [1] upstream did */
  int fds[2] = {rl->client, rl->up};
  if (b[0] && b[1] && rl->early_len <= RELAY_BUF) {
    memcpy(b[1], rl->early, rl->early_len);
    len[1] = rl->early_len;
  }
  while (b[0] && b[1]) {
    struct pollfd p[3];
    for (int d = 0; d < 2; d++) { /* direction d reads fds[d] and writes fds[1 - d] */
      p[d].fd = fds[d];
      p[d].events = 0;
      p[d].revents = 0;
    }
    for (int d = 0; d < 2; d++) {
      if (!eof[d] && len[d] == 0)
        p[d].events |= POLLIN;
      if (len[d] > off[d])
        p[1 - d].events |= POLLOUT;
    }
    p[2].fd = g_stop_pipe[0];
    p[2].events = POLLIN;
    p[2].revents = 0;
    if ((eof[0] && eof[1] && len[0] == 0 && len[1] == 0))
      break;
    int r = poll(p, 3, -1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 || p[2].revents)
      break;
    int failed = 0;
    for (int d = 0; d < 2 && !failed; d++) {
      int src = d, dst = 1 - d;
      if (len[d] > off[d] && (p[dst].revents & (POLLOUT | POLLERR | POLLHUP))) {
        ssize_t n = send(fds[dst], b[d] + off[d], len[d] - off[d], MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EINTR)
          failed = 1;
        else if (n > 0 && (off[d] += (size_t)n) == len[d])
          off[d] = len[d] = 0;
        if (!failed && len[d] == 0 && eof[d])
          shutdown(fds[dst], SHUT_WR);
      }
      if (!failed && !eof[d] && len[d] == 0 && (p[src].revents & (POLLIN | POLLHUP | POLLERR))) {
        ssize_t n = recv(fds[src], b[d], RELAY_BUF, MSG_DONTWAIT);
        if (n > 0) {
          len[d] = (size_t)n;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          eof[d] = 1;
          if (n < 0)
            failed = 1;
          else
            shutdown(fds[dst], SHUT_WR);
        }
      }
    }
    if (failed)
      break;
  }
  free(b[0]);
  free(b[1]);
  close(rl->up);
  MHD_upgrade_action(rl->urh, MHD_UPGRADE_ACTION_CLOSE);
  free(rl->early);
  free(rl);
  pthread_mutex_lock(&g_mu);
  g_active--;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

struct upctx {
  int up;
  char *early;
  size_t early_len;
};

/* libmicrohttpd sent the 101: start the relay (never blocks the daemon's thread). */
static void on_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra_in,
                        size_t extra_in_size, MHD_socket sock,
                        struct MHD_UpgradeResponseHandle *urh)
{
  (void)c, (void)con_cls;
  struct upctx *u = cls;
  struct relay *rl = calloc(1, sizeof *rl);
  int ok = rl != NULL;
  /* bytes the client sent after its head go upstream first */
  if (ok && extra_in_size > 0 && send_all(u->up, extra_in, extra_in_size) != 0)
    ok = 0;
  pthread_attr_t at;
  pthread_t th;
  if (ok) {
    rl->up = u->up, rl->client = sock, rl->urh = urh;
    rl->early = u->early, rl->early_len = u->early_len;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 * 1024);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&g_mu);
    ok = !g_stopping && pthread_create(&th, &at, relay_main, rl) == 0;
    if (ok)
      g_active++;
    pthread_mutex_unlock(&g_mu);
    pthread_attr_destroy(&at);
  }
  if (!ok) {
    free(rl);
    free(u->early);
    close(u->up);
    MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
  }
  free(u);
}

static enum MHD_Result bad_answer(struct MHD_Connection *c, const struct abx_route *route,
                                  const char *why)
{
  char msg[200];
  snprintf(msg, sizeof msg, "The sandbox is running but the port answered badly: %s", why);
  return abx_http_json(
      c, 502, json_pack("{s:s,s:s,s:i}", "sandboxId", route->id, "message", msg, "code", 502));
}

/* A non-101 answer: relayed as an ordinary response (its body read to Content-Length or EOF,
 * at most BODY_MAX). */
static enum MHD_Result plain_answer(struct MHD_Connection *c, const struct abx_route *route, int up,
                                    char *buf, size_t got, size_t head_len, unsigned status)
{
  char cl[32];
  size_t want = BODY_MAX;
  buf[head_len - 2] = 0; /* the head ends with its last header line's CRLF */
  if (head_value(buf, "Content-Length", cl, sizeof cl)) {
    char *end;
    unsigned long long v = strtoull(cl, &end, 10);
    if (*end || v > BODY_MAX)
      return bad_answer(c, route, "a body over 1 MiB in answer to an upgrade");
    want = (size_t)v;
  }
  size_t blen = got - head_len;
  char *body = malloc(BODY_MAX + 1);
  if (!body)
    return abx_http_error(c, 500, "out of memory");
  memcpy(body, buf + head_len, blen < BODY_MAX ? blen : BODY_MAX);
  if (blen > want)
    blen = want;
  while (blen < want && wait_fd(up, POLLIN, IO_TIMEOUT_MS) > 0) {
    ssize_t n = recv(up, body + blen, want - blen, 0);
    if (n <= 0)
      break;
    blen += (size_t)n;
  }
  struct MHD_Response *r = MHD_create_response_from_buffer(blen, body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  add_headers(r, buf);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

/* Connects a socket made inside `netns` (closed here) to 127.0.0.1:<port>, within IO_TIMEOUT_MS:
 * the socket (non-blocking, TCP_NODELAY), or -1 with the answer queued in *sent (the port-closed
 * 502 for a refused connection, else a bad answer naming the error). */
static int connect_upstream(struct MHD_Connection *c, const struct abx_route *route, int netns,
                            enum MHD_Result *sent)
{
  int up = abx_netns_socket_fd(netns);
  close(netns);
  if (up < 0) {
    *sent = bad_answer(c, route, strerror(errno));
    return -1;
  }
  fcntl(up, F_SETFL, fcntl(up, F_GETFL) | O_NONBLOCK);
  int one = 1;
  setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)route->port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int rc = connect(up, (struct sockaddr *)&sa, sizeof sa);
  if (rc != 0 && errno == EINPROGRESS) {
    int err = ETIMEDOUT;
    socklen_t el = sizeof err;
    if (wait_fd(up, POLLOUT, IO_TIMEOUT_MS) > 0)
      getsockopt(up, SOL_SOCKET, SO_ERROR, &err, &el);
    rc = err ? -1 : 0;
    errno = err;
  }
  if (rc != 0) {
    int e = errno;
    close(up);
    *sent =
        e == ECONNREFUSED ? abx_ingress_port_closed(c, route) : bad_answer(c, route, strerror(e));
    return -1;
  }
  return up;
}

/* Sends the request: `method path`, the client's end-to-end headers (Host already rewritten),
 * then the upgrade's own, which are hop-by-hop and were left out, and the body. 0, -1 when the
 * sandbox did not take it, -2 out of memory. */
static int send_request(int up, const char *method, const char *path, const struct curl_slist *hdrs,
                        const char *protocol, const char *body, size_t len)
{
  size_t cap = 1024 + strlen(path) + strlen(protocol);
  for (const struct curl_slist *l = hdrs; l; l = l->next)
    cap += strlen(l->data) + 2;
  char *req = malloc(cap);
  if (!req)
    return -2;
  size_t n = (size_t)snprintf(req, cap, "%s %s HTTP/1.1\r\n", method, path);
  for (const struct curl_slist *l = hdrs; l; l = l->next) {
    const char *colon = strchr(l->data, ':');
    if (colon && colon[1]) /* "Name;" and "Name:" are libcurl's empty/removal forms */
      n += (size_t)snprintf(req + n, cap - n, "%s\r\n", l->data);
  }
  n += (size_t)snprintf(req + n, cap - n, "Connection: Upgrade\r\nUpgrade: %s\r\n", protocol);
  if (len > 0)
    n += (size_t)snprintf(req + n, cap - n, "Content-Length: %zu\r\n", len);
  n += (size_t)snprintf(req + n, cap - n, "\r\n");
  int sent = send_all(up, req, n) == 0 && (len == 0 || send_all(up, body, len) == 0);
  free(req);
  return sent ? 0 : -1;
}

/* Reads the answer's head into *buf (malloc'd, HEAD_MAX + 1 bytes, NUL-terminated): *got the
 * bytes read (the head and what came after it; -1 for none), *head_len the head's. Returns the
 * status, 0 when there is no answer or its status line is malformed. */
static unsigned read_answer_head(int up, char **buf, ssize_t *got, size_t *head_len)
{
  *buf = malloc(HEAD_MAX + 1);
  *got = *buf ? read_head(up, *buf, HEAD_MAX, head_len) : -1;
  unsigned status = 0;
  if (*got > 0) {
    char *b = *buf;
    b[*got] = 0;
    if (strncmp(b, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)b[9]) ||
        sscanf(b + 9, "%3u", &status) != 1 || status < 100 || status > 599)
      status = 0;
  }
  return status;
}

/* A 101: when it switches to the protocol asked for, answered with 101 and its headers; once
 * libmicrohttpd has sent it the relay starts (on_upgraded) and owns `up` (*kept set). Otherwise
 * a bad answer (Go: "backend tried to switch protocol"). */
static enum MHD_Result switch_protocols(struct MHD_Connection *c, const struct abx_route *route,
                                        int up, char *buf, size_t got, size_t head_len,
                                        const char *protocol, int *kept)
{
  char proto[256] = "";
  buf[head_len - 2] = 0; /* the head ends with its last header line's CRLF */
  head_value(buf, "Upgrade", proto, sizeof proto);
  if (strcasecmp(proto, protocol) != 0)
    return bad_answer(c, route, "it switched to another protocol than the one asked for");
  struct upctx *u = calloc(1, sizeof *u);
  struct MHD_Response *r = u ? MHD_create_response_for_upgrade(on_upgraded, u) : NULL;
  if (!r) {
    free(u);
    return abx_http_error(c, 500, "out of memory");
  }
  u->up = up;
  u->early_len = got - head_len;
  u->early = malloc(u->early_len + 1);
  if (u->early)
    memcpy(u->early, buf + head_len, u->early_len);
  else
    u->early_len = 0;
  MHD_add_response_header(r, "Upgrade", proto);
  add_headers(r, buf);
  enum MHD_Result ret = MHD_queue_response(c, 101, r);
  MHD_destroy_response(r);
  if (ret == MHD_YES) {
    *kept = 1; /* up belongs to the relay now (or is closed by on_upgraded) */
    return ret;
  }
  free(u->early);
  free(u);
  return ret;
}

enum MHD_Result abx_ingress_upgrade(struct MHD_Connection *c, const struct abx_route *route,
                                    int netns, const char *method, const char *path,
                                    const struct curl_slist *hdrs, const char *protocol,
                                    const char *body, size_t len)
{
  pthread_mutex_lock(&g_mu);
  int busy = g_stopping || g_active >= ABX_UPGRADE_MAX;
  pthread_mutex_unlock(&g_mu);
  if (busy) {
    close(netns);
    return abx_http_json(c, 503,
                         json_pack("{s:s,s:s,s:i}", "sandboxId", route->id, "message",
                                   "Too many upgraded connections", "code", 503));
  }
  enum MHD_Result ret;
  int up = connect_upstream(c, route, netns, &ret);
  if (up < 0)
    return ret;
  int sent = send_request(up, method, path, hdrs, protocol, body, len);
  if (sent == -2) {
    close(up);
    return abx_http_error(c, 500, "out of memory");
  }
  char *buf = NULL;
  ssize_t got = -1;
  size_t head_len = 0;
  unsigned status = sent == 0 ? read_answer_head(up, &buf, &got, &head_len) : 0;
  int kept = 0;
  if (status == 0)
    ret =
        bad_answer(c, route, got < 0 ? "no HTTP answer to the upgrade" : "a malformed status line");
  else if (status != 101)
    ret = plain_answer(c, route, up, buf, (size_t)got, head_len, status);
  else
    ret = switch_protocols(c, route, up, buf, (size_t)got, head_len, protocol, &kept);
  free(buf);
  if (!kept)
    close(up);
  return ret;
}

int abx_ingress_upgrade_init(void)
{
  return pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK);
}

void abx_ingress_upgrade_stop(void)
{
  pthread_mutex_lock(&g_mu);
  g_stopping = 1;
  if (g_stop_pipe[1] >= 0 && write(g_stop_pipe[1], "x", 1) < 0) {
    /* the pipe is full only when it was written already */
  }
  while (g_active > 0)
    pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
}
