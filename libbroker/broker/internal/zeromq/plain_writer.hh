#pragma once

// plain_writer: how a link puts one write's events into its gather buffer when they are
// pre-encoded (zmtp::encode_plain(): under NULL the same bytes for every receiver, encoded
// once per event by the link it came from).
//
// A small event is copied into the write's own bytes, so a run of them is one contiguous
// piece and the kernel copies one large block per write; a large one is referenced (the
// connection holds the event until the write is done), one piece each. The kernel's cost
// per gathered piece is far above a user-space copy of a few hundred bytes (doc/
// performance.md, "ZeroMQ forwarder": 8 pieces per event cost 40 % of the forwarder's CPU in
// _copy_from_iter), and a large payload costs more to copy than its piece.
//
// The copies of one write are bounded (copy_budget), so a burst to many connections holds
// at most that much per connection; beyond it events are referenced.
//
// Owner: one connection, on its strand; one plain_writer per write (fill()).

#include "broker/internal/io/gather.hh"

#include <cstddef>
#include <string_view>

namespace broker::internal::zeromq {

class plain_writer {
public:
  /// Events whose encoding is shorter than this are copied (measured: bench/
  /// zmq_forwarder.py, doc/performance.md).
  static constexpr size_t copy_below = 1024;

  /// Bytes copied per write at most; the rest is referenced.
  static constexpr size_t copy_budget = 64 * 1024;

  /// Whether an event of `size` bytes is copied after `copied` bytes were.
  static constexpr bool copies(size_t size, size_t copied) noexcept {
    return size < copy_below && copied + size <= copy_budget;
  }

  /// Appends one pre-encoded event to `out` (copied or referenced, see above).
  void add(std::string_view plain, gather_buffer& out) {
    if (copies(plain.size(), copied_)) {
      out.copy(plain);
      copied_ += plain.size();
    } else {
      out.ref(plain);
    }
  }

  /// Bytes this writer copied.
  size_t copied() const noexcept { return copied_; }

private:
  size_t copied_ = 0;
};

} // namespace broker::internal::zeromq
