/*
 * volume.c: volumes as host directories under the state dir. Contract in volume.h.
 */
#include "volume.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

struct vol {
  char id[32];
  char name[64];
  char token[72];
  int uses;
  struct vol *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct vol *g_vols; /* newest first */
static char g_dir[4096];

int abx_volume_init(const char *state_dir)
{
  snprintf(g_dir, sizeof g_dir, "%s/volumes", state_dir);
  return mkdir(g_dir, 0711) == 0 || errno == EEXIST ? 0 : -1;
}

static int name_ok(const char *n)
{
  size_t len = strlen(n);
  if (len == 0 || len > 63)
    return 0;
  for (size_t i = 0; i < len; i++) {
    char c = n[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return 0;
  }
  return 1;
}

static struct vol *by_name(const char *name)
{
  for (struct vol *v = g_vols; v; v = v->next)
    if (strcmp(v->name, name) == 0)
      return v;
  return NULL;
}

static struct vol *by_id(const char *id)
{
  for (struct vol *v = g_vols; v; v = v->next)
    if (strcmp(v->id, id) == 0)
      return v;
  return NULL;
}

int abx_volume_create(const char *name, json_t **out, char *msg, size_t msglen)
{
  if (!name_ok(name)) {
    snprintf(msg, msglen,
             "invalid volume name: must match ^[a-zA-Z0-9_-]+$ (at most 63 characters)");
    return 400;
  }
  struct vol *v = calloc(1, sizeof *v);
  if (!v) {
    snprintf(msg, msglen, "out of memory");
    return 500;
  }
  memcpy(v->id, "vol", 3);
  snprintf(v->name, sizeof v->name, "%s", name);
  if (abx_rand_alnum(v->id + 3, 20) != 0 || abx_rand_hex(v->token, 64) != 0) {
    free(v);
    snprintf(msg, msglen, "no randomness available");
    return 500;
  }
  pthread_mutex_lock(&mu);
  if (by_name(name)) {
    pthread_mutex_unlock(&mu);
    free(v);
    snprintf(msg, msglen, "volume with name '%s' already exists", name);
    return 409;
  }
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", g_dir, v->id);
  if (mkdir(p, 0755) != 0 || chown(p, 1000, 1000) != 0 || chmod(p, 0755) != 0) {
    int e = errno;
    rmdir(p);
    pthread_mutex_unlock(&mu);
    free(v);
    snprintf(msg, msglen, "cannot create the volume directory: %s", strerror(e));
    return 500;
  }
  v->next = g_vols;
  g_vols = v;
  *out = json_pack("{s:s,s:s,s:s}", "volumeID", v->id, "name", v->name, "token", v->token);
  pthread_mutex_unlock(&mu);
  return 0;
}

json_t *abx_volume_list(void)
{
  json_t *arr = json_array();
  pthread_mutex_lock(&mu);
  for (struct vol *v = g_vols; v && arr; v = v->next)
    json_array_append_new(arr, json_pack("{s:s,s:s}", "volumeID", v->id, "name", v->name));
  pthread_mutex_unlock(&mu);
  return arr;
}

json_t *abx_volume_get(const char *id)
{
  pthread_mutex_lock(&mu);
  struct vol *v = by_id(id);
  json_t *o =
      v ? json_pack("{s:s,s:s,s:s}", "volumeID", v->id, "name", v->name, "token", v->token) : NULL;
  pthread_mutex_unlock(&mu);
  return o;
}

int abx_volume_delete(const char *id, char *msg, size_t msglen)
{
  pthread_mutex_lock(&mu);
  struct vol **pp = &g_vols;
  while (*pp && strcmp((*pp)->id, id) != 0)
    pp = &(*pp)->next;
  struct vol *v = *pp;
  if (!v) {
    pthread_mutex_unlock(&mu);
    snprintf(msg, msglen, "volume '%.40s' not found", id);
    return 404;
  }
  if (v->uses > 0) {
    pthread_mutex_unlock(&mu);
    snprintf(msg, msglen, "volume '%s' is mounted by %d sandbox(es)", v->name, v->uses);
    return 400;
  }
  *pp = v->next;
  pthread_mutex_unlock(&mu);
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", g_dir, v->id);
  abx_rmtree(p);
  free(v);
  return 0;
}

int abx_volume_use(const char *name, char **dir, char *msg, size_t msglen)
{
  pthread_mutex_lock(&mu);
  struct vol *v = by_name(name);
  if (!v) {
    pthread_mutex_unlock(&mu);
    snprintf(msg, msglen, "volume '%.63s' not found", name);
    return 404;
  }
  if (asprintf(dir, "%s/%s", g_dir, v->id) < 0) {
    pthread_mutex_unlock(&mu);
    *dir = NULL;
    snprintf(msg, msglen, "out of memory");
    return 500;
  }
  v->uses++;
  pthread_mutex_unlock(&mu);
  return 0;
}

void abx_volume_release(const char *name)
{
  pthread_mutex_lock(&mu);
  struct vol *v = by_name(name);
  if (v && v->uses > 0)
    v->uses--;
  pthread_mutex_unlock(&mu);
}
