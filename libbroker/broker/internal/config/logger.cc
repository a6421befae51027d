#include "broker/internal/config/logger.hh"

#include "broker/time.hh"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace broker::internal {

namespace {

std::atomic<log_level> current_level{log_level::info};
std::mutex output_mtx;

constexpr std::string_view level_names[] = {"error", "warning", "info", "debug"};

} // namespace

void set_log_level(log_level level) noexcept {
  current_level.store(level, std::memory_order_relaxed);
}

log_level parse_log_level(std::string_view name) noexcept {
  for (size_t i = 0; i < std::size(level_names); ++i)
    if (level_names[i] == name)
      return static_cast<log_level>(i);
  return log_level::info;
}

bool log_enabled(log_level level) noexcept {
  return level <= current_level.load(std::memory_order_relaxed);
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
  std::fwrite(line.data(), 1, line.size(), stderr);
}

} // namespace broker::internal
