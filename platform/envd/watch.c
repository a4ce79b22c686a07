/*
 * watch.c: directory watching for filesystem.Filesystem, on inotify: the watch set of one watched
 * directory (request checks, recursive watches, events). WatchDir (server stream) and the
 * polling trio CreateWatcher / GetWatcherEvents / RemoveWatcher are in watch_rpc.c.
 *
 * Requests: {path, recursive?, includeEntry?, allowNetworkMounts?}. The path resolves like every
 *   filesystem path (§5.2) and is checked as the requesting user (fs identity): missing →
 *   not_found, not a directory → invalid_argument, no access → permission_denied, a network
 *   mount (NFS, SMB/CIFS, FUSE) without allowNetworkMounts → invalid_argument.
 * Events: FilesystemEvent {"name":<path relative to the watched dir>,"type":"EVENT_TYPE_*",
 *   "entry"?:EntryInfo}. One message per op bit, in the order CREATE (IN_CREATE, IN_MOVED_TO),
 *   RENAME (IN_MOVED_FROM), CHMOD (IN_ATTRIB), WRITE (IN_MODIFY), REMOVE (IN_DELETE, and
 *   IN_DELETE_SELF of the watched dir itself, named "."), as fsnotify does; IN_CLOSE_WRITE is
 *   not watched (one write gives WRITE events only through IN_MODIFY, like the Go envd). `entry`
 *   only with includeEntry, for CREATE/WRITE/CHMOD, when the stat succeeds. Recursive watches
 *   add a watch for each new or moved-in subdirectory and report what is already inside it as
 *   CREATE events; watches of moved-out or removed subdirectories are dropped.
 * WatchDir and the watchers (watch_rpc.c) are built on this file's watch set (watch_int.h).
 * Source: docs/protocol/envd-protocol.md §5.1, §5.2, §9.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/watch_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define WATCH_MASK                                                                                 \
  (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | IN_MODIFY | IN_DELETE | IN_DELETE_SELF |  \
   IN_ONLYDIR)

void envd_wcore_free(struct envd_wcore *w)
{
  if (w->fd >= 0)
    close(w->fd);
  w->fd = -1;
  for (size_t i = 0; i < w->nwds; i++)
    free(w->wds[i].rel);
  free(w->wds);
  w->wds = NULL;
  w->nwds = w->capwds = 0;
  free(w->root);
  w->root = NULL;
}

static char *join(const char *a, const char *b)
{
  char *s = NULL;
  if (!*a)
    return strdup(b);
  if (!*b)
    return strdup(a);
  return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

static char *abs_path(const struct envd_wcore *w, const char *rel)
{
  char *s = NULL;
  if (!*rel)
    return strdup(w->root);
  return asprintf(&s, "%s%s%s", w->root, strcmp(w->root, "/") == 0 ? "" : "/", rel) < 0 ? NULL : s;
}

static struct wdent *find_wd(struct envd_wcore *w, int wd)
{
  for (size_t i = 0; i < w->nwds; i++)
    if (w->wds[i].wd == wd)
      return &w->wds[i];
  return NULL;
}

static void drop_wd_at(struct envd_wcore *w, size_t i)
{
  free(w->wds[i].rel);
  w->wds[i] = w->wds[--w->nwds];
}

/* Forget the watches of `rel` and everything below it (moved out or removed). */
static void drop_tree(struct envd_wcore *w, const char *rel)
{
  size_t rl = strlen(rel);
  for (size_t i = 0; i < w->nwds;) {
    const char *r = w->wds[i].rel;
    if (strncmp(r, rel, rl) == 0 && (r[rl] == 0 || r[rl] == '/')) {
      inotify_rm_watch(w->fd, w->wds[i].wd);
      drop_wd_at(w, i);
    } else {
      i++;
    }
  }
}

static json_t *fs_event(const struct envd_wcore *w, const char *rel, const char *type, bool entry)
{
  json_t *ev = json_pack("{s:s,s:s}", "name", *rel ? rel : ".", "type", type);
  if (ev && entry && w->include_entry) {
    char *abs = abs_path(w, rel);
    json_t *e = abs ? envd_entry_info(abs, NULL) : NULL;
    if (e)
      json_object_set_new(ev, "entry", e);
    free(abs);
  }
  return ev;
}

/* Watch dir `rel` (and, when recursive, its subdirectories). With `emit`, entries found inside
 * are reported as CREATE events (a directory created or moved in after its parent's event).
 * Returns 0, or -1 with errno when the top watch cannot be added. */
static int add_tree(struct envd_wcore *w, const char *rel, json_t *emit, int depth)
{
  char *abs = abs_path(w, rel);
  if (!abs)
    return -1;
  int wd = inotify_add_watch(w->fd, abs, WATCH_MASK);
  if (wd < 0) {
    int er = errno;
    free(abs);
    errno = er;
    return -1;
  }
  struct wdent *have = find_wd(w, wd);
  if (have) {
    free(have->rel);
    have->rel = strdup(rel);
  } else {
    if (w->nwds == w->capwds) {
      size_t cap = w->capwds ? w->capwds * 2 : 16;
      struct wdent *n = realloc(w->wds, cap * sizeof *n);
      if (!n) {
        inotify_rm_watch(w->fd, wd);
        free(abs);
        errno = ENOMEM;
        return -1;
      }
      w->wds = n;
      w->capwds = cap;
    }
    w->wds[w->nwds].wd = wd;
    w->wds[w->nwds].rel = strdup(rel);
    w->nwds++;
  }
  if (w->recursive && depth < 64) {
    struct dirent **names = NULL;
    int n = scandir(abs, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
      const char *nm = names[i]->d_name;
      if (strcmp(nm, ".") != 0 && strcmp(nm, "..") != 0) {
        char *sub = join(rel, nm);
        char *subabs = sub ? abs_path(w, sub) : NULL;
        struct stat st;
        if (sub && emit)
          json_array_append_new(emit, fs_event(w, sub, "EVENT_TYPE_CREATE", true));
        if (subabs && lstat(subabs, &st) == 0 && S_ISDIR(st.st_mode))
          add_tree(w, sub, emit, depth + 1); /* best effort below the top */
        free(sub);
        free(subabs);
      }
      free(names[i]);
    }
    free(names);
  }
  free(abs);
  return 0;
}

/* Read every pending inotify event (non-blocking) and append FilesystemEvents to `out`.
 * Call under the watch user's fs identity. Errors: internal (overflow, read failure). */
int envd_wcore_read(struct envd_wcore *w, json_t *out, struct envd_err *err)
{
  char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    ssize_t n = read(w->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return 0;
    if (n <= 0)
      return envd_fail(err, "internal", "error reading watch events: %s",
                       n < 0 ? strerror(errno) : "end of file");
    for (char *p = buf; p < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      if (ev->mask & IN_Q_OVERFLOW)
        return envd_fail(err, "internal", "watch event queue overflow: events were lost");
      struct wdent *d = find_wd(w, ev->wd);
      if (!d)
        continue;
      if (ev->mask & IN_IGNORED) {
        drop_wd_at(w, (size_t)(d - w->wds));
        continue;
      }
      bool self = ev->len == 0 || !ev->name[0];
      char *rel = self ? strdup(d->rel) : join(d->rel, ev->name);
      if (!rel)
        return envd_fail(err, "internal", "out of memory");
      uint32_t m = ev->mask;
      bool isdir = m & IN_ISDIR;
      if (!self) {
        if (m & (IN_CREATE | IN_MOVED_TO))
          json_array_append_new(out, fs_event(w, rel, "EVENT_TYPE_CREATE", true));
        if (m & IN_MOVED_FROM)
          json_array_append_new(out, fs_event(w, rel, "EVENT_TYPE_RENAME", false));
        if (m & IN_ATTRIB)
          json_array_append_new(out, fs_event(w, rel, "EVENT_TYPE_CHMOD", true));
        if (m & IN_MODIFY)
          json_array_append_new(out, fs_event(w, rel, "EVENT_TYPE_WRITE", true));
        if (m & IN_DELETE)
          json_array_append_new(out, fs_event(w, rel, "EVENT_TYPE_REMOVE", false));
        if (isdir && w->recursive && (m & (IN_CREATE | IN_MOVED_TO)))
          add_tree(w, rel, out, 1);
        if (isdir && w->recursive && (m & (IN_MOVED_FROM | IN_DELETE)))
          drop_tree(w, rel);
      } else if (!*d->rel) {
        /* the watched directory itself */
        if (m & IN_ATTRIB)
          json_array_append_new(out, fs_event(w, "", "EVENT_TYPE_CHMOD", true));
        if (m & IN_DELETE_SELF)
          json_array_append_new(out, fs_event(w, "", "EVENT_TYPE_REMOVE", false));
      }
      free(rel);
    }
  }
}

static bool network_fs(long type)
{
  switch ((unsigned long)type & 0xffffffffUL) {
  case 0x6969UL:     /* NFS */
  case 0x517BUL:     /* SMB */
  case 0xFF534D42UL: /* CIFS */
  case 0xFE534D42UL: /* SMB2 */
  case 0x65735546UL: /* FUSE */ return true;
  default: return false;
  }
}

/* Validate the request and open the watch as the requesting user. */
int envd_wcore_open(struct envd_call *c, json_t *req, struct envd_wcore *w, struct envd_err *err)
{
  memset(w, 0, sizeof *w);
  w->fd = -1;
  json_t *pv = envd_jget(req, "path", NULL), *rec = envd_jget(req, "recursive", NULL);
  json_t *inc = envd_jget(req, "includeEntry", "include_entry");
  json_t *net = envd_jget(req, "allowNetworkMounts", "allow_network_mounts");
  if ((pv && !json_is_string(pv)) || (rec && !json_is_boolean(rec)) ||
      (inc && !json_is_boolean(inc)) || (net && !json_is_boolean(net)))
    return envd_fail(err, "invalid_argument", "invalid watch request");
  w->recursive = json_is_true(rec);
  w->include_entry = json_is_true(inc);
  w->user = c->user;
  w->root = envd_resolve_path(c->e, &c->user, pv ? json_string_value(pv) : "", err);
  if (!w->root)
    return -1;
  int rc = 0;
  struct stat st;
  struct statfs sf;
  envd_fs_enter(&c->user);
  if (stat(w->root, &st) < 0) {
    rc = errno == ENOENT ? envd_fail(err, "not_found", "path '%s' not found", w->root)
                         : envd_fail(err, envd_errno_code(errno), "error statting path '%s': %s",
                                     w->root, strerror(errno));
  } else if (!S_ISDIR(st.st_mode)) {
    rc = envd_fail(err, "invalid_argument", "path '%s' not a directory", w->root);
  } else if (access(w->root, R_OK | X_OK) < 0) {
    rc = envd_fail(err, envd_errno_code(errno), "cannot watch '%s': %s", w->root, strerror(errno));
  } else if (!json_is_true(net) && statfs(w->root, &sf) == 0 && network_fs((long)sf.f_type)) {
    rc = envd_fail(err, "invalid_argument",
                   "cannot watch path '%s': network filesystems are not supported unless "
                   "allowNetworkMounts is set",
                   w->root);
  } else if ((w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
    rc = envd_fail(err, "internal", "error creating watcher: %s", strerror(errno));
  } else if (add_tree(w, "", NULL, 0) < 0) {
    rc = envd_fail(err, errno == ENOSPC ? "resource_exhausted" : envd_errno_code(errno),
                   "error watching '%s': %s", w->root, strerror(errno));
  }
  envd_fs_leave();
  if (rc < 0)
    envd_wcore_free(w);
  return rc;
}
