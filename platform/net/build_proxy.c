/*
 * build_proxy.c: the build sandboxes' egress proxy: the listener in the hub namespace, the
 * allowed sandboxes, one thread per connection relaying bytes with poll(). Contract in
 * build_proxy.h; the rules and the request parser are in build_proxy_rules.c.
 */
#include "build_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hub_service.h"
#include "netns.h"
#include "network.h"
#include "util/util.h"

#define BUF 16384
#define STACK (256u * 1024)

struct allowed {
  char id[32];
  struct allowed *next;
};

struct conn {
  int cfd, ofd; /* client (hub namespace), origin (host namespace; -1 until connected) */
  struct in_addr peer;
  char sandbox[32]; /* the allowed sandbox it came from, "" while unknown */
  struct conn *next;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* everything below */
static pthread_cond_t g_idle = PTHREAD_COND_INITIALIZER; /* signalled when g_nconns drops */
static int g_running, g_platform_port;
static struct abx_hub_service g_service = ABX_HUB_SERVICE_INIT(
    "build proxy", "build sandboxes have no registry access", ABX_BUILD_PROXY_PORT, 128);
static struct allowed *g_allowed;
static struct conn *g_conns;
static int g_nconns;

/* The platform's monotonic clock (util/clock.h) in milliseconds, the unit of poll(). */
static int64_t now_ms(void)
{
  return abx_mono_ns() / 1000000;
}

/* Write all of buf to a (blocking or not) socket within deadline. 0 or -1. */
static int write_all(int fd, const char *buf, size_t len, int64_t deadline)
{
  while (len > 0) {
    ssize_t k = send(fd, buf, len, MSG_NOSIGNAL);
    if (k > 0) {
      buf += k;
      len -= (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int left = (int)(deadline - now_ms());
      struct pollfd p = {fd, POLLOUT, 0};
      if (left <= 0 || poll(&p, 1, left) <= 0)
        return -1;
      continue;
    }
    return -1;
  }
  return 0;
}

static void answer(int fd, int status, const char *reason, const char *text)
{
  char buf[1024];
  int body = (int)strlen(text) + 1;
  int n = snprintf(buf, sizeof buf,
                   "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                   "Content-Length: %d\r\nConnection: close\r\n\r\n%s\n",
                   status, reason, body, text);
  if (n <= 0)
    return;
  int64_t until = now_ms() + 2000;
  if (write_all(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, until) != 0)
    return;
  /* A close with unread input sends a reset, which can destroy the answer before the client
   * reads it: end our side, then drain (at most 256 KiB, 2 s) until the client closes. */
  shutdown(fd, SHUT_WR);
  size_t drained = 0;
  while (drained < 256 * 1024) {
    struct pollfd p = {fd, POLLIN, 0};
    int left = (int)(until - now_ms());
    if (left <= 0 || poll(&p, 1, left) <= 0)
      break;
    ssize_t k = recv(fd, buf, sizeof buf, 0);
    if (k <= 0)
      break;
    drained += (size_t)k;
  }
}

/* The allowed sandbox whose link has `local` as hub end and `peer` as sandbox end, into id.
 * 1 when found. Under g_mu. */
static int client_sandbox(struct in_addr local, struct in_addr peer, char id[32])
{
  for (struct allowed *a = g_allowed; a; a = a->next) {
    struct in_addr hub, sb;
    if (abx_network_link_addrs(a->id, &hub, &sb) == 0 && hub.s_addr == local.s_addr &&
        sb.s_addr == peer.s_addr) {
      memcpy(id, a->id, 32);
      return 1;
    }
  }
  return 0;
}

/* Read the request head (up to the blank line) into buf. Returns its length with *extra the
 * bytes read beyond it, or -status (408, 431, 400) ; 0 when the client left. */
static int read_head(int fd, char *buf, size_t cap, size_t *got, int64_t deadline)
{
  *got = 0;
  for (;;) {
    buf[*got] = 0;
    char *e = strstr(buf, "\r\n\r\n");
    if (e)
      return (int)(e + 4 - buf);
    if (*got >= cap - 1)
      return -431;
    int left = (int)(deadline - now_ms());
    struct pollfd p = {fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, left) == 0)
      return -408;
    ssize_t k = recv(fd, buf + *got, cap - 1 - *got, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return 0;
    *got += (size_t)k;
  }
}

/* Connect to one checked address within the connect timeout; the socket stays non-blocking.
 * fd, or -1 with *timed_out set when it was the timeout. */
static int connect_to(const struct sockaddr *sa, socklen_t salen, int *timed_out)
{
  int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  if (connect(fd, sa, salen) == 0)
    return fd;
  if (errno == EINPROGRESS) {
    struct pollfd p = {fd, POLLOUT, 0};
    int r = poll(&p, 1, ABX_BUILD_PROXY_CONNECT_TIMEOUT_MS);
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (r > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
      return fd;
    if (r == 0)
      *timed_out = 1;
    errno = r == 0 ? ETIMEDOUT : soerr;
  }
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}

static void addr_text(const struct sockaddr *sa, char *out, size_t n)
{
  char a[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a, sizeof a);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof a);
  snprintf(out, n, "%s", a);
}

/* Resolve, check every address, connect to the first that answers. fd, or -1 after answering
 * the client (403, 502, 504). */
static int open_origin(struct conn *c, const struct abx_proxy_req *r)
{
  char port[8], why[160], msg[700], at[INET6_ADDRSTRLEN];
  snprintf(port, sizeof port, "%d", r->port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  if (strchr(r->host, ':'))
    hints.ai_flags = AI_NUMERICHOST;
  struct addrinfo *res = NULL;
  int g = getaddrinfo(r->host, port, &hints, &res);
  if (g != 0 || !res) {
    snprintf(msg, sizeof msg, "abxlua build proxy: cannot resolve %s: %s", r->host,
             g ? gai_strerror(g) : "no address");
    abx_slog("build proxy: %s: %s", c->sandbox, msg + 20);
    answer(c->cfd, 502, "Bad Gateway", msg);
    return -1;
  }
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
    if (abx_build_proxy_check_addr(ai->ai_addr, g_platform_port, why, sizeof why) != 0) {
      addr_text(ai->ai_addr, at, sizeof at);
      snprintf(msg, sizeof msg,
               "abxlua build proxy: refused %s:%d (%s): %s; build sandboxes "
               "may reach public addresses only",
               r->host, r->port, at, why);
      abx_slog("build proxy: %s: %s", c->sandbox, msg + 20);
      answer(c->cfd, 403, "Forbidden", msg);
      freeaddrinfo(res);
      return -1;
    }
  int fd = -1, timed_out = 0, e = 0;
  for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = connect_to(ai->ai_addr, ai->ai_addrlen, &timed_out);
    e = errno;
    addr_text(ai->ai_addr, at, sizeof at);
  }
  freeaddrinfo(res);
  if (fd < 0) {
    snprintf(msg, sizeof msg, "abxlua build proxy: cannot connect to %s:%d (%s): %s", r->host,
             r->port, at, strerror(e));
    abx_slog("build proxy: %s: %s", c->sandbox, msg + 20);
    answer(c->cfd, timed_out ? 504 : 502, timed_out ? "Gateway Timeout" : "Bad Gateway", msg);
    return -1;
  }
  abx_slog("build proxy: %s: %s %s:%d via %s", c->sandbox, r->method, r->host, r->port, at);
  return fd;
}

/* One direction's buffer. */
struct pipe_buf {
  char data[BUF];
  size_t off, len;
  int eof;  /* the source closed (or failed) */
  int shut; /* the sink has been shut down for writing */
};

/* Relay both ways until both directions ended, an error, or the idle timeout. */
static void relay(int a, int b, const char *pre, size_t prelen)
{
  struct pipe_buf *ab = calloc(1, sizeof *ab), *ba = calloc(1, sizeof *ba);
  if (!ab || !ba)
    goto out;
  fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK);
  fcntl(b, F_SETFL, fcntl(b, F_GETFL) | O_NONBLOCK);
  if (prelen > BUF)
    goto out;
  memcpy(ab->data, pre, prelen);
  ab->len = prelen;
  int64_t last = now_ms();
  int fds[2] = {a, b};
  struct pipe_buf *bufs[2] = {ab, ba}; /* bufs[i]: read from fds[i], written to fds[1 - i] */
  for (;;) {
    struct pollfd p[2] = {{a, 0, 0}, {b, 0, 0}};
    int done = 1;
    for (int i = 0; i < 2; i++) {
      struct pipe_buf *q = bufs[i];
      if (!q->eof && q->len < BUF)
        p[i].events |= POLLIN;
      if (q->len > q->off)
        p[1 - i].events |= POLLOUT;
      if (!q->shut)
        done = 0;
    }
    if (done)
      break;
    for (int i = 0; i < 2; i++)
      if (!p[i].events)
        p[i].fd = -1; /* else a hung-up socket we cannot read now would make poll() spin */
    int left = (int)(last + ABX_BUILD_PROXY_IDLE_TIMEOUT_MS - now_ms());
    int r = left > 0 ? poll(p, 2, left) : 0;
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break; /* idle timeout */
    for (int i = 0; i < 2; i++) {
      struct pipe_buf *q = bufs[i];
      if (p[i].revents & (POLLIN | POLLHUP | POLLERR) && !q->eof && q->len < BUF) {
        if (q->off == q->len)
          q->off = q->len = 0;
        ssize_t k = recv(fds[i], q->data + q->len, BUF - q->len, 0);
        if (k > 0) {
          q->len += (size_t)k;
          last = now_ms();
        } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
          q->eof = 1;
          if (k < 0)
            goto out; /* a reset: drop both sides */
        }
      }
      if (p[1 - i].revents & (POLLOUT | POLLERR | POLLHUP) && q->len > q->off) {
        ssize_t k = send(fds[1 - i], q->data + q->off, q->len - q->off, MSG_NOSIGNAL);
        if (k > 0) {
          q->off += (size_t)k;
          if (q->off == q->len)
            q->off = q->len = 0; /* drained: room to read again */
          last = now_ms();
        } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
          goto out;
        }
      }
      if (q->eof && q->off == q->len && !q->shut) {
        shutdown(fds[1 - i], SHUT_WR);
        q->shut = 1;
      }
    }
  }
out:
  free(ab);
  free(ba);
}

static void conn_end(struct conn *c)
{
  pthread_mutex_lock(&g_mu);
  for (struct conn **pp = &g_conns; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  g_nconns--;
  pthread_cond_broadcast(&g_idle);
  pthread_mutex_unlock(&g_mu);
  close(c->cfd);
  if (c->ofd >= 0)
    close(c->ofd);
  free(c);
}

static void *conn_main(void *arg)
{
  struct conn *c = arg;
  char *buf = malloc(ABX_BUILD_PROXY_HEAD_MAX + 1), why[200], msg[400];
  size_t got = 0;
  if (!buf)
    goto end;
  int hl = read_head(c->cfd, buf, ABX_BUILD_PROXY_HEAD_MAX + 1, &got,
                     now_ms() + ABX_BUILD_PROXY_HEAD_TIMEOUT_MS);
  if (hl <= 0) {
    if (hl == -408)
      answer(c->cfd, 408, "Request Timeout",
             "abxlua build proxy: no complete request head in "
             "10 s");
    else if (hl == -431)
      answer(c->cfd, 431, "Request Header Fields Too Large",
             "abxlua build proxy: request head over 16384 bytes");
    goto end;
  }
  struct sockaddr_in local = {0};
  socklen_t sl = sizeof local;
  getsockname(c->cfd, (struct sockaddr *)&local, &sl);
  char id[32] = "";
  pthread_mutex_lock(&g_mu);
  int ok = client_sandbox(local.sin_addr, c->peer, id);
  if (ok)
    memcpy(c->sandbox, id, sizeof id);
  pthread_mutex_unlock(&g_mu);
  if (!ok) {
    char pa[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &c->peer, pa, sizeof pa);
    snprintf(msg, sizeof msg,
             "abxlua build proxy: %s is not a build sandbox: only the sandboxes "
             "of a template build may use this proxy",
             pa);
    abx_slog("build proxy: %s", msg);
    answer(c->cfd, 403, "Forbidden", msg);
    goto end;
  }
  struct abx_proxy_req r;
  char save = buf[hl];
  buf[hl] = 0;
  int st = abx_build_proxy_parse(buf, (size_t)hl, &r, why, sizeof why);
  buf[hl] = save;
  if (st) {
    snprintf(msg, sizeof msg, "abxlua build proxy: bad request: %s", why);
    answer(c->cfd, st, "Bad Request", msg);
    goto end;
  }
  int ofd = open_origin(c, &r);
  if (ofd < 0) {
    free(r.head);
    goto end;
  }
  pthread_mutex_lock(&g_mu);
  c->ofd = ofd;
  pthread_mutex_unlock(&g_mu);
  size_t extra = got - (size_t)hl;
  int sent;
  if (r.connect) {
    static const char est[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    sent = write_all(c->cfd, est, sizeof est - 1, now_ms() + 10000);
  } else {
    sent = write_all(ofd, r.head, r.head_len, now_ms() + 10000);
  }
  free(r.head);
  if (sent == 0)
    relay(c->cfd, ofd, buf + hl, extra);
end:
  free(buf);
  conn_end(c);
  return NULL;
}

/* Connections from `peer` now. Under g_mu. */
static int per_client(struct in_addr peer)
{
  int n = 0;
  for (struct conn *c = g_conns; c; c = c->next)
    n += c->peer.s_addr == peer.s_addr;
  return n;
}

static void *accept_main(void *arg)
{
  (void)arg;
  for (;;) {
    int ready = abx_hub_service_wait(&g_service, -1);
    if (ready < 0)
      break;
    if (!ready)
      continue;
    struct sockaddr_in peer = {0};
    socklen_t pl = sizeof peer;
    int fd = accept4(g_service.listen_fd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    pthread_mutex_lock(&g_mu);
    int total = g_nconns, mine = per_client(peer.sin_addr);
    struct conn *c = NULL;
    if (total < ABX_BUILD_PROXY_MAX_TUNNELS && mine < ABX_BUILD_PROXY_MAX_PER_CLIENT &&
        (c = calloc(1, sizeof *c)) != NULL) {
      c->cfd = fd;
      c->ofd = -1;
      c->peer = peer.sin_addr;
      c->next = g_conns;
      g_conns = c;
      g_nconns++;
    }
    pthread_mutex_unlock(&g_mu);
    if (!c) {
      if (total >= ABX_BUILD_PROXY_MAX_TUNNELS)
        answer(fd, 503, "Service Unavailable", "abxlua build proxy: too many connections (128)");
      close(fd);
      continue;
    }
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, STACK);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, conn_main, c) != 0)
      conn_end(c);
    pthread_attr_destroy(&at);
  }
  return NULL;
}

int abx_build_proxy_start(int platform_port, char *err, size_t errlen)
{
  pthread_mutex_lock(&g_mu);
  if (g_running) {
    pthread_mutex_unlock(&g_mu);
    return 0;
  }
  g_platform_port = platform_port;
  int rc = abx_hub_service_start(&g_service, accept_main, NULL, err, errlen);
  if (rc == 0)
    g_running = 1;
  pthread_mutex_unlock(&g_mu);
  return rc;
}

int abx_build_proxy_allow(const char *sandbox_id, char *proxy_url, size_t n, char *err,
                          size_t errlen)
{
  struct in_addr hub, sb;
  if (strlen(sandbox_id) >= sizeof((struct allowed *)0)->id) {
    snprintf(err, errlen, "sandbox id too long");
    return -1;
  }
  if (abx_network_link_addrs(sandbox_id, &hub, &sb) != 0) {
    snprintf(err, errlen, "sandbox %s has no network link (not running, or links unavailable)",
             sandbox_id);
    return -1;
  }
  pthread_mutex_lock(&g_mu);
  if (!g_running) {
    pthread_mutex_unlock(&g_mu);
    snprintf(err, errlen, "the build proxy is not running");
    return -1;
  }
  struct allowed *a = g_allowed;
  while (a && strcmp(a->id, sandbox_id) != 0)
    a = a->next;
  if (!a && (a = calloc(1, sizeof *a)) != NULL) {
    snprintf(a->id, sizeof a->id, "%s", sandbox_id);
    a->next = g_allowed;
    g_allowed = a;
  }
  pthread_mutex_unlock(&g_mu);
  if (!a) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  char h[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &hub, h, sizeof h);
  snprintf(proxy_url, n, "http://%s:%d", h, ABX_BUILD_PROXY_PORT);
  return 0;
}

/* Shut down both sockets of the connections of `id` (every one when NULL). Under g_mu. */
static void cut(const char *id)
{
  for (struct conn *c = g_conns; c; c = c->next)
    if (!id || strcmp(c->sandbox, id) == 0) {
      shutdown(c->cfd, SHUT_RDWR);
      if (c->ofd >= 0)
        shutdown(c->ofd, SHUT_RDWR);
    }
}

void abx_build_proxy_revoke(const char *sandbox_id)
{
  pthread_mutex_lock(&g_mu);
  for (struct allowed **pp = &g_allowed; *pp; pp = &(*pp)->next)
    if (strcmp((*pp)->id, sandbox_id) == 0) {
      struct allowed *a = *pp;
      *pp = a->next;
      free(a);
      break;
    }
  cut(sandbox_id);
  pthread_mutex_unlock(&g_mu);
}

void abx_build_proxy_stop(void)
{
  pthread_mutex_lock(&g_mu);
  int running = g_running;
  g_running = 0;
  pthread_mutex_unlock(&g_mu);
  if (!running)
    return;
  abx_hub_service_stop(&g_service);
  pthread_mutex_lock(&g_mu);
  while (g_allowed) {
    struct allowed *a = g_allowed;
    g_allowed = a->next;
    free(a);
  }
  cut(NULL);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 3;
  while (g_nconns > 0 && pthread_cond_timedwait(&g_idle, &g_mu, &until) == 0)
    ;
  pthread_mutex_unlock(&g_mu);
}
