// Zeek Broker compatibility of the configuration: Broker's and CAF's keys and variables,
// program aliases, and where each value came from (source(), dump()).

#include "broker/configuration.hh"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "broker/configuration.test.hh"

using namespace broker;
using namespace broker::test;

namespace {

bool has_notice(const configuration& cfg, const std::string& part) {
  return std::any_of(cfg.notices().begin(), cfg.notices().end(),
                     [&part](const std::string& x) { return x.find(part) != std::string::npos; });
}

option_info list_option(std::string key) {
  option_info info;
  info.key = std::move(key);
  info.type = option_type::string_list;
  info.default_value = "[]";
  return info;
}

// The node.cfg of Broker's handshake btests, unchanged (tests/data/broker-configs/).
constexpr const char* broker_node_cfg = R"(broker {
  disable-ssl = true
}
caf {
  logger {
    file {
      path = 'broker.log'
      verbosity = 'debug'
    }
  }
}
)";

} // namespace

TEST_CASE("CAF's logger settings in a Broker config map onto our log options", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.load_string(broker_node_cfg, "node.cfg"));
  CHECK(cfg.disable_ssl());
  CHECK(cfg.log_file() == "broker.log");
  CHECK(cfg.log_file_level() == "debug");
  CHECK(cfg.notices()
        == std::vector<std::string>{
          R"(node.cfg:7:7: reading "caf.logger.file.path" (Zeek Broker's name) as "broker.log-file")",
          R"(node.cfg:8:7: reading "caf.logger.file.verbosity" (Zeek Broker's name) as )"
          R"("broker.log-file-level")"});
}

TEST_CASE("other caf.* settings are ignored with one notice each", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.load_string("caf.middleman.workers = 0\n"
                                "caf { logger { console { format = \"%m\" } } }\n"
                                "caf.logger.file.excluded-components = [caf, caf_io]\n",
                                "a.conf"));
  CHECK(cfg == configuration{});
  REQUIRE(cfg.notices().size() == 3);
  CHECK(cfg.notices()[0]
        == R"(a.conf:1:1: ignoring "caf.middleman.workers": CAF settings do not apply here )"
           R"((our I/O does not run on CAF))");
  CHECK(has_notice(cfg, "ignoring \"caf.logger.console.format\""));
  CHECK(has_notice(cfg, "ignoring \"caf.logger.file.excluded-components\""));
}

TEST_CASE("a mapped CAF setting is validated like our own option", "[config]") {
  configuration cfg;
  CHECK(cfg.load_string("caf.logger.console.verbosity = loud", "a.conf").message()
        == "a.conf:1:1: broker.log-level: expected one of quiet, error, warning, info, debug, "
           "trace, got \"loud\"");
  REQUIRE_FALSE(cfg.load_string("caf.logger.console.verbosity = trace\n"
                                "caf.scheduler.max-threads = 4\n"));
  CHECK(cfg.log_level() == "trace");
  CHECK(cfg.scheduler_max_threads() == 4);
}

TEST_CASE("Broker's spellings of our keys work in files and on the command line", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.load_string("broker.web_socket-buffer-size = 100\n"
                                "broker { store { connection-timeout = 20 } }\n"
                                "broker.store.nack-timeout = 2\n",
                                "b.conf"));
  CHECK(cfg.web_socket_buffer_size() == 100);
  CHECK(cfg.store_timeout_intervals() == 20);
  CHECK(has_notice(cfg, R"(b.conf:1:1: reading "broker.web_socket-buffer-size")"));
  CHECK(has_notice(cfg, R"(as "broker.store.timeout-intervals")"));
  CHECK(has_notice(cfg, R"(b.conf:3:1: ignoring "broker.store.nack-timeout": clones NACK)"));
  configuration cli;
  REQUIRE_FALSE(parse(cli, {"--broker.web_socket-overflow-policy=drop_oldest",
                            "--web_socket-buffer-size", "7", "--caf.middleman.workers", "4"}));
  CHECK(cli.web_socket_overflow_policy() == overflow_policy::drop_oldest);
  CHECK(cli.web_socket_buffer_size() == 7);
  CHECK(has_notice(cli, "ignoring \"caf.middleman.workers\""));
  CHECK(parse(cli, {"--broker.web_socket-buffer-size=0"}).message()
        == "broker.web-socket-buffer-size: expected an integer between 1 and 16777216, got "
           "\"0\"");
}

TEST_CASE("a key that is neither ours nor Broker's is still an error", "[config]") {
  configuration cfg;
  CHECK(cfg.load_string("broker.no-such-thing = 1", "a.conf").message()
        == R"(a.conf:1:1: unknown option "broker.no-such-thing")");
  CHECK(parse(cfg, {"--cafx.logger=1"}) == ec::invalid_config);
}

TEST_CASE("Broker's environment variables are read or named in a notice", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.load_env(fake_env({{"BROKER_CONSOLE_VERBOSITY", "debug"},
                                       {"BROKER_FILE_VERBOSITY", "quiet"},
                                       {"BROKER_RECORDING_DIRECTORY", "/tmp/rec"},
                                       {"BROKER_METRICS_EXPORT_TOPIC", "/metrics"}})));
  CHECK(cfg.log_level() == "debug");
  CHECK(cfg.log_file_level() == "quiet");
  CHECK(cfg.source("broker.log-level") == option_source::environment);
  CHECK(has_notice(cfg, R"(reading "BROKER_CONSOLE_VERBOSITY" (Zeek Broker's name) as )"
                        R"("broker.log-level")"));
  CHECK(has_notice(cfg, R"(ignoring "BROKER_RECORDING_DIRECTORY": message recording)"));
  CHECK(has_notice(cfg, R"(ignoring "BROKER_METRICS_EXPORT_TOPIC": metrics are served)"));
  auto err = cfg.load_env(fake_env({{"BROKER_CONSOLE_VERBOSITY", "chatty"}}));
  CHECK(err.message()
        == "BROKER_CONSOLE_VERBOSITY: broker.log-level: expected one of quiet, error, "
           "warning, info, debug, trace, got \"chatty\"");
}

TEST_CASE("a program alias reads another spelling of its option", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.add_alias("port", "broker.port"));
  REQUIRE_FALSE(cfg.load_string("port = 9999/tcp\n", "node.cfg"));
  CHECK(cfg.port() == 9999);
  CHECK(has_notice(cfg, R"(node.cfg:1:1: reading "port" (Zeek Broker's name) as "broker.port")"));
  CHECK(cfg.add_alias("port", "broker.ttl") == ec::invalid_config);
  CHECK(cfg.add_alias("broker.ttl", "broker.port") == ec::invalid_config);
  CHECK(cfg.add_alias("caf.logger.file.path", "broker.port") == ec::invalid_config);
  CHECK(cfg.add_alias("x", "no.such.key") == ec::invalid_config);
  CHECK(cfg.add_alias("bad key", "broker.ttl") == ec::invalid_config);
}

TEST_CASE("a notice is reported once per name and place", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(parse(cfg, {"--caf.x=1", "--caf.x=2"}));
  CHECK(cfg.notices().size() == 1);
}

TEST_CASE("the JSON form of a config file reads like the nested form", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.add_option(list_option("peers")));
  REQUIRE_FALSE(cfg.load_string(
    R"({"caf": {"logger": {"file": {"path": "broker.log", "verbosity": "debug"}}}, )"
    R"("peers": ["tcp://localhost:9999"], "broker": {"ttl": 4, "disable-ssl": true}})",
    "test.cfg"));
  CHECK(cfg.log_file() == "broker.log");
  CHECK(cfg.get_list("peers") == std::vector<std::string>{"tcp://localhost:9999"});
  CHECK(cfg.ttl() == 4);
  CHECK(cfg.disable_ssl());
  CHECK(cfg.load_string("{\"broker\": {\"ttl\": 4}", "a.cfg").message()
        == "a.cfg:1:1: section \"\" is missing its closing '}'");
  CHECK(cfg.load_string("{\"bad key\": 1}", "a.cfg").message()
        == "a.cfg:1:2: invalid key \"bad key\"");
}

TEST_CASE("source() tells where each value came from", "[config]") {
  configuration cfg;
  temp_file file{"broker.ttl = 4\n"};
  args a{{"--config-file", file.path, "--broker.disable-ssl"}};
  REQUIRE_FALSE(cfg.load(a.argc(), a.argv()));
  CHECK(cfg.source("broker.ttl") == option_source::file);
  CHECK(cfg.source("broker.disable-ssl") == option_source::command_line);
  CHECK(cfg.source("broker.peer-buffer-size") == option_source::default_value);
  REQUIRE_FALSE(cfg.set("broker.peer-buffer-size", "16"));
  CHECK(cfg.source("broker.peer-buffer-size") == option_source::program);
  CHECK_FALSE(cfg.source("no.such.key"));
}

TEST_CASE("dump() shows every value with its source and reads back", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.add_option(list_option("topics")));
  auto fresh = cfg;
  temp_file file{"topics = [\"/a\", 'b \"quoted\"']\nbroker.ssl.cafile = \"x\\\\y#z\"\n"};
  args a{{"--config-file", file.path, "--ttl", "3"}};
  REQUIRE_FALSE(cfg.load(a.argc(), a.argv()));
  REQUIRE_FALSE(cfg.load_env(fake_env({{"BROKER_PORT", "9999/tcp"}})));
  auto text = cfg.dump();
  INFO(text);
  CHECK(text.find("broker.ttl = 3") != std::string::npos);
  CHECK(text.find("# command line --ttl") != std::string::npos);
  CHECK(text.find("broker.port = 9999") != std::string::npos);
  CHECK(text.find("# environment BROKER_PORT") != std::string::npos);
  CHECK(text.find("topics = [\"/a\", \"b \\\"quoted\\\"\"]") != std::string::npos);
  CHECK(text.find("# file " + file.path + ":1:1") != std::string::npos);
  CHECK(text.find("broker.peer-overflow-policy = disconnect") != std::string::npos);
  CHECK(text.find("# default") != std::string::npos);
  REQUIRE_FALSE(fresh.load_string(text, "dump"));
  CHECK(fresh == cfg);
}
