/*
 * mutants.c: the envd mutants of ABX_ENVD_MUTANTS (contract and catalogue in mutants.h): their
 * names (the envd rows of serve's catalogue, util/mutant.h), the parser, and the two lies that
 * need more than a line at their call site (a mangled file, a dropped upload).
 * Source: issue 27; UTF-8 decoding with replacement: the WHATWG Encoding Standard's UTF-8
 *         decoder (one U+FFFD a maximal subpart), which Node's resp.text() of
 *         TencentCloud/CubeSandbox#1570 applies.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/mutants.h"
#include "envd/process.h"
#include "util/mutant.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* enum envd_mutant is the envd rows of serve's catalogue (util/mutant.h), in their order: one
 * table of names, so serve never passes a name envd refuses. */
_Static_assert(ENVD_MUT_COUNT == ABX_MUT_COUNT - ABX_MUT_BINARY_READ_MANGLED &&
                   ENVD_MUT_COMMAND_TAIL_1S + ABX_MUT_BINARY_READ_MANGLED ==
                       (int)ABX_MUT_COMMAND_TAIL_1S,
               "enum envd_mutant must follow the envd rows of enum abx_mutant");

/* The catalogue name of envd mutant `m`. */
static const char *name_of(int m)
{
  return abx_mutant_row((enum abx_mutant)(ABX_MUT_BINARY_READ_MANGLED + m))->name;
}

void envd_mutants_names(unsigned set, char *out, size_t outlen)
{
  size_t k = 0;
  if (outlen)
    out[0] = 0;
  for (int m = 0; m < ENVD_MUT_COUNT; m++) {
    if (!((set >> m) & 1u))
      continue;
    int n = snprintf(out + k, outlen - k, "%s%s", k ? ", " : "", name_of(m));
    if (n < 0 || (size_t)n >= outlen - k)
      return;
    k += (size_t)n;
  }
}

int envd_mutants_parse(const char *list, unsigned *set, char *msg, size_t msglen)
{
  *set = 0;
  for (const char *p = list ? list : ""; *p;) {
    size_t n = strcspn(p, ",");
    const char *a = p, *b = p + n;
    p += n + (p[n] == ',');
    while (a < b && isspace((unsigned char)*a))
      a++;
    while (b > a && isspace((unsigned char)b[-1]))
      b--;
    if (a == b)
      continue;
    int found = -1;
    for (int m = 0; m < ENVD_MUT_COUNT && found < 0; m++)
      if (strlen(name_of(m)) == (size_t)(b - a) && memcmp(name_of(m), a, (size_t)(b - a)) == 0)
        found = m;
    if (found < 0) {
      char valid[256];
      envd_mutants_names((1u << ENVD_MUT_COUNT) - 1, valid, sizeof valid);
      snprintf(msg, msglen, "unknown envd mutant '%.*s' in ABX_ENVD_MUTANTS (valid: %s)",
               (int)(b - a), a, valid);
      return -1;
    }
    *set |= 1u << found;
  }
  return 0;
}

/* The UTF-8 sequence at s[0..n): its length (> 0) when it is a valid character; minus the
 * length of its maximal subpart (< 0) when it is invalid (each such subpart is one U+FFFD); 0
 * when s is a valid but incomplete start and more bytes may come (!final). */
static int utf8_seq(const unsigned char *s, size_t n, bool final)
{
  unsigned char b = s[0], lo = 0x80, hi = 0xBF;
  int need;
  if (b < 0x80)
    return 1;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    lo = b == 0xE0 ? 0xA0 : 0x80; /* no overlong forms */
    hi = b == 0xED ? 0x9F : 0xBF; /* no surrogates */
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    lo = b == 0xF0 ? 0x90 : 0x80;
    hi = b == 0xF4 ? 0x8F : 0xBF; /* nothing past U+10FFFF */
  } else {
    return -1;
  }
  for (int k = 1; k <= need; k++) {
    if ((size_t)k >= n)
      return final ? -k : 0;
    if (s[k] < lo || s[k] > hi)
      return -k;
    lo = 0x80;
    hi = 0xBF;
  }
  return need + 1;
}

static bool write_all(int fd, const unsigned char *d, size_t n)
{
  while (n > 0) {
    ssize_t w = write(fd, d, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    d += w;
    n -= (size_t)w;
  }
  return true;
}

#define MANGLE_CHUNK (64u * 1024u)

int envd_mutant_mangle_fd(int fd, struct stat *st)
{
  int out = memfd_create("abx-mangled", MFD_CLOEXEC);
  /* in: a chunk plus at most 3 bytes of an incomplete sequence carried over; ob: 3 bytes out
   * for each byte in at worst (every byte an invalid one) */
  unsigned char *in = malloc(MANGLE_CHUNK + 4), *ob = malloc(3 * (MANGLE_CHUNK + 4));
  bool ok = out >= 0 && in && ob && lseek(fd, 0, SEEK_SET) == 0;
  size_t have = 0;
  while (ok) {
    ssize_t n = read(fd, in + have, MANGLE_CHUNK);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      ok = false;
      break;
    }
    bool final = n == 0;
    have += (size_t)n;
    size_t i = 0, o = 0;
    while (i < have) {
      int l = utf8_seq(in + i, have - i, final);
      if (l == 0)
        break;
      if (l > 0)
        memcpy(ob + o, in + i, (size_t)l);
      else
        memcpy(ob + o, "\xEF\xBF\xBD", 3);
      o += l > 0 ? (size_t)l : 3;
      i += (size_t)(l > 0 ? l : -l);
    }
    ok = write_all(out, ob, o);
    memmove(in, in + i, have - i);
    have -= i;
    if (final)
      break;
  }
  free(in);
  free(ob);
  close(fd);
  struct stat ms;
  if (ok && lseek(out, 0, SEEK_SET) == 0 && fstat(out, &ms) == 0) {
    st->st_size = ms.st_size;
    return out;
  }
  if (out >= 0)
    close(out);
  return -1;
}

bool envd_mutant_upload_drop(const struct envd *e, int *fd, const char *path,
                             const struct envd_user *as, uint64_t size)
{
  if (!envd_mutant_on(e, ENVD_MUT_LARGE_UPLOAD_DROPPED) || size <= ENVD_MUT_UPLOAD_MAX || *fd < 0)
    return false;
  if (ftruncate(*fd, 0) < 0) { /* best effort: the file is removed next */
  }
  if (as)
    envd_fs_enter(as);
  if (path && unlink(path) < 0) { /* best effort: the answer is the success it lies with */
  }
  if (as)
    envd_fs_leave();
  close(*fd);
  *fd = -1;
  return true;
}

bool envd_mutant_hides_end(const struct envd *e, const char *env, size_t len)
{
  static const char end[] = "{\"event\":{\"end\"";
  return envd_mutant_on(e, ENVD_MUT_STREAM_NO_END) && len >= 5 + sizeof end - 1 &&
         memcmp(env + 5, end, sizeof end - 1) == 0;
}
