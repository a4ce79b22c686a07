/*
 * build_proxy.h: the HTTP egress proxy of build sandboxes (issue 11 part 3): the only way a
 * template build step reaches the package registries (Debian, npm) this machine reaches.
 *
 * Where:   it listens on 0.0.0.0:ABX_BUILD_PROXY_PORT inside the platform's hub network namespace
 *          (network.h; the socket is made there, netns.h, and keeps that namespace), so a sandbox
 *          reaches it at the hub end of its own link, http://10.200.x.y:3128, the one address
 *          its outbound rules always accept. Its outbound connections are made from the host's
 *          namespace (every thread of it stays there). Nothing is added to the host namespace.
 * Who:     only sandboxes given by abx_build_proxy_allow. A client is identified by its link: the
 *          connection's local address must be the hub end and its peer the sandbox end of the
 *          link of an allowed sandbox id, looked up at every connection (a link number reused
 *          after the sandbox is gone is not the sandbox any more). Sandboxes cannot forge a
 *          source address (no CAP_NET_RAW, sandbox.c). Anyone else gets 403 "... is not a
 *          build sandbox" and no outbound connection is made. A sandbox with
 *          allow_internet_access=false cannot reach the proxy at all (its own rules reject
 *          everything but loopback before the hub end is accepted, network.h "Rules"): build
 *          sandboxes are made with internet access on, which on this platform reaches the hub
 *          end only.
 * Speaks:  HTTP/1.x, two forms (RFC 9110 §9.3.6, RFC 9112 §3.2.2):
 *          - `CONNECT host:port` (https and any other TLS: npm, pip, git): 200 then a byte tunnel;
 *          - absolute-form `METHOD http://host[:port]/path` (apt's http://deb.debian.org): the
 *            request goes to the origin in origin-form with Host set from the URL, the headers
 *            Connection, Proxy-Connection, Keep-Alive, Proxy-Authorization dropped and
 *            `Connection: close` added; the answer is relayed until the origin closes. One request
 *            per client connection (apt and npm reconnect on Connection: close).
 *          Anything else (origin-form, https:// absolute-form, userinfo in the URL, obs-fold,
 *          bad host or port) is 400 with the reason.
 * Rules:   the proxy resolves the name itself (getaddrinfo in the host namespace) and refuses,
 *          with 403 text naming the destination, the address and the rule, when ANY address of
 *          the name is: loopback (127/8, ::1), unspecified or "this network" (0/8, ::), link-local
 *          (169.254/16, fe80::/10), private (10/8, 172.16/12, 192.168/16, CGNAT 100.64/10, ULA
 *          fc00::/7, site-local fec0::/10), multicast (224/4, ff00::/8), reserved or broadcast
 *          (240/4), an address of this machine (getifaddrs of the host namespace), or the
 *          platform's own port on a loopback or local address. IPv4-mapped (::ffff:a.b.c.d),
 *          IPv4-compatible and NAT64 (64:ff9b::/96) addresses are judged by their IPv4 address.
 *          TEST-NET ranges are not refused (this machine's registries live at 203.0.113.80).
 *          It then connects to exactly the addresses it checked (no second resolution, so DNS
 *          rebinding cannot swap them).
 * Limits:  at most ABX_BUILD_PROXY_MAX_TUNNELS connections at once (then 503), at most
 *          ABX_BUILD_PROXY_MAX_PER_CLIENT per client address (then the connection is closed), a
 *          request head of ABX_BUILD_PROXY_HEAD_MAX bytes (431) read within
 *          ABX_BUILD_PROXY_HEAD_TIMEOUT_MS (408), ABX_BUILD_PROXY_CONNECT_TIMEOUT_MS per address
 *          (504), ABX_BUILD_PROXY_IDLE_TIMEOUT_MS without a byte either way (closed). One small
 *          thread per connection (256 KiB stack, 2 x 16 KiB buffers, poll() on its two sockets)
 *          plus one accepting thread; no thread per transfer or byte.
 * Log:     one line per request on stderr (serve's log): client sandbox, target, address or the
 *          refusal.
 * Errors:  int functions return 0, or -1 with a message in err.
 */
#ifndef ABX_NET_BUILD_PROXY_H
#define ABX_NET_BUILD_PROXY_H

#include <jansson.h>
#include <stddef.h>
#include <sys/socket.h>

#define ABX_BUILD_PROXY_PORT 3128 /* in the hub namespace (squid's port; nothing else is there) */
#define ABX_BUILD_PROXY_MAX_TUNNELS 128
#define ABX_BUILD_PROXY_MAX_PER_CLIENT 32
#define ABX_BUILD_PROXY_HEAD_MAX 16384 /* bytes of request line + headers */
#define ABX_BUILD_PROXY_HEAD_TIMEOUT_MS 10000
#define ABX_BUILD_PROXY_CONNECT_TIMEOUT_MS 10000 /* per address tried */
#define ABX_BUILD_PROXY_IDLE_TIMEOUT_MS 120000

/* Start the proxy once (later calls return 0 and change nothing): make the hub namespace when
 * needed (network.h abx_network_hub_fd), listen there, start the accepting thread.
 * `platform_port` is serve's own TCP port (refused on every loopback and local address).
 * -1 with err when sandbox links are unavailable or the port cannot be bound. */
int abx_build_proxy_start(int platform_port, char *err, size_t errlen);

/* Let sandbox `sandbox_id` (running: its link must exist) use the proxy, and give the URL its
 * processes should use as http_proxy and https_proxy: "http://<hub end of its link>:3128" in
 * proxy_url (n >= 32 bytes). Allowing twice is allowed. -1 with err when the proxy is not
 * started, the sandbox has no link, or out of memory. */
int abx_build_proxy_allow(const char *sandbox_id, char *proxy_url, size_t n, char *err,
                          size_t errlen);

/* Withdraw the sandbox's permission and cut its open connections (shutdown of both sockets).
 * Unknown ids are ignored. Call it when the build step's sandbox is done. */
void abx_build_proxy_revoke(const char *sandbox_id);

/* Stop accepting, cut every connection, wait up to 3 s for their threads (a thread blocked in
 * getaddrinfo ends on its own) and forget every allowed sandbox. A later start works again. */
void abx_build_proxy_stop(void);

/* The environment a build step runs with to use the proxy at `proxy_url` (new object of
 * strings): http_proxy, https_proxy, HTTP_PROXY, HTTPS_PROXY = proxy_url; no_proxy and NO_PROXY
 * = "localhost,127.0.0.1"; NODE_EXTRA_CA_CERTS = /etc/ssl/certs/ca-certificates.crt (Node has
 * its own CA list; with this, node and npm also trust the system bundle, as curl and apt do).
 * NULL when out of memory. */
json_t *abx_build_proxy_env(const char *proxy_url);

/* ---- the rules, for tests (build_proxy_rules.c) ----------------------------------------- */

/* Judge destination `sa` (AF_INET or AF_INET6 with its port) as "Rules" above: 0 allowed, or -1
 * with the rule in why (e.g. "loopback address (127.0.0.0/8)"). */
int abx_build_proxy_check_addr(const struct sockaddr *sa, int platform_port, char *why,
                               size_t whylen);

/* A parsed request head. */
struct abx_proxy_req {
  int connect; /* 1: CONNECT, 0: absolute-form http:// */
  char method[16];
  char host[256]; /* name or address, without brackets */
  int port;       /* 1..65535 */
  char *head;     /* absolute-form only: the head to send to the origin (malloc'd) */
  size_t head_len;
};

/* Parse the request head `buf[0..len)` (ending with the blank line). 0, or the HTTP status
 * (400) with the reason in why. On 0 the caller frees r->head. */
int abx_build_proxy_parse(const char *buf, size_t len, struct abx_proxy_req *r, char *why,
                          size_t whylen);

#endif
