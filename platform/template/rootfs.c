/*
 * rootfs.c: templates, snapshot layers and the per-sandbox overlay root. Contract in rootfs.h.
 */
#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"
#include "template_store.h"
#include "templates.h"

#define MAX_PARTS 9

static const char *const host_dirs[] = {"usr", "etc",   "bin",   "sbin",
                                        "lib", "lib32", "lib64", "libx32"};
static const char *g_parts[MAX_PARTS]; /* [0] = "root", then host parts */
static int g_nparts;
static char g_tdir[4096]; /* <state>/templates */
static char g_bdir[4096]; /* <state>/builtin: built-in templates' layers */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct abx_template *g_list; /* listed templates */
static struct abx_template *g_base;
static unsigned g_seq;

int abx_template_valid_id(const char *name)
{
  size_t n = strlen(name);
  if (n == 0 || n > 63)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '_' || c == '-'));
    if (!ok)
      return 0;
  }
  return 1;
}

static int mk(const char *base, const char *rel, mode_t mode, uid_t uid)
{
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  if (mkdir(p, mode) != 0 && errno != EEXIST)
    return -1;
  return chmod(p, mode) == 0 && chown(p, uid, uid) == 0 ? 0 : -1;
}

static int put_file(const char *base, const char *rel, const char *text, mode_t mode)
{
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    return -1;
  size_t n = strlen(text);
  int ok = write(fd, text, n) == (ssize_t)n && fchmod(fd, mode) == 0;
  close(fd);
  return ok ? 0 : -1;
}

/* Each layer has a subdir per part, so every lowerdir entry exists. */
static int layer_parts(const char *layer)
{
  for (int i = 0; i < g_nparts; i++)
    if (mk(layer, g_parts[i], 0755, 0) != 0)
      return -1;
  return 0;
}

int abx_rootfs_layer_parts(const char *dir)
{
  return layer_parts(dir);
}

struct abx_template *abx_template_base(void)
{
  return g_base;
}

struct abx_template *abx_template_layer(struct abx_template *parent, const char *layer_dir,
                                        char *err, size_t errlen)
{
  if (parent->depth + 1 > ABX_TEMPLATE_MAX_DEPTH) {
    snprintf(err, errlen, "too many layers (at most %d; a step that changes files adds one)",
             ABX_TEMPLATE_MAX_DEPTH);
    return NULL;
  }
  struct abx_template *t = calloc(1, sizeof *t);
  if (!t || !(t->layer = strdup(layer_dir))) {
    free(t);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  snprintf(t->id, sizeof t->id, "%s", parent->id);
  snprintf(t->alias, sizeof t->alias, "%s", parent->alias);
  t->cpu_count = parent->cpu_count;
  t->memory_mb = parent->memory_mb;
  t->created_ns = abx_now_ns();
  t->depth = parent->depth + 1;
  t->keep_layer = 1;
  t->refs = 1;
  pthread_mutex_lock(&mu);
  parent->refs++;
  t->parent = parent;
  pthread_mutex_unlock(&mu);
  return t;
}

static int build_base(const char *layer)
{
  char root[4096];
  snprintf(root, sizeof root, "%s/root", layer);
  if (mkdir(layer, 0755) != 0 || layer_parts(layer) != 0)
    return -1;
  static const struct {
    const char *rel;
    mode_t mode;
    uid_t uid;
  } dirs[] = {{"home", 0755, 0}, {"home/user", 0755, 1000}, {"root", 0700, 0}, {"tmp", 01777, 0},
              {"proc", 0555, 0}, {"dev", 0755, 0},          {"run", 0755, 0},  {"mnt", 0755, 0},
              {"srv", 0755, 0},  {"sys", 0555, 0},          {"opt", 0755, 0},  {"opt/abx", 0755, 0},
              {"var", 0755, 0},  {"var/tmp", 01777, 0}};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    if (mk(root, dirs[i].rel, dirs[i].mode, dirs[i].uid) != 0)
      return -1;
  if (put_file(root, "opt/abx/abxlua", "", 0755) != 0)
    return -1;
  for (int i = 1; i < g_nparts; i++)
    if (mk(root, g_parts[i], 0755, 0) != 0)
      return -1;
  for (size_t i = 0; i < sizeof host_dirs / sizeof host_dirs[0]; i++) {
    char host[64], target[256], p[4096];
    snprintf(host, sizeof host, "/%s", host_dirs[i]);
    struct stat st;
    if (lstat(host, &st) != 0 || !S_ISLNK(st.st_mode))
      continue;
    ssize_t k = readlink(host, target, sizeof target - 1);
    if (k <= 0)
      continue;
    target[k] = 0;
    snprintf(p, sizeof p, "%.4000s/%s", root, host_dirs[i]);
    if (symlink(target, p) != 0)
      return -1;
  }
  char etc[4096];
  snprintf(etc, sizeof etc, "%s/etc", layer);
  if (put_file(etc, "passwd",
               "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n",
               0644) != 0 ||
      put_file(etc, "group", "root:x:0:\nuser:x:1000:\n", 0644) != 0)
    return -1;
  /* E2B's base image lets `user` sudo without a password; /etc/sudoers includes sudoers.d */
  if (mk(etc, "sudoers.d", 0755, 0) != 0 ||
      put_file(etc, "sudoers.d/user", "user ALL=(ALL:ALL) NOPASSWD: ALL\n", 0440) != 0)
    return -1;
  /* The set-user-ID sudo cannot work under bwrap's no_new_privs: `sudo` is abxlua (mounted at
   * /opt/abx/abxlua in every sandbox), a client of envd's broker (platform/envd/sudo.h). Both
   * the PATH one (/usr/local/bin, first, so it survives a package reinstalling /usr/bin/sudo) and
   * /usr/bin/sudo, which shadows the host's. */
  char usr[4096];
  snprintf(usr, sizeof usr, "%s/usr", layer);
  struct stat ust;
  if (stat("/usr", &ust) == 0 && S_ISDIR(ust.st_mode)) {
    if (mk(usr, "local", 0755, 0) != 0 || mk(usr, "local/bin", 0755, 0) != 0 ||
        mk(usr, "bin", 0755, 0) != 0)
      return -1;
    static const char *const links[] = {"local/bin/sudo", "bin/sudo"};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
      char p[4200];
      snprintf(p, sizeof p, "%s/%s", usr, links[i]);
      if (symlink("/opt/abx/abxlua", p) != 0)
        return -1;
    }
  }
  return 0;
}

/* The record of a template serve itself provides (base, the built-in ones): listed, one ref,
 * not deletable, base's CPU and memory. */
static void init_builtin(struct abx_template *t, const char *id)
{
  snprintf(t->id, sizeof t->id, "%s", id);
  snprintf(t->alias, sizeof t->alias, "%s", id);
  t->cpu_count = ABX_BASE_CPU_COUNT;
  t->memory_mb = ABX_BASE_MEMORY_MB;
  t->created_ns = abx_now_ns();
  t->refs = 1;
  t->listed = 1;
  t->builtin = 1;
}

int abx_rootfs_init(const char *state_dir, char *err, size_t errlen)
{
  g_nparts = 0;
  g_parts[g_nparts++] = "root";
  for (size_t i = 0; i < sizeof host_dirs / sizeof host_dirs[0]; i++) {
    char host[64];
    snprintf(host, sizeof host, "/%s", host_dirs[i]);
    struct stat st;
    if (lstat(host, &st) == 0 && S_ISDIR(st.st_mode))
      g_parts[g_nparts++] = host_dirs[i];
  }
  snprintf(g_tdir, sizeof g_tdir, "%s/templates", state_dir);
  if (mkdir(g_tdir, 0700) != 0 && errno != EEXIST) {
    snprintf(err, errlen, "cannot create %s: %s", g_tdir, strerror(errno));
    return -1;
  }
  snprintf(g_bdir, sizeof g_bdir, "%s/builtin", state_dir);
  if (mkdir(g_bdir, 0700) != 0 && errno != EEXIST) {
    snprintf(err, errlen, "cannot create %s: %s", g_bdir, strerror(errno));
    return -1;
  }
  struct abx_template *t = calloc(1, sizeof *t);
  if (!t || asprintf(&t->layer, "%s/base", g_tdir) < 0) {
    free(t);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  abx_rmtree(t->layer); /* a reused --state-dir */
  if (build_base(t->layer) != 0) {
    snprintf(err, errlen, "cannot build the base template in %s: %s", t->layer, strerror(errno));
    free(t->layer);
    free(t);
    return -1;
  }
  init_builtin(t, "base");
  g_base = g_list = t;
  return abx_templates_builtin_init(err, errlen);
}

struct abx_template *abx_template_builtin(const char *id, char *err, size_t errlen)
{
  struct abx_template *t = calloc(1, sizeof *t);
  if (!t || asprintf(&t->layer, "%s/%s", g_bdir, id) < 0) {
    free(t);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  abx_rmtree(t->layer); /* a reused --state-dir */
  if (mkdir(t->layer, 0755) != 0 || layer_parts(t->layer) != 0) {
    snprintf(err, errlen, "cannot create the layer of template '%s' in %s: %s", id, t->layer,
             strerror(errno));
    free(t->layer);
    free(t);
    return NULL;
  }
  init_builtin(t, id);
  t->parent = g_base;
  t->depth = 1;
  pthread_mutex_lock(&mu);
  g_base->refs++; /* the parent ref (unref_locked drops it with t's last) */
  struct abx_template **pp = &g_list;
  while (*pp)
    pp = &(*pp)->next;
  *pp = t;
  pthread_mutex_unlock(&mu);
  return t;
}

/* "<id>", "<id>:default" or "<id>:latest" → id; 0, or -1 when malformed. */
static int ref_id(const char *ref, char out[64])
{
  size_t n = strcspn(ref, ":");
  if (n == 0 || n >= 64)
    return -1;
  if (ref[n] && strcmp(ref + n, ":default") != 0 && strcmp(ref + n, ":latest") != 0)
    return -1;
  memcpy(out, ref, n);
  out[n] = 0;
  return abx_template_valid_id(out) ? 0 : -1;
}

static struct abx_template *find_locked(const char *id)
{
  for (struct abx_template *t = g_list; t; t = t->next)
    if (strcmp(t->id, id) == 0)
      return t;
  return NULL;
}

struct abx_template *abx_template_get(const char *ref, int sandbox)
{
  char id[64];
  if (ref_id(ref, id) != 0)
    return abx_tstore_resolve(ref, sandbox);
  pthread_mutex_lock(&mu);
  struct abx_template *t = find_locked(id);
  if (t) {
    t->refs++;
    t->sandboxes += sandbox ? 1 : 0;
  }
  pthread_mutex_unlock(&mu);
  return t ? t : abx_tstore_resolve(ref, sandbox);
}

void abx_template_ref(struct abx_template *t, int sandbox)
{
  pthread_mutex_lock(&mu);
  t->refs++;
  t->sandboxes += sandbox ? 1 : 0;
  pthread_mutex_unlock(&mu);
}

/* Under the mutex; returns the chain of templates whose last ref went (to free unlocked). */
static struct abx_template *unref_locked(struct abx_template *t)
{
  struct abx_template *dead = NULL;
  while (t && --t->refs == 0) {
    struct abx_template *parent = t->parent;
    t->next = dead;
    dead = t;
    t = parent;
  }
  return dead;
}

static void free_dead(struct abx_template *dead)
{
  while (dead) {
    struct abx_template *next = dead->next;
    if (dead->layer && !dead->keep_layer)
      abx_rmtree(dead->layer);
    free(dead->layer);
    free(dead->start_cmd);
    free(dead->ready_cmd);
    json_decref(dead->env_vars);
    free(dead->default_user);
    free(dead->default_workdir);
    free(dead);
    dead = next;
  }
}

void abx_template_put(struct abx_template *t, int sandbox)
{
  if (!t)
    return;
  pthread_mutex_lock(&mu);
  t->sandboxes -= sandbox ? 1 : 0;
  struct abx_template *dead = unref_locked(t);
  pthread_mutex_unlock(&mu);
  free_dead(dead);
}

/* lowerdir option for part `pi` of `t`: malloc'd "lowerdir=a:b:...", NULL on OOM. */
static char *lowerdirs(const struct abx_template *t, int pi)
{
  size_t cap = 64, len = 0;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  len = (size_t)snprintf(s, cap, "lowerdir=");
  for (const struct abx_template *l = t; l; l = l->parent) {
    size_t need = strlen(l->layer) + strlen(g_parts[pi]) + 3;
    if (len + need + 8 >= cap) {
      cap = (len + need + 8) * 2;
      char *ns = realloc(s, cap);
      if (!ns) {
        free(s);
        return NULL;
      }
      s = ns;
    }
    len +=
        (size_t)snprintf(s + len, cap - len, "%s%s/%s", l == t ? "" : ":", l->layer, g_parts[pi]);
  }
  if (pi > 0) {
    char *ns = realloc(s, len + strlen(g_parts[pi]) + 3);
    if (!ns) {
      free(s);
      return NULL;
    }
    s = ns;
    sprintf(s + len, ":/%s", g_parts[pi]);
  }
  return s;
}

int abx_rootfs_mount(const struct abx_template *t, const char *sbdir, char *err, size_t errlen)
{
  char up[4096], wk[4096], merged[4096];
  snprintf(up, sizeof up, "%s/upper", sbdir);
  snprintf(wk, sizeof wk, "%s/work", sbdir);
  snprintf(merged, sizeof merged, "%s/rootfs", sbdir);
  if (mkdir(up, 0755) != 0 || mkdir(wk, 0700) != 0 || mkdir(merged, 0755) != 0 ||
      layer_parts(up) != 0 || layer_parts(wk) != 0) {
    snprintf(err, errlen, "cannot create the overlay dirs: %s", strerror(errno));
    return -1;
  }
  int nparts = abx_template_is_image(t) ? 1 : g_nparts; /* an image: its own /usr, /etc... */
  for (int i = 0; i < nparts; i++) {
    char *low = lowerdirs(t, i), *opts = NULL, target[4096];
    if (!low || asprintf(&opts, "%s,upperdir=%s/%s,workdir=%s/%s", low, up, g_parts[i], wk,
                         g_parts[i]) < 0) {
      free(low);
      snprintf(err, errlen, "out of memory");
      abx_rootfs_umount(sbdir);
      return -1;
    }
    free(low);
    snprintf(target, sizeof target, "%.4000s%s%s", merged, i ? "/" : "", i ? g_parts[i] : "");
    int rc = mount("overlay", target, "overlay", MS_NODEV, opts);
    int e = errno;
    free(opts);
    if (rc != 0) {
      snprintf(err, errlen, "cannot mount the %s overlay: %s", g_parts[i], strerror(e));
      abx_rootfs_umount(sbdir);
      return -1;
    }
  }
  return 0;
}

void abx_rootfs_umount(const char *sbdir)
{
  char p[4096];
  for (int i = g_nparts - 1; i >= 0; i--) {
    snprintf(p, sizeof p, "%s/rootfs%s%s", sbdir, i ? "/" : "", i ? g_parts[i] : "");
    umount2(p, MNT_DETACH | UMOUNT_NOFOLLOW);
  }
}

static uint64_t g_du_sum; /* nftw has no user pointer: guarded by du_mu */
static pthread_mutex_t du_mu = PTHREAD_MUTEX_INITIALIZER;

static int du_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)path, (void)flag, (void)ftw;
  g_du_sum += (uint64_t)st->st_blocks * 512;
  return 0;
}

uint64_t abx_rootfs_disk_used(const char *sbdir)
{
  char p[4096];
  snprintf(p, sizeof p, "%s/upper", sbdir);
  pthread_mutex_lock(&du_mu);
  g_du_sum = 0;
  nftw(p, du_cb, 16, FTW_PHYS | FTW_MOUNT);
  uint64_t n = g_du_sum;
  pthread_mutex_unlock(&du_mu);
  return n;
}

/* A new template record whose layer, <templates>/<name>, is a copy of the sandbox's upper dirs
 * (<sbdir>/upper: modes, owners, xattrs, whiteouts) with every part present; the caller fills in
 * the rest. NULL with err on failure (nothing left behind). */
static struct abx_template *copy_upper(const char *sbdir, const char *name, char *err,
                                       size_t errlen)
{
  struct abx_template *t = calloc(1, sizeof *t);
  if (!t || asprintf(&t->layer, "%s/%s", g_tdir, name) < 0) {
    free(t);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  char up[4096];
  snprintf(up, sizeof up, "%s/upper", sbdir);
  if (mkdir(t->layer, 0755) != 0 || abx_copy_tree(up, t->layer) != 0 ||
      layer_parts(t->layer) != 0) {
    snprintf(err, errlen, "cannot copy the sandbox's upper layer");
    abx_rmtree(t->layer);
    free(t->layer);
    free(t);
    return NULL;
  }
  return t;
}

int abx_snapshot_create(struct abx_template *from, const char *sbdir, const char *id,
                        const char *source_sandbox, int *status, char *err, size_t errlen)
{
  *status = 400;
  if (!abx_template_valid_id(id)) {
    snprintf(err, errlen, "invalid snapshot name '%.64s': must match ^[a-z0-9][a-z0-9_-]{0,62}$",
             id);
    return -1;
  }
  if (from->depth + 1 > ABX_TEMPLATE_MAX_DEPTH) {
    snprintf(err, errlen, "too many snapshot layers (at most %d)", ABX_TEMPLATE_MAX_DEPTH);
    return -1;
  }
  pthread_mutex_lock(&mu);
  struct abx_template *old = find_locked(id);
  int clash = old && !old->is_snapshot;
  unsigned seq = ++g_seq;
  pthread_mutex_unlock(&mu);
  if (clash) {
    snprintf(err, errlen, "'%s' is the name of a template that is not a snapshot", id);
    return -1;
  }
  *status = 500;
  char name[128];
  snprintf(name, sizeof name, "%.63s.%u", id, seq);
  struct abx_template *t = copy_upper(sbdir, name, err, errlen);
  if (!t)
    return -1;
  snprintf(t->id, sizeof t->id, "%s", id);
  snprintf(t->alias, sizeof t->alias, "%s", id);
  snprintf(t->source_sandbox, sizeof t->source_sandbox, "%s", source_sandbox);
  t->is_snapshot = 1;
  t->cpu_count = from->cpu_count; /* a sandbox's limits are its template's (sandbox.c) */
  t->memory_mb = from->memory_mb;
  t->created_ns = abx_now_ns();
  t->depth = from->depth + 1;
  t->refs = 1;
  t->listed = 1;
  struct abx_template *dead = NULL;
  pthread_mutex_lock(&mu);
  from->refs++;
  t->parent = from;
  old = find_locked(id);
  if (old) { /* reusing a name adds a new build: the old one lives on for its users only */
    for (struct abx_template **pp = &g_list; *pp; pp = &(*pp)->next)
      if (*pp == old) {
        *pp = old->next;
        break;
      }
    old->listed = 0;
    dead = unref_locked(old);
  }
  t->next = g_list;
  g_list = t;
  pthread_mutex_unlock(&mu);
  free_dead(dead);
  return 0;
}

struct abx_template *abx_template_fork_layer(struct abx_template *from, const char *sbdir,
                                             const char *source_sandbox, char *err, size_t errlen)
{
  if (from->depth + 1 > ABX_TEMPLATE_MAX_DEPTH) {
    snprintf(err, errlen, "too many layers to fork (at most %d)", ABX_TEMPLATE_MAX_DEPTH);
    return NULL;
  }
  pthread_mutex_lock(&mu);
  unsigned seq = ++g_seq;
  pthread_mutex_unlock(&mu);
  char name[128];
  snprintf(name, sizeof name, "fork-%.40s.%u", source_sandbox, seq);
  struct abx_template *t = copy_upper(sbdir, name, err, errlen);
  if (!t)
    return NULL;
  snprintf(t->id, sizeof t->id, "%s", from->id);
  snprintf(t->alias, sizeof t->alias, "%s", from->alias);
  snprintf(t->source_sandbox, sizeof t->source_sandbox, "%s", source_sandbox);
  t->created_ns = abx_now_ns();
  t->depth = from->depth + 1;
  t->refs = 1; /* the caller's; never listed */
  pthread_mutex_lock(&mu);
  from->refs++;
  t->parent = from;
  pthread_mutex_unlock(&mu);
  return t;
}

json_t *abx_snapshot_list(const char *sandbox_id, const char *name)
{
  char want[64] = "";
  if (name && *name && ref_id(name, want) != 0)
    return json_array(); /* a malformed name matches nothing */
  json_t *arr = json_array();
  pthread_mutex_lock(&mu);
  for (struct abx_template *t = g_list; t && arr; t = t->next) { /* newest first */
    if (!t->is_snapshot || (sandbox_id && *sandbox_id && strcmp(t->source_sandbox, sandbox_id)) ||
        (want[0] && strcmp(t->id, want)))
      continue;
    char full[80];
    snprintf(full, sizeof full, "%s:default", t->id);
    json_array_append_new(arr, json_pack("{s:s,s:[s],s:s,s:I}", "snapshotID", t->id, "names", full,
                                         "sandboxID", t->source_sandbox, "createdNs",
                                         (json_int_t)t->created_ns));
  }
  pthread_mutex_unlock(&mu);
  return arr;
}

int abx_template_delete(const char *ref, char *msg, size_t msglen)
{
  char id[64];
  if (ref_id(ref, id) != 0) {
    snprintf(msg, msglen, "template '%.64s' not found", ref);
    return 404;
  }
  pthread_mutex_lock(&mu);
  struct abx_template *t = find_locked(id);
  int rc = 0;
  struct abx_template *dead = NULL;
  if (!t) {
    snprintf(msg, msglen, "template '%s' not found", id);
    rc = 404;
  } else if (t == g_base) {
    snprintf(msg, msglen, "the base template cannot be deleted");
    rc = 400;
  } else if (t->builtin) {
    snprintf(msg, msglen, "the built-in template '%s' cannot be deleted", id);
    rc = 400;
  } else if (t->sandboxes > 0) {
    snprintf(msg, msglen, "cannot delete template '%s': %d sandbox(es) still use it", id,
             t->sandboxes);
    rc = 400;
  } else {
    for (struct abx_template **pp = &g_list; *pp; pp = &(*pp)->next)
      if (*pp == t) {
        *pp = t->next;
        break;
      }
    t->listed = 0;
    dead = unref_locked(t);
  }
  pthread_mutex_unlock(&mu);
  free_dead(dead);
  return rc;
}

void abx_rootfs_shutdown(void)
{
  pthread_mutex_lock(&mu);
  struct abx_template *dead = NULL, *t = g_list;
  g_list = NULL;
  g_base = NULL;
  while (t) {
    struct abx_template *next = t->next;
    t->listed = 0;
    struct abx_template *d = unref_locked(t);
    while (d) {
      struct abx_template *dn = d->next;
      d->next = dead;
      dead = d;
      d = dn;
    }
    t = next;
  }
  pthread_mutex_unlock(&mu);
  free_dead(dead);
}
