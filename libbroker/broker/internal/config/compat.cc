#include "broker/internal/config/compat.hh"

#include <array>

namespace broker::internal {

namespace {

struct entry {
  std::string_view name;
  std::string_view key;    // empty: ignored
  std::string_view reason; // for ignored names
};

constexpr std::string_view metrics_reason =
  "metrics are served at /metrics (broker.metrics.port), not published on topics";

constexpr std::string_view recording_reason =
  "message recording is a debugging aid of Broker's that this implementation lacks";

constexpr std::string_view caf_reason =
  "CAF settings do not apply here (our I/O does not run on CAF)";

// Broker's config keys (and CAF's that Broker users write) with no row of their own.
constexpr std::array<entry, 17> foreign_keys{{
  {"broker.web_socket-buffer-size", "broker.web-socket-buffer-size", {}},
  {"broker.web_socket-overflow-policy", "broker.web-socket-overflow-policy", {}},
  {"broker.store.connection-timeout", "broker.store.timeout-intervals", {}},
  {"broker.store.nack-timeout", {},
   "clones NACK a gap as soon as they see it, and again every "
   "broker.store.heartbeat-interval"},
  {"broker.store.max-get-delay", {}, "a clone answers get() from its own copy at once"},
  {"broker.max-pending-inputs-per-source", {},
   "messages are routed as they arrive; a source waits (a publisher blocks, a connection "
   "stops reading) only while a receiver with policy block is full"},
  {"broker.max-input-bytes", {},
   "a connection routes what it reads at once and reads no more while a receiver is full, "
   "so at most one read (64 KiB) of its input waits"},
  {"broker.recording-directory", {}, recording_reason},
  {"broker.output-generator-file-cap", {}, recording_reason},
  {"broker.metrics.endpoint-name", {}, metrics_reason},
  {"broker.metrics.export.topic", {}, metrics_reason},
  {"broker.metrics.export.interval", {}, metrics_reason},
  {"broker.metrics.export.prefixes", {}, metrics_reason},
  {"broker.metrics.import.topics", {}, metrics_reason},
  {"caf.logger.file.path", "broker.log-file", {}},
  {"caf.logger.file.verbosity", "broker.log-file-level", {}},
  {"caf.logger.console.verbosity", "broker.log-level", {}},
}};

// Mapped CAF keys besides the logger's.
constexpr std::array<entry, 1> foreign_caf_keys{{
  {"caf.scheduler.max-threads", "broker.scheduler.max-threads", {}},
}};

constexpr std::string_view caf_prefix = "caf.";

foreign_name to_foreign_name(const entry& x) {
  return foreign_name{std::string{x.key}, std::string{x.reason}};
}

} // namespace

std::optional<foreign_name> lookup_foreign_key(std::string_view name) {
  for (const auto& x : foreign_keys)
    if (x.name == name)
      return to_foreign_name(x);
  for (const auto& x : foreign_caf_keys)
    if (x.name == name)
      return to_foreign_name(x);
  if (name.substr(0, caf_prefix.size()) == caf_prefix && name.size() > caf_prefix.size())
    return foreign_name{{}, std::string{caf_reason}};
  return std::nullopt;
}

const std::vector<foreign_variable>& foreign_variables() {
  static const std::vector<foreign_variable> result{
    {"BROKER_CONSOLE_VERBOSITY", {"broker.log-level", {}}},
    {"BROKER_FILE_VERBOSITY", {"broker.log-file-level", {}}},
    {"BROKER_RECORDING_DIRECTORY", {{}, std::string{recording_reason}}},
    {"BROKER_OUTPUT_GENERATOR_FILE_CAP", {{}, std::string{recording_reason}}},
    {"BROKER_METRICS_ENDPOINT_NAME", {{}, std::string{metrics_reason}}},
    {"BROKER_METRICS_EXPORT_TOPIC", {{}, std::string{metrics_reason}}},
    {"BROKER_METRICS_EXPORT_INTERVAL", {{}, std::string{metrics_reason}}},
    {"BROKER_METRICS_EXPORT_PREFIXES", {{}, std::string{metrics_reason}}},
    {"BROKER_METRICS_IMPORT_TOPICS", {{}, std::string{metrics_reason}}},
  };
  return result;
}

std::string alias_notice(std::string_view shown, std::string_view key) {
  return "reading \"" + std::string{shown} + "\" (Zeek Broker's name) as \"" + std::string{key}
         + "\"";
}

std::string ignored_notice(std::string_view shown, std::string_view reason) {
  return "ignoring \"" + std::string{shown} + "\": " + std::string{reason};
}

} // namespace broker::internal
