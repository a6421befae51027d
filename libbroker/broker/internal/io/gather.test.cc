// gather_buffer: copied and referenced pieces, partial writes, linearize(), reuse.

#include "broker/internal/io/gather.hh"

#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

using namespace broker::internal;

namespace {

/// What iov() says is left to write, as one string.
std::string unwritten(gather_buffer& buf) {
  size_t count = 0;
  auto* iov = buf.iov(count);
  std::string result;
  for (size_t i = 0; i < count; ++i)
    result.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  return result;
}

/// The lengths of the iovecs iov() returns.
std::vector<size_t> lengths(gather_buffer& buf) {
  size_t count = 0;
  auto* iov = buf.iov(count);
  std::vector<size_t> result;
  for (size_t i = 0; i < count; ++i)
    result.push_back(iov[i].iov_len);
  return result;
}

/// Takes the iovecs as a writer does before its first write.
void materialize(gather_buffer& buf) {
  size_t count = 0;
  buf.iov(count);
}

std::string linear(const gather_buffer& buf) {
  std::string out = "garbage that linearize() must replace";
  buf.linearize(out);
  return out;
}

} // namespace

TEST_CASE("an empty gather buffer is empty and done and has nothing to write", "[gather]") {
  gather_buffer buf;
  CHECK(buf.empty());
  CHECK(buf.done());
  CHECK(buf.size() == 0);
  CHECK(buf.pieces() == 0);
  size_t count = 99;
  buf.iov(count);
  CHECK(count == 0);
  CHECK(linear(buf).empty());
}

TEST_CASE("empty copies and empty refs add no piece", "[gather]") {
  gather_buffer buf;
  buf.copy("", 0);
  buf.copy(std::string_view{});
  buf.ref(std::string_view{});
  CHECK(buf.pieces() == 0);
  CHECK(buf.empty());
  CHECK(buf.done());
}

TEST_CASE("consecutive copies merge into one piece and a ref starts a new one", "[gather]") {
  gather_buffer buf;
  std::string shared = "SHARED";
  buf.copy("ab");
  buf.copy("cd");
  buf.ref(shared);
  buf.copy("ef");
  buf.ref(shared);
  buf.ref(shared);
  CHECK(buf.pieces() == 5);
  CHECK(lengths(buf) == std::vector<size_t>{4, 6, 2, 6, 6});
  CHECK(unwritten(buf) == "abcdSHAREDefSHAREDSHARED");
  CHECK(buf.size() == 24);
  CHECK_FALSE(buf.empty());
  CHECK_FALSE(buf.done());
}

TEST_CASE("a referenced piece points at the caller's bytes and a copy does not",
          "[gather]") {
  gather_buffer buf;
  std::string header = "HEAD";
  std::string payload = "payload";
  buf.copy(header);
  buf.ref(payload);
  size_t count = 0;
  auto* iov = buf.iov(count);
  REQUIRE(count == 2);
  CHECK(iov[0].iov_base != static_cast<void*>(header.data()));
  CHECK(iov[1].iov_base == static_cast<void*>(payload.data()));
  // Changing the caller's bytes changes the referenced piece only.
  header[0] = 'X';
  payload[0] = 'X';
  CHECK(linear(buf) == "HEADXayload");
}

TEST_CASE("copied bytes stay right when the scratch grows between refs", "[gather]") {
  gather_buffer buf;
  std::string shared = "|";
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    // Growing sizes make the scratch string reallocate several times.
    std::string small(static_cast<size_t>(i) * 7 + 1, static_cast<char>('a' + i % 26));
    buf.copy(small);
    buf.ref(shared);
    expected += small;
    expected += shared;
  }
  CHECK(buf.pieces() == 400);
  CHECK(unwritten(buf) == expected);
  CHECK(linear(buf) == expected);
}

TEST_CASE("consume within a piece shortens it and keeps the rest", "[gather]") {
  gather_buffer buf;
  buf.copy("abc");
  std::string shared = "defg";
  buf.ref(shared);
  buf.copy("hi");
  materialize(buf);
  buf.consume(2);
  CHECK(buf.size() == 7);
  CHECK(lengths(buf) == std::vector<size_t>{1, 4, 2});
  CHECK(unwritten(buf) == "cdefghi");
}

TEST_CASE("consume across piece boundaries skips whole pieces and cuts into the next",
          "[gather]") {
  gather_buffer buf;
  std::string shared = "defg";
  buf.copy("abc");
  buf.ref(shared);
  buf.copy("hi");
  CHECK(unwritten(buf) == "abcdefghi");
  buf.consume(5); // "abc" and "de"
  CHECK(lengths(buf) == std::vector<size_t>{2, 2});
  CHECK(unwritten(buf) == "fghi");
  buf.consume(2); // Exactly to the boundary: the next piece comes first, whole.
  CHECK(lengths(buf) == std::vector<size_t>{2});
  CHECK(unwritten(buf) == "hi");
  CHECK_FALSE(buf.done());
  buf.consume(2);
  CHECK(buf.done());
  CHECK(buf.size() == 0);
  CHECK_FALSE(buf.empty()); // Empty means nothing was appended, not nothing is left.
  size_t count = 99;
  buf.iov(count);
  CHECK(count == 0);
}

TEST_CASE("consume before the first iov() is applied when iov() builds the list",
          "[gather]") {
  gather_buffer buf;
  std::string shared = "defg";
  buf.copy("abc");
  buf.ref(shared);
  buf.consume(4);
  CHECK(buf.size() == 3);
  CHECK(unwritten(buf) == "efg");
  buf.consume(3);
  CHECK(buf.done());
}

TEST_CASE("calling iov() again mid-write returns the same unwritten rest", "[gather]") {
  gather_buffer buf;
  std::string shared = "0123456789";
  buf.ref(shared);
  buf.copy("xyz");
  materialize(buf);
  buf.consume(4);
  CHECK(unwritten(buf) == "456789xyz");
  CHECK(unwritten(buf) == "456789xyz");
}

TEST_CASE("linearize returns every piece in order whatever was consumed", "[gather]") {
  gather_buffer buf;
  std::string a = "<ref-a>";
  std::string b = "<ref-b>";
  buf.copy("1");
  buf.ref(a);
  buf.copy("2");
  buf.copy("3");
  buf.ref(b);
  CHECK(linear(buf) == "1<ref-a>23<ref-b>");
  materialize(buf);
  buf.consume(9);
  CHECK(linear(buf) == "1<ref-a>23<ref-b>");
}

TEST_CASE("more pieces than IOV_MAX are all listed and drain in chunks of IOV_MAX",
          "[gather]") {
  // stream::write_now() hands the kernel at most IOV_MAX iovecs per sendmsg() and calls
  // iov() again after consume(): the buffer must list every piece and resume exactly
  // where a write stopped, also in the middle of a piece.
  constexpr size_t n = 3 * IOV_MAX + 17;
  gather_buffer buf;
  std::vector<std::string> shared;
  shared.reserve(n);
  std::string expected;
  for (size_t i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      shared.push_back("r" + std::to_string(i) + ";");
      buf.ref(shared.back());
      expected += shared.back();
    } else {
      auto s = "c" + std::to_string(i) + ";";
      buf.copy(s);
      expected += s;
    }
  }
  REQUIRE(buf.pieces() == n);
  size_t count = 0;
  buf.iov(count);
  CHECK(count == n);
  // Write like write_now(): at most IOV_MAX iovecs per call, and the "socket" takes all
  // but three bytes of them, so every call but the last stops inside a piece.
  std::string written;
  size_t calls = 0;
  while (!buf.done()) {
    auto* iov = buf.iov(count);
    auto m = std::min<size_t>(count, IOV_MAX);
    size_t offered = 0;
    for (size_t i = 0; i < m; ++i)
      offered += iov[i].iov_len;
    auto took = m == IOV_MAX && offered > 3 ? offered - 3 : offered;
    auto left = took;
    for (size_t i = 0; i < m && left > 0; ++i) {
      auto k = std::min(left, iov[i].iov_len);
      written.append(static_cast<const char*>(iov[i].iov_base), k);
      left -= k;
    }
    buf.consume(took);
    ++calls;
    REQUIRE(calls <= n); // Every call makes progress.
  }
  CHECK(written == expected);
  CHECK(calls >= 4);
  CHECK(buf.size() == 0);
}

TEST_CASE("clear empties the buffer for the next batch, also after a partial write",
          "[gather]") {
  gather_buffer buf;
  std::string shared = "old-shared";
  buf.copy("old");
  buf.ref(shared);
  materialize(buf);
  buf.consume(5);
  buf.clear();
  CHECK(buf.empty());
  CHECK(buf.done());
  CHECK(buf.pieces() == 0);
  size_t count = 99;
  buf.iov(count);
  CHECK(count == 0);
  // Reuse: only the new pieces, and nothing of the old consumed count.
  std::string fresh = "NEW";
  buf.copy("n");
  buf.ref(fresh);
  CHECK(buf.pieces() == 2);
  CHECK(buf.size() == 4);
  CHECK(unwritten(buf) == "nNEW");
  CHECK(linear(buf) == "nNEW");
  buf.consume(4);
  CHECK(buf.done());
}

TEST_CASE("extend_run joins bytes that lie back to back, nothing else", "[gather]") {
  std::string block = "abcdef";
  std::string_view whole{block};
  std::string_view run = whole.substr(0, 2);
  CHECK(extend_run(run, whole.substr(2, 3)));
  CHECK(run == "abcde");
  CHECK_FALSE(extend_run(run, whole.substr(4, 2))); // Overlaps: not adjacent.
  std::string other = "f";
  CHECK_FALSE(extend_run(run, other)); // Elsewhere in memory.
  CHECK_FALSE(extend_run(run, whole.substr(5, 0))); // Empty: nothing to join.
  std::string_view none;
  CHECK_FALSE(extend_run(none, whole)); // No run yet.
  CHECK(run == "abcde");
}
