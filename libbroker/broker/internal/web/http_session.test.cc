#include "broker/internal/web/http_session.hh"

#include <catch2/catch.hpp>

using namespace broker::internal;

TEST_CASE("web_socket_accept answers RFC 6455's example key", "[web]") {
  // RFC 6455 §1.3.
  CHECK(web_socket_accept("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST_CASE("web_socket_accept refuses keys that are not 16 bytes in base64", "[web]") {
  CHECK(web_socket_accept("").empty());
  CHECK(web_socket_accept("dGhlIHNhbXBsZSBub25jZQ=").empty());   // 23 characters
  CHECK(web_socket_accept("dGhlIHNhbXBsZSBub25jZQ===").empty()); // 25 characters
  CHECK(web_socket_accept("dGhlIHNhbXBsZSBub25jZQAA").empty());  // no padding: 18 bytes
  CHECK(web_socket_accept("dGhlIHNhbXBsZSBub25j*Q==").empty());  // not base64
  CHECK(web_socket_accept("dGhlIHNhbXBsZSBub25j Q==").empty());
}
