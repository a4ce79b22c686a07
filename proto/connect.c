/*
 * connect.c: Connect envelope codec. See connect.h for the contract.
 *
 * The decoder is a two-state machine (header, payload) fed arbitrary slices, as curl hands the body
 * over in whatever pieces the network produced: envelopes may be split across or merged within
 * chunks (docs/protocol/envd-protocol.md §2.3).
 */
#include "connect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void abx_connect_decoder_init(struct abx_connect_decoder *d)
{
  memset(d, 0, sizeof *d);
}

void abx_connect_decoder_free(struct abx_connect_decoder *d)
{
  free(d->payload);
  d->payload = NULL;
}

static int fail(struct abx_connect_decoder *d, const char *why)
{
  d->dead = 1;
  snprintf(d->error, sizeof d->error, "%s", why);
  return ABX_CONNECT_EPROTO;
}

int abx_connect_feed(struct abx_connect_decoder *d, const char *data, size_t len,
                     abx_connect_msg_fn fn, void *ud)
{
  if (d->dead)
    return ABX_CONNECT_EPROTO;
  while (len > 0) {
    if (d->header_len < 5) {
      size_t n = 5 - d->header_len;
      if (n > len)
        n = len;
      memcpy(d->header + d->header_len, data, n);
      d->header_len += n;
      data += n;
      len -= n;
      if (d->header_len < 5)
        break;
      unsigned flags;
      uint32_t plen;
      switch (abx_connect_header(d->header, &flags, &plen, 1, ABX_CONNECT_MAX_MSG)) {
      case ABX_CONNECT_GOOD:
      case ABX_CONNECT_BAD_END: /* not refused with allow_end */ break;
      case ABX_CONNECT_BAD_COMPRESSED:
        return fail(d, "compressed envelope, but no compression was negotiated");
      case ABX_CONNECT_BAD_RESERVED: return fail(d, "envelope with reserved flag bits set");
      case ABX_CONNECT_BAD_SIZE: {
        char why[96];
        snprintf(why, sizeof why, "envelope of %u bytes exceeds the %u-byte limit", plen,
                 ABX_CONNECT_MAX_MSG);
        return fail(d, why);
      }
      }
      free(d->payload); /* the buffer grows with the bytes that arrive, not with the claim */
      d->payload_cap = plen < 65536 ? plen : 65536;
      d->payload = malloc(d->payload_cap ? d->payload_cap : 1);
      if (!d->payload)
        return fail(d, "out of memory for an envelope");
      d->payload_len = plen;
      d->payload_have = 0;
    }
    size_t want = d->payload_len - d->payload_have;
    size_t n = want < len ? want : len;
    if (d->payload_have + n > d->payload_cap) {
      size_t cap = d->payload_cap * 2;
      if (cap < d->payload_have + n)
        cap = d->payload_have + n;
      if (cap > d->payload_len)
        cap = d->payload_len;
      char *grown = realloc(d->payload, cap);
      if (!grown)
        return fail(d, "out of memory for an envelope");
      d->payload = grown;
      d->payload_cap = cap;
    }
    memcpy(d->payload + d->payload_have, data, n);
    d->payload_have += n;
    data += n;
    len -= n;
    if (d->payload_have == d->payload_len) {
      unsigned flags = d->header[0];
      d->header_len = 0;
      if (fn(ud, flags, d->payload, d->payload_len) != 0)
        return fail(d, "message rejected by the consumer");
      free(d->payload);
      d->payload = NULL;
      d->payload_len = d->payload_have = 0;
    }
  }
  return ABX_CONNECT_OK;
}

int abx_connect_partial(const struct abx_connect_decoder *d)
{
  return d->header_len > 0;
}

enum abx_connect_bad abx_connect_header(const unsigned char in[5], unsigned *flags, uint32_t *len,
                                        int allow_end, uint32_t max)
{
  *flags = in[0];
  *len =
      ((uint32_t)in[1] << 24) | ((uint32_t)in[2] << 16) | ((uint32_t)in[3] << 8) | (uint32_t)in[4];
  if (*flags & ABX_CONNECT_FLAG_COMPRESSED)
    return ABX_CONNECT_BAD_COMPRESSED;
  if (*flags & ~(unsigned)(ABX_CONNECT_FLAG_COMPRESSED | ABX_CONNECT_FLAG_END))
    return ABX_CONNECT_BAD_RESERVED;
  if (!allow_end && (*flags & ABX_CONNECT_FLAG_END))
    return ABX_CONNECT_BAD_END;
  if (*len > max)
    return ABX_CONNECT_BAD_SIZE;
  return ABX_CONNECT_GOOD;
}

void abx_connect_prefix(unsigned char out[5], unsigned flags, uint32_t len)
{
  out[0] = (unsigned char)flags;
  out[1] = (unsigned char)(len >> 24);
  out[2] = (unsigned char)(len >> 16);
  out[3] = (unsigned char)(len >> 8);
  out[4] = (unsigned char)len;
}
