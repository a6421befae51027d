// TLS peering with certificates the test generates itself (a CA and leaf certificates).

#include "broker/endpoint.hh"

#include <catch2/catch.hpp>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

using namespace broker;
using namespace std::chrono_literals;

namespace {

constexpr long validity_seconds = 3600;

struct key_and_cert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  ~key_and_cert() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

/// Creates a key and a certificate for `name`, signed by `issuer` (self-signed if null).
void make_cert(key_and_cert& out, const char* name, const key_and_cert* issuer) {
  out.key = EVP_EC_gen("P-256");
  REQUIRE(out.key != nullptr);
  out.cert = X509_new();
  X509_set_version(out.cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(out.cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(out.cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(out.cert), validity_seconds);
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

void write_cert(const std::string& path, X509* cert) {
  auto* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  PEM_write_X509(f, cert);
  std::fclose(f);
}

void write_key(const std::string& path, EVP_PKEY* key) {
  auto* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
}

/// A temporary directory with ca.pem, a.pem/a.key, b.pem/b.key and (other CA) x.pem/x.key.
struct pki {
  std::filesystem::path dir;
  pki() {
    dir = std::filesystem::temp_directory_path()
          / ("broker-tls-test-" + std::to_string(::getpid()));
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
  ~pki() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  std::string path(const std::string& file) const { return (dir / file).string(); }

  configuration config(const std::string& name) const {
    configuration cfg;
    REQUIRE(!cfg.set("broker.ssl.certificate", path(name + ".pem")));
    REQUIRE(!cfg.set("broker.ssl.key", path(name + ".key")));
    REQUIRE(!cfg.set("broker.ssl.cafile", path("ca.pem")));
    return cfg;
  }
};

template <class Pred>
bool eventually(Pred pred, std::chrono::seconds limit = 15s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

} // namespace

TEST_CASE("nodes with certificates from the same CA peer over TLS", "[tls]") {
  pki keys;
  endpoint a{keys.config("a")};
  endpoint b{keys.config("b")};
  auto sub = b.make_subscriber({"/secure"});
  auto port = b.listen("127.0.0.1", 0);
  REQUIRE(port);
  REQUIRE(a.peer("127.0.0.1", *port, 0s));
  REQUIRE(eventually([&] {
    for (auto& p : a.peer_subscriptions())
      if (p.string() == "/secure")
        return true;
    return false;
  }));
  a.publish("/secure/x", data{"secret"});
  auto msg = sub.get(10s);
  REQUIRE(msg);
  CHECK(get<std::string>(msg->value()) == "secret");
}

TEST_CASE("a node whose certificate another CA signed is refused", "[tls]") {
  pki keys;
  endpoint b{keys.config("b")};
  auto port = b.listen("127.0.0.1", 0);
  REQUIRE(port);
  configuration cfg;
  REQUIRE(!cfg.set("broker.ssl.certificate", keys.path("x.pem")));
  REQUIRE(!cfg.set("broker.ssl.key", keys.path("x.key")));
  REQUIRE(!cfg.set("broker.ssl.cafile", keys.path("ca.pem")));
  endpoint intruder{cfg};
  CHECK(!intruder.peer("127.0.0.1", *port, 0s));
  CHECK(b.peers().empty());
}

TEST_CASE("a plain-TCP node cannot peer with a TLS node", "[tls]") {
  pki keys;
  endpoint b{keys.config("b")};
  auto port = b.listen("127.0.0.1", 0);
  REQUIRE(port);
  configuration plain;
  REQUIRE(!plain.set("broker.disable-ssl", "true"));
  endpoint a{plain};
  CHECK(!a.peer("127.0.0.1", *port, 0s));
  CHECK(b.peers().empty());
}

TEST_CASE("an unreadable certificate file is an error naming the option", "[tls]") {
  configuration cfg;
  REQUIRE(!cfg.set("broker.ssl.certificate", "/nonexistent/cert.pem"));
  endpoint a{cfg};
  auto port = a.listen("127.0.0.1", 0);
  REQUIRE(!port);
  CHECK_THAT(port.error_value().message(), Catch::Contains("broker.ssl.certificate"));
}
