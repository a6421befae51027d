#pragma once

// gather_buffer: the bytes of one write of a connection, as a list of pieces for one
// gathered system call: one write carries every frame queued for a connection, and shared
// encoded payloads are referenced, not copied (doc/architecture.md, "One message, socket to
// socket", step 5).
//
// Owner: one connection, on its strand.
//
// Use:
//   1. copy() small per-connection bytes (frame headers, control frames) and ref() shared
//      bytes (a message's cached frame or payload), in wire order. Consecutive copies merge
//      into one piece. share() copies shared bytes under 512 bytes (up to 16 KiB per write)
//      and references larger ones: a piece costs the kernel more than copying a small
//      frame. Whoever appends a ref keeps its bytes alive until the write is done (the
//      connection holds the messages).
//   2. iov() materializes the pieces as iovecs, after the last append (the scratch string
//      may move while it grows, so pointers into it are taken only then).
//   3. consume(n) after the socket took n bytes; done() when everything went out.
//   4. clear() before the next batch; capacities are kept, so steady state allocates nothing,
//      until 16 writes in a row used less than a quarter of them: then they are freed.
//      An idle connection may also give them back at once (swap(); net/channel.hh).

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace broker::internal {

/// If `next` starts where `run` ends (bytes encoded back to back, e.g. the frames of a
/// message block), extends `run` over it and returns true. Writers use it to hand a run
/// of adjacent shared bytes to the gather buffer as one piece.
inline bool extend_run(std::string_view& run, std::string_view next) noexcept {
  if (run.empty() || next.empty() || run.data() + run.size() != next.data())
    return false;
  run = std::string_view{run.data(), run.size() + next.size()};
  return true;
}

class gather_buffer {
public:
  /// Appends bytes that belong to this write (copied).
  void copy(const void* data, size_t size) {
    if (size == 0)
      return;
    if (pieces_.empty() || !pieces_.back().scratch)
      add_piece(nullptr, scratch_.size(), 0, true);
    scratch_.append(static_cast<const char*>(data), size);
    pieces_.back().size += size;
    total_ += size;
  }

  void copy(std::string_view bytes) {
    copy(bytes.data(), bytes.size());
  }

  /// Appends shared bytes: referenced, or copied if smaller than copy_below (see the
  /// file comment). What connections use for messages.
  void share(std::string_view bytes) {
    if (bytes.size() < copy_below && scratch_.size() + bytes.size() <= copy_budget)
      copy(bytes);
    else
      ref(bytes);
  }

  /// Appends shared bytes by reference (see the file comment).
  void ref(std::string_view bytes) {
    if (bytes.empty())
      return;
    add_piece(bytes.data(), 0, bytes.size(), false);
    total_ += bytes.size();
  }

  bool empty() const noexcept { return total_ == 0; }

  /// Bytes not yet consumed.
  size_t size() const noexcept { return total_ - consumed_; }

  /// Number of pieces appended (for tests and statistics).
  size_t pieces() const noexcept { return pieces_.size(); }

  /// The unwritten rest as iovecs; `count` receives how many.
  iovec* iov(size_t& count) {
    if (iov_.size() != pieces_.size()) {
      iov_.clear();
      for (auto& p : pieces_) {
        auto base = p.scratch ? scratch_.data() + p.offset : p.data;
        iov_.push_back(iovec{const_cast<char*>(base), p.size});
      }
      first_ = 0;
      // Re-apply what was consumed before (only if iov() is called again mid-write).
      auto skip = consumed_;
      while (skip > 0 && first_ < iov_.size()) {
        auto n = std::min(skip, iov_[first_].iov_len);
        advance(n);
        skip -= n;
      }
    }
    count = iov_.size() - first_;
    return iov_.data() + first_;
  }

  /// Marks `n` more bytes as written.
  void consume(size_t n) {
    consumed_ += n;
    while (n > 0 && first_ < iov_.size()) {
      auto k = std::min(n, iov_[first_].iov_len);
      advance(k);
      n -= k;
    }
  }

  bool done() const noexcept { return consumed_ == total_; }

  /// All pieces as one contiguous string (for TLS, which encrypts a copy anyway).
  void linearize(std::string& out) const {
    out.clear();
    out.reserve(total_);
    for (auto& p : pieces_)
      out.append(p.scratch ? scratch_.data() + p.offset : p.data, p.size);
  }

  /// Bytes of memory the buffer holds (its capacities).
  size_t capacity() const noexcept {
    return scratch_.capacity() + pieces_.capacity() * sizeof(piece)
           + iov_.capacity() * sizeof(iovec);
  }

  /// Exchanges contents and memory with `other` (to give memory back: swap with a fresh one).
  void swap(gather_buffer& other) noexcept {
    scratch_.swap(other.scratch_);
    pieces_.swap(other.pieces_);
    iov_.swap(other.iov_);
    std::swap(first_, other.first_);
    std::swap(total_, other.total_);
    std::swap(consumed_, other.consumed_);
  }

  void clear() noexcept {
    // Keep the capacity a burst needed, unless the writes stay far smaller for a while:
    // an idle connection gives its buffers back.
    if (scratch_.capacity() > keep_bytes || pieces_.capacity() > keep_pieces) {
      if (scratch_.size() * 4 < scratch_.capacity() && pieces_.size() * 4 < pieces_.capacity()) {
        if (++small_uses_ >= shrink_after) {
          small_uses_ = 0;
          std::string{}.swap(scratch_);
          std::vector<piece>{}.swap(pieces_);
          std::vector<iovec>{}.swap(iov_);
        }
      } else {
        small_uses_ = 0;
      }
    }
    scratch_.clear();
    pieces_.clear();
    iov_.clear();
    first_ = 0;
    total_ = 0;
    consumed_ = 0;
  }

  /// share() copies shared bytes below this size: a gathered write of many small frames
  /// costs the kernel less as a few large pieces than as many small ones, and the copy is
  /// cheaper than the kernel's work per piece.
  static constexpr size_t copy_below = 512;

  /// share() copies at most this many bytes per write, so that a burst to a thousand
  /// connections does not hold a thousand copies of it; the rest is referenced.
  static constexpr size_t copy_budget = 16 * 1024;

private:
  struct piece {
    const char* data; // Shared bytes, or null for scratch.
    size_t offset;    // Offset in scratch_.
    size_t size;
    bool scratch;
  };

  /// Appends a piece field by field: a braced temporary went through the stack and cost a
  /// store-forwarding stall per piece (a quarter of a fan-out write's user time).
  void add_piece(const char* data, size_t offset, size_t size, bool scratch) {
    auto& p = pieces_.emplace_back();
    p.data = data;
    p.offset = offset;
    p.size = size;
    p.scratch = scratch;
  }

  void advance(size_t n) {
    auto& v = iov_[first_];
    v.iov_base = static_cast<char*>(v.iov_base) + n;
    v.iov_len -= n;
    if (v.iov_len == 0)
      ++first_;
  }

  /// What a connection keeps after its writes got small again (see clear()).
  static constexpr size_t keep_bytes = 4096;
  static constexpr size_t keep_pieces = 64;
  static constexpr unsigned shrink_after = 16;

  std::string scratch_;
  unsigned small_uses_ = 0;
  std::vector<piece> pieces_;
  std::vector<iovec> iov_;
  size_t first_ = 0;
  size_t total_ = 0;
  size_t consumed_ = 0;
};

} // namespace broker::internal
