/*
 * execd.c: the execd listener of envd (`--execd-port N`): request bodies, access token, routing,
 * execd's error shape, /ping, and the path, time and FileInfo helpers the routes share. "execd"
 * is OpenSandbox's execd (components/execd of OpenSandbox), the data plane of the opensandbox
 * flavour (platform/opensandbox/opensandbox.h), and keeps its real name here: execd_* in envd is
 * OpenSandbox's execd API, as opensandbox_* in platform/opensandbox/ is its lifecycle API.
 *
 * Routes:  GET /ping → 200 (empty); /command..., /files..., /directories... (execd_command.c,
 *          execd_files.c, execd_search.c, execd_upload.c); /session... (execd_session.c);
 *          /metrics, /metrics/watch (execd_metrics.c). /code... (execd_code.c: the code interpreter's Jupyter). execd routes this envd does not serve
 *          (/pty... (not in the spec),
 *          /proxy/<port>/...) → 404
 *          {"code":"NOT_SUPPORTED","message":"..."} naming the route; any other path → gin's
 *          own 404 "404 page not found" (text/plain), as execd answers.
 * Auth:    when envd holds an access token (POST /init accessToken on the envd port) every
 *          execd request, /ping included, needs X-EXECD-ACCESS-TOKEN equal to it, else 401
 *          {"error":"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"}
 *          (router.go accessTokenMiddleware, which runs before routing). No token: open.
 * Limits:  JSON bodies over EXECD_MAX_BODY are not buffered (400); uploads stream to disk.
 * Source:  components/execd/pkg/web/router.go, controller/basic.go, model/error.go @3bb6fad;
 *          opensandbox-group/OpenSandbox specs/execd-api.yaml.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/execd_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct execd_conn {
  char *body;
  size_t len, cap;
  bool too_big, queued;
  struct execd_upload *up;
};

enum MHD_Result execd_send_err(struct MHD_Connection *c, unsigned status, const char *code,
                               const char *fmt, ...)
{
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  va_end(ap);
  json_t *j = json_object();
  json_object_set_new(j, "code", json_string(code));
  json_t *m = msg && *msg ? json_string(msg) : NULL;
  if (!m && msg && *msg) { /* not UTF-8 (a path): answer with the bytes outside ASCII as '?' */
    for (char *p = msg; *p; p++)
      if ((unsigned char)*p > 0x7e)
        *p = '?';
    m = json_string(msg);
  }
  if (m)
    json_object_set_new(j, "message", m);
  free(msg);
  char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(j);
  enum MHD_Result ok =
      envd_send(c, status, "application/json; charset=utf-8", s ? s : "{}", s ? strlen(s) : 2);
  free(s);
  return ok;
}

enum MHD_Result execd_send_ok_json(struct MHD_Connection *c, json_t *j)
{
  char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;
  json_decref(j);
  if (!s)
    return execd_send_err(c, 500, "RUNTIME_ERROR", "cannot encode the answer");
  enum MHD_Result ok = envd_send(c, 200, "application/json; charset=utf-8", s, strlen(s));
  free(s);
  return ok;
}

enum MHD_Result execd_send_ok(struct MHD_Connection *c)
{
  return envd_send(c, 200, NULL, "", 0);
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
  json_t **ctx = cls; /* ctx[0] = array, ctx[1] = the key as a JSON string */
  if (key && value && strcmp(key, json_string_value(ctx[1])) == 0)
    json_array_append_new(ctx[0], json_string(value));
  return MHD_YES;
}

json_t *execd_query_all(struct MHD_Connection *c, const char *key)
{
  json_t *ctx[2] = {json_array(), json_string(key)};
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, ctx);
  json_decref(ctx[1]);
  return ctx[0];
}

const char *execd_errstr(int er, char buf[128])
{
  snprintf(buf, 128, "%s", strerror(er));
  buf[0] = (char)tolower((unsigned char)buf[0]);
  return buf;
}

void execd_rfc3339(const struct timespec *ts, char out[64])
{
  struct tm tm;
  gmtime_r(&ts->tv_sec, &tm);
  size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
  if (ts->tv_nsec) {
    char frac[16];
    snprintf(frac, sizeof frac, "%09ld", ts->tv_nsec);
    for (int i = 8; i > 0 && frac[i] == '0'; i--)
      frac[i] = 0;
    n += (size_t)snprintf(out + n, 64 - n, ".%s", frac);
  }
  snprintf(out + n, 64 - n, "Z");
}

int64_t execd_wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

json_t *execd_file_info(const char *path, const struct stat *st)
{
  const char *type = S_ISLNK(st->st_mode)   ? "symlink"
                     : S_ISDIR(st->st_mode) ? "directory"
                     : S_ISREG(st->st_mode) ? "file"
                                            : "other";
  char buf[4096], owner[64], group[64], mt[64], ct[64];
  struct passwd pw, *pr = NULL;
  struct group gr, *grr = NULL;
  if (getpwuid_r(st->st_uid, &pw, buf, sizeof buf, &pr) == 0 && pr)
    snprintf(owner, sizeof owner, "%s", pw.pw_name);
  else
    snprintf(owner, sizeof owner, "%u", (unsigned)st->st_uid);
  if (getgrgid_r(st->st_gid, &gr, buf, sizeof buf, &grr) == 0 && grr)
    snprintf(group, sizeof group, "%s", gr.gr_name);
  else
    snprintf(group, sizeof group, "%u", (unsigned)st->st_gid);
  execd_rfc3339(&st->st_mtim, mt);
  execd_rfc3339(&st->st_ctim, ct);
  /* FileMode.Perm() in octal digits, read back as a decimal number (utils.go buildFileInfo) */
  char oct[8];
  snprintf(oct, sizeof oct, "%o", (unsigned)(st->st_mode & 0777));
  return json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:I}", "path", path, "type", type, "size",
                   (json_int_t)st->st_size, "modified_at", mt, "created_at", ct, "owner", owner,
                   "group", group, "mode", (json_int_t)strtol(oct, NULL, 10));
}

/* An environment value: the request's envs first, then envd's own environment. */
static const char *env_value(json_t *env, const char *name, bool *found)
{
  json_t *v = env ? json_object_get(env, name) : NULL;
  if (json_is_string(v)) {
    *found = true;
    return json_string_value(v);
  }
  const char *s = getenv(name);
  *found = s != NULL;
  return s ? s : "";
}

char *execd_expand_path(const char *path, json_t *env, bool absolute, char **msg)
{
  *msg = NULL;
  char *out = NULL, *missing = NULL;
  size_t olen = 0;
  FILE *f = open_memstream(&out, &olen);
  if (!f)
    return NULL;
  for (const char *p = path; *p;) {
    if (*p != '$') {
      fputc(*p++, f);
      continue;
    }
    const char *s = p + 1, *e;
    bool brace = *s == '{';
    if (brace)
      s++;
    for (e = s; isalnum((unsigned char)*e) || *e == '_'; e++)
      ;
    if (e == s || isdigit((unsigned char)*s) || (brace && *e != '}')) {
      fputc(*p++, f); /* not a reference execd's pattern matches: kept */
      continue;
    }
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(e - s), s);
    bool found = false;
    fputs(env_value(env, name, &found), f);
    if (!found) {
      char *m = NULL;
      if (asprintf(&m, "%s%s%s", missing ? missing : "", missing ? "," : "", name) >= 0) {
        free(missing);
        missing = m;
      }
    }
    p = brace ? e + 1 : e;
  }
  fclose(f);
  if (missing) {
    if (asprintf(msg, "path references undefined environment variables: %s", missing) < 0)
      *msg = NULL;
    free(missing);
    free(out);
    return NULL;
  }
  if (out[0] == '~' && (out[1] == 0 || out[1] == '/')) {
    bool found;
    const char *home = env_value(NULL, "HOME", &found);
    char *h = NULL;
    if (!found || !*home) {
      if (asprintf(msg, "$HOME is not defined") < 0)
        *msg = NULL;
      free(out);
      return NULL;
    }
    if (asprintf(&h, "%s%s", home, out + 1) < 0)
      h = NULL;
    free(out);
    out = h;
  }
  if (absolute && out && *out != '/') {
    char cwd[4096], *j = NULL;
    if (!getcwd(cwd, sizeof cwd))
      snprintf(cwd, sizeof cwd, "/");
    if (asprintf(&j, "%s/%s", cwd, out) < 0)
      j = NULL;
    free(out);
    out = j;
  }
  if (absolute && out) {
    char *c = envd_path_clean(out);
    free(out);
    out = c;
  }
  return out;
}

static bool token_ok(struct envd *e, struct MHD_Connection *c)
{
  pthread_mutex_lock(&e->mu);
  bool ok = true;
  if (e->token) {
    const char *h = envd_header(c, EXECD_TOKEN_HEADER);
    ok = h && *h && envd_str_eq_ct(h, e->token);
  }
  pthread_mutex_unlock(&e->mu);
  return ok;
}

static enum MHD_Result send_401(struct MHD_Connection *c)
{
  static const char body[] = "{\"error\":\"Unauthorized: invalid or missing header "
                             "X-EXECD-ACCESS-TOKEN\"}";
  return envd_send(c, 401, "application/json; charset=utf-8", body, sizeof body - 1);
}

/* execd routes this envd does not serve (router.go), as "METHOD path" with a trailing '*' for a
 * prefix. */
static const char *const missing_routes[] = {"POST /pty", "GET /pty/*", "DELETE /pty/*",
                                             "* /proxy/*", NULL};

static bool is_missing(const char *method, const char *url)
{
  for (const char *const *m = missing_routes; *m; m++) {
    const char *sp = strchr(*m, ' ');
    size_t ml = (size_t)(sp - *m), pl = strlen(sp + 1);
    if (!((ml == 1 && **m == '*') || (strlen(method) == ml && strncmp(method, *m, ml) == 0)))
      continue;
    const char *pat = sp + 1;
    if (pat[pl - 1] == '*' ? strncmp(url, pat, pl - 1) == 0 && url[pl - 1] : strcmp(url, pat) == 0)
      return true;
  }
  return false;
}

/* The session id of "/session/{id}" + suffix (suffix "" or "/run") into id; false when url is not
 * that form (an empty id or one with '/' is gin's 404). */
static bool session_path(const char *url, const char *suffix, char id[128])
{
  static const char pre[] = "/session/";
  size_t ul = strlen(url), sl = strlen(suffix), pl = sizeof pre - 1;
  if (strncmp(url, pre, pl) != 0 || ul <= pl + sl || strcmp(url + ul - sl, suffix) != 0)
    return false;
  size_t il = ul - sl - pl;
  if (il >= 128 || memchr(url + pl, '/', il))
    return false;
  memcpy(id, url + pl, il);
  id[il] = 0;
  return true;
}

/* The routes of execd_search.c, execd_metrics.c and execd_session.c; NULL r->handled when none
 * matches. */
static enum MHD_Result route_more(struct execd_req *r, bool *handled)
{
  const char *m = r->method, *u = r->url;
  bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0, del = strcmp(m, "DELETE") == 0;
  char id[128];
  *handled = true;
  if (get && strcmp(u, "/files/search") == 0)
    return execd_files_search(r);
  if (post && strcmp(u, "/files/replace") == 0)
    return execd_files_replace(r);
  if (get && strcmp(u, "/metrics") == 0)
    return execd_metrics_get(r);
  if (get && strcmp(u, "/metrics/watch") == 0)
    return execd_metrics_watch(r);
  if (post && strcmp(u, "/session") == 0)
    return execd_session_create(r);
  if (post && session_path(u, "/run", id))
    return execd_session_run(r, id);
  if (del && session_path(u, "", id))
    return execd_session_delete(r, id);
  *handled = false;
  return MHD_NO;
}

static enum MHD_Result route(struct execd_req *r)
{
  const char *m = r->method, *u = r->url;
  bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0, del = strcmp(m, "DELETE") == 0;
  if (get && strcmp(u, "/ping") == 0)
    return execd_send_ok(r->c);
  if (r->too_big && (post || del))
    return execd_send_err(r->c, 400, "INVALID_REQUEST_BODY",
                          "error parsing request, MAYBE invalid body format. the body is over "
                          "%u bytes",
                          EXECD_MAX_BODY);
  if (strcmp(u, "/command") == 0 && (post || del))
    return post ? execd_run_command(r) : execd_interrupt_command(r);
  static const char st[] = "/command/status/";
  if (get && strncmp(u, st, sizeof st - 1) == 0 && u[sizeof st - 1] &&
      !strchr(u + sizeof st - 1, '/'))
    return execd_command_status(r, u + sizeof st - 1);
  static const char cp[] = "/command/";
  size_t ul = strlen(u);
  if (get && strncmp(u, cp, sizeof cp - 1) == 0 && ul > sizeof cp - 1 + 5 &&
      strcmp(u + ul - 5, "/logs") == 0) {
    char id[256];
    size_t il = ul - 5 - (sizeof cp - 1);
    if (il > 0 && il < sizeof id && !memchr(u + sizeof cp - 1, '/', il)) {
      memcpy(id, u + sizeof cp - 1, il);
      id[il] = 0;
      return execd_command_logs(r, id);
    }
  }
  if (strcmp(u, "/files") == 0 && del)
    return execd_files_remove(r);
  if (strcmp(u, "/files/info") == 0 && get)
    return execd_files_info(r);
  if (strcmp(u, "/files/mv") == 0 && post)
    return execd_files_mv(r);
  if (strcmp(u, "/files/permissions") == 0 && post)
    return execd_files_chmod(r);
  if (strcmp(u, "/files/download") == 0 && get)
    return execd_files_download(r);
  if (strcmp(u, "/directories/list") == 0 && get)
    return execd_dirs_list(r);
  if (strcmp(u, "/directories") == 0 && (post || del))
    return post ? execd_dirs_make(r) : execd_dirs_remove(r);
  bool handled;
  enum MHD_Result res = route_more(r, &handled);
  if (handled)
    return res;
  if (strcmp(u, "/code") == 0 || strncmp(u, "/code/", 6) == 0)
    return execd_code(r);
  if (is_missing(m, u))
    return execd_send_err(
        r->c, 404, "NOT_SUPPORTED",
        "%s %s is an execd route this sandbox's envd does not serve "
        "(served: /ping, /command, /files, /directories, /session, /metrics, /code; "
        "docs/PLATFORM.md \"execd\")",
        m, u);
  static const char nf[] = "404 page not found";
  return envd_send(r->c, 404, "text/plain", nf, sizeof nf - 1);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
  struct envd *e = cls;
  struct execd_conn *x = *con_cls;
  if (!x) {
    x = calloc(1, sizeof *x);
    if (!x)
      return MHD_NO;
    *con_cls = x;
    if (!token_ok(e, c)) {
      x->queued = true;
      return send_401(c);
    }
    if (strcmp(url, "/files/upload") == 0 && strcmp(method, "POST") == 0) {
      x->up = execd_upload_begin(e, c, &x->queued);
      if (x->queued)
        return MHD_YES;
    }
    return MHD_YES;
  }
  if (*upload_data_size) {
    size_t n = *upload_data_size;
    *upload_data_size = 0;
    if (x->queued)
      return MHD_YES;
    if (x->up) {
      execd_upload_data(x->up, upload_data, n);
      return MHD_YES;
    }
    if (envd_body_add(&x->body, &x->len, &x->cap, &x->too_big, EXECD_MAX_BODY, upload_data, n) != 0)
      return MHD_NO; /* out of memory */
    return MHD_YES;
  }
  if (x->queued)
    return MHD_YES;
  if (x->up) {
    struct execd_upload *up = x->up;
    x->up = NULL;
    return execd_upload_end(up);
  }
  struct execd_req r = {.e = e,
                        .c = c,
                        .method = method,
                        .url = url,
                        .body = x->body,
                        .len = x->len,
                        .too_big = x->too_big};
  return route(&r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  struct execd_conn *x = *con_cls;
  if (!x)
    return;
  execd_upload_free(x->up);
  free(x->body);
  free(x);
  *con_cls = NULL;
}

struct MHD_Daemon *envd_execd_start(struct envd *e, const char *host, long port)
{
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
    return NULL;
  if (execd_cmds_init(e) < 0) {
    fprintf(stderr, "envd: cannot start the execd command table\n");
    return NULL;
  }
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
          MHD_USE_ERROR_LOG,
      (uint16_t)port, NULL, NULL, on_request, e, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)640,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)ENVD_CONNECTION_MEMORY, MHD_OPTION_END);
  if (!d)
    fprintf(stderr, "envd: cannot listen for execd on %s:%ld\n", host, port);
  else
    fprintf(stderr, "envd: execd listening on %s:%ld\n", host, port);
  return d;
}
