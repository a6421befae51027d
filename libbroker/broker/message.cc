#include "broker/message.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/codec/json.hh"

namespace broker {

message_impl::message_impl(std::string topic, data value, std::string binary,
                           route_info route, message_kind kind)
  : topic_(std::move(topic)), value_(std::move(value)), kind_(kind), route_(route) {
  std::call_once(binary_once_, [&] { binary_ = std::move(binary); });
}

const std::string& message_impl::binary() const {
  std::call_once(binary_once_, [this] {
    if (auto err = internal::bin::encode(value_, binary_))
      binary_.clear(); // Unencodable values (e.g. > 4 GiB strings) never reach a peer.
  });
  return binary_;
}

const std::string& message_impl::json() const {
  std::call_once(json_once_, [this] {
    internal::json::encode_data_message(topic_, value_, json_);
  });
  return json_;
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
