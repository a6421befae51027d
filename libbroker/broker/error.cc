#include "broker/error.hh"

#include <cstddef>

namespace broker {

namespace {

struct ec_name {
  ec code;
  std::string_view name;
};

// The spelling of Broker's codes is part of the wire and JSON contract (doc/protocol/peering.md
// §10).
constexpr ec_name ec_names[] = {
  {ec::none, "none"},
  {ec::unspecified, "unspecified"},
  {ec::peer_incompatible, "peer_incompatible"},
  {ec::peer_invalid, "peer_invalid"},
  {ec::peer_unavailable, "peer_unavailable"},
  {ec::peer_disconnect_during_handshake, "peer_disconnect_during_handshake"},
  {ec::peer_timeout, "peer_timeout"},
  {ec::master_exists, "master_exists"},
  {ec::no_such_master, "no_such_master"},
  {ec::no_such_key, "no_such_key"},
  {ec::request_timeout, "request_timeout"},
  {ec::type_clash, "type_clash"},
  {ec::invalid_data, "invalid_data"},
  {ec::backend_failure, "backend_failure"},
  {ec::stale_data, "stale_data"},
  {ec::cannot_open_file, "cannot_open_file"},
  {ec::cannot_write_file, "cannot_write_file"},
  {ec::invalid_topic_key, "invalid_topic_key"},
  {ec::end_of_file, "end_of_file"},
  {ec::invalid_tag, "invalid_tag"},
  {ec::invalid_message, "invalid_message"},
  {ec::invalid_status, "invalid_status"},
  {ec::conversion_failed, "conversion_failed"},
  {ec::consumer_exists, "consumer_exists"},
  {ec::connection_timeout, "connection_timeout"},
  {ec::bad_member_function_call, "bad_member_function_call"},
  {ec::repeated_request_id, "repeated_request_id"},
  {ec::broken_clone, "broken_clone"},
  {ec::shutting_down, "shutting_down"},
  {ec::invalid_peering_request, "invalid_peering_request"},
  {ec::repeated_peering_handshake_request, "repeated_peering_handshake_request"},
  {ec::unexpected_handshake_message, "unexpected_handshake_message"},
  {ec::invalid_handshake_state, "invalid_handshake_state"},
  {ec::no_path_to_peer, "no_path_to_peer"},
  {ec::no_connector_available, "no_connector_available"},
  {ec::cannot_open_resource, "cannot_open_resource"},
  {ec::serialization_failed, "serialization_failed"},
  {ec::deserialization_failed, "deserialization_failed"},
  {ec::wrong_magic_number, "wrong_magic_number"},
  {ec::redundant_connection, "redundant_connection"},
  {ec::logic_error, "logic_error"},
  {ec::invalid_json, "invalid_json"},
  {ec::backpressure_overflow, "backpressure_overflow"},
  {ec::invalid_config, "invalid_config"},
  {ec::invalid_topic, "invalid_topic"},
  {ec::limit_exceeded, "limit_exceeded"},
  {ec::access_denied, "access_denied"},
};

} // namespace

std::string_view to_string(ec code) noexcept {
  for (const auto& entry : ec_names)
    if (entry.code == code)
      return entry.name;
  return "unknown_error";
}

bool from_string(std::string_view name, ec& code) noexcept {
  for (const auto& entry : ec_names) {
    if (entry.name == name) {
      code = entry.code;
      return true;
    }
  }
  return false;
}

std::string to_string(const error& err) {
  std::string result{to_string(err.code())};
  if (!err.message().empty()) {
    result += ": ";
    result += err.message();
  }
  return result;
}

} // namespace broker
