/*
 * image_debian.c: `fromImage` of a Debian image: the reference rules, envd's packages, one
 * mmdebstrap build per key under a lock, the checks (the programs run through image_run.c).
 * Contract in image_debian.h.
 */
#include "image_debian.h"

#include <ctype.h>
#include <dirent.h>
#include <curl/curl.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "image_debian_int.h"
#include "util/util.h"

#define RECIPE_VERSION "abx image recipe 2"

/* ---- references --------------------------------------------------------------------------- */

static const char *const prefixes[] = {"docker.io/library/", "index.docker.io/library/",
                                       "registry-1.docker.io/library/", "docker.io/", "library/"};

static void refuse_registry(const char *ref, char *err, size_t errlen)
{
  char reg[128] = "docker.io";
  const char *slash = strchr(ref, '/');
  if (slash) {
    size_t n = (size_t)(slash - ref);
    if ((memchr(ref, '.', n) || memchr(ref, ':', n) || (n == 9 && !strncmp(ref, "localhost", 9))) &&
        n < sizeof reg)
      snprintf(reg, sizeof reg, "%.*s", (int)n, ref);
  }
  snprintf(err, errlen,
           "image '%s': image registry %s is unreachable from this machine: only "
           "Debian images (debian:<suite>) are built locally, from Debian packages",
           ref, reg);
}

int abx_image_parse(const char *ref, struct abx_image_ref *out, char *err, size_t errlen)
{
  memset(out, 0, sizeof *out);
  const char *name = ref;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) {
      name += strlen(prefixes[i]);
      break;
    }
  if (strncmp(name, "debian", 6) != 0 || (name[6] && name[6] != ':' && name[6] != '@')) {
    refuse_registry(ref, err, errlen);
    return -1;
  }
  const char *tag = name[6] == ':' ? name + 7 : name[6] == '@' ? NULL : "latest";
  if (!tag || strchr(tag, '@')) {
    snprintf(err, errlen,
             "image '%s': digests are not built locally: a Debian image is built "
             "here from packages, so no digest can match; use debian:<suite>",
             ref);
    return -1;
  }
  char t[32];
  size_t n = strlen(tag);
  if (n == 0 || n >= sizeof t) {
    snprintf(err, errlen, "image '%s': bad tag", ref);
    return -1;
  }
  memcpy(t, tag, n + 1);
  if (n > 5 && strcmp(t + n - 5, "-slim") == 0) {
    out->slim = 1;
    t[n - 5] = 0;
  }
  static const struct {
    const char *tag, *suite;
  } tags[] = {{"latest", "bookworm"},    {"bookworm", "bookworm"}, {"12", "bookworm"},
              {"trixie", "trixie"},      {"13", "trixie"},         {"stable", "stable"},
              {"oldstable", "oldstable"}};
  for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
    if (strcmp(t, tags[i].tag) == 0 && !(out->slim && i == 0)) {
      snprintf(out->suite, sizeof out->suite, "%s", tags[i].suite);
      return 0;
    }
  const char *why = "unknown tag";
  if (isdigit((unsigned char)t[0]) && strchr(t, '.'))
    why = "point-release tags are not built locally (the current point release is what "
          "Debian's mirror has): use debian:12 or debian:13";
  else if (!strcmp(t, "bullseye") || !strcmp(t, "11") || !strcmp(t, "buster") || !strcmp(t, "10"))
    why = "releases before bookworm have an older C library than abxlua envd needs";
  else if (!strcmp(t, "testing") || !strcmp(t, "unstable") || !strcmp(t, "sid") ||
           !strcmp(t, "forky"))
    why = "testing and unstable are moving targets and are not built locally";
  else if (strchr(t, '-') || isdigit((unsigned char)t[0]))
    why = "dated and variant tags are not built locally";
  snprintf(err, errlen,
           "image '%s': %s; valid tags: bookworm, 12, trixie, 13, stable, "
           "oldstable, latest (= bookworm); all but latest also with -slim",
           ref, why);
  return -1;
}

/* ---- envd's packages ---------------------------------------------------------------------- */

static char g_binary[4096] = "/proc/self/exe";

void abx_image_set_binary(const char *path)
{
  snprintf(g_binary, sizeof g_binary, "%s", path);
}

/* The DT_NEEDED names of the ELF64 file `path`, space-separated into out. 0 or -1. */
static int elf_needed(const char *path, char *out, size_t outlen)
{
  FILE *f = fopen(path, "rb");
  Elf64_Ehdr eh;
  int rc = -1;
  char *dyn = NULL, *str = NULL;
  out[0] = 0;
  if (!f || fread(&eh, sizeof eh, 1, f) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shnum == 0 || eh.e_shnum > 4096)
    goto out;
  Elf64_Shdr sh[4096];
  if (fseek(f, (long)eh.e_shoff, SEEK_SET) != 0 ||
      fread(sh, sizeof sh[0], eh.e_shnum, f) != eh.e_shnum)
    goto out;
  for (int i = 0; i < eh.e_shnum; i++) {
    if (sh[i].sh_type != SHT_DYNAMIC || sh[i].sh_link >= eh.e_shnum)
      continue;
    Elf64_Shdr *ss = &sh[sh[i].sh_link];
    if (sh[i].sh_size > (1u << 20) || ss->sh_size > (1u << 22))
      goto out;
    dyn = malloc(sh[i].sh_size);
    str = malloc(ss->sh_size + 1);
    if (!dyn || !str || fseek(f, (long)sh[i].sh_offset, SEEK_SET) != 0 ||
        fread(dyn, 1, sh[i].sh_size, f) != sh[i].sh_size ||
        fseek(f, (long)ss->sh_offset, SEEK_SET) != 0 ||
        fread(str, 1, ss->sh_size, f) != ss->sh_size)
      goto out;
    str[ss->sh_size] = 0;
    size_t used = 0;
    for (Elf64_Dyn *d = (Elf64_Dyn *)dyn;
         (char *)(d + 1) <= dyn + sh[i].sh_size && d->d_tag != DT_NULL; d++)
      if (d->d_tag == DT_NEEDED && d->d_un.d_val < ss->sh_size) {
        int k = snprintf(out + used, outlen - used, "%s%s", used ? " " : "", str + d->d_un.d_val);
        if (k < 0 || (size_t)k >= outlen - used)
          goto out;
        used += (size_t)k;
      }
    rc = 0;
    break;
  }
out:
  free(dyn);
  free(str);
  if (f)
    fclose(f);
  return rc;
}

struct pkgs {
  char list[2048]; /* comma-separated, sorted, for --include */
  char needed[1024];
  char paths[4096]; /* "soname path\n" from ldd, the needed ones */
};

static void ldd_line(void *ud, const char *l)
{
  struct pkgs *p = ud;
  char so[256], path[1024];
  if (sscanf(l, " %255s => %1023s", so, path) != 2 || path[0] != '/')
    return;
  char pad[260];
  snprintf(pad, sizeof pad, " %s ", so);
  char hay[1030];
  snprintf(hay, sizeof hay, " %s ", p->needed);
  if (strstr(hay, pad) && strlen(p->paths) + strlen(path) + 2 < sizeof p->paths) {
    strcat(p->paths, path);
    strcat(p->paths, "\n");
  }
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* envd's library packages (+ ca-certificates, passwd), sorted, comma-separated into p->list. */
static int envd_packages_find(struct pkgs *p, char *err, size_t errlen)
{
  memset(p, 0, sizeof *p);
  /* ldd and cp are other processes: /proc/self/exe must be this one's path before they see it */
  char real[4096];
  if (realpath(g_binary, real) != NULL)
    snprintf(g_binary, sizeof g_binary, "%s", real);
  if (elf_needed(g_binary, p->needed, sizeof p->needed) != 0) {
    snprintf(err, errlen, "cannot read the shared libraries of %s", g_binary);
    return -1;
  }
  const char *ldd[] = {"/usr/bin/ldd", g_binary, NULL};
  char last[256];
  if (abx_image_run(ldd, ldd_line, p, last, sizeof last, 30) != 0) {
    snprintf(err, errlen, "ldd %s failed: %s", g_binary, last);
    return -1;
  }
  char *names[64];
  int n = 0;
  names[n++] = strdup("ca-certificates");
  names[n++] = strdup("passwd");
  for (char *path = p->paths, *nl; (nl = strchr(path, '\n')) && n < 64; path = nl + 1) {
    *nl = 0;
    char alt[4200], real[4096], out[512] = "";
    snprintf(alt, sizeof alt, "%s%s", strncmp(path, "/usr/", 5) ? "/usr" : "",
             strncmp(path, "/usr/", 5) ? path : path + 4);
    const char *tries[] = {path, realpath(path, real) ? real : path, alt};
    for (int i = 0; i < 3 && !out[0]; i++) {
      const char *dpkg[] = {"/usr/bin/dpkg", "-S", tries[i], NULL};
      if (abx_image_run(dpkg, NULL, NULL, out, sizeof out, 30) != 0)
        out[0] = 0;
    }
    char *colon = strchr(out, ':');
    if (!colon) {
      snprintf(err, errlen, "no Debian package owns %s (a library abxlua needs): dpkg -S", path);
      for (int i = 0; i < n; i++)
        free(names[i]);
      return -1;
    }
    *colon = 0;
    *nl = '\n';
    int dup = 0;
    for (int i = 0; i < n; i++)
      dup |= strcmp(names[i], out) == 0;
    if (!dup)
      names[n++] = strdup(out);
  }
  qsort(names, (size_t)n, sizeof names[0], cmp_str);
  size_t used = 0;
  for (int i = 0; i < n; i++) {
    used += (size_t)snprintf(p->list + used, sizeof p->list - used, "%s%s", i ? "," : "",
                             names[i] ? names[i] : "");
    free(names[i]);
  }
  return used < sizeof p->list ? 0 : -1;
}

/* envd_packages_find once per process (the binary does not change under a running serve). */
static int envd_packages(struct pkgs *p, char *err, size_t errlen)
{
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static struct pkgs found;
  static int have;
  pthread_mutex_lock(&mu);
  int rc = have ? 0 : envd_packages_find(&found, err, errlen);
  if (rc == 0) {
    have = 1;
    *p = found;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

/* ---- the build ---------------------------------------------------------------------------- */

struct fetch {
  char buf[8192];
  size_t len;
};

static size_t fetch_cb(char *d, size_t sz, size_t nm, void *ud)
{
  struct fetch *f = ud;
  size_t n = sz * nm, take = n < sizeof f->buf - 1 - f->len ? n : sizeof f->buf - 1 - f->len;
  memcpy(f->buf + f->len, d, take);
  f->len += take;
  f->buf[f->len] = 0;
  return take == n ? n : 0; /* the head of the Release file is enough */
}

/* The codename of a moving suite name (stable, oldstable) from the mirror's Release file. */
static int codename(const char *suite, char *out, size_t outlen, char *err, size_t errlen)
{
  if (strcmp(suite, "stable") && strcmp(suite, "oldstable")) {
    snprintf(out, outlen, "%s", suite);
    return 0;
  }
  char url[256];
  snprintf(url, sizeof url, "%s/dists/%s/Release", ABX_IMAGE_MIRROR, suite);
  struct fetch f = {.len = 0};
  CURL *c = curl_easy_init();
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fetch_cb);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROXY, ""); /* from this host directly (image_debian.h "Build") */
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  const char *cn = strstr(f.buf, "\nCodename: ");
  char name[32] = "";
  if (cn)
    sscanf(cn + 11, "%31[a-z]", name);
  if (!name[0]) {
    snprintf(err, errlen, "cannot resolve Debian's %s from %s: %s (HTTP %ld)", suite, url,
             rc == CURLE_OK || rc == CURLE_WRITE_ERROR ? "no Codename line"
                                                       : curl_easy_strerror(rc),
             status);
    return -1;
  }
  if (strcmp(name, "bookworm") && strcmp(name, "trixie")) {
    snprintf(err, errlen,
             "Debian's %s is %s now, which is not built locally (bookworm and "
             "trixie are)",
             suite, name);
    return -1;
  }
  snprintf(out, outlen, "%s", name);
  return 0;
}

static void say(void (*log)(void *, const char *), void *ud, const char *fmt, const char *a,
                const char *b)
{
  char line[4096];
  snprintf(line, sizeof line, fmt, a, b);
  if (log)
    log(ud, line);
}

static int put(const char *root, const char *rel, const char *text, mode_t mode)
{
  char p[8192];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0)
    return -1;
  ssize_t k = write(fd, text, strlen(text));
  int rc = k == (ssize_t)strlen(text) && fchmod(fd, mode) == 0 ? 0 : -1;
  return close(fd) == 0 ? rc : -1;
}

static int link_to_abxlua(const char *root, const char *rel)
{
  char p[8192];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  unlink(p);
  return symlink("/opt/abx/abxlua", p);
}

/* What a sandbox root needs beyond mmdebstrap's tree (image_debian.h "Root"), then the check
 * that envd runs in it. */
static int finish(const char *root, char *err, size_t errlen)
{
  char p[8192];
  struct {
    const char *rel;
    mode_t mode;
  } dirs[] = {{"home/user", 0755}, {"tmp", 01777},          {"var/tmp", 01777},
              {"opt/abx", 0755},   {"etc/sudoers.d", 0755}, {"usr/local/bin", 0755}};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", root, dirs[i].rel);
    if ((mkdir(p, dirs[i].mode) != 0 && errno != EEXIST) || chmod(p, dirs[i].mode) != 0) {
      snprintf(err, errlen, "cannot make %s: %s", p, strerror(errno));
      return -1;
    }
  }
  /* mmdebstrap leaves no /etc/hosts (Docker's runtime writes one); without it `localhost` goes
   * to DNS, and start/ready commands (curl localhost:PORT) fail */
  snprintf(p, sizeof p, "%s/etc/hosts", root);
  if (access(p, F_OK) != 0 &&
      put(root, "etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
          0644) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", p, strerror(errno));
    return -1;
  }
  if (put(root, "etc/sudoers.d/user", "user ALL=(ALL:ALL) NOPASSWD: ALL\n", 0440) != 0 ||
      link_to_abxlua(root, "usr/local/bin/sudo") != 0 ||
      link_to_abxlua(root, "usr/bin/sudo") != 0) {
    snprintf(err, errlen, "cannot write the sudo files under %s: %s", root, strerror(errno));
    return -1;
  }
  /* the check: this binary, copied to its mount point, runs there (all its libraries resolve) */
  snprintf(p, sizeof p, "%s/opt/abx/abxlua", root);
  const char *cp[] = {"/bin/cp", "--dereference", g_binary, p, NULL};
  const char *chk[] = {"/usr/sbin/chroot", root, "/opt/abx/abxlua", "help", "envd", NULL};
  char last[300] = "";
  if (abx_image_run(cp, NULL, NULL, last, sizeof last, 60) != 0) {
    snprintf(err, errlen, "cannot copy %.1000s into the image: %s", g_binary, last);
    return -1;
  }
  int rc = abx_image_run(chk, NULL, NULL, last, sizeof last, 60);
  if (truncate(p, 0) != 0 || chmod(p, 0755) != 0 || rc != 0) {
    snprintf(err, errlen, "abxlua envd does not run in the built root (exit %d): %s", rc, last);
    return -1;
  }
  return 0;
}

static int mkdirs(const char *path)
{
  char p[4096];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      if (mkdir(p, 0755) != 0 && errno != EEXIST)
        return -1;
      *s = '/';
    }
  return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Remove <images>/.<key>.tmp.* left by a build that died (we hold the key's lock). */
static void remove_stale(const char *images, const char *key)
{
  char prefix[128], p[4200];
  snprintf(prefix, sizeof prefix, ".%s.tmp.", key);
  DIR *d = opendir(images);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
      snprintf(p, sizeof p, "%.3900s/%.255s", images, e->d_name);
      abx_rmtree(p);
    }
  if (d)
    closedir(d);
}

struct logctx {
  void (*log)(void *, const char *);
  void *ud;
};

static void mm_line(void *ud, const char *l)
{
  struct logctx *c = ud;
  if (c->log)
    c->log(c->ud, l);
}

/* One image being built: what it is, and where it goes in the cache. */
struct image_build {
  const char *ref;   /* as the client wrote it, for messages */
  const char *suite; /* the codename */
  int slim;
  const struct pkgs *pk; /* the packages beyond minbase */
  const char *images;    /* <cache>/images */
  const char *key;       /* the image's cache key (image_key) */
  const char *final;     /* <images>/<key>: the finished image */
  struct logctx lc;
};

/* The cache key: codename, slim, and a digest of everything else that shapes the tree (the
 * recipe's version, the package list); image_debian.h "Key". */
static void image_key(const char *suite, int slim, const struct pkgs *pk, char key[96])
{
  char input[2300], hex[65];
  unsigned char md[32];
  unsigned mdlen = 0;
  snprintf(input, sizeof input, "%s\n%s\n%d\n%s\n", RECIPE_VERSION, suite, slim, pk->list);
  EVP_Digest(input, strlen(input), md, &mdlen, EVP_sha256(), NULL);
  for (int i = 0; i < 6; i++)
    snprintf(hex + 2 * i, 3, "%02x", md[i]);
  snprintf(key, 96, "debian-%.31s%s-%.12s", suite, slim ? "-slim" : "", hex);
}

/* mmdebstrap of the suite into troot: minbase, the packages, user `user`, and Docker's slim
 * excludes for a -slim tag. 0, or -1 with err (stopping, the timeout, its exit status and last
 * line). */
static int run_mmdebstrap(struct image_build *b, const char *troot, char *err, size_t errlen)
{
  char inc[2100], s1[160], s2[160], s3[160];
  snprintf(inc, sizeof inc, "--include=%s", b->pk->list);
  snprintf(s1, sizeof s1, "deb " ABX_IMAGE_MIRROR " %s main", b->suite);
  snprintf(s2, sizeof s2, "deb " ABX_IMAGE_MIRROR " %s-updates main", b->suite);
  snprintf(s3, sizeof s3, "deb " ABX_IMAGE_SECURITY " %s-security main", b->suite);
  const char *argv[40] = {"/usr/bin/mmdebstrap",
                          "--mode=root",
                          "--variant=minbase",
                          "--format=directory",
                          inc,
                          "--aptopt=Acquire::Retries \"3\";",
                          "--customize-hook=chroot \"$1\" useradd --create-home --uid 1000 "
                          "--user-group --shell /bin/bash user"};
  int a = 7;
  if (b->slim) {
    /* Docker's slim images (debuerreotype's slimify list) */
    static const char *const ex[] = {"--dpkgopt=path-exclude=/usr/share/doc/*",
                                     "--dpkgopt=path-include=/usr/share/doc/*/copyright",
                                     "--dpkgopt=path-exclude=/usr/share/man/*",
                                     "--dpkgopt=path-exclude=/usr/share/info/*",
                                     "--dpkgopt=path-exclude=/usr/share/groff/*",
                                     "--dpkgopt=path-exclude=/usr/share/lintian/*",
                                     "--dpkgopt=path-exclude=/usr/share/linda/*",
                                     "--dpkgopt=path-exclude=/usr/share/locale/*"};
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++)
      argv[a++] = ex[i];
  }
  argv[a++] = b->suite;
  argv[a++] = troot;
  argv[a++] = s1;
  argv[a++] = s2;
  argv[a++] = s3;
  argv[a] = NULL;
  char last[512] = "";
  int st_mm = abx_image_run(argv, mm_line, &b->lc, last, sizeof last, ABX_IMAGE_BUILD_TIMEOUT_S);
  if (st_mm == 0)
    return 0;
  if (st_mm == -2)
    snprintf(err, errlen, "serve is stopping");
  else if (st_mm == 124)
    snprintf(err, errlen, "image '%s': mmdebstrap did not finish within %d s", b->ref,
             ABX_IMAGE_BUILD_TIMEOUT_S);
  else
    snprintf(err, errlen, "image '%s': mmdebstrap exited with status %d: %s", b->ref, st_mm,
             st_mm == -1 ? "cannot run /usr/bin/mmdebstrap (scripts/deps.sh installs it)" : last);
  return -1;
}

/* Builds the image in a temporary dir beside b->final (a crashed build's are removed first),
 * finishes its root and renames it to b->final. 0, or -1 with err and the temporary dir gone.
 * Under the image's lock. */
static int build_image(struct image_build *b, char *err, size_t errlen)
{
  char tmp[4300], troot[4400];
  remove_stale(b->images, b->key);
  snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%d", b->images, b->key, (int)getpid());
  snprintf(troot, sizeof troot, "%s/root", tmp);
  if (mkdir(tmp, 0755) != 0) {
    snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
    return -1;
  }
  say(b->lc.log, b->lc.ud, "image %s: building %s with mmdebstrap from " ABX_IMAGE_MIRROR, b->ref,
      b->key);
  say(b->lc.log, b->lc.ud, "image %s: packages beyond minbase: %s", b->ref, b->pk->list);
  time_t t0 = time(NULL);
  if (run_mmdebstrap(b, troot, err, errlen) != 0) {
    abx_rmtree(tmp);
    return -1;
  }
  char ferr[16384];
  if (finish(troot, ferr, sizeof ferr) != 0) {
    snprintf(err, errlen, "image '%s': %s", b->ref, ferr);
    abx_rmtree(tmp);
    return -1;
  }
  if (rename(tmp, b->final) != 0) {
    snprintf(err, errlen, "image '%s': cannot rename %s to %s: %s", b->ref, tmp, b->final,
             strerror(errno));
    abx_rmtree(tmp);
    return -1;
  }
  char secs[32];
  snprintf(secs, sizeof secs, "%ld", (long)(time(NULL) - t0));
  say(b->lc.log, b->lc.ud, "image %s: built in %s s, envd runs in it", b->ref, secs);
  return 0;
}

int abx_image_root(const char *ref, const char *cache_dir, void (*log)(void *ud, const char *line),
                   void *ud, char *root, size_t rootlen, char *err, size_t errlen)
{
  struct abx_image_ref r;
  if (abx_image_parse(ref, &r, err, errlen) != 0)
    return -1;
  if (abx_image_stopping()) {
    snprintf(err, errlen, "serve is stopping");
    return -1;
  }
  char suite[32];
  if (codename(r.suite, suite, sizeof suite, err, errlen) != 0)
    return -1;
  struct pkgs *pk = calloc(1, sizeof *pk);
  if (!pk || envd_packages(pk, err, errlen) != 0) {
    if (!pk)
      snprintf(err, errlen, "out of memory");
    free(pk);
    return -1;
  }
  char key[96];
  image_key(suite, r.slim, pk, key);
  char images[4096], final[4200], lockp[4200], troot[4400];
  snprintf(images, sizeof images, "%s/images", cache_dir);
  snprintf(final, sizeof final, "%s/%s", images, key);
  snprintf(lockp, sizeof lockp, "%s/%s.lock", images, key);
  int lk = -1, rc = -1;
  if (mkdirs(images) != 0 || (lk = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
    snprintf(err, errlen, "cannot create %s: %s", images, strerror(errno));
    goto out;
  }
  while (flock(lk, LOCK_EX) != 0 && errno == EINTR)
    ;
  if (abx_image_stopping()) { /* waited for a build that abx_image_stop killed */
    snprintf(err, errlen, "serve is stopping");
    goto out;
  }
  struct stat st;
  snprintf(troot, sizeof troot, "%s/root", final);
  if (stat(troot, &st) == 0 && S_ISDIR(st.st_mode)) {
    say(log, ud, "image %s: %s, built before", ref, key);
  } else {
    struct image_build b = {ref, suite, r.slim, pk, images, key, final, {log, ud}};
    if (build_image(&b, err, errlen) != 0)
      goto out;
  }
  snprintf(root, rootlen, "%s", troot);
  rc = 0;
out:
  if (lk >= 0)
    close(lk); /* releases the lock */
  free(pk);
  return rc;
}
