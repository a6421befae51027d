#pragma once

// frame_masker: lets the WebSocket server accept unmasked client frames (spec/websocket-v1.md
// §3: Broker accepts them, so we should too), although Beast's server role rejects them.
//
// It sits between the socket and Beast, on the bytes a client sends after the HTTP upgrade.
// It follows the frame boundaries and, in the header of every frame that has no mask,
// sets the mask bit and inserts the all-zero masking key. XOR with zero leaves the payload
// as it was, so Beast sees a conformant masked frame with the client's bytes. Masked frames
// and every payload byte pass through unchanged.
//
// Owner: one WebSocket session, on its strand; no locking.
//
// Garbage is never fatal here: the masker only reads the two header bytes and the length
// field, whatever they hold, and passes everything on. A nonsensical header (reserved bits,
// unknown opcode, a 64-bit length with the top bit set) reaches Beast, which fails the
// connection. Memory use is fixed: a header is at most 14 bytes.

#include <cstddef>
#include <cstdint>

namespace broker::internal {

/// Rewrites a client-to-server WebSocket byte stream so that every frame is masked (see the
/// file comment).
class frame_masker {
public:
  /// The longest frame header: 2 bytes, a 64-bit length and a 4-byte masking key.
  static constexpr size_t max_header_size = 14;

  /// What one transform() call did.
  struct progress {
    size_t consumed = 0; ///< Bytes taken from the input.
    size_t produced = 0; ///< Bytes written to the output.
  };

  /// Moves bytes from `in` to `out`, rewriting frame headers on the way. Stops when the
  /// input is used up or the output is full. A header may be split across calls at any
  /// byte; its bytes are held back until it is complete.
  progress transform(const std::byte* in, size_t in_size, std::byte* out,
                     size_t out_size) noexcept;

  /// Payload bytes that follow in the stream and may be moved by the caller directly,
  /// unchanged (for reading them straight into the destination): 0 while a header is
  /// incomplete or rewritten header bytes wait to be produced.
  uint64_t passthrough() const noexcept {
    return pending_pos_ == pending_size_ ? payload_left_ : 0;
  }

  /// Records that the caller moved `n` <= passthrough() payload bytes itself.
  void skip(uint64_t n) noexcept;

  /// Frames seen so far that the masker had to mask.
  uint64_t unmasked_frames() const noexcept { return unmasked_frames_; }

private:
  /// Called when header_ holds a whole header: fills pending_ and payload_left_.
  void finish_header() noexcept;

  std::byte header_[max_header_size] = {};
  size_t header_size_ = 0;
  size_t header_need_ = 2; ///< Grows once the second byte tells the header's length.
  std::byte pending_[max_header_size] = {};
  size_t pending_pos_ = 0;
  size_t pending_size_ = 0;
  uint64_t payload_left_ = 0;
  uint64_t unmasked_frames_ = 0;
};

} // namespace broker::internal
