#include "address.hh"

#include "broker/internal/config/address_text.hh"

#include <catch2/catch.hpp>

#include <string>

using namespace broker_tools;

namespace {

peer_address parsed(std::string_view text, const address_rules& rules = {}) {
  auto result = parse_address(text, rules);
  INFO(text);
  REQUIRE(result);
  return *result;
}

std::string error_of(std::string_view text, const address_rules& rules = {}) {
  auto result = parse_address(text, rules);
  INFO(text);
  REQUIRE_FALSE(result);
  CHECK(result.error_value().code() == broker::ec::invalid_config);
  return result.error_value().message();
}

} // namespace

TEST_CASE("host:port and tcp://host:port name the same peer") {
  for (auto text : {"10.0.0.1:9999", "tcp://10.0.0.1:9999", "<tcp://10.0.0.1:9999>"}) {
    auto addr = parsed(text);
    CHECK(addr.host == "10.0.0.1");
    CHECK(addr.port == 9999);
  }
  CHECK(parsed("node.example.org:1").host == "node.example.org");
}

TEST_CASE("IPv6 addresses are written in brackets") {
  for (auto text : {"[::1]:9999", "tcp://[::1]:9999", "<tcp://[::1]:9999>"}) {
    auto addr = parsed(text);
    CHECK(addr.host == "::1");
    CHECK(addr.port == 9999);
  }
  CHECK(error_of("::1:9999").find("needs brackets") != std::string::npos);
  CHECK(error_of("[::1").find("missing ']'") != std::string::npos);
  CHECK(error_of("[]:1").find("empty IPv6") != std::string::npos);
}

TEST_CASE("an address error quotes the text and says what is wrong") {
  auto msg = error_of("127.0.0.1");
  CHECK(msg == "expected host:port or tcp://host:port, got \"127.0.0.1\" (missing port)");
  CHECK(error_of("http://x:1").find("unsupported scheme \"http\"") != std::string::npos);
  CHECK(error_of(":9999").find("missing host") != std::string::npos);
  CHECK(error_of("h:0").find("port 0") != std::string::npos);
  CHECK(error_of("h:65536").find("1-65535") != std::string::npos);
  CHECK(error_of("h:-1").find("1-65535") != std::string::npos);
  CHECK(error_of("h:12x").find("\"h:12x\"") != std::string::npos);
  CHECK(error_of("").find("missing host") != std::string::npos);
}

TEST_CASE("rules allow a default port, an empty host and port 0 where a tool wants them") {
  address_rules server;
  server.default_port = 9999;
  server.allow_empty_host = true;
  server.allow_port_zero = true;
  CHECK(parsed("127.0.0.1", server).port == 9999);
  CHECK(parsed("[::1]", server).host == "::1");
  CHECK(parsed(":0", server).host.empty());
  CHECK(parsed(":0", server).port == 0);
  CHECK(error_of("h:70000", server).find("0-65535") != std::string::npos);
}

TEST_CASE("parse_port_number accepts 0-65535 in plain digits") {
  CHECK(parse_port_number("0") == uint16_t{0});
  CHECK(parse_port_number("65535") == uint16_t{65535});
  CHECK_FALSE(parse_port_number("65536"));
  CHECK_FALSE(parse_port_number("099999"));
  CHECK_FALSE(parse_port_number("+1"));
  CHECK_FALSE(parse_port_number(""));
  CHECK_FALSE(parse_port_number("9999/tcp"));
}

TEST_CASE("addresses print as *:port, [v6]:port or host:port, and parse back") {
  CHECK(format_address("", 9999) == "*:9999");
  CHECK(format_address("::1", 9999) == "[::1]:9999");
  CHECK(format_address("10.0.0.1", 1) == "10.0.0.1:1");
  address_rules server;
  server.allow_empty_host = true;
  server.allow_port_zero = true;
  for (auto [host, port] : {std::pair<std::string, uint16_t>{"", 0}, {"", 9999}, {"::1", 1},
                            {"node.example.org", 65535}}) {
    auto back = parsed(format_address(host, port), server);
    CHECK(back.host == host);
    CHECK(back.port == port);
  }
  CHECK(parsed("*:9999", server).host.empty());
  CHECK(error_of("*:9999").find("missing host") != std::string::npos);
  // The library's log lines write them the same way.
  for (auto host : {"", "::1", "10.0.0.1"})
    CHECK(format_address(host, 7) == broker::internal::address_text(host, 7));
}
