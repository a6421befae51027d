// Node mode's configuration (node_client.hh): the endpoint strings of
// broker.zeromq.connect-xpub / connect-xsub and the settings node_client::start() refuses,
// each with an error that names the option. No sockets connect here (node.test.cc does).

#include "broker/internal/zeromq/node_client.hh"

#include "broker/configuration.hh"
#include "broker/internal/io/io_runtime.hh"
#include "broker/internal/zmtp/curve.hh"

#include <catch2/catch.hpp>

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::zeromq;

namespace {

std::string parse_error(std::string_view text) {
  auto res = parse_connect_endpoint(text, "broker.zeromq.connect-xpub");
  if (res)
    return "parsed: " + res->host + " " + std::to_string(res->port);
  return res.error_value().message();
}

} // namespace

TEST_CASE("node mode: connect endpoints as Zeek writes them", "[zeromq]") {
  auto a = parse_connect_endpoint("tcp://127.0.0.1:5556", "x");
  REQUIRE(a);
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 5556);
  CHECK(a->text == "tcp://127.0.0.1:5556");
  auto b = parse_connect_endpoint("tcp://[::1]:5555", "x");
  REQUIRE(b);
  CHECK(b->host == "::1");
  CHECK(b->port == 5555);
  auto c = parse_connect_endpoint("tcp://zeek-manager.example.org:65535", "x");
  REQUIRE(c);
  CHECK(c->host == "zeek-manager.example.org");
  CHECK(c->port == 65535);
}

TEST_CASE("node mode: malformed connect endpoints are refused with the reason",
          "[zeromq]") {
  struct row {
    std::string_view text;
    std::string_view reason;
  };
  for (auto [text, reason] : {row{"", "no transport"},
                              row{"127.0.0.1:5556", "no transport"},
                              row{"udp://127.0.0.1:5556", "transport udp is not supported"},
                              row{"ipc:///tmp/x", "transport ipc is not supported"},
                              row{"TCP://127.0.0.1:5556", "transport TCP is not supported"},
                              row{"tcp://nohost", "no port"},
                              row{"tcp://", "no port"},
                              row{"tcp://:5556", "no host"},
                              row{"tcp://*:5556", "* is for binding"},
                              row{"tcp://h:0", "from 1 to 65535"},
                              row{"tcp://h:65536", "from 1 to 65535"},
                              row{"tcp://h:99999999999999999999", "from 1 to 65535"},
                              row{"tcp://h:", "from 1 to 65535"},
                              row{"tcp://h:12x", "from 1 to 65535"},
                              row{"tcp://h:-1", "from 1 to 65535"},
                              row{"tcp://::1:5555", "[address]:port"},
                              row{"tcp://[::1]5555", "[address]:port"},
                              row{"tcp://[::1", "[address]:port"},
                              row{"tcp://a b:1", "not allowed"},
                              row{"tcp://a/b:1", "not allowed"},
                              row{std::string_view{"tcp://a\0b:1", 12}, "not allowed"}}) {
    INFO(std::string{text});
    auto err = parse_error(text);
    CHECK(err.find("broker.zeromq.connect-xpub") != std::string::npos);
    CHECK(err.find(std::string{reason}) != std::string::npos);
  }
}

namespace {

struct start_fixture {
  configuration cfg;
  io_runtime io{cfg};

  ~start_fixture() { io.stop(); }

  /// node_client::start()'s error for `zs` (empty if it started; then it is stopped).
  std::string error_of(zeromq_settings zs) {
    auto res = node_client::start(io, zs);
    if (!res)
      return res.error_value().message();
    (*res)->stop();
    return {};
  }
};

zeromq_settings node_settings() {
  zeromq_settings zs;
  zs.connect_xpub = "tcp://127.0.0.1:1";
  zs.connect_xsub = "tcp://127.0.0.1:2";
  zs.node_id = "test-node";
  return zs;
}

} // namespace

TEST_CASE("node mode: settings node_client::start() refuses", "[zeromq]") {
  start_fixture f;
  CHECK(f.error_of(node_settings()).empty());
  CHECK(!wants_node_mode(zeromq_settings{}));
  CHECK(wants_node_mode(node_settings()));
  SECTION("both modes at once") {
    auto zs = node_settings();
    zs.xsub_port = 5556;
    auto err = f.error_of(zs);
    CHECK(err.find("exclude each other") != std::string::npos);
    CHECK(err.find("broker.zeromq.xsub-port") != std::string::npos);
  }
  SECTION("one endpoint only") {
    auto zs = node_settings();
    zs.connect_xsub.clear();
    CHECK(f.error_of(zs).find("connect-xsub is not set") != std::string::npos);
    zs = node_settings();
    zs.connect_xpub.clear();
    CHECK(f.error_of(zs).find("connect-xpub is not set") != std::string::npos);
  }
  SECTION("a malformed endpoint names its option") {
    auto zs = node_settings();
    zs.connect_xsub = "udp://127.0.0.1:5555";
    CHECK(f.error_of(zs).find("broker.zeromq.connect-xsub: \"udp://127.0.0.1:5555\"")
          != std::string::npos);
  }
  SECTION("CURVE: both keys or neither, valid Z85, a public key that fits") {
    auto server = zmtp::generate_keypair();
    auto client = zmtp::generate_keypair();
    auto zs = node_settings();
    zs.client_secret_key = zmtp::to_z85(client.secret_key);
    CHECK(f.error_of(zs).find("curve-server-public-key") != std::string::npos);
    zs.server_public_key = zmtp::to_z85(server.public_key);
    CHECK(f.error_of(zs).empty());
    zs.client_public_key = zmtp::to_z85(client.public_key);
    CHECK(f.error_of(zs).empty());
    zs.client_public_key = zmtp::to_z85(server.public_key);
    CHECK(f.error_of(zs).find("does not belong") != std::string::npos);
    zs.client_public_key.clear();
    zs.client_secret_key = "not z85";
    CHECK(f.error_of(zs).find("curve-client-secret-key is no Z85 key") != std::string::npos);
    zs.client_secret_key.clear();
    CHECK(f.error_of(zs).find("curve-client-secret-key") != std::string::npos);
    // A copied Zeek configuration: the forwarder's secret key stands for its public key.
    zs = node_settings();
    zs.client_secret_key = zmtp::to_z85(client.secret_key);
    zs.server_secret_key = zmtp::to_z85(server.secret_key);
    CHECK(f.error_of(zs).empty());
    zs.server_public_key = zmtp::to_z85(client.public_key);
    CHECK(f.error_of(zs).find("does not belong") != std::string::npos);
    zs.server_public_key = "short";
    CHECK(f.error_of(zs).find("curve-server-public-key is no Z85 key") != std::string::npos);
  }
}
