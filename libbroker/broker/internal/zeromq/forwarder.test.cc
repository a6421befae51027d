// The forwarder's rules (doc/protocol/zeromq.md §10) with fake links: no sockets.

#include "broker/internal/zeromq/forwarder.hh"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace broker::internal;
using namespace broker::internal::zeromq;

namespace {

struct fake_link : link {
  std::vector<std::string> got;  ///< Topics delivered.
  std::vector<std::string> subs; ///< "+prefix" / "-prefix" passed on.
  void deliver(const shared_event& ev) override { got.emplace_back(ev->frame(0)); }
  void pass_subscription(bool subscribe, const std::string& prefix) override {
    subs.push_back((subscribe ? "+" : "-") + prefix);
  }
};

shared_event make_event(std::string topic) {
  auto ev = std::make_shared<zmtp::multipart>();
  for (auto part : {topic, std::string{"node-1"}, std::string{"broker-bin-v1"},
                    std::string{"\x01\x02payload", 9}}) {
    ev->bytes += part;
    ev->ends.push_back(ev->bytes.size());
  }
  return ev;
}

} // namespace

TEST_CASE("events reach every subscriber whose prefix matches, once each", "[zeromq]") {
  forwarder fwd;
  fake_link pub, a, b, c;
  fwd.add_publisher(&pub);
  fwd.add_subscriber(&a);
  fwd.add_subscriber(&b);
  fwd.add_subscriber(&c);
  fwd.subscription(&a, true, "zeek/");
  fwd.subscription(&a, true, "zeek/cluster/"); // Two matching prefixes: still once.
  fwd.subscription(&b, true, "zeek/cluster/nodeid/w1/");
  fwd.subscription(&c, true, "other");
  CHECK(fwd.publish(&pub, make_event("zeek/cluster/nodeid/w1/")) == 2);
  CHECK(fwd.publish(&pub, make_event("zeek/logs")) == 1);
  CHECK(fwd.publish(&pub, make_event("zee")) == 0);
  CHECK(fwd.publish(&pub, make_event("")) == 0);
  CHECK(a.got == std::vector<std::string>{"zeek/cluster/nodeid/w1/", "zeek/logs"});
  CHECK(b.got == std::vector<std::string>{"zeek/cluster/nodeid/w1/"});
  CHECK(c.got.empty());
  // As zmq_proxy_steerable counts: each event once, matched or not.
  CHECK(fwd.counters().backend_messages_sent == 4);
  CHECK(fwd.counters().frontend_messages_received == 4);
}

TEST_CASE("the empty prefix matches every topic", "[zeromq]") {
  forwarder fwd;
  fake_link pub, a;
  fwd.add_subscriber(&a);
  fwd.subscription(&a, true, "");
  fwd.publish(&pub, make_event("anything"));
  CHECK(a.got == std::vector<std::string>{"anything"});
}

TEST_CASE("every subscribe is passed to every publisher, an unsubscribe once nobody holds "
          "the prefix",
          "[zeromq]") {
  forwarder fwd;
  fake_link p1, p2, a, b;
  fwd.add_publisher(&p1);
  fwd.add_publisher(&p2);
  fwd.add_subscriber(&a);
  fwd.add_subscriber(&b);
  fwd.subscription(&a, true, "x");
  fwd.subscription(&b, true, "x"); // A duplicate from another node: passed on too.
  fwd.subscription(&a, true, "x"); // And from the same node.
  fwd.subscription(&a, false, "x");
  // Three subscribes counted, one cancelled: a node's XPUB must keep the prefix for b.
  auto expected = std::vector<std::string>{"+x", "+x", "+x"};
  CHECK(p1.subs == expected);
  CHECK(p2.subs == expected);
  // a's one unsubscribe removed its (single) entry, as libzmq's XPUB does; b still gets x.
  fwd.publish(&p1, make_event("xy"));
  CHECK(a.got.empty());
  CHECK(b.got.size() == 1);
  fwd.subscription(&b, false, "x");
  fwd.subscription(&a, false, "x"); // Not held by a any more, but counted on the XSUB side.
  CHECK(p1.subs.back() == "-x");
  CHECK(fwd.prefixes() == 0);
}

TEST_CASE("a new publisher receives every distinct prefix held", "[zeromq]") {
  forwarder fwd;
  fake_link a, b, late;
  fwd.add_subscriber(&a);
  fwd.add_subscriber(&b);
  fwd.subscription(&a, true, "one");
  fwd.subscription(&b, true, "one");
  fwd.subscription(&b, true, "two");
  fwd.subscription(&b, true, "gone");
  fwd.subscription(&b, false, "gone");
  fwd.add_publisher(&late);
  CHECK(late.subs == std::vector<std::string>{"+one", "+two"});
  CHECK(fwd.prefixes() == 2);
}

TEST_CASE("a subscriber that leaves unsubscribes what it held", "[zeromq]") {
  forwarder fwd;
  fake_link pub, a, b;
  fwd.add_subscriber(&a);
  fwd.add_subscriber(&b);
  fwd.subscription(&a, true, "p");
  fwd.subscription(&a, true, "q");
  fwd.subscription(&b, true, "p");
  fwd.add_publisher(&pub);
  pub.subs.clear();
  fwd.remove_subscriber(&a);
  CHECK(pub.subs == std::vector<std::string>{"-q"}); // b still holds p.
  CHECK(fwd.prefixes() == 1); // b still holds p.
  fwd.publish(&pub, make_event("p1"));
  CHECK(a.got.empty());
  CHECK(b.got.size() == 1);
  // A publisher that left gets nothing more.
  fwd.remove_publisher(&pub);
  fwd.subscription(&b, true, "r");
  CHECK(pub.subs.size() == 1);
}

TEST_CASE("an unsubscribe of a prefix nobody holds is not passed on", "[zeromq]") {
  forwarder fwd;
  fake_link pub, a;
  fwd.add_publisher(&pub);
  fwd.add_subscriber(&a);
  fwd.subscription(&a, false, "never");
  CHECK(pub.subs.empty());
  CHECK(fwd.prefixes() == 0);
}
