/*
 * ingress_loop.c: every proxied transfer on one libcurl multi handle driven by one thread, and
 * the content reader that hands the answer to libmicrohttpd with backpressure both ways.
 * Contract in ingress_int.h; the model in docs/PLATFORM.md "Threads".
 */
#include "ingress_int.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"
#include "ingress.h"

/* How often a stream whose connection is suspended checks that its client is still there:
 * libmicrohttpd watches no suspended socket. 2 s, as the thread-per-stream proxy had. */
#define GONE_CHECK_NS (2000LL * 1000000)

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* g_kicks, g_new, g_stop */
static struct abx_stream *g_kicks, *g_new;
static int g_stop, g_running;
static CURLM *g_multi;
static pthread_t g_thread;
static struct abx_stream *g_live; /* loop thread only */

struct abx_stream *abx_stream_new(void)
{
  struct abx_stream *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->curl = curl_easy_init();
  if (!s->curl) {
    free(s);
    return NULL;
  }
  pthread_mutex_init(&s->mu, NULL);
  s->refs = 2;
  s->clen = -1;
  s->netns_fd = -1;
  s->client_fd = -1;
  return s;
}

void abx_stream_release(struct abx_stream *s)
{
  pthread_mutex_lock(&s->mu);
  int left = --s->refs;
  pthread_mutex_unlock(&s->mu);
  if (left)
    return;
  curl_easy_cleanup(s->curl);
  curl_slist_free_all(s->req_hdrs);
  curl_slist_free_all(s->resp);
  free(s->body);
  free(s->buf);
  if (s->netns_fd >= 0)
    close(s->netns_fd);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

int abx_stream_stopping(void)
{
  pthread_mutex_lock(&g_mu);
  int st = g_stop;
  pthread_mutex_unlock(&g_mu);
  return st;
}

/* Resume the connection if it waits for what is now there. Caller holds s->mu. */
static void wake_locked(struct abx_stream *s)
{
  if (!s->conn)
    return;
  if ((s->wait_head && (s->head_done || s->aborted)) ||
      (s->wait_data && (s->wpos > s->rpos || s->eof || s->aborted))) {
    s->wait_head = s->wait_data = 0;
    MHD_resume_connection(s->conn);
  }
}

/* Ask the loop thread to look at s (unpause or abort). Caller holds s->mu. */
static int kick_locked(struct abx_stream *s)
{
  if (s->kicked)
    return 0;
  s->kicked = 1;
  s->refs++;
  return 1;
}

static void kick_push(struct abx_stream *s)
{
  pthread_mutex_lock(&g_mu);
  s->kick_next = g_kicks;
  g_kicks = s;
  pthread_mutex_unlock(&g_mu);
  curl_multi_wakeup(g_multi);
}

/* ---- libcurl callbacks (loop thread) ------------------------------------------------------- */

int abx_ingress_hop_by_hop(const char *name, size_t n)
{
  static const char *drop[] = {"connection", "keep-alive", "transfer-encoding", "te",    "trailer",
                               "upgrade",    "host",       "content-length",    "expect"};
  for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
    if (strlen(drop[i]) == n && strncasecmp(name, drop[i], n) == 0)
      return 1;
  return n >= 6 && strncasecmp(name, "proxy-", 6) == 0;
}

static size_t on_header(char *line, size_t sz, size_t n, void *cls)
{
  struct abx_stream *s = cls;
  size_t len = sz * n;
  pthread_mutex_lock(&s->mu);
  if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
    const char *sp = memchr(line, ' ', len);
    s->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    curl_slist_free_all(s->resp);
    s->resp = NULL;
    s->clen = -1;
  } else if (len <= 2 && (line[0] == '\r' || line[0] == '\n')) {
    if (s->status >= 200 && !s->head_done) {
      s->head_done = 1;
      wake_locked(s);
    }
  } else {
    const char *colon = memchr(line, ':', len);
    if (colon && !abx_ingress_hop_by_hop(line, (size_t)(colon - line))) {
      char *h = strndup(line, len);
      if (h) {
        h[strcspn(h, "\r\n")] = 0;
        struct curl_slist *nl = curl_slist_append(s->resp, h);
        if (nl)
          s->resp = nl;
        free(h);
      }
    } else if (colon && (size_t)(colon - line) == 14 &&
               strncasecmp(line, "content-length", 14) == 0) {
      s->clen = strtoll(colon + 1, NULL, 10);
    }
  }
  pthread_mutex_unlock(&s->mu);
  return len;
}

static size_t on_body(char *data, size_t sz, size_t n, void *cls)
{
  struct abx_stream *s = cls;
  size_t len = sz * n;
  pthread_mutex_lock(&s->mu);
  if (s->aborted) {
    pthread_mutex_unlock(&s->mu);
    return 0; /* CURLE_WRITE_ERROR: the transfer ends */
  }
  if (!s->head_done) /* a body without a blank line first cannot happen, but be safe */
    s->head_done = 1;
  if (s->wpos - s->rpos >= ABX_INGRESS_BUF) { /* full: libcurl keeps this chunk and waits */
    s->recv_paused = 1;
    pthread_mutex_unlock(&s->mu);
    return CURL_WRITEFUNC_PAUSE;
  }
  if (s->wpos + len > s->cap && s->rpos > 0) { /* move what is unread to the front */
    memmove(s->buf, s->buf + s->rpos, s->wpos - s->rpos);
    s->wpos -= s->rpos;
    s->rpos = 0;
  }
  if (s->wpos + len > s->cap) { /* at most ABX_INGRESS_BUF + one chunk */
    size_t cap = s->cap ? s->cap : 16384;
    while (cap < s->wpos + len)
      cap *= 2;
    char *nb = realloc(s->buf, cap);
    if (!nb) {
      pthread_mutex_unlock(&s->mu);
      return 0;
    }
    s->buf = nb;
    s->cap = cap;
  }
  memcpy(s->buf + s->wpos, data, len);
  s->wpos += len;
  wake_locked(s);
  pthread_mutex_unlock(&s->mu);
  return len;
}

void abx_stream_setup(struct abx_stream *s)
{
  curl_easy_setopt(s->curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(s->curl, CURLOPT_HEADERDATA, s);
  curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(s->curl, CURLOPT_PRIVATE, (char *)s);
}

/* ---- the content reader (the daemon's thread) --------------------------------------------- */

ssize_t abx_stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
  (void)pos;
  struct abx_stream *s = cls;
  int kick = 0;
  ssize_t ret;
  pthread_mutex_lock(&s->mu);
  if (s->wpos > s->rpos) {
    size_t k = s->wpos - s->rpos < max ? s->wpos - s->rpos : max;
    memcpy(out, s->buf + s->rpos, k);
    s->rpos += k;
    if (s->rpos == s->wpos)
      s->rpos = s->wpos = 0;
    if (s->recv_paused && !s->want_unpause && s->wpos - s->rpos <= ABX_INGRESS_BUF / 2) {
      s->want_unpause = 1;
      kick = kick_locked(s);
    }
    ret = (ssize_t)k;
  } else if (s->aborted || (s->eof && s->result != CURLE_OK)) {
    ret = MHD_CONTENT_READER_END_WITH_ERROR;
  } else if (s->eof) {
    ret = MHD_CONTENT_READER_END_OF_STREAM;
  } else { /* nothing yet: the loop resumes the connection when bytes or the end arrive */
    s->wait_data = 1;
    MHD_suspend_connection(s->conn);
    ret = 0;
  }
  pthread_mutex_unlock(&s->mu);
  if (kick)
    kick_push(s);
  return ret;
}

void abx_stream_drop(struct abx_stream *s)
{
  pthread_mutex_lock(&s->mu);
  s->aborted = 1;
  s->conn = NULL;
  s->wait_head = s->wait_data = 0;
  int kick = kick_locked(s);
  pthread_mutex_unlock(&s->mu);
  if (kick)
    kick_push(s);
  abx_stream_release(s);
}

void abx_stream_free(void *cls)
{
  abx_stream_drop(cls);
}

/* ---- the loop thread ---------------------------------------------------------------------- */

/* The transfer ended (rc) or is given up: out of the multi handle, the connection woken. */
static void finish(struct abx_stream *s, CURLcode rc)
{
  if (!s->in_multi)
    return;
  curl_multi_remove_handle(g_multi, s->curl);
  s->in_multi = 0;
  if (s->prev)
    s->prev->next = s->next;
  else
    g_live = s->next;
  if (s->next)
    s->next->prev = s->prev;
  s->prev = s->next = NULL;
  pthread_mutex_lock(&s->mu);
  s->result = rc;
  s->eof = 1;
  if (!s->head_done) {
    s->head_done = 1;
    s->failed = 1;
  }
  wake_locked(s);
  pthread_mutex_unlock(&s->mu);
  abx_stream_release(s);
}

/* 1 once the client hung up. POLLRDHUP: the peer's FIN even behind unread bytes (under serve
 * --tls a client's close_notify stays unread in the socket). */
static int client_gone(int fd)
{
  if (fd < 0)
    return 0;
  struct pollfd pf = {.fd = fd, .events = POLLRDHUP};
  return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void sweep_gone(void)
{
  for (struct abx_stream *s = g_live, *nx; s; s = nx) {
    nx = s->next;
    pthread_mutex_lock(&s->mu);
    int waiting = s->wait_head || s->wait_data;
    if (waiting && client_gone(s->client_fd))
      s->aborted = 1;
    int ab = s->aborted;
    pthread_mutex_unlock(&s->mu);
    if (ab)
      finish(s, CURLE_ABORTED_BY_CALLBACK);
  }
}

static void *loop(void *unused)
{
  (void)unused;
  int64_t next_sweep = abx_mono_ns() + GONE_CHECK_NS;
  for (;;) {
    pthread_mutex_lock(&g_mu);
    struct abx_stream *nw = g_new, *kicks = g_kicks;
    g_new = g_kicks = NULL;
    int stop = g_stop;
    pthread_mutex_unlock(&g_mu);
    for (struct abx_stream *s = nw, *nx; s; s = nx) {
      nx = s->new_next;
      if (curl_multi_add_handle(g_multi, s->curl) != CURLM_OK) {
        pthread_mutex_lock(&s->mu);
        s->eof = s->head_done = s->failed = 1;
        s->result = CURLE_OUT_OF_MEMORY;
        wake_locked(s);
        pthread_mutex_unlock(&s->mu);
        abx_stream_release(s);
        continue;
      }
      s->in_multi = 1;
      s->next = g_live;
      if (g_live)
        g_live->prev = s;
      g_live = s;
    }
    for (struct abx_stream *s = kicks, *nx; s; s = nx) {
      nx = s->kick_next;
      pthread_mutex_lock(&s->mu);
      s->kicked = 0;
      int ab = s->aborted, up = s->want_unpause;
      s->want_unpause = 0;
      if (up)
        s->recv_paused = 0;
      pthread_mutex_unlock(&s->mu);
      if (ab)
        finish(s, CURLE_ABORTED_BY_CALLBACK);
      else if (up && s->in_multi)
        curl_easy_pause(s->curl, CURLPAUSE_CONT); /* may hand the held chunk to on_body now */
      abx_stream_release(s);
    }
    if (stop) {
      while (g_live) {
        pthread_mutex_lock(&g_live->mu);
        g_live->aborted = 1;
        pthread_mutex_unlock(&g_live->mu);
        finish(g_live, CURLE_ABORTED_BY_CALLBACK);
      }
      return NULL;
    }
    int running = 0;
    curl_multi_perform(g_multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(g_multi, &left)))
      if (m->msg == CURLMSG_DONE) {
        struct abx_stream *s = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
        if (s)
          finish(s, m->data.result);
      }
    int64_t now = abx_mono_ns();
    if (now >= next_sweep) {
      sweep_gone();
      next_sweep = now + GONE_CHECK_NS;
    }
    int wait_ms = (int)((next_sweep - now) / 1000000) + 1;
    curl_multi_poll(g_multi, NULL, 0, wait_ms, NULL);
  }
}

int abx_stream_loop_start(void)
{
  g_multi = curl_multi_init();
  if (!g_multi)
    return -1;
  if (pthread_create(&g_thread, NULL, loop, NULL) != 0) {
    curl_multi_cleanup(g_multi);
    g_multi = NULL;
    return -1;
  }
  g_running = 1;
  return 0;
}

void abx_stream_start(struct abx_stream *s, struct MHD_Connection *c)
{
  pthread_mutex_lock(&s->mu);
  s->conn = c;
  s->wait_head = 1;
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_lock(&g_mu);
  int stop = g_stop || !g_running;
  if (!stop) {
    s->new_next = g_new;
    g_new = s;
  }
  pthread_mutex_unlock(&g_mu);
  if (!stop) {
    curl_multi_wakeup(g_multi);
    return;
  }
  pthread_mutex_lock(&s->mu);
  s->aborted = s->eof = s->head_done = s->failed = 1;
  s->result = CURLE_ABORTED_BY_CALLBACK;
  wake_locked(s);
  pthread_mutex_unlock(&s->mu);
  abx_stream_release(s);
}

void abx_stream_loop_stop(void)
{
  pthread_mutex_lock(&g_mu);
  int was = g_running && !g_stop;
  g_stop = 1;
  pthread_mutex_unlock(&g_mu);
  if (!was)
    return;
  curl_multi_wakeup(g_multi);
  pthread_join(g_thread, NULL);
  /* kicks that came after the loop's last look (readers ending): their refs only */
  pthread_mutex_lock(&g_mu);
  struct abx_stream *kicks = g_kicks, *nw = g_new;
  g_kicks = g_new = NULL;
  pthread_mutex_unlock(&g_mu);
  for (struct abx_stream *s = kicks, *nx; s; s = nx) {
    nx = s->kick_next;
    abx_stream_release(s);
  }
  for (struct abx_stream *s = nw, *nx; s; s = nx) { /* cannot happen: start checks g_stop */
    nx = s->new_next;
    abx_stream_release(s);
  }
}
