/*
 * http_answer.h: answers of the local platform's HTTP servers on libmicrohttpd: JSON, the error body and
 * raw bytes, each passing the --faults rules (faults.h).
 *
 * Shapes:  error body {"code":<status>,"message":"..."} with code == HTTP status
 *          (docs/protocol/e2b-control-plane.md §2 "Error body").
 */
#ifndef ABX_UTIL_HTTP_ANSWER_H
#define ABX_UTIL_HTTP_ANSWER_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>

/* Queue `body` (stolen reference; NULL sends an empty body) as JSON with `status`. Returns MHD's result. */
enum MHD_Result abx_http_json(struct MHD_Connection *c, unsigned status, json_t *body);

/* Queue {"code":status,"message":msg} with `status` (§2 error body). */
enum MHD_Result abx_http_error(struct MHD_Connection *c, unsigned status, const char *msg);

/* Queue a body of `len` bytes copied from `data` with `status` and optional content type. */
enum MHD_Result abx_http_text(struct MHD_Connection *c, unsigned status, const char *ctype,
                              const char *data, size_t len);

#endif
