/*
 * hub_service.h: a service on the hub namespace (the build proxy, the git server): one listening
 * socket on 0.0.0.0:port inside the hub namespace, one acceptor thread, and a wake pipe that ends
 * it. The service keeps its own lock and its own state; this is the listener's life alone.
 *
 * Shapes:  struct abx_hub_service, made with ABX_HUB_SERVICE_INIT; the acceptor thread loops on
 *          abx_hub_service_wait and accepts on listen_fd.
 * Units:   timeouts in milliseconds.
 * Errors:  abx_hub_service_start returns 0, or -1 with a message in err[errlen] (no links, the
 *          port taken, no pipe, no thread) and nothing left open.
 * Threads: start and stop are called by the service under its own lock (start) or after it cleared
 *          its running flag (stop); one start, one stop.
 */
#ifndef ABX_NET_HUB_SERVICE_H
#define ABX_NET_HUB_SERVICE_H

#include <pthread.h>
#include <stddef.h>

struct abx_hub_service {
  const char *name;        /* "build proxy": in error messages */
  const char *unreachable; /* what sandboxes go without when links are unavailable */
  int port, backlog;
  int listen_fd, wake[2]; /* -1 while stopped */
  pthread_t acceptor;
};

#define ABX_HUB_SERVICE_INIT(name, unreachable, port, backlog)                                     \
  {                                                                                                \
    (name), (unreachable), (port), (backlog), -1, {-1, -1}, (pthread_t)0                           \
  }

/* Listens on 0.0.0.0:port in the hub namespace and starts `acceptor(arg)` on a thread of its own.
 * 0, or -1 with err ("sandbox links are unavailable ...: <unreachable>", "cannot listen on ...",
 * "pipe: ...", "cannot start the <name> thread"). */
int abx_hub_service_start(struct abx_hub_service *s, void *(*acceptor)(void *), void *arg,
                          char *err, size_t errlen);

/* For the acceptor thread: waits up to timeout_ms (-1: no bound) for a connection. 1: accept on
 * s->listen_fd now; 0: nothing yet (a timeout, a signal); -1: stop (woken by
 * abx_hub_service_stop, or poll failed), the thread returns. */
int abx_hub_service_wait(struct abx_hub_service *s, int timeout_ms);

/* Wakes the acceptor, joins it and closes the listener and the pipe. */
void abx_hub_service_stop(struct abx_hub_service *s);

#endif
