#pragma once

// The one options table (doc/architecture.md, "Configuration and metrics") and the configuration
// value built on it.
//
// Every option is one row of a table (configuration::options()): key, type, default,
// validation, help text, optional short flag and environment variable. The key is at the same
// time the config-file key (`broker.ttl = 16`, or `broker { ttl = 16 }`) and the long flag
// (`--broker.ttl=16`). Parsing, validation, --help and the docs all read that one table.
//
// Ownership: a configuration is a plain, copyable value with no shared state. The program
// fills it before starting an endpoint; the endpoint copies what it needs at start-up.
//
// Flow in a program:
//   1. `broker::configuration cfg;` holds every default.
//   2. `auto err = cfg.load(argc, argv, &rest);` reads, in this order, the file named by
//      `--config-file=PATH` (if any), the BROKER_* environment variables, the command line.
//      Later sources override earlier ones: defaults < file < environment < command line.
//   3. `if (cfg.help_requested())` print `cfg.help_text()` and exit. Checked before `err`,
//      so that `--help --typo` still shows the help.
//   4. `if (err)` print `err.message()` and exit.
//   5. Print `cfg.notices()`: Zeek Broker spellings that were accepted (mapped onto our
//      keys) or ignored (settings that do not apply here), one line per name.
// Each loading call either applies all of its input or, on error, changes nothing.
//
// Broker compatibility: besides its own keys, the configuration reads Broker's and CAF's
// spellings found in Broker users' files, flags and environment (internal/config/compat.hh,
// doc/migrating.md), and programs can add aliases of their own (add_alias). Each value
// remembers where it came from (source(), dump()).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "broker/error.hh"
#include "broker/export.hh"
#include "broker/overflow_policy.hh"

namespace broker {

/// How an option's text is parsed and validated.
enum class option_type : uint8_t {
  boolean,     ///< `true` or `false`; a bare `--flag` means true.
  count,       ///< A decimal unsigned integer in [min, max].
  port,        ///< A TCP port 0-65535, written `9997` or `9997/tcp`; 0 means "off".
  string,      ///< Any text, stored verbatim.
  string_list, ///< `["/a", "/b"]` or `/a,/b`.
  choice,      ///< One of `choices`; `-` and `_` are interchangeable.
};

/// "bool", "count", "port", "string", "list" or "choice".
BROKER_API std::string_view to_string(option_type x) noexcept;

/// One row of the options table.
struct BROKER_API option_info {
  std::string key;                  ///< Canonical hyphenated key, e.g. "broker.ttl".
  option_type type = option_type::string;
  std::string default_value;        ///< The default, as text parsed like user input.
  std::string help;                 ///< One line for --help and the docs.
  std::string env;                  ///< Environment variable that sets it, or empty.
  char short_flag = 0;              ///< E.g. 'p' for `-p 9999`, or 0 for none.
  uint64_t min = 0;                 ///< Inclusive bounds of a count.
  uint64_t max = UINT64_MAX;        ///< Inclusive bounds of a count.
  std::vector<std::string> choices; ///< Allowed names of a choice.
  /// A secret (a passphrase, a token, a key): dump(), error messages and every other
  /// printer show that it is set, never its value.
  bool secret = false;
};

/// A stored value: bool (boolean), uint64_t (count, port), std::string (string, choice) or a
/// list of strings (string_list).
using option_value = std::variant<bool, uint64_t, std::string, std::vector<std::string>>;

/// Reads an environment variable: returns nullptr when it is not set.
using getenv_function = std::function<const char*(const char*)>;

/// Where an option's current value came from.
enum class option_source : uint8_t {
  default_value, ///< Never set.
  file,          ///< A config file (load_file, load_string).
  environment,   ///< An environment variable (load_env).
  command_line,  ///< parse_args.
  program,       ///< The program called set(), set_bool(), ... directly.
};

/// "default", "file", "environment", "command line" or "program".
BROKER_API std::string_view to_string(option_source x) noexcept;

/// Every option of a Broker endpoint, validated against the options table.
class BROKER_API configuration {
public:
  /// Every option at its default.
  configuration();

  // -- the table ------------------------------------------------------------------------------

  /// The library's options table, in help order: for docs, metrics and tools.
  static const std::vector<option_info>& options();

  /// Options a program added with add_option(), in the order they were added.
  const std::vector<option_info>& program_options() const noexcept { return program_options_; }

  /// Adds a program-specific option (e.g. broker-node's topics) so that files, environment,
  /// command line and --help handle it like a library option. Errors (invalid_config): an
  /// empty or malformed key, a key or flag or variable already in use (also `ttl`, which
  /// `--ttl` already names), `-h`, a choice without choices, min > max, or a default that
  /// does not pass the option's own validation.
  error add_option(option_info info);

  /// Accepts `name` wherever the key `key` is accepted (config files, `--name` on the
  /// command line, set()), with a notice naming `key`; e.g. broker-node reads Broker's
  /// top-level `port` as `broker.port`. Errors (invalid_config): an invalid name, a name
  /// already in use, an unknown key.
  error add_alias(std::string name, std::string key);

  // -- generic access by key ------------------------------------------------------------------

  /// Parses `value` as the option's type and validates it. `key` may also be a Zeek Broker
  /// spelling or a program alias (the option is set, and a notice recorded) or a Broker/CAF
  /// setting without effect here (only a notice is recorded). Errors (invalid_config):
  /// `unknown option "broker.foo"` or `broker.ttl: expected ..., got "abc"`. On error the
  /// option keeps its previous value.
  error set(std::string_view key, std::string_view value);

  /// Sets a boolean option. Errors: unknown key, or the option is not a boolean.
  error set_bool(std::string_view key, bool value);

  /// Sets a count or port option within its bounds. Errors: unknown key, wrong type, range.
  error set_count(std::string_view key, uint64_t value);

  /// Sets a list option. Errors: unknown key, or the option is not a list.
  error set_list(std::string_view key, std::vector<std::string> value);

  /// The value of a boolean option; nullopt for an unknown key or another type.
  std::optional<bool> get_bool(std::string_view key) const;

  /// The value of a count or port option; nullopt for an unknown key or another type.
  std::optional<uint64_t> get_count(std::string_view key) const;

  /// The value of a string or choice option; nullopt for an unknown key or another type.
  std::optional<std::string> get_string(std::string_view key) const;

  /// The value of a list option; nullopt for an unknown key or another type.
  std::optional<std::vector<std::string>> get_list(std::string_view key) const;

  // -- sources --------------------------------------------------------------------------------

  /// Reads a config file (syntax in doc/configuration.md). Errors: cannot_open_file if it
  /// cannot be read; invalid_config naming "path:line:column" for a syntax error, an unknown
  /// key or an invalid value. Changes nothing on error.
  error load_file(const std::string& path);

  /// Like load_file() for text already in memory; `origin` stands for the path in errors.
  error load_string(std::string_view text, std::string_view origin = "<string>");

  /// Reads the environment variables of the table (BROKER_PORT, BROKER_WEB_SOCKET_PORT,
  /// BROKER_METRICS_PORT). A variable that is set, even to "", must hold a valid value; the
  /// error names the variable. Changes nothing on error.
  error load_env();

  /// Like load_env() with `getenv` in place of the process environment (for tests).
  error load_env(const getenv_function& getenv);

  /// Parses command-line arguments; argv[0] is the program name and is skipped. Accepts
  /// `--key=value`, `--key value`, `--flag` (bool), `--flag=true|false`, `-p 9999`, `-p9999`,
  /// and keys without their "broker." prefix (`--ttl=4`). `-h`, `-?` and `--help` set
  /// help_requested(); `--config-file=PATH` sets config_file() without reading the file. Other
  /// arguments, and all after `--`, replace the contents of `remainder`; with a null
  /// `remainder` they are an error. Errors name the argument or key. Changes no option on error.
  error parse_args(int argc, const char* const* argv,
                   std::vector<std::string>* remainder = nullptr);

  /// The usual start-up: load_file(path of `--config-file`, if given), then load_env(), then
  /// parse_args(). Changes no option on error.
  error load(int argc, const char* const* argv, std::vector<std::string>* remainder = nullptr);

  /// True if the last parse_args() saw -h, -? or --help (also when it returned an error).
  bool help_requested() const noexcept { return help_requested_; }

  /// The path given with `--config-file` to the last parse_args(), or empty.
  const std::string& config_file() const noexcept { return config_file_; }

  /// Where the value of `key` came from; nullopt for an unknown key.
  std::optional<option_source> source(std::string_view key) const;

  /// What the loading calls accepted but want the user to know, one line per name, in the
  /// order met: a Broker spelling read as one of our keys, or a Broker or CAF setting that
  /// has no effect here (and why). Programs print them as warnings at start-up.
  const std::vector<std::string>& notices() const noexcept { return notices_; }

  /// The effective configuration as config-file text: every option as `key = value` with
  /// its source as a comment (`# file node.conf:3:1`, `# environment BROKER_PORT`,
  /// `# command line --ttl`, `# default`). A secret option that is set (option_info::secret)
  /// appears only as a comment, `# broker.ssl.passphrase = <secret, not shown>`, so
  /// load_string() reads the text back to an equal value except for the secrets, which it
  /// leaves at their defaults.
  std::string dump() const;

  /// Loads the TLS files the way an endpoint will and reports the first problem, naming the
  /// option: a certificate without a key (or a key without a certificate), no CA to verify
  /// peers with, a certificate or CA file that is not PEM, a key that does not decrypt with
  /// broker.ssl.passphrase or does not belong to the certificate. No error with
  /// broker.disable-ssl or without broker.ssl.* settings (anonymous TLS needs no files).
  error check_tls() const;

  /// The table rendered for --help: grouped by section; flag, type, default, range, variable
  /// and description of every option, including program options.
  std::string help_text() const;

  /// Every option in help order: the library's table, then the program's options.
  std::vector<const option_info*> all_options() const;

  /// The flag column of help_text() for `info`, e.g. "-p, --broker.port=<port>".
  static std::string flag_text(const option_info& info);

  /// The description column of help_text(): help, default, range or choices, variable.
  static std::string description_text(const option_info& info);

  // -- typed access to the library's options --------------------------------------------------

  /// broker.peer-buffer-size: messages queued per peer before its overflow policy applies.
  size_t peer_buffer_size() const;
  /// broker.peer-overflow-policy: never `block`.
  overflow_policy peer_overflow_policy() const;

  /// broker.peer-write-delay: how long (microseconds) a peering that streams without
  /// hearing back gathers its writes.
  size_t peer_write_delay() const;
  /// broker.web-socket-buffer-size: messages queued per WebSocket client.
  size_t web_socket_buffer_size() const;
  /// broker.web-socket-overflow-policy: never `block`.
  overflow_policy web_socket_overflow_policy() const;
  /// broker.subscriber-buffer-size: messages queued per local subscriber or hub.
  size_t subscriber_buffer_size() const;
  /// broker.subscriber-overflow-policy: any policy.
  overflow_policy subscriber_overflow_policy() const;
  /// broker.publisher-buffer-size: messages a publisher may have in flight.
  size_t publisher_buffer_size() const;
  /// broker.disable-forwarding: true if messages from one peer are not relayed to others.
  bool disable_forwarding() const;
  /// broker.ttl: hop limit of forwarded messages, 1-65535.
  uint16_t ttl() const;
  /// broker.disable-ssl: true for plain TCP peerings and ws:// WebSocket.
  bool disable_ssl() const;
  /// broker.ssl.certificate: path of this node's PEM certificate, or empty.
  const std::string& ssl_certificate() const;
  /// broker.ssl.key: path of the private key, or empty.
  const std::string& ssl_key() const;
  /// broker.ssl.passphrase: passphrase of the private key, or empty.
  const std::string& ssl_passphrase() const;
  /// broker.ssl.cafile: file of trusted CA certificates, or empty.
  const std::string& ssl_cafile() const;
  /// broker.ssl.capath: directory of trusted CA certificates, or empty.
  const std::string& ssl_capath() const;
  /// broker.port: peering port to listen on; 0 means do not listen.
  uint16_t port() const;
  /// broker.web-socket.address: bind address of the WebSocket server (default 127.0.0.1);
  /// empty means all interfaces.
  const std::string& web_socket_address() const;
  /// broker.web-socket.port: WebSocket port; 0 means no WebSocket server.
  uint16_t web_socket_port() const;
  /// broker.metrics.address: bind address of the metrics endpoint (default 127.0.0.1);
  /// empty means all interfaces.
  const std::string& metrics_address() const;
  /// broker.metrics.port: Prometheus port; 0 means no metrics endpoint.
  uint16_t metrics_port() const;
  /// broker.scheduler.max-threads: CAF worker threads.
  size_t scheduler_max_threads() const;
  /// broker.io-threads: threads running the Asio io_context.
  size_t io_threads() const;
  /// broker.topic-cache-size: result-cache entries of the topic index; 0 disables the cache.
  size_t topic_cache_size() const;
  size_t web_socket_max_clients() const;
  size_t web_socket_max_message_size() const;
  /// broker.web-socket.handshake-timeout, in milliseconds.
  size_t web_socket_handshake_timeout() const;
  /// broker.store.buffer-size: commands queued per store handler (policy block).
  size_t store_buffer_size() const;
  /// broker.store.heartbeat-interval, in milliseconds.
  size_t store_heartbeat_interval() const;
  /// broker.store.timeout-intervals: silent heartbeat intervals before a peer store is gone.
  size_t store_timeout_intervals() const;
  /// broker.store.request-timeout, in milliseconds.
  size_t store_request_timeout() const;
  /// broker.store.tick-interval, in milliseconds.
  size_t store_tick_interval() const;
  /// broker.store.master-probe-timeout, in milliseconds.
  size_t store_master_probe_timeout() const;
  /// broker.peer-max-subscriptions: prefixes one peer may announce.
  size_t peer_max_subscriptions() const;
  /// broker.web-socket.max-subscriptions: prefixes one WebSocket client may subscribe to.
  size_t web_socket_max_subscriptions() const;
  /// broker.max-pending-control-bytes: control output one connection may leave unread.
  size_t max_pending_control_bytes() const;
  /// broker.max-nesting-depth: deepest container nesting a decoder accepts.
  size_t max_nesting_depth() const;
  /// broker.log-level: "quiet", "error", "warning", "info", "debug" or "trace".
  const std::string& log_level() const;
  /// broker.log-file: path of the log file (with CAF's [PID] and [TIMESTAMP]), or empty.
  const std::string& log_file() const;
  /// broker.log-file-level: like log_level(), for broker.log-file.
  const std::string& log_file_level() const;

  /// Equal if both have the same program options and the same values.
  friend BROKER_API bool operator==(const configuration& x, const configuration& y);
  friend bool operator!=(const configuration& x, const configuration& y) { return !(x == y); }

private:
  /// What a name means: an option (by index), an ignored foreign name, or nothing.
  struct resolved_name;

  /// Where a value came from, and how the user wrote it (for dump()).
  struct value_origin {
    option_source source = option_source::default_value;
    std::string where;
  };

  /// The position of `key` in options() followed by program_options(), or npos.
  size_t index_of(std::string_view key) const noexcept;
  const option_info& info_at(size_t index) const noexcept;
  /// `name` as an option, a program alias or a Broker/CAF spelling (compat.hh).
  resolved_name resolve(std::string_view name) const;
  /// Records `text` once.
  void add_notice(std::string text);
  error assign(size_t index, option_value value, value_origin origin);
  error set_from(size_t index, std::string_view value, value_origin origin);
  error read_foreign_variables(const getenv_function& getenv);

  std::vector<option_info> program_options_;
  std::vector<option_value> values_; ///< One per option: options(), then program_options_.
  std::vector<value_origin> origins_; ///< One per option, like values_.
  std::vector<std::pair<std::string, std::string>> aliases_; ///< (name, key) pairs.
  std::vector<std::string> notices_;
  std::string config_file_;
  bool help_requested_ = false;
};

} // namespace broker
