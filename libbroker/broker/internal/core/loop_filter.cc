#include "broker/internal/core/loop_filter.hh"

#include <algorithm>

namespace broker::internal {

loop_filter::sighting loop_filter::check(const route_info& route) {
  constexpr uint64_t word_bits = 64;
  if (route.origin.is_nil())
    return sighting::fresh; // A Broker peer: only TTL protects against loops.
  if (route.origin == self_)
    return sighting::duplicate; // Our own message came back around a cycle.
  auto& w = seen_[route.origin];
  if (w.bits.empty())
    w.bits.resize(window / word_bits);
  auto bit = [&](uint64_t offset) -> std::pair<uint64_t&, uint64_t> {
    auto slot = (route.sequence - offset) % window; // Position in a ring of bits.
    return {w.bits[slot / word_bits], uint64_t{1} << (slot % word_bits)};
  };
  if (route.sequence > w.highest) {
    // Clear the bits of the sequence numbers we skip over.
    auto gap = std::min(route.sequence - w.highest, window);
    for (uint64_t k = 0; k < gap; ++k) {
      auto [word, mask] = bit(k);
      word &= ~mask;
    }
    w.highest = route.sequence;
    auto [word, mask] = bit(0);
    word |= mask;
    return sighting::fresh;
  }
  if (w.highest - route.sequence >= window)
    return sighting::stale; // Too old to tell; certainly behind a newer one.
  auto [word, mask] = bit(0);
  if (word & mask)
    return sighting::duplicate;
  word |= mask; // A later copy of it is a duplicate.
  return sighting::stale;
}

} // namespace broker::internal
