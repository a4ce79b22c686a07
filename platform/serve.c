/*
 * serve.c: `abxlua serve`: options, API key, state dir, the HTTP daemon (one port for the control
 * plane and the ingress, told apart by the front of the API family served, ingress/front.h), and
 * the main thread's loop (spawner, TTL, the front's tick). Contract in platform_main.h; routes,
 * state, threads and limits in docs/PLATFORM.md.
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
  const char *method, *url; /* libmicrohttpd's, valid for the request's life */
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

static void usage(FILE *f)
{
  fputs("usage: abxlua serve [--host 127.0.0.1] [--port 0] [--domain localhost] [--state-dir DIR]\n"
        "                    [--build-cache DIR] [--tls] [--ready-fd FD] [--faults FILE]\n"
        "                    [--git-root DIR]\n"
        "                    [--flavor e2b|alicloud-fc|alicloud-express|acs|cubesandbox|\n"
        "                    opensandbox] [--help]\n"
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
        "--build-cache DIR: where template builds keep uploaded files and their layers, kept\n"
        "  across restarts (default <state dir>/build-cache with --state-dir, else\n"
        "  $XDG_CACHE_HOME/abxlua/build-cache or ~/.cache/abxlua/build-cache). Nothing in it is\n"
        "  removed automatically; remove the dir while no serve uses it to reclaim the space.\n"
        "--faults FILE: YAML fault-injection rules (platform/util/faults.h); for tests only.\n"
        "--git-root DIR: serve the bare repositories under DIR read-only to sandboxes, as\n"
        "  git://<hub end of the sandbox's link>:9418/<name> (get_info abxNetwork.hostAddress;\n"
        "  platform/net/git_server.h). Serve does not start when it cannot listen there.\n"
        "--flavor NAME: reproduce another E2B-compatible platform's wire (default e2b):\n"
        "  alicloud-fc, alicloud-express (Alibaba FC Agent Sandbox and its Flash edition: no\n"
        "  volumes, pause behind an allowlist, partial or no metrics), acs (OpenKruise\n"
        "  sandbox-manager: v1 create only, TTL 30 s..30 days, resume 204, also under\n"
        "  /kruise/api), cubesandbox (v1 create/connect only, any API key, env vars and\n"
        "  autoPause dropped, null tokens), opensandbox (not E2B's API: OpenSandbox's lifecycle\n"
        "  API under /v1 with OPEN-SANDBOX-API-KEY = the api key, create 202 then poll, execd on\n"
        "  port 44772, ingress /sandboxes/<id>/port/<port>/...). Details: docs/PLATFORM.md\n"
        "  \"Flavours\".\n"
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

/* How far serve_run's start-up got: what fail_start must undo, in reverse order. */
enum start_stage { STARTED_CGROUP, STARTED_ROOTFS, STARTED_CURL, STARTED_INGRESS };

/* Undoes a failed start-up down from `stage` (the cgroup root, the rootfs layers and TLS
 * material, libcurl, the ingress's proxy thread) and removes a state dir this start created.
 * Returns serve_run's exit code for a failed start (1). */
static int fail_start(enum start_stage stage, struct abx_tls *tlsc, const char *state,
                      int created_state)
{
  if (stage >= STARTED_INGRESS)
    abx_ingress_stop();
  if (stage >= STARTED_ROOTFS)
    abx_rootfs_shutdown();
  abx_cgroup_shutdown();
  abx_tls_free(tlsc);
  if (created_state)
    abx_rmtree(state);
  if (stage >= STARTED_CURL)
    curl_global_cleanup();
  return 1;
}

static int serve_run(int argc, char **argv)
{
  const char *host = "127.0.0.1", *domain = NULL, *state_opt = NULL, *faults = NULL;
  const char *cache_opt = NULL, *git_root = NULL;
  long port = 0;
  int rc = 0;
  int ready_fd = -1, tls = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "--tls") == 0) { /* the one option without a value */
      tls = 1;
      continue;
    }
    if (!v || strncmp(a, "--", 2) != 0) {
      abx_slog("bad or incomplete option '%s'", a);
      usage(stderr);
      return 4;
    }
    char *end = NULL;
    if (strcmp(a, "--host") == 0)
      host = v;
    else if (strcmp(a, "--domain") == 0)
      domain = v;
    else if (strcmp(a, "--state-dir") == 0)
      state_opt = v;
    else if (strcmp(a, "--faults") == 0)
      faults = v;
    else if (strcmp(a, "--build-cache") == 0)
      cache_opt = v;
    else if (strcmp(a, "--git-root") == 0)
      git_root = v;
    else if (strcmp(a, "--flavor") == 0) {
      char ferr[200];
      if (abx_flavor_set(v, ferr, sizeof ferr) != 0) {
        abx_slog("--flavor: %s", ferr);
        return 4;
      }
    }
    else if (strcmp(a, "--port") == 0) {
      port = strtol(v, &end, 10);
      if (!*v || *end || port < 0 || port > 65535) {
        abx_slog("--port must be 0..65535");
        return 4;
      }
    } else if (strcmp(a, "--ready-fd") == 0) {
      long fd = strtol(v, &end, 10);
      if (!*v || *end || fd < 0 || fd > 65535 || fcntl((int)fd, F_GETFD) < 0) {
        abx_slog("--ready-fd %s is not an open file descriptor", v);
        return 4;
      }
      ready_fd = (int)fd;
    } else {
      abx_slog("unknown option '%s'", a);
      usage(stderr);
      return 4;
    }
    i++;
  }
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (strcmp(host, "localhost") == 0)
    host = "127.0.0.1";
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 || (ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
    abx_slog("--host must be a loopback IPv4 address (127.x.x.x)");
    return 4;
  }
  if (!domain)
    domain = tls ? "e2b.localhost" : "localhost";
  for (const char *p = domain; *p; p++)
    if (!(*p == '.' || *p == '-' || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
          (*p >= 'A' && *p <= 'Z')) || !*domain) {
      abx_slog("--domain must be a host name");
      return 4;
    }

  if (tls && !abx_tls_domain_ok(domain)) {
    abx_slog("with --tls, --domain needs two or more labels (e.g. "
             "e2b.localhost), got %s: TLS clients refuse a wildcard certificate for "
             "*.<one label> (Node's tls.checkServerIdentity)",
             domain);
    return 4;
  }
  if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    abx_slog("--tls: this libmicrohttpd was built without TLS support");
    return 1;
  }

  static const struct abx_front *const fronts[] = {[ABX_FAMILY_E2B] = &abx_e2b_front,
                                                    [ABX_FAMILY_OPENSANDBOX] =
                                                      &abx_opensandbox_front};
  const struct abx_front *front = fronts[abx_flavor()->family]; /* ingress/front.h */

  if (faults) {
    char ferr[512];
    if (abx_faults_load(faults, ferr, sizeof ferr) != 0) {
      abx_slog("--faults %s", ferr);
      return 4;
    }
  }

  char key[64];
  const char *envkey = getenv("ABX_LOCAL_API_KEY");
  if (envkey && *envkey) {
    if (!key_valid(envkey)) {
      abx_slog("ABX_LOCAL_API_KEY must match ^e2b_[0-9a-f]+$");
      return 4;
    }
    size_t klen = strlen(envkey);
    if (klen >= sizeof key) {
      abx_slog("ABX_LOCAL_API_KEY is too long");
      return 4;
    }
    memcpy(key, envkey, klen + 1);
  } else {
    memcpy(key, "e2b_", 4);
    if (abx_rand_hex(key + 4, 40) != 0) {
      abx_slog("no randomness for the API key");
      return 1;
    }
  }

  char token[64], terr[200]; /* apikeys.h: the admin credential of /api-keys */
  int trc = abx_apikeys_choose_token(token, terr, sizeof terr);
  if (trc != 0) {
    abx_slog("%s", terr);
    return trc;
  }

  char exe[4096];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k <= 0) {
    abx_slog("cannot resolve /proc/self/exe");
    return 1;
  }
  exe[k] = 0;
  if (access("/usr/bin/bwrap", X_OK) != 0) {
    abx_slog("/usr/bin/bwrap is required");
    return 1;
  }

  abx_cgroup_init();
  abx_recover_stale(); /* recover.h: what crashed predecessors left */

  char state[4096];
  int created_state = 0;
  if (state_opt) {
    snprintf(state, sizeof state, "%s", state_opt);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(state, sizeof state, "%s/abxlua-serve.%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
  }
  if (mkdir(state, 0700) == 0)
    created_state = 1;
  else if (errno != EEXIST) {
    abx_slog("cannot create state dir %s: %s", state, strerror(errno));
    abx_cgroup_shutdown();
    return 1;
  }
  if (created_state && abx_recover_claim(state) != 0)
    abx_slog("warning: cannot write %s/owner", state);

  struct sigaction sact = {0};
  sact.sa_handler = on_signal;
  sigemptyset(&sact.sa_mask);
  sigaction(SIGTERM, &sact, NULL);
  sigaction(SIGINT, &sact, NULL);
  signal(SIGPIPE, SIG_IGN);

  char err[1024];
  /* tls.h: the state dir's CA (made once) and this start's leaf, before anything else is built */
  struct abx_tls tlsc = {0};
  if (tls && abx_tls_setup(state, domain, host, &tlsc, err, sizeof err) != 0) {
    abx_slog("--tls: %s", err);
    return fail_start(STARTED_CGROUP, &tlsc, state, created_state);
  }
  char cache[4096];
  if (cache_opt)
    snprintf(cache, sizeof cache, "%s", cache_opt);
  else
    abx_lcache_default_dir(state_opt, cache, sizeof cache);
  int rfs = abx_rootfs_init(state, err, sizeof err);
  int lcs = rfs == 0 && abx_lcache_init(cache, err, sizeof err) != 0;
  if (rfs != 0 || lcs || abx_volume_init(state) != 0) {
    abx_slog("%s", rfs || lcs ? err : "cannot create the volumes dir");
    return fail_start(STARTED_ROOTFS, &tlsc, state, created_state);
  }
  if (abx_apikeys_init(state, token, err, sizeof err) != 0) {
    abx_slog("%s", err);
    return fail_start(STARTED_ROOTFS, &tlsc, state, created_state);
  }
  abx_tbuild_init_keys();
  abx_lcache_config_tls(tls);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  abx_sandbox_config(state, exe);
  abx_api_config(key, domain);
  if (abx_ingress_config(domain, front) != 0) {
    abx_slog("cannot start the ingress's proxy thread");
    return fail_start(STARTED_CURL, &tlsc, state, created_state);
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
  struct MHD_OptionItem tls_ops[] = {{MHD_OPTION_HTTPS_MEM_KEY, 0, tlsc.key_pem},
                                     {MHD_OPTION_HTTPS_MEM_CERT, 0, tlsc.cert_pem},
                                     {MHD_OPTION_END, 0, NULL}};
  if (!tls)
    tls_ops[0].option = MHD_OPTION_END;
  /* Event-driven: SERVE_IO_THREADS epoll threads hold every connection; what can block runs on
   * the worker pool (serve_pool.h) and proxied transfers on the ingress's one loop thread
   * (ingress.h "Threads"), so the thread count does not grow with the streams (docs/PLATFORM.md
   * "Threads"). */
  struct MHD_Daemon *d = MHD_start_daemon(
    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
      MHD_USE_ERROR_LOG | (tls ? MHD_USE_TLS : 0),
    0, NULL, NULL, on_request, (void *)front,
    /* first, or libmicrohttpd prints its messages raw until it is set */
    MHD_OPTION_EXTERNAL_LOGGER, abx_slog_mhd, NULL,
    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)SERVE_IO_THREADS,
    MHD_OPTION_ARRAY, tls_ops,
    MHD_OPTION_URI_LOG_CALLBACK, on_uri, (void *)front, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
    NULL,
    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)650,
    /* without it libmicrohttpd stops at FD_SETSIZE - 4 = 1020 connections, even with poll */
    MHD_OPTION_CONNECTION_LIMIT, (unsigned)16384, MHD_OPTION_END);
  if (!d) {
    abx_slog("cannot listen on %s:%ld%s", host, port,
             tls ? " with TLS (see libmicrohttpd's message above)" : "");
    return fail_start(STARTED_INGRESS, &tlsc, state, created_state);
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  int bound = di ? di->port : (int)port;
  /* build_proxy.h: the build sandboxes' egress proxy, in the hub namespace; it refuses serve's
   * own port. Without sandbox links there is none, and builds get no registry access. */
  if (abx_build_proxy_start(bound, err, sizeof err) != 0)
    abx_slog("warning: no build proxy: %s", err);
  /* git_server.h: asked for, so no git server is an error (fail closed): no ready line, and the
   * ordinary shutdown below */
  if (git_root && abx_git_server_start(git_root, err, sizeof err) != 0) {
    abx_slog("--git-root: %s", err);
    rc = 1;
    goto stopping;
  }
  char url[400];
  static char sdk_domain[300]; /* what the API reports as a sandbox's domain (read by api.c) */
  if (tls) {
    /* E2B's SDK: API https://api.<domain>, envd https://49983-<id>.<sandbox's domain>,
     * getHost(p) = <p>-<id>.<sandbox's domain> (docs/protocol/e2b-v2-and-peers.md §1.5): the port
     * must ride in the domain the API reports, or the SDK would go to 443. Set before the ready
     * line: no client knows the port before it. */
    snprintf(url, sizeof url, "https://api.%s:%d", domain, bound);
    snprintf(sdk_domain, sizeof sdk_domain, "%s:%d", domain, bound);
    abx_api_config(key, sdk_domain);
    abx_slog_fd(1, "listening on %s (domain %s, TLS, CA %s%s)", url, domain, tlsc.ca_path,
                tlsc.ca_created ? ", new" : "");
    abx_slog_fd(1, "for E2B's SDK: E2B_DOMAIN=%s NODE_EXTRA_CA_CERTS=%s", sdk_domain, tlsc.ca_path);
  } else {
    snprintf(url, sizeof url, "http://%s:%d", host, bound);
    abx_slog_fd(1, "listening on %s (domain %s)", url, domain);
  }
  static char host_port[400]; /* e.g. OpenSandbox's endpoints: "<host:port>/sandboxes/..." */
  snprintf(host_port, sizeof host_port, "%s", strstr(url, "//") + 2);
  if (front->listening)
    front->listening(key, host_port);
  /* with --ready-fd the key goes only to the ready line: stdout is then a log file (issue 9) */
  if (ready_fd >= 0)
    abx_slog_fd(1, "api key e2b_****, access token sk_e2b_**** (on the ready line)");
  else { /* an interactive serve (no --ready-fd): its user needs them */
    abx_slog_fd(1, "api key %s", key);
    abx_slog_fd(1, "access token %s", token);
  }
  if (ready_fd >= 0) {
    json_t *j = json_pack("{s:s,s:i,s:s,s:s,s:s}", "url", url, "port", bound, "api_key", key,
                          "domain", domain, "access_token", token);
    if (j && tls) /* only with --tls: without it the line is what it always was */
      json_object_set_new(j, "ca_cert", json_string(tlsc.ca_path));
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (s) {
      size_t n = strlen(s);
      s[n] = '\n';
      ssize_t w = write(ready_fd, s, n + 1);
      (void)w;
      free(s);
    }
    close(ready_fd);
  }

stopping:
  while (!g_stop && !rc) {
    abx_spawner_poll(100);
    abx_lifecycle_tick(abx_now_ns());
    if (front->tick)
      front->tick(abx_now_ns());
  }

  abx_faults_stop(); /* held (no_answer) and delayed requests end now */
  abx_tbuild_stop(); /* builds: queued ones fail, running steps are killed (template_build.h) */
  abx_spawner_stop();
  int builds_idle = abx_tbuild_wait() == 0;
  abx_lifecycle_shutdown();
  /* libmicrohttpd must not stop with a suspended connection: every pool job answers and resumes
   * its own (later requests are answered on the daemon's threads), then every proxied transfer
   * is aborted and its connection resumed */
  abx_pool_drain();
  abx_ingress_stop();
  MHD_stop_daemon(d);
  if (front->drain) /* its workers' starts fail now that the spawner is stopped */
    front->drain();
  abx_tls_free(&tlsc);
  abx_lifecycle_shutdown(); /* sandboxes finished by in-flight creates */
  if (builds_idle)
    abx_tstore_shutdown();
  abx_rootfs_shutdown();
  abx_cgroup_shutdown();
  abx_build_proxy_stop();
  abx_git_server_stop();
  abx_network_shutdown();
  abx_apikeys_shutdown(); /* lastUsed into <state>/api-keys.json */
  if (created_state)
    abx_rmtree(state);
  curl_global_cleanup();
  abx_slog("stopped");
  return rc;
}

int abx_serve_main(int argc, char **argv)
{
  int rc = serve_run(argc, argv);
  abx_faults_free();
  return rc;
}
