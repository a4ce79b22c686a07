/*
 * rtnl.c: rtnetlink requests for a sandbox's veth link. Contract in rtnl.h.
 */
#include "rtnl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netns.h"

/* One request under construction: a netlink header, its fixed part, then attributes. */
struct msg {
  union {
    struct nlmsghdr h;
    unsigned char b[1024];
  } u;
  size_t nest[4]; /* offsets of open nested attributes */
  int depth, overflow;
};

static void *tail(struct msg *m)
{
  return m->u.b + NLMSG_ALIGN(m->u.h.nlmsg_len);
}

static void begin(struct msg *m, int type, int flags, const void *fixed, size_t fixed_len)
{
  memset(m, 0, sizeof *m);
  m->u.h.nlmsg_len = (uint32_t)NLMSG_LENGTH(fixed_len);
  m->u.h.nlmsg_type = (uint16_t)type;
  m->u.h.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | NLM_F_ACK | flags);
  memcpy(NLMSG_DATA(&m->u.h), fixed, fixed_len);
}

static void attr(struct msg *m, int type, const void *data, size_t len)
{
  size_t at = NLMSG_ALIGN(m->u.h.nlmsg_len);
  if (at + RTA_SPACE(len) > sizeof m->u.b) {
    m->overflow = 1;
    return;
  }
  struct rtattr *a = tail(m);
  a->rta_type = (unsigned short)type;
  a->rta_len = (unsigned short)RTA_LENGTH(len);
  if (len)
    memcpy(RTA_DATA(a), data, len);
  m->u.h.nlmsg_len = (uint32_t)(at + RTA_SPACE(len));
}

static void attr_str(struct msg *m, int type, const char *s)
{
  attr(m, type, s, strlen(s) + 1);
}

/* Open a nested attribute; close() sets its length to what was added since. */
static void open_nest(struct msg *m, int type)
{
  size_t at = NLMSG_ALIGN(m->u.h.nlmsg_len);
  attr(m, type, NULL, 0);
  if (m->depth < 4)
    m->nest[m->depth] = at;
  m->depth++;
}

static void close_nest(struct msg *m)
{
  if (--m->depth >= 4 || m->overflow)
    return;
  struct rtattr *a = (struct rtattr *)(m->u.b + m->nest[m->depth]);
  a->rta_len = (unsigned short)(m->u.h.nlmsg_len - m->nest[m->depth]);
}

/* Send `m` and read its acknowledgement: 0 or the kernel's negative errno. `ifindex`, when not
 * NULL, receives the index of an RTM_NEWLINK answer (a RTM_GETLINK request). */
static int transact(int sock, struct msg *m, int *ifindex)
{
  static uint32_t seq;
  if (m->overflow || m->depth != 0)
    return -EMSGSIZE;
  m->u.h.nlmsg_seq = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
  struct sockaddr_nl k = {.nl_family = AF_NETLINK};
  ssize_t w;
  do
    w = sendto(sock, m->u.b, m->u.h.nlmsg_len, 0, (struct sockaddr *)&k, sizeof k);
  while (w < 0 && errno == EINTR);
  if (w < 0)
    return -errno;
  for (;;) {
    union {
      struct nlmsghdr h;
      unsigned char b[8192];
    } r;
    ssize_t n;
    do
      n = recv(sock, r.b, sizeof r.b, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0)
      return -errno;
    for (struct nlmsghdr *h = &r.h; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_seq != m->u.h.nlmsg_seq)
        continue; /* an answer to an earlier request that gave up */
      if (h->nlmsg_type == NLMSG_ERROR) {
        struct nlmsgerr *e = NLMSG_DATA(h);
        return h->nlmsg_len >= NLMSG_LENGTH(sizeof *e) ? e->error : -EPROTO;
      }
      if (h->nlmsg_type == RTM_NEWLINK && ifindex &&
          h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg)))
        *ifindex = ((struct ifinfomsg *)NLMSG_DATA(h))->ifi_index;
    }
  }
}

int abx_rtnl_open(int netns_fd)
{
  int s = abx_netns_socket(netns_fd, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
  if (s < 0)
    return -1;
  struct sockaddr_nl me = {.nl_family = AF_NETLINK};
  if (bind(s, (struct sockaddr *)&me, sizeof me) != 0) {
    int e = errno;
    close(s);
    errno = e;
    return -1;
  }
  return s;
}

int abx_rtnl_veth_add(int sock, const char *name, const char *peer, int peer_netns_fd)
{
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
  struct msg m;
  begin(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof ifi);
  attr_str(&m, IFLA_IFNAME, name);
  open_nest(&m, IFLA_LINKINFO);
  attr_str(&m, IFLA_INFO_KIND, "veth");
  open_nest(&m, IFLA_INFO_DATA);
  open_nest(&m, VETH_INFO_PEER);
  /* the peer's attributes follow its own ifinfomsg inside VETH_INFO_PEER (linux/veth.h) */
  size_t at = NLMSG_ALIGN(m.u.h.nlmsg_len);
  if (at + NLMSG_ALIGN(sizeof ifi) <= sizeof m.u.b) {
    memcpy(m.u.b + at, &ifi, sizeof ifi);
    m.u.h.nlmsg_len = (uint32_t)(at + NLMSG_ALIGN(sizeof ifi));
  } else {
    m.overflow = 1;
  }
  attr_str(&m, IFLA_IFNAME, peer);
  uint32_t fd = (uint32_t)peer_netns_fd;
  attr(&m, IFLA_NET_NS_FD, &fd, sizeof fd);
  close_nest(&m);
  close_nest(&m);
  close_nest(&m);
  return transact(sock, &m, NULL);
}

/* RTM_NEWLINK on the existing link `dev` (by name) with flags and, optionally, the IPv6
 * address generation mode. */
static int set_link(int sock, const char *dev, unsigned flags, unsigned change, int addrgen)
{
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_flags = flags, .ifi_change = change};
  struct msg m;
  begin(&m, RTM_NEWLINK, 0, &ifi, sizeof ifi);
  attr_str(&m, IFLA_IFNAME, dev);
  if (addrgen >= 0) {
    uint8_t mode = (uint8_t)addrgen;
    open_nest(&m, IFLA_AF_SPEC);
    open_nest(&m, AF_INET6);
    attr(&m, IFLA_INET6_ADDR_GEN_MODE, &mode, sizeof mode);
    close_nest(&m);
    close_nest(&m);
  }
  return transact(sock, &m, NULL);
}

static int link_index(int sock, const char *dev, int *index)
{
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
  struct msg m;
  begin(&m, RTM_GETLINK, 0, &ifi, sizeof ifi);
  attr_str(&m, IFLA_IFNAME, dev);
  *index = 0;
  int rc = transact(sock, &m, index);
  return rc == 0 && *index <= 0 ? -ENODEV : rc;
}

int abx_rtnl_configure(int sock, const char *dev, const char *addr, int prefix, const char *gateway)
{
  struct in_addr a, g;
  if (inet_pton(AF_INET, addr, &a) != 1 || prefix < 0 || prefix > 32 ||
      (gateway && inet_pton(AF_INET, gateway, &g) != 1))
    return -EINVAL;
  int index, rc = link_index(sock, dev, &index);
  if (rc == 0)
    rc = set_link(sock, dev, 0, 0, IN6_ADDR_GEN_MODE_NONE);
  if (rc == 0) {
    struct ifaddrmsg ifa = {.ifa_family = AF_INET,
                            .ifa_prefixlen = (unsigned char)prefix,
                            .ifa_scope = RT_SCOPE_UNIVERSE,
                            .ifa_index = (unsigned)index};
    struct msg m;
    begin(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    attr(&m, IFA_LOCAL, &a, sizeof a);
    attr(&m, IFA_ADDRESS, &a, sizeof a);
    rc = transact(sock, &m, NULL);
  }
  if (rc == 0)
    rc = set_link(sock, dev, IFF_UP, IFF_UP, -1);
  if (rc == 0 && gateway) {
    struct rtmsg rt = {.rtm_family = AF_INET,
                       .rtm_table = RT_TABLE_MAIN,
                       .rtm_protocol = RTPROT_BOOT,
                       .rtm_scope = RT_SCOPE_UNIVERSE,
                       .rtm_type = RTN_UNICAST};
    struct msg m;
    begin(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &rt, sizeof rt);
    attr(&m, RTA_GATEWAY, &g, sizeof g);
    uint32_t oif = (uint32_t)index;
    attr(&m, RTA_OIF, &oif, sizeof oif);
    rc = transact(sock, &m, NULL);
  }
  return rc;
}

int abx_rtnl_link_del(int sock, const char *name)
{
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
  struct msg m;
  begin(&m, RTM_DELLINK, 0, &ifi, sizeof ifi);
  attr_str(&m, IFLA_IFNAME, name);
  return transact(sock, &m, NULL);
}
