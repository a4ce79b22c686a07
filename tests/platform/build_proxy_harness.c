/*
 * build_proxy_harness.c: drives platform/net/build_proxy.c and the real sandbox links of
 * platform/net/network.c for tests/platform/test_build_proxy.py, without serve: the test makes network
 * namespaces of its own (ip netns add) and this program links each into its hub namespace
 * exactly as a sandbox is linked (veth, addresses, the sandbox's nftables rules), then allows
 * some of them on the proxy. A test binary, never part of abxlua: the only way to allow a
 * sandbox in serve is the template build runner.
 *
 * Protocol: one command per stdin line, one answer line on stdout ("ok ...", "err ...", or the
 * command's output):
 *   start PLATFORM_PORT            abx_build_proxy_start
 *   sandbox ID NETNS_PATH INTERNET abx_network_register + abx_network_attach  -> ok HUB SANDBOX
 *   allow ID                       abx_build_proxy_allow                      -> ok URL
 *   revoke ID | detach ID          abx_build_proxy_revoke | abx_network_detach
 *   env URL                        abx_build_proxy_env as compact JSON
 *   check ADDR PORT PLATFORM_PORT  abx_build_proxy_check_addr                -> allow | deny WHY
 *   parse HEX                      abx_build_proxy_parse of the hex-encoded head -> ok C HOST PORT
 *                                  HEADHEX | err STATUS WHY
 *   quit                           abx_build_proxy_stop, abx_network_shutdown, exit 0
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/build_proxy.h"
#include "net/network.h"

static void hex_out(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    printf("%02x", (unsigned char)s[i]);
}

static void cmd_parse(const char *hex)
{
  size_t n = strlen(hex) / 2;
  char *buf = malloc(n + 1), why[200];
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    buf[i] = (char)v;
  }
  buf[n] = 0;
  struct abx_proxy_req r;
  int st = abx_build_proxy_parse(buf, n, &r, why, sizeof why);
  if (st) {
    printf("err %d %s\n", st, why);
  } else {
    printf("ok %d %s %d %s ", r.connect, r.host, r.port, r.method);
    hex_out(r.head ? r.head : "", r.head_len);
    printf("\n");
    free(r.head);
  }
  free(buf);
}

static void cmd_check(const char *addr, int port, int platform_port)
{
  struct sockaddr_storage ss = {0};
  char why[200];
  if (strchr(addr, ':')) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1) {
      printf("err bad address\n");
      return;
    }
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1) {
      printf("err bad address\n");
      return;
    }
  }
  if (abx_build_proxy_check_addr((struct sockaddr *)&ss, platform_port, why, sizeof why) == 0)
    printf("allow\n");
  else
    printf("deny %s\n", why);
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stdout, NULL, _IOLBF, 0);
  char line[8192], err[512];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = 0;
    char a[4096] = "", b[4096] = "", c[64] = "", cmd[32] = "";
    int n = sscanf(line, "%31s %4095s %4095s %63s", cmd, a, b, c);
    if (n < 1)
      continue;
    if (strcmp(cmd, "start") == 0) {
      if (abx_build_proxy_start(atoi(a), err, sizeof err) == 0)
        printf("ok\n");
      else
        printf("err %s\n", err);
    } else if (strcmp(cmd, "sandbox") == 0) {
      struct abx_net_rules rules = {atoi(c), NULL, NULL};
      int fd = open(b, O_RDONLY | O_CLOEXEC);
      struct in_addr hub, sb;
      if (fd < 0 || abx_network_register(a, 1, &rules, NULL, err, sizeof err) != 0 ||
          abx_network_attach(a, fd, err, sizeof err) != 0 ||
          abx_network_link_addrs(a, &hub, &sb) != 0) {
        printf("err %s\n", fd < 0 ? "cannot open the namespace" : err);
      } else {
        char h[INET_ADDRSTRLEN], s[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &hub, h, sizeof h);
        inet_ntop(AF_INET, &sb, s, sizeof s);
        printf("ok %s %s\n", h, s);
      }
      if (fd >= 0)
        close(fd);
    } else if (strcmp(cmd, "allow") == 0) {
      char url[64];
      if (abx_build_proxy_allow(a, url, sizeof url, err, sizeof err) == 0)
        printf("ok %s\n", url);
      else
        printf("err %s\n", err);
    } else if (strcmp(cmd, "revoke") == 0) {
      abx_build_proxy_revoke(a);
      printf("ok\n");
    } else if (strcmp(cmd, "detach") == 0) {
      abx_network_detach(a);
      printf("ok\n");
    } else if (strcmp(cmd, "env") == 0) {
      json_t *e = abx_build_proxy_env(a);
      char *s = e ? json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
      printf("%s\n", s ? s : "err out of memory");
      free(s);
      json_decref(e);
    } else if (strcmp(cmd, "check") == 0) {
      cmd_check(a, atoi(b), atoi(c));
    } else if (strcmp(cmd, "parse") == 0) {
      cmd_parse(a);
    } else if (strcmp(cmd, "quit") == 0) {
      break;
    } else {
      printf("err unknown command %s\n", cmd);
    }
  }
  abx_build_proxy_stop();
  abx_network_shutdown();
  return 0;
}
