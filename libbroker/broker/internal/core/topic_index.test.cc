#include "broker/internal/core/topic_index.hh"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>

using namespace broker;
using namespace broker::internal;

namespace {

struct target : index_target {
  explicit target(int id) : id(id) {}
  int id;
};

/// Lookup result as sorted ids, so tests can compare with a literal list.
std::vector<int> ids_of(target_span xs) {
  std::vector<int> result;
  for (auto* t : xs)
    result.push_back(static_cast<target*>(t)->id);
  std::sort(result.begin(), result.end());
  return result;
}

/// What a routing thread would see right now: a fresh snapshot, looked up with `scratch`.
struct reader {
  explicit reader(size_t cache_slots) : scratch(cache_slots) {}

  std::vector<int> operator()(topic_index& idx, std::string_view topic) {
    if (!snap || idx.dirty())
      snap = idx.snapshot();
    return ids_of(snap->lookup(topic, scratch));
  }

  lookup_scratch scratch;
  std::unique_ptr<const index_snapshot> snap;
};

using ints = std::vector<int>;

} // namespace

TEST_CASE("topic index semantics hold with the cache on and off", "[topic_index]") {
  auto cache_size = GENERATE(size_t{0}, size_t{1024});
  CAPTURE(cache_size);
  topic_index idx;
  reader ids{cache_size};
  target a{1}, b{2}, c{3};

  SECTION("an empty index matches nothing") {
    CHECK(ids(idx, "/foo").empty());
    CHECK(ids(idx, "").empty());
  }
  SECTION("a subscription to /foo also matches /foobar and /foo/bar but not /fo") {
    idx.subscribe(&a, {"/foo"});
    CHECK(ids(idx, "/foo") == ints{1});
    CHECK(ids(idx, "/foobar") == ints{1});
    CHECK(ids(idx, "/foo/bar") == ints{1});
    CHECK(ids(idx, "/fo").empty());
    CHECK(ids(idx, "/bar").empty());
    CHECK(ids(idx, "").empty());
  }
  SECTION("the empty prefix matches every topic, including the empty one") {
    idx.subscribe(&a, {""});
    CHECK(ids(idx, "") == ints{1});
    CHECK(ids(idx, "/x") == ints{1});
    CHECK(ids(idx, "<$>/local/data/statuses") == ints{1});
  }
  SECTION("overlapping prefixes of one handler yield one copy") {
    idx.subscribe(&a, {"/a", "/a/b", "/a/b/c", ""});
    CHECK(ids(idx, "/a/b/c/d") == ints{1});
    CHECK(idx.size() == 4);
  }
  SECTION("several handlers on overlapping prefixes each match once") {
    idx.subscribe(&a, {"/a"});
    idx.subscribe(&b, {"/a/b", "/a"});
    idx.subscribe(&c, {"/x"});
    CHECK(ids(idx, "/a/b/c") == ints{1, 2});
    CHECK(ids(idx, "/a/c") == ints{1, 2});
    CHECK(ids(idx, "/x/a/b") == ints{3});
  }
  SECTION("unsubscribing one of two overlapping prefixes keeps the other") {
    idx.subscribe(&a, {"/foo", "/foo/bar"});
    idx.unsubscribe(&a, {"/foo"});
    CHECK(ids(idx, "/foo/bar/baz") == ints{1});
    CHECK(ids(idx, "/foo/baz").empty());
    CHECK(ids(idx, "/foo").empty());
    idx.unsubscribe(&a, {"/foo/bar"});
    CHECK(ids(idx, "/foo/bar/baz").empty());
    CHECK(idx.size() == 0);
  }
  SECTION("a prefix that ends inside an edge splits it correctly") {
    idx.subscribe(&a, {"/foobar"});
    idx.subscribe(&b, {"/foo"});
    idx.subscribe(&c, {"/fox"});
    CHECK(ids(idx, "/foobar") == ints{1, 2});
    CHECK(ids(idx, "/foob") == ints{2});
    CHECK(ids(idx, "/fox1") == ints{3});
    CHECK(ids(idx, "/fo").empty());
  }
  SECTION("subscribing the same prefix twice is harmless") {
    CHECK(idx.subscribe(&a, {"/x", "/x"}) == 1);
    CHECK(idx.subscribe(&a, {"/x"}) == 0);
    CHECK(ids(idx, "/x") == ints{1});
    CHECK(idx.unsubscribe(&a, {"/x"}) == 1);
    CHECK(ids(idx, "/x").empty());
  }
  SECTION("unsubscribing something never subscribed changes nothing") {
    idx.subscribe(&a, {"/foo"});
    CHECK(idx.unsubscribe(&a, {"/fo", "/foo/", "/bar"}) == 0);
    CHECK(idx.unsubscribe(&b, {"/foo"}) == 0);
    CHECK(ids(idx, "/foo") == ints{1});
  }
  SECTION("raw bytes, including NUL and 0xff, are ordinary prefix bytes") {
    std::string with_nul{"/a\0b", 4};
    std::string high{"/\xff\xfe"};
    idx.subscribe(&a, {topic{with_nul}});
    idx.subscribe(&b, {topic{high}});
    CHECK(ids(idx, std::string{"/a\0bc", 5}) == ints{1});
    CHECK(ids(idx, "/a").empty());
    CHECK(ids(idx, "/\xff\xfe\x01") == ints{2});
    CHECK(ids(idx, "/\xff").empty());
  }
}

TEST_CASE("unsubscribing prunes every node it no longer needs", "[topic_index]") {
  topic_index idx;
  reader ids{0};
  target a{1}, b{2};
  CHECK(idx.node_count() == 1);
  idx.subscribe(&a, {"/foo/bar", "/foo/baz", "/foo", "/zzz"});
  idx.subscribe(&b, {"/foo/bar"});
  idx.unsubscribe(&a, {"/foo/bar", "/foo/baz", "/foo", "/zzz"});
  // Only b's "/foo/bar" remains: the root plus one merged leaf.
  CHECK(idx.node_count() == 2);
  CHECK(ids(idx, "/foo/bar") == ints{2});
  idx.unsubscribe(&b, {"/foo/bar"});
  CHECK(idx.node_count() == 1);
  CHECK(idx.prefixes().empty());
}

TEST_CASE("every snapshot has its own generation, so cached answers never go stale",
          "[topic_index]") {
  topic_index idx;
  reader ids{16};
  target a{1};
  idx.subscribe(&a, {"/a", "/b", "/c"});
  auto first = idx.snapshot();
  auto second = idx.snapshot();
  CHECK(first->generation() != second->generation());
  CHECK(ids(idx, "/a/x") == ints{1});
  CHECK(ids(idx, "/a/x") == ints{1});
  CHECK(ids.scratch.cache_hits() == 1);
  idx.unsubscribe(&a, {"/a", "/b"});
  // The cached answer for /a/x must not survive the change.
  CHECK(ids(idx, "/a/x").empty());
}

TEST_CASE("the cache stays within its capacity", "[topic_index]") {
  topic_index idx;
  reader ids{4};
  target a{1};
  idx.subscribe(&a, {"/t"});
  for (int i = 0; i < 100; ++i)
    CHECK(ids(idx, "/t/" + std::to_string(i)) == ints{1});
  for (int i = 0; i < 100; ++i)
    CHECK(ids(idx, "/t/" + std::to_string(i)) == ints{1});
  CHECK(ids.scratch.cache_hits() <= 4 * 2);
}

TEST_CASE("a snapshot never changes when the index changes after it", "[topic_index]") {
  topic_index idx;
  lookup_scratch scratch{0};
  target a{1}, b{2}, c{3};
  idx.subscribe(&a, {"/foo", "/foo/bar"});
  idx.subscribe(&b, {"/foo/baz"});
  auto before = idx.snapshot();
  // Splits, merges, removals and additions on the same paths.
  idx.subscribe(&c, {"/fo", "/foo/ba", "/x"});
  idx.unsubscribe(&a, {"/foo", "/foo/bar"});
  idx.unsubscribe(&b, {"/foo/baz"});
  auto after = idx.snapshot();
  CHECK(ids_of(before->lookup("/foo/bar/1", scratch)) == ints{1});
  CHECK(ids_of(before->lookup("/foo/baz", scratch)) == ints{1, 2});
  CHECK(ids_of(before->lookup("/x", scratch)).empty());
  CHECK(ids_of(after->lookup("/foo/bar/1", scratch)) == ints{3});
  CHECK(ids_of(after->lookup("/foo/baz", scratch)) == ints{3});
  CHECK(ids_of(after->lookup("/x", scratch)) == ints{3});
}

TEST_CASE("a lookup returns each target once, sorted by address", "[topic_index]") {
  topic_index idx;
  lookup_scratch scratch{0};
  std::vector<target> ts;
  for (int i = 0; i < 6; ++i)
    ts.emplace_back(i);
  // Targets on three levels of one path, some on several.
  idx.subscribe(&ts[0], {"", "/a", "/a/b"});
  idx.subscribe(&ts[1], {"/a/b"});
  idx.subscribe(&ts[2], {"/a"});
  idx.subscribe(&ts[3], {"", "/a/b"});
  idx.subscribe(&ts[4], {"/a/c"});
  auto snap = idx.snapshot();
  auto xs = snap->lookup("/a/b/x", scratch);
  CHECK(ids_of(xs) == ints{0, 1, 2, 3});
  CHECK(std::is_sorted(xs.begin(), xs.end()));
}

TEST_CASE("prefixes() lists each subscribed prefix once, sorted", "[topic_index]") {
  topic_index idx;
  target a{1}, b{2};
  idx.subscribe(&a, {"/b", "/a/x", "/a"});
  idx.subscribe(&b, {"/a", "/ab"});
  CHECK(idx.prefixes() == filter_type{"/a", "/a/x", "/ab", "/b"});
}

TEST_CASE("the index agrees with a brute-force matcher on random workloads",
          "[topic_index]") {
  auto cache_size = GENERATE(size_t{0}, size_t{16});
  std::mt19937 rng{42};
  reader ids{cache_size};
  const std::string alphabet = "/ab";
  auto random_string = [&](size_t max_len) {
    std::string s;
    auto len = rng() % (max_len + 1);
    for (size_t i = 0; i < len; ++i)
      s += alphabet[rng() % alphabet.size()];
    return s;
  };
  topic_index idx;
  std::vector<target> targets;
  for (int i = 0; i < 8; ++i)
    targets.emplace_back(i);
  std::vector<std::set<std::string>> subs(targets.size());
  for (int round = 0; round < 2000; ++round) {
    auto t = rng() % targets.size();
    auto prefix = random_string(5);
    if (rng() % 3 == 0) {
      idx.unsubscribe(&targets[t], {topic{prefix}});
      subs[t].erase(prefix);
    } else {
      idx.subscribe(&targets[t], {topic{prefix}});
      subs[t].insert(prefix);
    }
    auto probe = random_string(7);
    ints expected;
    for (size_t i = 0; i < subs.size(); ++i)
      for (auto& p : subs[i])
        if (probe.compare(0, p.size(), p) == 0 && probe.size() >= p.size()) {
          expected.push_back(static_cast<int>(i));
          break;
        }
    REQUIRE(ids(idx, probe) == expected);
  }
}
