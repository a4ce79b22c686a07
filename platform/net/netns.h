/*
 * netns.h: open TCP (and netlink) sockets inside a sandbox's network namespace, and hook them into libcurl.
 *
 * How:     the calling thread saves its own netns (/proc/thread-self/ns/net), setns()es into the
 *          sandbox's netns, creates the socket, and setns()es back. A socket keeps the namespace it
 *          was created in, so connect() to 127.0.0.1:PORT then reaches the sandbox's loopback
 *          (DESIGN.md "The local platform").
 * Errors:  -1 with errno set; failing to return to the original namespace aborts the process (a
 *          thread left in a sandbox's namespace would be a security hole).
 */
#ifndef ABX_NET_NETNS_H
#define ABX_NET_NETNS_H

#include <curl/curl.h>
#include <sys/types.h>

/* Open /proc/<pid>/ns/net read-only, close-on-exec. Returns the fd or -1. */
int abx_netns_open(pid_t pid);

/* Create an AF_INET stream socket (SOCK_CLOEXEC) inside the network namespace `netns_fd`.
 * Returns the socket fd or -1 (errno set). */
int abx_netns_socket_fd(int netns_fd);

/* A TCP listening socket on 0.0.0.0:port (SO_REUSEADDR, listen(backlog)) inside the network
 * namespace `netns_fd`: how the hub namespace's services (build_proxy.h, git_server.h) listen
 * where every sandbox's link reaches them. Returns the fd or -1 (errno set; nothing left open). */
int abx_netns_listen(int netns_fd, int port, int backlog);

/* socket(domain, type | SOCK_CLOEXEC, protocol) inside the network namespace `netns_fd` (e.g. a
 * NETLINK_ROUTE socket that configures that namespace's links, rtnl.h). The fd or -1 (errno). */
int abx_netns_socket(int netns_fd, int domain, int type, int protocol);

/* Make `curl` open its sockets inside `*netns_fd` (CURLOPT_OPENSOCKETFUNCTION). `netns_fd` must
 * outlive the transfer; the caller keeps ownership of it. */
void abx_netns_curl(CURL *curl, int *netns_fd);

#endif
