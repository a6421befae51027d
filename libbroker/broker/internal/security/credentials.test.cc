#include "broker/internal/security/credentials.hh"

#include <catch2/catch.hpp>

#include <string>

using namespace broker::internal::security;

namespace {

// SHA-256 test vectors (FIPS 180-2 and the empty string).
constexpr std::string_view sha256_empty =
  "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr std::string_view sha256_abc =
  "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

// The example server public key of the CurveZMQ specification.
constexpr std::string_view curve_example = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";

} // namespace

TEST_CASE("hash_token is sha256: and the lower-case hex digest", "[security][credentials]") {
  CHECK(hash_token("") == sha256_empty);
  CHECK(hash_token("abc") == sha256_abc);
  // Every byte counts: no trimming, no case folding, NUL bytes included.
  CHECK(hash_token("abc ") != sha256_abc);
  CHECK(hash_token("ABC") != sha256_abc);
  CHECK(hash_token(std::string_view{"abc\0", 4}) != sha256_abc);
}

TEST_CASE("parse_token_hash reads exactly sha256: and 64 hex digits", "[security][credentials]") {
  auto d = parse_token_hash(sha256_abc);
  REQUIRE(d);
  CHECK((*d)[0] == 0xba);
  CHECK((*d)[31] == 0xad);
  // Upper case hex is the same digest.
  std::string upper{sha256_abc};
  for (size_t i = 7; i < upper.size(); ++i)
    upper[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(upper[i])));
  REQUIRE(parse_token_hash(upper));
  CHECK(same_digest(*parse_token_hash(upper), *d));
  CHECK_FALSE(parse_token_hash(""));
  CHECK_FALSE(parse_token_hash("sha256:"));
  CHECK_FALSE(parse_token_hash(sha256_abc.substr(7)));             // no prefix
  CHECK_FALSE(parse_token_hash(sha256_abc.substr(0, 70)));         // too short
  CHECK_FALSE(parse_token_hash(std::string{sha256_abc} + "0"));    // too long
  CHECK_FALSE(parse_token_hash(std::string{sha256_abc} + "\n"));   // trailing newline
  CHECK_FALSE(parse_token_hash("SHA256:" + std::string{sha256_abc.substr(7)}));
  CHECK_FALSE(parse_token_hash("sha512:" + std::string{sha256_abc.substr(7)}));
  auto bad = std::string{sha256_abc};
  bad[20] = 'g';
  CHECK_FALSE(parse_token_hash(bad));
  bad[20] = ' ';
  CHECK_FALSE(parse_token_hash(bad));
}

TEST_CASE("same_digest compares whole digests", "[security][credentials]") {
  auto x = *parse_token_hash(sha256_abc);
  auto y = x;
  CHECK(same_digest(x, y));
  y[31] ^= 1;
  CHECK_FALSE(same_digest(x, y));
  y = x;
  y[0] ^= 0x80;
  CHECK_FALSE(same_digest(x, y));
}

TEST_CASE("a token credential keeps the digest, never the token", "[security][credentials]") {
  auto cred = credential::from_token("abc");
  CHECK(cred.kind == mechanism::token);
  CHECK(cred.usable);
  CHECK(cred.names.empty());
  CHECK(same_digest(cred.token_digest, *parse_token_hash(sha256_abc)));
}

TEST_CASE("check_certificate_name wants a kind and a printable name", "[security][credentials]") {
  CHECK(check_certificate_name("cn:worker-1").empty());
  CHECK(check_certificate_name("dns:worker-1.zeek.example").empty());
  CHECK(check_certificate_name("uri:spiffe://zeek/worker").empty());
  CHECK(check_certificate_name("email:ops@zeek.example").empty());
  CHECK(check_certificate_name("cn:with spaces and ümlauts").empty());
  CHECK_FALSE(check_certificate_name("").empty());
  CHECK_FALSE(check_certificate_name("worker-1").empty());
  CHECK_FALSE(check_certificate_name("CN:worker-1").empty());
  CHECK_FALSE(check_certificate_name("ip:10.0.0.1").empty());
  CHECK_FALSE(check_certificate_name("cn:").empty());
  CHECK_FALSE(check_certificate_name("cn:a\nb").empty());
  CHECK_FALSE(check_certificate_name(std::string{"cn:a\0b", 6}).empty());
  CHECK(check_certificate_name("cn:" + std::string(1024, 'x')).empty());
  CHECK_FALSE(check_certificate_name("cn:" + std::string(1025, 'x')).empty());
}

TEST_CASE("is_curve_key accepts 40 characters of Z85 that fit 32 bytes",
          "[security][credentials]") {
  CHECK(is_curve_key(curve_example));
  CHECK(is_curve_key(std::string(40, '0')));
  CHECK_FALSE(is_curve_key(""));
  CHECK_FALSE(is_curve_key(curve_example.substr(0, 39)));
  CHECK_FALSE(is_curve_key(std::string{curve_example} + "0"));
  auto bad = std::string{curve_example};
  for (char c : {' ', '"', '\'', ',', ';', '\\', '_', '`', '|', '~', '\0'}) {
    bad[7] = c;
    CHECK_FALSE(is_curve_key(bad));
  }
  // "%nSc0" is 2^32 - 1, the largest group; "%nSc1" overflows it.
  CHECK(is_curve_key("%nSc0" + std::string(35, '0')));
  CHECK_FALSE(is_curve_key("%nSc1" + std::string(35, '0')));
  CHECK_FALSE(is_curve_key(std::string(40, '#')));
}
