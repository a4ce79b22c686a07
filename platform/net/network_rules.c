/*
 * network_rules.c: a sandbox's outbound rules as text: the allowOut/denyOut entry check and the
 * nftables ruleset network.c applies in the sandbox's namespace (contract: network.h "Rules").
 */
#include "network.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Parse an address or CIDR; canonical "addr/len" (host bits cleared) into canon. Returns
 * AF_INET / AF_INET6, or 0 when `s` is neither. */
static int parse_cidr(const char *s, char *canon, size_t n)
{
  char a[INET6_ADDRSTRLEN + 8];
  if (strlen(s) >= sizeof a)
    return 0;
  snprintf(a, sizeof a, "%s", s);
  char *slash = strchr(a, '/');
  long plen = -1;
  if (slash) {
    *slash = 0;
    char *end = NULL;
    if (!slash[1] || !isdigit((unsigned char)slash[1]))
      return 0;
    plen = strtol(slash + 1, &end, 10);
    if (*end || end - (slash + 1) > 3)
      return 0;
  }
  unsigned char bytes[16];
  int fam = strchr(a, ':') ? AF_INET6 : AF_INET;
  if (inet_pton(fam, a, bytes) != 1)
    return 0;
  int bits = fam == AF_INET ? 32 : 128;
  if (plen < 0)
    plen = bits;
  if (plen > bits)
    return 0;
  for (int i = 0; i < bits / 8; i++) {
    int keep = (int)plen - i * 8;
    if (keep <= 0)
      bytes[i] = 0;
    else if (keep < 8)
      bytes[i] &= (unsigned char)(0xff << (8 - keep));
  }
  char txt[INET6_ADDRSTRLEN];
  inet_ntop(fam, bytes, txt, sizeof txt);
  snprintf(canon, n, "%s/%ld", txt, plen);
  return fam;
}

static int domain_ok(const char *s)
{
  if (strncmp(s, "*.", 2) == 0)
    s += 2;
  size_t n = strlen(s);
  if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-' || s[n - 1] == '.')
    return 0;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '.' || *p == '_'))
      return 0;
  return !strstr(s, "..");
}

int abx_network_entry_ok(const char *s, int allow_domain)
{
  char canon[64];
  if (parse_cidr(s, canon, sizeof canon))
    return 0;
  return allow_domain && !strchr(s, '/') && !strchr(s, ':') && domain_ok(s) ? 0 : -1;
}

static void emit_entries(FILE *f, json_t *arr, const char *verdict)
{
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v)
  {
    char canon[64];
    int fam = json_is_string(v) ? parse_cidr(json_string_value(v), canon, sizeof canon) : 0;
    if (fam)
      fprintf(f, "  %s daddr %s %s\n", fam == AF_INET ? "ip" : "ip6", canon, verdict);
  }
}

char *abx_net_ruleset(const struct abx_net_rules *rules, const char *hub_addr)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  fputs("table inet abx\n"
        "delete table inet abx\n"
        "table inet abx {\n"
        " chain block {\n"
        "  meta l4proto tcp reject with tcp reset\n"
        "  reject with icmpx admin-prohibited\n"
        " }\n"
        " chain out {\n"
        "  type filter hook output priority 0; policy accept;\n"
        "  oifname \"lo\" accept\n"
        "  ct state established,related accept\n",
        f);
  emit_entries(f, rules->allow, "accept");
  emit_entries(f, rules->deny, "goto block");
  if (!rules->internet)
    fputs("  goto block\n", f);
  fprintf(f, "  ip daddr %s accept\n  goto block\n }\n}\n", hub_addr);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
