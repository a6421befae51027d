#include "broker/internal/zeromq/plain_writer.hh"

#include <catch2/catch.hpp>

#include <string>

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

} // namespace

TEST_CASE("small pre-encoded events are copied into one piece", "[zeromq]") {
  gather_buffer out;
  out.copy("ctrl");
  plain_writer pw;
  std::string a(100, 'a');
  std::string b(plain_writer::copy_below - 1, 'b');
  pw.add(a, out);
  pw.add(b, out);
  pw.add(a, out);
  // The control bytes and all three events: one contiguous piece.
  CHECK(out.pieces() == 1);
  CHECK(pw.copied() == a.size() * 2 + b.size());
  CHECK(written(out) == "ctrl" + a + b + a);
}

TEST_CASE("large pre-encoded events are referenced, in order between copies", "[zeromq]") {
  gather_buffer out;
  plain_writer pw;
  std::string small(50, 's');
  std::string large(plain_writer::copy_below, 'L');
  pw.add(small, out);
  pw.add(large, out);
  pw.add(small, out);
  CHECK(out.pieces() == 3);
  CHECK(pw.copied() == 2 * small.size());
  size_t count = 0;
  auto* iov = out.iov(count);
  REQUIRE(count == 3);
  // The large one is the event's own bytes, not a copy.
  CHECK(iov[1].iov_base == static_cast<const void*>(large.data()));
  CHECK(written(out) == small + large + small);
}

TEST_CASE("copies stop at the per-write budget; the rest is referenced", "[zeromq]") {
  CHECK(plain_writer::copies(0, 0));
  CHECK(plain_writer::copies(plain_writer::copy_below - 1, 0));
  CHECK_FALSE(plain_writer::copies(plain_writer::copy_below, 0));
  CHECK(plain_writer::copies(10, plain_writer::copy_budget - 10));
  CHECK_FALSE(plain_writer::copies(11, plain_writer::copy_budget - 10));
  gather_buffer out;
  plain_writer pw;
  std::string ev(plain_writer::copy_below / 2, 'e');
  size_t fit = plain_writer::copy_budget / ev.size();
  for (size_t i = 0; i < fit + 3; ++i)
    pw.add(ev, out);
  CHECK(pw.copied() == fit * ev.size());
  CHECK(pw.copied() <= plain_writer::copy_budget);
  // One piece for the copies, one reference for each event beyond the budget.
  CHECK(out.pieces() == 1 + 3);
  std::string all;
  for (size_t i = 0; i < fit + 3; ++i)
    all += ev;
  CHECK(written(out) == all);
}

TEST_CASE("an empty pre-encoded event adds nothing", "[zeromq]") {
  gather_buffer out;
  plain_writer pw;
  pw.add({}, out);
  CHECK(out.empty());
  CHECK(out.pieces() == 0);
}
