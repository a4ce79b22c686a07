/*
 * image_debian.h: the root filesystem of a template built `fromImage` (E2B build API, reference
 * docs/protocol/e2b-v2-and-peers.md §2: POST /v2/templates/{id}/builds/{buildID} {fromImage}). This
 * machine reaches no container registry: a Debian image is built here from Debian packages with
 * mmdebstrap; every other image is refused by name.
 *
 * Refs:    accepted: "debian", "debian:<tag>", with an optional "library/", "docker.io/",
 *          "docker.io/library/", "index.docker.io/library/" or "registry-1.docker.io/library/"
 *          prefix. Tags: bookworm, 12, trixie, 13, their "-slim" forms (bookworm-slim, 12-slim,
 *          ...), stable, oldstable (and -slim), and none or "latest" (no -slim) = bookworm. The
 *          moving names stable/oldstable are resolved to a codename through the mirror's Release
 *          file (Codename:), so the cache holds codenames only. "debian" and "latest" mean
 *          bookworm here (Docker Hub's latest is trixie): bookworm is this machine's release, the
 *          one the abxlua binary is built on. Refused with the reason: other suites (bullseye
 *          and older: older C library than envd needs; testing/sid: moving targets), point
 *          releases (12.8), dated tags, digests (@sha256:...), uppercase.
 *          Any other image ("ubuntu:22.04", "node:20", "e2bdev/base", "ghcr.io/x/y"): "image
 *          '<ref>': image registry <registry> is unreachable from this machine: only Debian
 *          images (debian:<suite>) are built locally, from Debian packages", where registry is
 *          the first path component when it has a '.' or ':' or is "localhost" (Docker's rule),
 *          else docker.io.
 * Build:   mmdebstrap --variant=minbase (what Docker's debian images are: Essential packages and
 *          apt), run from the host's network namespace against deb.debian.org (the suite, its
 *          -updates and the security archive). Not through build_proxy.h: that proxy is for
 *          build steps, which run code of the template's author in a sandbox; here serve itself
 *          fetches signed Debian packages it names, and the proxy listens only in the hub
 *          namespace. "-slim" adds Docker's slim path excludes (docs but copyright, man, info,
 *          locales, groff, lintian, linda). The build goes to <cache>/images/.<key>.tmp.<pid>
 *          and is renamed to <cache>/images/<key> only once complete and checked; one build per
 *          key at a time (flock on <cache>/images/<key>.lock; a waiter then finds it built).
 *          Bounded: ABX_IMAGE_BUILD_TIMEOUT_S, then the build is killed and fails.
 * Key:     debian-<codename>[-slim]-<12 hex of SHA-256 over the package list and this file's
 *          recipe version>, so a new envd library set builds a new root.
 * Root:    <cache>/images/<key>/root, a complete tree (merged /usr: /bin, /lib... are symlinks
 *          into /usr) holding: Debian's minbase (bash, coreutils, dpkg, apt, ...), ca-certificates
 *          (/etc/ssl/certs/ca-certificates.crt), passwd, and the packages of the shared libraries
 *          `abxlua envd` needs (this very binary's DT_NEEDED entries, mapped to packages with
 *          dpkg -S on the host, installed by name in the image's suite: apt takes the
 *          suite's own dependencies); `user` (uid/gid 1000, /home/user 0755, bash) as on E2B,
 *          /etc/sudoers.d/user (NOPASSWD: ALL, 0440), /usr/local/bin/sudo and /usr/bin/sudo
 *          symlinks to /opt/abx/abxlua (the platform's sudo, PLATFORM.md "sudo in a sandbox"),
 *          an empty /opt/abx/abxlua (the mount point of the binary), /tmp and /var/tmp 1777,
 *          /etc/hosts (localhost, as Docker's runtime writes it; mmdebstrap leaves none).
 *          Checked before the rename: the binary, copied in, runs in it (chroot ... help envd).
 *          It lacks: the abxlua binary itself (sandbox.c binds it), sudo, curl, python, git,
 *          Node and everything else of E2B's base image (a recipe installs what it needs with
 *          apt steps), apt lists (removed by mmdebstrap: run apt-get update first, as on
 *          Docker's images), locales, systemd, any kernel; /proc, /dev, /sys are empty mount
 *          points. The tree is owned by the caller, to be used as a read-only bottom layer.
 * Log:     every line of mmdebstrap's output, and one line per phase of ours, goes to log(ud,
 *          line) (lines without the newline; log may be NULL).
 * Errors:  0, or -1 with err set: the refusal, an unreachable mirror, mmdebstrap's exit status
 *          with its last output line, the check, or the timeout. A failed build leaves nothing.
 */
#ifndef ABX_TEMPLATE_IMAGE_DEBIAN_H
#define ABX_TEMPLATE_IMAGE_DEBIAN_H

#include <stddef.h>

struct abx_template;

#define ABX_IMAGE_BUILD_TIMEOUT_S 1200
#define ABX_IMAGE_MIRROR "http://deb.debian.org/debian"
#define ABX_IMAGE_SECURITY "http://deb.debian.org/debian-security"

/* What a reference names. */
struct abx_image_ref {
  char suite[32]; /* the tag's suite as written or implied: bookworm, trixie, stable, oldstable */
  int slim;       /* a -slim tag */
};

/* Parse `ref` (see "Refs"): 0 with `out` set, or -1 with the exact refusal in err. No I/O. */
int abx_image_parse(const char *ref, struct abx_image_ref *out, char *err, size_t errlen);

/* The binary whose libraries the root must hold (default /proc/self/exe, which in serve is
 * abxlua itself; a test program links this file and names abxlua). Borrowed-copied, once, before
 * any abx_image_root. */
void abx_image_set_binary(const char *path);

/* The root of image `ref`: parse it, resolve the suite's codename, and build the root once under
 * `cache_dir` (created when missing), or find it built. On 0, `root` (rootlen bytes) holds the
 * absolute path of <cache>/images/<key>/root. Blocks for the build (40-70 s for bookworm-slim on
 * this machine, the first time; when built, at once but for the package list, computed once
 * per process, about 1 s: ldd, dpkg -S), so call it from a build's own thread. Thread-safe:
 * concurrent calls for one key build it once. */
int abx_image_root(const char *ref, const char *cache_dir, void (*log)(void *ud, const char *line),
                   void *ud, char *root, size_t rootlen, char *err, size_t errlen);

/* Shutdown (template_build.h abx_tbuild_stop): kill (SIGKILL to the process group) every program
 * an abx_image_root runs now, and make later ones fail at once; each such abx_image_root returns
 * -1 with "serve is stopping" and leaves nothing (each program runs in a mount namespace of its
 * own, so mmdebstrap's mounts in the root go with it). */
void abx_image_stop(void);

/* The parent of a fromImage build (image_root.c): "e2bdev/base" (the SDK's default base image,
 * which E2B's base template is built from) is the base template; a Debian image is its
 * image_debian.h root, built (blocking: 40-70 s cold, on the build's thread) or found in
 * <cache>/images, as a rootfs.h image record; every other image is image_debian.h's refusal
 * ("image '<ref>': image registry <r> is unreachable from this machine: only Debian images
 * (debian:<suite>) are built locally, from Debian packages"). Each line of the image build's
 * output goes to log(ud, line) (may be NULL). A record with one ref (the caller's), or NULL with
 * err. */
struct abx_template *abx_tbuild_image_root(const char *image,
                                           void (*log)(void *ud, const char *line), void *ud,
                                           char *err, size_t errlen);

#endif
