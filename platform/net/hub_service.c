/*
 * hub_service.c: the listener and acceptor thread of a service on the hub namespace. Contract in
 * hub_service.h.
 */
#include "hub_service.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "netns.h"
#include "network.h"

int abx_hub_service_start(struct abx_hub_service *s, void *(*acceptor)(void *), void *arg,
                          char *err, size_t errlen)
{
  int hub = abx_network_hub_fd();
  if (hub < 0) {
    snprintf(err, errlen, "sandbox links are unavailable (see the warning above): %s",
             s->unreachable);
    return -1;
  }
  int fd = abx_netns_listen(hub, s->port, s->backlog);
  if (fd < 0) {
    snprintf(err, errlen, "cannot listen on 0.0.0.0:%d in the hub namespace: %s", s->port,
             strerror(errno));
    return -1;
  }
  if (pipe2(s->wake, O_CLOEXEC) != 0) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    s->wake[0] = s->wake[1] = -1;
    close(fd);
    return -1;
  }
  s->listen_fd = fd;
  if (pthread_create(&s->acceptor, NULL, acceptor, arg) != 0) {
    snprintf(err, errlen, "cannot start the %s thread", s->name);
    close(s->wake[0]);
    close(s->wake[1]);
    close(fd);
    s->wake[0] = s->wake[1] = s->listen_fd = -1;
    return -1;
  }
  return 0;
}

int abx_hub_service_wait(struct abx_hub_service *s, int timeout_ms)
{
  struct pollfd p[2] = {{s->listen_fd, POLLIN, 0}, {s->wake[0], POLLIN, 0}};
  int n = poll(p, 2, timeout_ms);
  if (n < 0 && errno != EINTR)
    return -1;
  if (n <= 0)
    return 0;
  if (p[1].revents)
    return -1;
  return (p[0].revents & POLLIN) ? 1 : 0;
}

void abx_hub_service_stop(struct abx_hub_service *s)
{
  ssize_t w = write(s->wake[1], "x", 1);
  (void)w;
  pthread_join(s->acceptor, NULL);
  close(s->listen_fd);
  close(s->wake[0]);
  close(s->wake[1]);
  s->listen_fd = s->wake[0] = s->wake[1] = -1;
}
