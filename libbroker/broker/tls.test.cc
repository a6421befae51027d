// TLS peering with certificates the test generates itself (a CA and leaf certificates).

#include "broker/endpoint.test.hh"
#include "broker/endpoint.hh"

#include "broker/internal/pki.test.hh"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

using namespace broker;
using namespace std::chrono_literals;
using broker::test::pki;

namespace {

using broker::test::eventually;

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
