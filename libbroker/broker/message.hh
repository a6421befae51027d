#pragma once

// data_message: an immutable, reference-counted (topic, value) pair.
//
// One message object is shared by every handler that receives it: a subscriber, a hub, a
// peer and a WebSocket client all hold the same object. Its wire encodings are computed
// lazily, at most once each, by whichever thread asks first (usually an I/O thread, never
// the core), and then shared: the binary form for peers, the JSON data-message frame for
// WebSocket clients. A message that arrived from a peer is built with its received bytes,
// so relaying it re-encodes nothing, and its value is decoded only when somebody reads it
// (a relay, or a subscriber that only counts, never decodes).

#include "broker/data.hh"
#include "broker/endpoint_id.hh"
#include "broker/export.hh"
#include "broker/fwd.hh"
#include "broker/topic.hh"

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace broker {

/// Where a message came from on the network; set only on messages received from peers.
/// The core uses it for multi-hop forwarding: loop suppression by (origin, sequence) for
/// peers that speak our extension, and TTL for everyone.
struct BROKER_API route_info {
  /// The publishing node; nil if unknown (a Broker peer, or a local publication).
  endpoint_id origin;
  /// The origin's per-node publication counter (0 if unknown).
  uint64_t sequence = 0;
  /// Relays so far.
  uint8_t hops = 0;
  /// Remaining time to live as received.
  uint16_t ttl = 0;
};

/// What a message carries. Applications only ever see `data`; `command` messages are data-store
/// traffic between masters and clones (peering frame type 2), which the core delivers only to
/// store handlers and peers.
enum class message_kind : uint8_t { data, command };

/// The shared state behind a data_message. Immutable after construction except for the
/// lazily filled encoding caches, which are guarded by once-flags.
class BROKER_API message_impl {
public:
  message_impl(std::string topic, data value,
               message_kind kind = message_kind::data) noexcept
    : topic_(std::move(topic)), value_(std::move(value)), kind_(kind) {}

  /// Builds a message whose binary encoding is already known (received from a peer).
  message_impl(std::string topic, data value, std::string binary, route_info route,
               message_kind kind = message_kind::data);

  /// Builds a message from a received encoding that the receiver checked (the internal
  /// bin::validate()): its value is decoded on first use, by whichever thread asks first.
  message_impl(std::string topic, std::string binary, route_info route, message_kind kind);

  message_impl(const message_impl&) = delete;
  message_impl& operator=(const message_impl&) = delete;

  const std::string& topic() const noexcept { return topic_; }

  /// The value (decoded on first use for a message built from its encoding).
  const data& value() const noexcept {
    if (value_state_.load(std::memory_order_acquire) != value_ready)
      decode_value();
    return value_;
  }

  message_kind kind() const noexcept { return kind_; }

  /// Network origin of a message received from a peer (default for local ones).
  const route_info& route() const noexcept { return route_; }

  /// The value's binary encoding (doc/protocol/binary.md), computed on first use. Empty if the
  /// value cannot be encoded (see bin::encode).
  const std::string& binary() const;

  /// The binary encoding if it is known already (the message was received, or encoded
  /// for a peer), without encoding anything; nullptr otherwise. Lets a reader test a
  /// received message without decoding its value.
  const std::string* binary_if_known() const noexcept {
    return binary_state_.load(std::memory_order_acquire) == value_ready ? &binary_ : nullptr;
  }

  /// The JSON data message (doc/protocol/websocket.md §5.1), computed on first use.
  std::string_view json() const;

  /// The same JSON as a complete WebSocket text frame (an unmasked server frame: header
  /// plus text), so that every client's writer sends the same bytes without building a
  /// header of its own. Computed with json().
  std::string_view ws_frame() const {
    // Every client of a fan-out asks: after the first, one atomic load, inline.
    if (json_state_.load(std::memory_order_acquire) == cache_ready)
      return std::string_view{frame_, frame_size_};
    return encode_ws_frame();
  }

  /// Encodes the WebSocket frames of those of `msgs[0, n)` that nobody encoded yet back
  /// to back into shared blocks, so that a writer that sends several of them finds their
  /// frames adjacent in memory and sends them as one piece, without copying
  /// (web/ws_session.cc). What ws_frame() returns is the same either way. A block closes
  /// once it holds 4 KiB or 64 frames: a message that lives on (in a slow client's queue)
  /// keeps at most that much of other messages' frames alive.
  static void encode_ws_frames(const data_message* msgs, size_t n);

  void ref() const noexcept { rc_.fetch_add(1, std::memory_order_relaxed); }

  /// Takes `n` references at once: the core pays for a whole fan-out with one atomic add
  /// and hands each receiver an adopted handle (data_message::adopt).
  void ref(size_t n) const noexcept { rc_.fetch_add(n, std::memory_order_relaxed); }

  /// Returns `n` references taken with ref(n) but not handed out.
  void deref(size_t n) const noexcept {
    if (n > 0 && rc_.fetch_sub(n, std::memory_order_acq_rel) == n)
      delete this;
  }
  void deref() const noexcept {
    if (rc_.fetch_sub(1, std::memory_order_acq_rel) == 1)
      delete this;
  }

private:
  static constexpr uint8_t value_ready = 2;
  static constexpr uint8_t cache_ready = 2; ///< The state of a filled cache (message.cc).

  void decode_value() const noexcept;

  /// Fills the JSON cache (once over all threads) and returns the frame.
  std::string_view encode_ws_frame() const;

  /// The frames of several messages, encoded together (message.cc); reference-counted
  /// by the messages whose frames it holds.
  struct frame_block;

  ~message_impl();

  mutable std::atomic<size_t> rc_{1};
  std::string topic_;
  mutable data value_;
  mutable std::atomic<uint8_t> value_state_{value_ready};
  message_kind kind_ = message_kind::data;
  route_info route_;
  // Each cache is filled once by whoever asks first; its state goes empty -> filling ->
  // ready, so every later read is one atomic load (std::call_once would cost a futex
  // system call per message to complete).
  mutable std::atomic<uint8_t> binary_state_{0};
  mutable std::atomic<uint8_t> json_state_{0};
  mutable std::string binary_;
  mutable std::string json_; // Room for the frame header, then the JSON text.
  mutable const char* frame_ = nullptr; // The frame: in json_, or in block_.
  mutable size_t frame_size_ = 0;
  mutable uint8_t header_size_ = 0; // The JSON text follows the frame header.
  mutable frame_block* block_ = nullptr; // Holds the frame if encode_ws_frames() made it.
};

/// A handle to a shared, immutable message. Copying is one atomic increment.
class BROKER_API data_message {
public:
  /// A null message (what a closed subscriber hands out).
  data_message() noexcept = default;

  data_message(broker::topic t, data value)
    : ptr_(new message_impl(std::move(t).string(), std::move(value))) {}

  /// Adopts a freshly created impl (reference count 1).
  explicit data_message(message_impl* adopted) noexcept : ptr_(adopted) {}

  /// A handle for a reference the caller already took (message_impl::ref(n)).
  static data_message adopt(const message_impl& impl) noexcept {
    return data_message{const_cast<message_impl*>(&impl)};
  }

  data_message(const data_message& other) noexcept : ptr_(other.ptr_) {
    if (ptr_)
      ptr_->ref();
  }
  data_message(data_message&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  data_message& operator=(data_message other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }
  ~data_message() {
    if (ptr_)
      ptr_->deref();
  }

  explicit operator bool() const noexcept { return ptr_ != nullptr; }

  /// Pre: the message is not null.
  const std::string& topic() const noexcept { return ptr_->topic(); }
  const data& value() const noexcept { return ptr_->value(); }
  message_kind kind() const noexcept { return ptr_->kind(); }
  const message_impl& impl() const noexcept { return *ptr_; }

  /// True if both handles refer to the same shared object.
  bool same_object(const data_message& other) const noexcept { return ptr_ == other.ptr_; }

private:
  message_impl* ptr_ = nullptr;
};

/// Builds a message (Broker's spelling).
inline data_message make_data_message(topic t, data value) {
  return data_message{std::move(t), std::move(value)};
}

inline const std::string& get_topic(const data_message& x) noexcept {
  return x.topic();
}

inline const data& get_data(const data_message& x) noexcept {
  return x.value();
}

/// "topic: value", for logs and debugging.
BROKER_API std::string to_string(const data_message& x);

} // namespace broker
