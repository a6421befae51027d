#include "broker/message.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/codec/json.hh"
#include "broker/internal/web/ws_frame.hh"

#include <cstring>

namespace broker {

namespace {

/// Room reserved in front of the JSON text for the longest WebSocket frame header.
constexpr size_t frame_room = 10;

} // namespace

message_impl::message_impl(std::string topic, data value, std::string binary,
                           route_info route, message_kind kind)
  : topic_(std::move(topic)), value_(std::move(value)), kind_(kind), route_(route) {
  std::call_once(binary_once_, [&] { binary_ = std::move(binary); });
  binary_ready_.store(true, std::memory_order_release);
}

const std::string& message_impl::binary() const {
  if (binary_ready_.load(std::memory_order_acquire))
    return binary_;
  std::call_once(binary_once_, [this] {
    if (auto err = internal::bin::encode(value_, binary_))
      binary_.clear(); // Unencodable values (e.g. > 4 GiB strings) never reach a peer.
    binary_ready_.store(true, std::memory_order_release);
  });
  return binary_;
}

std::string_view message_impl::json() const {
  ws_frame(); // Fills the cache.
  return std::string_view{json_}.substr(frame_room);
}

std::string_view message_impl::ws_frame() const {
  if (!json_ready_.load(std::memory_order_acquire)) {
    std::call_once(json_once_, [this] {
      json_.assign(frame_room, '\0');
      internal::json::encode_data_message(topic_, value_, json_);
      std::string header;
      internal::ws::append_header(header, internal::ws::opcode::text,
                                  json_.size() - frame_room);
      frame_offset_ = frame_room - header.size();
      std::memcpy(json_.data() + frame_offset_, header.data(), header.size());
      json_ready_.store(true, std::memory_order_release);
    });
  }
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
