// Node mode against Zeek's forwarder (node_client.hh): libzmq's zmq_proxy_steerable between
// an XSUB and an XPUB with XPUB_VERBOSER, as Zeek's manager runs it, with emulated Zeek
// nodes (libzmq XPUB/XSUB as Zeek sets them up) and an endpoint in node mode: discovery,
// both directions, split horizon, CURVE, a forwarder restart. Reconnects and bad forwarders:
// node_faults.test.cc. Over TCP on 127.0.0.1; every wait is bounded. Built with libzmq only.

#include <catch2/catch.hpp>

#ifndef BROKER_HAVE_LIBZMQ

TEST_CASE("zeromq node mode with a libzmq forwarder", "[zeromq][interop]") {
  WARN("skipped: libzmq was not found at configure time");
  SUCCEED();
}

#else

#include "broker/endpoint.hh"
#include "broker/internal/codec/bin.hh"
#include "broker/internal/zeromq/zeromq.test.hh"

#include <functional>

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::zeromq::test;

namespace {

/// An emulated Zeek node: XPUB (VERBOSE, as Zeek) to the forwarder's XSUB, XSUB to its XPUB.
struct zeek_node {
  void* pub;
  void* sub;

  zeek_node(void* ctx, const libzmq_forwarder& fwd, const zmtp::keypair* client = nullptr,
            const zmtp::key* server = nullptr) {
    pub = zmq_socket(ctx, ZMQ_XPUB);
    sub = zmq_socket(ctx, ZMQ_XSUB);
    int one = 1;
    int zero = 0;
    int timeout = 200;
    zmq_setsockopt(pub, ZMQ_XPUB_VERBOSE, &one, sizeof(one));
    for (auto* s : {pub, sub}) {
      zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
      zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
      if (client != nullptr) {
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server->data(), 32);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, client->public_key.data(), 32);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, client->secret_key.data(), 32);
      }
    }
    REQUIRE(zmq_connect(pub, fwd.xsub_endpoint().c_str()) == 0);
    REQUIRE(zmq_connect(sub, fwd.xpub_endpoint().c_str()) == 0);
  }

  ~zeek_node() {
    zmq_close(pub);
    zmq_close(sub);
  }

  /// Reads subscription notices from the XPUB until `wanted` arrives (bounded).
  bool wait_subscription(const std::string& wanted) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{wait_ms};
    std::string seen;
    while (std::chrono::steady_clock::now() < deadline) {
      auto parts = recv_parts(pub);
      if (parts.size() == 1 && parts[0] == wanted)
        return true;
      for (auto& p : parts)
        seen += (p.empty() ? std::string{"<empty>"} : std::to_string(int(p[0])) + p.substr(1)) + " ";
    }
    UNSCOPED_INFO("notices seen: " << seen);
    return false;
  }

  /// Events from the XSUB until `pred` accepts one (bounded); empty if none did.
  std::vector<std::string> wait_event(const std::function<bool(const std::vector<std::string>&)>& pred) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{wait_ms};
    while (std::chrono::steady_clock::now() < deadline) {
      auto parts = recv_parts(sub);
      if (!parts.empty() && pred(parts))
        return parts;
    }
    return {};
  }
};


std::string topic_of(const std::vector<std::string>& ev) {
  return ev.empty() ? std::string{} : ev[0];
}

/// An endpoint in node mode at `fwd` (`client`: CURVE with the forwarder's `server` key).
std::unique_ptr<endpoint> node_endpoint(const libzmq_forwarder& fwd,
                                        const zmtp::keypair* client = nullptr,
                                        const zmtp::key* server = nullptr) {
  configuration cfg;
  REQUIRE(!cfg.set("broker.disable-ssl", "true"));
  if (client != nullptr) {
    REQUIRE(!cfg.set("broker.zeromq.curve-client-secret-key", zmtp::to_z85(client->secret_key)));
    REQUIRE(!cfg.set("broker.zeromq.curve-server-public-key", zmtp::to_z85(*server)));
  }
  REQUIRE(!cfg.set("broker.zeromq.connect-xpub", fwd.xsub_endpoint()));
  REQUIRE(!cfg.set("broker.zeromq.connect-xsub", fwd.xpub_endpoint()));
  REQUIRE(!cfg.set("broker.zeromq.node-id", "node-test"));
  REQUIRE(!cfg.set("broker.metrics.endpoint-name", "bridge"));
  auto ep = std::make_unique<endpoint>(std::move(cfg));
  REQUIRE(!ep->startup_error());
  return ep;
}

constexpr std::string_view own_nodeid = "zeek.cluster.nodeid.node-test.";

/// A libzmq context, terminated last (after the sockets of the nodes in it closed).
struct zmq_context {
  void* ptr = zmq_ctx_new();
  ~zmq_context() { zmq_ctx_term(ptr); }
};

/// What every test here starts from: libzmq's forwarder (CURVE with `with_curve`), an
/// emulated Zeek node and our endpoint on it, joined as a node: its XSUB subscribed to our
/// nodeid topic, as Zeek's nodes do. Torn down in reverse: endpoint, node, context.
struct joined {
  zmtp::keypair server = zmtp::generate_keypair();
  zmtp::keypair client = zmtp::generate_keypair();
  bool curve;
  libzmq_forwarder fwd;
  zmq_context ctx;
  zeek_node z;
  std::unique_ptr<endpoint> ep;

  explicit joined(bool with_curve = false)
    : curve(with_curve),
      fwd(0, 0, curve ? &server : nullptr),
      z(ctx.ptr, fwd, curve ? &client : nullptr, curve ? &server.public_key : nullptr),
      ep(node_endpoint(fwd, curve ? &client : nullptr, curve ? &server.public_key : nullptr)) {
    REQUIRE(z.wait_subscription("\x01" + std::string{own_nodeid}));
  }
};


/// Publishes probes on `topic` until the node receives one (the bridge's subscription is
/// in the core), then drains the rest.
bool until_bridged(endpoint& ep, zeek_node& z, const std::string& topic) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{wait_ms};
  while (std::chrono::steady_clock::now() < deadline) {
    REQUIRE(!ep.publish(topic + "probe", data{"probe"}));
    auto parts = recv_parts(z.sub);
    if (parts.size() == 4 && parts[0] == topic + "probe") {
      while (!recv_parts(z.sub).empty()) {
      }
      return true;
    }
  }
  return false;
}

} // namespace

TEST_CASE("node mode: broker-node joins libzmq's forwarder as a Zeek node",
          "[zeromq][interop]") {
  joined j; // Our XSUB subscribed to our nodeid topic, as Zeek's nodes do.
  auto& z = j.z;
  auto& ep = j.ep;
  // ZeroMQ -> a local subscriber, subscribed on its behalf, the same bytes.
  auto local = ep->make_subscriber({"z/in/"});
  REQUIRE(z.wait_subscription("\x01z/in/"));
  data value = vector{data{"event"}, data{count{7}}};
  auto payload = *bin::encode(value);
  publish(z.pub, {"z/in/1", "zeek-1", "broker-bin-v1", payload});
  auto msg = local.get(std::chrono::milliseconds{wait_ms});
  REQUIRE(msg);
  CHECK(msg->topic() == "z/in/1");
  REQUIRE(msg->impl().binary_if_known() != nullptr);
  CHECK(*msg->impl().binary_if_known() == payload);
  // The node says hello: our ZeroMQ::hello answers its nodeid subscription.
  publish(z.sub, {"\x01zeek.cluster.nodeid.zeek-1."});
  auto hello = z.wait_event([](auto& ev) { return topic_of(ev) == "zeek.cluster.nodeid.zeek-1."; });
  REQUIRE(hello.size() == 4);
  CHECK(hello[1] == "node-test");
  CHECK(hello[2] == "broker-bin-v1");
  data want = vector{data{count{1}}, data{count{1}},
                     data{vector{data{"Cluster::Backend::ZeroMQ::hello"},
                                 data{vector{data{"bridge"}, data{"node-test"}}}}}};
  CHECK(hello[3] == *bin::encode(want));
  // core -> ZeroMQ, with our node id.
  publish(z.sub, {"\x01z/out/"});
  REQUIRE(until_bridged(*ep, z, "z/out/"));
  REQUIRE(!ep->publish("z/out/x", value));
  auto got = z.wait_event([](auto& ev) { return topic_of(ev) == "z/out/x"; });
  CHECK(got == std::vector<std::string>{"z/out/x", "node-test", "broker-bin-v1", payload});
}

TEST_CASE("node mode: split horizon, our own events back from the forwarder are dropped",
          "[zeromq][interop]") {
  joined j;
  auto& z = j.z;
  auto& ep = j.ep;
  // A local subscriber and the Zeek node want the same topic: our XSUB subscribes it, so
  // the forwarder sends our own event back to us.
  auto local = ep->make_subscriber({"both/"});
  REQUIRE(z.wait_subscription(std::string{"\x01"} + "both/"));
  publish(z.sub, {std::string{"\x01"} + "both/"});
  REQUIRE(until_bridged(*ep, z, "both/"));
  while (local.get(std::chrono::milliseconds{300})) {
  } // The probes.
  REQUIRE(!ep->publish("both/1", data{"once"}));
  auto at_zeek = z.wait_event([](auto& ev) { return topic_of(ev) == "both/1"; });
  CHECK(at_zeek.size() == 4);
  auto first = local.get(std::chrono::milliseconds{wait_ms});
  REQUIRE(first);
  CHECK(first->topic() == "both/1");
  CHECK(!local.get(std::chrono::milliseconds{500})); // Not again through the bridge.
  CHECK(z.wait_event([](auto& ev) { return topic_of(ev) == "both/1"; }).empty());
  // A Zeek node's event reaches the local subscriber once and does not go back out.
  publish(z.pub, {"both/2", "zeek-1", "broker-bin-v1", *bin::encode(data{"z"})});
  auto second = local.get(std::chrono::milliseconds{wait_ms});
  REQUIRE(second);
  CHECK(second->topic() == "both/2");
  CHECK(!local.get(std::chrono::milliseconds{300}));
  // The Zeek node got it back once from the forwarder (its own, which Zeek drops),
  // not a second time with our node id.
  auto echoes = 0;
  for (auto ev = recv_parts(z.sub); !ev.empty(); ev = recv_parts(z.sub))
    if (topic_of(ev) == "both/2")
      echoes += ev[1] == "node-test" ? 100 : 1;
  CHECK(echoes == 1);
}

TEST_CASE("node mode: broker-node does not subscribe upstream to what only Zeek nodes want",
          "[zeromq][interop]") {
  // The bridge takes what Zeek nodes subscribe to (to send them the node's messages); it
  // must not subscribe to it in turn: that would pull those events into the node, and our
  // subscription would keep the prefix held at the forwarder after the node cancels it.
  joined j;
  auto& z = j.z;
  auto& ep = j.ep;
  const std::string prefix = "zeek-only/";
  publish(z.sub, {"\x01" + prefix});
  REQUIRE(until_bridged(*ep, z, prefix)); // The bridge holds it now.
  // The cancel reaches the node's XPUB: nobody else (not we) holds the prefix.
  publish(z.sub, {std::string{"\0", 1} + prefix});
  CHECK(z.wait_subscription(std::string{"\0", 1} + prefix));
}

TEST_CASE("node mode: CURVE both ways through a CURVE forwarder", "[zeromq][interop]") {
  joined j{true};
  auto& z = j.z;
  auto& ep = j.ep;
  auto local = ep->make_subscriber({"c/in/"});
  REQUIRE(z.wait_subscription(std::string{"\x01"} + "c/in/"));
  auto payload = *bin::encode(data{"sealed"});
  // A burst: several sealed messages in one read.
  for (int i = 1; i <= 5; ++i)
    publish(z.pub, {"c/in/" + std::to_string(i), "zeek-1", "broker-bin-v1", payload});
  for (int i = 1; i <= 5; ++i) {
    auto msg = local.get(std::chrono::milliseconds{wait_ms});
    REQUIRE(msg);
    CHECK(msg->topic() == "c/in/" + std::to_string(i));
  }
  publish(z.sub, {std::string{"\x01"} + "c/out/"});
  REQUIRE(until_bridged(*ep, z, "c/out/"));
  REQUIRE(!ep->publish("c/out/x", data{"sealed"}));
  auto got = z.wait_event([](auto& ev) { return topic_of(ev) == "c/out/x"; });
  CHECK(got == std::vector<std::string>{"c/out/x", "node-test", "broker-bin-v1", payload});
}

TEST_CASE("node mode: the forwarder restarts, broker-node reconnects and subscribes again",
          "[zeromq][interop]") {
  joined j;
  auto& z = j.z;
  auto& fwd = j.fwd;
  auto local = j.ep->make_subscriber({"r/"});
  REQUIRE(z.wait_subscription("\x01r/"));
  fwd.stop();
  std::this_thread::sleep_for(200ms);
  fwd.start(fwd.xsub_port, fwd.xpub_port);
  // libzmq's node reconnects by itself; broker-node sends its subscriptions again.
  REQUIRE(z.wait_subscription("\x01" + std::string{own_nodeid}));
  publish(z.pub, {"r/again", "zeek-1", "broker-bin-v1", *bin::encode(data{"again"})});
  auto msg = local.get(std::chrono::milliseconds{wait_ms});
  REQUIRE(msg);
  CHECK(msg->topic() == "r/again");
}
#endif
