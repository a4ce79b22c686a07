/*
 * wire.c: the wire side of envd's routes: errors and their Connect codes and HTTP statuses, answers
 * (REST, JSON, Connect errors), Connect envelopes, and request reading (JSON fields, headers, the
 * body).
 * Source: docs/protocol/envd-protocol.md §2.3 (envelopes), §2.4 (error codes), §3 (ProtoJSON), §7.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/envd_int.h"

#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int envd_fail(struct envd_err *err, const char *code, const char *fmt, ...)
{
  va_list ap;
  free(err->msg);
  err->code = code;
  err->msg = NULL;
  va_start(ap, fmt);
  if (vasprintf(&err->msg, fmt, ap) < 0)
    err->msg = NULL;
  va_end(ap);
  return -1;
}

void envd_err_clear(struct envd_err *err)
{
  free(err->msg);
  err->msg = NULL;
  err->code = NULL;
}

unsigned envd_code_http(const char *code)
{
  static const struct {
    const char *code;
    unsigned status;
  } t[] = {{"canceled", 499},
           {"unknown", 500},
           {"invalid_argument", 400},
           {"deadline_exceeded", 504},
           {"not_found", 404},
           {"already_exists", 409},
           {"permission_denied", 403},
           {"resource_exhausted", 429},
           {"failed_precondition", 400},
           {"aborted", 409},
           {"out_of_range", 400},
           {"unimplemented", 501},
           {"internal", 500},
           {"unavailable", 503},
           {"data_loss", 500},
           {"unauthenticated", 401}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (code && strcmp(code, t[i].code) == 0)
      return t[i].status;
  return 500;
}

enum MHD_Result envd_send(struct MHD_Connection *c, unsigned status, const char *ctype,
                          const void *data, size_t len)
{
  struct MHD_Response *r =
      MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
  if (!r)
    return MHD_NO;
  if (ctype)
    MHD_add_response_header(r, "Content-Type", ctype);
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

enum MHD_Result envd_send_json(struct MHD_Connection *c, unsigned status, json_t *j)
{
  char *s = json_dumps(j, JSON_COMPACT);
  if (!s)
    return MHD_NO;
  enum MHD_Result ok = envd_send(c, status, "application/json", s, strlen(s));
  free(s);
  return ok;
}

enum MHD_Result envd_send_rest_err(struct MHD_Connection *c, unsigned status, const char *msg)
{
  json_t *m = json_string(msg ? msg : "");
  if (!m && msg) {
    /* The message quotes a header or path that is not UTF-8, which a JSON string cannot hold:
     * answer all the same, with every byte outside ASCII as '?'. */
    char *ascii = strdup(msg);
    for (char *p = ascii; p && *p; p++)
      if ((unsigned char)*p > 0x7e)
        *p = '?';
    m = ascii ? json_string(ascii) : NULL;
    free(ascii);
  }
  json_t *j = json_object();
  if (j)
    json_object_set_new(j, "code", json_integer(status));
  if (j && m)
    json_object_set(j, "message", m);
  json_decref(m);
  char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (!s)
    return MHD_NO;
  enum MHD_Result ok = envd_send(c, status, "application/json; charset=utf-8", s, strlen(s));
  free(s);
  return ok;
}

static json_t *err_json(const struct envd_err *err)
{
  json_t *j = json_pack("{s:s}", "code", err->code ? err->code : "unknown");
  if (j && err->msg && *err->msg)
    json_object_set_new(j, "message", json_string(err->msg));
  return j;
}

enum MHD_Result envd_send_connect_err(struct MHD_Connection *c, const struct envd_err *err)
{
  json_t *j = err_json(err);
  if (!j)
    return MHD_NO;
  enum MHD_Result ok = envd_send_json(c, envd_code_http(err->code), j);
  json_decref(j);
  return ok;
}

char *envd_envelope(uint8_t flags, json_t *j, size_t *len)
{
  char *s = json_dumps(j, JSON_COMPACT);
  if (!s)
    return NULL;
  size_t n = strlen(s);
  char *buf = malloc(n + 5);
  if (!buf) {
    free(s);
    return NULL;
  }
  abx_connect_prefix((unsigned char *)buf, flags, (uint32_t)n);
  memcpy(buf + 5, s, n);
  free(s);
  *len = n + 5;
  return buf;
}

char *envd_end_envelope(const struct envd_err *err, size_t *len)
{
  json_t *j = json_object();
  if (err && err->code)
    json_object_set_new(j, "error", err_json(err));
  char *b = envd_envelope(ABX_CONNECT_FLAG_END, j, len);
  json_decref(j);
  return b;
}

bool envd_str_eq_ct(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b);
  if (la != lb)
    return false;
  return CRYPTO_memcmp(a, b, la) == 0;
}

json_t *envd_jget(json_t *obj, const char *camel, const char *snake)
{
  if (!json_is_object(obj))
    return NULL;
  json_t *v = json_object_get(obj, camel);
  if ((!v || json_is_null(v)) && snake)
    v = json_object_get(obj, snake);
  if (v && json_is_null(v))
    return NULL;
  return v;
}

int envd_jget_u32(json_t *obj, const char *camel, const char *snake, uint32_t *out)
{
  json_t *v = envd_jget(obj, camel, snake);
  if (!v)
    return 0;
  if (json_is_integer(v)) {
    json_int_t x = json_integer_value(v);
    if (x < 0 || x > 0xffffffffLL)
      return -1;
    *out = (uint32_t)x;
    return 1;
  }
  if (json_is_real(v)) {
    double d = json_real_value(v);
    if (d < 0 || d > 4294967295.0 || d != (double)(uint32_t)d)
      return -1;
    *out = (uint32_t)d;
    return 1;
  }
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    char *end = NULL;
    if (!*s || *s == '-')
      return -1;
    unsigned long long x = strtoull(s, &end, 10);
    if (*end || x > 0xffffffffULL)
      return -1;
    *out = (uint32_t)x;
    return 1;
  }
  return -1;
}

const char *envd_header(struct MHD_Connection *c, const char *name)
{
  return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

int envd_body_add(char **body, size_t *len, size_t *cap, bool *too_big, size_t max,
                  const char *data, size_t n)
{
  if (*too_big || *len + n > max) {
    *too_big = true;
    free(*body);
    *body = NULL;
    *len = *cap = 0;
    return 0;
  }
  if (*len + n + 1 > *cap) {
    size_t c = *cap ? *cap : 4096;
    while (c < *len + n + 1)
      c *= 2;
    char *b = realloc(*body, c);
    if (!b)
      return -1;
    *body = b;
    *cap = c;
  }
  memcpy(*body + *len, data, n);
  *len += n;
  (*body)[*len] = 0;
  return 0;
}
