/*
 * network_request.c: a sandbox's network settings read from a create request (allow_internet_access,
 * network {...}) and checked: what every sandbox constructor needs, the API's and the build's
 * alike. Contract in network.h.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "network.h"

/* A string array of addresses/CIDRs (and domains when allow_domain) or absent/null (*out NULL).
 * 0, or -1 with msg. */
static int parse_list(json_t *obj, const char *field, int allow_domain, json_t **out, char *msg,
                      size_t n)
{
  json_t *v = json_object_get(obj, field);
  *out = NULL;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_array(v)) {
    snprintf(msg, n, "validation error: field '%s' must be an array of strings", field);
    return -1;
  }
  if (json_array_size(v) > ABX_NET_MAX_ENTRIES) {
    snprintf(msg, n, "too many entries in '%s' (at most %d)", field, ABX_NET_MAX_ENTRIES);
    return -1;
  }
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e)
  {
    if (!json_is_string(e)) {
      snprintf(msg, n, "validation error: field '%s' must be an array of strings", field);
      return -1;
    }
    if (abx_network_entry_ok(json_string_value(e), allow_domain) != 0) {
      snprintf(msg, n, "invalid %s entry '%.100s': %s", field, json_string_value(e),
               allow_domain ? "expected an IP address, a CIDR or a domain"
                            : "expected an IP address or a CIDR");
      return -1;
    }
  }
  *out = json_deep_copy(v);
  return 0;
}

int abx_network_parse_rules(json_t *top, json_t *obj, struct abx_net_rules *r, char *msg, size_t n)
{
  r->internet = 1;
  r->allow = r->deny = NULL;
  json_t *ia = json_object_get(top, "allow_internet_access");
  if (!ia || json_is_null(ia))
    ia = json_object_get(top, "allowInternetAccess");
  if (ia && !json_is_null(ia) && !json_is_boolean(ia)) {
    snprintf(msg, n, "validation error: field 'allow_internet_access' must be a boolean");
    return -1;
  }
  if (ia && json_is_false(ia))
    r->internet = 0;
  if (!obj)
    return 0;
  if (parse_list(obj, "allowOut", 1, &r->allow, msg, n) != 0)
    return -1;
  if (parse_list(obj, "denyOut", 0, &r->deny, msg, n) != 0) {
    json_decref(r->allow);
    r->allow = NULL;
    return -1;
  }
  return 0;
}

int abx_network_mask_ok(const char *s, char *msg, size_t msglen)
{
  if (!*s)
    return 0;
  const char *colon = strchr(s, ':');
  size_t hl = colon ? (size_t)(colon - s) : strlen(s);
  int ok = hl > 0 && hl <= 253 && strlen(s) <= ABX_NET_MASK_MAX;
  ok = ok && (!colon || !strchr(colon + 1, ':'));
  size_t label = 0;
  for (size_t i = 0; ok && i < hl; i++) {
    char c = s[i];
    if (c == '.') {
      ok = label > 0;
      label = 0;
    } else {
      int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      ok = (alnum || c == '-') && ++label <= 63;
    }
  }
  ok = ok && label > 0;
  for (const char *p = colon ? colon + 1 : ""; ok && *p;) {
    if (strncmp(p, ABX_NET_MASK_PORT, sizeof ABX_NET_MASK_PORT - 1) == 0)
      p += sizeof ABX_NET_MASK_PORT - 1;
    else if (*p >= '0' && *p <= '9')
      p++;
    else
      ok = 0;
  }
  ok = ok && (!colon || colon[1]);
  if (ok)
    return 0;
  snprintf(msg, msglen,
           "mask request host is not valid: %.100s (field 'network.maskRequestHost': "
           "host[:port] of at most %d bytes, host an ASCII host name or IPv4 address, port "
           "digits and " ABX_NET_MASK_PORT " placeholders)",
           s, ABX_NET_MASK_MAX);
  return -1;
}

int abx_network_create(const char *id, json_t *req, int secure, char *msg, size_t msglen)
{
  json_t *net = json_object_get(req, "network");
  if (net && json_is_null(net))
    net = NULL;
  if (net && !json_is_object(net)) {
    snprintf(msg, msglen, "validation error: field 'network' must be an object");
    return 400;
  }
  int public_traffic = 1;
  const char *mask = NULL;
  if (net) {
    json_t *mh = json_object_get(net, "maskRequestHost");
    if (mh && !json_is_null(mh) && !json_is_string(mh)) {
      snprintf(msg, msglen, "validation error: field 'network.maskRequestHost' must be a string");
      return 400;
    }
    mask = json_string_value(mh);
    if (mask && abx_network_mask_ok(mask, msg, msglen) != 0)
      return 400;
    json_t *apt = json_object_get(net, "allowPublicTraffic");
    if (apt && !json_is_null(apt) && !json_is_boolean(apt)) {
      snprintf(msg, msglen,
               "validation error: field 'network.allowPublicTraffic' must be a boolean");
      return 400;
    }
    public_traffic = !json_is_false(apt);
    json_t *proxy = json_object_get(net, "egressProxy");
    if (proxy && !json_is_null(proxy)) {
      snprintf(msg, msglen, "network.egressProxy is not supported by the local platform");
      return 400;
    }
  }
  if (!public_traffic && !secure) {
    snprintf(msg, msglen,
             "You cannot create a sandbox without public access unless you enable secure "
             "sandbox access ('secure': true)");
    return 400;
  }
  struct abx_net_rules rules;
  if (abx_network_parse_rules(req, net, &rules, msg, msglen) != 0)
    return 400;
  return abx_network_register(id, public_traffic, &rules, mask, msg, msglen) == 0 ? 0 : 500;
}
