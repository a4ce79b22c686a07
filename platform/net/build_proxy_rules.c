/*
 * build_proxy_rules.c: what the build proxy accepts: the destination address rules, the request
 * head parser and the build environment. Contract in build_proxy.h ("Rules", "Speaks").
 */
#include "build_proxy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- destination rules ------------------------------------------------------------------- */

/* IPv4 ranges refused, host byte order (RFC 6890 special-purpose registry, the parts that are
 * not on the public internet). TEST-NET-1/2/3 are deliberately absent: this machine's package
 * mirrors answer on TEST-NET-3. */
static const struct {
  uint32_t net;
  int len;
  const char *rule;
} v4_rules[] = {
    {0x00000000u, 8, "unspecified or \"this network\" address (0.0.0.0/8)"},
    {0x7F000000u, 8, "loopback address (127.0.0.0/8)"},
    {0x0A000000u, 8, "private address (10.0.0.0/8, RFC 1918)"},
    {0x64400000u, 10, "private address (100.64.0.0/10, carrier-grade NAT)"},
    {0xA9FE0000u, 16, "link-local address (169.254.0.0/16)"},
    {0xAC100000u, 12, "private address (172.16.0.0/12, RFC 1918)"},
    {0xC0A80000u, 16, "private address (192.168.0.0/16, RFC 1918)"},
    {0xE0000000u, 4, "multicast address (224.0.0.0/4)"},
    {0xF0000000u, 4, "reserved or broadcast address (240.0.0.0/4)"},
};

static const char *v4_rule(uint32_t a)
{
  for (size_t i = 0; i < sizeof v4_rules / sizeof v4_rules[0]; i++) {
    uint32_t mask = 0xFFFFFFFFu << (32 - v4_rules[i].len);
    if ((a & mask) == v4_rules[i].net)
      return v4_rules[i].rule;
  }
  return NULL;
}

/* The IPv4 address an IPv6 address stands for (mapped ::ffff:0:0/96, compatible ::/96 but :: and
 * ::1, NAT64 64:ff9b::/96): 1 with *v4 set, else 0. */
static int v6_embedded_v4(const unsigned char *b, uint32_t *v4)
{
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  static const unsigned char zero[12] = {0};
  int compat = memcmp(b, zero, 12) == 0 && (b[12] | b[13] | b[14] | (b[15] > 1 ? 1 : 0));
  if (memcmp(b, mapped, 12) != 0 && memcmp(b, nat64, 12) != 0 && !compat)
    return 0;
  *v4 = (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15];
  return 1;
}

static const char *v6_rule(const unsigned char *b)
{
  static const unsigned char zero[16] = {0};
  if (memcmp(b, zero, 15) == 0 && b[15] == 1)
    return "loopback address (::1)";
  if (memcmp(b, zero, 16) == 0)
    return "unspecified address (::)";
  if (b[0] == 0xff)
    return "multicast address (ff00::/8)";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
    return "link-local address (fe80::/10)";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
    return "private address (fec0::/10, site-local)";
  if ((b[0] & 0xfe) == 0xfc)
    return "private address (fc00::/7, unique local)";
  return NULL;
}

/* 1 when `sa`'s address (port ignored) is one of this namespace's interface addresses. */
static int is_local(const struct sockaddr *sa)
{
  struct ifaddrs *ifs = NULL, *i;
  int found = 0;
  if (getifaddrs(&ifs) != 0)
    return 0;
  for (i = ifs; i && !found; i = i->ifa_next) {
    const struct sockaddr *a = i->ifa_addr;
    if (!a || a->sa_family != sa->sa_family)
      continue;
    if (a->sa_family == AF_INET)
      found = ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
              ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
    else
      found = memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                     &((const struct sockaddr_in6 *)sa)->sin6_addr, 16) == 0;
  }
  freeifaddrs(ifs);
  return found;
}

int abx_build_proxy_check_addr(const struct sockaddr *sa, int platform_port, char *why,
                               size_t whylen)
{
  const char *rule = NULL;
  int port = 0, loopback = 0;
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
    uint32_t a = ntohl(s4->sin_addr.s_addr);
    port = ntohs(s4->sin_port);
    rule = v4_rule(a);
    loopback = (a >> 24) == 127;
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
    const unsigned char *b = s6->sin6_addr.s6_addr;
    uint32_t v4;
    port = ntohs(s6->sin6_port);
    if (v6_embedded_v4(b, &v4)) {
      rule = v4_rule(v4);
      loopback = (v4 >> 24) == 127;
    } else {
      rule = v6_rule(b);
      loopback = rule && strncmp(rule, "loopback", 8) == 0;
    }
  } else {
    snprintf(why, whylen, "not an IPv4 or IPv6 address");
    return -1;
  }
  int local = loopback || is_local(sa);
  if (local && platform_port > 0 && port == platform_port) {
    snprintf(why, whylen, "the platform's own port (%d) on an address of this machine", port);
    return -1;
  }
  if (rule) {
    snprintf(why, whylen, "%s", rule);
    return -1;
  }
  if (local) {
    snprintf(why, whylen, "an address of this machine");
    return -1;
  }
  return 0;
}

/* ---- request head ------------------------------------------------------------------------ */

/* A host as the URL or CONNECT target gives it: a bracketed IPv6 literal, or a name / IPv4
 * address of [A-Za-z0-9._-] (at most 253 bytes). Copies it without brackets. */
static int host_ok(const char *s, size_t n, char *out, size_t outlen)
{
  if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
    unsigned char b[16];
    if (n - 2 >= outlen || n - 2 > 45)
      return 0;
    memcpy(out, s + 1, n - 2);
    out[n - 2] = 0;
    return inet_pton(AF_INET6, out, b) == 1;
  }
  if (n == 0 || n > 253 || n >= outlen || s[0] == '.' || s[0] == '-')
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '-' && s[i] != '_')
      return 0;
  memcpy(out, s, n);
  out[n] = 0;
  return 1;
}

/* "host[:port]" (authority without userinfo). 0 or -1. */
static int authority(const char *s, size_t n, int need_port, int def_port, struct abx_proxy_req *r)
{
  size_t hlen = n;
  const char *colon = NULL;
  if (n && s[0] == '[') {
    const char *close = memchr(s, ']', n);
    if (!close)
      return -1;
    hlen = (size_t)(close - s) + 1;
    if (hlen < n) {
      if (s[hlen] != ':')
        return -1;
      colon = s + hlen;
    }
  } else {
    colon = memchr(s, ':', n);
    if (colon)
      hlen = (size_t)(colon - s);
  }
  if (!host_ok(s, hlen, r->host, sizeof r->host))
    return -1;
  if (!colon) {
    if (need_port)
      return -1;
    r->port = def_port;
    return 0;
  }
  const char *p = colon + 1, *end = s + n;
  if (p == end || end - p > 5)
    return -1;
  long port = 0;
  for (; p < end; p++) {
    if (!isdigit((unsigned char)*p))
      return -1;
    port = port * 10 + (*p - '0');
  }
  if (port < 1 || port > 65535)
    return -1;
  r->port = (int)port;
  return 0;
}

static int hop_header(const char *line, size_t n)
{
  static const char *names[] = {"connection", "proxy-connection", "keep-alive",
                                "proxy-authorization", "host"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    size_t k = strlen(names[i]);
    if (n > k && line[k] == ':' && strncasecmp(line, names[i], k) == 0)
      return 1;
  }
  return 0;
}

/* The head a plain-HTTP request is forwarded with: origin-form request line, Host from the URL's
 * authority [a, path), the client's headers from `line` up to the blank line (hop-by-hop ones
 * dropped), "Connection: close". Sets r->head (malloc'd) and returns 0, or 400 with `why`. */
static int forward_head(struct abx_proxy_req *r, const char *a, const char *path, const char *tend,
                        char version, const char *line, const char *end, char *why, size_t whylen)
{
  char *out = NULL;
  size_t outlen = 0;
  FILE *f = open_memstream(&out, &outlen);
  if (!f) {
    snprintf(why, whylen, "out of memory");
    return 400;
  }
  fprintf(f, "%s %s%.*s HTTP/1.%c\r\n", r->method, path == tend || *path != '/' ? "/" : "",
          (int)(tend - path), path, version);
  fprintf(f, "Host: %.*s\r\n", (int)(path - a), a);
  int bad = 0;
  while (line < end) {
    const char *le = strstr(line, "\r\n");
    if (!le || le == line)
      break; /* the blank line ends the head */
    size_t n = (size_t)(le - line);
    const char *colon = memchr(line, ':', n);
    if (line[0] == ' ' || line[0] == '\t' || !colon || colon == line ||
        memchr(line, ' ', (size_t)(colon - line)) || memchr(line, '\r', n)) {
      bad = 1;
      break;
    }
    if (!hop_header(line, n))
      fprintf(f, "%.*s\r\n", (int)n, line);
    line = le + 2;
  }
  fputs("Connection: close\r\n\r\n", f);
  if (fclose(f) != 0 || bad) {
    free(out);
    snprintf(why, whylen,
             bad ? "malformed header line (obs-fold, no colon or space in the name)"
                 : "out of memory");
    return 400;
  }
  r->head = out;
  r->head_len = outlen;
  return 0;
}

int abx_build_proxy_parse(const char *buf, size_t len, struct abx_proxy_req *r, char *why,
                          size_t whylen)
{
  memset(r, 0, sizeof *r);
  if (memchr(buf, 0, len)) {
    snprintf(why, whylen, "NUL byte in the request head");
    return 400;
  }
  const char *eol = strstr(buf, "\r\n");
  if (!eol) {
    snprintf(why, whylen, "request line not ended by CRLF");
    return 400;
  }
  /* METHOD SP target SP HTTP/1.x */
  const char *sp1 = memchr(buf, ' ', (size_t)(eol - buf));
  const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
  if (!sp1 || !sp2 || sp1 == buf || (size_t)(sp1 - buf) >= sizeof r->method ||
      (size_t)(eol - sp2 - 1) != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
      (sp2[8] != '0' && sp2[8] != '1')) {
    snprintf(why, whylen, "malformed request line (want METHOD SP target SP HTTP/1.x)");
    return 400;
  }
  memcpy(r->method, buf, (size_t)(sp1 - buf));
  for (char *m = r->method; *m; m++)
    if (!isupper((unsigned char)*m)) {
      snprintf(why, whylen, "malformed method");
      return 400;
    }
  const char *t = sp1 + 1;
  size_t tlen = (size_t)(sp2 - t);
  if (strcmp(r->method, "CONNECT") == 0) {
    r->connect = 1;
    if (authority(t, tlen, 1, 0, r) != 0) {
      snprintf(why, whylen,
               "CONNECT needs host:port (a name, an IPv4 address or [IPv6]) with "
               "a port 1..65535");
      return 400;
    }
    return 0;
  }
  if (tlen >= 8 && strncasecmp(t, "https://", 8) == 0) {
    snprintf(why, whylen, "https URLs go through CONNECT host:443 (set https_proxy)");
    return 400;
  }
  if (tlen < 7 || strncasecmp(t, "http://", 7) != 0) {
    snprintf(why, whylen,
             "this is a proxy: the request target must be an absolute http:// URL "
             "or CONNECT host:port");
    return 400;
  }
  const char *a = t + 7, *tend = t + tlen, *path = a;
  while (path < tend && *path != '/' && *path != '?' && *path != '#')
    path++;
  if (memchr(a, '@', (size_t)(path - a))) {
    snprintf(why, whylen, "user information in the URL is not accepted");
    return 400;
  }
  if (authority(a, (size_t)(path - a), 0, 80, r) != 0) {
    snprintf(why, whylen,
             "bad host or port in the URL (a name, an IPv4 address or [IPv6]; "
             "port 1..65535)");
    return 400;
  }
  return forward_head(r, a, path, tend, sp2[8], eol + 2, buf + len, why, whylen);
}

/* ---- environment ------------------------------------------------------------------------- */

json_t *abx_build_proxy_env(const char *proxy_url)
{
  return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "http_proxy", proxy_url, "https_proxy",
                   proxy_url, "HTTP_PROXY", proxy_url, "HTTPS_PROXY", proxy_url, "no_proxy",
                   "localhost,127.0.0.1", "NO_PROXY", "localhost,127.0.0.1", "NODE_EXTRA_CA_CERTS",
                   "/etc/ssl/certs/ca-certificates.crt");
}
