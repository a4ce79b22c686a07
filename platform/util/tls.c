/*
 * tls.c: the state dir's CA and the leaf certificate of `abxlua serve --tls`. Contract in tls.h.
 * OpenSSL 3.0 (Debian 12): EVP_EC_gen, X509V3_EXT_conf_nid for the extensions (their text forms
 * are those of x509v3_config(5)).
 */
#include "tls.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CA_DAYS 3650L
#define LEAF_DAYS 397L

int abx_tls_domain_ok(const char *domain)
{
  int labels = 0;
  size_t len = 0;
  if (!domain || !*domain || strlen(domain) > 200)
    return 0;
  for (const char *p = domain;; p++) {
    if (*p == '.' || !*p) {
      if (len == 0 || len > 63)
        return 0;
      labels++;
      len = 0;
      if (!*p)
        break;
      continue;
    }
    if (!(*p == '-' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9')))
      return 0;
    len++;
  }
  return labels >= 2;
}

/* err := "<what>: <OpenSSL's first queued error>" (the queue is cleared). */
static int ossl_fail(char *err, size_t errlen, const char *what)
{
  unsigned long e = ERR_get_error();
  char buf[256] = "";
  if (e)
    ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  snprintf(err, errlen, "%s%s%s", what, e ? ": " : "", buf);
  return -1;
}

static int add_ext(X509 *cert, X509V3_CTX *ctx, int nid, const char *value)
{
  X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
  if (!ext)
    return -1;
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok ? 0 : -1;
}

/* A certificate with a random 127-bit serial, valid from an hour ago (clock skew between
 * processes is nil here, but a client's clock may lag) for `days`. */
static X509 *cert_new(EVP_PKEY *key, const char *cn, long days)
{
  X509 *x = X509_new();
  BIGNUM *bn = BN_new();
  if (!x || !bn || !X509_set_version(x, 2) ||
      !BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) ||
      !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) ||
      !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
      !X509_gmtime_adj(X509_getm_notAfter(x), days * 86400L) || !X509_set_pubkey(x, key) ||
      !X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "O", MBSTRING_ASC,
                                  (const unsigned char *)"abxlua", -1, -1, 0) ||
      !X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                                  (const unsigned char *)cn, -1, -1, 0)) {
    BN_free(bn);
    X509_free(x);
    return NULL;
  }
  BN_free(bn);
  return x;
}

static int make_ca(const char *domain, EVP_PKEY **key_out, X509 **ca_out, char *err, size_t errlen)
{
  EVP_PKEY *key = EVP_EC_gen("P-256");
  if (!key)
    return ossl_fail(err, errlen, "CA key generation");
  char cn[300], nc[400];
  snprintf(cn, sizeof cn, "abxlua local CA for %s", domain);
  /* nameConstraints: this CA vouches for the domain's names and loopback addresses only */
  snprintf(nc, sizeof nc, "critical,permitted;DNS:%s,permitted;IP:127.0.0.0/255.0.0.0", domain);
  X509 *x = cert_new(key, cn, CA_DAYS);
  X509V3_CTX ctx;
  if (x) {
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
  }
  if (!x || add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") ||
      add_ext(x, &ctx, NID_subject_key_identifier, "hash") ||
      add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") ||
      add_ext(x, &ctx, NID_name_constraints, nc) || !X509_sign(x, key, EVP_sha256())) {
    X509_free(x);
    EVP_PKEY_free(key);
    return ossl_fail(err, errlen, "CA certificate");
  }
  *key_out = key;
  *ca_out = x;
  return 0;
}

/* Write `pem` to path atomically (a temp file beside it, then rename), mode `mode`, never
 * through a symlink. */
static int write_file(const char *path, const char *pem, size_t len, mode_t mode, char *err,
                      size_t errlen)
{
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
    return -1;
  }
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, pem + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
      close(fd);
      unlink(tmp);
      return -1;
    }
    off += (size_t)w;
  }
  if (fchmod(fd, mode) != 0 || fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* PEM text of a key (PKCS#8, unencrypted) or a certificate, malloc'd and NUL-terminated. */
static char *to_pem(EVP_PKEY *key, X509 *cert, size_t *len)
{
  BIO *b = BIO_new(BIO_s_mem());
  if (!b)
    return NULL;
  int ok = key ? PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)
               : PEM_write_bio_X509(b, cert);
  char *data = NULL;
  long n = ok ? BIO_get_mem_data(b, &data) : 0;
  char *out = n > 0 ? malloc((size_t)n + 1) : NULL;
  if (out) {
    memcpy(out, data, (size_t)n);
    out[n] = 0;
    if (len)
      *len = (size_t)n;
  }
  BIO_free(b);
  return out;
}

static int save_ca(const char *dir, EVP_PKEY *key, X509 *ca, char *err, size_t errlen)
{
  char kpath[4200], cpath[4200];
  snprintf(kpath, sizeof kpath, "%s/ca.key", dir);
  snprintf(cpath, sizeof cpath, "%s/ca.pem", dir);
  size_t kn = 0, cn = 0;
  char *kp = to_pem(key, NULL, &kn), *cp = to_pem(NULL, ca, &cn);
  int rc = -1;
  if (!kp || !cp)
    ossl_fail(err, errlen, "PEM encoding of the CA");
  /* the key first: ca.pem present means the pair is complete (load_ca) */
  else if (write_file(kpath, kp, kn, 0600, err, errlen) == 0 &&
           write_file(cpath, cp, cn, 0644, err, errlen) == 0)
    rc = 0;
  if (kp)
    OPENSSL_cleanse(kp, kn);
  free(kp);
  free(cp);
  return rc;
}

/* 1 loaded, 0 no CA yet (no ca.pem), -1 error. */
static int load_ca(const char *dir, EVP_PKEY **key_out, X509 **ca_out, char *err, size_t errlen)
{
  char kpath[4200], cpath[4200];
  snprintf(kpath, sizeof kpath, "%s/ca.key", dir);
  snprintf(cpath, sizeof cpath, "%s/ca.pem", dir);
  FILE *cf = fopen(cpath, "re");
  if (!cf) {
    if (errno == ENOENT)
      return 0; /* a ca.key alone is an interrupted first start: it is replaced */
    snprintf(err, errlen, "cannot read %s: %s", cpath, strerror(errno));
    return -1;
  }
  X509 *ca = PEM_read_X509(cf, NULL, NULL, NULL);
  fclose(cf);
  if (!ca)
    return ossl_fail(err, errlen,
                     "the state dir's CA certificate is unreadable (remove its tls/ "
                     "dir to make a new CA)");
  FILE *kf = fopen(kpath, "re");
  EVP_PKEY *key = kf ? PEM_read_PrivateKey(kf, NULL, NULL, NULL) : NULL;
  if (kf)
    fclose(kf);
  if (!key) {
    X509_free(ca);
    return ossl_fail(err, errlen,
                     "the state dir's CA key (tls/ca.key) is missing or unreadable "
                     "(remove its tls/ dir to make a new CA)");
  }
  if (X509_check_private_key(ca, key) != 1) {
    X509_free(ca);
    EVP_PKEY_free(key);
    ERR_clear_error();
    snprintf(err, errlen, "%s and %s do not belong together (remove %s to make a new CA)", cpath,
             kpath, dir);
    return -1;
  }
  /* a day of margin: a CA about to expire would fail clients mid-run */
  time_t soon = time(NULL) + 86400;
  if (X509_cmp_time(X509_get0_notAfter(ca), &soon) <= 0) {
    X509_free(ca);
    EVP_PKEY_free(key);
    snprintf(err, errlen,
             "the CA %s has expired or expires within a day (remove %s to make a "
             "new CA)",
             cpath, dir);
    return -1;
  }
  *key_out = key;
  *ca_out = ca;
  return 1;
}

static X509 *make_leaf(EVP_PKEY *leaf_key, X509 *ca, EVP_PKEY *ca_key, const char *domain,
                       const char *ip)
{
  char san[600];
  snprintf(san, sizeof san, "DNS:%s,DNS:*.%s,IP:%s", domain, domain, ip);
  X509 *x = cert_new(leaf_key, domain, LEAF_DAYS);
  X509V3_CTX ctx;
  if (x) {
    X509_set_issuer_name(x, X509_get_subject_name(ca));
    X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
  }
  if (!x || add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") ||
      add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") ||
      add_ext(x, &ctx, NID_ext_key_usage, "serverAuth") ||
      add_ext(x, &ctx, NID_subject_key_identifier, "hash") ||
      add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") ||
      add_ext(x, &ctx, NID_subject_alt_name, san) || !X509_sign(x, ca_key, EVP_sha256())) {
    X509_free(x);
    return NULL;
  }
  return x;
}

/* Verify leaf against ca for `host` as a TLS client would (chain, purpose, name constraints). */
static int verify_for(X509 *leaf, X509 *ca, const char *host, char *err, size_t errlen)
{
  X509_STORE *st = X509_STORE_new();
  X509_STORE_CTX *vc = X509_STORE_CTX_new();
  int rc = -1;
  if (st && vc && X509_STORE_add_cert(st, ca) && X509_STORE_CTX_init(vc, st, leaf, NULL)) {
    X509_VERIFY_PARAM *vp = X509_STORE_CTX_get0_param(vc);
    X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
    X509_VERIFY_PARAM_set1_host(vp, host, 0);
    if (X509_verify_cert(vc) == 1)
      rc = 0;
    else
      snprintf(err, errlen, "%s", X509_verify_cert_error_string(X509_STORE_CTX_get_error(vc)));
  } else {
    ossl_fail(err, errlen, "certificate store");
  }
  X509_STORE_CTX_free(vc);
  X509_STORE_free(st);
  ERR_clear_error();
  return rc;
}

int abx_tls_setup(const char *state_dir, const char *domain, const char *ip, struct abx_tls *t,
                  char *err, size_t errlen)
{
  memset(t, 0, sizeof t[0]);
  if (!abx_tls_domain_ok(domain)) {
    snprintf(err, errlen, "domain %s needs two or more labels for a wildcard certificate", domain);
    return -1;
  }
  char dir[3900];
  if (strlen(state_dir) + 5 >= sizeof dir) {
    snprintf(err, errlen, "the state dir's path is too long");
    return -1;
  }
  snprintf(dir, sizeof dir, "%s/tls", state_dir);
  snprintf(t->ca_path, sizeof t->ca_path, "%s/ca.pem", dir);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
    return -1;
  }
  struct stat sd;
  if (lstat(dir, &sd) != 0 || !S_ISDIR(sd.st_mode) || sd.st_uid != geteuid()) {
    snprintf(err, errlen, "%s is not a directory of ours", dir);
    return -1;
  }
  EVP_PKEY *ca_key = NULL, *leaf_key = NULL;
  X509 *ca = NULL, *leaf = NULL;
  int rc = -1;
  int got = load_ca(dir, &ca_key, &ca, err, errlen);
  if (got < 0)
    goto out;
  if (got == 0) {
    if (make_ca(domain, &ca_key, &ca, err, errlen) != 0 ||
        save_ca(dir, ca_key, ca, err, errlen) != 0)
      goto out;
    t->ca_created = 1;
  }
  leaf_key = EVP_EC_gen("P-256");
  if (!leaf_key) {
    ossl_fail(err, errlen, "leaf key generation");
    goto out;
  }
  leaf = make_leaf(leaf_key, ca, ca_key, domain, ip);
  if (!leaf) {
    ossl_fail(err, errlen, "leaf certificate");
    goto out;
  }
  char host[300], verr[200];
  const char *prefixes[] = {"api.", "49983-x.", ""};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
    snprintf(host, sizeof host, "%s%s", prefixes[i], domain);
    if (verify_for(leaf, ca, host, verr, sizeof verr) != 0) {
      char cn[256] = "";
      X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_commonName, cn, sizeof cn);
      snprintf(err, errlen,
               "the CA %s (\"%s\") cannot vouch for %s: %s (remove %s to make a new "
               "CA, or use another --state-dir)",
               t->ca_path, cn, host, verr, dir);
      goto out;
    }
  }
  t->key_pem = to_pem(leaf_key, NULL, NULL);
  t->cert_pem = to_pem(NULL, leaf, NULL);
  if (!t->key_pem || !t->cert_pem) {
    ossl_fail(err, errlen, "PEM encoding of the leaf");
    goto out;
  }
  rc = 0;
out:
  if (rc != 0)
    abx_tls_free(t);
  X509_free(leaf);
  X509_free(ca);
  EVP_PKEY_free(leaf_key);
  EVP_PKEY_free(ca_key);
  return rc;
}

void abx_tls_free(struct abx_tls *t)
{
  if (t->key_pem)
    OPENSSL_cleanse(t->key_pem, strlen(t->key_pem));
  free(t->key_pem);
  free(t->cert_pem);
  t->key_pem = t->cert_pem = NULL;
}
