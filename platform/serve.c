/*
 * serve.c: `abxlua serve`: the composition root. Its options, a table of start-up rows run
 * forward (each with the stop that undoes it, run in reverse at shutdown or after a failed
 * start), the HTTP daemon's request handling (one port for the control plane and the ingress,
 * told apart by the front of the API family served, ingress/front.h), and the main thread's loop
 * (spawner, TTL, the front's tick). Contract in platform_main.h; routes, state, threads and limits
 * in docs/PLATFORM.md.
 */
#include "platform_main.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "net/net.h"
#include "util/util.h"
#include "sandbox/sandbox.h"
#include "ingress/ingress.h"
#include "template/template.h"
#include "opensandbox/opensandbox.h"
#include "build/build.h"

#define API_MAX_BODY (1024u * 1024)
/* libmicrohttpd's event threads: two, so that TLS or a large copy on one connection leaves the
 * other thread to the rest (the machine this targets has two cores) */
#define SERVE_IO_THREADS 2

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
  (void)sig;
  g_stop = 1;
}

/* ---- one request ---------------------------------------------------------------------------- */

/* Where a request is. Its stages run on three threads: the daemon's (ARRIVED, BODY, and the
 * answer once a job or the ingress's loop resumed the connection), a pool thread's (QUEUED: the
 * answer may block: a create, a pause, a --faults delay, a sandbox's auto-resume), and for a
 * proxied request the ingress loop's (PROXIED: it resumes the connection once the head is in).
 * Only the thread that owns the request writes its stage; a resume hands it back. */
enum req_stage {
  REQ_ARRIVED,  /* the request line and headers are in (on_uri made the request): route it */
  REQ_BODY,     /* routed (dest): the body comes in, buffered or streamed to an upload */
  REQ_QUEUED,   /* the whole request is in: a pool job answers it, the connection suspended */
  REQ_PROXIED,  /* the job set up a proxied transfer (stream): the ingress's loop resumes the
                 * connection once its head is in, and the daemon's thread answers with it */
  REQ_ANSWERED, /* an answer is queued (result): the access handler returns its result */
};

/* Per-request state, created by the URI log callback (which sees the raw request target). */
struct req {
  const struct abx_front *front; /* the API family served (the daemon's cls) */
  enum req_stage stage;
  enum abx_dest dest; /* where the front routed it (ABX_DEST_CONTROL until then) */
  char *raw_uri;
  char *body;
  size_t len, cap;
  int too_large;
  struct abx_upload *upload; /* a PUT of a template build archive (layer_cache.h) */
  struct abx_route route;
  char msg[160]; /* why the route was refused */
  /* the answer made on a pool thread (util/pool.h) while the connection is suspended */
  struct MHD_Connection *conn;
  const char *method, *url;  /* libmicrohttpd's, valid for the request's life */
  enum MHD_Result result;    /* REQ_ANSWERED: what the access handler returns */
  struct abx_stream *stream; /* REQ_PROXIED: the proxied request awaiting its head (ingress.h) */
  const void *fault;         /* its --faults body fault, carried to the daemon's thread */
  /* serve's log (util/log.h): when the request line came, when its answer's status was queued */
  int64_t t0_ns, answer_ns;
  unsigned status; /* 0 until an answer is queued */
};

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
  (void)c;
  struct req *r = calloc(1, sizeof *r);
  if (r) {
    r->front = cls;
    r->raw_uri = strdup(uri ? uri : "/");
    r->t0_ns = abx_mono_ns();
  }
  return r;
}

/* Notes the status of the answer queued on c, once, and when (for serve's log). Called by the
 * thread that owns r: a pool job's after its answer, before the connection resumes (libmicrohttpd
 * then sends that answer without calling the access handler again); the daemon's thread after
 * each access-handler call that left r to no job (answers queued there: a proxied one by
 * abx_ingress_respond, a 413, a 400). */
static void note_status(struct req *r, struct MHD_Connection *c)
{
  if (!r || r->status)
    return;
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
  if (ci && ci->http_status) {
    r->status = ci->http_status;
    r->answer_ns = abx_mono_ns();
  }
}

/* How a request ended early, for serve's log; NULL when it completed. */
static const char *ended(enum MHD_RequestTerminationCode toe)
{
  switch (toe) {
  case MHD_REQUEST_TERMINATED_COMPLETED_OK: return NULL;
  case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED: return "timeout";
  case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN: return "shutdown";
  case MHD_REQUEST_TERMINATED_READ_ERROR: return "read-error";
  case MHD_REQUEST_TERMINATED_CLIENT_ABORT: return "client-left";
  default: return "error";
  }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  (void)cls;
  struct req *r = *con_cls;
  if (r) {
    note_status(r, c);
    int64_t now = abx_mono_ns();
    /* failed, unanswered or slow requests (util/log.h) */
    abx_slog_request(r->method, r->raw_uri, r->status,
                     r->dest == ABX_DEST_SANDBOX ? r->route.id : NULL,
                     ((r->status ? r->answer_ns : now) - r->t0_ns) / 1000000,
                     (now - r->t0_ns) / 1000000, ended(toe));
    if (r->stream)
      abx_ingress_drop(r->stream);
    abx_upload_free(r->upload);
    free(r->raw_uri);
    free(r->body);
    free(r);
  }
  *con_cls = NULL;
}

/* The request's answer, on a pool thread, the connection suspended. Either queues an answer and
 * returns the access handler's result, or leaves a proxied request in r->stream (ingress.h). */
static enum MHD_Result answer(struct req *r)
{
  struct MHD_Connection *c = r->conn;
  if (r->upload)
    return abx_upload_finish(r->upload, c);
  int proxied = r->dest == ABX_DEST_SANDBOX;
  enum MHD_Result fr; /* faults.h: --faults rules, on the control plane and the ingress alike */
  if (abx_faults_before(c, r->method, proxied ? r->raw_uri : r->url, &fr))
    return fr;
  if (proxied) {
    fr = abx_ingress_handle(c, &r->route, r->method, r->raw_uri, &r->body, r->len, &r->stream);
    if (r->stream) { /* answered on the daemon's thread once the head is there */
      r->fault = abx_faults_detach();
      return MHD_YES;
    }
  } else {
    /* the raw path: a path parameter is one percent-encoded segment ("ns%2Fname%3Atag", E2B's
     * SDKs encode template names so), decoded by the front's control plane after the match */
    size_t pl = strcspn(r->raw_uri, "?#");
    char *path = r->raw_uri[0] == '/' ? strndup(r->raw_uri, pl) : NULL;
    fr = r->front->control(c, r->method, path ? path : r->url, r->body, r->len);
    free(path);
  }
  return abx_faults_after(fr);
}

/* REQ_QUEUED on a pool thread: answer, then hand the connection back (resumed, or to the
 * ingress's loop, which resumes it once the proxied head is in). */
static void answer_job(void *cls)
{
  struct req *r = cls;
  struct MHD_Connection *c = r->conn;
  enum MHD_Result res = answer(r);
  if (r->stream) { /* the loop resumes c; r is not ours to touch after the start */
    r->stage = REQ_PROXIED;
    abx_ingress_start(r->stream, c);
    return;
  }
  r->result = res;
  r->stage = REQ_ANSWERED;
  note_status(r, c);
  if (res == MHD_NO) {
    /* close without an answer, as returning MHD_NO from the handler does (e.g. --faults
     * reset: after, whose answer is already queued and must never be sent) */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci)
      shutdown(ci->connect_fd, SHUT_RDWR);
  }
  MHD_resume_connection(c);
}

static size_t body_limit(const struct req *r)
{
  return r->dest == ABX_DEST_SANDBOX ? ABX_INGRESS_MAX_BODY : API_MAX_BODY;
}

/* REQ_ARRIVED: the front routes the request; an upload is streamed to a file from here on, any
 * other body is buffered unless its Content-Length is over the limit already (413). */
static enum MHD_Result request_arrived(struct req *r, struct MHD_Connection *c, const char *url,
                                       const char *method)
{
  r->method = method;
  r->dest = r->front->route(c, method, url, r->raw_uri, &r->route, r->msg, sizeof r->msg);
  r->stage = REQ_BODY;
  if (r->dest == ABX_DEST_UPLOAD) {
    r->upload = abx_upload_begin(c, url);
    return r->upload ? MHD_YES : MHD_NO;
  }
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
  if (cl && strtoull(cl, NULL, 10) > body_limit(r))
    return abx_http_error(c, 413, "request body too large");
  return MHD_YES;
}

/* REQ_BODY: `n` more bytes of the body, into the upload or the buffer (past the limit they are
 * dropped, and the request is answered 413 once it is all in). */
static enum MHD_Result request_body(struct req *r, const char *data, size_t n)
{
  if (r->upload) {
    abx_upload_data(r->upload, data, n);
    return MHD_YES;
  }
  if (r->too_large || r->len + n > body_limit(r)) {
    r->too_large = 1;
    return MHD_YES;
  }
  if (r->len + n + 1 > r->cap) {
    size_t cap = r->cap ? r->cap : 4096;
    while (cap < r->len + n + 1)
      cap *= 2;
    char *nb = realloc(r->body, cap);
    if (!nb) {
      r->too_large = 1;
      return MHD_YES;
    }
    r->body = nb;
    r->cap = cap;
  }
  memcpy(r->body + r->len, data, n);
  r->len += n;
  r->body[r->len] = 0;
  return MHD_YES;
}

/* The whole request is in: a refusal answered here, else the request goes to a pool job
 * (*queued set: the job owns r until it resumes the connection). When serve stops the pool takes
 * no job, and the request is answered on this thread. */
static enum MHD_Result request_queue(struct req *r, struct MHD_Connection *c, const char *url,
                                     const char *method, int *queued)
{
  if (r->too_large)
    return abx_http_error(c, 413, "request body too large");
  if (r->dest == ABX_DEST_REFUSED) {
    const struct abx_edge_error e = {.kind = ABX_EDGE_BAD_ROUTE, .message = r->msg};
    return r->front->ingress_error(c, &e);
  }
  r->conn = c;
  r->method = method;
  r->url = url;
  r->stage = REQ_QUEUED;
  MHD_suspend_connection(c);
  if (abx_pool_submit(answer_job, r) == 0) {
    *queued = 1;
    return MHD_YES;
  }
  MHD_resume_connection(c);
  r->result = answer(r);
  r->stage = REQ_ANSWERED;
  if (r->stream) { /* cannot happen: the ingress refuses new transfers once serve stops */
    abx_ingress_drop(r->stream);
    r->stream = NULL;
    r->result = MHD_NO;
  }
  return r->result;
}

/* libmicrohttpd's access handler, on the daemon's thread: one step of the request's stages, then
 * the status of an answer it queued (a job's answer is noted by the job, answer_job). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
  (void)cls, (void)version;
  struct req *r = *con_cls;
  if (!r || !r->raw_uri)
    return MHD_NO;
  int queued = 0;
  enum MHD_Result res;
  if (r->stage == REQ_ARRIVED) {
    res = request_arrived(r, c, url, method);
  } else if (*upload_size) {
    res = request_body(r, upload, *upload_size);
    *upload_size = 0;
  } else if (r->stage == REQ_PROXIED) { /* the proxied head is in (or it failed) */
    struct abx_stream *st = r->stream;
    r->stream = NULL;
    abx_faults_attach(r->fault);
    res = r->result = abx_faults_after(abx_ingress_respond(c, &r->route, st));
    r->stage = REQ_ANSWERED;
  } else if (r->stage == REQ_ANSWERED) {
    res = r->result;
  } else {
    res = request_queue(r, c, url, method, &queued);
  }
  if (!queued)
    note_status(r, c);
  return res;
}

/* ---- options -------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
  fputs(
      "usage: abxlua serve [--host 127.0.0.1] [--port 0] [--domain localhost] [--state-dir DIR]\n"
      "                    [--build-cache DIR] [--tls] [--ready-fd FD] [--faults FILE]\n"
      "                    [--git-root DIR] [--pool TEMPLATE=N[,TEMPLATE=N...]|none]\n"
      "                    [--flavor e2b|alicloud-fc|alicloud-express|acs|cubesandbox|\n"
      "                    opensandbox] [--mutant NAME[:N][,NAME...]|list] [--help]\n"
      "Runs a local E2B-compatible platform (control plane and sandbox ingress on one loopback\n"
      "port). Sandboxes are bubblewrap process trees running `abxlua envd`.\n"
      "The API key is printed; set ABX_LOCAL_API_KEY=e2b_<hex> to choose it. So is the access\n"
      "token of the /api-keys routes (managed keys, kept in <state>/api-keys.json); set\n"
      "ABX_LOCAL_ACCESS_TOKEN=sk_e2b_<hex> to choose it.\n"
      "--tls: HTTPS only, as E2B's SDK addresses a domain: https://api.<domain>:<port> and\n"
      "  https://<port>-<id>.<domain>:<port>, with a CA made once per state dir\n"
      "  (<state>/tls/ca.pem; a state dir serve creates goes, CA included, on a clean stop).\n"
      "  The domain defaults to e2b.localhost and needs two or more labels (TLS clients refuse\n"
      "  *.localhost). Then the SDK needs only E2B_API_KEY, E2B_DOMAIN=<domain>:<port> and\n"
      "  NODE_EXTRA_CA_CERTS=<ca.pem> (names under .localhost resolve through libnss-myhostname).\n"
      "--build-cache DIR: where template builds keep uploaded files and their layers, and\n"
      "  the built templates themselves (DIR/templates): kept across restarts and shared by\n"
      "  every serve on DIR (default <state dir>/build-cache with --state-dir, else abxlua's\n"
      "  state dir: $XDG_STATE_HOME/abxlua/build-cache or ~/.local/state/abxlua/build-cache,\n"
      "  the one `abxlua run` and `abxlua template` use). Nothing in it is removed\n"
      "  automatically; remove the dir while no serve uses it to reclaim the space.\n"
      "--faults FILE: YAML fault-injection rules (platform/util/faults.h); for tests only.\n"
      "--git-root DIR: serve the bare repositories under DIR read-only to sandboxes, as\n"
      "  git://<hub end of the sandbox's link>:9418/<name> (get_info abxNetwork.hostAddress;\n"
      "  platform/net/git_server.h). Serve does not start when it cannot listen there.\n"
      "--pool TEMPLATE=N,...: keep N started, ready sandboxes of each TEMPLATE (N 0..8) that a\n"
      "  create claims instead of booting one (platform/sandbox/warm_pool.h); booted at a low\n"
      "  CPU weight, never listed. Default: code-interpreter-v1=1, filled after its first\n"
      "  create; none: no pool.\n"
      "--flavor NAME: reproduce another E2B-compatible platform's wire (default e2b):\n"
      "  alicloud-fc, alicloud-express (Alibaba FC Agent Sandbox and its Flash edition: no\n"
      "  volumes, pause behind an allowlist, partial or no metrics), acs (OpenKruise\n"
      "  sandbox-manager: v1 create only, TTL 30 s..30 days, resume 204, also under\n"
      "  /kruise/api), cubesandbox (v1 create/connect only, any API key, env vars and\n"
      "  autoPause dropped, null tokens), opensandbox (not E2B's API: OpenSandbox's lifecycle\n"
      "  API under /v1 with OPEN-SANDBOX-API-KEY = the api key, create 202 then poll, execd on\n"
      "  port 44772, ingress /sandboxes/<id>/port/<port>/...). Details: docs/PLATFORM.md\n"
      "  \"Flavours\".\n"
      "--mutant NAME[,NAME...]: make the platform lie in one documented way per mutant, each\n"
      "  reproducing a publicly reported platform bug (for `abxlua mutate` and suite authors;\n"
      "  off by default). The first log line names the mutants on. NAME:N sets a mutant's\n"
      "  parameter where its row allows one (transient-502:N, every Nth envd request).\n"
      "  --mutant may be repeated. --mutant list prints the catalogue as JSON and exits.\n"
      "  Mutants: docs/mutants.md (platform/util/mutant.h).\n"
      "On start, what crashed predecessors left (processes, mounts, cgroups, state dirs) is\n"
      "removed (platform/sandbox/recover.h).\n",
      f);
}

static int key_valid(const char *k)
{
  if (strncmp(k, "e2b_", 4) != 0 || !k[4])
    return 0;
  for (const char *p = k + 4; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return 0;
  return strlen(k) < 60;
}

/* serve's options and what it checked before starting anything. */
struct serve_opts {
  const char *host, *domain, *state_dir, *faults, *build_cache, *git_root;
  const char *pool;   /* --pool's value; NULL: the default (sandbox/warm_pool.h) */
  char mutants[1024]; /* every --mutant value, joined by ',' (util/mutant.h); "" none */
  long port;
  int ready_fd, tls;
  struct sockaddr_in addr; /* host:port, a loopback address */
  char key[64];            /* the API key */
  char token[64];          /* the access token of /api-keys (apikeys.h) */
  char exe[4096];          /* /proc/self/exe: what each sandbox runs as envd */
};

/* One --mutant value: "list" prints the catalogue (stdout) and ends serve (0); a list of names
 * is kept for check_options, which checks it once the flavour is known. -1 to go on, else serve's
 * exit code (0, 1 out of memory, 4 too long). */
static int add_mutants(struct serve_opts *o, const char *v)
{
  if (strcmp(v, "list") == 0) {
    char *json = abx_mutant_catalogue_json();
    if (!json) {
      abx_slog("--mutant list: out of memory");
      return 1;
    }
    fputs(json, stdout);
    free(json);
    return 0;
  }
  size_t k = strlen(o->mutants);
  if (k + strlen(v) + 2 > sizeof o->mutants) {
    abx_slog("--mutant: the list is too long (valid mutants are %s)", abx_mutant_names());
    return 4;
  }
  snprintf(o->mutants + k, sizeof o->mutants - k, "%s%s", k ? "," : "", v);
  return -1;
}

/* The command line into `o`. -1 to go on, else serve's exit code (0 after --help, 4). */
static int parse_args(int argc, char **argv, struct serve_opts *o)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "--tls") == 0) { /* the one option without a value */
      o->tls = 1;
      continue;
    }
    if (!v || strncmp(a, "--", 2) != 0) {
      abx_slog("bad or incomplete option '%s'", a);
      usage(stderr);
      return 4;
    }
    char *end = NULL;
    if (strcmp(a, "--host") == 0)
      o->host = v;
    else if (strcmp(a, "--domain") == 0)
      o->domain = v;
    else if (strcmp(a, "--state-dir") == 0)
      o->state_dir = v;
    else if (strcmp(a, "--faults") == 0)
      o->faults = v;
    else if (strcmp(a, "--build-cache") == 0)
      o->build_cache = v;
    else if (strcmp(a, "--git-root") == 0)
      o->git_root = v;
    else if (strcmp(a, "--pool") == 0)
      o->pool = v;
    else if (strcmp(a, "--mutant") == 0) {
      int rc = add_mutants(o, v);
      if (rc >= 0)
        return rc;
    } else if (strcmp(a, "--flavor") == 0) {
      char ferr[200];
      if (abx_flavor_set(v, ferr, sizeof ferr) != 0) {
        abx_slog("--flavor: %s", ferr);
        return 4;
      }
    } else if (strcmp(a, "--port") == 0) {
      o->port = strtol(v, &end, 10);
      if (!*v || *end || o->port < 0 || o->port > 65535) {
        abx_slog("--port must be 0..65535");
        return 4;
      }
    } else if (strcmp(a, "--ready-fd") == 0) {
      long fd = strtol(v, &end, 10);
      if (!*v || *end || fd < 0 || fd > 65535 || fcntl((int)fd, F_GETFD) < 0) {
        abx_slog("--ready-fd %s is not an open file descriptor", v);
        return 4;
      }
      o->ready_fd = (int)fd;
    } else {
      abx_slog("unknown option '%s'", a);
      usage(stderr);
      return 4;
    }
    i++;
  }
  return -1;
}

/* The mutants (logged as serve's first line), the address, the domain and TLS's needs, then the
 * --faults rules loaded. -1 when all is well,
 * else serve's exit code (4 a bad option, 1 no TLS in libmicrohttpd). */
static int check_options(struct serve_opts *o)
{
  if (o->mutants[0]) { /* util/mutant.h: checked against the flavour, then serve's first line */
    char merr[1024], on[1024];
    if (abx_mutant_enable(o->mutants, abx_flavor()->name, ABX_MUT_ALL_LAYERS, merr, sizeof merr) !=
        0) {
      abx_slog("--mutant: %s", merr);
      return 4;
    }
    abx_mutant_names_on(ABX_MUT_ALL_LAYERS, ", ", 1, on, sizeof on);
    abx_slog("mutants on: %s (docs/mutants.md)", on);
  }
  o->addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
  if (strcmp(o->host, "localhost") == 0)
    o->host = "127.0.0.1";
  if (inet_pton(AF_INET, o->host, &o->addr.sin_addr) != 1 ||
      (ntohl(o->addr.sin_addr.s_addr) >> 24) != 127) {
    abx_slog("--host must be a loopback IPv4 address (127.x.x.x)");
    return 4;
  }
  if (!o->domain)
    o->domain = o->tls ? "e2b.localhost" : "localhost";
  for (const char *p = o->domain; *p; p++)
    if (!(*p == '.' || *p == '-' || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
          (*p >= 'A' && *p <= 'Z')) ||
        !*o->domain) {
      abx_slog("--domain must be a host name");
      return 4;
    }
  if (o->tls && !abx_tls_domain_ok(o->domain)) {
    abx_slog("with --tls, --domain needs two or more labels (e.g. "
             "e2b.localhost), got %s: TLS clients refuse a wildcard certificate for "
             "*.<one label> (Node's tls.checkServerIdentity)",
             o->domain);
    return 4;
  }
  if (o->tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    abx_slog("--tls: this libmicrohttpd was built without TLS support");
    return 1;
  }
  char perr[200];
  if (abx_warm_pool_configure(o->pool, perr, sizeof perr) != 0) {
    abx_slog("%s", perr);
    return 4;
  }
  char ferr[512];
  if (o->faults && abx_faults_load(o->faults, ferr, sizeof ferr) != 0) {
    abx_slog("--faults %s", ferr);
    return 4;
  }
  return -1;
}

/* The API key (ABX_LOCAL_API_KEY, or new), the access token (apikeys.h), this binary's path and
 * bubblewrap. -1 when all is there, else serve's exit code. */
static int find_credentials_and_tools(struct serve_opts *o)
{
  const char *envkey = getenv("ABX_LOCAL_API_KEY");
  if (envkey && *envkey) {
    if (!key_valid(envkey)) {
      abx_slog("ABX_LOCAL_API_KEY must match ^e2b_[0-9a-f]+$");
      return 4;
    }
    if (strlen(envkey) >= sizeof o->key) {
      abx_slog("ABX_LOCAL_API_KEY is too long");
      return 4;
    }
    memcpy(o->key, envkey, strlen(envkey) + 1);
  } else {
    memcpy(o->key, "e2b_", 4);
    if (abx_rand_hex(o->key + 4, 40) != 0) {
      abx_slog("no randomness for the API key");
      return 1;
    }
  }
  char terr[200];
  int trc = abx_apikeys_choose_token(o->token, terr, sizeof terr);
  if (trc != 0) {
    abx_slog("%s", terr);
    return trc;
  }
  ssize_t k = readlink("/proc/self/exe", o->exe, sizeof o->exe - 1);
  if (k <= 0) {
    abx_slog("cannot resolve /proc/self/exe");
    return 1;
  }
  o->exe[k] = 0;
  if (access("/usr/bin/bwrap", X_OK) != 0) {
    abx_slog("/usr/bin/bwrap is required");
    return 1;
  }
  return -1;
}

/* ---- the start table ------------------------------------------------------------------------ */

/* What the rows share: the options, and what the rows started. */
struct serve {
  struct serve_opts o;
  const struct abx_front *front; /* the flavour's API family (ingress/front.h) */
  char state[4096];              /* the state dir */
  int created_state;             /* this start made it: it goes at the stop */
  struct abx_tls tls;            /* --tls: the CA's path and this start's leaf (tls.h) */
  struct MHD_Daemon *daemon;
  int bound;            /* the port listened on */
  int listening;        /* the daemon ran: the stop ends with the "stopped" line */
  int builds_idle;      /* every template build ended at the stop: the store can go */
  char url[400];        /* http(s)://host:port */
  char sdk_domain[300]; /* --tls: what the API reports as a sandbox's domain (read by api.c) */
  char host_port[400];  /* the url without its scheme (the front's listening) */
  char err[1024];
};

/* A step of serve's start. `start` returns 0, or serve's exit code after logging why and undoing
 * its own partial work; `stop` undoes a start that returned 0. NULL: nothing to do. A row with
 * only a stop stands for what starts on demand later (the network, the hub's services) or for
 * work that must end before the rows above it stop (builds, held requests). */
struct serve_row {
  const char *name;
  int (*start)(struct serve *s);
  void (*stop)(struct serve *s);
};

static int start_curl(struct serve *s)
{
  (void)s;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  return 0;
}

static void stop_curl(struct serve *s)
{
  (void)s;
  curl_global_cleanup();
}

static int start_cgroups(struct serve *s)
{
  (void)s;
  abx_cgroup_init();
  abx_recover_stale(); /* recover.h: what crashed predecessors left */
  return 0;
}

static void stop_cgroups(struct serve *s)
{
  (void)s;
  abx_cgroup_shutdown();
}

static int start_state_dir(struct serve *s)
{
  if (s->o.state_dir) {
    snprintf(s->state, sizeof s->state, "%s", s->o.state_dir);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(s->state, sizeof s->state, "%s/abxlua-serve.%d", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
  }
  if (mkdir(s->state, 0700) == 0) {
    s->created_state = 1;
  } else if (errno != EEXIST) {
    abx_slog("cannot create state dir %s: %s", s->state, strerror(errno));
    return 1;
  }
  if (s->created_state && abx_recover_claim(s->state) != 0)
    abx_slog("warning: cannot write %s/owner", s->state);
  return 0;
}

static void stop_state_dir(struct serve *s)
{
  if (s->created_state)
    abx_rmtree(s->state);
}

static void stop_network(struct serve *s)
{
  (void)s;
  abx_network_shutdown();
}

/* The hub's services (build_proxy.h, git_server.h) run in the hub's network namespace: they stop
 * before it goes, and after every sandbox and build that used them. */
static void stop_hub_services(struct serve *s)
{
  (void)s;
  abx_build_proxy_stop();
  abx_git_server_stop();
}

static int start_signals(struct serve *s)
{
  (void)s;
  struct sigaction sact = {0};
  sact.sa_handler = on_signal;
  sigemptyset(&sact.sa_mask);
  sigaction(SIGTERM, &sact, NULL);
  sigaction(SIGINT, &sact, NULL);
  signal(SIGPIPE, SIG_IGN);
  return 0;
}

/* tls.h: the state dir's CA (made once) and this start's leaf, before anything else is built. */
static int start_tls(struct serve *s)
{
  if (s->o.tls &&
      abx_tls_setup(s->state, s->o.domain, s->o.host, &s->tls, s->err, sizeof s->err) != 0) {
    abx_slog("--tls: %s", s->err);
    abx_tls_free(&s->tls);
    return 1;
  }
  return 0;
}

static void stop_tls(struct serve *s)
{
  abx_tls_free(&s->tls);
}

/* The layers' roots (rootfs.h), the build cache (layer_cache.h) and the volumes' dir. */
static int start_layers(struct serve *s)
{
  char cache[4096];
  if (s->o.build_cache)
    snprintf(cache, sizeof cache, "%s", s->o.build_cache);
  else
    abx_lcache_default_dir(s->o.state_dir, cache, sizeof cache);
  int rfs = abx_rootfs_init(s->state, s->err, sizeof s->err);
  int lcs = rfs == 0 && (abx_lcache_init(cache, s->err, sizeof s->err) != 0 ||
                         abx_tstore_disk_init(s->err, sizeof s->err) != 0);
  if (rfs != 0 || lcs || abx_volume_init(s->state) != 0) {
    abx_slog("%s", rfs || lcs ? s->err : "cannot create the volumes dir");
    abx_rootfs_shutdown();
    return 1;
  }
  return 0;
}

static void stop_layers(struct serve *s)
{
  if (s->builds_idle) /* a build still running keeps the store it writes to */
    abx_tstore_shutdown();
  abx_rootfs_shutdown();
}

static int start_api_keys(struct serve *s)
{
  if (abx_apikeys_init(s->state, s->o.token, s->err, sizeof s->err) != 0) {
    abx_slog("%s", s->err);
    return 1;
  }
  return 0;
}

static void stop_api_keys(struct serve *s)
{
  (void)s;
  abx_apikeys_shutdown(); /* lastUsed into <state>/api-keys.json */
}

static int start_sandboxes(struct serve *s)
{
  abx_tbuild_init_keys();
  abx_lcache_config_tls(s->o.tls);
  abx_sandbox_config(s->state, s->o.exe);
  abx_api_config(s->o.key, s->o.domain);
  return 0;
}

/* The built templates of the disk store (template_store.h "Disk"), before serve listens, so a
 * create right after the ready line finds them. */
static int start_templates(struct serve *s)
{
  (void)s;
  abx_tbuild_restore();
  return 0;
}

static void stop_sandboxes(struct serve *s)
{
  (void)s;
  abx_lifecycle_shutdown(); /* sandboxes finished by in-flight creates */
}

/* The front's own threads (its drain) end once the daemon has stopped, after abx_spawner_stop
 * (so their starts fail fast) and before the last abx_lifecycle_shutdown. */
static void stop_front(struct serve *s)
{
  if (s->front->drain)
    s->front->drain();
}

/* The ingress's loop thread, then the daemon: one port for the control plane and the ingress. */
static int start_daemon(struct serve *s)
{
  if (abx_ingress_config(s->o.domain, s->front) != 0) {
    abx_slog("cannot start the ingress's proxy thread");
    return 1;
  }
  /* Each proxied stream holds about 3 fds (client socket, sandbox socket, namespace fd): the
   * default soft limit (1024) would stop at ~300 streams. The hard limit is ours to take. */
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  /* --tls: every connection is TLS (GnuTLS inside libmicrohttpd); the leaf's PEM stays ours
   * until the daemon stops. Without --tls the array is empty. */
  struct MHD_OptionItem tls_ops[] = {{MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls.key_pem},
                                     {MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls.cert_pem},
                                     {MHD_OPTION_END, 0, NULL}};
  if (!s->o.tls)
    tls_ops[0].option = MHD_OPTION_END;
  /* Event-driven: SERVE_IO_THREADS epoll threads hold every connection; what can block runs on
   * the worker pool (util/pool.h) and proxied transfers on the ingress's one loop thread
   * (ingress.h "Threads"), so the thread count does not grow with the streams (docs/PLATFORM.md
   * "Threads"). The front is the cls of the request callbacks. */
  void *front = (void *)s->front;
  s->daemon = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
          MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG | (s->o.tls ? MHD_USE_TLS : 0),
      0, NULL, NULL, on_request, front,
      /* first, or libmicrohttpd prints its messages raw until it is set */
      MHD_OPTION_EXTERNAL_LOGGER, abx_slog_mhd, NULL, MHD_OPTION_SOCK_ADDR,
      (struct sockaddr *)&s->o.addr, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)SERVE_IO_THREADS,
      MHD_OPTION_ARRAY, tls_ops, MHD_OPTION_URI_LOG_CALLBACK, on_uri, front,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)650,
      /* without it libmicrohttpd stops at FD_SETSIZE - 4 = 1020 connections, even with poll */
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)16384, MHD_OPTION_END);
  if (!s->daemon) {
    abx_slog("cannot listen on %s:%ld%s", s->o.host, s->o.port,
             s->o.tls ? " with TLS (see libmicrohttpd's message above)" : "");
    abx_ingress_stop();
    return 1;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  s->bound = di ? di->port : (int)s->o.port;
  s->listening = 1;
  return 0;
}

/* libmicrohttpd must not stop with a suspended connection: every pool job answers and resumes
 * its own (later requests are answered on the daemon's threads), then every proxied transfer is
 * aborted and its connection resumed. */
static void stop_daemon(struct serve *s)
{
  abx_pool_drain();
  abx_ingress_stop();
  MHD_stop_daemon(s->daemon);
}

/* The work requests started ends before the daemon stops: queued builds fail and running steps
 * are killed (template_build.h), the spawner takes no more, and the sandboxes stop. */
static void stop_work(struct serve *s)
{
  abx_tbuild_stop();
  abx_spawner_stop();
  s->builds_idle = abx_tbuild_wait() == 0;
  abx_lifecycle_shutdown();
}

/* The warm pool (sandbox/warm_pool.h): its filler starts once the templates are there; it stops
 * before the work's stop, so its boot in progress is cancelled and its sandboxes killed before
 * the sandboxes' own shutdown. */
static int start_warm_pool(struct serve *s)
{
  (void)s;
  abx_warm_pool_start(); /* without its thread there is no pool: every create boots */
  return 0;
}

static void stop_warm_pool(struct serve *s)
{
  (void)s;
  abx_warm_pool_stop();
}

static void stop_faults(struct serve *s)
{
  (void)s;
  abx_faults_stop(); /* held (no_answer) and delayed requests end now */
}

/* build_proxy.h: the build sandboxes' egress proxy, in the hub namespace; it refuses serve's own
 * port. Without sandbox links there is none, and builds get no registry access. */
static int start_build_proxy(struct serve *s)
{
  if (abx_build_proxy_start(s->bound, s->err, sizeof s->err) != 0)
    abx_slog("warning: no build proxy: %s", s->err);
  return 0;
}

/* git_server.h: asked for, so no git server is an error (fail closed): no ready line. */
static int start_git_server(struct serve *s)
{
  if (s->o.git_root && abx_git_server_start(s->o.git_root, s->err, sizeof s->err) != 0) {
    abx_slog("--git-root: %s", s->err);
    return 1;
  }
  return 0;
}

/* The ready line on --ready-fd: url, port, key, domain, access token (and the CA with --tls). */
static void write_ready_line(const struct serve *s)
{
  json_t *j = json_pack("{s:s,s:i,s:s,s:s,s:s}", "url", s->url, "port", s->bound, "api_key",
                        s->o.key, "domain", s->o.domain, "access_token", s->o.token);
  if (j && s->o.tls) /* only with --tls: without it the line is what it always was */
    json_object_set_new(j, "ca_cert", json_string(s->tls.ca_path));
  char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (line) {
    size_t n = strlen(line);
    line[n] = '\n';
    ssize_t w = write(s->o.ready_fd, line, n + 1);
    (void)w;
    free(line);
  }
  close(s->o.ready_fd);
}

/* serve listens: where (stdout), the front told, then the key and token (stdout, or only the
 * ready line with --ready-fd: stdout is then a log file, issue 9). */
static int start_ready(struct serve *s)
{
  if (s->o.tls) {
    /* E2B's SDK: API https://api.<domain>, envd https://49983-<id>.<sandbox's domain>,
     * getHost(p) = <p>-<id>.<sandbox's domain> (docs/protocol/e2b-v2-and-peers.md §1.5): the port
     * must ride in the domain the API reports, or the SDK would go to 443. Set before the ready
     * line: no client knows the port before it. */
    snprintf(s->url, sizeof s->url, "https://api.%s:%d", s->o.domain, s->bound);
    snprintf(s->sdk_domain, sizeof s->sdk_domain, "%s:%d", s->o.domain, s->bound);
    abx_api_config(s->o.key, s->sdk_domain);
    abx_slog_fd(1, "listening on %s (domain %s, TLS, CA %s%s)", s->url, s->o.domain, s->tls.ca_path,
                s->tls.ca_created ? ", new" : "");
    abx_slog_fd(1, "for E2B's SDK: E2B_DOMAIN=%s NODE_EXTRA_CA_CERTS=%s", s->sdk_domain,
                s->tls.ca_path);
  } else {
    snprintf(s->url, sizeof s->url, "http://%s:%d", s->o.host, s->bound);
    abx_slog_fd(1, "listening on %s (domain %s)", s->url, s->o.domain);
  }
  snprintf(s->host_port, sizeof s->host_port, "%s", strstr(s->url, "//") + 2);
  if (s->front->listening) /* e.g. OpenSandbox's endpoints: "<host:port>/sandboxes/..." */
    s->front->listening(s->o.key, s->host_port);
  if (s->o.ready_fd >= 0) {
    abx_slog_fd(1, "api key e2b_****, access token sk_e2b_**** (on the ready line)");
    write_ready_line(s);
  } else { /* an interactive serve (no --ready-fd): its user needs them */
    abx_slog_fd(1, "api key %s", s->o.key);
    abx_slog_fd(1, "access token %s", s->o.token);
  }
  return 0;
}

/* serve's start, in order; the stops run in reverse (at shutdown, or from the row before a start
 * that failed). The order is the dependencies': the state dir before what lives in it, TLS
 * before the daemon that serves it, the front's workers stopped after the daemon and before the
 * sandboxes they made, the work of requests (builds, held faults) ended before the daemon
 * stops, and the hub's services stopped after every sandbox and build that used them. */
static const struct serve_row rows[] = {
    {"libcurl", start_curl, stop_curl},
    {"cgroups", start_cgroups, stop_cgroups}, /* before the state dir: recovery first */
    {"state dir", start_state_dir, stop_state_dir},
    {"network", NULL, stop_network},           /* the hub and links, made on demand */
    {"hub services", NULL, stop_hub_services}, /* started once the daemon listens, below */
    {"signals", start_signals, NULL},
    {"tls", start_tls, stop_tls},
    {"layers", start_layers, stop_layers},
    {"api keys", start_api_keys, stop_api_keys},
    {"sandboxes", start_sandboxes, stop_sandboxes},
    {"templates", start_templates, NULL}, /* their records go with the layers' stop */
    {"front", NULL, stop_front},
    {"daemon", start_daemon, stop_daemon},
    {"work", NULL, stop_work},
    {"warm pool", start_warm_pool, stop_warm_pool},
    {"faults", NULL, stop_faults},
    {"build proxy", start_build_proxy, NULL},
    {"git server", start_git_server, NULL},
    {"ready", start_ready, NULL},
};

#define NROWS (sizeof rows / sizeof rows[0])

/* The options, the rows forward, the main loop, the rows' stops in reverse. */
static int serve_run(int argc, char **argv)
{
  struct serve s = {.o = {.host = "127.0.0.1", .ready_fd = -1}};
  int rc = parse_args(argc, argv, &s.o);
  if (rc < 0)
    rc = check_options(&s.o);
  if (rc < 0)
    rc = find_credentials_and_tools(&s.o);
  if (rc >= 0)
    return rc;
  static const struct abx_front *const fronts[] = {
      [ABX_FAMILY_E2B] = &abx_e2b_front, [ABX_FAMILY_OPENSANDBOX] = &abx_opensandbox_front};
  s.front = fronts[abx_flavor()->family];
  size_t started = 0;
  rc = 0;
  while (started < NROWS && rc == 0) {
    if (rows[started].start)
      rc = rows[started].start(&s);
    if (rc == 0)
      started++;
  }
  while (!g_stop && rc == 0) { /* the main thread's loop (docs/PLATFORM.md "Threads") */
    abx_spawner_poll(100);
    abx_lifecycle_tick(abx_now_ns());
    if (s.front->tick)
      s.front->tick(abx_now_ns());
  }
  while (started > 0)
    if (rows[--started].stop)
      rows[started].stop(&s);
  if (s.listening)
    abx_slog("stopped");
  return rc;
}

int abx_serve_main(int argc, char **argv)
{
  int rc = serve_run(argc, argv);
  abx_faults_free();
  return rc;
}
