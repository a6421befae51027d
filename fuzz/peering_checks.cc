#include "peering_checks.hh"

#include "codec_checks.hh"
#include "fuzz_common.hh"

#include <algorithm>
#include <string>
#include <variant>

namespace broker::fuzz {

namespace wire = internal::wire;

namespace {

filter_type wire_form(filter_type xs) {
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  return xs;
}

bool strictly_sorted(const filter_type& xs) {
  return std::adjacent_find(xs.begin(), xs.end(), [](const topic& x, const topic& y) {
           return !(x < y);
         }) == xs.end();
}

// Phase-3 frames start with the length prefix; everything after it is the payload.
std::string_view payload_of_frame(const std::string& frame) {
  FUZZ_CHECK(frame.size() >= wire::length_prefix_size);
  uint32_t len = 0;
  for (size_t i = 0; i < wire::length_prefix_size; ++i)
    len = (len << 8) | static_cast<uint8_t>(frame[i]);
  FUZZ_CHECK(len == frame.size() - wire::length_prefix_size);
  return std::string_view{frame}.substr(wire::length_prefix_size);
}

void check_minimize(const filter_type& xs) {
  auto min = xs;
  minimize(min);
  FUZZ_CHECK(strictly_sorted(min));
  for (size_t i = 0; i + 1 < min.size(); ++i)
    FUZZ_CHECK_MSG(!min[i + 1].matches(min[i].view()), min[i].string() + " covers "
                                                           + min[i + 1].string());
  for (const auto& x : xs)
    FUZZ_CHECK(std::any_of(min.begin(), min.end(),
                           [&x](const topic& y) { return x.matches(y.view()); }));
  for (const auto& y : min)
    FUZZ_CHECK(std::find(xs.begin(), xs.end(), y) != xs.end());
}

void check_ping(const wire::node_message_view& ping) {
  endpoint_id own;
  std::string out;
  wire::append_pong(out, own, ping);
  auto pong = wire::decode_node_message(payload_of_frame(out));
  FUZZ_CHECK(pong);
  FUZZ_CHECK(pong->type == wire::message_type::pong);
  FUZZ_CHECK(pong->receiver == ping.sender);
  // Byte-identical (doc/protocol/peering.md §5.5), except our answer to the origin-v1 probe.
  if (ping.payload == wire::ext_probe_query)
    FUZZ_CHECK(pong->payload == wire::ext_probe_answer);
  else
    FUZZ_CHECK(pong->payload == ping.payload);
  if (wire::is_bye(ping.payload))
    FUZZ_CHECK(ping.payload.size() == wire::bye_payload_size);
}

void check_extended(const wire::node_message_view& msg, size_t max_depth) {
  auto ext = wire::decode_extended_data(msg.payload);
  if (!ext) {
    FUZZ_CHECK(msg.payload.size() < wire::extension_header_size);
    return;
  }
  std::string out;
  auto err = wire::append_extended_data(out, msg.sender, msg.receiver, msg.ttl, msg.topic, *ext);
  FUZZ_CHECK(!err);
  auto again = wire::decode_node_message(payload_of_frame(out));
  FUZZ_CHECK(again && again->payload == msg.payload);
  check_bin_decode(ext->value, max_depth);
}

} // namespace

bool same_message(const wire::handshake_message& x, const wire::handshake_message& y) {
  if (x.index() != y.index())
    return false;
  if (auto* a = std::get_if<wire::hello_msg>(&x)) {
    auto& b = std::get<wire::hello_msg>(y);
    return a->sender == b.sender && a->min_version == b.min_version
           && a->max_version == b.max_version;
  }
  if (auto* a = std::get_if<wire::version_select_msg>(&x)) {
    auto& b = std::get<wire::version_select_msg>(y);
    return a->sender == b.sender && a->version == b.version;
  }
  if (auto* a = std::get_if<wire::drop_conn_msg>(&x)) {
    auto& b = std::get<wire::drop_conn_msg>(y);
    return a->sender == b.sender && a->code == b.code && a->description == b.description;
  }
  if (auto* a = std::get_if<wire::originator_syn_msg>(&x))
    return wire_form(a->filter) == wire_form(std::get<wire::originator_syn_msg>(y).filter);
  if (auto* a = std::get_if<wire::responder_syn_ack_msg>(&x))
    return wire_form(a->filter) == wire_form(std::get<wire::responder_syn_ack_msg>(y).filter);
  return true; // probe and originator_ack carry nothing
}

void check_handshake_payload(std::string_view payload) {
  auto msg = wire::decode_handshake(payload);
  if (!msg) {
    // The error becomes the drop_conn we answer with: its code must be one Broker knows.
    auto code = static_cast<uint8_t>(msg.error_value().code());
    FUZZ_CHECK(msg.error_value() != ec::none);
    FUZZ_CHECK_MSG(code <= wire::max_known_error_code, std::to_string(code));
    return;
  }
  if (auto* drop = std::get_if<wire::drop_conn_msg>(&*msg))
    FUZZ_CHECK(static_cast<uint8_t>(drop->code) <= wire::max_known_error_code);
  auto frame = wire::make_frame(*msg);
  auto again = wire::decode_handshake(payload_of_frame(frame));
  FUZZ_CHECK_MSG(again, to_string(again.error_value()));
  FUZZ_CHECK(same_message(*msg, *again));
  FUZZ_CHECK(wire::make_frame(*again) == frame);
}

void check_filter_payload(std::string_view bytes) {
  auto filter = wire::decode_filter(bytes);
  if (!filter) {
    FUZZ_CHECK(filter.error_value() == ec::invalid_message);
    return;
  }
  std::string out;
  wire::append_filter(out, *filter);
  FUZZ_CHECK(out.size() <= bytes.size());
  auto again = wire::decode_filter(out);
  FUZZ_CHECK(again);
  FUZZ_CHECK(*again == wire_form(*filter));
  FUZZ_CHECK(strictly_sorted(*again));
  check_minimize(*filter);
}

void check_node_payload(std::string_view payload, size_t max_depth) {
  auto msg = wire::decode_node_message(payload);
  if (!msg) {
    FUZZ_CHECK(msg.error_value() == ec::invalid_message);
    return;
  }
  FUZZ_CHECK(wire::header_size + msg->topic.size() + msg->payload.size() == payload.size());
  // Relaying with the same sender and ttl reproduces the frame byte for byte.
  std::string relayed;
  wire::append_relayed(relayed, *msg, msg->sender, msg->ttl);
  FUZZ_CHECK(payload_of_frame(relayed) == payload);
  switch (msg->type) {
    case wire::message_type::routing_update:
      check_filter_payload(msg->payload);
      break;
    case wire::message_type::data:
    case wire::message_type::command:
      check_bin_decode(msg->payload, max_depth);
      break;
    case wire::message_type::data_ext:
      check_extended(*msg, max_depth);
      break;
    case wire::message_type::ping:
      check_ping(*msg);
      break;
    case wire::message_type::pong:
      break;
    default:
      FUZZ_CHECK_MSG(false, "decode_node_message accepted type "
                              + std::to_string(static_cast<int>(msg->type)));
  }
}

} // namespace broker::fuzz
