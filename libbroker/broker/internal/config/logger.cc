#include "broker/internal/config/logger.hh"

#include "broker/configuration.hh"
#include "broker/time.hh"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unistd.h>

namespace broker::internal {

namespace {

constexpr std::string_view level_names[] = {"quiet", "error",  "warning",
                                            "info",  "debug",  "trace"};

std::atomic<log_level> console_level{log_level::info};
std::atomic<log_level> file_level{log_level::quiet};

using file_ptr = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

// Guards the writes and the file handle.
std::mutex output_mtx;
file_ptr log_file{nullptr, &std::fclose};

void replace_all(std::string& text, std::string_view what, const std::string& with) {
  for (auto pos = text.find(what); pos != std::string::npos;
       pos = text.find(what, pos + with.size()))
    text.replace(pos, what.size(), with);
}

} // namespace

void set_log_level(log_level level) noexcept {
  console_level.store(level, std::memory_order_relaxed);
}

log_level parse_log_level(std::string_view name) noexcept {
  for (size_t i = 0; i < std::size(level_names); ++i)
    if (level_names[i] == name)
      return static_cast<log_level>(i);
  return log_level::info;
}

bool log_enabled(log_level level) noexcept {
  return level != log_level::quiet
         && (level <= console_level.load(std::memory_order_relaxed)
             || level <= file_level.load(std::memory_order_relaxed));
}

std::string expand_log_path(std::string_view path, const endpoint_id& node) {
  std::string result{path};
  replace_all(result, "[PID]", std::to_string(::getpid()));
  auto stamp = to_string(now()).substr(0, 19); // YYYY-MM-DDThh:mm:ss
  for (auto& c : stamp)
    if (c == ':')
      c = '-'; // No colons in file names.
  replace_all(result, "[TIMESTAMP]", stamp);
  replace_all(result, "[NODE]", to_string(node));
  return result;
}

error configure_logger(const configuration& cfg, const endpoint_id& node) {
  set_log_level(parse_log_level(cfg.log_level()));
  auto level = parse_log_level(cfg.log_file_level());
  error err;
  {
    std::lock_guard<std::mutex> guard{output_mtx};
    log_file.reset();
    file_level.store(log_level::quiet, std::memory_order_relaxed);
    if (cfg.log_file().empty() || level == log_level::quiet)
      return {};
    auto path = expand_log_path(cfg.log_file(), node);
    file_ptr file{std::fopen(path.c_str(), "a"), &std::fclose};
    if (file) {
      log_file = std::move(file);
      file_level.store(level, std::memory_order_relaxed);
      return {};
    }
    err = error{ec::cannot_open_file,
                "broker.log-file: cannot open \"" + path + "\": " + std::strerror(errno)};
  }
  // Callers that cannot act on the result (an endpoint starting up) still get it said.
  log(log_level::error, "logger", err.message());
  return err;
}

void log(log_level level, std::string_view component, std::string_view message) {
  if (!log_enabled(level))
    return;
  std::string line = to_string(now());
  line += ' ';
  line += level_names[static_cast<size_t>(level)];
  line += ' ';
  line += component;
  line += ": ";
  line += message;
  line += '\n';
  std::lock_guard<std::mutex> guard{output_mtx};
  if (level <= console_level.load(std::memory_order_relaxed))
    std::fwrite(line.data(), 1, line.size(), stderr);
  if (log_file && level <= file_level.load(std::memory_order_relaxed)) {
    std::fwrite(line.data(), 1, line.size(), log_file.get());
    std::fflush(log_file.get());
  }
}

} // namespace broker::internal
