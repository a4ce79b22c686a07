/*
 * create.c: POST /v1/sandboxes of the opensandbox flavour: CreateSandboxRequest validated
 * field by field (spec components.schemas.CreateSandboxRequest; server api/schema.py and
 * services/validators.py for the rules and messages), a sandbox prepared on the platform's
 * machinery as api_sandboxes.c does, a 202 Pending answer, the start on a worker (worker.c).
 * Contract in opensandbox.h; what is refused and why in docs/PLATFORM.md "Flavours".
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "e2b.h" /* ABX_MAX_TIMEOUT_S */
#include "util/util.h"
#include "net/net.h"
#include "opensandbox_int.h"
#include "sandbox/sandbox.h"
#include "template/template.h"

/* Every field of CreateSandboxRequest (the spec). The spec leaves the object open (no
 * additionalProperties: false) and the real server ignores other keys; here they are refused,
 * as the platform never drops a value it was sent (docs/PLATFORM.md). */
static const char *const known_keys[] = {
    "image",        "snapshotId", "platform",   "timeout",       "resourceLimits",
    "env",          "metadata",   "entrypoint", "networkPolicy", "credentialProxy",
    "secureAccess", "volumes",    "extensions"};

#define BAD(...)                                                                                   \
  do {                                                                                             \
    snprintf(msg, n, __VA_ARGS__);                                                                 \
    return -1;                                                                                     \
  } while (0)

static int present(json_t *o, const char *k)
{
  json_t *v = json_object_get(o, k);
  return v && !json_is_null(v);
}

static int str_map(json_t *o, const char *k, char *msg, size_t n)
{
  json_t *m = json_object_get(o, k), *v;
  const char *kk;
  if (!m || json_is_null(m))
    return 0;
  if (!json_is_object(m))
    BAD("field '%s' must be an object of strings", k);
  json_object_foreach(m, kk, v) if (!json_is_string(v))
      BAD("field '%s.%.64s' must be a string", k, kk);
  return 0;
}

/* Kubernetes label rules of metadata (validators.py ensure_metadata_labels). */
static int label_name_ok(const char *s, size_t l)
{
  if (l == 0 || l > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[l - 1]))
    return 0;
  for (size_t i = 0; i < l; i++)
    if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
      return 0;
  return 1;
}

static int dns_subdomain_ok(const char *s, size_t l)
{
  if (l == 0 || l > 253)
    return 0;
  for (size_t i = 0, start = 0; i <= l; i++)
    if (i == l || s[i] == '.') {
      if (i == start || s[start] == '-' || s[i - 1] == '-')
        return 0;
      start = i + 1;
    } else if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-')) {
      return 0;
    }
  return 1;
}

static int metadata_ok(json_t *md, char *msg, size_t n)
{
  const char *k;
  json_t *v;
  json_object_foreach(md, k, v)
  {
    const char *slash = strchr(k, '/'), *name = slash ? slash + 1 : k;
    if (strncmp(k, "opensandbox.io/", 15) == 0)
      BAD("Metadata key '%.80s' uses the reserved prefix 'opensandbox.io/'. Keys under this "
          "prefix are managed by the system and cannot be set via metadata.",
          k);
    if ((slash && !dns_subdomain_ok(k, (size_t)(slash - k))) || !label_name_ok(name, strlen(name)))
      BAD("Metadata key '%.80s' is invalid: must be either a name or a DNS-subdomain prefix and "
          "name separated by /, where the name is up to 63 characters and matches "
          "[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, and the optional prefix is a valid DNS "
          "subdomain up to 253 characters.",
          k);
    const char *val = json_string_value(v);
    if (*val && !label_name_ok(val, strlen(val)))
      BAD("Metadata value '%.80s' is invalid: must be 63 characters or less, start/end with an "
          "alphanumeric character, and contain only alphanumeric, '-', '_', or '.' characters.",
          val);
  }
  return 0;
}

/* resourceLimits {cpu, memory} (Kubernetes quantities: cpu "500m" or "2" or "1.5", memory
 * "512Mi"/"1Gi"/"1048576Ki" or bytes). gpu and other keys cannot be honoured: refused. */
static int limits(json_t *rl, int *millis, int *mem_mb, char *msg, size_t n)
{
  const char *k;
  json_t *v;
  json_object_foreach(rl, k, v)
  {
    const char *s = json_string_value(v);
    char *end = NULL;
    if (strcmp(k, "cpu") == 0) {
      double c = strtod(s, &end);
      if (end && *end == 'm' && !end[1] && end != s && strspn(s, "0123456789") == (size_t)(end - s))
        *millis = (int)c;
      else if (end && !*end && end != s && strspn(s, "0123456789.") == strlen(s) &&
               c * 1000 == (double)(long)(c * 1000))
        *millis = (int)(c * 1000);
      else
        BAD("field 'resourceLimits.cpu' must be a CPU quantity such as \"500m\", \"1\" or "
            "\"1.5\", got '%.40s'",
            s);
      long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
      if (*millis < 10 || *millis > (ncpu > 0 ? ncpu : 1) * 1000)
        BAD("field 'resourceLimits.cpu' must be from 10m to %ldm (this host's CPUs), got '%.40s'",
            (ncpu > 0 ? ncpu : 1) * 1000, s);
    } else if (strcmp(k, "memory") == 0) {
      unsigned long long q = strtoull(s, &end, 10), mb = 0;
      int digits = end != s && isdigit((unsigned char)s[0]);
      if (digits && strcmp(end, "Mi") == 0)
        mb = q;
      else if (digits && strcmp(end, "Gi") == 0)
        mb = q * 1024;
      else if (digits && strcmp(end, "Ki") == 0 && q % 1024 == 0)
        mb = q / 1024;
      else if (digits && !*end && q % (1024 * 1024) == 0)
        mb = q >> 20;
      else
        BAD("field 'resourceLimits.memory' must be a whole number of MiB written as \"512Mi\", "
            "\"1Gi\", Ki or bytes (sandbox memory is set in MiB), got '%.40s'",
            s);
      if (mb < 64 || mb > 65536)
        BAD("field 'resourceLimits.memory' must be from 64Mi to 64Gi, got '%.40s'", s);
      *mem_mb = (int)mb;
    } else {
      BAD("field 'resourceLimits.%.40s' cannot be honoured by the local opensandbox flavor: only "
          "cpu and memory are (no GPUs)",
          k);
    }
  }
  return 0;
}

/* platform {os, arch} (PlatformSpec, additionalProperties false): only this host's. */
static int platform_ok(json_t *p, char *msg, size_t n)
{
  struct utsname u;
  const char *arch = uname(&u) == 0 && strcmp(u.machine, "aarch64") == 0 ? "arm64" : "amd64";
  json_t *os = json_object_get(p, "os"), *ar = json_object_get(p, "arch");
  if (!json_is_object(p) || json_object_size(p) != 2 || !json_is_string(os) || !json_is_string(ar))
    BAD("field 'platform' must be {os: string, arch: string} and nothing else");
  if (strcmp(json_string_value(os), "linux") != 0)
    BAD("Unsupported platform.os '%.40s'. Supported values: ['linux'].", json_string_value(os));
  if (strcmp(json_string_value(ar), arch) != 0)
    BAD("Unsupported platform.arch '%.40s'. Supported values: ['%s'].", json_string_value(ar),
        arch);
  return 0;
}

/* The local template an image.uri names: OpenSandbox's code-interpreter image, as its SDKs and
 * examples name it ("opensandbox/code-interpreter:v1.1.0", or behind a registry host such as
 * "sandbox-registry.cn-zhangjiakou.cr.aliyuncs.com/opensandbox/code-interpreter:v1.1.0";
 * sdks/code-interpreter/javascript/README.md, examples/code-interpreter/main.py @3bb6fad), any tag
 * or none, is code-interpreter-v1 (the same Jupyter, platform/template/templates.h); any other
 * uri is itself a template name. */
static const char *image_template(const char *uri)
{
  static const char repo[] = "opensandbox/code-interpreter";
  const char *p = uri, *slash = strchr(uri, '/');
  /* a registry host: a first component holding '.' or ':', or localhost (Docker's rule) */
  if (slash &&
      (memchr(uri, '.', (size_t)(slash - uri)) || memchr(uri, ':', (size_t)(slash - uri)) ||
       (slash - uri == 9 && strncmp(uri, "localhost", 9) == 0)))
    p = slash + 1;
  size_t l = strlen(repo);
  if (strncmp(p, repo, l) == 0 && (p[l] == 0 || (p[l] == ':' && p[l + 1] && !strchr(p + l, '/'))))
    return "code-interpreter-v1";
  return uri;
}

/* What image.uri may name, for the refusal: the built-ins and the built templates. */
static void known_templates(char *out, size_t n)
{
  size_t w = (size_t)snprintf(out, n,
                              "base, code-interpreter-v1 (also as "
                              "opensandbox/code-interpreter[:tag])");
  abx_tstore_lock();
  for (struct abx_ttemplate *t = abx_tstore_head(); t && w < n; t = t->next)
    w += (size_t)snprintf(out + w, n - w, ", %s", t->name);
  abx_tstore_unlock();
}

static int validate_rest(json_t *req, int from_snapshot, long long *timeout, int *millis,
                         int *mem_mb, const char **code, char *msg, size_t n);

/* Validate `req` into the out-parameters; 0, or -1 with (status 400) *code and msg. An absent
 * entrypoint of a create from snapshotId is filled in (the default restore entrypoint). */
static int validate(json_t *req, long long *timeout, int *millis, int *mem_mb, const char **code,
                    char *msg, size_t n)
{
  *code = OPENSANDBOX_E_INVALID;
  const char *k;
  json_t *v;
  json_object_foreach(req, k, v)
  {
    size_t i = 0;
    while (i < sizeof known_keys / sizeof known_keys[0] && strcmp(known_keys[i], k) != 0)
      i++;
    if (i == sizeof known_keys / sizeof known_keys[0])
      BAD("unknown field '%.64s': CreateSandboxRequest has image, snapshotId, platform, timeout, "
          "resourceLimits, env, metadata, entrypoint, networkPolicy, credentialProxy, "
          "secureAccess, volumes, extensions",
          k);
  }
  *code = OPENSANDBOX_E_NOT_SUPPORTED;
  static const char *const refused[] = {"credentialProxy", "volumes"};
  for (size_t i = 0; i < 2; i++)
    if (present(req, refused[i]))
      BAD("field '%s' cannot be honoured by the local opensandbox flavor", refused[i]);
  json_t *ext = json_object_get(req, "extensions");
  if (ext && !json_is_null(ext) && (!json_is_object(ext) || json_object_size(ext) > 0))
    BAD("field 'extensions' cannot be honoured by the local opensandbox flavor (no key is "
        "known here)");
  *code = OPENSANDBOX_E_INVALID;
  json_t *img = json_object_get(req, "image"), *uri = json_object_get(img, "uri");
  if (present(req, "snapshotId") == present(req, "image")) /* schema.py: exactly one */
    BAD("Exactly one of image or snapshotId must be provided.");
  if (present(req, "snapshotId"))
    return validate_rest(req, 1, timeout, millis, mem_mb, code, msg, n);
  json_object_foreach(img, k, v) if (strcmp(k, "uri") != 0)
  {
    *code = strcmp(k, "auth") == 0 ? OPENSANDBOX_E_NOT_SUPPORTED : OPENSANDBOX_E_INVALID;
    BAD("field 'image.%.40s' %s", k,
        strcmp(k, "auth") == 0 ? "cannot be honoured: image.uri "
                                 "names a local template, pulled from no registry"
                               : "is unknown: ImageSpec has uri and auth");
  }
  if (!json_is_object(img) || !json_is_string(uri) || !*json_string_value(uri))
    BAD("field 'image' must be {uri: string} with a non-empty uri (a local template name)");
  return validate_rest(req, 0, timeout, millis, mem_mb, code, msg, n);
}

/* The fields after the startup source: entrypoint (optional when `from_snapshot`: then
 * snapshot_restore.py's default), resourceLimits, env, metadata, timeout, secureAccess,
 * platform. */
static int validate_rest(json_t *req, int from_snapshot, long long *timeout, int *millis,
                         int *mem_mb, const char **code, char *msg, size_t n)
{
  json_t *v;
  json_t *sid = json_object_get(req, "snapshotId");
  if (from_snapshot && (!json_is_string(sid) || !json_string_length(sid)))
    BAD("field 'snapshotId' must be a non-empty string");
  json_t *ep = json_object_get(req, "entrypoint");
  if ((!ep || json_is_null(ep)) && from_snapshot) {
    ep = json_pack("[s,s,s]", "tail", "-f", "/dev/null"); /* DEFAULT_SNAPSHOT_RESTORE_ENTRYPOINT */
    json_object_set_new(req, "entrypoint", ep);
  }
  if (!ep || json_is_null(ep))
    BAD("Entrypoint is required when image is provided.");
  if (!json_is_array(ep))
    BAD("field 'entrypoint' must be an array of strings");
  if (json_array_size(ep) == 0 || !json_string_length(json_array_get(ep, 0))) {
    *code = OPENSANDBOX_E_ENTRYPOINT;
    BAD("Entrypoint must contain at least one command.");
  }
  size_t i;
  json_array_foreach(ep, i, v) if (!json_is_string(v))
      BAD("field 'entrypoint[%zu]' must be a string", i);
  json_t *rl = json_object_get(req, "resourceLimits");
  if (!rl || json_is_null(rl))
    BAD("resourceLimits is required when poolRef is not provided.");
  if (str_map(req, "resourceLimits", msg, n) || limits(rl, millis, mem_mb, msg, n) ||
      str_map(req, "env", msg, n) || str_map(req, "metadata", msg, n))
    return -1;
  json_t *md = json_object_get(req, "metadata");
  if (json_is_object(md) && metadata_ok(md, msg, n) != 0) {
    *code = OPENSANDBOX_E_METADATA;
    return -1;
  }
  json_t *t = json_object_get(req, "timeout"), *sa = json_object_get(req, "secureAccess");
  if (t && !json_is_null(t) &&
      (!json_is_integer(t) || json_integer_value(t) < OPENSANDBOX_MIN_TIMEOUT_S))
    BAD("field 'timeout' must be an integer >= %d (seconds) or null (no expiration)",
        OPENSANDBOX_MIN_TIMEOUT_S);
  *timeout = json_is_integer(t) ? json_integer_value(t) : -1;
  if (*timeout > ABX_MAX_TIMEOUT_S)
    BAD("Sandbox timeout %llds exceeds configured maximum of %ds.", *timeout, ABX_MAX_TIMEOUT_S);
  if (sa && !json_is_boolean(sa) && !json_is_null(sa))
    BAD("field 'secureAccess' must be a boolean");
  json_t *pf = json_object_get(req, "platform");
  return pf && !json_is_null(pf) ? platform_ok(pf, msg, n) : 0;
}

/* The template of the startup source: snapshot `snap` (404 SNAPSHOT::NOT_FOUND when it is not
 * one of this serve's) or image `uri` (500 DOCKER::SANDBOX_IMAGE_PULL_FAILED when no local
 * template has that name); NULL with the refusal queued in *refused. */
static struct abx_template *source_template(struct MHD_Connection *c, const char *uri,
                                            const char *snap, enum MHD_Result *refused)
{
  char msg[600];
  if (snap && !opensandbox_snapshot_exists(snap)) { /* snapshot_restore.py */
    snprintf(msg, sizeof msg, "Snapshot %.64s not found", snap);
    *refused = opensandbox_error(c, 404, OPENSANDBOX_E_SNAP_NOT_FOUND, msg);
    return NULL;
  }
  struct abx_template *t = abx_template_get(snap ? snap : image_template(uri), 1);
  if (!t && snap)
    *refused = opensandbox_error(c, 500, OPENSANDBOX_E_INTERNAL,
                                 "the snapshot's template is gone from the store");
  if (t || snap)
    return t;
  char known[300];
  known_templates(known, sizeof known);
  /* the real Docker runtime's answer to an image it cannot pull: 500
   * DOCKER::SANDBOX_IMAGE_PULL_FAILED "Failed to pull image X: ..." (server/opensandbox_server/
   * services/docker/container_ops.py); here every image is a local template */
  snprintf(msg, sizeof msg,
           "Failed to pull image %.100s: not a local template (field "
           "'image.uri'; known: %s)",
           uri, known);
  *refused = opensandbox_error(c, 500, OPENSANDBOX_E_IMAGE_PULL, msg);
  return NULL;
}

enum MHD_Result opensandbox_create(struct MHD_Connection *c, const char *body, size_t len)
{
  json_error_t je;
  json_t *req = body && len ? json_loadb(body, len, 0, &je) : NULL;
  char msg[600];
  const char *code = OPENSANDBOX_E_INVALID;
  long long timeout = -1;
  int millis = 0, mem_mb = 0;
  if (!json_is_object(req)) {
    json_decref(req);
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID,
                             "request body must be a JSON object (CreateSandboxRequest)");
  }
  if (validate(req, &timeout, &millis, &mem_mb, &code, msg, sizeof msg) != 0) {
    json_decref(req);
    return opensandbox_error(c, 400, code, msg);
  }
  const char *uri = json_string_value(json_object_get(json_object_get(req, "image"), "uri"));
  const char *snap = json_string_value(json_object_get(req, "snapshotId"));
  enum MHD_Result refused;
  struct abx_template *t = source_template(c, uri, snap, &refused);
  if (!t) {
    json_decref(req);
    return refused;
  }
  /* networkPolicy: the egress sidecar's starting policy (egress.c); none: allow-all */
  json_t *pol = NULL, *np = json_object_get(req, "networkPolicy");
  if (np && !json_is_null(np)
          ? opensandbox_policy_parse(np, &pol, msg, sizeof msg) != 0
          : !(pol = json_pack("{s:s,s:[]}", "defaultAction", "allow", "egress"))) {
    abx_template_put(t, 1);
    json_decref(req);
    return opensandbox_error(c, 400, OPENSANDBOX_E_INVALID, msg);
  }
  json_t *net = opensandbox_policy_network(pol);
  int cpu = millis ? (millis + 999) / 1000 : 0; /* 0: the template's (sandbox.h) */
  if (!cpu != !mem_mb) { /* sandbox.c takes both or neither from the template */
    cpu = cpu ? cpu : t->cpu_count;
    mem_mb = mem_mb ? mem_mb : t->memory_mb;
  }
  /* the policy's outbound rules; public traffic, no token (network.h) */
  struct abx_sandbox_spec spec = {.tmpl = t,
                                  .network = net,
                                  .metadata = json_object_get(req, "metadata"),
                                  .secure = json_is_true(json_object_get(req, "secureAccess")),
                                  .cpu_count = cpu,
                                  .memory_mb = mem_mb,
                                  .defer_start = 1};
  struct opensandbox_rec *r = calloc(1, sizeof *r);
  int st = 500;
  struct abx_sandbox *sb = r ? abx_sandbox_new(&spec, &st, msg, sizeof msg) : NULL;
  abx_template_put(t, 1); /* the sandbox holds its own */
  json_decref(net);
  if (!sb) {
    json_decref(pol);
    const char *why = r ? "cannot prepare the sandbox (randomness or network)" : "out of memory";
    free(r);
    json_decref(req);
    return opensandbox_error(c, 500, OPENSANDBOX_E_INTERNAL, why);
  }
  memcpy(r->id, sb->id, sizeof r->id);
  r->state = OPENSANDBOX_PENDING;
  r->created_ns = r->transition_ns = abx_now_ns();
  r->expires_ns = timeout > 0 ? r->created_ns + timeout * 1000000000LL : OPENSANDBOX_NEVER;
  snprintf(r->image, sizeof r->image, "%s", uri ? uri : "");
  snprintf(r->snapshot_id, sizeof r->snapshot_id, "%s", snap ? snap : "");
  r->entrypoint = json_deep_copy(json_object_get(req, "entrypoint"));
  r->metadata = json_deep_copy(sb->metadata);
  json_t *pf = json_object_get(req, "platform");
  r->platform = json_is_object(pf) ? json_deep_copy(pf) : NULL;
  r->secure = sb->secure;
  r->egress = pol;
  memcpy(r->token, sb->token, sizeof r->token);
  json_t *env = json_object_get(req, "env");
  json_t *env_obj = json_is_object(env) ? json_deep_copy(env) : json_object();
  json_t *ep = json_deep_copy(r->entrypoint);
  json_decref(req);
  opensandbox_add(r);
  opensandbox_lock();
  json_t *out = opensandbox_sandbox_json(r, 1);
  opensandbox_unlock();
  char loc[64];
  snprintf(loc, sizeof loc, "/v1/sandboxes/%s", sb->id);
  if (opensandbox_worker_create(sb, env_obj, ep, millis) !=
      0) { /* the worker owns them from here */
    opensandbox_lock();
    if ((r = opensandbox_find(loc + 13)) != NULL)
      opensandbox_drop(r);
    opensandbox_unlock();
    json_decref(out);
    return opensandbox_error(c, 500, OPENSANDBOX_E_INTERNAL, "cannot start a worker thread");
  }
  return opensandbox_send(c, 202, out, loc);
}
