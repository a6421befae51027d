#include "broker/error.hh"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

using namespace broker;

TEST_CASE("every error code name parses back to its code", "[error]") {
  size_t named = 0;
  for (int i = 0; i <= UINT8_MAX; ++i) {
    auto code = static_cast<ec>(i);
    auto name = to_string(code);
    ec parsed = ec::unspecified;
    if (!from_string(name, parsed))
      continue;
    ++named;
    INFO("code " << i << " named " << name);
    CHECK(parsed == code);
  }
  CHECK(named == 42 + 5);
}

TEST_CASE("error code names use Broker's snake_case spelling", "[error]") {
  // doc/protocol/peering.md §10 plus the local extensions of error.hh.
  CHECK(to_string(ec::none) == "none");
  CHECK(to_string(ec::peer_disconnect_during_handshake) == "peer_disconnect_during_handshake");
  CHECK(to_string(ec::repeated_peering_handshake_request)
        == "repeated_peering_handshake_request");
  CHECK(to_string(ec::deserialization_failed) == "deserialization_failed");
  CHECK(to_string(ec::invalid_json) == "invalid_json");
  CHECK(to_string(ec::backpressure_overflow) == "backpressure_overflow");
  CHECK(to_string(ec::invalid_config) == "invalid_config");
  CHECK(to_string(ec::invalid_topic) == "invalid_topic");
}

TEST_CASE("from_string rejects unknown names and leaves the code alone", "[error]") {
  ec code = ec::peer_invalid;
  CHECK_FALSE(from_string("", code));
  CHECK_FALSE(from_string("Peer_Invalid", code));
  CHECK_FALSE(from_string("peer-invalid", code));
  CHECK_FALSE(from_string("unknown_error", code));
  CHECK(code == ec::peer_invalid);
}

TEST_CASE("an error renders as its code name and message", "[error]") {
  CHECK(to_string(error{ec::deserialization_failed, "truncated count at offset 1"})
        == "deserialization_failed: truncated count at offset 1");
  CHECK(to_string(error{ec::peer_timeout}) == "peer_timeout");
  CHECK_FALSE(error{});
  CHECK(error{ec::unspecified});
}
