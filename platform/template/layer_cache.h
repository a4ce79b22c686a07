/*
 * layer_cache.h: the template build cache of `abxlua serve`: uploaded COPY archives and the
 * content-addressed read-only layers of build steps, kept across serve restarts.
 *
 * Layout:  <cache>/files/<hash>.tar   an uploaded COPY archive (tar or tar.gz, as the SDK sends
 *                                     it; docs/protocol/e2b-v2-and-peers.md §2 item 2), named by
 *                                     the SDK's files hash (64 lowercase hex, utils.ts
 *                                     calculateFilesHash)
 *          <cache>/layers/<key>/      one step's layer: one subdir per rootfs part (rootfs.h),
 *                                     the build sandbox's upper dirs as they were when it stopped
 *                                     (moved, so modes, owners, xattrs and whiteouts are kept)
 *          <cache>/layers/<key>.done  marker of a finished "finalize" (start/ready checked)
 *          <cache>/tmp/<pid>.<n>/     work in progress of serve <pid> (removed by the next
 *                                     serve once that pid is gone: serves may share a cache)
 *          A key is the sha256 (hex) of the parent's key and the step (layer_key_*). Layers are
 *          made under tmp/ and renamed into place, so a layer dir that exists is complete.
 *          Nothing is removed automatically: every layer may be in use by a template or a
 *          sandbox (docs/PLATFORM.md "Build cache").
 * Uploads: PUT <upload url> (abx_lcache_upload_url: /build-files/<hash>?sig=<hmac>, the signature
 *          a sha256 over a per-serve secret, so the URL is the credential as a presigned S3 URL
 *          is) with an exact Content-Length (E2B's SDK always sends one; 411 without), at most
 *          ABX_UPLOAD_MAX bytes; the body must be a readable tar (gzip or not, libarchive) or the
 *          PUT answers 400 and nothing is stored.
 * Errors:  int functions return 0, or -1 with a message in err.
 */
#ifndef ABX_TEMPLATE_LAYER_CACHE_H
#define ABX_TEMPLATE_LAYER_CACHE_H

#include <microhttpd.h>
#include <stddef.h>

#define ABX_UPLOAD_MAX (1024ull * 1024 * 1024) /* 1 GiB per COPY archive */

/* Create (mkdir -p, 0700) the cache dir and its subdirs and remove what serves that are gone
 * left in tmp/. Once, at startup. */
int abx_lcache_init(const char *dir, char *err, size_t errlen);

/* The cache dir given to abx_lcache_init. */
const char *abx_lcache_dir(void);

/* The default cache dir: <state>/build-cache when `state_dir` was given by the user, else
 * <abxlua's state dir>/build-cache, the state dir as the CLI's core.state_dir() finds it
 * (bindings/core_files.c): $XDG_STATE_HOME/abxlua (an absolute XDG_STATE_HOME), else
 * $HOME/.local/state/abxlua, else ${TMPDIR:-/tmp}/abxlua-state-<uid>. So `abxlua serve`, `abxlua
 * run` and `abxlua sandbox serve` share one cache and its template store (template_store.h
 * "Disk"). Into out[n]. */
void abx_lcache_default_dir(const char *state_dir, char *out, size_t n);

/* 1 when `h` is 64 lowercase hex digits (a files hash or a layer key). */
int abx_lcache_valid_hash(const char *h);

/* Path of the archive for files hash `hash` / of layer `key` into out[4096]. */
void abx_lcache_files_path(const char *hash, char *out);
void abx_lcache_layer_path(const char *key, char *out);

/* 1 when the archive / the layer / the finalize marker exists, else 0. */
int abx_lcache_files_present(const char *hash);
int abx_lcache_layer_present(const char *key);
int abx_lcache_done_present(const char *key);

/* Create the finalize marker of `key` (its start/ready commands succeeded once): 0 or -1. */
int abx_lcache_done_mark(const char *key);

/* Move the dir `upper` (one subdir per part) into the cache as layer `key` (rename; a copy with
 * cp -a, then removal, when the cache is on another filesystem). An existing layer wins. */
int abx_lcache_layer_store(const char *key, const char *upper, char *err, size_t errlen);

/* A new empty dir under <cache>/tmp into out[4096] (the caller removes it). */
int abx_lcache_tmpdir(char *out, char *err, size_t errlen);

/* Unpack archive `hash` into the existing, empty dir `dst` with libarchive, refusing absolute
 * paths, ".." and extraction through symlinks; modes and symlinks kept, owners not (root). */
int abx_lcache_extract(const char *hash, const char *dst, char *err, size_t errlen);

/* Incremental key: a sha256 over length-prefixed items. */
struct abx_key;
struct abx_key *abx_key_new(void);
void abx_key_add(struct abx_key *k, const char *s);
void abx_key_addn(struct abx_key *k, const void *p, size_t n);
/* Add the contents of a file (its absence adds a fixed marker). */
void abx_key_add_file(struct abx_key *k, const char *path);
/* Add every entry of a dir tree: relative path, mode, size, content or link target. */
void abx_key_add_tree(struct abx_key *k, const char *dir);
/* Finish into out[65] and free. */
void abx_key_end(struct abx_key *k, char out[65]);

/* The upload URL for `hash`: "<scheme>://<host><path>" where host is the Host of the request the
 * SDK made (so the URL reaches this serve the way the SDK does). Into out[n]. */
void abx_lcache_upload_url(struct MHD_Connection *c, const char *hash, char *out, size_t n);

/* Set once at startup: 1 when serve runs with --tls (upload URLs are then https). */
void abx_lcache_config_tls(int tls);

/* Uploads, driven by serve.c's request handler. abx_upload_match: 1 when (method, path) is an
 * upload request. begin → data* → finish; free always (also when the request is cut short). */
struct abx_upload;
int abx_upload_match(const char *method, const char *path);
struct abx_upload *abx_upload_begin(struct MHD_Connection *c, const char *path);
void abx_upload_data(struct abx_upload *u, const char *data, size_t n);
enum MHD_Result abx_upload_finish(struct abx_upload *u, struct MHD_Connection *c);
void abx_upload_free(struct abx_upload *u);

#endif
