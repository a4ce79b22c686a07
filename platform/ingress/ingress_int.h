/*
 * ingress_int.h: a proxied request in flight, shared by ingress.c (routing, the request's setup,
 * the answer's head) and ingress_loop.c (the one thread that drives every transfer on a libcurl
 * multi handle, and the content reader that feeds libmicrohttpd). Not a public interface.
 *
 * Threads: the loop thread runs libcurl (every curl_easy_* on s->curl after abx_stream_start);
 *          the daemon's thread runs the reader; both take s->mu for the fields below it. The
 *          connection is suspended while it waits for the head (wait_head) or for data
 *          (wait_data); the side that ends the wait resumes it (MHD_resume_connection) under mu.
 * Buffer:  the answer's bytes [rpos, wpos) of buf; libcurl is paused (CURL_WRITEFUNC_PAUSE) once
 *          ABX_INGRESS_BUF bytes wait, and let go again when the reader has taken half of them.
 */
#ifndef ABX_INGRESS_INGRESS_INT_H
#define ABX_INGRESS_INGRESS_INT_H

#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>

struct abx_route; /* ingress.h */

struct abx_stream {
  CURL *curl;
  struct curl_slist *req_hdrs;
  char *body; /* the request body (sent as CURLOPT_POSTFIELDS) */
  int netns_fd, client_fd;
  struct abx_stream *prev, *next; /* the loop's live list (loop thread only) */
  struct abx_stream *kick_next;   /* the loop's to-do list (under the loop's lock) */
  struct abx_stream *new_next;    /* the loop's list of transfers to add (under the loop's lock) */
  int in_multi;                   /* loop thread only */

  pthread_mutex_t mu;
  int refs; /* the loop's, the connection's, one per pending kick */
  struct MHD_Connection *conn;
  int wait_head, wait_data, kicked, want_unpause, recv_paused;
  int head_done, failed, eof, aborted;
  long status;
  long long clen;          /* upstream Content-Length, -1 when unknown */
  struct curl_slist *resp; /* "Name: value" lines */
  CURLcode result;
  char *buf;
  size_t rpos, wpos, cap;
};

/* A new stream: refs 2, clen -1, netns_fd -1, client_fd -1, curl made. NULL when out of memory. */
struct abx_stream *abx_stream_new(void);

/* Point s->curl's header and body callbacks (and CURLINFO_PRIVATE) at s. */
void abx_stream_setup(struct abx_stream *s);

/* 1 when the header `name` (n bytes) is hop-by-hop and never forwarded either way: Connection,
 * Keep-Alive, Transfer-Encoding, TE, Trailer, Upgrade, Host, Content-Length, Expect, Proxy-*
 * (RFC 9110 §7.6.1; Host and Content-Length are set by the proxy itself). */
int abx_ingress_hop_by_hop(const char *name, size_t n);

/* Drop one reference (the last frees everything). */
void abx_stream_release(struct abx_stream *s);

/* Hand s to the loop thread; c is suspended and is resumed once the head (or the failure) is
 * there. When the loop is stopped the stream fails at once (aborted) and c is resumed. */
void abx_stream_start(struct abx_stream *s, struct MHD_Connection *c);

/* The connection is done with s before a response owns it: abort the transfer, drop its ref. */
void abx_stream_drop(struct abx_stream *s);

/* The content reader and its free callback for MHD_create_response_from_callback (cls = s). */
ssize_t abx_stream_read(void *cls, uint64_t pos, char *out, size_t max);
void abx_stream_free(void *cls);

/* 1 once abx_stream_loop_stop has begun (no new transfer may start). */
int abx_stream_stopping(void);

/* Start the loop thread (once, at startup). 0, or -1 (serve cannot proxy). */
int abx_stream_loop_start(void);

/* Abort every transfer, resume every connection waiting on one, and end the loop thread. */
void abx_stream_loop_stop(void);

/* ---- protocol upgrades (ingress_upgrade.c) ---- */

/* upgraded connections relayed at once; beyond, 503 {"message":"Too many upgraded connections"} */
#define ABX_UPGRADE_MAX 128

/* The Upgrade header's value when the request asks for an upgrade (a Connection header with the
 * token "upgrade", RFC 9110 §7.8, and a non-empty Upgrade), else NULL. */
const char *abx_ingress_upgrade_wanted(struct MHD_Connection *c);

/* Proxies an upgrade request on a pool thread (blocking: connect, the request, the answer's head,
 * each within 30 s): connects to 127.0.0.1:<port> inside `netns` (closed here), sends `method
 * path`, the end-to-end headers `hdrs` ("Name: value" lines, libcurl's "Name;"/"Name:" forms
 * skipped), `Connection: Upgrade`, `Upgrade: <protocol>` and the body. A 101 whose Upgrade is
 * `protocol` is answered with 101 and its headers, then the bytes are relayed both ways by a
 * relay thread until either side ends (half-closes are passed on) or serve stops; a 101 naming
 * another protocol, no answer or a malformed one is 502 "The sandbox is running but the port
 * answered badly: ..."; any other status is relayed as an ordinary answer (body at most 1 MiB);
 * a refused connection is the port-closed 502. Returns the access handler's result. */
enum MHD_Result abx_ingress_upgrade(struct MHD_Connection *c, const struct abx_route *route,
                                    int netns, const char *method, const char *path,
                                    const struct curl_slist *hdrs, const char *protocol,
                                    const char *body, size_t len);

/* Once at startup: the relays' stop pipe. 0 or -1. */
int abx_ingress_upgrade_init(void);

/* Ends every relay (their connections closed) and refuses new upgrades; returns once all ended. */
void abx_ingress_upgrade_stop(void);

/* The port-closed 502 of ingress.c (ingress.h "Errors"). */
enum MHD_Result abx_ingress_port_closed(struct MHD_Connection *c, const struct abx_route *route);

#endif
