#include "store_wire.hh"

#include "fuzz_common.hh"

#include "broker/internal/codec/bin.hh"

namespace broker::fuzz::store_wire {

namespace bin = internal::bin;
namespace channel = internal::channel;

expected<data> decode_command(std::string_view payload) {
  return bin::decode(payload);
}

std::string encode_command(const data& cmd) {
  auto bytes = bin::encode(cmd);
  FUZZ_CHECK_MSG(bytes, to_string(bytes.error_value()));
  return std::move(*bytes);
}

expected<channel::message> decode_channel(std::string_view bytes) {
  auto value = bin::decode(bytes);
  if (!value)
    return value.error_value();
  return channel::decode(*value);
}

std::string encode_channel(const channel::message& msg) {
  return encode_command(channel::encode(msg));
}

} // namespace broker::fuzz::store_wire
