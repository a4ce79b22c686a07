/*
 * tls.h: the certificates of `abxlua serve --tls` (OpenSSL libcrypto; the server side of TLS is
 * libmicrohttpd's GnuTLS, which takes the PEM made here).
 *
 * CA:      one per state dir, made on the first --tls start and kept while the dir lives:
 *          <state>/tls/ca.pem (certificate, 0644) and <state>/tls/ca.key (PKCS#8 PEM, 0600), in a
 *          0700 dir. EC P-256, 10 years, "CN=abxlua local CA for <domain>". It may sign only for
 *          names under <domain> and for 127.0.0.0/8 (critical nameConstraints), so a client told
 *          to trust it (NODE_EXTRA_CA_CERTS) trusts nothing else because of it.
 * Leaf:    made afresh at every start, held in memory only: EC P-256, 397 days, SAN
 *          DNS:<domain>, DNS:*.<domain>, IP:<listen address>; serverAuth. Before it is handed to
 *          the daemon it is verified against the CA for "api.<domain>" and "49983-x.<domain>",
 *          as a client would, so a CA that cannot vouch for it (made for another domain) fails
 *          the start, not the first client.
 * Names:   a wildcard needs two labels under it: Node's tls.checkServerIdentity refuses
 *          "*.localhost" (checked with node v20), so the domain must have at least two labels
 *          (e2b.localhost). abx_tls_domain_ok checks that.
 * Errors:  -1 with a message in err naming the file or the step that failed.
 */
#ifndef ABX_UTIL_TLS_H
#define ABX_UTIL_TLS_H

#include <stddef.h>

struct abx_tls {
  char ca_path[4096]; /* <state>/tls/ca.pem */
  int ca_created;     /* 1 when this start made the CA (0: an existing one was loaded) */
  char *key_pem;      /* the leaf's private key, PEM, NUL-terminated (malloc'd) */
  char *cert_pem;     /* the leaf's certificate, PEM, NUL-terminated (malloc'd) */
};

/* 1 when `domain` is a DNS name of two or more non-empty labels of [A-Za-z0-9-] (a wildcard
 * under it is then accepted by Node, curl and Python), else 0. */
int abx_tls_domain_ok(const char *domain);

/* Load or make the state dir's CA, then make a leaf for `domain` and `*.<domain>` and the IPv4
 * literal `ip` (the listen address). Fills `t` (free with abx_tls_free). Returns 0, or -1 with a
 * message in err (unreadable or mismatched CA files, an expired CA, a CA made for another
 * domain, OpenSSL failures). */
int abx_tls_setup(const char *state_dir, const char *domain, const char *ip, struct abx_tls *t,
                  char *err, size_t errlen);

/* Free what abx_tls_setup allocated (idempotent). */
void abx_tls_free(struct abx_tls *t);

#endif
