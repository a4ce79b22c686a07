/*
 * apikeys.c: managed API keys, the access token and their file. Contract in apikeys.h.
 */
#include "apikeys.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

#define KEY_HEX 40 /* keys.GenerateKey: 20 random bytes, hex */
#define NAME_MAX_LEN 255
#define FILE_VERSION 1

struct key {
  char id[37];
  char name[NAME_MAX_LEN + 1];
  char hash[65]; /* SHA-256 of the whole key, hex */
  char mask_prefix[3], mask_suffix[5];
  int64_t created_ns, last_used_ns; /* last_used 0: never */
  struct key *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct key *g_keys; /* creation order */
static char g_path[4200];
static char g_token[64];
static char g_user[37];  /* the local admin user, createdBy of every key */
static int g_used_dirty; /* a lastUsed changed since the file was written */
static int g_ready;

/* SHA-256 of `s` as hex into out. 0, or -1 when OpenSSL fails (then out is not set). */
static int sha256_hex(const char *s, char out[65])
{
  unsigned char md[32];
  unsigned int len = 0;
  if (EVP_Digest(s, strlen(s), md, &len, EVP_sha256(), NULL) != 1 || len != 32)
    return -1;
  for (int i = 0; i < 32; i++)
    snprintf(out + 2 * i, 3, "%02x", md[i]);
  return 0;
}

static int new_uuid(char out[37])
{
  char h[33];
  if (abx_rand_hex(h, 32) != 0)
    return -1;
  h[12] = '4';                       /* version 4 */
  h[16] = "89ab"[(h[16] - '0') & 3]; /* RFC 4122 variant (any digit works: & 3) */
  snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
  return 0;
}

int abx_apikeys_uuid_ok(const char *id)
{
  if (strlen(id) != 36)
    return 0;
  for (int i = 0; i < 36; i++) {
    char c = id[i];
    int dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-'
             : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
      return 0;
  }
  return 1;
}

static json_t *time_json(int64_t ns)
{
  if (!ns)
    return json_null();
  char t[32];
  abx_rfc3339(ns, t);
  return json_string(t);
}

/* TeamAPIKey (no key value). Under mu. */
static json_t *key_json(const struct key *k)
{
  json_t *o = json_pack("{s:s,s:s,s:{s:s,s:i,s:s,s:s},s:o,s:{s:s,s:n},s:o}", "id", k->id, "name",
                        k->name, "mask", "prefix", ABX_API_KEY_PREFIX, "valueLength", KEY_HEX,
                        "maskedValuePrefix", k->mask_prefix, "maskedValueSuffix", k->mask_suffix,
                        "createdAt", time_json(k->created_ns), "createdBy", "id", g_user, "email",
                        "lastUsed", time_json(k->last_used_ns));
  return o;
}

/* Writes the whole file (tmp + fsync + rename), 0600. Under mu. 0 or -1 (errno). */
static int save_locked(void)
{
  json_t *arr = json_array();
  for (struct key *k = g_keys; k && arr; k = k->next) {
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "id", k->id, "name", k->name, "sha256",
                          k->hash, "maskedValuePrefix", k->mask_prefix, "maskedValueSuffix",
                          k->mask_suffix, "createdNs", (json_int_t)k->created_ns, "lastUsedNs",
                          (json_int_t)k->last_used_ns);
    if (!o || json_array_append_new(arr, o) != 0) {
      json_decref(arr);
      errno = ENOMEM;
      return -1;
    }
  }
  json_t *doc =
      arr ? json_pack("{s:i,s:s,s:o}", "version", FILE_VERSION, "user", g_user, "keys", arr) : NULL;
  char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  if (!s) {
    errno = ENOMEM;
    return -1;
  }
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.tmp", g_path);
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  size_t len = strlen(s), off = 0;
  while (fd >= 0 && off < len) {
    ssize_t w = write(fd, s + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  free(s);
  int ok = fd >= 0 && off == len && fchmod(fd, 0600) == 0 && fsync(fd) == 0;
  int e = errno;
  if (fd >= 0)
    close(fd);
  if (!ok || rename(tmp, g_path) != 0) {
    e = ok ? errno : e;
    unlink(tmp);
    errno = e;
    return -1;
  }
  g_used_dirty = 0;
  return 0;
}

/* Parses the file's text into g_keys and g_user. 0 or -1 with a message. */
static int load_text(const char *text, size_t len, char *msg, size_t n)
{
  json_error_t je;
  json_t *doc = json_loadb(text, len, 0, &je);
  json_t *keys = doc ? json_object_get(doc, "keys") : NULL;
  json_t *user = doc ? json_object_get(doc, "user") : NULL;
  json_t *ver = doc ? json_object_get(doc, "version") : NULL;
  if (!doc || !json_is_array(keys) || !json_is_string(user) ||
      !abx_apikeys_uuid_ok(json_string_value(user)) || json_integer_value(ver) != FILE_VERSION) {
    snprintf(msg, n, "%s: not an API-key file of version %d (%s)", g_path, FILE_VERSION,
             doc ? "fields version, user, keys" : je.text);
    json_decref(doc);
    return -1;
  }
  snprintf(g_user, sizeof g_user, "%s", json_string_value(user));
  struct key **tail = &g_keys;
  size_t i;
  json_t *o;
  json_array_foreach(keys, i, o)
  {
    const char *id = json_string_value(json_object_get(o, "id"));
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *hash = json_string_value(json_object_get(o, "sha256"));
    const char *mp = json_string_value(json_object_get(o, "maskedValuePrefix"));
    const char *ms = json_string_value(json_object_get(o, "maskedValueSuffix"));
    json_t *cr = json_object_get(o, "createdNs"), *lu = json_object_get(o, "lastUsedNs");
    struct key *k = calloc(1, sizeof *k);
    if (!k || !id || !abx_apikeys_uuid_ok(id) || !name || strlen(name) > NAME_MAX_LEN || !hash ||
        strlen(hash) != 64 || !mp || strlen(mp) != 2 || !ms || strlen(ms) != 4 ||
        !json_is_integer(cr) || !json_is_integer(lu)) {
      free(k);
      snprintf(msg, n,
               "%s: keys[%zu] is malformed (id, name, sha256, maskedValuePrefix, "
               "maskedValueSuffix, createdNs, lastUsedNs)",
               g_path, i);
      json_decref(doc);
      return -1;
    }
    snprintf(k->id, sizeof k->id, "%s", id);
    snprintf(k->name, sizeof k->name, "%s", name);
    snprintf(k->hash, sizeof k->hash, "%s", hash);
    snprintf(k->mask_prefix, sizeof k->mask_prefix, "%s", mp);
    snprintf(k->mask_suffix, sizeof k->mask_suffix, "%s", ms);
    k->created_ns = json_integer_value(cr);
    k->last_used_ns = json_integer_value(lu);
    *tail = k;
    tail = &k->next;
  }
  json_decref(doc);
  return 0;
}

int abx_apikeys_choose_token(char out[64], char *msg, size_t n)
{
  const char *env = getenv("ABX_LOCAL_ACCESS_TOKEN");
  size_t pl = sizeof ABX_ACCESS_TOKEN_PREFIX - 1;
  if (env && *env) {
    size_t len = strlen(env);
    int ok = strncmp(env, ABX_ACCESS_TOKEN_PREFIX, pl) == 0 && len > pl && len < 60;
    for (size_t i = pl; ok && i < len; i++)
      ok = (env[i] >= '0' && env[i] <= '9') || (env[i] >= 'a' && env[i] <= 'f');
    if (!ok) {
      snprintf(msg, n, "ABX_LOCAL_ACCESS_TOKEN must match ^sk_e2b_[0-9a-f]{1,52}$");
      return 4;
    }
    memcpy(out, env, len + 1);
    return 0;
  }
  memcpy(out, ABX_ACCESS_TOKEN_PREFIX, pl);
  if (abx_rand_hex(out + pl, KEY_HEX) != 0) {
    snprintf(msg, n, "no randomness for the access token");
    return 1;
  }
  return 0;
}

int abx_apikeys_init(const char *state_dir, const char *access_token, char *msg, size_t n)
{
  snprintf(g_token, sizeof g_token, "%s", access_token);
  snprintf(g_path, sizeof g_path, "%s/api-keys.json", state_dir);
  int fd = open(g_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno != ENOENT) {
    snprintf(msg, n, "%s: %s", g_path, strerror(errno));
    return -1;
  }
  if (fd < 0) {
    if (new_uuid(g_user) != 0) {
      snprintf(msg, n, "no randomness for the admin user's id");
      return -1;
    }
    g_ready = 1;
    return 0;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0777) != 0600 ||
      st.st_uid != geteuid() || st.st_size > 16 * 1024 * 1024) {
    snprintf(msg, n, "%s must be a regular file of this user with mode 0600 (at most 16 MiB)",
             g_path);
    close(fd);
    return -1;
  }
  char *text = malloc((size_t)st.st_size + 1);
  ssize_t got = text ? read(fd, text, (size_t)st.st_size) : -1;
  close(fd);
  if (got != st.st_size) {
    free(text);
    snprintf(msg, n, "%s: cannot read it", g_path);
    return -1;
  }
  int rc = load_text(text, (size_t)got, msg, n);
  free(text);
  g_ready = rc == 0;
  return rc;
}

void abx_apikeys_shutdown(void)
{
  pthread_mutex_lock(&mu);
  if (g_ready && g_used_dirty && save_locked() != 0)
    abx_slog("warning: cannot write %s: %s", g_path, strerror(errno));
  while (g_keys) {
    struct key *k = g_keys;
    g_keys = k->next;
    free(k);
  }
  g_ready = 0;
  pthread_mutex_unlock(&mu);
}

int abx_apikeys_check(const char *key)
{
  size_t pl = sizeof ABX_API_KEY_PREFIX - 1;
  if (!g_ready || strncmp(key, ABX_API_KEY_PREFIX, pl) != 0 || strlen(key) != pl + KEY_HEX)
    return 0;
  char h[65];
  if (sha256_hex(key, h) != 0)
    return 0;
  int found = 0;
  pthread_mutex_lock(&mu);
  for (struct key *k = g_keys; k; k = k->next)
    if (CRYPTO_memcmp(k->hash, h, 64) == 0 && !found) {
      found = 1;
      k->last_used_ns = abx_now_ns();
      g_used_dirty = 1;
    }
  pthread_mutex_unlock(&mu);
  return found;
}

int abx_apikeys_path(const char *url)
{
  return strcmp(url, "/api-keys") == 0 || strncmp(url, "/api-keys/", 10) == 0;
}

int abx_apikeys_authorized(struct MHD_Connection *c, enum MHD_Result *sent)
{
  const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  if (!a || !*a) {
    *sent = abx_http_error(c, 401, "authorization header is missing");
    return 0;
  }
  /* Bearer <token>: the scheme name is case-insensitive (RFC 9110 §11.1) */
  int ok = strncasecmp(a, "Bearer ", 7) == 0 && g_token[0];
  const char *t = a + (ok ? 7 : 0);
  while (ok && *t == ' ')
    t++;
  if (ok && strlen(t) == strlen(g_token))
    ok = CRYPTO_memcmp(t, g_token, strlen(g_token)) == 0;
  else
    ok = 0;
  if (!ok)
    *sent = abx_http_error(c, 401, "Invalid access token");
  return ok;
}

static int name_check(const char *name, char *msg, size_t n)
{
  if (!name || !*name || strlen(name) > NAME_MAX_LEN) {
    snprintf(msg, n,
             "validation error: field 'name' must be a non-empty string of at most %d "
             "bytes",
             NAME_MAX_LEN);
    return 400;
  }
  return 0;
}

int abx_apikeys_create(const char *name, json_t **out, char *msg, size_t n)
{
  int rc = name_check(name, msg, n);
  if (rc)
    return rc;
  struct key *k = calloc(1, sizeof *k);
  char raw[sizeof ABX_API_KEY_PREFIX + KEY_HEX];
  memcpy(raw, ABX_API_KEY_PREFIX, sizeof ABX_API_KEY_PREFIX - 1);
  char *hex = raw + sizeof ABX_API_KEY_PREFIX - 1;
  if (!k || new_uuid(k->id) != 0 || abx_rand_hex(hex, KEY_HEX) != 0 ||
      sha256_hex(raw, k->hash) != 0) {
    free(k);
    snprintf(msg, n, "Error when generating team API key: no randomness or no SHA-256");
    return 500;
  }
  snprintf(k->name, sizeof k->name, "%s", name);
  memcpy(k->mask_prefix, hex, 2);               /* keys.MaskKey: identifierValuePrefixLength 2 */
  memcpy(k->mask_suffix, hex + KEY_HEX - 4, 4); /* identifierValueSuffixLength 4 */
  k->created_ns = abx_now_ns();
  pthread_mutex_lock(&mu);
  struct key **tail = &g_keys;
  while (*tail)
    tail = &(*tail)->next;
  *tail = k;
  if (save_locked() != 0) {
    int e = errno;
    *tail = NULL;
    pthread_mutex_unlock(&mu);
    free(k);
    snprintf(msg, n, "Error when creating team API key: cannot write the key file: %s",
             strerror(e));
    return 500;
  }
  json_t *o = key_json(k);
  pthread_mutex_unlock(&mu);
  if (o)
    json_object_set_new(o, "key", json_string(raw));
  OPENSSL_cleanse(raw, sizeof raw);
  if (!o) {
    snprintf(msg, n, "out of memory");
    return 500;
  }
  *out = o;
  return 0;
}

json_t *abx_apikeys_list(void)
{
  json_t *arr = json_array();
  pthread_mutex_lock(&mu);
  for (struct key *k = g_keys; k && arr; k = k->next)
    if (json_array_append_new(arr, key_json(k)) != 0) {
      json_decref(arr);
      arr = NULL;
    }
  pthread_mutex_unlock(&mu);
  return arr;
}

static struct key **find_locked(const char *id)
{
  struct key **pp = &g_keys;
  while (*pp && strcasecmp((*pp)->id, id) != 0)
    pp = &(*pp)->next;
  return pp;
}

int abx_apikeys_rename(const char *id, const char *name, char *msg, size_t n)
{
  int rc = name_check(name, msg, n);
  if (rc)
    return rc;
  pthread_mutex_lock(&mu);
  struct key *k = *find_locked(id);
  if (!k) {
    pthread_mutex_unlock(&mu);
    snprintf(msg, n, "id not found");
    return 404;
  }
  char old[sizeof k->name];
  memcpy(old, k->name, sizeof old);
  snprintf(k->name, sizeof k->name, "%s", name);
  if (save_locked() != 0) {
    int e = errno;
    memcpy(k->name, old, sizeof old);
    pthread_mutex_unlock(&mu);
    snprintf(msg, n, "Error when updating team API key name: %s", strerror(e));
    return 500;
  }
  pthread_mutex_unlock(&mu);
  return 0;
}

int abx_apikeys_delete(const char *id, char *msg, size_t n)
{
  pthread_mutex_lock(&mu);
  struct key **pp = find_locked(id);
  struct key *k = *pp;
  if (!k) {
    pthread_mutex_unlock(&mu);
    snprintf(msg, n, "id not found");
    return 404;
  }
  *pp = k->next;
  if (save_locked() != 0) {
    int e = errno;
    k->next = *pp; /* put it back: a key the file still holds must keep working */
    *pp = k;
    pthread_mutex_unlock(&mu);
    snprintf(msg, n, "Error when deleting API key: %s", strerror(e));
    return 500;
  }
  pthread_mutex_unlock(&mu);
  free(k);
  return 0;
}
