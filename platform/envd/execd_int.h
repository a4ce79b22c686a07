/*
 * execd_int.h: OpenSandbox's execd data plane served by envd on a second listener
 * (`abxlua envd --execd-port N`): shared declarations of execd.c (listener, routing, auth,
 * errors, path and FileInfo helpers), execd_command.c (commands), execd_code.c (/code, forwarded
 * to the code interpreter), execd_files.c (files and
 * directories), execd_search.c (files search and replace), execd_session.c (bash sessions),
 * execd_metrics.c (metrics) and execd_upload.c (POST /files/upload).
 *
 * Shapes:  errors are execd's ErrorResponse {"code":"<ERROR_CODE>","message":".."} (codes of
 *          model/error.go: INVALID_REQUEST_BODY, MISSING_QUERY, RUNTIME_ERROR, INVALID_FILE,
 *          INVALID_FILE_CONTENT, INVALID_FILE_METADATA, FILE_NOT_FOUND, UNKNOWN,
 *          CONTEXT_NOT_FOUND, NOT_SUPPORTED), except the 401 of the token check, which execd answers
 *          {"error":"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"}.
 * Identity: execd runs every file operation as itself; so does this (envd's identity, root in a
 *          sandbox). Commands run as envd's user unless the request names a uid (and gid).
 * Paths:   execd's pathutil.ExpandAbsPath: $VAR and ${VAR} from envd's environment (an undefined
 *          one is an error), a leading "~" is $HOME, relative paths are joined on envd's cwd.
 * Source:  opensandbox-group/OpenSandbox specs/execd-api.yaml; OpenSandbox @3bb6fad components/execd/pkg/web
 *          (router.go, controller/, model/) and pkg/runtime (command*.go, ctrl.go).
 */
#ifndef ABX_ENVD_EXECD_INT_H
#define ABX_ENVD_EXECD_INT_H

#include "envd/envd_int.h"

#include <sys/stat.h>

/* The token header (model/header.go ApiAccessTokenHeader). */
#define EXECD_TOKEN_HEADER "X-EXECD-ACCESS-TOKEN"
/* JSON request bodies are buffered up to this size; larger ones are refused with 400. */
#define EXECD_MAX_BODY (8u * 1024u * 1024u)

/* One request as the routes see it: method, path, the buffered body (JSON routes). */
struct execd_req {
  struct envd *e;
  struct MHD_Connection *c;
  const char *method, *url;
  const char *body;
  size_t len;
  bool too_big;
};

/* ---- execd.c ----------------------------------------------------------------------------- */

/* Start the execd listener on host:port (libmicrohttpd, a thread per connection) serving the
 * daemon `e`. Returns the daemon or NULL (the reason on stderr). Stop with MHD_stop_daemon. */
struct MHD_Daemon *envd_execd_start(struct envd *e, const char *host, long port);

/* Queue {"code":code,"message":msg} with `status` (model/error.go ErrorResponse). An empty msg
 * is left out, as Go's omitempty does. */
enum MHD_Result execd_send_err(struct MHD_Connection *c, unsigned status, const char *code,
                               const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Queue a JSON value with status 200 (`j` stolen). */
enum MHD_Result execd_send_ok_json(struct MHD_Connection *c, json_t *j);

/* Queue an empty 200 (RespondSuccess(nil)). */
enum MHD_Result execd_send_ok(struct MHD_Connection *c);

/* Every value of query argument `key` in request order, as a new JSON array of strings. */
json_t *execd_query_all(struct MHD_Connection *c, const char *key);

/* execd's ExpandPathWithEnv: $VAR/${VAR} from `env` (object, may be NULL) over envd's environment,
 * then a leading "~" → $HOME. With `absolute`, the result is made absolute on envd's cwd and
 * cleaned (ExpandAbsPath). "" stays "". Returns malloc'd or NULL with *msg (malloc'd) saying
 * why ("path references undefined environment variables: A,B"). */
char *execd_expand_path(const char *path, json_t *env, bool absolute, char **msg);

/* Go's error text for an errno (strerror with a lowercase first letter, as syscall.Errno). */
const char *execd_errstr(int er, char buf[128]);

/* RFC 3339 with nanoseconds and trailing zeros trimmed, UTC "Z" (Go time.Time MarshalJSON). */
void execd_rfc3339(const struct timespec *ts, char out[64]);

/* FileInfo of model/filesystem.go for an lstat result: {path, type, size, modified_at,
 * created_at (ctime, syscall_linux.go), owner, group, mode (octal digits as a decimal int)}. */
json_t *execd_file_info(const char *path, const struct stat *st);

/* The wall clock now, ms since the epoch (event timestamps: time.Now().UnixMilli()). */
int64_t execd_wall_ms(void);

/* ---- execd_command.c --------------------------------------------------------------------- */

/* The command table (ids, status, background logs). init: 0 or -1; shutdown frees it (live
 * commands are killed by envd_procs_shutdown). */
int execd_cmds_init(struct envd *e);
void execd_cmds_shutdown(struct envd *e);

/* POST /command: SSE stream (init, stdout, stderr, execution_complete | error, ping). */
enum MHD_Result execd_run_command(struct execd_req *r);
/* DELETE /command?id=: SIGTERM the group, SIGKILL after 3 s; 200. */
enum MHD_Result execd_interrupt_command(struct execd_req *r);
/* GET /command/status/{id}: CommandStatusResponse. */
enum MHD_Result execd_command_status(struct execd_req *r, const char *id);
/* GET /command/{id}/logs?cursor=: background output from byte `cursor`, text/plain, header
 * EXECD-COMMANDS-TAIL-CURSOR = the byte offset after it. */
enum MHD_Result execd_command_logs(struct execd_req *r, const char *id);

/* ---- execd_code.c ------------------------------------------------------------------------ */

/* The code interpreter's port in the sandbox (the code-interpreter-v1 template's server,
 * platform/template/templates.h ABX_CODE_INTERPRETER_PORT), where /code... is forwarded. */
#define EXECD_CODE_PORT 49999

/* /code, /code/context, /code/contexts[/{id}] (execd-api.yaml CodeInterpreting): forwarded to
 * the code interpreter and its answer streamed back; POST /code of a command language runs as
 * POST /command; no code interpreter listening: 500 RUNTIME_ERROR. */
enum MHD_Result execd_code(struct execd_req *r);

/* ---- execd_files.c ----------------------------------------------------------------------- */

enum MHD_Result execd_files_info(struct execd_req *r);     /* GET /files/info */
enum MHD_Result execd_files_remove(struct execd_req *r);   /* DELETE /files */
enum MHD_Result execd_files_mv(struct execd_req *r);       /* POST /files/mv */
enum MHD_Result execd_files_chmod(struct execd_req *r);    /* POST /files/permissions */
enum MHD_Result execd_files_download(struct execd_req *r); /* GET /files/download */
enum MHD_Result execd_dirs_list(struct execd_req *r);      /* GET /directories/list */
enum MHD_Result execd_dirs_make(struct execd_req *r);      /* POST /directories */
enum MHD_Result execd_dirs_remove(struct execd_req *r);    /* DELETE /directories */

/* ChmodFile of controller/utils.go: mode (decimal digits read as octal, 0 = unchanged), then
 * owner and group by name ("" = unchanged). 0, or -1 with *msg (malloc'd). */
int execd_chmod(const char *abs, long long mode, const char *owner, const char *group, char **msg);

/* Parse a Permission object {owner?, group?, mode?}: 0, or -1 with *msg naming the bad field. */
int execd_perm_parse(json_t *p, long long *mode, const char **owner, const char **group,
                     char **msg);

/* ---- execd_search.c ---------------------------------------------------------------------- */

enum MHD_Result execd_files_search(struct execd_req *r);  /* GET /files/search */
enum MHD_Result execd_files_replace(struct execd_req *r); /* POST /files/replace */

/* ---- execd_metrics.c --------------------------------------------------------------------- */

enum MHD_Result execd_metrics_get(struct execd_req *r);   /* GET /metrics */
enum MHD_Result execd_metrics_watch(struct execd_req *r); /* GET /metrics/watch (stream) */

/* ---- execd_session.c --------------------------------------------------------------------- */

enum MHD_Result execd_session_create(struct execd_req *r); /* POST /session */
/* POST /session/{id}/run: SSE stream (init, stdout, ping, execution_complete | error). */
enum MHD_Result execd_session_run(struct execd_req *r, const char *id);
enum MHD_Result execd_session_delete(struct execd_req *r,
                                     const char *id); /* DELETE /session/{id} */

/* ---- execd_upload.c ---------------------------------------------------------------------- */

/* POST /files/upload: multipart parts `metadata` (FileMetadata JSON) then `file`, pairs in order,
 * each file written while it arrives. begin returns NULL with a reply queued (*queued). */
struct execd_upload;
struct execd_upload *execd_upload_begin(struct envd *e, struct MHD_Connection *c, bool *queued);
void execd_upload_data(struct execd_upload *u, const char *data, size_t len);
enum MHD_Result execd_upload_end(struct execd_upload *u); /* replies; frees u */
void execd_upload_free(struct execd_upload *u);

#endif
