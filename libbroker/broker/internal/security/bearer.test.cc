#include "broker/internal/security/bearer.hh"

#include <catch2/catch.hpp>

#include <string>

using namespace broker::internal::security;

namespace {

constexpr std::string_view path = "/v1/messages/json";

std::string target(std::string_view query) {
  return std::string{path} + std::string{query};
}

} // namespace

TEST_CASE("no token: anonymous", "[security][bearer]") {
  auto r = find_bearer_token("", path);
  CHECK(r.source == token_source::none);
  CHECK(r.token.empty());
  CHECK(r.error.empty());
  CHECK(find_bearer_token("", target("?other=1&x")).source == token_source::none);
}

TEST_CASE("the Authorization header", "[security][bearer]") {
  auto r = find_bearer_token("Bearer abc-DEF_123.~+/==", path);
  CHECK(r.error.empty());
  CHECK(r.source == token_source::header);
  CHECK(r.token == "abc-DEF_123.~+/==");
  CHECK(find_bearer_token("bearer   t0k3n  ", path).token == "t0k3n");
  CHECK(find_bearer_token("BEARER t", path).token == "t");
  CHECK(find_bearer_token("Basic dXNlcjpwdw==", path).error
        == "Authorization: only the Bearer scheme is supported");
  CHECK(find_bearer_token("Bearer", path).error == "Authorization: Bearer without a token");
  CHECK(find_bearer_token("Bearer    ", path).error == "Authorization: Bearer without a token");
  CHECK_FALSE(find_bearer_token("Bearer a b", path).error.empty());
  CHECK_FALSE(find_bearer_token("Bearer a=b", path).error.empty());
  CHECK_FALSE(find_bearer_token("Bearer ===", path).error.empty());
  CHECK_FALSE(find_bearer_token("Bearer s3cr\x01t", path).error.empty());
  CHECK_FALSE(find_bearer_token("Bearer " + std::string(4097, 'a'), path).error.empty());
  CHECK(find_bearer_token("Bearer " + std::string(4096, 'a'), path).error.empty());
  // Errors never show the token.
  CHECK(find_bearer_token("Bearer my secret", path).error.find("secret") == std::string::npos);
}

TEST_CASE("the token query parameter", "[security][bearer]") {
  auto r = find_bearer_token("", target("?token=abc"));
  CHECK(r.error.empty());
  CHECK(r.source == token_source::query);
  CHECK(r.token == "abc");
  CHECK(find_bearer_token("", target("?a=1&token=x%2By%3d%20z+w&b=2")).token == "x+y= z+w");
  CHECK(find_bearer_token("", target("?token=abc#fragment")).token == "abc");
  CHECK(find_bearer_token("", target("?token=%00a")).token == std::string{"\0a", 2});
  CHECK(find_bearer_token("", target("?token=")).error == "the token parameter is empty");
  CHECK(find_bearer_token("", target("?token")).error == "the token parameter is empty");
  CHECK(find_bearer_token("", target("?token=a&token=b")).error
        == "the token parameter is given twice");
  for (auto bad : {"?token=%", "?token=a%2", "?token=%g0", "?token=%%"})
    CHECK(find_bearer_token("", target(bad)).error
          == "the token parameter has a malformed %-escape");
  CHECK_FALSE(find_bearer_token("", target("?token=" + std::string(4097, 'a'))).error.empty());
  // "tokens" and "xtoken" are other parameters.
  CHECK(find_bearer_token("", target("?tokens=a&xtoken=b")).source == token_source::none);
}

TEST_CASE("a token in the header and the query is an error", "[security][bearer]") {
  CHECK(find_bearer_token("Bearer a", target("?token=a")).error
        == "a token in both the Authorization header and the query");
}

TEST_CASE("redact_target hides token values only", "[security][bearer]") {
  CHECK(redact_target(path) == path);
  CHECK(redact_target(target("?token=s3cret")) == target("?token=<hidden>"));
  CHECK(redact_target(target("?a=1&token=s3cret&b&token=x#f"))
        == target("?a=1&token=<hidden>&b&token=<hidden>#f"));
  CHECK(redact_target(target("?tokens=visible")) == target("?tokens=visible"));
}
