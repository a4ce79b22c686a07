/*
 * netns.c: sockets created inside a sandbox's network namespace. Contract in netns.h.
 */
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/util.h"

int abx_netns_open(pid_t pid)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
  return open(path, O_RDONLY | O_CLOEXEC);
}

int abx_netns_socket_fd(int netns_fd)
{
  return abx_netns_socket(netns_fd, AF_INET, SOCK_STREAM, 0);
}

int abx_netns_listen(int netns_fd, int port, int backlog)
{
  int fd = abx_netns_socket_fd(netns_fd);
  if (fd < 0)
    return -1;
  int one = 1;
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_ANY)};
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, backlog) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int abx_netns_socket(int netns_fd, int domain, int type, int protocol)
{
  int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (self < 0)
    return -1;
  if (setns(netns_fd, CLONE_NEWNET) != 0) {
    int e = errno;
    close(self);
    errno = e;
    return -1;
  }
  int s = socket(domain, type | SOCK_CLOEXEC, protocol);
  int e = errno;
  if (setns(self, CLONE_NEWNET) != 0) {
    abx_slog("cannot return to the host network namespace");
    abort();
  }
  close(self);
  errno = e;
  return s;
}

static curl_socket_t open_cb(void *cls, curlsocktype purpose, struct curl_sockaddr *addr)
{
  (void)purpose;
  if (addr->family != AF_INET)
    return CURL_SOCKET_BAD;
  int s = abx_netns_socket_fd(*(int *)cls);
  return s < 0 ? CURL_SOCKET_BAD : s;
}

void abx_netns_curl(CURL *curl, int *netns_fd)
{
  curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, open_cb);
  curl_easy_setopt(curl, CURLOPT_OPENSOCKETDATA, netns_fd);
}
