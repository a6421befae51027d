#pragma once

// Zeek Broker's spellings: keys and environment variables of Broker (and of CAF, which
// Broker's config files carry) that are not rows of our options table.
//
// configuration.cc consults this table only for names the options table does not know:
//   - an alias sets one of our options, with a notice naming our key
//     (broker.web_socket-buffer-size -> broker.web-socket-buffer-size,
//      caf.logger.file.path -> broker.log-file, ...);
//   - an ignored name is accepted with a notice that says why it has no effect here
//     (CAF's scheduler and middleman tuning, Broker's message recording, ...).
// Every notice is reported once per name (configuration::notices()). A name that is
// neither ours nor Broker's stays an error. doc/migrating.md lists the whole table.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal {

/// What a foreign key or variable does here.
struct foreign_name {
  /// The option it sets; empty if it is ignored.
  std::string key;
  /// For an ignored name: why it has no effect here (the notice's second half).
  std::string reason;
};

/// The meaning of Broker's or CAF's config key `name`; nullopt if it is neither.
std::optional<foreign_name> lookup_foreign_key(std::string_view name);

/// One of Broker's environment variables that is not an `env` of the options table.
struct foreign_variable {
  std::string name;
  foreign_name meaning;
};

/// Broker's environment variables beyond BROKER_PORT, BROKER_WEB_SOCKET_PORT and
/// BROKER_METRICS_PORT (which are rows of the table).
const std::vector<foreign_variable>& foreign_variables();

/// The notice for a foreign name that sets `key`: `reading "<shown>" (Zeek Broker's name) as
/// "<key>"`. `shown` is the name as the user wrote it: a key, a flag or a variable.
std::string alias_notice(std::string_view shown, std::string_view key);

/// The notice for a foreign name without effect: `ignoring "<shown>": <reason>`.
std::string ignored_notice(std::string_view shown, std::string_view reason);

} // namespace broker::internal
