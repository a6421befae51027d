#pragma once

// Error codes and the error value that every fallible libbroker call returns.
//
// The numeric codes 0-41 are Broker's (doc/protocol/peering.md §10): they travel on the wire
// in drop_conn messages and must never be renumbered. Codes from 100 on are local
// extensions that never go on the wire.

#include "broker/export.hh"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace broker {

/// Broker's error codes (wire numbers) plus local extensions (>= 100).
enum class ec : uint8_t {
  none = 0,
  unspecified = 1,
  peer_incompatible = 2,
  peer_invalid = 3,
  peer_unavailable = 4,
  peer_disconnect_during_handshake = 5,
  peer_timeout = 6,
  master_exists = 7,
  no_such_master = 8,
  no_such_key = 9,
  request_timeout = 10,
  type_clash = 11,
  invalid_data = 12,
  backend_failure = 13,
  stale_data = 14,
  cannot_open_file = 15,
  cannot_write_file = 16,
  invalid_topic_key = 17,
  end_of_file = 18,
  invalid_tag = 19,
  invalid_message = 20,
  invalid_status = 21,
  conversion_failed = 22,
  consumer_exists = 23,
  connection_timeout = 24,
  bad_member_function_call = 25,
  repeated_request_id = 26,
  broken_clone = 27,
  shutting_down = 28,
  invalid_peering_request = 29,
  repeated_peering_handshake_request = 30,
  unexpected_handshake_message = 31,
  invalid_handshake_state = 32,
  no_path_to_peer = 33,
  no_connector_available = 34,
  cannot_open_resource = 35,
  serialization_failed = 36,
  deserialization_failed = 37,
  wrong_magic_number = 38,
  redundant_connection = 39,
  logic_error = 40,
  invalid_json = 41,
  // Local extensions: never sent in a drop_conn.
  backpressure_overflow = 100, ///< A handler with policy `disconnect` overflowed.
  invalid_config = 101,        ///< A configuration value failed validation.
  invalid_topic = 102,         ///< E.g. publishing to a reserved `<$>` topic.
  limit_exceeded = 103,        ///< A connection exceeded a configured budget.
  access_denied = 104,         ///< Access control refused a publication, subscription or login.
};

/// The snake_case name of `code`, e.g. "peer_invalid" (the JSON/status spelling).
BROKER_API std::string_view to_string(ec code) noexcept;

/// Parses a snake_case name; returns false for an unknown name.
BROKER_API bool from_string(std::string_view name, ec& code) noexcept;

/// An error code with a human-readable message naming what went wrong.
class BROKER_API error {
public:
  error() = default;
  error(ec code, std::string message = {}) : code_(code), message_(std::move(message)) {}

  ec code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  /// True if this holds an actual error (code != ec::none).
  explicit operator bool() const noexcept { return code_ != ec::none; }

  friend bool operator==(const error& x, ec y) noexcept { return x.code_ == y; }
  friend bool operator!=(const error& x, ec y) noexcept { return x.code_ != y; }

private:
  ec code_ = ec::none;
  std::string message_;
};

/// Renders as "code_name: message" (or just the code name).
BROKER_API std::string to_string(const error& err);

/// Either a value or an error. Minimal stand-in for std::expected (C++23).
template <class T>
class expected {
public:
  expected(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
  expected(error err) : storage_(std::in_place_index<1>, std::move(err)) {}
  expected(ec code, std::string message = {})
    : storage_(std::in_place_index<1>, error{code, std::move(message)}) {}

  bool has_value() const noexcept { return storage_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  /// Pre: has_value().
  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  /// Pre: !has_value().
  const error& error_value() const { return std::get<1>(storage_); }

private:
  std::variant<T, error> storage_;
};

} // namespace broker
