#include "broker/internal/web/unmask.hh"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace broker::internal {

namespace {

// RFC 6455 §5.2: the second header byte holds the mask bit and a 7-bit length, where 126
// and 127 announce a 16-bit and a 64-bit length field after it.
constexpr auto mask_bit = std::byte{0x80};
constexpr uint8_t len7_mask = 0x7F;
constexpr uint8_t len16_marker = 126;
constexpr uint8_t len64_marker = 127;
constexpr size_t masking_key_size = 4;

size_t length_field_size(std::byte second) noexcept {
  auto len7 = std::to_integer<uint8_t>(second) & len7_mask;
  return len7 == len16_marker ? 2 : len7 == len64_marker ? 8 : 0;
}

} // namespace

frame_masker::progress frame_masker::transform(const std::byte* in, size_t in_size,
                                               std::byte* out, size_t out_size) noexcept {
  progress result;
  // Every round consumes input, produces output or leaves the loop.
  for (;;) {
    if (pending_pos_ < pending_size_) {
      auto n = std::min(pending_size_ - pending_pos_, out_size - result.produced);
      if (n == 0)
        break; // The output is full (and may be null).
      std::memcpy(out + result.produced, pending_ + pending_pos_, n);
      pending_pos_ += n;
      result.produced += n;
      if (pending_pos_ < pending_size_)
        break; // The output is full.
      continue;
    }
    if (payload_left_ > 0) {
      auto n = std::min<uint64_t>({payload_left_, in_size - result.consumed,
                                   out_size - result.produced});
      if (n == 0)
        break;
      std::memcpy(out + result.produced, in + result.consumed, n);
      result.consumed += n;
      result.produced += n;
      payload_left_ -= n;
      continue;
    }
    if (result.consumed == in_size)
      break;
    // Header bytes need no room in the output until the header is complete.
    auto n = std::min(header_need_ - header_size_, in_size - result.consumed);
    std::memcpy(header_ + header_size_, in + result.consumed, n);
    header_size_ += n;
    result.consumed += n;
    if (header_size_ == 2 && header_need_ == 2) {
      bool masked = (header_[1] & mask_bit) != std::byte{0};
      header_need_ = 2 + length_field_size(header_[1]) + (masked ? masking_key_size : 0);
    }
    if (header_size_ == header_need_)
      finish_header();
  }
  return result;
}

void frame_masker::skip(uint64_t n) noexcept {
  assert(n <= passthrough());
  payload_left_ -= std::min(n, payload_left_);
}

void frame_masker::finish_header() noexcept {
  auto ext = length_field_size(header_[1]);
  uint64_t len = std::to_integer<uint8_t>(header_[1]) & len7_mask;
  if (ext > 0) {
    len = 0;
    for (size_t i = 0; i < ext; ++i)
      len = (len << 8) | std::to_integer<uint8_t>(header_[2 + i]);
  }
  std::memcpy(pending_, header_, header_size_);
  pending_size_ = header_size_;
  if ((header_[1] & mask_bit) == std::byte{0}) {
    // The all-zero key: unmasking XORs with zero, so the payload stays as sent.
    pending_[1] |= mask_bit;
    std::memset(pending_ + pending_size_, 0, masking_key_size);
    pending_size_ += masking_key_size;
    ++unmasked_frames_;
  }
  pending_pos_ = 0;
  payload_left_ = len;
  header_size_ = 0;
  header_need_ = 2;
}

} // namespace broker::internal
