// The typed getters of the library's options (configuration.hh, "typed access").

#include "broker/configuration.hh"

#include <cassert>

#include "broker/internal/config/options_table.hh"

namespace broker {

using internal::builtin_option;

namespace {

template <class T>
const T& value_at(const std::vector<option_value>& values, builtin_option id) {
  return std::get<T>(values[static_cast<size_t>(id)]);
}

overflow_policy policy_at(const std::vector<option_value>& values, builtin_option id) {
  auto result = parse_overflow_policy(value_at<std::string>(values, id));
  // The table only admits policy names, so this cannot fail.
  assert(result.has_value());
  return result.value_or(overflow_policy::disconnect);
}

} // namespace

size_t configuration::peer_buffer_size() const {
  return value_at<uint64_t>(values_, builtin_option::peer_buffer_size);
}

overflow_policy configuration::peer_overflow_policy() const {
  return policy_at(values_, builtin_option::peer_overflow_policy);
}

size_t configuration::peer_write_delay() const {
  return value_at<uint64_t>(values_, builtin_option::peer_write_delay);
}

size_t configuration::web_socket_buffer_size() const {
  return value_at<uint64_t>(values_, builtin_option::web_socket_buffer_size);
}

overflow_policy configuration::web_socket_overflow_policy() const {
  return policy_at(values_, builtin_option::web_socket_overflow_policy);
}

size_t configuration::subscriber_buffer_size() const {
  return value_at<uint64_t>(values_, builtin_option::subscriber_buffer_size);
}

overflow_policy configuration::subscriber_overflow_policy() const {
  return policy_at(values_, builtin_option::subscriber_overflow_policy);
}

size_t configuration::publisher_buffer_size() const {
  return value_at<uint64_t>(values_, builtin_option::publisher_buffer_size);
}

bool configuration::disable_forwarding() const {
  return value_at<bool>(values_, builtin_option::disable_forwarding);
}

uint16_t configuration::ttl() const {
  return static_cast<uint16_t>(value_at<uint64_t>(values_, builtin_option::ttl));
}

bool configuration::disable_ssl() const {
  return value_at<bool>(values_, builtin_option::disable_ssl);
}

const std::string& configuration::ssl_certificate() const {
  return value_at<std::string>(values_, builtin_option::ssl_certificate);
}

const std::string& configuration::ssl_key() const {
  return value_at<std::string>(values_, builtin_option::ssl_key);
}

const std::string& configuration::ssl_passphrase() const {
  return value_at<std::string>(values_, builtin_option::ssl_passphrase);
}

const std::string& configuration::ssl_cafile() const {
  return value_at<std::string>(values_, builtin_option::ssl_cafile);
}

const std::string& configuration::ssl_capath() const {
  return value_at<std::string>(values_, builtin_option::ssl_capath);
}

uint16_t configuration::port() const {
  return static_cast<uint16_t>(value_at<uint64_t>(values_, builtin_option::port));
}

const std::string& configuration::web_socket_address() const {
  return value_at<std::string>(values_, builtin_option::web_socket_address);
}

uint16_t configuration::web_socket_port() const {
  return static_cast<uint16_t>(value_at<uint64_t>(values_, builtin_option::web_socket_port));
}

const std::string& configuration::metrics_address() const {
  return value_at<std::string>(values_, builtin_option::metrics_address);
}

uint16_t configuration::metrics_port() const {
  return static_cast<uint16_t>(value_at<uint64_t>(values_, builtin_option::metrics_port));
}

size_t configuration::scheduler_max_threads() const {
  return value_at<uint64_t>(values_, builtin_option::scheduler_max_threads);
}

size_t configuration::io_threads() const {
  return value_at<uint64_t>(values_, builtin_option::io_threads);
}

size_t configuration::topic_cache_size() const {
  return value_at<uint64_t>(values_, builtin_option::topic_cache_size);
}

size_t configuration::web_socket_max_clients() const {
  return value_at<uint64_t>(values_, builtin_option::web_socket_max_clients);
}

size_t configuration::web_socket_max_message_size() const {
  return value_at<uint64_t>(values_, builtin_option::web_socket_max_message_size);
}

size_t configuration::web_socket_handshake_timeout() const {
  return value_at<uint64_t>(values_, builtin_option::web_socket_handshake_timeout);
}

size_t configuration::store_buffer_size() const {
  return value_at<uint64_t>(values_, builtin_option::store_buffer_size);
}

size_t configuration::store_heartbeat_interval() const {
  return value_at<uint64_t>(values_, builtin_option::store_heartbeat_interval);
}

size_t configuration::store_timeout_intervals() const {
  return value_at<uint64_t>(values_, builtin_option::store_timeout_intervals);
}

size_t configuration::store_request_timeout() const {
  return value_at<uint64_t>(values_, builtin_option::store_request_timeout);
}

size_t configuration::store_tick_interval() const {
  return value_at<uint64_t>(values_, builtin_option::store_tick_interval);
}

size_t configuration::store_master_probe_timeout() const {
  return value_at<uint64_t>(values_, builtin_option::store_master_probe_timeout);
}

size_t configuration::peer_max_subscriptions() const {
  return value_at<uint64_t>(values_, builtin_option::peer_max_subscriptions);
}

size_t configuration::web_socket_max_subscriptions() const {
  return value_at<uint64_t>(values_, builtin_option::web_socket_max_subscriptions);
}

size_t configuration::max_pending_control_bytes() const {
  return value_at<uint64_t>(values_, builtin_option::max_pending_control_bytes);
}

size_t configuration::max_nesting_depth() const {
  return value_at<uint64_t>(values_, builtin_option::max_nesting_depth);
}

const std::string& configuration::log_level() const {
  return value_at<std::string>(values_, builtin_option::log_level);
}

const std::string& configuration::log_file() const {
  return value_at<std::string>(values_, builtin_option::log_file);
}

const std::string& configuration::log_file_level() const {
  return value_at<std::string>(values_, builtin_option::log_file_level);
}

} // namespace broker
