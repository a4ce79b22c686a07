/*
 * users.c: sandbox users (Basic header, default user), path resolution and the per-thread
 * filesystem identity used to run file operations with the user's permissions.
 * Source: docs/protocol/envd-protocol.md §4.4 (user, cwd resolution), §5.2, §6.2.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/envd_int.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Users found by name, kept while the files NSS reads them from keep their identity: a lookup
 * through glibc (getpwnam_r + getgrouplist) reads nsswitch.conf, passwd and group and, with the
 * `systemd` NSS module of Debian's default nsswitch.conf, probes a dozen userdb directories: about
 * 80 syscalls per Start; three stat() calls check the cache. useradd/usermod/groupadd replace
 * these files (a new inode, a new mtime), so a changed user is looked up again. */
#define USER_CACHE 8
static const char *const g_user_files[] = {"/etc/passwd", "/etc/group", "/etc/nsswitch.conf"};
#define USER_FILES (sizeof g_user_files / sizeof g_user_files[0])
struct file_id {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
};
static pthread_mutex_t g_user_mu = PTHREAD_MUTEX_INITIALIZER;
static struct envd_user g_users[USER_CACHE];
static int g_nusers, g_user_next;
static struct file_id g_user_ids[USER_FILES];

static void files_now(struct file_id ids[USER_FILES])
{
  memset(ids, 0, sizeof(struct file_id) * USER_FILES);
  for (size_t i = 0; i < USER_FILES; i++) {
    struct stat st;
    if (stat(g_user_files[i], &st) == 0)
      ids[i] = (struct file_id){st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
  }
}

/* 1 with *u filled when `name` is cached for files whose identity is `ids`; else 0 (and the
 * cache is emptied when the files changed). */
static int cache_get(const char *name, const struct file_id ids[USER_FILES], struct envd_user *u)
{
  int hit = 0;
  pthread_mutex_lock(&g_user_mu);
  if (memcmp(ids, g_user_ids, sizeof g_user_ids) != 0) {
    memcpy(g_user_ids, ids, sizeof g_user_ids);
    g_nusers = g_user_next = 0;
  }
  for (int i = 0; i < g_nusers && !hit; i++)
    if (strcmp(g_users[i].name, name) == 0) {
      *u = g_users[i];
      hit = 1;
    }
  pthread_mutex_unlock(&g_user_mu);
  return hit;
}

static void cache_put(const struct file_id ids[USER_FILES], const struct envd_user *u)
{
  pthread_mutex_lock(&g_user_mu);
  if (memcmp(ids, g_user_ids, sizeof g_user_ids) == 0) { /* not changed meanwhile */
    g_users[g_user_next] = *u;
    g_user_next = (g_user_next + 1) % USER_CACHE;
    if (g_nusers < USER_CACHE)
      g_nusers++;
  }
  pthread_mutex_unlock(&g_user_mu);
}

int envd_user_lookup(struct envd *e, const char *name, struct envd_user *u, struct envd_err *err)
{
  char def[64] = "root";
  if (!name || !*name) {
    pthread_mutex_lock(&e->mu);
    if (e->default_user && *e->default_user)
      snprintf(def, sizeof def, "%s", e->default_user);
    pthread_mutex_unlock(&e->mu);
    name = def;
  }
  struct file_id ids[USER_FILES];
  files_now(ids);
  if (strlen(name) < sizeof u->name && cache_get(name, ids, u))
    return 0;
  struct passwd pw, *res = NULL;
  char buf[4096];
  if (strlen(name) >= sizeof u->name || getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res)
    return envd_fail(err, "unauthenticated", "invalid username: '%s'", name);
  memset(u, 0, sizeof *u);
  snprintf(u->name, sizeof u->name, "%s", name);
  u->uid = pw.pw_uid;
  u->gid = pw.pw_gid;
  snprintf(u->home, sizeof u->home, "%s", pw.pw_dir && *pw.pw_dir ? pw.pw_dir : "/");
  int ng = (int)(sizeof u->groups / sizeof u->groups[0]);
  if (getgrouplist(name, pw.pw_gid, u->groups, &ng) < 0) {
    u->groups[0] = pw.pw_gid;
    ng = 1;
  }
  u->ngroups = ng;
  cache_put(ids, u);
  return 0;
}

int envd_user_from_basic(struct envd *e, struct MHD_Connection *c, struct envd_user *u,
                         struct envd_err *err)
{
  const char *h = envd_header(c, "Authorization");
  if (!h || !*h)
    return envd_user_lookup(e, NULL, u, err);
  if (strncasecmp(h, "Basic ", 6) != 0)
    return envd_fail(err, "unauthenticated", "invalid authorization header");
  size_t n = 0;
  unsigned char *dec = abx_b64_decode_alloc(h + 6, 0, &n);
  if (!dec)
    return envd_fail(err, "unauthenticated", "invalid authorization header");
  char name[128];
  size_t k = 0;
  while (k < n && dec[k] != ':' && k + 1 < sizeof name) {
    name[k] = (char)dec[k];
    k++;
  }
  name[k] = 0;
  bool bad = memchr(name, 0, k) != NULL;
  free(dec);
  if (bad || k == 0)
    return envd_fail(err, "unauthenticated", "invalid username: '%s'", name);
  return envd_user_lookup(e, name, u, err);
}

char *envd_path_clean(const char *p)
{
  size_t n = strlen(p);
  char *out = malloc(n + 2);
  if (!out)
    return NULL;
  size_t o = 0;
  out[o++] = '/';
  const char *s = p;
  while (*s) {
    while (*s == '/')
      s++;
    if (!*s)
      break;
    const char *e = strchr(s, '/');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len == 1 && s[0] == '.') {
      /* skip */
    } else if (len == 2 && s[0] == '.' && s[1] == '.') {
      if (o > 1) {
        o--; /* drop trailing '/' */
        while (o > 1 && out[o - 1] != '/')
          o--;
      }
    } else {
      memcpy(out + o, s, len);
      o += len;
      out[o++] = '/';
    }
    s += len;
  }
  if (o > 1)
    o--; /* trailing slash */
  out[o] = 0;
  return out;
}

char *envd_resolve_path(struct envd *e, const struct envd_user *u, const char *path,
                        struct envd_err *err)
{
  char *raw = NULL;
  if (!path || !*path) {
    pthread_mutex_lock(&e->mu);
    const char *wd = e->default_workdir && *e->default_workdir ? e->default_workdir : u->home;
    raw = strdup(wd);
    pthread_mutex_unlock(&e->mu);
  } else if (path[0] == '~') {
    if (path[1] != 0 && path[1] != '/') {
      envd_fail(err, "invalid_argument", "path '%s' cannot be expanded: only ~ is supported", path);
      return NULL;
    }
    if (asprintf(&raw, "%s/%s", u->home, path + 1) < 0)
      raw = NULL;
  } else if (path[0] != '/') {
    if (asprintf(&raw, "%s/%s", u->home, path) < 0)
      raw = NULL;
  } else {
    raw = strdup(path);
  }
  if (!raw) {
    envd_fail(err, "internal", "out of memory");
    return NULL;
  }
  char *clean = envd_path_clean(raw);
  free(raw);
  if (!clean)
    envd_fail(err, "internal", "out of memory");
  return clean;
}

void envd_fs_enter(const struct envd_user *u)
{
  /* Raw syscalls: glibc's setgroups() would change every thread of the daemon. */
  syscall(SYS_setgroups, (size_t)u->ngroups, u->groups);
  setfsgid(u->gid);
  setfsuid(u->uid);
}

void envd_fs_leave(void)
{
  setfsuid(0);
  setfsgid(0);
  gid_t none[1] = {0};
  syscall(SYS_setgroups, (size_t)1, none);
}

int envd_mkdir_p(const char *path, const struct envd_user *owner)
{
  char *p = strdup(path);
  if (!p)
    return -1;
  size_t n = strlen(p);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] == '/' || p[i] == 0) {
      char saved = p[i];
      p[i] = 0;
      int made = mkdir(p, 0755) == 0;
      if (!made && errno != EEXIST) {
        int er = errno;
        free(p);
        errno = er;
        return -1;
      }
      /* only what this call made changes hands; lchown: never through a symlink put in its place */
      if (made && owner && lchown(p, owner->uid, owner->gid) < 0) {
        int er = errno;
        free(p);
        errno = er;
        return -1;
      }
      p[i] = saved;
    }
  }
  struct stat st;
  int rc = stat(p, &st);
  free(p);
  if (rc < 0)
    return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

const char *envd_errno_code(int err)
{
  switch (err) {
  case ENOENT: return "not_found";
  case EEXIST: return "already_exists";
  case EACCES:
  case EPERM:
  case EROFS: return "permission_denied";
  case ENOTDIR:
  case EISDIR:
  case EINVAL:
  case ENAMETOOLONG: return "invalid_argument";
  case ELOOP: return "failed_precondition";
  case ENOSPC:
  case EDQUOT: return "resource_exhausted";
  default: return "internal";
  }
}
