#include "broker/internal/config/logger.hh"

#include "broker/configuration.hh"
#include "broker/endpoint.hh"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace broker;
using namespace broker::internal;

namespace {

struct captured {
  std::vector<std::string> lines;
  logger::sink_fn sink() {
    return [this](std::string_view line) { lines.emplace_back(line); };
  }
};

/// Sends everything written to stderr meanwhile into a temporary file.
class stderr_capture {
public:
  stderr_capture() {
    char name[] = "/tmp/broker-logger-test-XXXXXX";
    fd_ = mkstemp(name);
    path_ = name;
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    dup2(fd_, STDERR_FILENO);
  }

  ~stderr_capture() {
    restore();
    close(fd_);
    std::remove(path_.c_str());
  }

  std::string text() {
    restore();
    std::ifstream in{path_};
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }

private:
  void restore() {
    if (saved_ < 0)
      return;
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    saved_ = -1;
  }

  int fd_ = -1;
  int saved_ = -1;
  std::string path_;
};

size_t occurrences(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (auto i = haystack.find(needle); i != std::string::npos; i = haystack.find(needle, i + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("a logger writes its level and the less verbose ones, nothing more", "[logger]") {
  captured out;
  logger lg{log_level::warning, log_format::text, "", out.sink()};
  lg.write(log_level::error, "core", "e");
  lg.write(log_level::warning, "core", "w");
  lg.write(log_level::info, "core", "i");
  lg.write(log_level::trace, "core", "t");
  REQUIRE(out.lines.size() == 2);
  CHECK(out.lines[0].find(" error core: e") != std::string::npos);
  CHECK(out.lines[1].find(" warning core: w") != std::string::npos);
}

TEST_CASE("level quiet writes nothing, not even errors", "[logger]") {
  captured out;
  logger lg{log_level::quiet, log_format::text, "", out.sink()};
  lg.write(log_level::error, "core", "e");
  CHECK(out.lines.empty());
  CHECK_FALSE(lg.enabled(log_level::quiet));
}

TEST_CASE("trace is the most verbose level", "[logger]") {
  captured out;
  logger lg{log_level::trace, log_format::text, "", out.sink()};
  for (auto lvl : {log_level::error, log_level::warning, log_level::info, log_level::debug,
                   log_level::trace})
    lg.write(lvl, "x", "m");
  CHECK(out.lines.size() == 5);
}

TEST_CASE("a JSON log line is one object with time, level, component, endpoint, message",
          "[logger]") {
  captured out;
  logger lg{log_level::info, log_format::json, "worker-1", out.sink()};
  lg.write(log_level::info, "peering", "lost peer \"x\"\nbad \xff byte");
  REQUIRE(out.lines.size() == 1);
  CHECK(out.lines[0].find('\n') == std::string::npos);
  auto obj = nlohmann::json::parse(out.lines[0]);
  CHECK(obj["level"] == "info");
  CHECK(obj["component"] == "peering");
  CHECK(obj["endpoint"] == "worker-1");
  CHECK(obj["message"] == "lost peer \"x\"\nbad \xEF\xBF\xBD byte");
  CHECK(obj["time"].get<std::string>().size() >= 19);
}

TEST_CASE("level and format names parse; unknown names do not", "[logger]") {
  CHECK(parse_log_level("quiet") == log_level::quiet);
  CHECK(parse_log_level("trace") == log_level::trace);
  CHECK(parse_log_level("verbose") == std::nullopt);
  CHECK(parse_log_format("json") == log_format::json);
  CHECK(parse_log_format("JSON") == std::nullopt);
  CHECK(to_string(log_level::warning) == "warning");
}

TEST_CASE("two endpoints in one process log at their own levels", "[logger]") {
  configuration quiet;
  REQUIRE_FALSE(quiet.set("broker.log-level", "quiet"));
  REQUIRE_FALSE(quiet.set("broker.disable-ssl", "true"));
  configuration chatty;
  REQUIRE_FALSE(chatty.set("broker.log-level", "info"));
  REQUIRE_FALSE(chatty.set("broker.disable-ssl", "true"));
  REQUIRE_FALSE(chatty.set("broker.log-format", "json"));
  REQUIRE_FALSE(chatty.set("broker.metrics.endpoint-name", "chatty"));
  stderr_capture capture;
  {
    endpoint a{quiet};
    endpoint b{chatty};
    REQUIRE(a.listen("127.0.0.1", 0));
    REQUIRE(b.listen("127.0.0.1", 0));
  }
  auto text = capture.text();
  INFO("stderr:\n" << text);
  CHECK(occurrences(text, "listening on 127.0.0.1:") == 1);
  CHECK(occurrences(text, "\"endpoint\":\"chatty\"") >= 1);
}

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

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
  auto path = "/tmp/broker-logger-test-" + std::to_string(::getpid()) + ".log";
  std::remove(path.c_str());
  configuration cfg;
  REQUIRE_FALSE(cfg.set("broker.log-file", path));
  REQUIRE_FALSE(cfg.set("broker.log-file-level", "warning"));
  captured out;
  logger lg{log_level::quiet, log_format::text, "", out.sink()};
  REQUIRE_FALSE(apply_log_file(lg, cfg, endpoint_id{}));
  CHECK(lg.enabled(log_level::warning));
  CHECK_FALSE(lg.enabled(log_level::info));
  lg.write(log_level::warning, "test", "to the file");
  lg.write(log_level::info, "test", "too verbose for the file");
  auto text = slurp(path);
  std::remove(path.c_str());
  CHECK(text.find(" warning test: to the file\n") != std::string::npos);
  CHECK(text.find("too verbose") == std::string::npos);
  CHECK(out.lines.empty()); // the sink's level is quiet
}

TEST_CASE("a log file that cannot be opened is an error naming broker.log-file", "[logger]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.set("broker.log-file", "/nonexistent-dir/broker.log"));
  captured out;
  logger lg{log_level::error, log_format::text, "", out.sink()};
  auto err = apply_log_file(lg, cfg, endpoint_id{});
  CHECK(err == ec::cannot_open_file);
  CHECK(err.message().find("broker.log-file: cannot open \"/nonexistent-dir/broker.log\"")
        == 0);
  REQUIRE(out.lines.size() == 1);
  CHECK(out.lines[0].find("broker.log-file: cannot open") != std::string::npos);
}

TEST_CASE("a logger keeps its recent events at info and above, whatever its level",
          "[logger]") {
  captured out;
  logger lg{log_level::error, log_format::text, "", out.sink()};
  lg.write(log_level::warning, "peering", "lost peer x");
  lg.write(log_level::debug, "core", "not an event");
  lg.write(log_level::info, "web-socket", "client rejected");
  CHECK(out.lines.empty()); // Not written: below the level.
  auto recent = lg.recent();
  REQUIRE(recent.size() == 2);
  CHECK(recent[0].level == log_level::warning);
  CHECK(recent[0].component == "peering");
  CHECK(recent[0].message == "lost peer x");
  CHECK(recent[1].message == "client rejected");
  CHECK_FALSE(recent[1].time.empty());
  // A line repeated in a row is one entry with a count.
  for (int i = 0; i < 3; ++i)
    lg.write(log_level::info, "peering", "cannot connect; retrying");
  recent = lg.recent();
  REQUIRE(recent.size() == 3);
  CHECK(recent.back().repeats == 3);
  CHECK(recent[1].repeats == 1);
  for (size_t i = 0; i < logger::recent_capacity + 10; ++i)
    lg.write(log_level::info, "x", std::to_string(i));
  recent = lg.recent();
  REQUIRE(recent.size() == logger::recent_capacity);
  CHECK(recent.front().message == "10"); // The oldest went first.
  CHECK(recent.back().message == std::to_string(logger::recent_capacity + 9));
}
