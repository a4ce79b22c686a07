/*
 * envd.c: `abxlua envd [--port 49983] [--host 0.0.0.0]`: the in-sandbox daemon's HTTP server
 * (libmicrohttpd, a thread per connection), routing, access-token auth, /health, /init, /envs.
 *
 * execd:   with --execd-port N, a second listener on host:N serves OpenSandbox's execd API
 *          (execd.c; its own token header and error shapes).
 * Routes:  GET /health → 204; POST /init → 204 + X-Envd-Version; GET /envs → env vars;
 *          GET /metrics (metrics.c); GET|POST /files (files.c, files_upload.c);
 *          POST /process.Process/<Method> (process_rpc.c; StreamInput fed incrementally);
 *          POST /filesystem.Filesystem/<Method> (filesystem.c).
 * Auth:    once /init set an access token, every route but GET /health, POST /init and /files
 *          needs X-Access-Token, else 401 {"code":401,"message":...} (RPCs too). A later /init
 *          must carry the current token.
 * Limits:  request messages over ENVD_MAX_MSG are not buffered (resource_exhausted).
 * Signals: SIGTERM/SIGINT stop the daemon; live processes are killed; SIGCHLD goes to the reaper.
 * sudo:    as root, envd first forks its sudo broker (sudo_broker.c, contract in sudo.h).
 * Mutants: ABX_ENVD_MUTANTS="name,..." turns on envd's lies (mutants.h); an unknown name is a
 *          usage error (exit 4) naming the valid ones; the ones on are logged at start.
 * Source:  docs/protocol/envd-protocol.md §1, §6.1, §7, §9.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "platform_main.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "envd/envd_int.h"
#include "envd/execd_int.h"
#include "envd/mutants.h"
#include "envd/process.h"
#include "envd/sudo.h"

#define UNAUTHORIZED_MSG                                                                           \
  "unauthorized access, please provide a valid access token or method signing if supported"

/* Per-request state, kept in MHD's con_cls between calls of the access handler. */
struct envd_req {
  char *body;
  size_t len, cap;
  bool too_big;
  bool queued; /* a reply was queued on the first call */
  struct envd_upload *up;
  struct envd_sinput *si; /* StreamInput, applied as the body arrives */
};

static bool token_ok(struct envd *e, struct MHD_Connection *c)
{
  pthread_mutex_lock(&e->mu);
  bool ok = true;
  if (e->token) {
    const char *h = envd_header(c, "X-Access-Token");
    ok = h && envd_str_eq_ct(h, e->token);
  }
  pthread_mutex_unlock(&e->mu);
  return ok;
}

static void set_str(char **dst, json_t *v)
{
  if (!json_is_string(v))
    return;
  free(*dst);
  *dst = *json_string_value(v) ? strdup(json_string_value(v)) : NULL;
}

/* POST /init {envVars?, accessToken?, defaultUser?, defaultWorkdir?} → 204 (§7). */
static enum MHD_Result handle_init(struct envd *e, struct MHD_Connection *c, struct envd_req *r)
{
  json_t *j = NULL;
  if (r->too_big)
    return envd_send_rest_err(c, 413, "request body too large");
  if (r->len > 0) {
    json_error_t je;
    j = json_loadb(r->body, r->len, 0, &je);
    if (!json_is_object(j)) {
      json_decref(j);
      return envd_send_rest_err(c, 400, "invalid JSON body");
    }
  }
  pthread_mutex_lock(&e->mu);
  bool refused = false;
  if (e->inited && e->token) {
    const char *h = envd_header(c, "X-Access-Token");
    refused = !h || !envd_str_eq_ct(h, e->token);
  }
  if (!refused && j) {
    json_t *vars = envd_jget(j, "envVars", "env_vars");
    if (json_is_object(vars)) {
      json_t *copy = json_object();
      const char *k;
      json_t *v;
      json_object_foreach(vars, k, v) if (json_is_string(v)) json_object_set(copy, k, v);
      json_decref(e->env_vars);
      e->env_vars = copy;
    }
    set_str(&e->token, envd_jget(j, "accessToken", "access_token"));
    set_str(&e->default_user, envd_jget(j, "defaultUser", "default_user"));
    set_str(&e->default_workdir, envd_jget(j, "defaultWorkdir", "default_workdir"));
  }
  if (!refused)
    e->inited = true;
  pthread_mutex_unlock(&e->mu);
  json_decref(j);
  if (refused)
    return envd_send_rest_err(c, 401, UNAUTHORIZED_MSG);
  struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, "X-Envd-Version", ABX_E2B_ENVD_VERSION);
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  enum MHD_Result ok = MHD_queue_response(c, 204, resp);
  MHD_destroy_response(resp);
  return ok;
}

static enum MHD_Result route(struct envd *e, struct MHD_Connection *c, const char *url,
                             const char *method, struct envd_req *r)
{
  bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  bool post = strcmp(method, "POST") == 0;
  if (strcmp(url, "/health") == 0 && get) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp)
      return MHD_NO;
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    enum MHD_Result ok = MHD_queue_response(c, 204, resp);
    MHD_destroy_response(resp);
    return ok;
  }
  if (strcmp(url, "/init") == 0 && post)
    return handle_init(e, c, r);
  if (strcmp(url, "/files") == 0 && get)
    return envd_files_get(e, c);
  if (!token_ok(e, c))
    return envd_send_rest_err(c, 401, UNAUTHORIZED_MSG);
  if (strcmp(url, "/metrics") == 0 && get)
    return envd_metrics(e, c);
  if (strcmp(url, "/envs") == 0 && get) {
    pthread_mutex_lock(&e->mu);
    json_t *vars = e->env_vars ? json_deep_copy(e->env_vars) : json_object();
    pthread_mutex_unlock(&e->mu);
    enum MHD_Result ok = envd_send_json(c, 200, vars);
    json_decref(vars);
    return ok;
  }
  static const char pp[] = "/process.Process/", fp[] = "/filesystem.Filesystem/";
  const struct envd_method *table = NULL;
  const char *rpc = NULL;
  if (strncmp(url, pp, sizeof pp - 1) == 0) {
    table = envd_process_methods;
    rpc = url + sizeof pp - 1;
  } else if (strncmp(url, fp, sizeof fp - 1) == 0) {
    table = envd_filesystem_methods;
    rpc = url + sizeof fp - 1;
  }
  if (table && !post) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp)
      return MHD_NO;
    MHD_add_response_header(resp, "Allow", "POST");
    enum MHD_Result ok = MHD_queue_response(c, 405, resp);
    MHD_destroy_response(resp);
    return ok;
  }
  if (table)
    return envd_rpc_dispatch(e, c, table, rpc, r->body, r->len, r->too_big);
  return envd_send_rest_err(c, 404, "not found");
}

enum MHD_Result envd_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
  struct envd *e = cls;
  struct envd_req *r = *con_cls;
  if (!r) {
    r = calloc(1, sizeof *r);
    if (!r)
      return MHD_NO;
    *con_cls = r;
    if (strcmp(url, "/files") == 0 && strcmp(method, "POST") == 0) {
      r->up = envd_files_post_begin(e, c, &r->queued);
      if (r->queued)
        return MHD_YES;
    }
    if (strcmp(url, "/process.Process/StreamInput") == 0 && strcmp(method, "POST") == 0) {
      if (!token_ok(e, c)) {
        r->queued = true;
        return envd_send_rest_err(c, 401, UNAUTHORIZED_MSG);
      }
      r->si = envd_stream_input_begin(e, c, &r->queued);
    }
    return MHD_YES;
  }
  if (*upload_data_size) {
    size_t n = *upload_data_size;
    *upload_data_size = 0;
    if (r->queued)
      return MHD_YES;
    if (r->up) {
      envd_files_post_data(r->up, upload_data, n);
      return MHD_YES;
    }
    if (r->si) {
      envd_stream_input_data(r->si, upload_data, n);
      return MHD_YES;
    }
    if (envd_body_add(&r->body, &r->len, &r->cap, &r->too_big, ENVD_MAX_MSG + 5, upload_data, n) !=
        0)
      return MHD_NO; /* out of memory */
    return MHD_YES;
  }
  if (r->queued)
    return MHD_YES;
  if (r->up) {
    struct envd_upload *up = r->up;
    r->up = NULL;
    return envd_files_post_end(up);
  }
  if (r->si) {
    struct envd_sinput *si = r->si;
    r->si = NULL;
    return envd_stream_input_end(si);
  }
  return route(e, c, url, method, r);
}

void envd_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
  struct envd_req *r = *con_cls;
  if (!r)
    return;
  envd_files_post_free(r->up);
  envd_stream_input_free(r->si);
  free(r->body);
  free(r);
  *con_cls = NULL;
}

/* Streams are many small writes: disable Nagle so events are not held back by delayed ACKs. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
  if (toe != MHD_CONNECTION_NOTIFY_STARTED)
    return;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  int one = 1;
  if (ci)
    setsockopt(ci->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void usage(FILE *f)
{
  fprintf(f, "usage: abxlua envd [--port PORT] [--host ADDR] [--execd-port PORT] [--version]"
             " [--help]\n"
             "  The in-sandbox daemon: process and filesystem Connect services, /files, /init.\n"
             "  --port PORT        TCP port to listen on (default " ABX_E2B_ENVD_PORT_STR ")\n"
             "  --host ADDR        IPv4 address to bind (default 0.0.0.0), both listeners\n"
             "  --execd-port PORT  also serve OpenSandbox's execd API on PORT (44772 in the\n"
             "                     opensandbox flavour); X-EXECD-ACCESS-TOKEN must equal the\n"
             "                     access token /init set, when one is set (docs/PLATFORM.md)\n"
             "  --version     print the envd version (" ABX_E2B_ENVD_VERSION ") and exit\n");
  fputs("  Environment: ABX_ENVD_MUTANTS=NAME[,NAME...] makes envd lie in the named ways, to\n"
        "  test a suite (serve sets it for its envd mutants; an unknown name is refused)\n",
        f);
}

/* envd's command line. */
struct envd_args {
  long port, execd_port; /* execd_port 0: no execd listener */
  const char *host;
  struct sockaddr_in sa; /* host:port */
};

/* A port number 1..65535 of text s into *port: true, or false when s is not one. */
static bool parse_port(const char *s, long *port)
{
  char *end = NULL;
  *port = strtol(s, &end, 10);
  return *s && !*end && *port > 0 && *port <= 65535;
}

/* Read envd's options into a. -1 to go on, else the exit code (0 after --version or --help, 4
 * after a usage error said on stderr). */
static int parse_args(int argc, char **argv, struct envd_args *a)
{
  static const struct option opts[] = {{"port", required_argument, NULL, 'p'},
                                       {"host", required_argument, NULL, 'H'},
                                       {"execd-port", required_argument, NULL, 'x'},
                                       {"version", no_argument, NULL, 'v'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  int o;
  a->port = ABX_E2B_ENVD_PORT;
  a->execd_port = 0;
  a->host = "0.0.0.0";
  optind = 1;
  while ((o = getopt_long_only(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
    case 'p':
      if (!parse_port(optarg, &a->port)) {
        fprintf(stderr, "envd: invalid port '%s'\n", optarg);
        return 4;
      }
      break;
    case 'x':
      if (!parse_port(optarg, &a->execd_port)) {
        fprintf(stderr, "envd: invalid --execd-port '%s' (1..65535)\n", optarg);
        return 4;
      }
      break;
    case 'H': a->host = optarg; break;
    case 'v': printf("%s\n", ABX_E2B_ENVD_VERSION); return 0;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 4;
    }
  }
  a->sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)a->port)};
  if (inet_pton(AF_INET, a->host, &a->sa.sin_addr) != 1) {
    fprintf(stderr, "envd: invalid host '%s' (IPv4 address expected)\n", a->host);
    return 4;
  }
  return -1;
}

/* Start envd's listener on a's host:port into *d and, with --execd-port, execd's into *xd.
 * 0, or the exit code (1: cannot listen; 4: the two ports are one) with nothing left running. */
static int start_listeners(struct envd *e, struct envd_args *a, struct MHD_Daemon **d,
                           struct MHD_Daemon **xd)
{
  *d = MHD_start_daemon(MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
                            MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
                        (uint16_t)a->port, NULL, NULL, envd_on_request, e, MHD_OPTION_SOCK_ADDR,
                        (struct sockaddr *)&a->sa, MHD_OPTION_NOTIFY_COMPLETED, envd_on_completed,
                        NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
                        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)640,
                        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)ENVD_CONNECTION_MEMORY,
                        MHD_OPTION_END);
  int rc = 0;
  *xd = NULL;
  if (*d && a->execd_port) {
    if (a->execd_port == a->port) {
      fprintf(stderr, "envd: --execd-port must differ from --port (%ld)\n", a->port);
      rc = 4;
    } else if (!(*xd = envd_execd_start(e, a->host, a->execd_port))) {
      rc = 1;
    }
  }
  if (!*d) {
    fprintf(stderr, "envd: cannot listen on %s:%ld\n", a->host, a->port);
    rc = 1;
  } else if (rc) {
    MHD_stop_daemon(*d);
  }
  return rc;
}

/* Serve until SIGTERM or SIGINT, then stop the listeners (execd's first). */
static void serve_until_signal(struct envd *e, struct MHD_Daemon *d, struct MHD_Daemon *xd)
{
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  int sig = 0;
  sigwait(&stop, &sig);
  fprintf(stderr, "envd: signal %d, stopping\n", sig);
  e->stopping = 1;
  if (xd)
    MHD_stop_daemon(xd);
  MHD_stop_daemon(d);
}

/* Stop the tables and the sudo broker, and free envd's state. */
static void envd_teardown(struct envd *e, pid_t broker)
{
  execd_cmds_shutdown(e); /* before the process table: its watchers hold processes */
  envd_watchers_shutdown(e);
  envd_procs_shutdown(e);
  envd_sudo_broker_stop(broker);
  free(e->token);
  free(e->default_user);
  free(e->default_workdir);
  json_decref(e->env_vars);
  pthread_mutex_destroy(&e->mu);
}

int abx_envd_main(int argc, char **argv)
{
  struct envd_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0)
    return rc;
  unsigned mutants = 0;
  char mmsg[512];
  if (envd_mutants_parse(getenv("ABX_ENVD_MUTANTS"), &mutants, mmsg, sizeof mmsg) < 0) {
    fprintf(stderr, "envd: %s\n", mmsg);
    return 4;
  }
  /* Signals are handled synchronously: every thread inherits this mask. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
  umask(022);

  /* Before any thread: the broker is a single-threaded child (sudo.h). */
  pid_t broker = envd_sudo_broker_start();
  struct envd e = {.mutants = mutants};
  pthread_mutex_init(&e.mu, NULL);
  if (envd_procs_init(&e) < 0 || envd_watchers_init(&e) < 0) {
    fprintf(stderr, "envd: cannot start the process or watcher table\n");
    envd_procs_shutdown(&e);
    envd_sudo_broker_stop(broker);
    return 1;
  }
  struct MHD_Daemon *d, *xd;
  rc = start_listeners(&e, &a, &d, &xd);
  if (rc == 0) {
    fprintf(stderr, "envd %s listening on %s:%ld\n", ABX_E2B_ENVD_VERSION, a.host, a.port);
    if (mutants) {
      envd_mutants_names(mutants, mmsg, sizeof mmsg);
      fprintf(stderr, "envd: mutants on (it lies on purpose): %s\n", mmsg);
    }
    serve_until_signal(&e, d, xd);
  }
  envd_teardown(&e, broker);
  return rc;
}
