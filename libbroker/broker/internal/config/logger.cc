#include "broker/internal/config/logger.hh"

#include "broker/configuration.hh"
#include "broker/time.hh"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <unistd.h>

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

error logger::open_file(const std::string& path, log_level level) {
  file_.reset();
  file_level_.store(log_level::quiet, std::memory_order_relaxed);
  if (path.empty() || level == log_level::quiet)
    return {};
  std::shared_ptr<std::FILE> file{std::fopen(path.c_str(), "a"), [](std::FILE* f) {
                                    if (f)
                                      std::fclose(f);
                                  }};
  if (!file.get())
    return error{ec::cannot_open_file,
                 "broker.log-file: cannot open \"" + path + "\": " + std::strerror(errno)};
  file_ = std::move(file);
  file_level_.store(level, std::memory_order_relaxed);
  return {};
}

std::vector<log_entry> logger::recent() const {
  std::lock_guard<std::mutex> guard{recent_mtx_};
  return {recent_.begin(), recent_.end()};
}

void logger::write(log_level x, std::string_view component, std::string_view message) const {
  if (x != log_level::quiet && x <= log_level::info) {
    auto time = broker::to_string(now());
    std::lock_guard<std::mutex> guard{recent_mtx_};
    if (!recent_.empty() && recent_.back().level == x && recent_.back().component == component
        && recent_.back().message == message) {
      recent_.back().time = std::move(time);
      ++recent_.back().repeats;
    } else {
      if (recent_.size() == recent_capacity)
        recent_.pop_front();
      recent_.push_back(
        log_entry{std::move(time), x, std::string{component}, std::string{message}});
    }
  }
  if (!enabled(x))
    return;
  auto line = render(x, component, message);
  if (sink_ && x <= level_.load(std::memory_order_relaxed))
    sink_(line);
  if (file_ && x <= file_level_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> guard{output_mutex()};
    std::fwrite(line.data(), 1, line.size(), file_.get());
    std::fputc('\n', file_.get());
    std::fflush(file_.get());
  }
}

namespace {

void replace_all(std::string& text, std::string_view what, const std::string& with) {
  for (auto pos = text.find(what); pos != std::string::npos;
       pos = text.find(what, pos + with.size()))
    text.replace(pos, what.size(), with);
}

} // namespace

std::string expand_log_path(std::string_view path, const endpoint_id& node) {
  std::string result{path};
  replace_all(result, "[PID]", std::to_string(::getpid()));
  auto stamp = broker::to_string(now()).substr(0, 19); // YYYY-MM-DDThh:mm:ss
  for (auto& c : stamp)
    if (c == ':')
      c = '-'; // No colons in file names.
  replace_all(result, "[TIMESTAMP]", stamp);
  replace_all(result, "[NODE]", to_string(node));
  return result;
}

error apply_log_file(logger& lg, const configuration& cfg, const endpoint_id& node) {
  // The options table validated the level; quiet is only the unreachable fallback.
  auto level = parse_log_level(cfg.log_file_level()).value_or(log_level::quiet);
  auto path = cfg.log_file().empty() ? std::string{} : expand_log_path(cfg.log_file(), node);
  auto err = lg.open_file(path, level);
  if (err)
    lg.write(log_level::error, "logger", err.message());
  return err;
}

logger& default_logger() noexcept {
  static logger instance;
  return instance;
}

void log(log_level level, std::string_view component, std::string_view message) {
  default_logger().write(level, component, message);
}

} // namespace broker::internal
