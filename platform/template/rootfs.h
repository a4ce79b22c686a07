/*
 * rootfs.h: templates (the base template and snapshots) and each sandbox's overlay root.
 *
 * Parts:   a sandbox's / is one overlayfs ("root" part) plus one overlayfs mounted over each host
 *          directory the template takes from the host: /usr, /etc and whichever of /bin /sbin
 *          /lib /lib32 /lib64 /libx32 are real directories (symlinks, as on merged-/usr hosts,
 *          are copied as symlinks). Overlayfs does not look through mounts inside a lower
 *          directory, hence one overlay per host directory rather than one over a bind-mounted tree.
 *          Nothing else of the host is ever a layer: not /root, /home, /work, /tmp, /opt, /var,
 *          nor the state dir.
 * Layers:  a template is a chain of layer dirs, newest first; each layer holds one subdir per part.
 *          base: <state>/templates/base/{root,etc,usr,...}: root is the skeleton (home/user 1000:1000
 *          0755, root 0700, tmp and var/tmp 1777, opt/abx/abxlua mount point, proc, dev, run, mnt,
 *          srv, sys (0555; sandbox.c mounts the sandbox's own cgroups there), a mount point per host part, the host's top-level symlinks); etc holds passwd and
 *          group with root and user (uid 1000). A snapshot adds a copy of the sandbox's upper
 *          dirs (cp -a: modes, owners, xattrs, whiteouts) as <state>/templates/<id>.<seq>; a fork
 *          does the same as <state>/templates/fork-<sandbox id>.<seq>, a layer never listed.
 *          lowerdir of part p = layer_n/p : ... : base/p [: /p for host parts].
 * Images:  a template built fromImage (image_debian.h) has an image root at the bottom of its
 *          chain instead of base: its sandboxes' / is ONE overlay, lowerdir = layer_n/root : ...
 *          : <cache>/images/<key>/root, and no host part is mounted (the image's own /usr, /etc).
 * Sandbox: <sbdir>/upper/<part>, <sbdir>/work/<part>, merged at <sbdir>/rootfs, which bwrap binds
 *          (recursively) as the sandbox's /.
 * Names:   template ids are ^[a-z0-9][a-z0-9_-]{0,62}$; references accept "<id>", "<id>:default"
 *          and "<id>:latest" (docs/protocol/e2b-control-plane.md §3.2 templateID, §3.1 notes: a
 *          snapshot is a template).
 * Locking: one templates mutex inside this file; templates are reference-counted: a sandbox, a
 *          child snapshot and the list each hold one, and a layer dir is removed with its last ref.
 * Errors:  int functions return 0, or -1 with a message in err.
 */
#ifndef ABX_TEMPLATE_ROOTFS_H
#define ABX_TEMPLATE_ROOTFS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define ABX_TEMPLATE_MAX_DEPTH 32

/* The base template's limits: 2 CPUs and 1024 MiB, the defaults E2B applies to a template build
 * that names none (E2B SDK 2.45 `cpuCount ?? 2`, `memoryMB ?? 1024`,
 * docs/protocol/e2b-v2-and-peers.md §1.1; e2b CLI `template create` "The default value is 2" /
 * "1024", packages/cli/src/commands/ template/create.ts @ b8029973). E2B's docs quote 2 vCPU / 2
 * GiB for a default sandbox (same reference §6); the smaller figure is kept because every
 * sandbox of this platform shares one host. */
#define ABX_BASE_CPU_COUNT 2
#define ABX_BASE_MEMORY_MB 1024

struct abx_template {
  char id[64];
  char alias[64];
  char *layer;                 /* layer dir, owned */
  struct abx_template *parent; /* ref held; NULL for base */
  int depth;                   /* base 0 */
  int is_snapshot;
  char source_sandbox[32]; /* snapshots: the sandbox it was taken from */
  int cpu_count;           /* limits of its sandboxes (cgroup.h Limits); a snapshot */
  int memory_mb;           /* inherits them from the sandbox it was taken from, in MiB */
  int64_t created_ns;
  int refs;      /* under the templates mutex */
  int sandboxes; /* live sandboxes using it (DELETE answers 400 while > 0) */
  int listed;
  int builtin;         /* base and the built-in templates (templates.h): never deleted */
  char *start_cmd;     /* owned or NULL; run at sandbox start (template_start.h) */
  char *ready_cmd;     /* owned or NULL; the sandbox is handed out once it exits 0 */
  int ready_timeout_s; /* seconds ready_cmd may take (template_start.h); 0: not set
                                 * here (the nearest record's, else the default) */
  /* Built templates (template_build.h): their sandboxes' defaults, from the nearest record that
   * sets them (abx_template_env etc.); NULL: not set here. */
  json_t *env_vars;      /* owned object str -> str: ENV of the build */
  char *default_user;    /* owned: USER of the build (envd's defaultUser) */
  char *default_workdir; /* owned: WORKDIR of the build (envd's defaultWorkdir) */
  int keep_layer;        /* the layer dir is the build cache's: never removed here */
  int apt_state;         /* this layer holds the host's dpkg/apt state (template_build.h) */
  int image_root;        /* the bottom of a fromImage chain (image_root.c): `layer` holds
                                 * only the "root" part, a complete tree; no host part is used */
  char build_key[65];    /* the layer key builds on top of it start from; "" = unknown */
  struct abx_template *next;
};

/* Build the base template under <state_dir>/templates, then the built-in templates on top of it
 * (templates.h abx_templates_builtin_init). Once, at startup. */
int abx_rootfs_init(const char *state_dir, char *err, size_t errlen);

/* A new built-in template `id` over base, listed, with the base limits: its layer dir
 * <state>/builtin/<id> is created empty (one subdir per part; a reused state dir's copy is
 * removed first) for the caller to fill before any sandbox can start (abx_rootfs_init's thread,
 * at startup). The caller sets start_cmd/ready_cmd (malloc'd). NULL with err on failure. */
struct abx_template *abx_template_builtin(const char *id, char *err, size_t errlen);

/* A new unlisted record for the cache layer dir `layer_dir` (not owned: keep_layer) on top of
 * `parent` (a ref taken on it), with parent's id, alias and limits; one ref, the caller's. NULL
 * with err when deeper than ABX_TEMPLATE_MAX_DEPTH. */
struct abx_template *abx_template_layer(struct abx_template *parent, const char *layer_dir,
                                        char *err, size_t errlen);

/* Create one empty subdir per rootfs part in the existing dir `dir` (what every layer holds). */
int abx_rootfs_layer_parts(const char *dir);

/* The base template (a borrowed pointer; it lives until abx_rootfs_shutdown). */
struct abx_template *abx_template_base(void);

/* The nearest record of t's chain that sets env_vars / default_user / default_workdir; NULL:
 * none (then E2B's defaults: no variables, user "user", the user's home). */
json_t *abx_template_env(const struct abx_template *t);
const char *abx_template_user(const struct abx_template *t);
const char *abx_template_workdir(const struct abx_template *t);

/* 1 when `name` is a valid template id. */
int abx_template_valid_id(const char *name);

/* Look up a listed template by reference and take a ref (and a sandbox use when `sandbox`);
 * references that are no listed id go to the built templates (template_build.h
 * abx_tstore_resolve: name, name:tag, templateID, templateID:tag). NULL when unknown. */
struct abx_template *abx_template_get(const char *ref, int sandbox);

/* Take one more ref on `t` (held by the caller), and a sandbox use when `sandbox`. */
void abx_template_ref(struct abx_template *t, int sandbox);

/* Drop a ref (and a sandbox use when `sandbox`); the last ref removes the layer dir. */
void abx_template_put(struct abx_template *t, int sandbox);

/* A new unlisted record (one ref, the caller's; no parent, depth 0) whose layer is the image dir
 * `image_dir` (image_debian.h: <cache>/images/<key>, holding the tree in root/; not owned:
 * keep_layer), named `id` (the image key) with alias `ref` (the image reference), base's limits,
 * and build_key = sha256("abx image root v1", id, the root's var/lib/dpkg/status): builds over it
 * start from that key. Its chains mount one overlay only (abx_rootfs_mount). In image_root.c.
 * NULL with err. */
struct abx_template *abx_template_image(const char *image_dir, const char *id, const char *ref,
                                        char *err, size_t errlen);

/* 1 when the bottom of t's chain is an image root (abx_template_image). */
int abx_template_is_image(const struct abx_template *t);

/* Mount the sandbox root of template `t` under `sbdir` (which exists): one overlay per part, or
 * for an image chain one overlay only (lowerdir = each layer's root part : the image's tree), so
 * no host directory is part of it. */
int abx_rootfs_mount(const struct abx_template *t, const char *sbdir, char *err, size_t errlen);

/* Unmount whatever abx_rootfs_mount mounted under `sbdir` (idempotent). */
void abx_rootfs_umount(const char *sbdir);

/* Bytes used by the sandbox's upper dirs. */
uint64_t abx_rootfs_disk_used(const char *sbdir);

/* Copy the upper dirs of the sandbox at `sbdir` (frozen by the caller) into a new snapshot
 * template on top of `from`, named `id`, listed (replacing an earlier snapshot with that id).
 * Returns 0, or -1 with err; *status gets 400 (bad name, too deep, name of a non-snapshot
 * template) or 500. */
int abx_snapshot_create(struct abx_template *from, const char *sbdir, const char *id,
                        const char *source_sandbox, int *status, char *err, size_t errlen);

/* A fork's layer: a copy of the upper dirs of the sandbox at `sbdir` (frozen by the caller) on
 * top of `from`, as a template that is never listed (no id of its own: it carries from's id and
 * alias) and is returned with one ref, the caller's; each fork sandbox takes its own ref and use
 * (abx_template_put). NULL with err when too deep or the copy failed. */
struct abx_template *abx_template_fork_layer(struct abx_template *from, const char *sbdir,
                                             const char *source_sandbox, char *err, size_t errlen);

/* Snapshots, newest first, as {"snapshotID","names","sandboxID","createdNs"} objects (new
 * array); filters may be NULL. */
json_t *abx_snapshot_list(const char *sandbox_id, const char *name);

/* Delete a listed template: 0 deleted, 404 unknown, 400 in use or the base template. */
int abx_template_delete(const char *ref, char *msg, size_t msglen);

/* Drop every template (shutdown, after every sandbox is gone). */
void abx_rootfs_shutdown(void);

#endif
