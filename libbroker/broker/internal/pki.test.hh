#pragma once

// A throw-away PKI for the TLS tests (peering and wss://): a CA, leaf certificates it signed,
// and an intruder signed by another CA, written to a temporary directory that is removed
// again. Keys are EC P-256; certificates are valid for an hour.

#include "broker/configuration.hh"

#include <catch2/catch.hpp>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

namespace broker::test {

constexpr long pki_validity_seconds = 3600;

struct key_and_cert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  key_and_cert() = default;
  key_and_cert(const key_and_cert&) = delete;
  key_and_cert& operator=(const key_and_cert&) = delete;
  ~key_and_cert() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

/// Creates a key and a certificate for `name`, signed by `issuer` (self-signed if null).
inline void make_cert(key_and_cert& out, const char* name, const key_and_cert* issuer) {
  static std::atomic<long> serial{1};
  out.key = EVP_EC_gen("P-256");
  REQUIRE(out.key != nullptr);
  out.cert = X509_new();
  X509_set_version(out.cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(out.cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(out.cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(out.cert), pki_validity_seconds);
  X509_set_pubkey(out.cert, out.key);
  auto* subject = X509_get_subject_name(out.cert);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name), -1, -1, 0);
  X509_set_issuer_name(out.cert, issuer ? X509_get_subject_name(issuer->cert) : subject);
  if (!issuer) {
    // A CA needs basicConstraints CA:TRUE for OpenSSL 3 to accept it as an issuer.
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, out.cert, out.cert, nullptr, nullptr, 0);
    auto* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(out.cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  REQUIRE(X509_sign(out.cert, issuer ? issuer->key : out.key, EVP_sha256()) > 0);
}

inline void write_cert(const std::string& path, X509* cert) {
  auto* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  PEM_write_X509(f, cert);
  std::fclose(f);
}

inline void write_key(const std::string& path, EVP_PKEY* key) {
  auto* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
}

/// A temporary directory with ca.pem, a.pem/a.key, b.pem/b.key and (other CA) x.pem/x.key.
struct pki {
  std::filesystem::path dir;

  pki() {
    static std::atomic<int> instance{0};
    dir = std::filesystem::temp_directory_path()
          / ("broker-tls-test-" + std::to_string(::getpid()) + "-"
             + std::to_string(instance++));
    std::filesystem::create_directories(dir);
    key_and_cert ca, a, b, other_ca, x;
    make_cert(ca, "test CA", nullptr);
    make_cert(a, "node a", &ca);
    make_cert(b, "node b", &ca);
    make_cert(other_ca, "other CA", nullptr);
    make_cert(x, "intruder", &other_ca);
    write_cert(path("ca.pem"), ca.cert);
    const std::pair<const char*, key_and_cert*> leaves[] = {{"a", &a}, {"b", &b}, {"x", &x}};
    for (auto& [name, kc] : leaves) {
      write_cert(path(std::string{name} + ".pem"), kc->cert);
      write_key(path(std::string{name} + ".key"), kc->key);
    }
  }

  pki(const pki&) = delete;
  pki& operator=(const pki&) = delete;

  ~pki() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }

  std::string path(const std::string& file) const { return (dir / file).string(); }

  /// A configuration with `name`'s certificate and key and the test CA.
  configuration config(const std::string& name) const {
    configuration cfg;
    REQUIRE(!cfg.set("broker.ssl.certificate", path(name + ".pem")));
    REQUIRE(!cfg.set("broker.ssl.key", path(name + ".key")));
    REQUIRE(!cfg.set("broker.ssl.cafile", path("ca.pem")));
    return cfg;
  }
};

} // namespace broker::test
