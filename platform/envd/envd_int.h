/*
 * envd_int.h: shared state and helpers of the in-sandbox daemon (internal to platform/envd).
 *
 * Shapes:  struct envd is the one daemon context, created in abx_envd_main and passed to every
 *          handler (no globals). struct envd_call is one authenticated RPC or /files request.
 *          Connect errors are (code, message) pairs: code is a Connect code name ("not_found").
 * Units:   sizes in bytes, durations in milliseconds unless a name says otherwise.
 * Limits:  ENVD_MAX_MSG (4 MiB) per request message; ENVD_CHUNK (32 KiB) per output read.
 * Errors:  functions returning int give 0 on success, -1 with a filled struct envd_err.
 * Source:  docs/protocol/envd-protocol.md §2 (Connect), §3 (ProtoJSON), §6 (auth, users).
 */
#ifndef ABX_ENVD_INT_H
#define ABX_ENVD_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base64.h"  /* proto/: the one base64 */
#include "connect.h" /* proto/: envelope prefix reader and writer */
#include "e2b.h"     /* proto/: envd port and version */

#define ENVD_MAX_MSG ABX_CONNECT_MAX_MSG /* 4 MiB, the same limit as the engine's decoder */
#define ENVD_CHUNK (32u * 1024u)
#define ENVD_PATH_ENV "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct envd_procs; /* process.c */
struct execd_cmds; /* execd_command.c */

/* The daemon context. `mu` guards token, default_user, default_workdir, env_vars, inited. */
struct envd {
  pthread_mutex_t mu;
  bool inited;
  char *token;           /* NULL: no access token set */
  char *default_user;    /* NULL: "root" */
  char *default_workdir; /* NULL: the user's home */
  json_t *env_vars;      /* object string -> string, from /init envVars */
  volatile int stopping; /* set on SIGTERM/SIGINT; streams end soon after */
  struct envd_procs *procs;
  struct envd_watchers *watchers;
  struct execd_cmds
      *execd; /* execd_command.c: the execd command table, NULL without --execd-port */
  /* /metrics: the previous CPU sample (guarded by mu); total 0: none yet. */
  struct envd_cpu_prev {
    unsigned long long total, idle;
  } cpu_prev;
  unsigned mutants; /* mutants.h: the lies of ABX_ENVD_MUTANTS, a bit each; 0: none */
};

/* A Connect error: code is a static Connect code name, msg is malloc'd (may be NULL). */
struct envd_err {
  const char *code;
  char *msg;
};

/* A resolved sandbox user (from /etc/passwd via getpwnam_r). */
struct envd_user {
  char name[64];
  uid_t uid;
  gid_t gid;
  char home[512];
  gid_t groups[64];
  int ngroups;
};

/* One authenticated request: the daemon, the connection (for headers) and the acting user. */
struct envd_call {
  struct envd *e;
  struct MHD_Connection *conn;
  struct envd_user user;
};

/* ---- wire.c ------------------------------------------------------------------------------ */

/* Set err to (code, printf-formatted message); returns -1 for `return envd_fail(...)`. */
int envd_fail(struct envd_err *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* HTTP status for a Connect code, per reference §2.4 table (unknown names → 500). */
unsigned envd_code_http(const char *code);

/* A request body gathered from MHD's upload chunks: `n` bytes of `data` appended to the malloc'd
 * `*body` (grown by doubling, kept NUL-terminated). Past `max` bytes in all the body is dropped
 * and `*too_big` set, so the caller answers 413 once the request is complete; later chunks are
 * ignored. Returns 0, or -1 when memory ran out (the caller ends the connection). */
int envd_body_add(char **body, size_t *len, size_t *cap, bool *too_big, size_t max,
                  const char *data, size_t n);

/* Queue a response with body `data` (copied), status and content type; returns MHD_YES/NO. */
enum MHD_Result envd_send(struct MHD_Connection *c, unsigned status, const char *ctype,
                          const void *data, size_t len);

/* Queue a JSON response (object serialized compactly); `j` is not stolen. */
enum MHD_Result envd_send_json(struct MHD_Connection *c, unsigned status, json_t *j);

/* REST error body {"code":<status>,"message":msg}, application/json; charset=utf-8 (§7). */
enum MHD_Result envd_send_rest_err(struct MHD_Connection *c, unsigned status, const char *msg);

/* Unary Connect error: status from the code table, body {"code":"..","message":".."} (§2.4). */
enum MHD_Result envd_send_connect_err(struct MHD_Connection *c, const struct envd_err *err);

/* Append envelope flags|len32be|json(j) to a malloc'd buffer; returns the buffer or NULL.
 * `*len` receives the size. Source: §2.3. */
char *envd_envelope(uint8_t flags, json_t *j, size_t *len);

/* End-of-stream envelope: `{}` when err is NULL or err->code NULL, else {"error":{...}} (§2.3). */
char *envd_end_envelope(const struct envd_err *err, size_t *len);

/* Constant-time equality of two NUL-terminated strings (length leak only). */
bool envd_str_eq_ct(const char *a, const char *b);

/* Field of a JSON object by camelCase or snake_case name; JSON null counts as absent. */
json_t *envd_jget(json_t *obj, const char *camel, const char *snake);

/* Read an unsigned 32-bit field given as number or decimal string. Returns 1 when present and
 * valid, 0 when absent, -1 when malformed. */
int envd_jget_u32(json_t *obj, const char *camel, const char *snake, uint32_t *out);

/* Header value (case-insensitive name) or NULL. */
const char *envd_header(struct MHD_Connection *c, const char *name);

/* Free err->msg and reset. */
void envd_err_clear(struct envd_err *err);

/* ---- users.c ----------------------------------------------------------------------------- */

/* Resolve the acting user for an RPC: Authorization Basic base64("<user>:") or the default
 * user. Errors: unauthenticated "invalid username: '<u>'" (§4.4, §6.2). */
int envd_user_from_basic(struct envd *e, struct MHD_Connection *c, struct envd_user *u,
                         struct envd_err *err);

/* Look a user up by name (NULL/"" → default user). Answers are cached while /etc/passwd,
 * /etc/group and /etc/nsswitch.conf keep their identity (device, inode, size, mtime, ctime), so a
 * user added or changed is looked up again. Errors: unauthenticated. */
int envd_user_lookup(struct envd *e, const char *name, struct envd_user *u, struct envd_err *err);

/* Resolve a request path like cwd (§4.4): ""→default workdir or home, "~", "~/x", relative
 * joined on home, then cleaned. Returns malloc'd absolute path or NULL (invalid_argument). */
char *envd_resolve_path(struct envd *e, const struct envd_user *u, const char *path,
                        struct envd_err *err);

/* Lexically clean an absolute path (like Go filepath.Clean); malloc'd. */
char *envd_path_clean(const char *p);

/* Switch this thread's filesystem identity (fsuid, fsgid, supplementary groups) to u, so file
 * operations run with the user's permissions; envd_fs_leave restores root. Per-thread only. */
void envd_fs_enter(const struct envd_user *u);
void envd_fs_leave(void);

/* mkdir -p with mode 0755 under the current fs identity; with `owner`, each directory this call
 * creates (and only those) is then chowned to owner's uid:gid. Called as root with the requesting
 * user as owner, it is E2B envd's EnsureDirs: an upload to /0/file, MakeDir /a/b or a Move into a
 * new directory succeeds for `user` with the new directories the user's
 * (docs/protocol/envd-protocol.md §5.2 MakeDir, §7 POST /files "Parent dirs are created and chowned
 * to the user"). Returns 0 or -1 with errno (ENOTDIR when path is not a directory). */
int envd_mkdir_p(const char *path, const struct envd_user *owner);

/* rm -rf of `name` below directory fd `dfd` (AT_FDCWD: a path), never following symlinks
 * (filesystem.c; execd's DELETE /directories too). 0 (a missing name too) or -1 with errno. */
int envd_remove_all(int dfd, const char *name);

/* Map an errno from a file operation to a Connect code name. */
const char *envd_errno_code(int err);

/* ---- entry.c ----------------------------------------------------------------------------- */

/* EntryInfo JSON for `path` (lstat-based, §5.1), named by `shown` (the path to report; NULL →
 * path). Returns new object or NULL with errno set. */
json_t *envd_entry_info(const char *path, const char *shown);

/* libmicrohttpd's memory per connection (MHD_OPTION_CONNECTION_MEMORY_LIMIT), which bounds the
 * request head: the head's bytes and a table entry (about 50 bytes) per header field share it.
 * MHD's default of 32 KiB answers its own 431 "Request too big" page to an upload with a few
 * hundred X-Metadata-* fields (7 KB of head, found by tests/fuzz/fuzz_multipart.c); E2B's envd
 * is a Go net/http server, whose default head limit (http.DefaultMaxHeaderBytes) is 1 MiB. 256 KiB
 * takes heads of several thousand fields; past that MHD's 431 stands. envd.c and the fuzz jail. */
#define ENVD_CONNECTION_MEMORY (256u * 1024u)

/* File metadata (§7 X-Metadata-*, EntryInfo.metadata): xattrs ENVD_XATTR_PREFIX<key>. */
#define ENVD_XATTR_PREFIX "user.e2b."
/* {key: value} of fd's (fd >= 0) or path's own (lgetxattr) metadata; NULL when none. */
json_t *envd_xattr_metadata(const char *path, int fd);

/* ---- rpc.c: Connect plumbing shared by process.Process and filesystem.Filesystem -------- */

enum envd_kind { ENVD_UNARY, ENVD_SERVER_STREAM, ENVD_CLIENT_STREAM };

/* One RPC method. Unary methods fill *out (new reference) or err; streaming methods queue their
 * own response (a stream, or envd_send_stream_err). */
struct envd_method {
  const char *name;
  enum envd_kind kind;
  int (*unary)(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err);
  enum MHD_Result (*stream)(struct envd_call *c, json_t *req);
};

/* Dispatch `method` (path after "/<pkg>.<Service>/") against a NULL-name-terminated table:
 * unknown method → 404; content type must be application/json (unary; "; charset=utf-8"
 * accepted) or application/connect+json (streams), else 415; then the Basic user (§4.4), then
 * the message: unary body is bare JSON, a stream request is one envelope (§2.3). Limits: a
 * message over ENVD_MAX_MSG (`too_big`) → invalid_argument. */
enum MHD_Result envd_rpc_dispatch(struct envd *e, struct MHD_Connection *c,
                                  const struct envd_method *table, const char *method,
                                  const char *body, size_t len, bool too_big);

/* Reads and checks the 5-byte prefix b[0..4] of a request message (proto/connect.h): *n gets the
 * payload length. Returns 0, or -1 with err set: compressed → internal; reserved flag bits or
 * end-of-stream in a request → invalid_argument; over ENVD_MAX_MSG → resource_exhausted (§2.3). */
int envd_envelope_head(const unsigned char *b, uint32_t *n, struct envd_err *err);

/* Streaming error reply: HTTP 200 connect+json with a lone end-stream envelope (§2.3). */
enum MHD_Result envd_send_stream_err(struct MHD_Connection *c, const struct envd_err *err);

/* Stream helpers (process_stream.c). Connect-Timeout-Ms: 1..10 digits → ms; 0 when absent or 0;
 * -1 when malformed. Keepalive-Ping-Interval seconds → ms (default 90 s). Whether the client
 * socket fd was closed by the peer. The client socket of c, or -1. */
int64_t envd_timeout_header(struct MHD_Connection *c);
int64_t envd_keepalive_ms(struct MHD_Connection *c);
bool envd_client_gone(int fd);
int envd_conn_fd(struct MHD_Connection *c);

/* Queues the HTTP 200 application/connect+json answer of a server stream whose body `cb` writes
 * (at most `block` bytes a call) from `cls`; `free_cb` frees cls when the answer ends, or at once
 * when the answer cannot be made (then MHD_NO). */
enum MHD_Result envd_queue_stream(struct MHD_Connection *c, size_t block,
                                  MHD_ContentReaderCallback cb, void *cls,
                                  MHD_ContentReaderFreeCallback free_cb);

/* The end of a stream callback: copies at most `max` of the bytes out[*pos..len) still to send
 * into buf, advances *pos and returns how many it copied. */
ssize_t envd_stream_take(const char *out, size_t len, size_t *pos, char *buf, size_t max);

/* Watch RPCs (watch_rpc.c), listed in filesystem.c's method table. */
enum MHD_Result envd_rpc_watch_dir(struct envd_call *c, json_t *req);
int envd_rpc_create_watcher(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err);
int envd_rpc_get_watcher_events(struct envd_call *c, json_t *req, json_t **out,
                                struct envd_err *err);
int envd_rpc_remove_watcher(struct envd_call *c, json_t *req, json_t **out, struct envd_err *err);

/* Method tables (process_rpc.c, filesystem.c). */
extern const struct envd_method envd_process_methods[];
extern const struct envd_method envd_filesystem_methods[];

/* envd.c: libmicrohttpd's access handler and completion callback of the daemon, cls the struct
 * envd. Extern so tests/fuzz/fuzz_multipart.c drives the real request path (POST /files
 * included) on a daemon of its own; only abx_envd_main starts the real one. */
enum MHD_Result envd_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls);
void envd_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                       enum MHD_RequestTerminationCode toe);

/* files.c helpers files_upload.c shares: the query argument k (or NULL); the §8 authorization
 * then the user of the `username` query into *u (false: the error reply is queued, *res is
 * MHD_queue_response's result); the HTTP status for an errno (404, 403, 507, 400, 500). */
const char *envd_files_query(struct MHD_Connection *c, const char *k);
bool envd_files_begin(struct envd *e, struct MHD_Connection *c, const char *op, struct envd_user *u,
                      enum MHD_Result *res);
unsigned envd_files_errno_status(int er);

/* /files (files.c: GET; files_upload.c: POST). Per-request upload state lives in the request
 * context. */
struct envd_upload;
/* Start a POST /files upload after auth; returns NULL and queues an error reply itself when
 * the request is refused (then *queued is set). */
struct envd_upload *envd_files_post_begin(struct envd *e, struct MHD_Connection *c, bool *queued);
/* Feed body bytes; false means the upload failed (reply queued at the end). */
bool envd_files_post_data(struct envd_upload *up, const char *data, size_t len);
/* Finish: queue the reply; frees the upload. */
enum MHD_Result envd_files_post_end(struct envd_upload *up);
/* Free without replying (connection aborted). */
void envd_files_post_free(struct envd_upload *up);
/* GET /files (Accept-Encoding: gzip → gzip body). */
enum MHD_Result envd_files_get(struct envd *e, struct MHD_Connection *c);

/* StreamInput (process_rpc.c), fed incrementally like an upload. begin checks the content type
 * (415), Connect-Protocol-Version and the Basic user after envd.c checked the token; it returns
 * NULL with *queued set when it queued a reply itself. */
struct envd_sinput;
struct envd_sinput *envd_stream_input_begin(struct envd *e, struct MHD_Connection *c, bool *queued);
void envd_stream_input_data(struct envd_sinput *si, const char *data, size_t len);
enum MHD_Result envd_stream_input_end(struct envd_sinput *si); /* replies; frees si */
void envd_stream_input_free(struct envd_sinput *si);

/* GET /metrics (metrics.c): {ts, cpu_count, cpu_used_pct, mem_*, disk_*} (§7). */
enum MHD_Result envd_metrics(struct envd *e, struct MHD_Connection *c);

/* One reading of the sandbox's figures (metrics.c): CPUs, busy percent (2 decimals), memory and
 * disk in bytes. */
struct envd_metrics_sample {
  long cpu_count;
  double cpu_used_pct;
  unsigned long long mem_total, mem_used, mem_cache, disk_total, disk_used;
};

/* Read the figures into *m. The CPU percent is the busy share since *prev (a caller's own
 * series, e.g. one watch stream), or since envd's shared previous sample when prev is NULL; a
 * series with no sample yet (total 0) measures over 100 ms. */
void envd_metrics_read(struct envd *e, struct envd_cpu_prev *prev, struct envd_metrics_sample *m);

/* Watchers (watch.c): the table of CreateWatcher watchers; shutdown stops their threads. */
/* spawn.c: the first executable regular file `cmd` in the ':'-separated dirs of `path` (empty
 * entries skipped; with absolute_only, relative dirs too, as sudo's secure_path lookup does), a
 * malloc'd path; NULL when there is none. */
char *envd_path_lookup(const char *path, const char *cmd, int absolute_only);

struct envd_watchers;
int envd_watchers_init(struct envd *e);
void envd_watchers_shutdown(struct envd *e);

#endif
