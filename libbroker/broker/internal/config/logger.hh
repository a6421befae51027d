#pragma once

// A minimal process-wide logger: one line per lifecycle event (listen, peer added/lost,
// client connected/removed, overflow). Lines go to stderr and, when broker.log-file is
// set, to that file, each with its own level. CAF's own logger is compiled out in Debian's
// build, so this is the only log.
//
// Threads: log() may be called from any thread; one mutex serializes the writes. The
// endpoint calls configure_logger() when it starts; the last endpoint to start wins.

#include <string>
#include <string_view>

#include "broker/endpoint_id.hh"
#include "broker/error.hh"

namespace broker {
class configuration;
} // namespace broker

namespace broker::internal {

/// Levels from least to most verbose; a threshold of `quiet` writes nothing.
enum class log_level : unsigned char { quiet, error, warning, info, debug, trace };

/// Sets the most verbose level that reaches stderr (default: info).
void set_log_level(log_level level) noexcept;

/// Parses "quiet", "error", "warning", "info", "debug" or "trace"; unknown names give info.
log_level parse_log_level(std::string_view name) noexcept;

/// True if messages of `level` reach stderr or the log file.
bool log_enabled(log_level level) noexcept;

/// Applies broker.log-level, broker.log-file and broker.log-file-level. Errors
/// (cannot_open_file) name broker.log-file and the expanded path; they are also logged to
/// stderr, and stderr logging is set up either way.
error configure_logger(const configuration& cfg, const endpoint_id& node);

/// A CAF-style log path with `[PID]`, `[TIMESTAMP]` (UTC, `YYYY-MM-DDThh-mm-ss`) and
/// `[NODE]` (the endpoint id) replaced, as Broker's caf.logger.file.path allows.
std::string expand_log_path(std::string_view path, const endpoint_id& node);

/// Writes "<UTC time> <level> <component>: <message>" where `level` is enabled.
void log(log_level level, std::string_view component, std::string_view message);

} // namespace broker::internal
