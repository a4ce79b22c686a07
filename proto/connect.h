/*
 * connect.h: Connect protocol envelope codec (no Lua, no I/O).
 *
 * Shapes:  envelope = flags u8 | length u32 big-endian | payload[length]
 *          flags 0x01 compressed (rejected: abxlua never negotiates compression),
 *          flags 0x02 end of stream: the payload is JSON {"error"?: {"code","message"}, "metadata"?}
 * Units:   sizes in bytes (size_t); this file has no clock.
 * Limits:  payload <= ABX_CONNECT_MAX_MSG (4 MiB), otherwise ABX_CONNECT_EPROTO.
 * Errors:  the decoder returns ABX_CONNECT_OK or ABX_CONNECT_EPROTO; after EPROTO it is dead and
 *          keeps returning EPROTO. Bindings map EPROTO to error kind "Protocol".
 * Users:   the engine's response decoder (engine/http.c), envd's request parsing and envelope
 *          writer (platform/envd/rpc.c, wire.c, process_rpc.c), serve's fault injection.
 * Source:  docs/protocol/envd-protocol.md §2.3 "Envelope framing"; connectrpc.com/docs/protocol,
 *          "Streaming-Response".
 */
#ifndef ABX_CONNECT_H
#define ABX_CONNECT_H

#include <stddef.h>
#include <stdint.h>

#define ABX_CONNECT_MAX_MSG (4u * 1024u * 1024u)
#define ABX_CONNECT_FLAG_COMPRESSED 0x01u
#define ABX_CONNECT_FLAG_END 0x02u

enum abx_connect_rc { ABX_CONNECT_OK = 0, ABX_CONNECT_EPROTO = -1 };

/* Called once per complete envelope; 'payload' is valid only during the call. Return 0 to go on,
 * non-zero to stop decoding (abx_connect_feed then returns ABX_CONNECT_EPROTO). */
typedef int (*abx_connect_msg_fn)(void *ud, unsigned flags, const char *payload, size_t len);

struct abx_connect_decoder {
  unsigned char header[5]; /* the envelope prefix being assembled */
  size_t header_len;       /* bytes of header[] filled, 0..5 */
  char *payload;           /* buffer for the current payload (malloc'd, grows as bytes arrive) */
  size_t payload_cap;      /* bytes allocated for it (<= payload_len) */
  size_t payload_len;      /* announced length of the current payload */
  size_t payload_have;     /* bytes received of it */
  int dead;                /* set after a protocol error */
  char error[128];         /* what went wrong, for the error message */
};

/* Initialises a decoder (no allocation until the first payload). */
void abx_connect_decoder_init(struct abx_connect_decoder *d);

/* Frees the decoder's buffer; the decoder may be re-initialised afterwards. */
void abx_connect_decoder_free(struct abx_connect_decoder *d);

/* Feeds any slice of the response body. Calls 'fn' for each complete envelope in order.
 * Returns ABX_CONNECT_OK, or ABX_CONNECT_EPROTO (d->error says why: compressed flag, reserved
 * flag bits, payload over the limit, allocation failure, or 'fn' asked to stop). */
int abx_connect_feed(struct abx_connect_decoder *d, const char *data, size_t len,
                     abx_connect_msg_fn fn, void *ud);

/* True when the decoder holds a partial envelope (a stream that ends now was truncated). */
int abx_connect_partial(const struct abx_connect_decoder *d);

/* Why an envelope prefix is refused (abx_connect_header). */
enum abx_connect_bad {
  ABX_CONNECT_GOOD = 0,
  ABX_CONNECT_BAD_COMPRESSED, /* flag 0x01: abxlua never negotiates compression */
  ABX_CONNECT_BAD_RESERVED,   /* flag bits other than 0x01 and 0x02 */
  ABX_CONNECT_BAD_END,        /* end-of-stream flag where none may come (a request message) */
  ABX_CONNECT_BAD_SIZE,       /* payload longer than the caller's limit */
};

/* Reads the 5-byte prefix in[0..4] into *flags and *len (the big-endian payload length), then
 * checks it in this order: compressed, reserved bits, end-of-stream (refused unless allow_end),
 * length over max bytes. Returns ABX_CONNECT_GOOD or the first reason to refuse the envelope;
 * *flags and *len are filled either way. */
enum abx_connect_bad abx_connect_header(const unsigned char in[5], unsigned *flags, uint32_t *len,
                                        int allow_end, uint32_t max);

/* Writes the 5-byte prefix for a payload of 'len' bytes with 'flags' into out[0..4]. */
void abx_connect_prefix(unsigned char out[5], unsigned flags, uint32_t len);

#endif
