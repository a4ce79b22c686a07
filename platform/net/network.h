/*
 * network.h: each sandbox's link, its outbound rules and its traffic access token
 * (docs/protocol/e2b-control-plane.md §3.2 SandboxNetworkConfig, §3.4 PUT network, §7.4).
 *
 * Link:    the platform owns one "hub" network namespace, created on first use (unshare on a
 *          thread, kept alive by an fd; forwarding off, an nftables forward chain with policy drop;
 *          no NAT, no other interface). Sandbox k (1..16383) gets a veth pair: `abxh<k>` in the hub
 *          with 10.200.0.0 + 4k + 1 /30, `eth0` in the sandbox with + 2 /30 and a default route via
 *          the hub end, made with rtnetlink requests from serve itself (rtnl.h), not `ip` runs.
 *          Nothing is added to the host's own namespace: "allowed" outbound traffic
 *          can reach the hub end of the sandbox's own link and nothing beyond this machine.
 * Rules:   table `inet abx` in the sandbox's namespace, chain `out` (hook output): loopback and
 *          established flows pass; then allowOut entries accept (allow beats deny); denyOut entries,
 *          and everything when allow_internet_access is false, are rejected (TCP reset, else
 *          icmpx admin-prohibited); the hub end of the own link is accepted; the rest is rejected.
 *          Applied atomically in the sandbox's namespace by libnftables (nft.h; `nft -f -` when the
 *          library cannot be loaded); sandbox processes
 *          have no CAP_NET_ADMIN, so they cannot change them. allowOut domain names are accepted
 *          and reported but match nothing (no DNS leaves the machine).
 * Token:   allowPublicTraffic=false gives a 64-hex-digit trafficAccessToken; the ingress then
 *          requires header e2b-traffic-access-token on every port but envd's (constant-time
 *          comparison).
 * Without: when `nft` is missing or the hub (or a netlink socket in it) cannot be made, sandboxes keep loopback only
 *          (every outbound connection fails, so every deny holds) and a warning is printed once.
 * Locking: own mutexes; callers may hold the registry lock (order: registry, then network).
 * Errors:  int functions return 0, or -1 with a message in msg/err.
 */
#ifndef ABX_NET_NETWORK_H
#define ABX_NET_NETWORK_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>

#define ABX_NET_MAX_ENTRIES 256
#define ABX_NET_TOKEN_HEADER "e2b-traffic-access-token"

/* Outbound rules: internet (allow_internet_access) and string arrays allow/deny (owned, may be
 * NULL for empty). */
struct abx_net_rules {
  int internet;
  json_t *allow;
  json_t *deny;
};

/* Check one allowOut (allow_domain=1) or denyOut (0) entry: an IPv4/IPv6 address, a CIDR, or
 * (allowOut only) a domain name, optionally "*."-prefixed. 0 or -1. */
int abx_network_entry_ok(const char *s, int allow_domain);

/* The nftables ruleset for one sandbox (network_rules.c, applied by network.c): table inet abx
 * replaced atomically, chain out as "Rules" above, accepting hub_addr (the hub end of the
 * sandbox's link, dotted quad). malloc'd text, or NULL when out of memory. */
char *abx_net_ruleset(const struct abx_net_rules *rules, const char *hub_addr);

/* Record the network settings of sandbox `id` before it starts. Takes ownership of the json in
 * `rules`; `mask_host` (copied; NULL when not set) is its maskRequestHost, already checked
 * (abx_network_mask_ok). public_traffic=0 makes a traffic access token. 0, or -1 (no randomness
 * or memory, msg set). */
int abx_network_register(const char *id, int public_traffic, struct abx_net_rules *rules,
                         const char *mask_host, char *msg, size_t msglen);

/* Register sandbox `id` with the settings of sandbox `from` (a fork): public traffic, outbound
 * rules, internet access and maskRequestHost; a new traffic access token when public traffic is
 * off. Defaults when `from` is unknown. 0, or -1 with msg. */
int abx_network_clone(const char *from, const char *id, char *msg, size_t msglen);

/* maskRequestHost: the Host header the ingress sends to port `port` of sandbox `id` instead of
 * its own, with every ABX_NET_MASK_PORT replaced by the port number; never for envd's port
 * (e2b-dev/infra orchestrator/pkg/proxy/proxy.go, shared/pkg/proxy/pool/client.go: the original
 * Host then goes in X-Forwarded-Host). 1 with out set (truncated to outlen), 0 when not set or
 * empty. */
#define ABX_NET_MASK_PORT "${PORT}"
#define ABX_NET_MASK_MAX 255 /* bytes of a maskRequestHost (the expanded Host is never longer) */
int abx_network_mask_host(const char *id, int port, char *out, size_t outlen);

/* Check a maskRequestHost value as E2B's create does (e2b-dev/infra
 * api/internal/handlers/sandbox_create.go validateNetworkConfig: net.SplitHostPort, then IDNA
 * ToASCII, UseSTD3Rules, must stay ASCII), a little stricter where a Host header needs it:
 * "" (accepted and ignored, as E2B), or host[:port] (at most ABX_NET_MASK_MAX bytes) where host
 * is dot-separated labels of [A-Za-z0-9-] (at most 253 bytes) and port is digits and ${PORT}
 * placeholders (so the
 * placeholder is allowed only after the colon, as E2B's STD3 check refuses '$' in a host name).
 * 0, or -1 with a 400 message naming the field and the valid form. */
int abx_network_mask_ok(const char *s, char *msg, size_t msglen);

/* Give the started sandbox (its namespace `netns_fd`) its link and rules. No-op for an unknown
 * id or when networking is unavailable. 0, or -1 with err set (nothing is left behind). */
int abx_network_attach(const char *id, int netns_fd, char *err, size_t errlen);

/* Delete the sandbox's link (its veth pair) and free its address block; settings are kept. */
void abx_network_detach(const char *id);

/* Drop the sandbox's settings (after detach). Unknown ids are ignored. */
void abx_network_forget(const char *id);

/* Replace the outbound rules of a listed sandbox (PUT network): takes ownership of the json in
 * `rules` and of `netns` (the sandbox's network namespace fd, closed here; -1 when it has none: a
 * sandbox paused filesystem only gets the rules at its next boot); maskRequestHost and public
 * traffic are kept. The caller checks the sandbox is listed. Returns 204, 404 (no network
 * registered for `id`) or 500 (msg set; the old rules stay). */
int abx_network_update(const char *id, int netns, struct abx_net_rules *rules, char *msg,
                       size_t msglen);

/* Add the network fields of `id` to a response object. detail=0 (Sandbox): trafficAccessToken
 * (string or null). detail=1 (SandboxDetail): allowInternetAccess, network {allowPublicTraffic,
 * allowOut, denyOut, maskRequestHost when set}, and the extension abxNetwork {hostAddress,
 * sandboxAddress, hostNamespace} when the sandbox has a link. */
void abx_network_json(const char *id, json_t *o, int detail);

/* Ingress check of a request to `port` of sandbox `id` carrying `token` (NULL when absent).
 * NULL when allowed, else the 403 message. */
const char *abx_network_traffic_denied(const char *id, int port, const char *token);

/* The hub namespace, made on first use as by abx_network_attach: a borrowed fd (closed by
 * abx_network_shutdown), or -1 when sandbox links are unavailable. For build_proxy.h, which
 * listens there. */
int abx_network_hub_fd(void);

/* The two ends of sandbox `id`'s link, network byte order: `hub` (the hub end, abxh<k>) and
 * `sandbox` (its eth0). 0, or -1 when the id is unknown or has no link now. */
struct in_addr;
int abx_network_link_addrs(const char *id, struct in_addr *hub, struct in_addr *sandbox);

/* Shutdown: delete every remaining link and close the hub namespace. */
void abx_network_shutdown(void);

/* ---- a create request's settings (network_request.c) ---- */

/* Read allow_internet_access (or allowInternetAccess) and network {allowPublicTraffic, allowOut,
 * denyOut, maskRequestHost, egressProxy} from `req` (a create request, borrowed; NULL: none of
 * them, so the defaults: open egress, public traffic, no token) and register them for `id`
 * (abx_network_register). Returns 0, 400 (msg: bad type, bad CIDR/IP, too many entries, bad
 * maskRequestHost, allowPublicTraffic=false without secure, egressProxy set) or 500 (msg). */
int abx_network_create(const char *id, json_t *req, int secure, char *msg, size_t msglen);

/* Outbound rules from `obj` (allowOut, denyOut; NULL: none) and internet access from `top`
 * (allow_internet_access, else allowInternetAccess; default true) into `r` (its json owned by
 * the caller). 0, or -1 with a 400 message naming the field (r then holds nothing). */
int abx_network_parse_rules(json_t *top, json_t *obj, struct abx_net_rules *r, char *msg, size_t n);

/* ---- control plane (api_network.c) ---- */

/* Route PUT /sandboxes/{id}/network (api.c's table), body {allowOut?, denyOut?,
 * allow_internet_access? | allowInternetAccess?}: replaces the rules (an omitted field is cleared;
 * internet access then defaults to true). maskRequestHost is not part of SandboxNetworkUpdateConfig
 * (e2b-dev/infra spec/openapi.yml): present, it answers 400. 204, 400, 404, 500. */
struct abx_api_req;
enum MHD_Result abx_api_sandbox_network(struct abx_api_req *r);

#endif
