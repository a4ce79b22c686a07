/*
 * faults_load.c: the rule table of `abxlua serve --faults FILE`: parsing the YAML file into
 * struct fault_rule (faults_int.h), and freeing it. The file format is in faults.h.
 */
#include "faults.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "faults_int.h"

static struct fault_rule *g_rules; /* read-only once loaded */
static size_t g_nrules;

struct fault_rule *abx_faults_table(size_t *n)
{
  *n = g_nrules;
  return g_rules;
}

static void free_rule(struct fault_rule *r)
{
  free(r->glob);
  free(r->body);
  for (size_t i = 0; i < r->nhdrs; i++) {
    free(r->hdrs[i].name);
    free(r->hdrs[i].value);
  }
  free(r->hdrs);
}

void abx_faults_free(void)
{
  for (size_t i = 0; i < g_nrules; i++)
    free_rule(&g_rules[i]);
  free(g_rules);
  g_rules = NULL;
  g_nrules = 0;
}

/* ---- loading ------------------------------------------------------------------------------ */

struct loader {
  const char *file;
  yaml_document_t *doc;
  char *err;
  size_t errlen;
};

static int fail(struct loader *L, yaml_node_t *n, const char *fmt, const char *arg)
{
  char msg[256];
  snprintf(msg, sizeof msg, fmt, arg ? arg : "");
  snprintf(L->err, L->errlen, "%s:%lu: %s", L->file,
           n ? (unsigned long)n->start_mark.line + 1 : 0UL, msg);
  return -1;
}

static const char *scalar(yaml_node_t *n)
{
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int get_long(struct loader *L, yaml_node_t *n, const char *key, long long lo, long long hi,
                    long long *out)
{
  const char *s = scalar(n);
  char *end = NULL;
  errno = 0;
  long long v = s ? strtoll(s, &end, 10) : 0;
  if (!s || !*s || *end || errno || v < lo || v > hi) {
    char msg[160];
    snprintf(msg, sizeof msg, "'%s' must be an integer in %lld..%lld", key, lo, hi);
    return fail(L, n, "%s", msg);
  }
  *out = v;
  return 0;
}

static int get_bool(struct loader *L, yaml_node_t *n, const char *key, int *out)
{
  const char *s = scalar(n);
  if (s && (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0))
    *out = 1;
  else if (s && (strcmp(s, "false") == 0 || strcmp(s, "no") == 0))
    *out = 0;
  else
    return fail(L, n, "'%s' must be true or false", key);
  return 0;
}

static int set_kind(struct loader *L, yaml_node_t *n, struct fault_rule *r, enum kind k,
                    const char *key)
{
  if (r->kind != K_NONE)
    return fail(L, n, "key '%s': an action has one kind (plus delay_ms at most)", key);
  r->kind = k;
  return 0;
}

static int load_action(struct loader *L, yaml_node_t *a, struct fault_rule *r)
{
  if (a->type != YAML_MAPPING_NODE)
    return fail(L, a, "'action' must be a mapping%s", NULL);
  for (yaml_node_pair_t *p = a->data.mapping.pairs.start; p < a->data.mapping.pairs.top; p++) {
    yaml_node_t *kn = yaml_document_get_node(L->doc, p->key);
    yaml_node_t *vn = yaml_document_get_node(L->doc, p->value);
    const char *k = scalar(kn);
    long long v;
    int b;
    if (!k)
      return fail(L, kn, "action keys must be scalars%s", NULL);
    if (strcmp(k, "status") == 0) {
      if (get_long(L, vn, k, 100, 599, &v) != 0 || set_kind(L, kn, r, K_STATUS, k) != 0)
        return -1;
      r->status = (int)v;
    } else if (strcmp(k, "body") == 0) {
      if (!scalar(vn))
        return fail(L, vn, "'body' must be a string%s", NULL);
      free(r->body);
      r->body = strdup(scalar(vn));
    } else if (strcmp(k, "headers") == 0) {
      if (vn->type != YAML_MAPPING_NODE)
        return fail(L, vn, "'headers' must be a mapping of strings%s", NULL);
      for (yaml_node_pair_t *h = vn->data.mapping.pairs.start; h < vn->data.mapping.pairs.top;
           h++) {
        const char *hk = scalar(yaml_document_get_node(L->doc, h->key));
        const char *hv = scalar(yaml_document_get_node(L->doc, h->value));
        if (!hk || !hv || !*hk || strpbrk(hk, ": \r\n") || strpbrk(hv, "\r\n"))
          return fail(L, vn, "'headers' must be a mapping of header names to strings%s", NULL);
        struct hdr *nh = realloc(r->hdrs, (r->nhdrs + 1) * sizeof *nh);
        if (!nh)
          return fail(L, vn, "out of memory%s", NULL);
        r->hdrs = nh;
        r->hdrs[r->nhdrs].name = strdup(hk);
        r->hdrs[r->nhdrs].value = strdup(hv);
        r->nhdrs++;
      }
    } else if (strcmp(k, "delay_ms") == 0) {
      if (get_long(L, vn, k, 0, ABX_FAULT_MAX_HOLD_MS, &v) != 0)
        return -1;
      r->delay_ms = (long)v;
    } else if (strcmp(k, "reset") == 0) {
      const char *s = scalar(vn);
      if (s && strcmp(s, "after") == 0)
        r->reset_after = 1;
      else if (!(s && (strcmp(s, "before") == 0 || strcmp(s, "true") == 0)))
        return fail(L, vn, "'reset' must be true, before or after%s", NULL);
      if (set_kind(L, kn, r, K_RESET, k) != 0)
        return -1;
    } else if (strcmp(k, "after") == 0) {
      if (get_bool(L, vn, k, &b) != 0)
        return -1;
      r->status_after = b;
    } else if (strcmp(k, "truncate_after") == 0) {
      if (get_long(L, vn, k, 0, 1LL << 40, &v) != 0 || set_kind(L, kn, r, K_TRUNCATE, k) != 0)
        return -1;
      r->truncate = (unsigned long long)v;
    } else if (strcmp(k, "malformed_json") == 0 || strcmp(k, "no_answer") == 0) {
      if (get_bool(L, vn, k, &b) != 0)
        return -1;
      if (!b)
        return fail(L, vn, "'%s' can only be true", k);
      if (set_kind(L, kn, r, k[0] == 'm' ? K_MALFORMED : K_NO_ANSWER, k) != 0)
        return -1;
    } else if (strcmp(k, "bad_envelope") == 0) {
      const char *s = scalar(vn);
      if (s && strcmp(s, "huge_length") == 0)
        r->envelope = E_HUGE;
      else if (s && strcmp(s, "compressed") == 0)
        r->envelope = E_COMPRESSED;
      else if (s && strcmp(s, "garbage") == 0)
        r->envelope = E_GARBAGE;
      else
        return fail(L, vn, "'bad_envelope' must be huge_length, compressed or garbage%s", NULL);
      if (set_kind(L, kn, r, K_ENVELOPE, k) != 0)
        return -1;
    } else {
      return fail(L, kn, "unknown key '%s' in an action", k);
    }
  }
  if (r->kind == K_NONE && r->delay_ms == 0)
    return fail(L, a,
                "the action is empty (status, delay_ms, reset, truncate_after, malformed_json, "
                "bad_envelope or no_answer)%s",
                NULL);
  if ((r->body || r->nhdrs || r->status_after) && r->kind != K_STATUS)
    return fail(L, a, "'body', 'headers' and 'after' go with 'status'%s", NULL);
  return 0;
}

static int load_route(struct loader *L, yaml_node_t *n, struct fault_rule *r)
{
  const char *s = scalar(n);
  if (!s || !*s)
    return fail(L, n, "'route' must be \"METHOD /path-glob\" or \"/path-glob\"%s", NULL);
  const char *sp = strchr(s, ' ');
  const char *glob = s;
  snprintf(r->method, sizeof r->method, "*");
  if (sp) {
    size_t ml = (size_t)(sp - s);
    if (ml == 0 || ml >= sizeof r->method)
      return fail(L, n, "'route' has a bad method%s", NULL);
    memcpy(r->method, s, ml);
    r->method[ml] = 0;
    glob = sp;
    while (*glob == ' ')
      glob++;
  }
  if (*glob != '/' && *glob != '*')
    return fail(L, n, "'route' path glob must start with / or *%s", NULL);
  r->glob = strdup(glob);
  return r->glob ? 0 : fail(L, n, "out of memory%s", NULL);
}

static int load_rule(struct loader *L, yaml_node_t *n, struct fault_rule *r)
{
  r->probability = -1;
  r->limit = -1;
  r->rng = 1;
  if (n->type != YAML_MAPPING_NODE)
    return fail(L, n, "a fault rule must be a mapping%s", NULL);
  yaml_node_t *action = NULL;
  int has_every = 0;
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *kn = yaml_document_get_node(L->doc, p->key);
    yaml_node_t *vn = yaml_document_get_node(L->doc, p->value);
    const char *k = scalar(kn);
    long long v;
    if (!k)
      return fail(L, kn, "rule keys must be scalars%s", NULL);
    if (strcmp(k, "route") == 0) {
      if (load_route(L, vn, r) != 0)
        return -1;
    } else if (strcmp(k, "every") == 0) {
      if (get_long(L, vn, k, 1, 1000000000, &v) != 0)
        return -1;
      r->every = (unsigned long)v;
      has_every = 1;
    } else if (strcmp(k, "probability") == 0) {
      const char *s = scalar(vn);
      char *end = NULL;
      double d = s ? strtod(s, &end) : -1;
      if (!s || !*s || *end || !(d >= 0 && d <= 1))
        return fail(L, vn, "'probability' must be a number in 0..1%s", NULL);
      r->probability = d;
    } else if (strcmp(k, "seed") == 0) {
      if (get_long(L, vn, k, 0, (1LL << 62), &v) != 0)
        return -1;
      r->rng = (uint64_t)v * 0x9E3779B97F4A7C15ULL + 1; /* never 0 (xorshift) */
    } else if (strcmp(k, "limit") == 0) {
      if (get_long(L, vn, k, 0, 1LL << 40, &v) != 0)
        return -1;
      r->limit = v;
    } else if (strcmp(k, "action") == 0) {
      action = vn;
    } else {
      return fail(L, kn, "unknown key '%s' in a fault rule", k);
    }
  }
  if (!r->glob)
    return fail(L, n, "a fault rule needs 'route'%s", NULL);
  if (!action)
    return fail(L, n, "a fault rule needs 'action'%s", NULL);
  if (has_every && r->probability >= 0)
    return fail(L, n, "a fault rule has 'every' or 'probability', not both%s", NULL);
  if (!has_every)
    r->every = r->probability >= 0 ? 0 : 1;
  return load_action(L, action, r);
}

int abx_faults_load(const char *file, char *err, size_t errlen)
{
  abx_faults_free();
  FILE *f = fopen(file, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", file, strerror(errno));
    return -1;
  }
  yaml_parser_t parser;
  yaml_document_t doc;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_file(&parser, f);
  int rc = -1;
  if (!yaml_parser_load(&parser, &doc)) {
    snprintf(err, errlen, "%s:%lu: %s", file, (unsigned long)parser.problem_mark.line + 1,
             parser.problem ? parser.problem : "YAML syntax error");
    yaml_parser_delete(&parser);
    fclose(f);
    return -1;
  }
  struct loader L = {file, &doc, err, errlen};
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  yaml_node_t *list = NULL;
  if (!root || root->type != YAML_MAPPING_NODE) {
    fail(&L, root, "the file must be a mapping with 'faults'%s", NULL);
    goto out;
  }
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
       p++) {
    yaml_node_t *kn = yaml_document_get_node(&doc, p->key);
    const char *k = scalar(kn);
    if (k && strcmp(k, "faults") == 0) {
      list = yaml_document_get_node(&doc, p->value);
    } else {
      fail(&L, kn, "unknown key '%s' at the top level (only 'faults')", k ? k : "?");
      goto out;
    }
  }
  if (!list || list->type != YAML_SEQUENCE_NODE) {
    fail(&L, list ? list : root, "'faults' must be a list of rules%s", NULL);
    goto out;
  }
  size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
  g_rules = calloc(n ? n : 1, sizeof *g_rules);
  if (!g_rules) {
    snprintf(err, errlen, "%s: out of memory", file);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    g_nrules = i + 1; /* so abx_faults_free frees a half-loaded rule */
    yaml_node_t *rn = yaml_document_get_node(&doc, list->data.sequence.items.start[i]);
    if (load_rule(&L, rn, &g_rules[i]) != 0)
      goto out;
  }
  rc = 0;
out:
  if (rc != 0)
    abx_faults_free();
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  fclose(f);
  return rc;
}
