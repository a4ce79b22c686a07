/*
 * ndjson.h: incremental NDJSON line splitter (no Lua, no I/O, no JSON: it only finds lines).
 *
 * Shapes:  body = *(line LF) [line]; a line ends at LF ("\n"); a CR right before the LF is part of
 *          the terminator ("\r\n"), any other CR is data. The last line may lack its LF: it is
 *          reported by abx_ndjson_finish, verbatim. Empty lines are reported like any other (the
 *          consumer decides; the HTTP stream skips them). Line numbers start at 1 and count every
 *          line, empty ones included.
 * Units:   sizes in bytes (size_t); this file has no clock.
 * Limits:  a line, without its terminator, is at most 'max_line' bytes (ABX_NDJSON_MAX_LINE,
 *          16 MiB, unless the splitter was initialised with another bound). A longer line is
 *          ABX_NDJSON_EPROTO as soon as the bytes that arrived prove it (max_line + 1 bytes with
 *          no LF, or max_line + 2 when the last is a CR that an LF could still complete), so the
 *          splitter never holds more than max_line + 1 bytes whatever the peer sends.
 * Errors:  functions return ABX_NDJSON_OK or ABX_NDJSON_EPROTO; after EPROTO the splitter is dead
 *          and keeps returning EPROTO; s->error says why and names the line number. Bindings map
 *          EPROTO to error kind "Protocol".
 * Source:  docs/protocol/envd-protocol.md §10 "/execute stream" (one JSON object per line, each
 *          followed by "\n"); ndjson.org spec 1.0 ("\r\n" accepted as a line separator).
 */
#ifndef ABX_NDJSON_H
#define ABX_NDJSON_H

#include <stddef.h>

#define ABX_NDJSON_MAX_LINE (16u * 1024u * 1024u)

enum abx_ndjson_rc { ABX_NDJSON_OK = 0, ABX_NDJSON_EPROTO = -1 };

/* One line handed to the consumer. 'data' is valid only during the call and is not
 * NUL-terminated; it never includes the terminator. */
struct abx_ndjson_line {
  const char *data;
  size_t len;    /* <= the splitter's max_line */
  size_t number; /* 1-based */
  unsigned term; /* bytes of the terminator consumed: 1 "\n", 2 "\r\n", 0 none (last line) */
};

/* Called once per line, in order. Return 0 to go on, non-zero to stop (the feed then returns
 * ABX_NDJSON_EPROTO with "line N rejected by the consumer"). */
typedef int (*abx_ndjson_line_fn)(void *ud, const struct abx_ndjson_line *line);

struct abx_ndjson {
  char *buf;       /* the start of an unfinished line (malloc'd; grows as bytes arrive) */
  size_t have;     /* bytes of buf filled */
  size_t cap;      /* bytes allocated (<= max_line + 1) */
  size_t max_line; /* bound on a line without its terminator */
  size_t lines;    /* lines reported so far */
  int dead;        /* set after EPROTO */
  int finished;    /* abx_ndjson_finish was called */
  char error[128]; /* what went wrong, for the error message */
};

/* Initialises a splitter; max_line 0 means ABX_NDJSON_MAX_LINE. No allocation until a line is
 * split across feeds. */
void abx_ndjson_init(struct abx_ndjson *s, size_t max_line);

/* Frees the splitter's buffer; it may be initialised again afterwards. */
void abx_ndjson_free(struct abx_ndjson *s);

/* Feeds any slice of the body; calls 'fn' for every line it completes. Lines inside one slice are
 * handed over without a copy; only the unfinished tail is buffered. Returns ABX_NDJSON_OK or
 * ABX_NDJSON_EPROTO (line over max_line, out of memory, 'fn' asked to stop, fed after finish). */
int abx_ndjson_feed(struct abx_ndjson *s, const char *data, size_t len, abx_ndjson_line_fn fn,
                    void *ud);

/* The body ended: reports the buffered bytes, if any, as a last line with term 0. Returns
 * ABX_NDJSON_OK or ABX_NDJSON_EPROTO (that line is over max_line, or 'fn' asked to stop). */
int abx_ndjson_finish(struct abx_ndjson *s, abx_ndjson_line_fn fn, void *ud);

/* Bytes of an unfinished line held now (0 right after a terminator). */
size_t abx_ndjson_pending(const struct abx_ndjson *s);

#endif
