/*
 * fuzz_route.c: libFuzzer target for the local platform's routing parsers, through their extern
 * entry points only (platform is not refactored for this):
 *   - abx_ingress_route (platform/ingress/ingress.h): the Host `<port>-<id>.<domain>` form and the
 *     E2b-Sandbox-Id / E2b-Sandbox-Port header form. It reads headers with
 *     MHD_lookup_connection_value, which this file defines: the executable's definition takes
 *     precedence over libmicrohttpd's, so the fuzzer chooses the headers of a fake connection;
 *   - abx_api_parse_id (platform/api/api_internal.h): the control plane's sandbox id segment;
 *   - abx_percent_decode (platform/util/http_answer.h): path and query decoding, both modes;
 *   - abx_b64_decode_alloc with ABX_B64_URL_ONLY (proto/base64.h).
 * The control plane's own route matcher and metadata-filter parser have their target,
 * fuzz_api_route.c.
 *
 * Input: byte 0 = which headers exist (bit 0 Host, bit 1 E2b-Sandbox-Id, bit 2
 * E2b-Sandbox-Port), then up to four '\n'-separated fields: Host, E2b-Sandbox-Id,
 * E2b-Sandbox-Port, and a free string for the decoders.
 * Oracles (abort() on violation): a route has a valid id ([a-z0-9]{1,31}) and port (1..65535);
 * a refusal has a message; parse_id gives [a-z0-9]{1,31}; percent-decoding never lengthens the
 * string; base64url output is NUL-terminated and at most 3/4 of its input.
 */
#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_fields.h"
#include "api/api.h"
#include "api/api_internal.h"
#include "base64.h"
#include "util/util.h"
#include "ingress/ingress.h"

static const char *hdr_host, *hdr_id, *hdr_port;

const char *MHD_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                        const char *key)
{
  if (kind != MHD_HEADER_KIND)
    return NULL;
  if (strcasecmp(key, "Host") == 0)
    return hdr_host;
  if (strcasecmp(key, "E2b-Sandbox-Id") == 0)
    return hdr_id;
  if (strcasecmp(key, "E2b-Sandbox-Port") == 0)
    return hdr_port;
  return NULL;
}

static void check_id(const char *id, const char *what)
{
  size_t n = strlen(id);
  int ok = n >= 1 && n <= 31;
  for (size_t i = 0; ok && i < n; i++)
    ok = (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9');
  if (!ok) {
    fprintf(stderr, "fuzz_route: %s gave the id '%s'\n", what, id);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static int configured;
  if (!configured) {
    abx_ingress_config("e2b.local", &abx_e2b_front);
    configured = 1;
  }
  if (size < 1)
    return 0;
  unsigned mask = data[0];
  char *field[FUZZ_FIELDS];
  char *buf = fuzz_fields(data, size, field);
  if (!buf)
    return 0;
  hdr_host = (mask & 1) ? field[0] : NULL;
  hdr_id = (mask & 2) ? field[1] : NULL;
  hdr_port = (mask & 4) ? field[2] : NULL;

  struct abx_route route;
  memset(&route, 0x5a, sizeof route);
  char msg[128] = "";
  int rc = abx_ingress_route((struct MHD_Connection *)buf, &route, msg, sizeof msg);
  if (rc == 1) {
    if (memchr(route.id, 0, sizeof route.id) == NULL)
      abort();
    check_id(route.id, "abx_ingress_route");
    if (route.port < 1 || route.port > 65535) {
      fprintf(stderr, "fuzz_route: abx_ingress_route gave port %d\n", route.port);
      abort();
    }
  } else if (rc == -1) {
    if (!msg[0]) {
      fprintf(stderr, "fuzz_route: a refused route without a message\n");
      abort();
    }
  } else if (rc != 0) {
    fprintf(stderr, "fuzz_route: abx_ingress_route returned %d\n", rc);
    abort();
  }

  char id[32];
  for (int i = 0; i < 2; i++)
    if (abx_api_parse_id(field[i], id) == 0)
      check_id(id, "abx_api_parse_id");

  size_t n = strlen(field[3]);
  for (int plus = 0; plus < 2; plus++) {
    char *s = strdup(field[3]);
    if (!s)
      break;
    if (abx_percent_decode(s, plus) == 0 && strlen(s) > n) {
      fprintf(stderr, "fuzz_route: percent-decoding lengthened '%s'\n", field[3]);
      abort();
    }
    free(s);
  }
  size_t outlen = 0;
  unsigned char *out = abx_b64_decode_alloc(field[3], ABX_B64_URL_ONLY, &outlen);
  if (out) {
    if (outlen > n * 3 / 4 || out[outlen] != 0) {
      fprintf(stderr, "fuzz_route: base64url gave %zu bytes from %zu\n", outlen, n);
      abort();
    }
    free(out);
  }
  free(buf);
  return 0;
}
