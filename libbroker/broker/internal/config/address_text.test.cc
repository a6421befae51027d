#include "broker/internal/config/address_text.hh"

#include <catch2/catch.hpp>

using broker::internal::address_text;

TEST_CASE("addresses print as *:port, [v6]:port or host:port", "[address_text]") {
  CHECK(address_text("", 9999) == "*:9999");
  CHECK(address_text("::1", 9999) == "[::1]:9999");
  CHECK(address_text("fe80::1%eth0", 1) == "[fe80::1%eth0]:1");
  CHECK(address_text("10.0.0.1", 0) == "10.0.0.1:0");
  CHECK(address_text("node.example.org", 65535) == "node.example.org:65535");
}
