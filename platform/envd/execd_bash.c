/*
 * execd_bash.c: the script a bash session's run is (bash_session.go buildWrappedScript) and the
 * markers it prints back (the `export -p` dump, __PWD__, __EXIT_CODE__), for execd_session.c.
 * The script: `exec 2>&1` (execd gives bash one pipe for both streams), `export K='v'` for each
 * session variable (sorted; names [A-Za-z_][A-Za-z0-9_]*, values up to 8 KiB, not PS1-PS4 or
 * PROMPT_COMMAND), `cd 'dir'`, the command, then the markers.
 * Source: components/execd/pkg/runtime/bash_session.go @3bb6fad.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/execd_cmd_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PERSISTED_VALUE 8192 /* maxPersistedEnvValueSize */

/* isValidEnvKey: [A-Za-z_][A-Za-z0-9_]*. */
static bool env_key_ok(const char *k, size_t n)
{
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    char ch = k[i];
    bool alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
    if (!alpha && (i == 0 || ch < '0' || ch > '9'))
      return false;
  }
  return true;
}

/* envKeysNotPersisted and the size cap. */
static bool persisted(const char *k, size_t vlen)
{
  static const char *const no[] = {"PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", NULL};
  for (const char *const *p = no; *p; p++)
    if (strcmp(k, *p) == 0)
      return false;
  return vlen <= MAX_PERSISTED_VALUE;
}

/* shellEscape: '...' with each ' as '"'"'. */
static void put_quoted(FILE *f, const char *v)
{
  fputc('\'', f);
  for (; *v; v++)
    if (*v == '\'')
      fputs("'\"'\"'", f);
    else
      fputc(*v, f);
  fputc('\'', f);
}

static int key_cmp(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *execd_bash_script(const char *command, json_t *env, const char *cwd)
{
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  if (!f)
    return NULL;
  fputs("exec 2>&1\n", f);
  size_t nk = json_object_size(env), k = 0;
  const char **keys = nk ? calloc(nk, sizeof *keys) : NULL;
  const char *key;
  json_t *v;
  json_object_foreach(env, key, v) if (keys && env_key_ok(key, strlen(key)) &&
                                       persisted(key, json_string_length(v))) keys[k++] = key;
  if (keys)
    qsort(keys, k, sizeof *keys, key_cmp);
  for (size_t i = 0; i < k; i++) {
    fprintf(f, "export %s=", keys[i]);
    put_quoted(f, json_string_value(json_object_get(env, keys[i])));
    fputc('\n', f);
  }
  free(keys);
  if (cwd && *cwd) {
    fputs("cd ", f);
    put_quoted(f, cwd);
    fputc('\n', f);
  }
  size_t cl = strlen(command);
  fputs(command, f);
  if (cl == 0 || command[cl - 1] != '\n')
    fputc('\n', f);
  fputs("__USER_EXIT_CODE__=$?\n"
        "printf \"\\n%s\\n\" \"__ENV_DUMP_START__\"\n"
        "export -p\n"
        "printf \"%s\\n\" \"__ENV_DUMP_END__\"\n"
        "printf \"__PWD__:%s\\n\" \"$(pwd)\"\n"
        "printf \"__EXIT_CODE__:%s\\n\" \"$__USER_EXIT_CODE__\"\n"
        "exit \"$__USER_EXIT_CODE__\"\n",
        f);
  if (fclose(f) != 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* parseExportLine of `declare -x NAME[="value"]` into d->env; bash's double quoting undone. */
static void parse_export(struct execd_dump *d, const char *s, size_t n)
{
  static const char pre[] = "declare -x ";
  if (n <= sizeof pre - 1 || memcmp(s, pre, sizeof pre - 1) != 0)
    return;
  const char *name = s + sizeof pre - 1, *end = s + n;
  const char *eq = memchr(name, '=', (size_t)(end - name));
  size_t nl = (size_t)((eq ? eq : end) - name);
  if (!env_key_ok(name, nl))
    return;
  char *val = malloc((size_t)(end - name) + 1), *w = val;
  if (!val)
    return;
  if (eq) {
    const char *v = eq + 1;
    bool dq = end - v >= 2 && *v == '"' && end[-1] == '"';
    const char *a = dq ? v + 1 : v, *b = dq ? end - 1 : end;
    for (; a < b; a++) {
      if (dq && *a == '\\' && a + 1 < b && strchr("$`\"\\", a[1]))
        a++;
      *w++ = *a;
    }
  }
  *w = 0;
  char key[256];
  if (nl < sizeof key) {
    memcpy(key, name, nl);
    key[nl] = 0;
    if (persisted(key, strlen(val)))
      json_object_set_new(d->env, key, json_string(val));
  }
  free(val);
}

bool execd_dump_line(struct execd_dump *d, const char *s, size_t n)
{
  static const char start[] = "__ENV_DUMP_START__", stop[] = "__ENV_DUMP_END__",
                    exitp[] = "__EXIT_CODE__:", pwdp[] = "__PWD__:";
  if (n == sizeof start - 1 && memcmp(s, start, n) == 0)
    d->in_env = true;
  else if (n == sizeof stop - 1 && memcmp(s, stop, n) == 0)
    d->in_env = false;
  else if (n >= sizeof exitp - 1 && memcmp(s, exitp, sizeof exitp - 1) == 0)
    ; /* the exit code is the process's own (the script exits with it) */
  else if (n >= sizeof pwdp - 1 && memcmp(s, pwdp, sizeof pwdp - 1) == 0) {
    free(d->pwd);
    d->pwd = strndup(s + sizeof pwdp - 1, n - (sizeof pwdp - 1));
  } else if (d->in_env)
    parse_export(d, s, n);
  else
    return false;
  return true;
}

void execd_go_duration(long long ms, char out[64])
{
  if (ms < 1000) {
    snprintf(out, 64, "%lldms", ms);
    return;
  }
  long long h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, frac = ms % 1000;
  char sec[24];
  if (frac) {
    snprintf(sec, sizeof sec, "%lld.%03lld", s, frac);
    for (size_t l = strlen(sec); sec[l - 1] == '0'; l--)
      sec[l - 1] = 0;
  } else
    snprintf(sec, sizeof sec, "%lld", s);
  if (h)
    snprintf(out, 64, "%lldh%lldm%ss", h, m, sec);
  else if (m)
    snprintf(out, 64, "%lldm%ss", m, sec);
  else
    snprintf(out, 64, "%ss", sec);
}
