/*
 * execd_code.c: execd's code-interpreting routes (/code, /code/context, /code/contexts...) on
 * envd's execd listener. OpenSandbox's execd runs code in a Jupyter server of its image; here the
 * Jupyter is the code-interpreter-v1 template's server (platform/code_interpreter/server.py with
 * execd_code.py, which speaks execd's /code wire), so every /code request, once the access token
 * was checked (execd.c), is forwarded as it came (method, path, query, JSON body) to
 * 127.0.0.1:EXECD_CODE_PORT inside the sandbox and its answer streamed back (SSE events as they
 * come). Two cases stay here:
 *   - POST /code whose context.language is "", "command" or "background-command": execd runs the
 *     code as a shell command (pkg/runtime/ctrl.go Execute: runCommand, runBackgroundCommand),
 *     so this runs it as POST /command {command: code[, background: true]} (execd_command.c);
 *   - no code interpreter in the sandbox (connection refused: a template without it): 500
 *     RUNTIME_ERROR "language runtime server not configured, please check your image runtime",
 *     execd's answer when its Jupyter is not configured (pkg/runtime/jupyter.go runJupyter).
 * Source: OpenSandbox @3bb6fad components/execd/pkg/web/router.go, controller/codeinterpreting.go,
 *   pkg/runtime/ctrl.go, jupyter.go; specs/execd-api.yaml.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/execd_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The upstream answer: the socket, and the body bytes already read with the head. */
struct code_fwd {
  int fd;
  char *pre;
  size_t pre_len, pre_at;
  uint64_t length; /* the answer's Content-Length, MHD_SIZE_UNKNOWN when it has none */
};

static void fwd_free(void *cls)
{
  struct code_fwd *f = cls;
  if (f->fd >= 0)
    close(f->fd);
  free(f->pre);
  free(f);
}

/* Body bytes for libmicrohttpd: the rest of the head's read, then the socket until EOF. A thread
 * per connection: blocking here is what the daemon expects (the server pings every 3 s). */
static ssize_t fwd_read(void *cls, uint64_t pos, char *buf, size_t max)
{
  (void)pos;
  struct code_fwd *f = cls;
  if (f->pre_at < f->pre_len) {
    size_t n = f->pre_len - f->pre_at < max ? f->pre_len - f->pre_at : max;
    memcpy(buf, f->pre + f->pre_at, n);
    f->pre_at += n;
    return (ssize_t)n;
  }
  for (;;) {
    ssize_t n = recv(f->fd, buf, max, 0);
    if (n > 0)
      return n;
    if (n == 0)
      return MHD_CONTENT_READER_END_OF_STREAM;
    if (errno != EINTR)
      return MHD_CONTENT_READER_END_WITH_ERROR;
  }
}

static int write_all(int fd, const char *p, size_t n)
{
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* RFC 3986 percent-encoding of a query key or value, or of a path when `path` ('/' kept):
 * libmicrohttpd hands both over decoded. Unreserved characters are kept. */
static char *escape_as(const char *s, bool path)
{
  char *o = malloc(strlen(s) * 3 + 1), *w = o;
  for (; o && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        strchr("-._~", ch) || (path && ch == '/'))
      *w++ = (char)ch;
    else
      w += sprintf(w, "%%%02X", ch);
  }
  if (o)
    *w = 0;
  return o;
}

static char *escape(const char *s)
{
  return escape_as(s, false);
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
  (void)kind;
  FILE *q = cls;
  char *k = key ? escape(key) : NULL, *v = value ? escape(value) : NULL;
  if (k)
    fprintf(q, "%s%s%s%s", ftell(q) ? "&" : "?", k, v ? "=" : "", v ? v : "");
  free(k);
  free(v);
  return MHD_YES;
}

/* The request line and head to forward: path and query as execd got them, the buffered body. */
static char *request_head(struct execd_req *r, size_t *len)
{
  char *query = NULL, *head = NULL, *path = escape_as(r->url, true);
  size_t ql = 0;
  FILE *q = path ? open_memstream(&query, &ql) : NULL;
  if (!q) {
    free(path);
    return NULL;
  }
  MHD_get_connection_values(r->c, MHD_GET_ARGUMENT_KIND, add_arg, q);
  fclose(q);
  int n = asprintf(&head,
                   "%s %s%s HTTP/1.0\r\nHost: localhost:%d\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                   r->method, path, query ? query : "", EXECD_CODE_PORT, r->body ? r->len : 0);
  free(query);
  free(path);
  if (n < 0)
    return NULL;
  *len = (size_t)n;
  return head;
}

/* Reads the answer's head: status and Content-Type (ctype, n bytes); the bytes after it are kept
 * in f->pre. 0, or -1 (a broken answer). */
static int read_head(struct code_fwd *f, unsigned *status, char *ctype, size_t n)
{
  size_t cap = 4096, len = 0;
  char *b = malloc(cap + 1), *end = NULL;
  while (b && !end && len < 64 * 1024) {
    if (len == cap) {
      char *nb = realloc(b, (cap *= 2) + 1);
      if (!nb)
        break;
      b = nb;
    }
    ssize_t k = recv(f->fd, b + len, cap - len, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
    len += (size_t)k;
    b[len] = 0;
    end = strstr(b, "\r\n\r\n");
  }
  if (!end || sscanf(b, "HTTP/%*d.%*d %u", status) != 1 || *status < 100 || *status > 599) {
    free(b);
    return -1;
  }
  ctype[0] = 0;
  f->length = MHD_SIZE_UNKNOWN;
  for (char *l = strstr(b, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n")) {
    if (strncasecmp(l + 2, "Content-Type:", 13) == 0) {
      const char *v = l + 15 + strspn(l + 15, " ");
      snprintf(ctype, n, "%.*s", (int)strcspn(v, "\r"), v);
    } else if (strncasecmp(l + 2, "Content-Length:", 15) == 0) {
      /* kept, so an empty answer says Content-Length: 0 as gin's does: OpenSandbox's SDK
       * (openapi-fetch) parses any other body as JSON ("Unexpected end of JSON input") */
      char *e;
      unsigned long long v = strtoull(l + 17, &e, 10);
      if (e != l + 17 && v < MHD_SIZE_UNKNOWN)
        f->length = v;
    }
  }
  f->pre_len = len - (size_t)(end + 4 - b);
  f->pre = malloc(f->pre_len + 1);
  if (f->pre)
    memcpy(f->pre, end + 4, f->pre_len);
  free(b);
  return f->pre ? 0 : -1;
}

static enum MHD_Result no_runtime(struct execd_req *r, const char *why)
{
  return execd_send_err(r->c, 500, "RUNTIME_ERROR",
                        "language runtime server not configured, please check your image runtime "
                        "(%s; the code interpreter is the code-interpreter-v1 template's server "
                        "on 127.0.0.1:%d)",
                        why, EXECD_CODE_PORT);
}

/* Forward r to the code interpreter and stream its answer. */
static enum MHD_Result forward(struct execd_req *r)
{
  struct code_fwd *f = calloc(1, sizeof *f);
  if (!f)
    return MHD_NO;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(EXECD_CODE_PORT)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (f->fd < 0 || connect(f->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    char eb[128];
    execd_errstr(errno, eb);
    fwd_free(f);
    return no_runtime(r, eb);
  }
  size_t hl = 0;
  char *head = request_head(r, &hl), ctype[128];
  unsigned status = 0;
  if (!head || write_all(f->fd, head, hl) != 0 ||
      (r->body && r->len && write_all(f->fd, r->body, r->len) != 0) ||
      read_head(f, &status, ctype, sizeof ctype) != 0) {
    free(head);
    fwd_free(f);
    return execd_send_err(r->c, 500, "RUNTIME_ERROR",
                          "the code interpreter on 127.0.0.1:%d gave no answer to %s %s",
                          EXECD_CODE_PORT, r->method, r->url);
  }
  free(head);
  struct MHD_Response *resp =
      MHD_create_response_from_callback(f->length, 32 * 1024, fwd_read, f, fwd_free);
  if (!resp) {
    fwd_free(f);
    return MHD_NO;
  }
  if (ctype[0])
    MHD_add_response_header(resp, "Content-Type", ctype);
  if (strncmp(ctype, "text/event-stream", 17) == 0) { /* sse.go sseHeaders */
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
  }
  enum MHD_Result ok = MHD_queue_response(r->c, status, resp);
  MHD_destroy_response(resp);
  return ok;
}

/* POST /code whose context.language is a command language: 1 with the answer queued in *res,
 * 0 when it is not (or the body is not a RunCodeRequest: the code interpreter says why). */
static int as_command(struct execd_req *r, enum MHD_Result *res)
{
  json_t *req = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
  json_t *ctx = json_object_get(req, "context"), *lang = json_object_get(ctx, "language");
  json_t *code = json_object_get(req, "code");
  const char *l = json_is_string(lang) ? json_string_value(lang) : "";
  int cmd = json_is_object(req) && (!ctx || json_is_object(ctx) || json_is_null(ctx)) &&
            (!lang || json_is_string(lang) || json_is_null(lang)) && json_is_string(code) &&
            json_string_length(code) > 0 &&
            (!*l || strcmp(l, "command") == 0 || strcmp(l, "background-command") == 0);
  if (cmd) {
    json_t *body =
        json_pack("{s:O,s:b}", "command", code, "background", strcmp(l, "background-command") == 0);
    char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (s) {
      struct execd_req c = *r;
      c.body = s;
      c.len = strlen(s);
      c.url = "/command";
      *res = execd_run_command(&c);
    } else {
      *res = MHD_NO;
    }
    free(s);
  }
  json_decref(req);
  return cmd;
}

enum MHD_Result execd_code(struct execd_req *r)
{
  enum MHD_Result res;
  if (strcmp(r->method, "POST") == 0 && strcmp(r->url, "/code") == 0 && as_command(r, &res))
    return res;
  return forward(r);
}
