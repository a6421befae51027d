#pragma once

// logger: one line per lifecycle event (listen, peer added/lost, client connected/removed,
// overflow), never one per message. CAF's own logger is compiled out in Debian's build, so
// this is the only log.
//
// Ownership: every endpoint owns one logger (its level, format and name), created from
// broker.log-level / broker.log-format / broker.metrics.endpoint-name and shared with its
// I/O runtime, peerings and servers; so two endpoints in one process log at their own
// levels. Code that has no endpoint at hand writes through default_logger(), the
// process-wide fallback.
//
// Threads: any thread may log; the level is an atomic, and the sink (stderr by default)
// is called under one process-wide mutex so that lines never interleave.
//
// A logger may also append to a file (broker.log-file, Broker's caf.logger.file.path), with
// its own level (broker.log-file-level); the file is set up before the logger is shared.
//
// Recent events: every logger also keeps its last `recent_capacity` lines at level info or
// more severe, whatever the configured levels (an operator who logs only warnings still
// sees peers come and go in the web view), a line repeated in a row once with its count;
// GET /v1/status serves them.
//
// Formats:
//   text  <UTC time> <level> <component>: <message>
//   json  {"time":"…","level":"…","component":"…","endpoint":"…","message":"…"}

#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>
#include <vector>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "broker/endpoint_id.hh"
#include "broker/error.hh"

namespace broker {
class configuration;
} // namespace broker

namespace broker::internal {

/// Levels from the least to the most verbose; `quiet` writes nothing. Broker's console
/// verbosity names (BROKER_CONSOLE_VERBOSITY) are the same words.
enum class log_level : unsigned char { quiet, error, warning, info, debug, trace };

enum class log_format : unsigned char { text, json };

/// "quiet", "error", "warning", "info", "debug" or "trace".
std::string_view to_string(log_level x) noexcept;

/// Parses a level name (case-sensitive, as in the options table); nullopt if unknown.
std::optional<log_level> parse_log_level(std::string_view name) noexcept;

/// Parses "text" or "json"; nullopt if unknown.
std::optional<log_format> parse_log_format(std::string_view name) noexcept;

/// One line of a logger's recent events (see the file comment).
struct log_entry {
  std::string time; ///< UTC, as in the text format.
  log_level level = log_level::info;
  std::string component;
  std::string message;
  /// How often the same line came in a row (a dial retrying every second is one entry);
  /// `time` is the last time.
  uint64_t repeats = 1;
};

/// See the file comment.
class logger {
public:
  /// Lines kept for recent().
  static constexpr size_t recent_capacity = 50;

  /// Receives each finished line, without the trailing newline.
  using sink_fn = std::function<void(std::string_view line)>;

  /// A logger writing to stderr. `endpoint` names the endpoint in JSON lines.
  explicit logger(log_level level = log_level::info, log_format format = log_format::text,
                  std::string endpoint = {});

  /// A logger writing to `sink` (tests).
  logger(log_level level, log_format format, std::string endpoint, sink_fn sink);

  /// True if lines of `x` are written; callers may skip building the message otherwise.
  bool enabled(log_level x) const noexcept {
    return x != log_level::quiet
           && (x <= level_.load(std::memory_order_relaxed)
               || x <= file_level_.load(std::memory_order_relaxed));
  }

  log_level level() const noexcept { return level_.load(std::memory_order_relaxed); }

  void level(log_level x) noexcept { level_.store(x, std::memory_order_relaxed); }

  log_format format() const noexcept { return format_; }

  const std::string& endpoint() const noexcept { return endpoint_; }

  /// Also appends lines up to `level` to the file at `path` (call before sharing the
  /// logger). An error (cannot_open_file) names broker.log-file and the path.
  error open_file(const std::string& path, log_level level);

  /// Writes one line if `x` is enabled (see the file comment for the formats).
  void write(log_level x, std::string_view component, std::string_view message) const;

  /// The last lines at level info or more severe, the oldest first.
  std::vector<log_entry> recent() const;

  /// The line write() would produce (no newline), for tests and for tools.
  std::string render(log_level x, std::string_view component,
                     std::string_view message) const;

private:
  std::atomic<log_level> level_;
  log_format format_;
  std::string endpoint_;
  sink_fn sink_;
  std::shared_ptr<std::FILE> file_;
  std::atomic<log_level> file_level_{log_level::quiet};
  mutable std::mutex recent_mtx_;
  mutable std::deque<log_entry> recent_;
};

/// A CAF-style log path with `[PID]`, `[TIMESTAMP]` (UTC, `YYYY-MM-DDThh-mm-ss`) and
/// `[NODE]` (the endpoint id) replaced, as Broker's caf.logger.file.path allows.
std::string expand_log_path(std::string_view path, const endpoint_id& node);

/// Applies broker.log-file and broker.log-file-level to `lg` (see open_file); an error is
/// also written to `lg`.
error apply_log_file(logger& lg, const configuration& cfg, const endpoint_id& node);

/// The process-wide logger for code without an endpoint (level info, text, stderr).
logger& default_logger() noexcept;

/// Writes through default_logger(). Code that belongs to an endpoint uses its logger.
void log(log_level level, std::string_view component, std::string_view message);

/// `text` as a JSON string literal, quotes included; invalid UTF-8 becomes U+FFFD.
std::string json_quote(std::string_view text);

} // namespace broker::internal
