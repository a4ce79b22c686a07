/*
 * dotenv.c: the .env parser. See dotenv.h for the syntax and the limits.
 *
 * One pass over the bytes with an index; every read checks the index against len, so the input
 * needs no terminator and may hold any bytes. Values are decoded into one scratch buffer and keys
 * copied into another, each len+1 bytes: a value is never longer than the input.
 */
#include "dotenv.h"

#include <stdlib.h>
#include <string.h>

struct parser {
  const char *s;
  size_t len, pos;
  int line; /* 1-based line of s[pos] */
  abx_dotenv_error_fn on_error;
  void *ud;
  int errors;
};

/* A blank inside a line (python-dotenv's [^\S\r\n]). */
static int is_blank(char c)
{
  return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

static int is_eol(char c)
{
  return c == '\n' || c == '\r';
}

static int key_first(char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int key_char(char c)
{
  return key_first(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

/* Consumes one line end at pos (\r\n, \n or \r) and counts it. */
static void take_eol(struct parser *p)
{
  if (p->pos < p->len && p->s[p->pos] == '\r') {
    p->pos++;
    if (p->pos < p->len && p->s[p->pos] == '\n')
      p->pos++;
    p->line++;
  } else if (p->pos < p->len && p->s[p->pos] == '\n') {
    p->pos++;
    p->line++;
  }
}

static void skip_blanks(struct parser *p)
{
  while (p->pos < p->len && is_blank(p->s[p->pos]))
    p->pos++;
}

/* Skips to the end of the current line and past its line end. */
static void skip_line(struct parser *p)
{
  while (p->pos < p->len && !is_eol(p->s[p->pos]))
    p->pos++;
  take_eol(p);
}

/* Reports a malformed binding that started on 'line', then skips the rest of the current line
 * (python-dotenv resumes after the line where the failing token started). */
static void malformed(struct parser *p, int line, const char *msg)
{
  p->errors++;
  if (p->on_error)
    p->on_error(p->ud, line, msg);
  skip_line(p);
}

/* After a value: blanks, an optional # comment, then the line end or the end of input.
 * Returns 0 when that holds (the line end is consumed), -1 otherwise (nothing consumed). */
static int end_of_binding(struct parser *p)
{
  skip_blanks(p);
  if (p->pos < p->len && p->s[p->pos] == '#') {
    while (p->pos < p->len && !is_eol(p->s[p->pos]))
      p->pos++;
  }
  if (p->pos == p->len)
    return 0;
  if (is_eol(p->s[p->pos])) {
    take_eol(p);
    return 0;
  }
  return -1;
}

/* Counts the line ends in s[from, to) (for values spanning lines). */
static int count_lines(const char *s, size_t from, size_t to)
{
  int n = 0;
  for (size_t i = from; i < to; i++) {
    if (s[i] == '\n')
      n++;
    else if (s[i] == '\r' && !(i + 1 < to && s[i + 1] == '\n'))
      n++;
  }
  return n;
}

static char double_quote_escape(char c)
{
  switch (c) {
  case '\\': return '\\';
  case '\'': return '\'';
  case '"': return '"';
  case 'a': return '\a';
  case 'b': return '\b';
  case 'f': return '\f';
  case 'n': return '\n';
  case 'r': return '\r';
  case 't': return '\t';
  case 'v': return '\v';
  default: return 0;
  }
}

/* Parses the value at pos (after `=` and blanks) into val. Returns its length, or -1 with *msg
 * set when malformed (pos then still on the value's first line). */
static long parse_value(struct parser *p, char *val, const char **msg)
{
  const char *s = p->s;
  size_t n = 0;
  if (p->pos < p->len && s[p->pos] == '\'') {
    size_t start = p->pos + 1, i = start;
    while (i < p->len && s[i] != '\'')
      i++;
    if (i == p->len) {
      *msg = "unterminated single-quoted value";
      return -1;
    }
    n = i - start;
    memcpy(val, s + start, n);
    p->line += count_lines(s, start, i);
    p->pos = i + 1;
  } else if (p->pos < p->len && s[p->pos] == '"') {
    size_t start = p->pos + 1, i = start;
    for (; i < p->len && s[i] != '"'; i++) {
      if (s[i] == '\\' && i + 1 < p->len) {
        char e = double_quote_escape(s[i + 1]);
        if (e) {
          val[n++] = e;
          i++;
          continue;
        }
      }
      val[n++] = s[i];
    }
    if (i == p->len) {
      *msg = "unterminated double-quoted value";
      return -1;
    }
    p->line += count_lines(s, start, i);
    p->pos = i + 1;
  } else {
    /* unquoted: to the end of the line; a # that follows a blank (also the blanks after `=`)
     * begins a comment, so KEY=#x is "#x" but KEY= #x is empty; trailing blanks go */
    size_t start = p->pos, i = start;
    while (i < p->len && !is_eol(s[i])) {
      if (s[i] == '#' && i > 0 && is_blank(s[i - 1]))
        break;
      i++;
    }
    size_t end = i;
    while (end > start && is_blank(s[end - 1]))
      end--;
    n = end - start;
    memcpy(val, s + start, n);
    p->pos = i; /* a comment, the line end or the end of input: end_of_binding takes it */
  }
  val[n] = '\0';
  return (long)n;
}

/* One binding, from its first character (not a blank, not a line end) through its line end:
 * a comment line, or [export] KEY[=VALUE] [# comment]; a pair goes to on_pair, a malformed line
 * to the parser's on_error (and is skipped). 'key' and 'val' are scratch buffers of the input's
 * length + 1. */
static void parse_binding(struct parser *p, char *key, char *val, abx_dotenv_pair_fn on_pair)
{
  const char *s = p->s;
  int line = p->line;
  if (s[p->pos] == '#') {
    skip_line(p);
    return;
  }
  /* export prefix: the word, then at least one blank (else "export" is the key itself) */
  if (p->len - p->pos > 6 && memcmp(s + p->pos, "export", 6) == 0 && is_blank(s[p->pos + 6])) {
    p->pos += 6;
    skip_blanks(p);
  }
  if (p->pos == p->len || is_eol(s[p->pos])) {
    malformed(p, line, "`export` without a key");
    return;
  }
  if (!key_first(s[p->pos])) {
    malformed(p, line, "invalid key: a key starts with a letter or '_' ([A-Za-z_][A-Za-z0-9_.-]*)");
    return;
  }
  size_t kstart = p->pos;
  while (p->pos < p->len && key_char(s[p->pos]))
    p->pos++;
  size_t klen = p->pos - kstart;
  if (p->pos < p->len && !is_blank(s[p->pos]) && !is_eol(s[p->pos]) && s[p->pos] != '=' &&
      s[p->pos] != '#') {
    malformed(p, line, "invalid character in key (keys match [A-Za-z_][A-Za-z0-9_.-]*)");
    return;
  }
  memcpy(key, s + kstart, klen);
  key[klen] = '\0';
  skip_blanks(p);
  if (p->pos == p->len || s[p->pos] != '=') {
    /* a key alone sets nothing; anything but a comment after it is malformed */
    if (end_of_binding(p) != 0)
      malformed(p, line, "expected '=' after the key");
    return;
  }
  p->pos++;
  skip_blanks(p);
  const char *msg = NULL;
  long vlen = parse_value(p, val, &msg);
  if (vlen < 0) {
    malformed(p, line, msg);
    return;
  }
  if (end_of_binding(p) != 0) {
    malformed(p, line, "unexpected text after the closing quote (only a # comment may follow)");
    return;
  }
  if (on_pair)
    on_pair(p->ud, key, val, (size_t)vlen);
}

int abx_dotenv_parse(const char *text, size_t len, abx_dotenv_pair_fn on_pair,
                     abx_dotenv_error_fn on_error, void *ud)
{
  if (len > ABX_DOTENV_MAX) {
    if (on_error)
      on_error(ud, 0, "input is larger than 1 MiB");
    return -1;
  }
  char *key = malloc(len + 1), *val = malloc(len + 1);
  if (!key || !val) {
    free(key);
    free(val);
    if (on_error)
      on_error(ud, 0, "out of memory");
    return -1;
  }
  struct parser p = {.s = text, .len = len, .pos = 0, .line = 1, .on_error = on_error, .ud = ud};
  const char *s = text;
  for (;;) {
    /* blanks and empty lines between bindings */
    while (p.pos < p.len && (is_blank(s[p.pos]) || is_eol(s[p.pos]))) {
      if (is_eol(s[p.pos]))
        take_eol(&p);
      else
        p.pos++;
    }
    if (p.pos == p.len)
      break;
    parse_binding(&p, key, val, on_pair);
  }
  free(key);
  free(val);
  return p.errors;
}
