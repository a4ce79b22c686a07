/*
 * network.c: the hub namespace, per-sandbox veth links, nftables rules in the sandbox's namespace,
 * traffic access tokens. Contract in network.h.
 */
#include "network.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2b.h"
#include "util/util.h"
#include "nft.h"
#include "rtnl.h"

#define LINKS 16383          /* /30 blocks in 10.200.0.0/16, block 0 unused */
#define NET_BASE 0x0AC80000u /* 10.200.0.0 */

struct net {
  char id[32];
  int public_traffic;
  char token[65]; /* trafficAccessToken when !public_traffic */
  struct abx_net_rules rules;
  char *mask_host; /* maskRequestHost as given (malloc'd), NULL when not set */
  int link;        /* 1..LINKS when the sandbox has a veth pair, else 0 */
  struct net *next;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;    /* g_list, g_used */
static pthread_mutex_t g_apply = PTHREAD_MUTEX_INITIALIZER; /* one link/nft sequence at a time */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct net *g_list;
static unsigned char g_used[LINKS + 1];
static int g_hub = -1;    /* the hub namespace; -1 when networking is unavailable */
static int g_hub_nl = -1; /* NETLINK_ROUTE socket in the hub namespace (rtnl.h), under g_apply */
static const char *g_nft;

/* ---- helpers ------------------------------------------------------------------------------ */

static void rules_free(struct abx_net_rules *r)
{
  json_decref(r->allow);
  json_decref(r->deny);
  r->allow = r->deny = NULL;
}

static struct net *find(const char *id)
{
  for (struct net *n = g_list; n; n = n->next)
    if (strcmp(n->id, id) == 0)
      return n;
  return NULL;
}

static void addr_of(int link, int which, char out[INET_ADDRSTRLEN])
{
  struct in_addr a = {htonl(NET_BASE + 4u * (unsigned)link + (unsigned)which)};
  inet_ntop(AF_INET, &a, out, INET_ADDRSTRLEN);
}

static const char *find_exe(const char *name)
{
  static const char *dirs[] = {"/usr/sbin", "/sbin", "/usr/bin", "/bin"};
  static char found[2][64];
  static int nfound;
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    char p[64];
    snprintf(p, sizeof p, "%s/%s", dirs[i], name);
    if (access(p, X_OK) == 0 && nfound < 2) {
      memcpy(found[nfound], p, sizeof p);
      return found[nfound++];
    }
  }
  return NULL;
}

/* Run argv[0] (absolute) inside network namespace `ns_fd`, `input` on its stdin, `pass_fd` (or
 * -1) as fd 3. Output (stdout+stderr, truncated) goes to out. 0 when it exited 0, else -1. */
static int run_ns(int ns_fd, int pass_fd, const char *const argv[], const char *input, char *out,
                  size_t outlen)
{
  static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", NULL};
  int in[2] = {-1, -1}, o[2] = {-1, -1};
  out[0] = 0;
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(o, O_CLOEXEC) != 0) {
    snprintf(out, outlen, "pipe: %s", strerror(errno));
    if (in[0] >= 0) {
      close(in[0]);
      close(in[1]);
    }
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    /* Only async-signal-safe calls from here on: this process has other threads. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setns(ns_fd, CLONE_NEWNET) != 0)
      _exit(125);
    int i0 = fcntl(in[0], F_DUPFD, 10), o1 = fcntl(o[1], F_DUPFD, 10);
    int p = pass_fd >= 0 ? fcntl(pass_fd, F_DUPFD, 10) : -1;
    if (i0 < 0 || o1 < 0 || (pass_fd >= 0 && p < 0) || dup2(i0, 0) < 0 || dup2(o1, 1) < 0 ||
        dup2(o1, 2) < 0 || (p >= 0 && dup2(p, 3) < 0))
      _exit(126);
    close_range(p >= 0 ? 4 : 3, ~0U, 0);
    execve(argv[0], (char *const *)argv, envp);
    _exit(127);
  }
  close(in[0]);
  close(o[1]);
  if (pid < 0) {
    snprintf(out, outlen, "fork: %s", strerror(errno));
    close(in[1]);
    close(o[0]);
    return -1;
  }
  size_t left = input ? strlen(input) : 0;
  const char *p = input;
  while (left > 0) {
    ssize_t k = write(in[1], p, left);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
    p += k;
    left -= (size_t)k;
  }
  close(in[1]);
  size_t got = 0;
  for (;;) {
    char buf[512];
    ssize_t k = read(o[0], buf, sizeof buf);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
    size_t take = (size_t)k < outlen - 1 - got ? (size_t)k : outlen - 1 - got;
    memcpy(out + got, buf, take);
    got += take;
  }
  out[got] = 0;
  close(o[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) {
      st = -1;
      break;
    }
  }
  for (char *c = out; *c; c++)
    if (*c == '\n' || *c == '"')
      *c = ' ';
  if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return 0;
  if (!out[0])
    snprintf(out, outlen, "%s exited with status %d", argv[0],
             st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return -1;
}

static int write_sysctl(const char *path, const char *value)
{
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t k = write(fd, value, strlen(value));
  close(fd);
  return k == (ssize_t)strlen(value) ? 0 : -1;
}

/* Create the hub namespace on this thread and come back. Returns its fd or -1. */
static int hub_make(void)
{
  int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (self < 0)
    return -1;
  if (unshare(CLONE_NEWNET) != 0) {
    close(self);
    return -1;
  }
  int hub = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  /* /proc/sys/net follows the calling thread's namespace: a new namespace may inherit the host's
   * forwarding setting, and the hub must never forward between sandbox links. */
  int ok = hub >= 0 && write_sysctl("/proc/sys/net/ipv4/ip_forward", "0") == 0;
  write_sysctl("/proc/sys/net/ipv6/conf/all/forwarding", "0");
  if (setns(self, CLONE_NEWNET) != 0) {
    abx_slog("cannot return to the host network namespace");
    abort();
  }
  close(self);
  if (!ok && hub >= 0) {
    close(hub);
    hub = -1;
  }
  return hub;
}

static int nft_script(int netns_fd, const char *text, char *out, size_t outlen);

static void init_once(void)
{
  g_nft = find_exe("nft");
  const char *why = NULL;
  char out[300] = "";
  if (!g_nft) {
    why = "`nft` (nftables) is required";
  } else if ((g_hub = hub_make()) < 0) {
    snprintf(out, sizeof out, "cannot create the hub network namespace: %s", strerror(errno));
    why = out;
  } else if ((g_hub_nl = abx_rtnl_open(g_hub)) < 0) {
    snprintf(out, sizeof out, "cannot open a netlink socket in the hub namespace: %s",
             strerror(errno));
    close(g_hub);
    g_hub = -1;
    why = out;
  } else {
    const char *hub_rules =
        "table inet abxhub {\n"
        " chain forward_drop { type filter hook forward priority 0; policy drop; }\n"
        "}\n";
    if (nft_script(g_hub, hub_rules, out, sizeof out) != 0) {
      close(g_hub_nl);
      g_hub_nl = -1;
      close(g_hub);
      g_hub = -1;
      why = out;
    }
  }
  if (why)
    abx_slog("sandbox links disabled (loopback only): %s", why);
}

/* ---- rules (built by network_rules.c) ---------------------------------------------------- */

/* The complete ruleset for sandbox n (atomic replacement of table inet abx). malloc'd. */
static char *ruleset(const struct net *n)
{
  char host[INET_ADDRSTRLEN];
  addr_of(n->link, 1, host);
  return abx_net_ruleset(&n->rules, host);
}

/* `text` applied in the namespace: libnftables in this process (nft.h), else `nft -f -`. */
static int nft_script(int netns_fd, const char *text, char *out, size_t outlen)
{
  int rc = abx_nft_apply(netns_fd, text, out, outlen);
  if (rc <= 0)
    return rc;
  const char *argv[] = {g_nft, "-f", "-", NULL};
  return run_ns(netns_fd, -1, argv, text, out, outlen);
}

static int apply_rules(int netns_fd, const char *text, char *err, size_t errlen)
{
  char out[300];
  if (nft_script(netns_fd, text, out, sizeof out) == 0)
    return 0;
  snprintf(err, errlen, "nft: %s", out);
  return -1;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

int abx_network_register(const char *id, int public_traffic, struct abx_net_rules *rules,
                         const char *mask_host, char *msg, size_t msglen)
{
  struct net *n = calloc(1, sizeof *n);
  char *mask = mask_host ? strdup(mask_host) : NULL;
  if (!n || (mask_host && !mask)) {
    free(n);
    free(mask);
    rules_free(rules);
    snprintf(msg, msglen, "out of memory");
    return -1;
  }
  snprintf(n->id, sizeof n->id, "%s", id);
  n->public_traffic = public_traffic;
  n->rules = *rules;
  n->mask_host = mask;
  rules->allow = rules->deny = NULL;
  if (!public_traffic && abx_rand_hex(n->token, 64) != 0) {
    rules_free(&n->rules);
    free(n->mask_host);
    free(n);
    snprintf(msg, msglen, "no randomness available");
    return -1;
  }
  pthread_mutex_lock(&g_mu);
  struct net *old = find(id);
  if (old) { /* a re-registered id replaces its settings */
    rules_free(&old->rules);
    old->rules = n->rules;
    old->public_traffic = n->public_traffic;
    memcpy(old->token, n->token, sizeof old->token);
    free(old->mask_host);
    old->mask_host = n->mask_host;
    free(n);
  } else {
    n->next = g_list;
    g_list = n;
  }
  pthread_mutex_unlock(&g_mu);
  return 0;
}

int abx_network_clone(const char *from, const char *id, char *msg, size_t msglen)
{
  pthread_mutex_lock(&g_mu);
  struct net *src = find(from);
  int public_traffic = src ? src->public_traffic : 1;
  struct abx_net_rules r = {1, NULL, NULL};
  char *mask = NULL;
  int oom = 0;
  if (src) {
    r.internet = src->rules.internet;
    r.allow = src->rules.allow ? json_deep_copy(src->rules.allow) : NULL;
    r.deny = src->rules.deny ? json_deep_copy(src->rules.deny) : NULL;
    mask = src->mask_host ? strdup(src->mask_host) : NULL;
    oom =
        (src->rules.allow && !r.allow) || (src->rules.deny && !r.deny) || (src->mask_host && !mask);
  }
  pthread_mutex_unlock(&g_mu);
  if (oom) {
    rules_free(&r);
    free(mask);
    snprintf(msg, msglen, "out of memory");
    return -1;
  }
  int rc = abx_network_register(id, public_traffic, &r, mask, msg, msglen);
  free(mask);
  return rc;
}

int abx_network_mask_host(const char *id, int port, char *out, size_t outlen)
{
  if (port == ABX_E2B_ENVD_PORT || outlen == 0)
    return 0;
  pthread_mutex_lock(&g_mu);
  struct net *n = find(id);
  const char *m = n && n->mask_host && *n->mask_host ? n->mask_host : NULL;
  size_t len = 0;
  char num[8];
  snprintf(num, sizeof num, "%d", port);
  for (const char *c = m; c && *c && len + 1 < outlen;) {
    if (strncmp(c, ABX_NET_MASK_PORT, sizeof ABX_NET_MASK_PORT - 1) == 0) {
      for (const char *d = num; *d && len + 1 < outlen; d++)
        out[len++] = *d;
      c += sizeof ABX_NET_MASK_PORT - 1;
    } else {
      out[len++] = *c++;
    }
  }
  out[len] = 0;
  pthread_mutex_unlock(&g_mu);
  return m != NULL;
}

static int alloc_link(void)
{
  for (int k = 1; k <= LINKS; k++)
    if (!g_used[k]) {
      g_used[k] = 1;
      return k;
    }
  return 0;
}

/* Delete abxh<k> in the hub (its peer goes with it). 0 when gone. Under g_apply. */
static int del_link(int k)
{
  char name[16];
  snprintf(name, sizeof name, "abxh%d", k);
  int rc = abx_rtnl_link_del(g_hub_nl, name);
  return rc == 0 || rc == -ENODEV ? 0 : -1;
}

int abx_network_attach(const char *id, int netns_fd, char *err, size_t errlen)
{
  pthread_once(&g_once, init_once);
  if (g_hub < 0)
    return 0;
  pthread_mutex_lock(&g_apply);
  pthread_mutex_lock(&g_mu);
  struct net *n = find(id);
  int k = n && !n->link ? alloc_link() : 0;
  pthread_mutex_unlock(&g_mu);
  if (!n) {
    pthread_mutex_unlock(&g_apply);
    return 0;
  }
  if (!k) {
    pthread_mutex_unlock(&g_apply);
    snprintf(err, errlen, "no free sandbox link");
    return -1;
  }
  char hname[16], haddr[INET_ADDRSTRLEN], saddr[INET_ADDRSTRLEN], *text = NULL;
  snprintf(hname, sizeof hname, "abxh%d", k);
  addr_of(k, 1, haddr);
  addr_of(k, 2, saddr);
  /* abxh<k> in the hub, its peer eth0 in the sandbox: hub side addressed and up, sandbox side
   * addressed, up, default route via the hub's address (rtnl.h: the requests `ip` would send) */
  int created = 0, rc, sb_nl = -1;
  if ((rc = abx_rtnl_veth_add(g_hub_nl, hname, "eth0", netns_fd)) != 0) {
    snprintf(err, errlen, "cannot create the sandbox link: %s", strerror(-rc));
    goto fail;
  }
  created = 1;
  sb_nl = abx_rtnl_open(netns_fd);
  rc = sb_nl < 0 ? -errno : abx_rtnl_configure(g_hub_nl, hname, haddr, 30, NULL);
  if (rc == 0)
    rc = abx_rtnl_configure(sb_nl, "eth0", saddr, 30, haddr);
  if (sb_nl >= 0)
    close(sb_nl);
  if (rc != 0) {
    snprintf(err, errlen, "cannot configure the sandbox link: %s", strerror(-rc));
    goto fail;
  }
  pthread_mutex_lock(&g_mu);
  n = find(id); /* still there: forget() runs only after this sandbox's start returned */
  if (n) {
    n->link = k;
    text = ruleset(n);
  }
  pthread_mutex_unlock(&g_mu);
  if (!text) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  rc = apply_rules(netns_fd, text, err, errlen);
  free(text);
  if (rc != 0)
    goto fail;
  pthread_mutex_unlock(&g_apply);
  return 0;
fail:;
  int gone = !created || del_link(k) == 0;
  pthread_mutex_lock(&g_mu);
  if ((n = find(id)) != NULL)
    n->link = 0;
  if (gone)
    g_used[k] = 0;
  pthread_mutex_unlock(&g_mu);
  pthread_mutex_unlock(&g_apply);
  return -1;
}

void abx_network_detach(const char *id)
{
  if (g_hub < 0)
    return;
  pthread_mutex_lock(&g_apply);
  pthread_mutex_lock(&g_mu);
  struct net *n = find(id);
  int k = n ? n->link : 0;
  if (n)
    n->link = 0;
  pthread_mutex_unlock(&g_mu);
  if (k) {
    int ok = del_link(k) == 0;
    pthread_mutex_lock(&g_mu);
    if (ok)
      g_used[k] = 0; /* else the block stays taken: its name may still exist in the hub */
    pthread_mutex_unlock(&g_mu);
  }
  pthread_mutex_unlock(&g_apply);
}

void abx_network_forget(const char *id)
{
  pthread_mutex_lock(&g_mu);
  for (struct net **pp = &g_list; *pp; pp = &(*pp)->next) {
    struct net *n = *pp;
    if (strcmp(n->id, id) == 0) {
      *pp = n->next;
      rules_free(&n->rules);
      free(n->mask_host);
      free(n);
      break;
    }
  }
  pthread_mutex_unlock(&g_mu);
}

int abx_network_update(const char *id, int netns, struct abx_net_rules *rules, char *msg,
                       size_t msglen)
{
  pthread_mutex_lock(&g_apply);
  pthread_mutex_lock(&g_mu);
  struct net *n = find(id);
  char *text = NULL;
  struct abx_net_rules old = {0, NULL, NULL};
  if (n) {
    old = n->rules;
    n->rules = *rules;
    rules->allow = rules->deny = NULL;
    if (n->link)
      text = ruleset(n);
  }
  int link = n ? n->link : 0;
  pthread_mutex_unlock(&g_mu);
  int status = 204;
  if (!n) {
    status = 404;
  } else if (link && netns >= 0 && (!text || apply_rules(netns, text, msg, msglen) != 0)) {
    if (!text)
      snprintf(msg, msglen, "out of memory");
    status = 500;
    pthread_mutex_lock(&g_mu); /* put the old rules back */
    if ((n = find(id)) != NULL) {
      struct abx_net_rules tmp = n->rules;
      n->rules = old;
      old = tmp;
    }
    pthread_mutex_unlock(&g_mu);
  }
  free(text);
  rules_free(&old);
  rules_free(rules);
  pthread_mutex_unlock(&g_apply);
  if (netns >= 0)
    close(netns);
  return status;
}

/* ---- responses and ingress ---------------------------------------------------------------- */

static json_t *array_or_empty(json_t *a)
{
  return a ? json_deep_copy(a) : json_array();
}

void abx_network_json(const char *id, json_t *o, int detail)
{
  pthread_mutex_lock(&g_mu);
  struct net *n = find(id);
  if (!detail) {
    json_object_set_new(o, "trafficAccessToken",
                        n && !n->public_traffic ? json_string(n->token) : json_null());
  } else if (n) {
    json_object_set_new(o, "allowInternetAccess", json_boolean(n->rules.internet));
    json_t *net =
        json_pack("{s:b,s:o,s:o}", "allowPublicTraffic", n->public_traffic, "allowOut",
                  array_or_empty(n->rules.allow), "denyOut", array_or_empty(n->rules.deny));
    if (net && n->mask_host)
      json_object_set_new(net, "maskRequestHost", json_string(n->mask_host));
    json_object_set_new(o, "network", net);
    if (n->link && g_hub >= 0) {
      char h[INET_ADDRSTRLEN], s[INET_ADDRSTRLEN], ns[64];
      addr_of(n->link, 1, h);
      addr_of(n->link, 2, s);
      snprintf(ns, sizeof ns, "/proc/%d/fd/%d", (int)getpid(), g_hub);
      json_object_set_new(
          o, "abxNetwork",
          json_pack("{s:s,s:s,s:s}", "hostAddress", h, "sandboxAddress", s, "hostNamespace", ns));
    }
  }
  pthread_mutex_unlock(&g_mu);
}

const char *abx_network_traffic_denied(const char *id, int port, const char *token)
{
  if (port == ABX_E2B_ENVD_PORT)
    return NULL;
  const char *why = NULL;
  pthread_mutex_lock(&g_mu);
  struct net *n = find(id);
  if (n && !n->public_traffic) {
    if (!token) {
      why = "Sandbox is secured with traffic access token. Token header "
            "'" ABX_NET_TOKEN_HEADER "' is missing";
    } else {
      size_t want = strlen(n->token);
      unsigned diff = strlen(token) != want;
      const char *t = diff ? n->token : token; /* same length either way */
      for (size_t i = 0; i < want; i++)        /* constant time over the token length */
        diff |= (unsigned char)n->token[i] ^ (unsigned char)t[i];
      if (diff)
        why = "Sandbox is secured with traffic access token. Token header "
              "'" ABX_NET_TOKEN_HEADER "' is invalid";
    }
  }
  pthread_mutex_unlock(&g_mu);
  return why;
}

int abx_network_hub_fd(void)
{
  pthread_once(&g_once, init_once);
  return g_hub;
}

int abx_network_link_addrs(const char *id, struct in_addr *hub, struct in_addr *sandbox)
{
  pthread_mutex_lock(&g_mu);
  struct net *n = find(id);
  int k = n && g_hub >= 0 ? n->link : 0;
  pthread_mutex_unlock(&g_mu);
  if (!k)
    return -1;
  hub->s_addr = htonl(NET_BASE + 4u * (unsigned)k + 1u);
  sandbox->s_addr = htonl(NET_BASE + 4u * (unsigned)k + 2u);
  return 0;
}

void abx_network_shutdown(void)
{
  pthread_mutex_lock(&g_apply);
  pthread_mutex_lock(&g_mu);
  for (struct net *n = g_list; n; n = n->next)
    if (n->link && g_hub >= 0 && del_link(n->link) == 0) {
      g_used[n->link] = 0;
      n->link = 0;
    }
  if (g_hub >= 0)
    close(g_hub); /* the hub and anything left in it go away with the last reference */
  g_hub = -1;
  while (g_list) {
    struct net *n = g_list;
    g_list = n->next;
    rules_free(&n->rules);
    free(n->mask_host);
    free(n);
  }
  pthread_mutex_unlock(&g_mu);
  pthread_mutex_unlock(&g_apply);
}
