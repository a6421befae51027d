#pragma once

// carry_buffer: the bytes one connection keeps between two reads: a partial frame, or
// frames that wait behind a barrier (net/channel.hh). Empty for an idle connection: a
// connection reads into its I/O thread's buffer and only what it cannot use yet lands here.
//
// Owner: one connection, on its strand; no locking.
//
// It grows on demand (a frame of 10 MiB is assembled here) and gives its memory back once
// it is empty and holds more than a small reserve, so a connection that saw one large
// message does not keep its buffer while it idles.

#include <cstddef>
#include <cstring>
#include <memory>

namespace broker::internal {

class carry_buffer {
public:
  /// Capacity an empty buffer may keep (the usual partial frame fits without a malloc).
  static constexpr size_t reserve = 512;

  carry_buffer() = default;
  carry_buffer(const carry_buffer&) = delete;
  carry_buffer& operator=(const carry_buffer&) = delete;

  char* data() noexcept { return buf_.get(); }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  /// Bytes of memory held (for tests of the memory bound).
  size_t capacity() const noexcept { return cap_; }

  /// Replaces the contents with a copy of [p, p + n); `p` may not point into the buffer.
  void assign(const char* p, size_t n) {
    size_ = 0;
    if (n == 0) {
      shrink();
      return;
    }
    std::memcpy(prepare(n), p, n);
    size_ = n;
  }

  /// Room for `n` more bytes behind the contents.
  char* prepare(size_t n) {
    if (cap_ - size_ < n)
      grow(size_ + n);
    return buf_.get() + size_;
  }

  /// Marks `n` prepared bytes as contents.
  void commit(size_t n) noexcept { size_ += n; }

  /// Drops the first `n` bytes (the rest moves to the front).
  void consume(size_t n) noexcept {
    if (n >= size_) {
      size_ = 0;
    } else if (n > 0) {
      std::memmove(buf_.get(), buf_.get() + n, size_ - n);
      size_ -= n;
    }
    shrink();
  }

  /// Releases the memory of an empty buffer beyond the reserve.
  void shrink() noexcept {
    if (size_ == 0 && cap_ > reserve) {
      buf_.reset();
      cap_ = 0;
    }
  }

private:
  void grow(size_t wanted) {
    auto cap = cap_ == 0 ? size_t{256} : cap_;
    while (cap < wanted)
      cap *= 2;
    std::unique_ptr<char[]> fresh{new char[cap]};
    if (size_ > 0)
      std::memcpy(fresh.get(), buf_.get(), size_);
    buf_ = std::move(fresh);
    cap_ = cap;
  }

  std::unique_ptr<char[]> buf_;
  size_t size_ = 0;
  size_t cap_ = 0;
};

} // namespace broker::internal
