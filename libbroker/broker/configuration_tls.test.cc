#include "broker/configuration.hh"

#include "broker/internal/pki.test.hh"

#include <catch2/catch.hpp>

#include <fstream>

using namespace broker;
using broker::test::pki;

namespace {

/// The message of cfg.check_tls(), or "" if it passed.
std::string problem(const configuration& cfg) {
  auto err = cfg.check_tls();
  if (err)
    CHECK(err == ec::invalid_config);
  return err ? err.message() : std::string{};
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out{path};
  out << text;
}

/// Writes `name`.key encrypted with `passphrase` as `file`.
void write_encrypted_key(const pki& keys, const std::string& name, const std::string& file,
                         const std::string& passphrase) {
  auto* in = std::fopen(keys.path(name + ".key").c_str(), "r");
  REQUIRE(in != nullptr);
  auto* key = PEM_read_PrivateKey(in, nullptr, nullptr, nullptr);
  std::fclose(in);
  REQUIRE(key != nullptr);
  auto* out = std::fopen(keys.path(file).c_str(), "w");
  REQUIRE(out != nullptr);
  auto* pass = reinterpret_cast<const unsigned char*>(passphrase.data());
  REQUIRE(PEM_write_PrivateKey(out, key, EVP_aes_256_cbc(), pass,
                               static_cast<int>(passphrase.size()), nullptr, nullptr) == 1);
  std::fclose(out);
  EVP_PKEY_free(key);
}

} // namespace

TEST_CASE("check_tls accepts a certificate, its key and a CA", "[tls][config]") {
  pki keys;
  CHECK(problem(keys.config("a")).empty());
  configuration plain;
  CHECK(problem(plain).empty()); // Anonymous TLS needs no files.
  auto off = keys.config("a");
  REQUIRE(!off.set("broker.ssl.certificate", keys.path("missing.pem")));
  REQUIRE(!off.set("broker.disable-ssl", "true"));
  CHECK(problem(off).empty()); // Not used at all.
}

TEST_CASE("check_tls names a missing half of the certificate setup", "[tls][config]") {
  pki keys;
  auto no_key = keys.config("a");
  REQUIRE(!no_key.set("broker.ssl.key", ""));
  CHECK(problem(no_key) == "broker.ssl.certificate is set without broker.ssl.key (the "
                           "certificate's private key)");
  auto no_cert = keys.config("a");
  REQUIRE(!no_cert.set("broker.ssl.certificate", ""));
  CHECK(problem(no_cert) == "broker.ssl.key is set without broker.ssl.certificate");
  configuration ca_only;
  REQUIRE(!ca_only.set("broker.ssl.cafile", keys.path("ca.pem")));
  CHECK(problem(ca_only).find("broker.ssl.certificate and broker.ssl.key are not")
        != std::string::npos);
  auto no_ca = keys.config("a");
  REQUIRE(!no_ca.set("broker.ssl.cafile", ""));
  CHECK(problem(no_ca).find("neither broker.ssl.cafile nor broker.ssl.capath")
        != std::string::npos);
  auto bad_dir = keys.config("a");
  REQUIRE(!bad_dir.set("broker.ssl.capath", keys.path("ca.pem")));
  CHECK(problem(bad_dir).find("broker.ssl.capath") != std::string::npos);
}

TEST_CASE("check_tls loads every file and says which one is wrong", "[tls][config]") {
  pki keys;
  write_file(keys.path("text.pem"), "not a certificate\n");
  SECTION("a certificate that is not PEM") {
    auto cfg = keys.config("a");
    REQUIRE(!cfg.set("broker.ssl.certificate", keys.path("text.pem")));
    auto msg = problem(cfg);
    CHECK(msg.find("broker.ssl.certificate \"" + keys.path("text.pem") + "\": not a readable "
                   "PEM certificate")
          == 0);
  }
  SECTION("a key that is not PEM") {
    auto cfg = keys.config("a");
    REQUIRE(!cfg.set("broker.ssl.key", keys.path("text.pem")));
    CHECK(problem(cfg).find("broker.ssl.key \"" + keys.path("text.pem")
                            + "\": not a readable PEM private key")
          == 0);
  }
  SECTION("a key of another certificate") {
    auto cfg = keys.config("a");
    REQUIRE(!cfg.set("broker.ssl.key", keys.path("b.key")));
    CHECK(problem(cfg).find("does not belong to broker.ssl.certificate") != std::string::npos);
  }
  SECTION("a CA file that is not PEM") {
    auto cfg = keys.config("a");
    REQUIRE(!cfg.set("broker.ssl.cafile", keys.path("text.pem")));
    CHECK(problem(cfg).find("broker.ssl.cafile \"" + keys.path("text.pem") + "\"") == 0);
  }
  SECTION("a file that does not exist") {
    auto cfg = keys.config("a");
    REQUIRE(!cfg.set("broker.ssl.certificate", keys.path("missing.pem")));
    CHECK(problem(cfg).find("broker.ssl.certificate") == 0);
  }
}

TEST_CASE("check_tls decrypts the key with broker.ssl.passphrase", "[tls][config]") {
  pki keys;
  write_encrypted_key(keys, "a", "a.enc.key", "12345");
  auto cfg = keys.config("a");
  REQUIRE(!cfg.set("broker.ssl.key", keys.path("a.enc.key")));
  CHECK(problem(cfg).find("is encrypted, and broker.ssl.passphrase is not set")
        != std::string::npos);
  REQUIRE(!cfg.set("broker.ssl.passphrase", "wrong"));
  CHECK(problem(cfg).find("does not decrypt with broker.ssl.passphrase") != std::string::npos);
  REQUIRE(!cfg.set("broker.ssl.passphrase", "12345"));
  CHECK(problem(cfg).empty());
}
