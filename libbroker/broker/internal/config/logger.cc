#include "broker/internal/config/logger.hh"

#include "broker/time.hh"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <mutex>

namespace broker::internal {

namespace {

constexpr std::string_view level_names[] = {"quiet", "error", "warning",
                                            "info",  "debug", "trace"};

/// One mutex for every logger: they all end on the same stderr.
std::mutex& output_mutex() {
  static std::mutex mtx;
  return mtx;
}

void write_stderr(std::string_view line) {
  std::lock_guard<std::mutex> guard{output_mutex()};
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fputc('\n', stderr);
}

} // namespace

std::string_view to_string(log_level x) noexcept {
  auto i = static_cast<size_t>(x);
  return i < std::size(level_names) ? level_names[i] : "unknown";
}

std::optional<log_level> parse_log_level(std::string_view name) noexcept {
  for (size_t i = 0; i < std::size(level_names); ++i)
    if (level_names[i] == name)
      return static_cast<log_level>(i);
  return std::nullopt;
}

std::optional<log_format> parse_log_format(std::string_view name) noexcept {
  if (name == "text")
    return log_format::text;
  if (name == "json")
    return log_format::json;
  return std::nullopt;
}

std::string json_quote(std::string_view text) {
  return nlohmann::json(std::string{text})
    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

logger::logger(log_level level, log_format format, std::string endpoint)
  : logger(level, format, std::move(endpoint), write_stderr) {
}

logger::logger(log_level level, log_format format, std::string endpoint, sink_fn sink)
  : level_(level), format_(format), endpoint_(std::move(endpoint)), sink_(std::move(sink)) {
}

std::string logger::render(log_level x, std::string_view component,
                           std::string_view message) const {
  auto time = broker::to_string(now());
  if (format_ == log_format::text) {
    std::string line = time;
    line += ' ';
    line += to_string(x);
    line += ' ';
    line += component;
    line += ": ";
    line += message;
    return line;
  }
  std::string line = "{\"time\":";
  line += json_quote(time);
  line += ",\"level\":";
  line += json_quote(to_string(x));
  line += ",\"component\":";
  line += json_quote(component);
  if (!endpoint_.empty()) {
    line += ",\"endpoint\":";
    line += json_quote(endpoint_);
  }
  line += ",\"message\":";
  line += json_quote(message);
  line += '}';
  return line;
}

void logger::write(log_level x, std::string_view component, std::string_view message) const {
  if (!enabled(x))
    return;
  auto line = render(x, component, message);
  if (sink_)
    sink_(line);
}

logger& default_logger() noexcept {
  static logger instance;
  return instance;
}

void log(log_level level, std::string_view component, std::string_view message) {
  default_logger().write(level, component, message);
}

} // namespace broker::internal
