#pragma once

// plain_writer: how a link puts one write's events into its gather buffer when they are
// pre-encoded (zmtp::encode_plain(): under NULL the same bytes for every receiver, encoded
// once per event by the link it came from, the events of one read back to back in a
// shared block).
//
// Events whose encodings are adjacent in memory (encoded together) form a run, written as
// one piece. A small run is copied into the connection's write buffer, so that runs of
// small events from different reads still make one contiguous piece and the kernel copies
// one large block per write; a large run is referenced (the connection holds the events
// until the write is done). The kernel's cost per gathered piece is far above a
// user-space copy of a few hundred bytes (doc/performance.md, "ZeroMQ forwarder": 8
// pieces per event cost 40 % of the forwarder's CPU in _copy_from_iter), and a large run
// costs more to copy than its piece.
//
// The write buffer is the connection's (a string it keeps between writes), sized once per
// write for exactly the copies it will take (planner, reserve()), so it never grows while
// pieces point into it; the copies of one write are bounded (copy_budget), so a burst to
// many connections holds at most that much per connection; beyond it runs are referenced.
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
  /// Runs shorter than this are copied (measured: bench/zmq_forwarder.py,
  /// doc/performance.md).
  static constexpr size_t copy_below = 1024;

  /// Bytes copied per write at most; the rest is referenced.
  static constexpr size_t copy_budget = 64 * 1024;

  /// Whether a run of `size` bytes is copied after `copied` bytes were (budget allowing).
  static constexpr bool copies(size_t size, size_t copied) noexcept {
    return size < copy_below && copied + size <= copy_budget;
  }

  /// What the copies of a write need: add() every event of the write in order (an empty
  /// one, i.e. an event written otherwise, ends a run), then reserve(need()).
  class planner {
  public:
    void add(std::string_view plain) noexcept {
      if (extend_run(run_, plain))
        return;
      need_ = plan(need_, run_.size());
      run_ = plain;
    }

    size_t need() const noexcept { return plan(need_, run_.size()); }

  private:
    size_t need_ = 0;
    std::string_view run_;
  };

  /// Writes into `buf` (emptied; its capacity is kept).
  explicit plain_writer(std::string& buf) : buf_(buf) { buf_.clear(); }

  /// The copies of a write so far (`need` bytes) plus a run of `size` bytes, if it is
  /// copied.
  static constexpr size_t plan(size_t need, size_t size) noexcept {
    return copies(size, need) ? need + size : need;
  }

  /// Makes room for `need` bytes of copies (planner); call before the first add(). What it
  /// made no room for is referenced.
  void reserve(size_t need) {
    if (need > buf_.capacity())
      buf_.reserve(need);
  }

  /// Appends one pre-encoded event to `out` (with the run it continues; copied or
  /// referenced once the run ends, see above).
  void add(std::string_view plain, gather_buffer& out) {
    if (plain.empty() || extend_run(run_, plain))
      return;
    emit(out);
    run_ = plain;
  }

  /// Appends what is not yet in `out`; call after the last add() and before anything else
  /// goes into `out`.
  void finish(gather_buffer& out) {
    emit(out);
    flush_copies(out);
  }

  /// Bytes this writer copied.
  size_t copied() const noexcept { return buf_.size(); }

private:
  /// Copies or references the pending run.
  void emit(gather_buffer& out) {
    if (run_.empty())
      return;
    if (copies(run_.size(), buf_.size()) && buf_.size() + run_.size() <= buf_.capacity()) {
      buf_.append(run_.data(), run_.size()); // Within the capacity: no reallocation.
      copied_ += run_.size();
    } else {
      flush_copies(out);
      out.ref(run_);
    }
    run_ = {};
  }

  /// References the copies not yet in `out` (one piece).
  void flush_copies(gather_buffer& out) {
    if (copied_ == 0)
      return;
    out.ref(std::string_view{buf_.data() + buf_.size() - copied_, copied_});
    copied_ = 0;
  }

  std::string& buf_;
  std::string_view run_; ///< Adjacent events not yet copied or referenced.
  size_t copied_ = 0;    ///< Copied bytes at the end of buf_ not yet referenced in `out`.
};

} // namespace broker::internal::zeromq
