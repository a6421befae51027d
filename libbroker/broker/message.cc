#include "broker/message.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/codec/json.hh"
#include "broker/internal/web/ws_frame.hh"

#include <cstring>
#include <thread>

namespace broker {

namespace {

/// Room reserved in front of the JSON text for the longest WebSocket frame header.
constexpr size_t frame_room = 10;

enum cache_state : uint8_t { empty, filling, ready };

/// Runs `fill` once over all threads; a thread that comes while another fills waits.
template <class F>
void fill_once(std::atomic<uint8_t>& state, F&& fill) {
  if (state.load(std::memory_order_acquire) == ready)
    return;
  uint8_t expected = empty;
  if (state.compare_exchange_strong(expected, filling, std::memory_order_acq_rel)) {
    fill();
    state.store(ready, std::memory_order_release);
    return;
  }
  while (state.load(std::memory_order_acquire) != ready)
    std::this_thread::yield();
}

} // namespace

message_impl::message_impl(std::string topic, data value, std::string binary,
                           route_info route, message_kind kind)
  : topic_(std::move(topic)), value_(std::move(value)), kind_(kind), route_(route) {
  // Nobody else can see the object yet.
  binary_ = std::move(binary);
  binary_state_.store(ready, std::memory_order_release);
}

message_impl::message_impl(std::string topic, std::string binary, route_info route,
                           message_kind kind)
  : topic_(std::move(topic)), kind_(kind), route_(route) {
  binary_ = std::move(binary);
  binary_state_.store(ready, std::memory_order_release);
  value_state_.store(empty, std::memory_order_release);
}

void message_impl::decode_value() const noexcept {
  static_assert(value_ready == ready);
  fill_once(value_state_, [this] {
    // The receiver validated data messages against broker.max-nesting-depth (at most
    // 4096); store commands are decoded by the stores from their bytes, and one whose
    // value is unreadable reads as none here, as before.
    constexpr size_t deepest_allowed = 4096;
    if (auto x = internal::bin::decode(binary_, deepest_allowed))
      value_ = std::move(*x);
  });
}

const std::string& message_impl::binary() const {
  fill_once(binary_state_, [this] {
    if (auto err = internal::bin::encode(value_, binary_))
      binary_.clear(); // Unencodable values (e.g. > 4 GiB strings) never reach a peer.
  });
  return binary_;
}

std::string_view message_impl::json() const {
  ws_frame(); // Fills the cache.
  return std::string_view{json_}.substr(frame_room);
}

std::string_view message_impl::encode_ws_frame() const {
  static_assert(cache_ready == ready);
  fill_once(json_state_, [this] {
    json_.assign(frame_room, '\0');
    internal::json::encode_data_message(topic_, value(), json_);
    std::string header;
    internal::ws::append_header(header, internal::ws::opcode::text, json_.size() - frame_room);
    frame_offset_ = frame_room - header.size();
    std::memcpy(json_.data() + frame_offset_, header.data(), header.size());
  });
  return std::string_view{json_}.substr(frame_offset_);
}

std::string to_string(const data_message& x) {
  if (!x)
    return "<null message>";
  std::string result = x.topic();
  result += ": ";
  result += to_string(x.value());
  return result;
}

} // namespace broker
