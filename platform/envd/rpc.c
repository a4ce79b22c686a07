/*
 * rpc.c: Connect protocol plumbing for envd (JSON codec only): content types, request message
 * decoding (bare JSON for unary, one envelope for streams), errors, method dispatch.
 * Source: docs/protocol/envd-protocol.md §2.1 (content types, 415, empty body), §2.3 (envelopes,
 * stream errors as 200 + end-stream), §2.4 (codes), §4.4 (authn before the handler).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/envd_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum ctype { CT_JSON, CT_STREAM_JSON, CT_PROTO, CT_OTHER };

/* Media type without parameters, compared case-insensitively. */
static enum ctype content_type(struct MHD_Connection *c)
{
  const char *ct = envd_header(c, "Content-Type");
  if (!ct)
    return CT_OTHER;
  size_t n = strcspn(ct, ";");
  while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
    n--;
  if (n == 16 && strncasecmp(ct, "application/json", n) == 0)
    return CT_JSON;
  if (n == 24 && strncasecmp(ct, "application/connect+json", n) == 0)
    return CT_STREAM_JSON;
  if ((n == 17 && strncasecmp(ct, "application/proto", n) == 0) ||
      (n == 25 && strncasecmp(ct, "application/connect+proto", n) == 0))
    return CT_PROTO;
  return CT_OTHER;
}

enum MHD_Result envd_send_stream_err(struct MHD_Connection *c, const struct envd_err *err)
{
  size_t len = 0;
  char *env = envd_end_envelope(err, &len);
  if (!env)
    return MHD_NO;
  enum MHD_Result ok = envd_send(c, 200, "application/connect+json", env, len);
  free(env);
  return ok;
}

static json_t *parse_json(const char *data, size_t len, struct envd_err *err)
{
  if (len == 0) {
    envd_fail(err, "invalid_argument",
              "unmarshal message: zero-length payload is not a valid JSON object");
    return NULL;
  }
  json_error_t je;
  json_t *j = json_loadb(data, len, 0, &je);
  if (!j) {
    envd_fail(err, "invalid_argument", "unmarshal message: %s", je.text);
    return NULL;
  }
  if (!json_is_object(j)) {
    json_decref(j);
    envd_fail(err, "invalid_argument", "unmarshal message: not a JSON object");
    return NULL;
  }
  return j;
}

int envd_envelope_head(const unsigned char *b, uint32_t *n, struct envd_err *err)
{
  unsigned flags;
  switch (abx_connect_header(b, &flags, n, 0, ENVD_MAX_MSG)) {
  case ABX_CONNECT_GOOD: return 0;
  case ABX_CONNECT_BAD_COMPRESSED:
    return envd_fail(err, "internal",
                     "protocol error: sent compressed message without compression");
  case ABX_CONNECT_BAD_RESERVED:
    return envd_fail(err, "invalid_argument", "protocol error: reserved envelope flag bits set");
  case ABX_CONNECT_BAD_END:
    return envd_fail(err, "invalid_argument", "protocol error: end-of-stream flag in request");
  case ABX_CONNECT_BAD_SIZE:
    return envd_fail(err, "resource_exhausted", "message size %u exceeds limit %u", *n,
                     ENVD_MAX_MSG);
  }
  return envd_fail(err, "internal", "protocol error: unreadable envelope");
}

static json_t *parse_envelope(const char *body, size_t len, struct envd_err *err)
{
  if (len < 5) {
    envd_fail(err, "invalid_argument", "protocol error: incomplete envelope");
    return NULL;
  }
  uint32_t n;
  if (envd_envelope_head((const unsigned char *)body, &n, err) < 0)
    return NULL;
  if ((size_t)n != len - 5) {
    envd_fail(err, "invalid_argument", "protocol error: envelope length %u, body has %zu bytes", n,
              len - 5);
    return NULL;
  }
  return parse_json(body + 5, n, err);
}

enum MHD_Result envd_rpc_dispatch(struct envd *e, struct MHD_Connection *c,
                                  const struct envd_method *table, const char *method,
                                  const char *body, size_t len, bool too_big)
{
  const struct envd_method *m = NULL;
  for (size_t i = 0; table[i].name; i++)
    if (strcmp(table[i].name, method) == 0)
      m = &table[i];
  if (!m)
    return envd_send(c, 404, "text/plain; charset=utf-8", "404 page not found\n", 19);
  enum ctype ct = content_type(c);
  bool streaming = m->kind != ENVD_UNARY;
  if (ct != (streaming ? CT_STREAM_JSON : CT_JSON)) {
    static const char msg[] = "unsupported content type";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
    if (!r)
      return MHD_NO;
    MHD_add_response_header(r, "Accept-Post",
                            streaming ? "application/connect+json" : "application/json");
    enum MHD_Result ok = MHD_queue_response(c, 415, r);
    MHD_destroy_response(r);
    return ok;
  }
  struct envd_err err = {0};
  struct envd_call call = {.e = e, .conn = c};
  json_t *req = NULL, *out = NULL;
  enum MHD_Result ok;
  const char *cpv = envd_header(c, "Connect-Protocol-Version");
  if (cpv && strcmp(cpv, "1") != 0) {
    envd_fail(&err, "invalid_argument", "connect-protocol-version must be \"1\": got \"%s\"", cpv);
    goto fail;
  }
  if (envd_user_from_basic(e, c, &call.user, &err) < 0)
    goto fail;
  if (too_big) {
    envd_fail(&err, "resource_exhausted", "message size exceeds limit %u", ENVD_MAX_MSG);
    goto fail;
  }
  if (m->kind == ENVD_CLIENT_STREAM)
    return m->stream(&call, NULL);
  req = streaming ? parse_envelope(body, len, &err) : parse_json(body, len, &err);
  if (!req)
    goto fail;
  if (streaming) {
    ok = m->stream(&call, req);
    json_decref(req);
    return ok;
  }
  if (m->unary(&call, req, &out, &err) < 0)
    goto fail;
  json_decref(req);
  if (!out)
    out = json_object();
  ok = envd_send_json(c, 200, out);
  json_decref(out);
  return ok;
fail:
  json_decref(req);
  ok = streaming ? envd_send_stream_err(c, &err) : envd_send_connect_err(c, &err);
  envd_err_clear(&err);
  return ok;
}
