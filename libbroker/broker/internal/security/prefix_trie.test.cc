#include "broker/internal/security/prefix_trie.hh"

#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace broker::internal::security;

namespace {

constexpr auto none = prefix_trie::none;

prefix_trie make(const std::vector<std::pair<std::string, int32_t>>& xs, int slot = 0) {
  std::vector<prefix_trie::item> items;
  for (auto& [prefix, value] : xs)
    items.push_back({prefix, slot, value});
  return prefix_trie{items};
}

/// The value of the longest prefix of `topic` in `xs`, the slow way.
int32_t naive_longest(const std::map<std::string, int32_t>& xs, const std::string& topic) {
  int32_t best = none;
  size_t best_len = 0;
  bool found = false;
  for (auto& [prefix, value] : xs)
    if (topic.compare(0, prefix.size(), prefix) == 0 && (!found || prefix.size() >= best_len)) {
      best = value;
      best_len = prefix.size();
      found = true;
    }
  return best;
}

std::vector<int32_t> values(const std::vector<prefix_trie::below_entry>& xs) {
  std::vector<int32_t> result;
  for (auto& x : xs)
    result.push_back(x.value);
  return result;
}

} // namespace

TEST_CASE("an empty trie matches nothing", "[security][trie]") {
  prefix_trie empty;
  CHECK(empty.longest(0, "") == none);
  CHECK(empty.longest(1, "/zeek") == none);
  CHECK(empty.below(0, "").empty());
  prefix_trie built{std::vector<prefix_trie::item>{}};
  CHECK(built.longest(0, "/a") == none);
}

TEST_CASE("the empty prefix matches every topic, the empty topic included", "[security][trie]") {
  auto t = make({{"", 7}});
  CHECK(t.longest(0, "") == 7);
  CHECK(t.longest(0, "/anything") == 7);
  CHECK(t.longest(1, "/anything") == none); // Other slot.
}

TEST_CASE("longest prefix wins; prefixes are raw bytes", "[security][trie]") {
  auto t = make({{"/zeek", 1}, {"/zeek/", 2}, {"/zeek/logs/", 3}, {"/zeek/logs/notice", 4},
                 {"/zoo", 5}});
  CHECK(t.longest(0, "/zeekx") == 1); // Not a path: "/zeek" is a prefix of "/zeekx".
  CHECK(t.longest(0, "/zeek") == 1);
  CHECK(t.longest(0, "/zeek/") == 2);
  CHECK(t.longest(0, "/zeek/events") == 2);
  CHECK(t.longest(0, "/zeek/logs/conn") == 3);
  CHECK(t.longest(0, "/zeek/logs/notice") == 4);
  CHECK(t.longest(0, "/zeek/logs/noticeboard") == 4);
  CHECK(t.longest(0, "/zeek/logs/notic") == 3);
  CHECK(t.longest(0, "/zo") == none);
  CHECK(t.longest(0, "/zoo/x") == 5);
  CHECK(t.longest(0, "") == none);
  CHECK(t.longest(0, "/") == none);
}

TEST_CASE("both slots live in one trie", "[security][trie]") {
  std::vector<prefix_trie::item> items{{"/a/", 0, 1}, {"/a/b/", 1, 2}, {"/a/", 1, 3}};
  prefix_trie t{items};
  CHECK(t.longest(0, "/a/b/c") == 1);
  CHECK(t.longest(1, "/a/b/c") == 2);
  CHECK(t.longest(1, "/a/x") == 3);
  CHECK(t.longest(0, "/b") == none);
}

TEST_CASE("bytes above 0x7f and NUL bytes are ordinary bytes", "[security][trie]") {
  std::string high = "/\xff\x80";
  std::string nul{"/\0x", 3};
  auto t = make({{high, 1}, {nul, 2}, {"/", 3}});
  CHECK(t.longest(0, high + "tail") == 1);
  CHECK(t.longest(0, nul + "tail") == 2);
  CHECK(t.longest(0, std::string{"/\0y", 3}) == 3);
  CHECK(t.longest(0, "/\xff") == 3);
}

TEST_CASE("below lists longer prefixes in pre-order with their nearest ancestor",
          "[security][trie]") {
  auto t = make({{"/a/", 1}, {"/a/b/", 2}, {"/a/b/c/", 3}, {"/a/d/", 4}, {"/b", 5}, {"", 6}});
  // At a node: its descendants only.
  auto xs = t.below(0, "/a/");
  CHECK(values(xs) == std::vector<int32_t>{2, 3, 4});
  REQUIRE(xs.size() == 3);
  CHECK(xs[0].parent == -1);
  CHECK(xs[1].parent == 0);
  CHECK(xs[2].parent == -1);
  // Inside an edge: the node the edge leads to is below too.
  CHECK(values(t.below(0, "/a/b")) == std::vector<int32_t>{2, 3});
  CHECK(values(t.below(0, "/a")) == std::vector<int32_t>{1, 2, 3, 4});
  // The root: everything but the root's own value.
  CHECK(values(t.below(0, "")) == std::vector<int32_t>{1, 2, 3, 4, 5});
  // Nothing below, or a diverging prefix.
  CHECK(t.below(0, "/a/b/c/").empty());
  CHECK(t.below(0, "/a/x").empty());
  CHECK(t.below(0, "/c").empty());
  CHECK(t.below(1, "").empty());
}

TEST_CASE("splitting edges keeps every value", "[security][trie]") {
  // Inserted longest first, so that each shorter prefix splits an existing edge.
  auto t = make({{"/abcdef", 1}, {"/abcd", 2}, {"/ab", 3}, {"/abx", 4}, {"/a", 5}});
  CHECK(t.longest(0, "/abcdefg") == 1);
  CHECK(t.longest(0, "/abcde") == 2);
  CHECK(t.longest(0, "/abc") == 3);
  CHECK(t.longest(0, "/abxy") == 4);
  CHECK(t.longest(0, "/az") == 5);
  CHECK(values(t.below(0, "/ab")) == std::vector<int32_t>{2, 1, 4});
}

TEST_CASE("a (prefix, slot) given twice keeps the later value", "[security][trie]") {
  auto t = make({{"/a", 1}, {"/a", 2}});
  CHECK(t.longest(0, "/a") == 2);
}

TEST_CASE("longest agrees with a naive scan on random prefix sets", "[security][trie]") {
  std::mt19937 rng{42};
  // A small alphabet makes prefixes share a lot of structure.
  auto random_text = [&rng](size_t max_len) {
    std::uniform_int_distribution<size_t> len(0, max_len);
    std::uniform_int_distribution<int> ch(0, 3);
    std::string s;
    for (auto n = len(rng); n > 0; --n)
      s += "/ab\xff"[ch(rng)];
    return s;
  };
  for (int round = 0; round < 50; ++round) {
    std::map<std::string, int32_t> xs;
    std::vector<prefix_trie::item> items;
    for (int i = 0; i < 40; ++i)
      xs[random_text(8)] = i;
    for (auto& [prefix, value] : xs)
      items.push_back({prefix, 0, value});
    prefix_trie t{items};
    for (int probe = 0; probe < 200; ++probe) {
      auto topic = random_text(12);
      INFO("round " << round << " topic " << topic);
      CHECK(t.longest(0, topic) == naive_longest(xs, topic));
      // below(): exactly the prefixes strictly longer than `topic` that start with it.
      std::vector<int32_t> want;
      for (auto& [prefix, value] : xs)
        if (prefix.size() > topic.size() && prefix.compare(0, topic.size(), topic) == 0)
          want.push_back(value);
      auto got = values(t.below(0, topic));
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      CHECK(got == want);
    }
  }
}

TEST_CASE("deep chains of prefixes", "[security][trie]") {
  // 4096 nested prefixes "a", "aa", ...: one node per byte.
  std::vector<std::string> prefixes;
  std::vector<prefix_trie::item> items;
  for (int i = 1; i <= 4096; ++i)
    prefixes.push_back(std::string(static_cast<size_t>(i), 'a'));
  for (int i = 0; i < 4096; ++i)
    items.push_back({prefixes[static_cast<size_t>(i)], 0, i});
  prefix_trie t{items};
  CHECK(t.longest(0, std::string(5000, 'a')) == 4095);
  CHECK(t.longest(0, std::string(100, 'a') + "b") == 99);
  auto xs = t.below(0, std::string(4000, 'a'));
  REQUIRE(xs.size() == 96);
  CHECK(xs.back().parent == 94);
}
