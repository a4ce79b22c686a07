/*
 * core.h: the internal Lua module "abx.core" (contract: docs/ENGINE.md). Scenarios never require it;
 * the lib/abx modules build the scenario API on it.
 */
#ifndef ABX_CORE_H
#define ABX_CORE_H

#include <lua.h>
#include <stddef.h>

struct abx_loop;

/* Opens "abx.core" with 'loop' as upvalue 1 of every function; pushes the module. [-0, +1, m] */
int abx_core_open(lua_State *L, struct abx_loop *loop);

/* Adds the HTTP functions (request, stream) to the module table at the top. [-0, +0, m] */
void abx_core_http_register(lua_State *L, struct abx_loop *loop);

/* Adds core.ndjson (NDJSON streams over the HTTP stream machinery) to the module at the top.
 * [-0, +0, m] */
void abx_core_ndjson_register(lua_State *L, struct abx_loop *loop);

/* How abx_core_stream_open frames and reads a stream. */
struct abx_core_stream_opts {
  int framing;              /* enum abx_http_framing: ABX_HTTP_CONNECT, _NDJSON or _RAW */
  const char *method;       /* overrides req.method when not NULL */
  const char *content_type; /* adds "Content-Type: <it>" when not NULL */
  size_t max_line;          /* NDJSON: bound on a line in bytes; 0: ABX_NDJSON_MAX_LINE */
  long headers_timeout_ms;  /* until the response headers; 0: none */
  long body_timeout_ms;     /* from the headers to the end of the body; 0: none */
  lua_KFunction next_k;     /* continuation of stream:next, which finds the task's stack as
                                [1] stream, [2] ok, [3...] values (error on top when not ok);
                                NULL: return the values as they are */
};

/* Starts a stream transfer for the request table at index 1 (read as core.request reads it; its
 * body is sent as is) and yields until the response headers arrive. Returns the stream
 * (abx.stream; its methods are next, status, close). Raises like core.stream. Must be the last
 * call of a lua_CFunction: return abx_core_stream_open(L, &o). [-?, +1, v] */
int abx_core_stream_open(lua_State *L, const struct abx_core_stream_opts *o);

/* The loop of the stream at 'idx' and its "METHOD url" (no query) for error messages.
 * [-0, +0, v] */
struct abx_loop *abx_core_stream_info(lua_State *L, int idx, const char **what);

/* The utilities, each adding its functions to the module at the top. [-0, +0, m]
 * encode (core_encode.c): b64encode, b64decode, sha256, random_hex;
 * files (core_files.c): read_file, isdir, exists, list_files, state_dir, write_private;
 * config (core_config.c): yaml_load, dotenv_parse;
 * env (core_env.c): getenv, environ, version;
 * console (core_console.c): write, ewrite, isatty, term_width;
 * platform (core_platform.c): platform_start, platform_stop. */
void abx_core_encode_register(lua_State *L, struct abx_loop *loop);
void abx_core_files_register(lua_State *L, struct abx_loop *loop);
void abx_core_config_register(lua_State *L, struct abx_loop *loop);
void abx_core_env_register(lua_State *L, struct abx_loop *loop);
void abx_core_console_register(lua_State *L, struct abx_loop *loop);
void abx_core_platform_register(lua_State *L, struct abx_loop *loop);

/* Reads the whole file at 'path' (at most 'max' bytes) into a malloc'd buffer; *len gets its
 * length. NULL with errno set on failure (EFBIG: over 'max'). */
char *abx_core_slurp(const char *path, size_t *len, size_t max);

/* Adds core.sink (core_sink.c: a byte accumulator outside the Lua heap) to the module at the top.
 * [-0, +0, m] */
void abx_core_sink_register(lua_State *L);

/* Whether the Connect message p[0..n) is exactly {"event":{"data":{"<field>":"<text>"}}}, the
 * compact form envd writes a ProcessEvent data event in (docs/protocol/envd-protocol.md §3, §4.3):
 * returns the field ("stdout", "stderr" or "pty", static) and points *b64 at the text, or NULL
 * for any other shape (the caller then decodes the message as JSON). The text is not checked
 * here; a quote or backslash in it fails the base64 decode, which sends the message the slow way.
 * [-0, +0, -] */
const char *abx_core_data_event(const char *p, size_t n, const char **b64, size_t *b64_len);

/* Decodes the base64 text b64[0..n) onto the end of the core.sink at 'idx' (strict, both
 * alphabets: proto/base64.h). Returns 1 when the bytes were added; 0 when 'idx' is no sink, the
 * text is not base64 or the sink cannot grow, and the sink is then unchanged. [-0, +0, -] */
int abx_core_sink_b64(lua_State *L, int idx, const char *b64, size_t n);

/* Adds core.stdio, core.process_start and core.self_exe (core_pipe.c: pipes on the loop, child
 * processes with pipes) to the module at the top. [-0, +0, m] */
void abx_core_pipe_register(lua_State *L, struct abx_loop *loop);

/* Adds core.http_server (core_httpd.c: an HTTP server, libmicrohttpd driven by the loop) to the
 * module at the top. [-0, +0, m] */
void abx_core_httpd_register(lua_State *L, struct abx_loop *loop);

/* Adds core.gzip and core.gunzip (zlib) to the module at the top. [-0, +0, m] */
void abx_core_zlib_register(lua_State *L, struct abx_loop *loop);

/* Adds core.wire_open (raw TCP/TLS streams), core.sha1 and core.vnc_auth (core_wire.c, nettle)
 * to the module at the top. [-0, +0, m] */
void abx_core_wire_register(lua_State *L, struct abx_loop *loop);

/* Adds core.png_write and core.png_read (core_png.c, libpng) to the module at the top.
 * [-0, +0, m] */
void abx_core_png_register(lua_State *L, struct abx_loop *loop);

/* Adds the file-tree primitives of template builds (core_fs.c: lstat, readdir, realpath,
 * sha256_new, tar_gz with libarchive) to the module at the top. [-0, +0, m] */
void abx_core_fs_register(lua_State *L, struct abx_loop *loop);

/* HTTP traces (core_trace.c), written when loop->trace (core.set_trace) is 1 or more, masked.
 * abx_trace_request: "> METHOD url (N bytes)" and the request headers, before the transfer;
 * abx_trace_answer: status, headers and, at level 2, a body excerpt whose credential-named JSON
 * fields are registered as secrets first; or the failure. */
struct abx_transfer;
#define ABX_TRACE_WHAT_MAX 1024
/* "[label] METHOD url" (url whole, query included) into out[n] for the trace lines of the request
 * table at 'idx': label is its optional string field trace_label (the running test, set by
 * abx.run.trace), left out when absent. [-0, +0, -] */
void abx_trace_what(lua_State *L, int idx, const char *method, const char *url, char *out,
                    size_t n);
void abx_trace_request(struct abx_loop *loop, const char *what, const char *const *headers,
                       size_t body_len);
void abx_trace_answer(struct abx_loop *loop, const char *what, struct abx_transfer *t,
                      double started_ms);

/* Request tables (core_body.c): the "Name: value" header strings of one request, owned. */
#define ABX_CORE_MAX_REQ_HEADERS 64
struct abx_core_req_strings {
  char *headers[ABX_CORE_MAX_REQ_HEADERS + 1];
  int n;
};

/* Frees the header strings (n becomes 0). */
void abx_core_req_strings_free(struct abx_core_req_strings *rs);

/* Reads the request table at 'idx' (docs/ENGINE.md "HTTP": method, url, headers, body or
 * body_file, timeout, max_body, connect_to) into 'r' and 'rs', and "METHOD url" (no query) into
 * 'what'. A body_file (a Lua file handle, read from its current position by the transfer) must
 * stay referenced until the transfer ends: the caller keeps the request table on its stack.
 * Header names and values must not contain CR or LF (header injection). Raises a Lua error for
 * a malformed table, an abx.error InvalidArgument for a closed body_file. [-0, +0, v] */
struct abx_http_request;
void abx_core_read_request(lua_State *L, int idx, struct abx_http_request *r,
                           struct abx_core_req_strings *rs, char *what, size_t what_len);

/* Adds core.body_stream (a response body read in chunks) to the module at the top. [-0, +0, m] */
void abx_core_body_register(lua_State *L, struct abx_loop *loop);

/* The loop stored as upvalue 1 of the running C function. [-0, +0, -] */
struct abx_loop *abx_core_loop(lua_State *L);

#endif
