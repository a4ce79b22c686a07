/*
 * sudo_request.c: the broker's reading of a request (records → struct sudo_req) and what it
 * runs for it (struct sudo_plan: -i / -s shells, secure_path lookup, SUDO_COMMAND). Contract in
 * sudo.h; runs in a request handler of the broker (one thread).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/sudo.h"
#include "envd/envd_int.h"

#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sudo_req_has(const struct sudo_req *r, char f)
{
  return strchr(r->flags, f) != NULL;
}

void sudo_say(int fd, const char *fmt, ...)
{
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n > sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  if (fd >= 0 && write(fd, buf, (size_t)n) < 0) {
  }
}

static int push(char ***v, size_t *n, char *s)
{
  char **nv = realloc(*v, (*n + 2) * sizeof *nv);
  if (!nv)
    return -1;
  nv[(*n)++] = s;
  nv[*n] = NULL;
  *v = nv;
  return 0;
}

/* Records (sudo.h) → req. Returns 0 or -1 (malformed or unknown tag: fail closed). */
int sudo_req_parse(char *b, size_t len, struct sudo_req *r)
{
  memset(r, 0, sizeof *r);
  r->flags = "";
  r->cwd = "/";
  r->umask = 022;
  if (len == 0 || b[len - 1] != 0)
    return -1;
  for (char *p = b; p < b + len; p += strlen(p) + 1) {
    char *v = p + 1;
    int rc = 0;
    switch (*p) {
    case 'f': r->flags = v; break;
    case 'u': r->user = v; break;
    case 'g': r->group = v; break;
    case 'c': r->cwd = v; break;
    case 'm': r->umask = (mode_t)(strtoul(v, NULL, 8) & 0777); break;
    case 'p': rc = push(&r->keep, &r->nkeep, v); break;
    case 'e': rc = push(&r->env, &r->nenv, v); break;
    case 's': rc = strchr(v, '=') && v[0] != '=' ? push(&r->sets, &r->nsets, v) : -1; break;
    case 'a': rc = push(&r->args, &r->nargs, v); break;
    default: return -1;
    }
    if (rc)
      return -1;
  }
  if (strspn(r->flags, "EHilsvnF") != strlen(r->flags))
    return -1;
  /* nothing to run and no mode that needs nothing: the client never sends that */
  return r->nargs || strpbrk(r->flags, "islv") ? 0 : -1;
}

/* sudo's -s/-i command string: args joined by spaces, every character but alphanumerics, '_',
 * '-' and '$' escaped with a backslash (sudo.c parse_args, "shell -c"). */
static char *shell_join(char **args, size_t n)
{
  size_t cap = 1;
  for (size_t i = 0; i < n; i++)
    cap += strlen(args[i]) * 2 + 1;
  char *s = malloc(cap), *o = s;
  if (!s)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    if (i)
      *o++ = ' ';
    for (const char *c = args[i]; *c; c++) {
      unsigned char u = (unsigned char)*c;
      if (!((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
            u == '_' || u == '-' || u == '$'))
        *o++ = '\\';
      *o++ = *c;
    }
  }
  *o = 0;
  return s;
}

/* The command's path: as given with a '/' (relative to cwd), else the first executable on
 * secure_path, as sudo looks commands up when secure_path is set. NULL: not found. */
char *sudo_find_cmd(const char *cmd, const char *cwd, const char *path)
{
  struct stat st;
  if (strchr(cmd, '/')) {
    char *p = NULL;
    if (asprintf(&p, "%s%s%s", cmd[0] == '/' ? "" : cwd, cmd[0] == '/' ? "" : "/", cmd) < 0)
      return NULL;
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
      return p;
    free(p);
    return NULL;
  }
  return envd_path_lookup(path, cmd, 1);
}

static const char *env_val(const struct sudo_req *r, const char *k)
{
  size_t kl = strlen(k);
  for (size_t i = 0; i < r->nenv; i++)
    if (strncmp(r->env[i], k, kl) == 0 && r->env[i][kl] == '=')
      return r->env[i] + kl + 1;
  return NULL;
}

void sudo_plan_free(struct sudo_plan *p)
{
  free(p->path);
  free(p->argv);
  free(p->joined);
  free(p->command);
  free(p->argv0);
}

/* 0, or -1 after telling the client why (on errfd). */
int sudo_plan_make(const struct sudo_req *r, const struct passwd *caller,
                   const struct passwd *target, const char *secure_path, int errfd,
                   struct sudo_plan *pl)
{
  memset(pl, 0, sizeof *pl);
  pl->cwd = r->cwd;
  pl->argv = calloc(r->nargs + 4, sizeof *pl->argv);
  if (!pl->argv)
    return -1;
  if (sudo_req_has(r, 'i') || sudo_req_has(r, 's')) {
    const char *sh = sudo_req_has(r, 'i') ? target->pw_shell : env_val(r, "SHELL");
    if (!sudo_req_has(r, 'i') && (!sh || !*sh))
      sh = caller->pw_shell;
    if (!sh || !*sh)
      sh = "/bin/sh";
    pl->path = strdup(sh);
    const char *base = strrchr(sh, '/');
    base = base ? base + 1 : sh;
    if (sudo_req_has(r, 'i')) { /* a login shell: argv[0] "-bash", in the target's home */
      if (asprintf(&pl->argv0, "-%s", base) < 0)
        pl->argv0 = NULL;
      pl->cwd = target->pw_dir && *target->pw_dir ? target->pw_dir : "/";
    }
    size_t k = 0;
    pl->argv[k++] = pl->argv0 ? pl->argv0 : (char *)sh;
    if (r->nargs) {
      pl->joined = shell_join(r->args, r->nargs);
      pl->argv[k++] = "-c";
      pl->argv[k++] = pl->joined;
    }
    if (!pl->path || (r->nargs && !pl->joined) ||
        asprintf(&pl->command, "%s%s%s", sh, r->nargs ? " -c " : "", r->nargs ? pl->joined : "") <
            0) {
      pl->command = NULL;
      sudo_say(errfd, "sudo: out of memory");
      return -1;
    }
    return 0;
  }
  pl->path = sudo_find_cmd(r->args[0], r->cwd, secure_path);
  if (!pl->path) {
    sudo_say(errfd, "sudo: %s: command not found", r->args[0]);
    return -1;
  }
  size_t cl = strlen(pl->path) + 1;
  for (size_t i = 0; i < r->nargs; i++) {
    pl->argv[i] = r->args[i];
    cl += strlen(r->args[i]) + 1;
  }
  pl->command = malloc(cl);
  if (!pl->command)
    return -1;
  strcpy(pl->command, pl->path);
  for (size_t i = 1; i < r->nargs; i++) {
    strcat(pl->command, " ");
    strcat(pl->command, r->args[i]);
  }
  return 0;
}
