#pragma once

// The library's options table (doc/architecture.md, "Configuration and metrics") and the value
// parsing every source shares.
//
// configuration.cc reads the table through configuration::options(); the CLI, environment
// and config-file paths all end in parse_option_value(), so one option is validated the same
// way wherever its text comes from.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "broker/configuration.hh"
#include "broker/error.hh"

namespace broker::internal {

/// Positions of the library's options in configuration::options(). make_options_table()
/// builds its rows in exactly this order and asserts it.
enum class builtin_option : size_t {
  peer_buffer_size,
  peer_overflow_policy,
  peer_write_delay,
  web_socket_buffer_size,
  web_socket_overflow_policy,
  subscriber_buffer_size,
  subscriber_overflow_policy,
  publisher_buffer_size,
  disable_forwarding,
  ttl,
  disable_ssl,
  port,
  io_threads,
  topic_cache_size,
  max_nesting_depth,
  log_level,
  ssl_certificate,
  ssl_key,
  ssl_passphrase,
  ssl_cafile,
  ssl_capath,
  web_socket_address,
  web_socket_port,
  metrics_address,
  metrics_port,
  scheduler_max_threads,
  web_socket_max_clients,
  web_socket_max_message_size,
  web_socket_handshake_timeout,
  store_buffer_size,
  store_heartbeat_interval,
  store_timeout_intervals,
  store_request_timeout,
  store_tick_interval,
  store_master_probe_timeout,
  log_file,
  log_file_level,
  // Budgets of one connection (doc/configuration.md, "Budgets").
  peer_max_subscriptions,
  web_socket_max_subscriptions,
  max_pending_control_bytes,
  num_options,
};

/// What every printer (dump(), error messages) shows instead of the value of a secret
/// option (option_info::secret).
inline constexpr std::string_view hidden_value = "<secret, not shown>";

/// The error for a value of a secret option that does not parse: it says what is wrong
/// with `err`'s kind of value but never quotes the value.
error secret_value_error(const option_info& info);

/// Builds the library's table; configuration::options() calls it once.
std::vector<option_info> make_options_table();

/// Parses `text` as a value of option `info` and validates it. The error (invalid_config)
/// says what was expected and quotes the text, e.g. `expected a positive integer, got "x"`;
/// it does not name the key, so that callers can name the key or the variable.
expected<option_value> parse_option_value(const option_info& info, std::string_view text);

/// Validates an already typed value against `info` (type, bounds, choices); same messages.
error check_option_value(const option_info& info, const option_value& value);

/// `text` in double quotes with control bytes escaped and long input shortened, so that an
/// error message stays one readable line whatever the input was.
std::string quote_for_message(std::string_view text);

/// True if `key` is non-empty dotted words of [A-Za-z0-9_-].
bool is_valid_key(std::string_view key) noexcept;

} // namespace broker::internal
