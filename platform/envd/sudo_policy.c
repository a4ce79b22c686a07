/*
 * sudo_policy.c: the part of sudoers(5) the sandbox's sudo broker applies, and sudo's
 * env_reset environment. Contract in sudo.h; runs in the broker's request handler (one thread).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/sudo.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_DEPTH 8 /* include nesting, as sudo's own limit guards loops */

struct eval {
  const char *name;
  uid_t uid;
  const gid_t *groups;
  int ngroups;
  struct sudo_policy *p;
};

static void parse_file(struct eval *ev, const char *path, int depth);

static char *trim(char *s)
{
  while (isspace((unsigned char)*s))
    s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1]))
    s[--n] = 0;
  return s;
}

static void bad(struct eval *ev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(struct eval *ev, const char *fmt, ...)
{
  if (ev->p->verdict == SUDO_BAD_FILE)
    return; /* the first reason is the one to fix */
  ev->p->verdict = SUDO_BAD_FILE;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ev->p->why, sizeof ev->p->why, fmt, ap);
  va_end(ap);
}

static int in_group(struct eval *ev, gid_t gid)
{
  for (int i = 0; i < ev->ngroups; i++)
    if (ev->groups[i] == gid)
      return 1;
  return 0;
}

/* One WHO token: 1 names the caller, 0 does not, -1 a form not understood (may name anyone). */
static int who_matches(struct eval *ev, const char *t)
{
  if (!*t || strpbrk(t, "!\"\\+") || strncmp(t, "%:", 2) == 0)
    return -1;
  if (strcmp(t, "ALL") == 0)
    return 1;
  if (t[0] == '#' || (t[0] == '%' && t[1] == '#')) {
    const char *d = t[0] == '#' ? t + 1 : t + 2;
    char *end = NULL;
    unsigned long id = strtoul(d, &end, 10);
    if (!*d || *end)
      return -1;
    return t[0] == '#' ? id == (unsigned long)ev->uid : in_group(ev, (gid_t)id);
  }
  if (t[0] == '%') {
    struct group *g = getgrnam(t + 1);
    if (!g) { /* sudo matches group names case-insensitively (Debian's build) */
      setgrent();
      while ((g = getgrent()) && strcasecmp(g->gr_name, t + 1) != 0)
        ;
      endgrent();
    }
    return g ? in_group(ev, g->gr_gid) : 0;
  }
  int alias = isupper((unsigned char)t[0]);
  for (const char *c = t; *c && alias; c++)
    alias = isupper((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '_';
  if (alias)
    return -1; /* a User_Alias: the broker does not expand aliases */
  return strcasecmp(t, ev->name) == 0;
}

/* A rule's right-hand side after '=': 0 NOPASSWD ALL, 1 PASSWD ALL, -1 not understood. */
static int rule_kind(char *rhs, int *runas_group)
{
  char *s = trim(rhs);
  *runas_group = 0;
  if (*s == '(') {
    char *close = strchr(s, ')');
    if (!close)
      return -1;
    *close = 0;
    char runas[64];
    size_t k = 0;
    for (char *c = s + 1; *c && k + 1 < sizeof runas; c++)
      if (!isspace((unsigned char)*c))
        runas[k++] = *c;
    runas[k] = 0;
    if (strcmp(runas, "ALL:ALL") == 0)
      *runas_group = 1;
    else if (strcmp(runas, "ALL") != 0)
      return -1;
    s = trim(close + 1);
  } else {
    return -1; /* no runas list means root only: not the form the broker applies */
  }
  int nopasswd = 0;
  for (;;) {
    char *colon = strchr(s, ':');
    if (!colon)
      break;
    *colon = 0;
    char *tag = trim(s);
    if (strcmp(tag, "NOPASSWD") == 0)
      nopasswd = 1;
    else if (strcmp(tag, "PASSWD") == 0)
      nopasswd = 0;
    else if (strcmp(tag, "SETENV") != 0)
      return -1;
    s = trim(colon + 1);
  }
  return strcmp(s, "ALL") == 0 ? (nopasswd ? 0 : 1) : -1;
}

static void rule(struct eval *ev, char *line, const char *path, int lineno)
{
  char *eq = strchr(line, '=');
  if (!eq)
    return; /* not a rule sudo would accept either */
  *eq = 0;
  char *lhs = trim(line);
  /* lhs is "who[, who...] host": the host list is the last word */
  char *sp = lhs + strlen(lhs);
  while (sp > lhs && !isspace((unsigned char)sp[-1]))
    sp--;
  if (sp == lhs)
    return; /* no user list: not a rule */
  char *host = trim(sp);
  sp[-1] = 0;
  int named = 0, unknown = 0;
  char *save = NULL;
  for (char *t = strtok_r(lhs, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int m = who_matches(ev, trim(t));
    named |= m == 1;
    unknown |= m < 0;
  }
  if (!named && !unknown)
    return;
  int rg = 0, kind = strcmp(host, "ALL") == 0 && !unknown ? rule_kind(eq + 1, &rg) : -1;
  if (kind < 0) {
    ev->p->verdict = SUDO_UNSUPPORTED;
    snprintf(ev->p->why, sizeof ev->p->why, "%s:%d", path, lineno);
    return;
  }
  ev->p->verdict = kind == 0 ? SUDO_ALLOW : SUDO_PASSWORD;
  ev->p->runas_group = rg;
}

static void defaults(struct eval *ev, char *line)
{
  if (line[8] != ' ' && line[8] != '\t')
    return; /* Defaults:user, Defaults>runas, ...: scoped settings are not applied */
  char *s = trim(line + 8);
  if (strncmp(s, "secure_path", 11) != 0)
    return;
  s = trim(s + 11);
  if (*s != '=')
    return;
  s = trim(s + 1);
  size_t n = strlen(s);
  if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
    s[n - 1] = 0;
    s++;
  }
  snprintf(ev->p->secure_path, sizeof ev->p->secure_path, "%s", s);
}

static int skip_name(const char *n)
{
  size_t l = strlen(n);
  return n[0] == 0 || strchr(n, '.') || n[l - 1] == '~';
}

static int cmp_names(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void parse_dir(struct eval *ev, const char *dir, int depth)
{
  DIR *d = opendir(dir);
  if (!d)
    return; /* sudo skips a missing includedir */
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (skip_name(de->d_name))
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn)
        break;
      names = nn;
    }
    names[n] = strdup(de->d_name);
    if (names[n])
      n++;
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    parse_file(ev, p, depth + 1);
    free(names[i]);
  }
  free(names);
}

/* Strip a comment: '#' at a word start, unless it is #include(dir) or a #uid / %#gid. */
static void strip_comment(char *s)
{
  for (char *c = s; *c; c++) {
    if (*c != '#' || (c > s && !isspace((unsigned char)c[-1]) && c[-1] != ',' && c[-1] != '%'))
      continue;
    if (isdigit((unsigned char)c[1]) || (c == s && strncmp(c, "#include", 8) == 0))
      continue;
    *c = 0;
    return;
  }
}

static void line_of(struct eval *ev, char *line, const char *path, int lineno, int depth)
{
  strip_comment(line);
  char *s = trim(line);
  if (!*s)
    return;
  const char *dirs[] = {"@includedir", "#includedir"}, *files[] = {"@include", "#include"};
  for (int i = 0; i < 2; i++) {
    size_t n = strlen(dirs[i]);
    if (strncmp(s, dirs[i], n) == 0 && isspace((unsigned char)s[n])) {
      parse_dir(ev, trim(s + n), depth);
      return;
    }
  }
  for (int i = 0; i < 2; i++) {
    size_t n = strlen(files[i]);
    if (strncmp(s, files[i], n) == 0 && isspace((unsigned char)s[n])) {
      parse_file(ev, trim(s + n), depth + 1);
      return;
    }
  }
  if (strncmp(s, "Defaults", 8) == 0) {
    defaults(ev, s);
    return;
  }
  static const char *const aliases[] = {"User_Alias", "Runas_Alias", "Host_Alias", "Cmnd_Alias",
                                        "Cmd_Alias"};
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strncmp(s, aliases[i], strlen(aliases[i])) == 0 &&
        isspace((unsigned char)s[strlen(aliases[i])]))
      return; /* a rule using one is UNSUPPORTED (who_matches, rule_kind) */
  rule(ev, s, path, lineno);
}

static void parse_file(struct eval *ev, const char *path, int depth)
{
  if (depth > MAX_DEPTH) {
    bad(ev, "%s: too many levels of includes (at most %d)", path, MAX_DEPTH);
    return;
  }
  FILE *f = fopen(path, "re");
  if (!f) {
    if (depth > 0 && errno == ENOENT)
      return; /* an @include of a file that is not there is skipped by sudo */
    bad(ev, "unable to open %s: %s", path, strerror(errno));
    return;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    bad(ev, "%s is not a regular file", path);
  } else if (st.st_uid != 0) {
    bad(ev, "%s is owned by uid %u, should be 0", path, (unsigned)st.st_uid);
  } else if (st.st_mode & 022) {
    bad(ev, "%s is writable by group or others", path);
  } else {
    char *buf = NULL, *line = NULL;
    size_t cap = 0, len = 0;
    int lineno = 0, start = 1;
    ssize_t k;
    while ((k = getline(&line, &cap, f)) >= 0) {
      lineno++;
      while (k > 0 && (line[k - 1] == '\n' || line[k - 1] == '\r'))
        line[--k] = 0;
      int cont = k > 0 && line[k - 1] == '\\';
      if (cont)
        line[--k] = 0;
      char *nb = realloc(buf, len + (size_t)k + 2);
      if (!nb)
        break;
      buf = nb;
      memcpy(buf + len, line, (size_t)k);
      len += (size_t)k;
      buf[len++] = ' ';
      buf[len] = 0;
      if (len == (size_t)k + 1)
        start = lineno;
      if (cont)
        continue;
      line_of(ev, buf, path, start, depth);
      len = 0;
    }
    free(line);
    free(buf);
  }
  fclose(f);
}

void sudo_policy_eval(const char *name, uid_t uid, const gid_t *groups, int ngroups,
                      struct sudo_policy *p)
{
  memset(p, 0, sizeof *p);
  p->verdict = SUDO_NOT_LISTED;
  struct eval ev = {name, uid, groups, ngroups, p};
  struct stat st;
  if (stat("/etc/sudoers", &st) == 0)
    parse_file(&ev, "/etc/sudoers", 0);
  else /* a host without the sudo package: the template's own /etc/sudoers.d still counts */
    parse_dir(&ev, "/etc/sudoers.d", 0);
  if (!p->secure_path[0])
    snprintf(p->secure_path, sizeof p->secure_path, "%s", SUDO_SECURE_PATH);
}

/* ---- the command's environment --------------------------------------------------------------- */

/* sudo 1.9.13's built-in lists (`sudo -V` as root on Debian 12). */
static const char *const env_keep[] = {
    "XDG_CURRENT_DESKTOP", "XAUTHORIZATION", "XAUTHORITY",  "PS2",     "PS1",    "LS_COLORS",
    "KRB5CCNAME",          "HOSTNAME",       "DPKG_COLORS", "DISPLAY", "COLORS", NULL};
static const char *const env_check[] = {"TZ",       "TERM", "LINGUAS",   "LC_*",
                                        "LANGUAGE", "LANG", "COLORTERM", NULL};
static const char *const env_delete[] = {"RUBYOPT",
                                         "RUBYLIB",
                                         "PYTHONUSERBASE",
                                         "PYTHONINSPECT",
                                         "PYTHONPATH",
                                         "PYTHONHOME",
                                         "TMPPREFIX",
                                         "ZDOTDIR",
                                         "READNULLCMD",
                                         "NULLCMD",
                                         "FPATH",
                                         "PERL5DB",
                                         "PERL5OPT",
                                         "PERL5LIB",
                                         "PERLLIB",
                                         "PERLIO_DEBUG",
                                         "JAVA_TOOL_OPTIONS",
                                         "SHELLOPTS",
                                         "BASHOPTS",
                                         "GLOBIGNORE",
                                         "PS4",
                                         "BASH_ENV",
                                         "ENV",
                                         "TERMCAP",
                                         "TERMPATH",
                                         "TERMINFO_DIRS",
                                         "TERMINFO",
                                         "_RLD*",
                                         "LD_*",
                                         "PATH_LOCALE",
                                         "NLSPATH",
                                         "HOSTALIASES",
                                         "RES_OPTIONS",
                                         "LOCALDOMAIN",
                                         "CDPATH",
                                         "IFS",
                                         NULL};

/* Whether the name of "K=V" kv matches a list entry (a trailing '*' is a prefix). */
static int listed(const char *const *list, const char *kv)
{
  size_t kl = strcspn(kv, "=");
  for (size_t i = 0; list[i]; i++) {
    size_t n = strlen(list[i]);
    if (list[i][n - 1] == '*' ? strncmp(kv, list[i], n - 1) == 0
                              : kl == n && strncmp(kv, list[i], n) == 0)
      return 1;
  }
  return 0;
}

/* env_check: a value with '%' (or '/', but for TZ that is not absolute and has no "..") goes. */
static int check_ok(const char *kv)
{
  const char *v = strchr(kv, '=') + 1;
  if (strchr(v, '%'))
    return 0;
  if (strncmp(kv, "TZ=", 3) == 0)
    return v[0] != '/' && !strstr(v, "..");
  return strchr(v, '/') == NULL;
}

struct envv {
  char **v;
  size_t n, cap;
};

/* Put "K=V" (copied), replacing an earlier K. */
static int put(struct envv *e, const char *kv)
{
  size_t kl = strcspn(kv, "=");
  for (size_t i = 0; i < e->n; i++)
    if (strncmp(e->v[i], kv, kl) == 0 && e->v[i][kl] == '=') {
      char *d = strdup(kv);
      if (!d)
        return -1;
      free(e->v[i]);
      e->v[i] = d;
      return 0;
    }
  if (e->n + 2 > e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 64;
    char **nv = realloc(e->v, cap * sizeof *nv);
    if (!nv)
      return -1;
    e->v = nv;
    e->cap = cap;
  }
  if (!(e->v[e->n] = strdup(kv)))
    return -1;
  e->v[++e->n] = NULL;
  return 0;
}

static int putf(struct envv *e, const char *k, const char *v)
{
  char *kv = NULL;
  if (asprintf(&kv, "%s=%s", k, v) < 0)
    return -1;
  int rc = put(e, kv);
  free(kv);
  return rc;
}

char **sudo_build_env(const struct sudo_env_in *in)
{
  struct envv e = {0};
  int fail = 0;
  for (size_t i = 0; i < in->ncaller; i++) {
    const char *kv = in->caller[i], *eq = strchr(kv, '=');
    if (!eq || eq == kv || strncmp(eq + 1, "()", 2) == 0)
      continue;
    int keep = 0;
    for (size_t j = 0; j < in->nkeep && !keep; j++)
      keep = strlen(in->keep[j]) == (size_t)(eq - kv) &&
             strncmp(kv, in->keep[j], (size_t)(eq - kv)) == 0;
    if (!keep && in->preserve)
      keep = !listed(env_delete, kv) && (!listed(env_check, kv) || check_ok(kv));
    else if (!keep)
      keep = listed(env_keep, kv) || (listed(env_check, kv) && check_ok(kv));
    if (keep)
      fail |= put(&e, kv);
  }
  char num[32];
  fail |= putf(&e, "PATH", in->secure_path);
  if (!in->preserve || in->set_home)
    fail |= putf(&e, "HOME", in->target_home);
  if (!in->preserve) {
    fail |= putf(&e, "SHELL", in->target_shell);
    char mail[600];
    snprintf(mail, sizeof mail, "/var/mail/%s", in->target_name);
    fail |= putf(&e, "MAIL", mail);
  }
  fail |= putf(&e, "LOGNAME", in->target_name);
  fail |= putf(&e, "USER", in->target_name);
  fail |= putf(&e, "SUDO_COMMAND", in->command);
  fail |= putf(&e, "SUDO_USER", in->caller_name);
  snprintf(num, sizeof num, "%u", (unsigned)in->caller_uid);
  fail |= putf(&e, "SUDO_UID", num);
  snprintf(num, sizeof num, "%u", (unsigned)in->caller_gid);
  fail |= putf(&e, "SUDO_GID", num);
  for (size_t i = 0; i < in->nsets; i++)
    fail |= put(&e, in->sets[i]);
  if (fail || !e.v) {
    for (size_t i = 0; i < e.n; i++)
      free(e.v[i]);
    free(e.v);
    return NULL;
  }
  return e.v;
}
