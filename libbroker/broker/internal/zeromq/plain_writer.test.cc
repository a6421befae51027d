#include "broker/internal/zeromq/plain_writer.hh"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

// The copy-or-reference decision for pre-encoded events (plain_writer.hh).

using broker::internal::gather_buffer;
using broker::internal::zeromq::plain_writer;

namespace {

std::string written(gather_buffer& out) {
  size_t count = 0;
  auto* iov = out.iov(count);
  std::string all;
  for (size_t i = 0; i < count; ++i)
    all.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  return all;
}

/// Writes `events` as fill() does: plan, reserve, add each, finish.
void write_all(plain_writer& pw, const std::vector<std::string>& events, gather_buffer& out) {
  plain_writer::planner plan;
  for (auto& ev : events)
    plan.add(ev);
  pw.reserve(plan.need());
  for (auto& ev : events)
    pw.add(ev, out);
  pw.finish(out);
}

/// Views of `block` cut at `sizes`: events encoded back to back.
std::vector<std::string_view> cut(const std::string& block, std::vector<size_t> sizes) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  for (auto n : sizes) {
    out.push_back(std::string_view{block}.substr(pos, n));
    pos += n;
  }
  return out;
}

} // namespace

TEST_CASE("small pre-encoded events are copied into one piece", "[zeromq]") {
  std::string buf;
  gather_buffer out;
  out.copy("ctrl");
  plain_writer pw{buf};
  std::string a(100, 'a');
  std::string b(plain_writer::copy_below - 1, 'b');
  write_all(pw, {a, b, a}, out);
  // The control bytes, then all three events as one piece of the writer's buffer.
  CHECK(out.pieces() == 2);
  CHECK(pw.copied() == a.size() * 2 + b.size());
  CHECK(buf.size() == pw.copied());
  CHECK(written(out) == "ctrl" + a + b + a);
}

TEST_CASE("large pre-encoded events are referenced, in order between copies", "[zeromq]") {
  std::string buf;
  gather_buffer out;
  plain_writer pw{buf};
  std::string small(50, 's');
  std::string large(plain_writer::copy_below, 'L');
  std::vector<std::string> events{small, small, large, small, large, large};
  write_all(pw, events, out); // Referenced: `events` outlives the checks.
  // [small small] [large] [small] [large] [large]
  CHECK(out.pieces() == 5);
  CHECK(pw.copied() == 3 * small.size());
  size_t count = 0;
  auto* iov = out.iov(count);
  REQUIRE(count == 5);
  // The large ones are the events' own bytes, not copies.
  CHECK(iov[1].iov_base == static_cast<const void*>(events[2].data()));
  CHECK(iov[4].iov_base == static_cast<const void*>(events[5].data()));
  CHECK(written(out) == small + small + large + small + large + large);
}

TEST_CASE("copies stop at the per-write budget; the rest is referenced", "[zeromq]") {
  CHECK(plain_writer::copies(0, 0));
  CHECK(plain_writer::copies(plain_writer::copy_below - 1, 0));
  CHECK_FALSE(plain_writer::copies(plain_writer::copy_below, 0));
  CHECK(plain_writer::copies(10, plain_writer::copy_budget - 10));
  CHECK_FALSE(plain_writer::copies(11, plain_writer::copy_budget - 10));
  CHECK(plain_writer::plan(5, 10) == 15);
  CHECK(plain_writer::plan(5, plain_writer::copy_below) == 5);
  CHECK(plain_writer::plan(plain_writer::copy_budget, 1) == plain_writer::copy_budget);
  std::string buf;
  gather_buffer out;
  plain_writer pw{buf};
  std::string ev(plain_writer::copy_below / 2, 'e');
  size_t fit = plain_writer::copy_budget / ev.size();
  std::vector<std::string> events(fit + 3, ev);
  write_all(pw, events, out);
  CHECK(pw.copied() == fit * ev.size());
  CHECK(buf.capacity() <= plain_writer::copy_budget + 64);
  // One piece for the copies, one reference for each event beyond the budget.
  CHECK(out.pieces() == 1 + 3);
  std::string all;
  for (auto& e : events)
    all += e;
  CHECK(written(out) == all);
}

TEST_CASE("without room reserved a writer references; it never moves its bytes", "[zeromq]") {
  std::string buf;
  gather_buffer out;
  plain_writer pw{buf};
  pw.reserve(100); // Room for the first two only.
  auto* before = buf.data();
  std::string ev(50, 'x');
  for (int i = 0; i < 4; ++i)
    pw.add(ev, out);
  pw.finish(out);
  CHECK(buf.data() == before);
  CHECK(pw.copied() == 100);
  CHECK(out.pieces() == 3); // [copied 2] [ref] [ref]
  CHECK(written(out) == ev + ev + ev + ev);
}

TEST_CASE("a second write reuses the buffer; empty events add nothing", "[zeromq]") {
  std::string buf;
  {
    gather_buffer out;
    plain_writer pw{buf};
    write_all(pw, {std::string(300, 'a')}, out);
    CHECK(written(out) == std::string(300, 'a'));
  }
  auto cap = buf.capacity();
  gather_buffer out;
  plain_writer pw{buf};
  CHECK(buf.empty());
  write_all(pw, {"", std::string(10, 'b'), ""}, out);
  CHECK(buf.capacity() == cap);
  CHECK(out.pieces() == 1);
  CHECK(written(out) == std::string(10, 'b'));
  gather_buffer none;
  plain_writer pw2{buf};
  write_all(pw2, {""}, none);
  CHECK(none.empty());
}

TEST_CASE("events encoded back to back are one run: referenced if large, copied if small",
          "[zeromq]") {
  std::string block1(3000, 'a');
  for (size_t i = 0; i < block1.size(); ++i)
    block1[i] = static_cast<char>('a' + i % 26);
  std::string block2(300, 'z');
  std::string lone(40, 'l');
  // [600 600 600] from block1, a lone small event, [100 200] from block2, then the rest
  // of block1 (not adjacent to the first run any more: a new run).
  auto b1 = cut(block1, {600, 600, 600, 1200});
  auto b2 = cut(block2, {100, 200});
  std::vector<std::string_view> events{b1[0], b1[1], b1[2], lone, b2[0], b2[1], b1[3]};
  plain_writer::planner plan;
  for (auto ev : events)
    plan.add(ev);
  // Copied: the lone event and block2's run (40 + 300); both block1 runs are large.
  CHECK(plan.need() == 340);
  std::string buf;
  gather_buffer out;
  plain_writer pw{buf};
  pw.reserve(plan.need());
  for (auto ev : events)
    pw.add(ev, out);
  pw.finish(out);
  CHECK(pw.copied() == 340);
  size_t count = 0;
  auto* iov = out.iov(count);
  // [block1 run of 1800, referenced] [lone + block2 run, copied: one piece] [1200, ref]
  REQUIRE(count == 3);
  CHECK(iov[0].iov_base == static_cast<const void*>(block1.data()));
  CHECK(iov[0].iov_len == 1800);
  CHECK(iov[1].iov_len == 340);
  CHECK(iov[2].iov_base == static_cast<const void*>(block1.data() + 1800));
  std::string all;
  for (auto ev : events)
    all += ev;
  CHECK(written(out) == all);
}
