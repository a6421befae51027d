// announcer: what each peer hears: local subscriptions, other peers' wishes, never its
// own, never reserved prefixes, and only when it changed.

#include "broker/internal/core/announcer.hh"

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <vector>

using namespace broker;
using namespace broker::internal;

namespace {

std::set<topic> set_of(std::initializer_list<const char*> xs) {
  std::set<topic> result;
  for (auto x : xs)
    result.emplace(x);
  return result;
}

/// Runs announce() and records what it sent to whom.
struct sent {
  explicit sent(announcer& a) {
    fresh = a.announce([this](uint64_t id, const filter_type& f) {
      calls.push_back(id);
      to[id] = f;
    });
  }

  std::vector<uint64_t> calls;
  std::map<uint64_t, filter_type> to;
  filter_type fresh;
};

} // namespace

TEST_CASE("with no subscriptions and no peers there is nothing to announce",
          "[announcer]") {
  announcer a{false};
  CHECK(a.local_filter().empty());
  CHECK(a.announcement_for(0).empty());
  CHECK(a.announced(7).empty());
  sent s{a};
  CHECK(s.calls.empty());
  CHECK(s.fresh.empty());
}

TEST_CASE("reserved prefixes are never announced, local or forwarded", "[announcer]") {
  announcer a{false};
  a.add_local({"<$>/local/data/statuses", "/a"});
  a.add_peer(1, set_of({"<$>/x", "/b"}), {});
  a.add_peer(2, {}, {});
  CHECK(a.local_filter() == filter_type{"/a"});
  CHECK(a.announcement_for(2) == filter_type{"/a", "/b"});
  CHECK(a.announcement_for(0) == filter_type{"/a", "/b"});
}

TEST_CASE("a peer never hears its own prefixes back, but hears the other peers'",
          "[announcer]") {
  announcer a{false};
  a.add_local({"/local"});
  a.add_peer(1, set_of({"/one"}), {});
  a.add_peer(2, set_of({"/two"}), {});
  a.add_peer(3, set_of({"/three"}), {});
  CHECK(a.announcement_for(1) == filter_type{"/local", "/three", "/two"});
  CHECK(a.announcement_for(2) == filter_type{"/local", "/one", "/three"});
  CHECK(a.announcement_for(3) == filter_type{"/local", "/one", "/two"});
  // A new peer (id 0) would hear everything.
  CHECK(a.announcement_for(0) == filter_type{"/local", "/one", "/three", "/two"});
}

TEST_CASE("a prefix two peers want is announced to both", "[announcer]") {
  announcer a{false};
  a.add_peer(1, set_of({"/shared", "/only1"}), {});
  a.add_peer(2, set_of({"/shared"}), {});
  CHECK(a.announcement_for(1) == filter_type{"/shared"});
  CHECK(a.announcement_for(2) == filter_type{"/only1", "/shared"});
}

TEST_CASE("a prefix a peer wants and we subscribe locally is announced to it",
          "[announcer]") {
  // Split horizon removes only what it alone forwards, not our own subscriptions.
  announcer a{false};
  a.add_local({"/x"});
  a.add_peer(1, set_of({"/x"}), {});
  CHECK(a.announcement_for(1) == filter_type{"/x"});
}

TEST_CASE("announcements are minimized", "[announcer]") {
  announcer a{false};
  a.add_local({"/a", "/a/b"});
  a.add_peer(1, set_of({"/a/c", "/d/e"}), {});
  a.add_peer(2, set_of({"/d"}), {});
  CHECK(a.local_filter() == filter_type{"/a"});
  CHECK(a.announcement_for(0) == filter_type{"/a", "/d"});
  CHECK(a.announcement_for(2) == filter_type{"/a", "/d/e"});
}

TEST_CASE("disable_forwarding announces only local subscriptions", "[announcer]") {
  announcer a{true};
  a.add_local({"/mine"});
  a.add_peer(1, set_of({"/one"}), {});
  a.add_peer(2, set_of({"/two"}), {});
  CHECK(a.announcement_for(1) == filter_type{"/mine"});
  CHECK(a.announcement_for(2) == filter_type{"/mine"});
  CHECK(a.announcement_for(0) == filter_type{"/mine"});
}

TEST_CASE("local prefixes are reference-counted", "[announcer]") {
  announcer a{false};
  a.add_local({"/a"});
  a.add_local({"/a", "/b"});
  a.remove_local({"/a"});
  CHECK(a.local_filter() == filter_type{"/a", "/b"});
  a.remove_local({"/a", "/b"});
  CHECK(a.local_filter().empty());
  a.remove_local({"/never"}); // Unknown: ignored.
  CHECK(a.local_filter().empty());
}

TEST_CASE("announce sends only to peers whose announcement changed", "[announcer]") {
  announcer a{false};
  a.add_local({"/a"});
  // Peer 1's handshake already told it {/a}; peer 2's told it nothing.
  a.add_peer(1, {}, filter_type{"/a"});
  a.add_peer(2, {}, {});
  {
    sent s{a};
    CHECK(s.calls == std::vector<uint64_t>{2});
    CHECK(s.to[2] == filter_type{"/a"});
    CHECK(s.fresh == filter_type{"/a"});
  }
  CHECK(a.announced(1) == filter_type{"/a"});
  CHECK(a.announced(2) == filter_type{"/a"});
  {
    sent s{a}; // Nothing changed since.
    CHECK(s.calls.empty());
  }
  // Peer 1 starts wanting /one: only peer 2 hears of it.
  a.set_peer_filter(1, set_of({"/one"}));
  {
    sent s{a};
    CHECK(s.calls == std::vector<uint64_t>{2});
    CHECK(s.to[2] == filter_type{"/a", "/one"});
    CHECK(s.fresh == filter_type{"/a", "/one"});
  }
  // A new local subscription: everybody.
  a.add_local({"/b"});
  {
    sent s{a};
    CHECK(s.calls == std::vector<uint64_t>{1, 2});
    CHECK(s.to[1] == filter_type{"/a", "/b"});
    CHECK(s.to[2] == filter_type{"/a", "/b", "/one"});
  }
  // A subscription inside one already announced changes nothing.
  a.add_local({"/a/deeper"});
  {
    sent s{a};
    CHECK(s.calls.empty());
  }
}

TEST_CASE("a peer that goes away is no longer forwarded for nor announced to",
          "[announcer]") {
  announcer a{false};
  a.add_peer(1, set_of({"/one"}), {});
  a.add_peer(2, {}, {});
  sent first{a};
  CHECK(a.announced(2) == filter_type{"/one"});
  a.remove_peer(1);
  sent s{a};
  CHECK(s.calls == std::vector<uint64_t>{2});
  CHECK(s.to[2].empty());
  CHECK(a.announced(1).empty());
  a.set_peer_filter(1, set_of({"/back"})); // Unknown now: ignored.
  CHECK(a.announcement_for(2).empty());
}
