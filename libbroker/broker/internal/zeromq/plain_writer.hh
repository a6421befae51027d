#pragma once

// plain_writer: how a link puts one write's events into its gather buffer when they are
// pre-encoded (zmtp::encode_plain(): under NULL the same bytes for every receiver, encoded
// once per event by the link it came from).
//
// A small event is copied into the connection's write buffer, so a run of them is one
// contiguous piece and the kernel copies one large block per write; a large one is
// referenced (the connection holds the event until the write is done), one piece each. The
// kernel's cost per gathered piece is far above a user-space copy of a few hundred bytes
// (doc/performance.md, "ZeroMQ forwarder": 8 pieces per event cost 40 % of the forwarder's
// CPU in _copy_from_iter), and a large payload costs more to copy than its piece.
//
// The write buffer is the connection's (a string it keeps between writes), sized once per
// write for exactly the copies it will take (reserve()), so it never grows while pieces
// point into it; the copies of one write are bounded (copy_budget), so a burst to many
// connections holds at most that much per connection; beyond it events are referenced.
//
// Owner: one connection, on its strand; one plain_writer per write (fill()). The buffer must
// stay unchanged until the write is done.

#include "broker/internal/io/gather.hh"

#include <cstddef>
#include <string>
#include <string_view>

namespace broker::internal::zeromq {

class plain_writer {
public:
  /// Events whose encoding is shorter than this are copied (measured: bench/
  /// zmq_forwarder.py, doc/performance.md).
  static constexpr size_t copy_below = 1024;

  /// Bytes copied per write at most; the rest is referenced.
  static constexpr size_t copy_budget = 64 * 1024;

  /// Whether an event of `size` bytes is copied after `copied` bytes were (budget allowing).
  static constexpr bool copies(size_t size, size_t copied) noexcept {
    return size < copy_below && copied + size <= copy_budget;
  }

  /// Writes into `buf` (emptied; its capacity is kept).
  explicit plain_writer(std::string& buf) : buf_(buf) { buf_.clear(); }

  /// The copies of a write so far (`need` bytes) plus an event of `size` bytes, if it is
  /// copied: fold it over a batch for reserve().
  static constexpr size_t plan(size_t need, size_t size) noexcept {
    return copies(size, need) ? need + size : need;
  }

  /// Makes room for `need` bytes of copies (plan()); call before the first add(). What it
  /// made no room for is referenced.
  void reserve(size_t need) {
    if (need > buf_.capacity())
      buf_.reserve(need);
  }

  /// Appends one pre-encoded event to `out` (copied or referenced, see above).
  void add(std::string_view plain, gather_buffer& out) {
    if (plain.empty())
      return;
    if (copies(plain.size(), buf_.size()) && buf_.size() + plain.size() <= buf_.capacity()) {
      buf_.append(plain.data(), plain.size()); // Within the capacity: no reallocation.
      run_ += plain.size();
      return;
    }
    finish(out);
    out.ref(plain);
  }

  /// Appends the copies not yet in `out`; call after the last add().
  void finish(gather_buffer& out) {
    if (run_ == 0)
      return;
    out.ref(std::string_view{buf_.data() + buf_.size() - run_, run_});
    run_ = 0;
  }

  /// Bytes this writer copied.
  size_t copied() const noexcept { return buf_.size(); }

private:
  std::string& buf_;
  size_t run_ = 0; ///< Copied bytes at the end of buf_ not yet referenced in `out`.
};

} // namespace broker::internal::zeromq
