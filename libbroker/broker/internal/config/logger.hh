#pragma once

// A minimal process-wide logger: one line per lifecycle event (listen, peer added/lost,
// client connected/removed, overflow), written to stderr. CAF's own logger is compiled out
// in Debian's build, so this is the only log.

#include <string_view>

namespace broker::internal {

enum class log_level : unsigned char { error, warning, info, debug };

/// Sets the most verbose level that is printed (default: info).
void set_log_level(log_level level) noexcept;

/// Parses "error", "warning", "info" or "debug"; unknown names give info.
log_level parse_log_level(std::string_view name) noexcept;

/// True if messages of `level` are printed.
bool log_enabled(log_level level) noexcept;

/// Writes "<UTC time> <level> <component>: <message>" if `level` is enabled.
void log(log_level level, std::string_view component, std::string_view message);

} // namespace broker::internal
