/*
 * http_answer.c: JSON, error and byte answers on libmicrohttpd. Contract in http_answer.h.
 */
#include "http_answer.h"

#include "faults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum MHD_Result abx_http_text(struct MHD_Connection *c, unsigned status, const char *ctype,
                              const char *data, size_t len)
{
  enum MHD_Result instead;
  if (abx_faults_instead(c, &instead)) /* faults.h: status ... after: true */
    return instead;
  struct MHD_Response *r = abx_faults_response(data, len); /* copies; faults.h */
  if (!r)
    return MHD_NO;
  if (ctype)
    MHD_add_response_header(r, "Content-Type", ctype);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

enum MHD_Result abx_http_json(struct MHD_Connection *c, unsigned status, json_t *body)
{
  if (!body)
    return abx_http_text(c, status, NULL, "", 0);
  char *s = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (!s)
    return MHD_NO;
  enum MHD_Result ret = abx_http_text(c, status, "application/json", s, strlen(s));
  free(s);
  return ret;
}

enum MHD_Result abx_http_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
  return abx_http_json(c, status, json_pack("{s:i,s:s}", "code", (int)status, "message", msg));
}
