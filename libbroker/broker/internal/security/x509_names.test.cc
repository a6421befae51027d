#include "broker/internal/security/x509_names.hh"

#include "broker/internal/pki.test.hh"

#include <catch2/catch.hpp>

using namespace broker::internal::security;
using broker::test::key_and_cert;
using broker::test::make_cert;

namespace {

/// Adds a subjectAltName extension (OpenSSL's config syntax, e.g. "DNS:a, URI:b") and
/// signs the certificate again with its own key.
void add_alt_names(key_and_cert& kc, const char* names) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, kc.cert, kc.cert, nullptr, nullptr, 0);
  auto* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, names);
  REQUIRE(ext != nullptr);
  REQUIRE(X509_add_ext(kc.cert, ext, -1) == 1);
  X509_EXTENSION_free(ext);
  REQUIRE(X509_sign(kc.cert, kc.key, EVP_sha256()) > 0);
}

/// Adds one more subject entry `field`=`value` (raw bytes, `size` of them).
void add_subject(key_and_cert& kc, const char* field, const char* value, int size) {
  auto* subject = X509_get_subject_name(kc.cert);
  REQUIRE(X509_NAME_add_entry_by_txt(subject, field, MBSTRING_ASC,
                                     reinterpret_cast<const unsigned char*>(value), size, -1,
                                     0)
          == 1);
}

using names = std::vector<std::string>;

} // namespace

TEST_CASE("certificate_names of a null certificate is empty", "[security][x509]") {
  CHECK(certificate_names(nullptr).empty());
}

TEST_CASE("certificate_names: the common name alone", "[security][x509]") {
  key_and_cert kc;
  make_cert(kc, "worker-1", nullptr);
  CHECK(certificate_names(kc.cert) == names{"cn:worker-1"});
}

TEST_CASE("certificate_names: CN, then DNS, URI and e-mail SANs; IP addresses are no names",
          "[security][x509]") {
  key_and_cert kc;
  make_cert(kc, "manager", nullptr);
  add_alt_names(kc, "email:ops@zeek.example, IP:10.0.0.1, URI:spiffe://zeek/manager, "
                    "DNS:manager.zeek.example, DNS:manager");
  CHECK(certificate_names(kc.cert)
        == names{"cn:manager", "dns:manager.zeek.example", "dns:manager",
                 "uri:spiffe://zeek/manager", "email:ops@zeek.example"});
}

TEST_CASE("certificate_names: several CNs, duplicates once", "[security][x509]") {
  key_and_cert kc;
  make_cert(kc, "a", nullptr);
  add_subject(kc, "CN", "b", -1);
  add_subject(kc, "CN", "a", -1);
  add_subject(kc, "O", "not a name", -1);
  CHECK(certificate_names(kc.cert) == names{"cn:a", "cn:b"});
}

TEST_CASE("certificate_names leaves out names with NUL bytes or control characters",
          "[security][x509]") {
  key_and_cert kc;
  make_cert(kc, "good", nullptr);
  // "evil\0.good": a classic trick against C-string comparisons.
  add_subject(kc, "CN", "evil\0.good", 10);
  add_subject(kc, "CN", "line\nbreak", -1);
  CHECK(certificate_names(kc.cert) == names{"cn:good"});
}

TEST_CASE("certificate_names of a certificate whose CN is UTF-8", "[security][x509]") {
  key_and_cert kc;
  make_cert(kc, "worker", nullptr);
  auto* subject = X509_get_subject_name(kc.cert);
  const char* name = "w\xC3\xBCrker"; // "würker"
  REQUIRE(X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                     reinterpret_cast<const unsigned char*>(name), -1, -1, 0)
          == 1);
  CHECK(certificate_names(kc.cert) == names{"cn:worker", std::string{"cn:"} + name});
}
