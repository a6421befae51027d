#include "store_checks.hh"

#include "fuzz_common.hh"

#include "broker/internal/codec/bin.hh"

#include <cstdlib>

namespace broker::fuzz::stores {

endpoint_id endpoint(uint8_t b) {
  endpoint_id::bytes_type bytes;
  bytes.fill(b);
  return endpoint_id{bytes};
}

namespace {

// Every decoder error ends in "at offset N" (store_wire.hh).
void check_error(const error& err, size_t input_size) {
  FUZZ_CHECK(err == ec::invalid_message);
  const auto& text = err.message();
  static constexpr std::string_view marker = " at offset ";
  auto at = text.rfind(marker);
  FUZZ_CHECK_MSG(at != std::string::npos, text);
  auto offset = std::strtoull(text.c_str() + at + marker.size(), nullptr, 10);
  FUZZ_CHECK_MSG(offset <= input_size, text + " for " + std::to_string(input_size) + " bytes");
}

} // namespace

std::optional<store_wire::command> check_decode(std::string_view bytes) {
  auto cmd = store_wire::decode(bytes);
  if (!cmd) {
    check_error(cmd.error_value(), bytes.size());
    return std::nullopt;
  }
  auto first = store_wire::encode(*cmd);
  FUZZ_CHECK_MSG(first, to_string(first.error_value()) + ": " + store_wire::to_string(*cmd));
  FUZZ_CHECK_MSG(first->size() <= bytes.size(), to_hex(bytes) + " -> " + to_hex(*first));
  auto again = store_wire::decode(*first);
  FUZZ_CHECK_MSG(again, to_string(again.error_value()) + ": " + to_hex(*first));
  FUZZ_CHECK_MSG(store_wire::same(*cmd, *again), store_wire::to_string(*cmd) + " vs "
                                                    + store_wire::to_string(*again));
  auto second = store_wire::encode(*again);
  FUZZ_CHECK(second && *second == *first);
  return std::move(*cmd);
}

store_wire::command check_sent(std::string_view bytes) {
  auto cmd = store_wire::decode(bytes);
  FUZZ_CHECK_MSG(cmd, to_string(cmd.error_value()) + ": " + to_hex(bytes));
  auto again = store_wire::encode(*cmd);
  FUZZ_CHECK_MSG(again && *again == bytes, store_wire::to_string(*cmd));
  return std::move(*cmd);
}

std::string encode(const store_wire::command& cmd) {
  auto bytes = store_wire::encode(cmd);
  FUZZ_CHECK_MSG(bytes, to_string(bytes.error_value()) + ": " + store_wire::to_string(cmd));
  return std::move(*bytes);
}

void check_event(const data& ev) {
  auto bytes = internal::bin::encode(ev);
  FUZZ_CHECK_MSG(bytes, to_string(ev));
  auto back = internal::bin::decode(*bytes);
  FUZZ_CHECK_MSG(back && *back == ev, to_string(ev));
}

} // namespace broker::fuzz::stores
