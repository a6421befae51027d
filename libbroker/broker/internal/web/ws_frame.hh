#pragma once

// The WebSocket framing of RFC 6455 for our server (doc/protocol/websocket.md §3), as a pure
// codec:
// bytes in, events out; frame headers out. No sockets, no threads.
//
// Owner: one WebSocket session, on its strand; no locking.
//
// Reading (ws::reader), per chunk of socket bytes:
//   1. The session asks prepare() for space, reads into it and commit()s what arrived.
//   2. It calls next() until it says need_more, handling every event. An event's payload
//      is a view into the reader's buffer, valid until the next prepare(): so a batch of
//      complete messages is decoded straight from the buffer the socket filled, without
//      copying. Only a fragmented message is assembled in a second buffer.
//   3. Payloads are unmasked in place, and the same pass notes whether any byte is >= 0x80:
//      an all-ASCII text message needs no UTF-8 validation. Unmasked client frames are
//      accepted (Broker does) and always validated; server frames are never masked.
// Binary messages are accepted like text ones (Zeek's server does; zeek-websocket-rs sends
// all its JSON in binary frames), without the UTF-8 rule.
// The reader checks what RFC 6455 requires of a server: reserved bits and opcodes, control
// frame limits, continuation order, the message size limit, UTF-8 of text messages and close
// reasons, and valid close codes. A violation is a `fail` event with the close code to send
// (1002 protocol error, 1007 invalid UTF-8, 1009 too big), after which the
// reader only reports `fail` again. Memory is bounded by the message size limit plus one read.
//
// Writing: the session frames data with append_header() (text frames, FIN set, never masked)
// and builds control frames with make_frame(). The header of a data frame depends only on the
// payload length, so a message's whole frame can be built once and shared by every client.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace broker::internal::ws {

/// Opcodes (RFC 6455 §5.2).
enum class opcode : uint8_t {
  continuation = 0x0,
  text = 0x1,
  binary = 0x2,
  close = 0x8,
  ping = 0x9,
  pong = 0xA,
};

/// Close codes we send (RFC 6455 §7.4.1).
inline constexpr uint16_t close_normal = 1000;
inline constexpr uint16_t close_going_away = 1001;
inline constexpr uint16_t close_protocol_error = 1002;
inline constexpr uint16_t close_unsupported_data = 1003;
inline constexpr uint16_t close_no_status = 1005; ///< Never on the wire: "no code given".
inline constexpr uint16_t close_invalid_payload = 1007;
inline constexpr uint16_t close_policy_violation = 1008;
inline constexpr uint16_t close_too_big = 1009;

/// Largest payload of a control frame.
inline constexpr size_t max_control_payload = 125;

/// Largest frame header: 2 bytes, a 64-bit length and a masking key.
inline constexpr size_t max_header_size = 14;

/// True if a peer may send `code` in a close frame (RFC 6455 §7.4, IANA registry).
bool is_valid_close_code(uint16_t code) noexcept;

/// True if `bytes` is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool is_valid_utf8(std::string_view bytes) noexcept;

/// Appends the header of an unmasked frame with FIN set.
void append_header(std::string& out, opcode op, uint64_t payload_size);

/// A complete unmasked frame with FIN set; for control frames `payload` is cut to 125 bytes.
std::string make_frame(opcode op, std::string_view payload);

/// A close frame with `code` and `reason` (cut to fit a control frame).
std::string make_close_frame(uint16_t code, std::string_view reason);

/// What the reader found (see the file comment).
struct event {
  enum kind_type : uint8_t {
    need_more, ///< No complete event in the buffer.
    text,      ///< A complete text message; `payload` holds it.
    binary,    ///< A complete binary message (Zeek's clients send JSON in those).
    ping,      ///< `payload`: the ping's application data.
    pong,      ///< `payload`: the pong's application data.
    close,     ///< The client closes; `code` (1005 if none), `payload` holds the reason.
    fail,      ///< Protocol violation: send close `code` with reason `payload`, then stop.
  };
  kind_type kind = need_more;
  uint16_t code = 0;
  std::string_view payload;
};

/// Incremental frame reader of the server side (see the file comment).
class reader {
public:
  /// Messages (after reassembly) longer than `max_message_size` fail with 1009.
  explicit reader(size_t max_message_size);

  reader(const reader&) = delete;
  reader& operator=(const reader&) = delete;

  /// Space for at least `n` more bytes. Invalidates the payload views of earlier events.
  char* prepare(size_t n);

  /// Marks `n` bytes of the prepared space as received. Pre: prepare() was called.
  void commit(size_t n) noexcept { cold_->end += n; }

  /// Copies `bytes` in (e.g. bytes that arrived with the HTTP upgrade request).
  void feed(std::string_view bytes);

  /// The next event (see the file comment). A payload view stays valid until the next call
  /// of next() or prepare().
  event next();

  /// Like next(), on bytes the caller holds (the reader's own buffer is not used): the next
  /// event of [data, data + size) at `pos`, which advances past the frames it used; payloads
  /// are unmasked in place. A view stays valid while `data` does and until the next call.
  event next(char* data, size_t size, size_t& pos);

  /// Bytes buffered but not yet turned into events, plus a message under assembly.
  size_t buffered() const noexcept {
    return cold_ ? cold_->end - cold_->pos + cold_->fragments.size() : 0;
  }

  /// Current capacity of the buffers (for tests of the memory bound).
  size_t capacity() const noexcept {
    return cold_ ? cold_->buf.capacity() + cold_->fragments.capacity() : 0;
  }

private:
  event failure(uint16_t code, std::string_view why);

  /// What only some readers need: their own buffer (prepare()/next()), a fragmented
  /// message under assembly, the reason of a failure. Created on first use; a reader on
  /// the caller's bytes drops it once a fragmented message was handed out, so an idle
  /// WebSocket session keeps 24 bytes of reader, not 128 plus its largest fragmented
  /// message.
  struct cold_state {
    std::string buf; // Socket bytes; [pos, end) not yet parsed.
    size_t pos = 0;
    size_t end = 0;
    std::string fragments; // A fragmented message under assembly.
    std::string fail_reason;
  };
  cold_state& cold();

  size_t max_message_size_;
  std::unique_ptr<cold_state> cold_;
  bool in_message_ = false;
  bool message_binary_ = false; ///< The fragmented message began with a binary frame.
  bool fragments_non_ascii_ = false; ///< A byte >= 0x80 (or an unmasked frame) in it.
  bool failed_ = false;
  uint16_t fail_code_ = 0;
};

} // namespace broker::internal::ws
