// The forwarder's rules (doc/protocol/zeromq.md §10) with fake links: no sockets.

#include "broker/internal/zeromq/forwarder.hh"

#include <catch2/catch.hpp>

#include <string>
#include <tuple>
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

namespace {

/// Records each batch it is offered.
struct batch_link : fake_link {
  std::vector<size_t> batches;
  using fake_link::deliver;
  void deliver(const shared_event* evs, const uint32_t* which, size_t n) override {
    batches.push_back(n);
    link::deliver(evs, which, n);
  }
};

} // namespace

TEST_CASE("a batch of events is published as one by one, each subscriber's as one batch",
          "[zeromq]") {
  // The same subscriptions twice: once published event by event, once as a batch.
  forwarder one, all;
  fake_link pub1, pub2;
  fake_link a1, b1, c1;
  batch_link a2, b2, c2;
  one.add_publisher(&pub1);
  all.add_publisher(&pub2);
  for (auto [fwd, a, b, c] : {std::tuple<forwarder*, fake_link*, fake_link*, fake_link*>{
                                &one, &a1, &b1, &c1},
                              {&all, &a2, &b2, &c2}}) {
    fwd->add_subscriber(a);
    fwd->add_subscriber(b);
    fwd->add_subscriber(c);
    fwd->subscription(a, true, "zeek/");
    fwd->subscription(b, true, "zeek/x");
    fwd->subscription(c, true, "");
  }
  // Runs of one topic, a change back, an event without frames, the empty topic.
  std::vector<shared_event> evs;
  for (auto t : {"zeek/x1", "zeek/x1", "zeek/y", "zeek/x1", "", "other", "other", "zeek/x2"})
    evs.push_back(make_event(t));
  evs.insert(evs.begin() + 3, std::make_shared<zmtp::multipart>());
  size_t total = 0;
  for (auto& ev : evs)
    total += one.publish(&pub1, ev);
  CHECK(all.publish(&pub2, evs.data(), evs.size()) == total);
  CHECK(a2.got == a1.got);
  CHECK(b2.got == b1.got);
  CHECK(c2.got == c1.got);
  CHECK(a1.got
        == std::vector<std::string>{"zeek/x1", "zeek/x1", "zeek/y", "zeek/x1", "zeek/x2"});
  CHECK(b1.got == std::vector<std::string>{"zeek/x1", "zeek/x1", "zeek/x1", "zeek/x2"});
  CHECK(c1.got.size() == 8);
  // One batch per subscriber with matches.
  CHECK(a2.batches == std::vector<size_t>{5});
  CHECK(b2.batches == std::vector<size_t>{4});
  CHECK(c2.batches == std::vector<size_t>{8});
  // The counters as zmq_proxy_steerable's: the frameless event is not counted either way.
  CHECK(all.counters().frontend_messages_received == one.counters().frontend_messages_received);
  CHECK(all.counters().frontend_bytes_received == one.counters().frontend_bytes_received);
  CHECK(all.counters().backend_messages_sent == one.counters().backend_messages_sent);
  CHECK(all.counters().backend_bytes_sent == one.counters().backend_bytes_sent);
  CHECK(all.counters().backend_messages_sent == 8);
  // Nothing matches: no batch at all; an empty batch is nothing.
  batch_link d;
  forwarder f;
  f.add_subscriber(&d);
  f.subscription(&d, true, "nope");
  CHECK(f.publish(&pub1, evs.data(), evs.size()) == 0);
  CHECK(f.publish(&pub1, evs.data(), 0) == 0);
  CHECK(d.batches.empty());
}

TEST_CASE("the tap sees every event of a batch but its owner's", "[zeromq]") {
  forwarder fwd;
  fake_link pub, owner;
  std::vector<std::string> tapped;
  size_t batches = 0;
  fwd.set_tap(&owner, [&](const shared_event* evs, size_t n) {
    ++batches;
    for (size_t i = 0; i < n; ++i)
      if (evs[i]->size() > 0)
        tapped.emplace_back(evs[i]->frame(0));
  });
  std::vector<shared_event> evs{make_event("a"), std::make_shared<zmtp::multipart>(),
                                make_event("b")};
  fwd.publish(&pub, evs.data(), evs.size());
  fwd.publish(&owner, evs.data(), evs.size());
  CHECK(tapped == std::vector<std::string>{"a", "b"});
  CHECK(batches == 1); // Once per batch, not per event.
}
