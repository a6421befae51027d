#include "broker/internal/config/logger.hh"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "broker/configuration.hh"

using namespace broker;
using namespace broker::internal;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct logger_reset {
  ~logger_reset() { configure_logger(configuration{}, endpoint_id{}); }
};

} // namespace

TEST_CASE("a CAF-style log path gets its placeholders filled in", "[logger]") {
  auto path = expand_log_path("broker_[PID]_[TIMESTAMP].log", endpoint_id{});
  CHECK(path.find("[PID]") == std::string::npos);
  CHECK(path.find("[TIMESTAMP]") == std::string::npos);
  CHECK(path.find("_" + std::to_string(::getpid()) + "_") != std::string::npos);
  CHECK(path.find(':') == std::string::npos);
  CHECK(expand_log_path("plain.log", endpoint_id{}) == "plain.log");
}

TEST_CASE("broker.log-file receives lines up to broker.log-file-level", "[logger]") {
  logger_reset reset;
  auto path = "/tmp/broker-logger-test-" + std::to_string(::getpid()) + ".log";
  std::remove(path.c_str());
  configuration cfg;
  REQUIRE_FALSE(cfg.set("broker.log-level", "quiet"));
  REQUIRE_FALSE(cfg.set("broker.log-file", path));
  REQUIRE_FALSE(cfg.set("broker.log-file-level", "warning"));
  REQUIRE_FALSE(configure_logger(cfg, endpoint_id{}));
  log(log_level::warning, "test", "to the file");
  log(log_level::info, "test", "too verbose for the file");
  auto text = read_file(path);
  std::remove(path.c_str());
  CHECK(text.find(" warning test: to the file\n") != std::string::npos);
  CHECK(text.find("too verbose") == std::string::npos);
}

TEST_CASE("a log file that cannot be opened is an error naming broker.log-file", "[logger]") {
  logger_reset reset;
  configuration cfg;
  REQUIRE_FALSE(cfg.set("broker.log-level", "quiet"));
  REQUIRE_FALSE(cfg.set("broker.log-file", "/nonexistent-dir/broker.log"));
  auto err = configure_logger(cfg, endpoint_id{});
  CHECK(err == ec::cannot_open_file);
  CHECK(err.message().find("broker.log-file: cannot open \"/nonexistent-dir/broker.log\"")
        == 0);
}

TEST_CASE("quiet writes nothing and trace includes debug", "[logger]") {
  logger_reset reset;
  configuration cfg;
  REQUIRE_FALSE(cfg.set("broker.log-level", "quiet"));
  REQUIRE_FALSE(configure_logger(cfg, endpoint_id{}));
  CHECK_FALSE(log_enabled(log_level::error));
  REQUIRE_FALSE(cfg.set("broker.log-level", "trace"));
  REQUIRE_FALSE(configure_logger(cfg, endpoint_id{}));
  CHECK(log_enabled(log_level::debug));
}
