/*
 * egress.c: the opensandbox flavour's egress sidecar: the policy API OpenSandbox's egress
 * sidecar serves on port 18080 of a sandbox (reached through the ingress, as the sidecar is),
 * on the platform's outbound rules (net/network.h abx_network_update, the code PUT network of
 * the E2B API uses). Sources: OpenSandbox @3bb6fad specs/egress-api.yaml (GET|PATCH|DELETE
 * /policy, NetworkPolicy, NetworkRule) and components/egress/policy_server.go (POST|PUT /policy
 * replaces the policy; errors are Go http.Error text/plain), pkg/policy/policy.go (ParsePolicy:
 * empty, null or {} is deny-all; defaultAction and action lower-cased, default deny; a target
 * is an IP, a CIDR or a domain). Also the create request's networkPolicy (create.c).
 * Differences (docs/PLATFORM.md "Flavours"): every sandbox has the policy API (the real server
 * adds the sidecar only when networkPolicy was given), allow-all when created without one; no
 * OPENSANDBOX-EGRESS-AUTH; rules are not evaluated in order: the platform's rules apply (an
 * allow target beats a deny target; defaultAction deny is "no internet"); domain targets are kept
 * and reported but match nothing (no DNS leaves the machine); unknown fields are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/net.h"
#include "opensandbox_int.h"
#include "sandbox/sandbox.h"

#define BAD(...)                                                                                   \
  do {                                                                                             \
    snprintf(msg, n, __VA_ARGS__);                                                                 \
    return -1;                                                                                     \
  } while (0)

/* One NetworkRule normalized into `out` (array); 0, or -1 with msg. */
static int rule_add(json_t *r, json_t *out, char *msg, size_t n)
{
  const char *k;
  json_t *v;
  if (!json_is_object(r))
    BAD("invalid policy: a rule must be an object {action, target}");
  json_object_foreach(r, k, v) if (strcmp(k, "action") && strcmp(k, "target"))
      BAD("invalid policy: unknown rule field %.40s (NetworkRule has action, target)", k);
  json_t *a = json_object_get(r, "action"), *t = json_object_get(r, "target");
  const char *act = json_is_string(a) ? json_string_value(a) : "";
  if ((a && !json_is_string(a)) || (*act && strcasecmp(act, "allow") && strcasecmp(act, "deny")))
    BAD("invalid policy: unsupported action %.40s", json_is_string(a) ? act : "(not a string)");
  const char *tg = json_is_string(t) ? json_string_value(t) : "";
  if (!*tg)
    BAD("invalid policy: egress target cannot be empty");
  if (abx_network_entry_ok(tg, 1) != 0)
    BAD("invalid policy: target %.100s is no IP address, CIDR or domain", tg);
  return json_array_append_new(out, json_pack("{s:s,s:s}", "action",
                                              strcasecmp(act, "allow") == 0 ? "allow" : "deny",
                                              "target", tg));
}

int opensandbox_policy_parse(json_t *in, json_t **out, char *msg, size_t n)
{
  *out = NULL;
  if (!in || json_is_null(in) || (json_is_object(in) && json_object_size(in) == 0)) {
    *out = json_pack("{s:s,s:[]}", "defaultAction", "deny", "egress");
    return *out ? 0 : -1;
  }
  const char *k;
  json_t *v;
  if (!json_is_object(in))
    BAD("invalid policy: a NetworkPolicy must be an object {defaultAction, egress}");
  json_object_foreach(in, k, v) if (strcmp(k, "defaultAction") && strcmp(k, "egress"))
      BAD("invalid policy: unknown field %.40s (NetworkPolicy has defaultAction, egress)", k);
  json_t *d = json_object_get(in, "defaultAction"), *eg = json_object_get(in, "egress");
  const char *da = json_is_string(d) ? json_string_value(d) : "";
  if ((d && !json_is_null(d) && !json_is_string(d)) ||
      (*da && strcasecmp(da, "allow") && strcasecmp(da, "deny")))
    BAD("invalid policy: defaultAction must be allow or deny");
  if (eg && !json_is_null(eg) && !json_is_array(eg))
    BAD("invalid policy: egress must be an array of rules");
  if (json_array_size(eg) > ABX_NET_MAX_ENTRIES)
    BAD("invalid policy: at most %d egress rules", ABX_NET_MAX_ENTRIES);
  json_t *rules = json_array();
  size_t i;
  json_array_foreach(eg, i, v) if (rule_add(v, rules, msg, n) != 0)
  {
    json_decref(rules);
    return -1;
  }
  *out = json_pack("{s:s,s:o}", "defaultAction", strcasecmp(da, "allow") == 0 ? "allow" : "deny",
                   "egress", rules);
  return 0;
}

json_t *opensandbox_policy_network(const json_t *pol)
{
  json_t *allow = json_array(), *deny = json_array(), *r;
  size_t i;
  json_array_foreach(json_object_get(pol, "egress"), i, r)
  {
    const char *t = json_string_value(json_object_get(r, "target"));
    if (strcmp(json_string_value(json_object_get(r, "action")), "allow") == 0)
      json_array_append_new(allow, json_string(t));
    else if (abx_network_entry_ok(t, 0) == 0) /* a domain cannot be denied: it matches nothing */
      json_array_append_new(deny, json_string(t));
  }
  const char *da = json_string_value(json_object_get(pol, "defaultAction"));
  return json_pack("{s:b,s:{s:o,s:o}}", "allowInternetAccess", strcmp(da, "allow") == 0, "network",
                   "allowOut", allow, "denyOut", deny);
}

/* Apply `pol` to sandbox `id`'s outbound rules; 0, 404 or 500 with msg. */
static int apply(const char *id, const json_t *pol, char *msg, size_t n)
{
  json_t *req = opensandbox_policy_network(pol);
  struct abx_net_rules rules;
  int rc = abx_network_parse_rules(req, json_object_get(req, "network"), &rules, msg, n);
  json_decref(req);
  if (rc != 0)
    return 500;
  return abx_network_update(id, abx_registry_netns(id), &rules, msg, n) == 204 ? 0 : 500;
}

/* Go's http.Error: text/plain, the message and a newline. */
static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *m)
{
  char body[400];
  snprintf(body, sizeof body, "%.380s\n", m);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result status_ok(struct MHD_Connection *c, const json_t *pol, int with_policy)
{
  const char *da = json_string_value(json_object_get(pol, "defaultAction"));
  int rules = json_array_size(json_object_get(pol, "egress")) > 0;
  const char *mode = strcmp(da, "allow") == 0 ? (rules ? "allow_with_rules" : "allow_all")
                                              : (rules ? "deny_with_rules" : "deny_all");
  json_t *o =
      json_pack("{s:s,s:s,s:s}", "status", "ok", "mode", mode, "enforcementMode", "dns+nft");
  if (o && with_policy)
    json_object_set_new(o, "policy", json_deep_copy(pol));
  char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (!s)
    return text(c, 500, "internal error: out of memory");
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(s);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

/* PATCH (policy_server.go patchMergedPolicy): the incoming rules first (a repeated target: the
 * first wins), then the current rules whose target is not among them. */
static json_t *patched(const json_t *cur, json_t *in, char *msg, size_t n)
{
  if (!json_is_array(in) || json_array_size(in) == 0) {
    snprintf(msg, n, "invalid patch rules: %s",
             json_is_array(in) ? "empty array" : "the body must be an array of rules");
    return NULL;
  }
  json_t *rules = json_array(), *r, *x;
  size_t i, j;
  json_array_foreach(in, i, r) if (rule_add(r, rules, msg, n) != 0)
  {
    json_decref(rules);
    return NULL;
  }
  json_t *out = json_array();
  json_t *all[2] = {rules, json_object_get(cur, "egress")};
  for (int k = 0; k < 2; k++)
    json_array_foreach(all[k], i, r)
    {
      int seen = 0;
      json_array_foreach(out, j, x) seen =
          seen || json_equal(json_object_get(x, "target"), json_object_get(r, "target"));
      if (!seen)
        json_array_append(out, r);
    }
  json_decref(rules);
  json_t *pol =
      json_pack("{s:O,s:o}", "defaultAction", json_object_get(cur, "defaultAction"), "egress", out);
  if (json_array_size(out) > ABX_NET_MAX_ENTRIES) {
    snprintf(msg, n, "invalid merged policy: at most %d egress rules", ABX_NET_MAX_ENTRIES);
    json_decref(pol);
    return NULL;
  }
  return pol;
}

/* DELETE: the rules whose target is in `in` (an array of strings) removed. */
static json_t *removed(const json_t *cur, json_t *in, char *msg, size_t n)
{
  size_t i, j;
  json_t *r, *t;
  json_array_foreach(in, i, t) if (!json_is_string(t)) json_array_clear(in);
  if (!json_is_array(in) || json_array_size(in) == 0) {
    snprintf(msg, n, "invalid delete targets: %s",
             json_is_array(in) ? "an array of at least one string" : "the body must be an array");
    return NULL;
  }
  json_t *out = json_array();
  json_array_foreach(json_object_get(cur, "egress"), i, r)
  {
    int hit = 0;
    json_array_foreach(in, j, t) hit = hit || json_equal(t, json_object_get(r, "target"));
    if (!hit)
      json_array_append(out, r);
  }
  return json_pack("{s:O,s:o}", "defaultAction", json_object_get(cur, "defaultAction"), "egress",
                   out);
}

/* The new policy of a POST/PUT/PATCH/DELETE with `body`; NULL with a 400 message. */
static json_t *next_policy(const char *method, const json_t *cur, const char *body, size_t len,
                           char *msg, size_t n)
{
  json_error_t je;
  json_t *in = body && len ? json_loadb(body, len, JSON_DECODE_ANY, &je) : NULL, *pol = NULL;
  if (body && len && !in) {
    snprintf(msg, n, "invalid policy: %.200s", je.text);
    return NULL;
  }
  if (!in && strcmp(method, "POST") && strcmp(method, "PUT"))
    snprintf(msg, n, "empty body");
  else if (!strcmp(method, "PATCH"))
    pol = patched(cur, in, msg, n);
  else if (!strcmp(method, "DELETE"))
    pol = removed(cur, in, msg, n);
  else
    opensandbox_policy_parse(in, &pol, msg, n);
  json_decref(in);
  return pol;
}

enum MHD_Result opensandbox_egress(struct MHD_Connection *c, const char *method, const char *id,
                                   const char *rest, const char *body, size_t len)
{
  char msg[300];
  if (strcmp(rest, "/policy") != 0)
    return text(c, 404, "404 page not found"); /* Go's ServeMux */
  int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
  if (!get && strcmp(method, "POST") && strcmp(method, "PUT") && strcmp(method, "PATCH") &&
      strcmp(method, "DELETE"))
    return text(c, 405, "method not allowed");
  opensandbox_lock();
  struct opensandbox_rec *r = opensandbox_find(id);
  json_t *o = r && r->egress ? opensandbox_sandbox_json(r, 0) : NULL;
  const char *st = json_string_value(json_object_get(json_object_get(o, "status"), "state"));
  int live = st && strcmp(st, "Running") == 0;
  json_decref(o);
  if (!live) {
    opensandbox_unlock();
    snprintf(msg, sizeof msg, "OpenSandbox Ingress: sandbox %s: %.64s",
             st ? "not ready" : "not found", id);
    return text(c, st ? 503 : 404, msg);
  }
  if (get) {
    enum MHD_Result ret = status_ok(c, r->egress, 1);
    opensandbox_unlock();
    return ret;
  }
  json_t *pol = next_policy(method, r->egress, body, len, msg, sizeof msg);
  int rc = pol ? apply(id, pol, msg, sizeof msg) : 400;
  if (rc == 0) {
    json_decref(r->egress);
    r->egress = pol;
    pol = NULL;
  }
  enum MHD_Result ret = rc == 0 ? status_ok(c, r->egress, 0) : text(c, (unsigned)rc, msg);
  opensandbox_unlock();
  json_decref(pol);
  return ret;
}
