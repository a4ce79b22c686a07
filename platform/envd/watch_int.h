/*
 * watch_int.h: one inotify watch set of envd (watch.c), shared with the RPCs built on it
 * (watch_rpc.c: WatchDir, the polling watchers).
 *
 * Shapes:  struct envd_wcore is the watched directory (resolved), its options, the requesting
 *          user, and the map inotify wd → directory relative to the watched one ("" for itself).
 * Errors:  int functions return 0, or -1 with err set (Connect codes, see watch.c's header).
 * Source:  docs/protocol/envd-protocol.md §5.1, §5.2.
 */
#ifndef ABX_ENVD_WATCH_INT_H
#define ABX_ENVD_WATCH_INT_H

#include "envd/envd_int.h"

struct wdent {
  int wd;
  char *rel; /* "" for the watched dir itself */
};

/* One inotify watch set: the watched dir (resolved), options, and wd → relative dir map. */
struct envd_wcore {
  int fd;
  char *root;
  bool recursive, include_entry;
  struct envd_user user;
  struct wdent *wds;
  size_t nwds, capwds;
};

/* Validates a watch request ({path, recursive?, includeEntry?, allowNetworkMounts?}) and opens
 * the watch set as the requesting user. On failure w holds nothing to free. */
int envd_wcore_open(struct envd_call *c, json_t *req, struct envd_wcore *w, struct envd_err *err);

/* Reads every pending inotify event of w (non-blocking) and appends the FilesystemEvents to the
 * JSON array out. -1 with internal on queue overflow or a read error. */
int envd_wcore_read(struct envd_wcore *w, json_t *out, struct envd_err *err);

/* Closes w's inotify fd and frees its map (idempotent). */
void envd_wcore_free(struct envd_wcore *w);

#endif
