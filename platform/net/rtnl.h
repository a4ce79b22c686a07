/*
 * rtnl.h: the few rtnetlink requests a sandbox link needs (a veth pair, its IPv4 address, up,
 * a default route, delete), sent on a NETLINK_ROUTE socket of the namespace they configure.
 *
 * Why:     each `ip` run is a fork of serve plus an exec and a dynamic link (about 3 ms on an idle
 *          machine, far more under load); these are the same kernel requests `ip link add ... type
 *          veth peer ...`, `ip link set DEV addrgenmode none`, `ip addr add A/P dev DEV`,
 *          `ip link set DEV up`, `ip route add default via G dev DEV` and `ip link del DEV` send
 *          (rtnetlink(7), netlink(7); linux/if_link.h, linux/veth.h), made on one socket.
 * Shapes:  `sock` is a NETLINK_ROUTE SOCK_RAW socket (netns.h abx_netns_socket opens it inside a
 *          namespace); names are interface names (IFNAMSIZ); addresses are IPv4 in dotted form.
 * Errors:  0, or a negative errno from the kernel's acknowledgement (or the socket call).
 */
#ifndef ABX_NET_RTNL_H
#define ABX_NET_RTNL_H

/* A NETLINK_ROUTE socket inside the network namespace `netns_fd`. The fd or -1 (errno set). */
int abx_rtnl_open(int netns_fd);

/* Create the veth pair `name` (in sock's namespace) / `peer` (moved into namespace `peer_netns_fd`)
 * as `ip link add NAME type veth peer name PEER netns FD` does. */
int abx_rtnl_veth_add(int sock, const char *name, const char *peer, int peer_netns_fd);

/* Configure `dev` as `ip link set DEV addrgenmode none; ip addr add ADDR/PREFIX dev DEV;
 * ip link set DEV up` and, when `gateway` is not NULL, `ip route add default via GATEWAY dev DEV`,
 * in that order. */
int abx_rtnl_configure(int sock, const char *dev, const char *addr, int prefix,
                       const char *gateway);

/* Delete link `name` (`ip link del NAME`; a veth's peer goes with it). -ENODEV when there is none. */
int abx_rtnl_link_del(int sock, const char *name);

#endif
