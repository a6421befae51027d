#include "broker/configuration.hh"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string_view>
#include <string>
#include <vector>

#include <unistd.h>

#include "broker/configuration.test.hh"
#include "broker/internal/config/config_file.hh"

using namespace broker;
using namespace broker::test;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The reference table of doc/configuration.md, rendered from the options table.
std::string markdown_table() {
  std::ostringstream out;
  out << "| key | type | default | flag / env | description |\n"
      << "|---|---|---|---|---|\n";
  for (const auto& info : configuration::options()) {
    out << "| `" << info.key << "` | " << to_string(info.type);
    if (info.type == option_type::count)
      out << " " << info.min << "-" << info.max;
    if (info.type == option_type::choice) {
      out << ":";
      for (size_t i = 0; i < info.choices.size(); ++i)
        out << (i == 0 ? " " : ", ") << '`' << info.choices[i] << '`';
    }
    out << " | ";
    if (info.type == option_type::string)
      out << "`\"" << info.default_value << "\"`";
    else
      out << '`' << info.default_value << '`';
    out << " | ";
    if (info.short_flag != 0)
      out << "`-" << info.short_flag << "` ";
    if (!info.env.empty())
      out << '`' << info.env << '`';
    out << " | " << info.help << (info.secret ? " (secret: never printed)" : "") << " |\n";
  }
  return out.str();
}

} // namespace

// -- the table ----------------------------------------------------------------------------------

TEST_CASE("a default configuration holds the design's defaults", "[config]") {
  configuration cfg;
  CHECK(cfg.peer_buffer_size() == 2048);
  CHECK(cfg.peer_overflow_policy() == overflow_policy::disconnect);
  CHECK(cfg.web_socket_buffer_size() == 512);
  CHECK(cfg.web_socket_overflow_policy() == overflow_policy::disconnect);
  CHECK(cfg.subscriber_buffer_size() == 1024);
  CHECK(cfg.subscriber_overflow_policy() == overflow_policy::block);
  CHECK(cfg.publisher_buffer_size() == 1024);
  CHECK_FALSE(cfg.disable_forwarding());
  CHECK(cfg.ttl() == 16);
  CHECK_FALSE(cfg.disable_ssl());
  CHECK(cfg.ssl_certificate().empty());
  CHECK(cfg.ssl_key().empty());
  CHECK(cfg.ssl_passphrase().empty());
  CHECK(cfg.ssl_cafile().empty());
  CHECK(cfg.ssl_capath().empty());
  CHECK(cfg.port() == 0);
  CHECK(cfg.web_socket_address() == "127.0.0.1");
  CHECK(cfg.web_socket_port() == 0);
  CHECK(cfg.metrics_address() == "127.0.0.1");
  CHECK(cfg.metrics_port() == 0);
  CHECK(cfg.scheduler_max_threads() == 1);
  CHECK(cfg.io_threads() == 1);
  CHECK(cfg.topic_cache_size() == 1024);
  CHECK(cfg.max_nesting_depth() == 128);
  CHECK(cfg.log_level() == "info");
  CHECK_FALSE(cfg.help_requested());
  CHECK(cfg.config_file().empty());
}

TEST_CASE("every typed getter reads the row of its own key", "[config]") {
  // Guards the order of builtin_option against the order of the table.
  configuration cfg;
  REQUIRE_FALSE(cfg.set("broker.peer-buffer-size", "11"));
  REQUIRE_FALSE(cfg.set("broker.web-socket-buffer-size", "12"));
  REQUIRE_FALSE(cfg.set("broker.subscriber-buffer-size", "13"));
  REQUIRE_FALSE(cfg.set("broker.publisher-buffer-size", "14"));
  REQUIRE_FALSE(cfg.set("broker.ttl", "15"));
  REQUIRE_FALSE(cfg.set("broker.port", "16"));
  REQUIRE_FALSE(cfg.set("broker.web-socket.port", "17"));
  REQUIRE_FALSE(cfg.set("broker.metrics.port", "18"));
  REQUIRE_FALSE(cfg.set("broker.scheduler.max-threads", "19"));
  REQUIRE_FALSE(cfg.set("broker.io-threads", "20"));
  REQUIRE_FALSE(cfg.set("broker.topic-cache-size", "21"));
  REQUIRE_FALSE(cfg.set("broker.max-nesting-depth", "22"));
  REQUIRE_FALSE(cfg.set("broker.peer-overflow-policy", "drop_oldest"));
  REQUIRE_FALSE(cfg.set("broker.web-socket-overflow-policy", "drop_newest"));
  REQUIRE_FALSE(cfg.set("broker.subscriber-overflow-policy", "disconnect"));
  REQUIRE_FALSE(cfg.set("broker.disable-forwarding", "true"));
  REQUIRE_FALSE(cfg.set("broker.disable-ssl", "true"));
  REQUIRE_FALSE(cfg.set("broker.ssl.certificate", "c"));
  REQUIRE_FALSE(cfg.set("broker.ssl.key", "k"));
  REQUIRE_FALSE(cfg.set("broker.ssl.passphrase", "p"));
  REQUIRE_FALSE(cfg.set("broker.ssl.cafile", "f"));
  REQUIRE_FALSE(cfg.set("broker.ssl.capath", "d"));
  REQUIRE_FALSE(cfg.set("broker.web-socket.address", "w"));
  REQUIRE_FALSE(cfg.set("broker.metrics.address", "m"));
  REQUIRE_FALSE(cfg.set("broker.log-level", "debug"));
  CHECK(cfg.peer_buffer_size() == 11);
  CHECK(cfg.web_socket_buffer_size() == 12);
  CHECK(cfg.subscriber_buffer_size() == 13);
  CHECK(cfg.publisher_buffer_size() == 14);
  CHECK(cfg.ttl() == 15);
  CHECK(cfg.port() == 16);
  CHECK(cfg.web_socket_port() == 17);
  CHECK(cfg.metrics_port() == 18);
  CHECK(cfg.scheduler_max_threads() == 19);
  CHECK(cfg.io_threads() == 20);
  CHECK(cfg.topic_cache_size() == 21);
  CHECK(cfg.max_nesting_depth() == 22);
  CHECK(cfg.peer_overflow_policy() == overflow_policy::drop_oldest);
  CHECK(cfg.web_socket_overflow_policy() == overflow_policy::drop_newest);
  CHECK(cfg.subscriber_overflow_policy() == overflow_policy::disconnect);
  CHECK(cfg.disable_forwarding());
  CHECK(cfg.disable_ssl());
  CHECK(cfg.ssl_certificate() == "c");
  CHECK(cfg.ssl_key() == "k");
  CHECK(cfg.ssl_passphrase() == "p");
  CHECK(cfg.ssl_cafile() == "f");
  CHECK(cfg.ssl_capath() == "d");
  CHECK(cfg.web_socket_address() == "w");
  CHECK(cfg.metrics_address() == "m");
  CHECK(cfg.log_level() == "debug");
}

TEST_CASE("every option has a unique valid key, a one-line help text and a valid default",
          "[config]") {
  std::vector<std::string> keys;
  for (const auto& info : configuration::options()) {
    INFO("key: " << info.key);
    CHECK(info.key.rfind("broker.", 0) == 0);
    CHECK_FALSE(info.help.empty());
    CHECK(info.help.find('\n') == std::string::npos);
    configuration cfg;
    CHECK_FALSE(cfg.set(info.key, info.default_value));
    keys.push_back(info.key);
  }
  std::sort(keys.begin(), keys.end());
  CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
}

TEST_CASE("the table carries the environment variables and the short port flag",
          "[config]") {
  std::map<std::string, std::string> env;
  char port_flag = 0;
  for (const auto& info : configuration::options()) {
    if (!info.env.empty())
      env[info.env] = info.key;
    if (info.short_flag == 'p')
      port_flag = 'p';
  }
  CHECK(env == std::map<std::string, std::string>{
                 {"BROKER_PORT", "broker.port"},
                 {"BROKER_WEB_SOCKET_PORT", "broker.web-socket.port"},
                 {"BROKER_METRICS_PORT", "broker.metrics.port"},
                 {"BROKER_ZEROMQ_XSUB_PORT", "broker.zeromq.xsub-port"},
                 {"BROKER_ZEROMQ_XPUB_PORT", "broker.zeromq.xpub-port"},
                 {"BROKER_METRICS_ENDPOINT_NAME", "broker.metrics.endpoint-name"}});
  CHECK(port_flag == 'p');
  // Broker's BROKER_CONSOLE_VERBOSITY and BROKER_FILE_VERBOSITY are compatibility spellings
  // (with a notice), not table entries: configuration_compat.test.cc.
}

// -- set() and the types -------------------------------------------------------------------------

TEST_CASE("a non-numeric buffer size is an error that names the key and the value",
          "[config]") {
  configuration cfg;
  auto err = cfg.set("broker.peer-buffer-size", "abc");
  CHECK(err == ec::invalid_config);
  CHECK(err.message() == R"(broker.peer-buffer-size: expected a positive integer, got "abc")");
  CHECK(cfg.peer_buffer_size() == 2048);
}

TEST_CASE("a count rejects negative, empty, signed, fractional and junk-suffixed text",
          "[config]") {
  configuration cfg;
  for (auto text : {"-1", "", " ", "+5", "1.5", "12abc", "12 3", "0x10", "1e3", "١٢"}) {
    INFO("text: " << text);
    auto err = cfg.set("broker.ttl", text);
    CHECK(err == ec::invalid_config);
    CHECK(contains(err.message(), "broker.ttl: expected a positive integer"));
  }
  CHECK(cfg.ttl() == 16);
}

TEST_CASE("a count beyond uint64 is an out-of-range error, not a wrap-around", "[config]") {
  configuration cfg;
  for (auto text : {"18446744073709551616", "99999999999999999999999999", "18446744073709551615"}) {
    INFO("text: " << text);
    auto err = cfg.set("broker.peer-buffer-size", text);
    CHECK(err == ec::invalid_config);
    CHECK(contains(err.message(), "expected an integer between 1 and"));
  }
  CHECK(cfg.peer_buffer_size() == 2048);
}

TEST_CASE("a count outside its bounds is an error that names the key and the range",
          "[config]") {
  configuration cfg;
  CHECK(cfg.set("broker.ttl", "0").message()
        == R"(broker.ttl: expected an integer between 1 and 65535, got "0")");
  CHECK(cfg.set("broker.ttl", "65536") == ec::invalid_config);
  CHECK_FALSE(cfg.set("broker.ttl", "65535"));
  CHECK(cfg.ttl() == 65535);
  CHECK_FALSE(cfg.set("broker.ttl", " 1 "));
  CHECK(cfg.ttl() == 1);
  CHECK(cfg.set("broker.max-nesting-depth", "15") == ec::invalid_config);
  CHECK(cfg.set("broker.max-nesting-depth", "4097") == ec::invalid_config);
  CHECK(cfg.set("broker.scheduler.max-threads", "0") == ec::invalid_config);
  CHECK(cfg.set("broker.io-threads", "65") == ec::invalid_config);
  CHECK_FALSE(cfg.set("broker.topic-cache-size", "0"));
  CHECK(cfg.topic_cache_size() == 0);
}

TEST_CASE("an invalid overflow policy is an error that names the key", "[config]") {
  configuration cfg;
  auto err = cfg.set("broker.subscriber-overflow-policy", "drop_everything");
  CHECK(err == ec::invalid_config);
  CHECK(err.message()
        == R"(broker.subscriber-overflow-policy: expected one of block, drop_oldest, )"
           R"(drop_newest, disconnect, got "drop_everything")");
  CHECK(cfg.set("broker.subscriber-overflow-policy", "") == ec::invalid_config);
  CHECK(cfg.set("broker.subscriber-overflow-policy", "Block") == ec::invalid_config);
  CHECK(cfg.subscriber_overflow_policy() == overflow_policy::block);
}

TEST_CASE("block is not a valid policy for peers or WebSocket clients", "[config]") {
  configuration cfg;
  auto err = cfg.set("broker.peer-overflow-policy", "block");
  CHECK(err.message()
        == R"(broker.peer-overflow-policy: expected one of drop_oldest, drop_newest, )"
           R"(disconnect, got "block")");
  CHECK(cfg.set("broker.web-socket-overflow-policy", "block") == ec::invalid_config);
  CHECK(cfg.peer_overflow_policy() == overflow_policy::disconnect);
  CHECK(cfg.web_socket_overflow_policy() == overflow_policy::disconnect);
}

TEST_CASE("a policy may be written with hyphens and is stored with underscores", "[config]") {
  configuration cfg;
  CHECK_FALSE(cfg.set("broker.peer-overflow-policy", "drop-oldest"));
  CHECK(cfg.peer_overflow_policy() == overflow_policy::drop_oldest);
  CHECK(cfg.get_string("broker.peer-overflow-policy") == "drop_oldest");
  CHECK_FALSE(cfg.set("broker.subscriber-overflow-policy", "drop_newest"));
  CHECK(cfg.subscriber_overflow_policy() == overflow_policy::drop_newest);
}

TEST_CASE("overflow policies convert to and from their names", "[config]") {
  for (auto x : {overflow_policy::block, overflow_policy::drop_oldest,
                 overflow_policy::drop_newest, overflow_policy::disconnect})
    CHECK(parse_overflow_policy(to_string(x)) == x);
  CHECK(to_string(overflow_policy::drop_oldest) == "drop_oldest");
  CHECK(parse_overflow_policy("drop-newest") == overflow_policy::drop_newest);
  CHECK_FALSE(parse_overflow_policy("").has_value());
  CHECK_FALSE(parse_overflow_policy("disconnect ").has_value());
  CHECK_FALSE(parse_overflow_policy("DISCONNECT").has_value());
}

TEST_CASE("a boolean accepts true and false only", "[config]") {
  configuration cfg;
  CHECK_FALSE(cfg.set("broker.disable-ssl", "true"));
  CHECK(cfg.disable_ssl());
  CHECK_FALSE(cfg.set("broker.disable-ssl", "false"));
  CHECK_FALSE(cfg.disable_ssl());
  for (auto text : {"yes", "1", "", "TRUE", "truex"}) {
    INFO("text: " << text);
    CHECK(cfg.set("broker.disable-ssl", text).message()
          == std::string{"broker.disable-ssl: expected true or false, got \""} + text + "\"");
  }
}

TEST_CASE("a port accepts a number or number/tcp and nothing else", "[config]") {
  configuration cfg;
  CHECK_FALSE(cfg.set("broker.port", "9997"));
  CHECK(cfg.port() == 9997);
  CHECK_FALSE(cfg.set("broker.port", "9998/tcp"));
  CHECK(cfg.port() == 9998);
  CHECK_FALSE(cfg.set("broker.port", "0"));
  CHECK(cfg.port() == 0);
  CHECK_FALSE(cfg.set("broker.port", "65535"));
  for (auto text : {"9997/udp", "70000", "65536", "-1", "", "/tcp", "9997/", "9997/tcpx"}) {
    INFO("text: " << text);
    CHECK(contains(cfg.set("broker.port", text).message(),
                   "broker.port: expected a port number 0-65535"));
  }
  CHECK(cfg.port() == 65535);
}

TEST_CASE("a string option stores its text verbatim", "[config]") {
  configuration cfg;
  CHECK_FALSE(cfg.set("broker.ssl.passphrase", "  two words, \"quoted\"  "));
  CHECK(cfg.ssl_passphrase() == "  two words, \"quoted\"  ");
  CHECK_FALSE(cfg.set("broker.ssl.passphrase", ""));
  CHECK(cfg.ssl_passphrase().empty());
}

TEST_CASE("an unknown key is an error that names it", "[config]") {
  configuration cfg;
  auto err = cfg.set("broker.foo", "1");
  CHECK(err == ec::invalid_config);
  CHECK(err.message() == R"(unknown option "broker.foo")");
  CHECK(cfg.set("", "1").message() == R"(unknown option "")");
  CHECK(cfg.set_bool("broker.foo", true) == ec::invalid_config);
  CHECK(cfg.set_count("broker.foo", 1) == ec::invalid_config);
}

TEST_CASE("a misspelled key gets a suggestion", "[config]") {
  configuration cfg;
  CHECK(cfg.set("broker.tll", "1").message()
        == R"(unknown option "broker.tll" (did you mean "broker.ttl"?))");
}

TEST_CASE("typed setters validate type and bounds like set", "[config]") {
  configuration cfg;
  CHECK_FALSE(cfg.set_count("broker.peer-buffer-size", 42));
  CHECK(cfg.peer_buffer_size() == 42);
  CHECK(cfg.set_count("broker.peer-buffer-size", 0).message()
        == "broker.peer-buffer-size: expected an integer between 1 and 16777216, got 0");
  CHECK(cfg.set_count("broker.port", 65536) == ec::invalid_config);
  CHECK(cfg.set_count("broker.disable-ssl", 1) == ec::invalid_config);
  CHECK(cfg.set_bool("broker.ttl", true) == ec::invalid_config);
  CHECK(cfg.set_list("broker.ttl", {"1"}) == ec::invalid_config);
  CHECK_FALSE(cfg.set_bool("broker.disable-forwarding", true));
  CHECK(cfg.disable_forwarding());
  CHECK(cfg.peer_buffer_size() == 42);
}

TEST_CASE("generic getters return a value only for a known key of their type", "[config]") {
  configuration cfg;
  CHECK(cfg.get_count("broker.ttl") == 16u);
  CHECK(cfg.get_count("broker.port") == 0u);
  CHECK(cfg.get_bool("broker.disable-ssl") == false);
  CHECK(cfg.get_string("broker.log-level") == "info");
  CHECK(cfg.get_string("broker.ssl.cafile") == "");
  CHECK_FALSE(cfg.get_count("broker.disable-ssl").has_value());
  CHECK_FALSE(cfg.get_bool("broker.ttl").has_value());
  CHECK_FALSE(cfg.get_string("broker.ttl").has_value());
  CHECK_FALSE(cfg.get_list("broker.ttl").has_value());
  CHECK_FALSE(cfg.get_count("broker.nope").has_value());
}

TEST_CASE("log levels are Broker's console verbosities, quiet to trace", "[config]") {
  configuration cfg;
  for (auto level : {"quiet", "error", "warning", "info", "debug", "trace"}) {
    CHECK_FALSE(cfg.set("broker.log-level", level));
    CHECK(cfg.log_level() == level);
  }
  CHECK(cfg.set("broker.log-level", "verbose").message()
        == R"(broker.log-level: expected one of quiet, error, warning, info, debug, trace, )"
           R"(got "verbose")");
}

// BROKER_CONSOLE_VERBOSITY: configuration_compat.test.cc (Broker spellings).

TEST_CASE("BROKER_METRICS_ENDPOINT_NAME names the endpoint in metrics", "[config]") {
  configuration cfg;
  CHECK(cfg.get_string("broker.metrics.endpoint-name") == "");
  CHECK_FALSE(cfg.load_env([](const char* name) -> const char* {
    return std::string_view{name} == "BROKER_METRICS_ENDPOINT_NAME" ? "worker-1" : nullptr;
  }));
  CHECK(cfg.get_string("broker.metrics.endpoint-name") == "worker-1");
}

TEST_CASE("broker.log-format is text or json", "[config]") {
  configuration cfg;
  CHECK(cfg.get_string("broker.log-format") == "text");
  CHECK_FALSE(cfg.set("broker.log-format", "json"));
  CHECK(cfg.set("broker.log-format", "xml").message()
        == R"(broker.log-format: expected one of text, json, got "xml")");
}

TEST_CASE("configurations are values: copies are independent and compare equal", "[config]") {
  configuration x;
  auto y = x;
  CHECK(x == y);
  REQUIRE_FALSE(y.set("broker.ttl", "3"));
  CHECK(x != y);
  CHECK(x.ttl() == 16);
}

// -- program options ---------------------------------------------------------------------------

namespace {

option_info topics_option() {
  option_info info;
  info.key = "node.topics";
  info.type = option_type::string_list;
  info.help = "topics to subscribe to";
  info.env = "NODE_TOPICS";
  return info;
}

option_info rate_option() {
  option_info info;
  info.key = "rate";
  info.type = option_type::count;
  info.default_value = "100";
  info.help = "messages per second";
  info.short_flag = 'r';
  info.min = 1;
  info.max = 1000000;
  return info;
}

} // namespace

TEST_CASE("a program option works in files, environment and command line", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.add_option(topics_option()));
  REQUIRE_FALSE(cfg.add_option(rate_option()));
  CHECK(cfg.get_list("node.topics") == std::vector<std::string>{});
  CHECK(cfg.get_count("rate") == 100u);
  CHECK_FALSE(cfg.load_string(R"(node { topics = ["/a", '/b', /c/d] })"));
  CHECK(cfg.get_list("node.topics") == std::vector<std::string>{"/a", "/b", "/c/d"});
  CHECK_FALSE(cfg.load_env(fake_env({{"NODE_TOPICS", "/x, /y"}})));
  CHECK(cfg.get_list("node.topics") == std::vector<std::string>{"/x", "/y"});
  CHECK_FALSE(parse(cfg, {"--node.topics=[\"/z\"]", "-r", "7"}));
  CHECK(cfg.get_list("node.topics") == std::vector<std::string>{"/z"});
  CHECK(cfg.get_count("rate") == 7u);
  CHECK(contains(cfg.help_text(), "--node.topics=<list>"));
  CHECK(contains(cfg.help_text(), "-r, --rate=<count>"));
}

TEST_CASE("a list rejects empty elements and malformed literals", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.add_option(topics_option()));
  for (auto text : {"/a,,/b", "/a,", ",", "[/a", "[/a] x", "[[/a]]", "[/a,,/b]"}) {
    INFO("text: " << text);
    CHECK(contains(cfg.set("node.topics", text).message(), "node.topics: expected a list"));
  }
  CHECK_FALSE(cfg.set("node.topics", ""));
  CHECK(cfg.get_list("node.topics") == std::vector<std::string>{});
  CHECK_FALSE(cfg.set("node.topics", "[]"));
  CHECK_FALSE(cfg.set("node.topics", "[/a,]"));
  CHECK(cfg.get_list("node.topics") == std::vector<std::string>{"/a"});
}

TEST_CASE("a bracketed IPv6 address with a port is a list element, not a literal", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.add_option(topics_option()));
  CHECK_FALSE(cfg.set("node.topics", "[::1]:9999"));
  CHECK(cfg.get_list("node.topics") == std::vector<std::string>{"[::1]:9999"});
  CHECK_FALSE(cfg.set("node.topics", "[::1]:1,[fe80::1]:2"));
  CHECK(cfg.get_list("node.topics") == std::vector<std::string>{"[::1]:1", "[fe80::1]:2"});
  CHECK_FALSE(cfg.set("node.topics", "[\"[::1]:1\"]"));
  CHECK(cfg.get_list("node.topics") == std::vector<std::string>{"[::1]:1"});
}

TEST_CASE("add_option rejects clashing or invalid specifications", "[config]") {
  configuration cfg;
  auto with = [](auto change) {
    auto info = rate_option();
    change(info);
    return info;
  };
  CHECK(cfg.add_option(with([](option_info& x) { x.key = "broker.ttl"; })) == ec::invalid_config);
  CHECK(cfg.add_option(with([](option_info& x) { x.key = "a..b"; })) == ec::invalid_config);
  CHECK(cfg.add_option(with([](option_info& x) { x.key = ""; })) == ec::invalid_config);
  CHECK(cfg.add_option(with([](option_info& x) { x.key = "help"; })) == ec::invalid_config);
  CHECK(cfg.add_option(with([](option_info& x) { x.key = "ttl"; })) == ec::invalid_config);
  CHECK(cfg.add_option(with([](option_info& x) { x.short_flag = 'p'; })) == ec::invalid_config);
  CHECK(cfg.add_option(with([](option_info& x) { x.short_flag = 'h'; })) == ec::invalid_config);
  CHECK(cfg.add_option(with([](option_info& x) { x.env = "BROKER_PORT"; }))
        == ec::invalid_config);
  CHECK(cfg.add_option(with([](option_info& x) { x.default_value = "0"; }))
        == ec::invalid_config);
  CHECK(cfg.add_option(with([](option_info& x) { x.min = 9, x.max = 8; }))
        == ec::invalid_config);
  CHECK(cfg.add_option(with([](option_info& x) { x.type = option_type::choice; }))
        == ec::invalid_config);
  CHECK(cfg.program_options().empty());
  CHECK_FALSE(cfg.add_option(rate_option()));
  CHECK(cfg.add_option(rate_option()) == ec::invalid_config);
  CHECK(cfg.program_options().size() == 1);
}

// -- config files --------------------------------------------------------------------------------

TEST_CASE("a config file may nest sections in braces", "[config]") {
  configuration cfg;
  auto err = cfg.load_string(R"(
    broker { disable-ssl = true  web-socket { port = 9997 } }
    broker {
      ttl = 4
      ssl {
        certificate = "/etc/broker/cert.pem"
      }
    }
  )");
  CHECK_FALSE(err);
  CHECK(cfg.disable_ssl());
  CHECK(cfg.web_socket_port() == 9997);
  CHECK(cfg.ttl() == 4);
  CHECK(cfg.ssl_certificate() == "/etc/broker/cert.pem");
}

TEST_CASE("a config file may use INI sections, flat dotted keys and CAF's key = { } form",
          "[config]") {
  configuration cfg;
  auto err = cfg.load_string(R"(
broker.ttl = 8
broker = { disable-forwarding = true, peer-overflow-policy = drop-newest }
[broker]
peer-buffer-size = 100
metrics.port = 9100/tcp
[broker.ssl]
key = /etc/key.pem   # a bare path
[broker.web-socket]
address = ::1
)");
  CHECK(err.message() == "");
  CHECK(cfg.ttl() == 8);
  CHECK(cfg.peer_buffer_size() == 100);
  CHECK(cfg.metrics_port() == 9100);
  CHECK(cfg.ssl_key() == "/etc/key.pem");
  CHECK(cfg.web_socket_address() == "::1");
  CHECK(cfg.disable_forwarding());
  CHECK(cfg.peer_overflow_policy() == overflow_policy::drop_newest);
}

TEST_CASE("config-file strings may be quoted, single-quoted, escaped or bare", "[config]") {
  configuration cfg;
  CHECK_FALSE(cfg.load_string("broker.ssl.passphrase = \"a \\\"b\\\" # c\\\\\"\n"
                              "broker.ssl.cafile = 'it\\'s'\n"));
  CHECK(cfg.ssl_passphrase() == "a \"b\" # c\\");
  CHECK(cfg.ssl_cafile() == "it's");
  CHECK_FALSE(cfg.load_string("broker.ssl.passphrase = abc==  # base64 padding is bare text\n"
                              "broker.ssl.capath = 'x y'"));
  CHECK(cfg.ssl_passphrase() == "abc==");
  CHECK(cfg.ssl_capath() == "x y");
  CHECK_FALSE(cfg.load_string("broker.ssl.key = \"\""));
  CHECK(cfg.ssl_key().empty());
}

TEST_CASE("config files tolerate comments, CRLF, a BOM and blank input", "[config]") {
  configuration cfg;
  CHECK_FALSE(cfg.load_string(""));
  CHECK_FALSE(cfg.load_string("# nothing but a comment"));
  CHECK_FALSE(cfg.load_string("\xEF\xBB\xBF" "broker {\r\n  ttl = 3 # three\r\n}\r\n"));
  CHECK(cfg.ttl() == 3);
  CHECK(cfg == [] {
    configuration expected;
    REQUIRE_FALSE(expected.set("broker.ttl", "3"));
    return expected;
  }());
}

TEST_CASE("a config-file syntax error names the file, line and column", "[config]") {
  auto error_of = [](const char* text) {
    configuration cfg;
    return cfg.load_string(text, "broker.conf").message();
  };
  CHECK(error_of("broker {\n  ssl.key = \"open\n}") == "broker.conf:2:13: unterminated string");
  CHECK(error_of("broker {\n  ttl = 4\n") == R"(broker.conf:1:1: section "broker" is missing its closing '}')");
  CHECK(error_of("broker.ttl = 4\n}\n") == "broker.conf:2:1: unexpected '}' without an open section");
  CHECK(error_of("broker.ttl 4") == R"(broker.conf:1:12: expected '=' or '{' after "broker.ttl", got '4')");
  CHECK(error_of("broker.ttl =\n4") == "broker.conf:1:13: expected a value, got byte 0x0a");
  CHECK(error_of("broker.ttl = 4 5") == R"(broker.conf:1:17: expected '=' or '{' after "5", got end of file)");
  CHECK(error_of("broker.ssl.key = \"a\"b") == R"(broker.conf:1:21: unexpected 'b' after the value of "broker.ssl.key")");
  CHECK(error_of("a = [1, 2") == "broker.conf:1:5: unterminated list (missing ']')");
  CHECK(error_of("a = [[1]]") == "broker.conf:1:6: a list may only hold strings, got '['");
  CHECK(error_of("a..b = 1") == R"(broker.conf:1:1: invalid key "a..b")");
  CHECK(error_of("broker { [broker] }") == "broker.conf:1:10: a [section] header cannot appear inside braces");
  CHECK(error_of("[broker\nttl = 1") == "broker.conf:1:8: expected ']' after the section name, got byte 0x0a");
  CHECK(error_of("ttl = \"\\q\"") == R"(broker.conf:1:9: invalid escape sequence \'q')");
  CHECK(error_of("@") == "broker.conf:1:1: unexpected '@'");
}

TEST_CASE("a key longer than 256 bytes, section prefixes included, is an error", "[config]") {
  auto error_of = [](const std::string& text) {
    configuration cfg;
    return cfg.load_string(text, "broker.conf").message();
  };
  auto longest = std::string(256, 'k');
  CHECK_THAT(error_of(longest + " = 1"), Catch::StartsWith("broker.conf:1:1: unknown option"));
  CHECK(error_of(longest + "k = 1") == "broker.conf:1:1: key longer than 256 bytes");
  CHECK(error_of("[" + std::string(200, 's') + "]\n" + std::string(56, 'k') + " = 1")
        == "broker.conf:2:1: key longer than 256 bytes");
  CHECK(error_of("a {\n  " + std::string(255, 'b') + " { c = 1 } }")
        == "broker.conf:2:3: key longer than 256 bytes");
}

TEST_CASE("a long section over many entries fails at once instead of multiplying memory",
          "[config]") {
  // Found by fuzz/config_file: every entry stored its full key, so 800 KB of input (a
  // 400 KB section name, 100000 entries) asked for 40 GB.
  auto text = "[" + std::string(400'000, 's') + "]\n";
  for (int i = 0; i < 100'000; ++i)
    text += "a=1\n";
  configuration cfg;
  CHECK(cfg.load_string(text, "broker.conf").message()
        == "broker.conf:1:2: key longer than 256 bytes");
  CHECK(cfg == configuration{});
}

TEST_CASE("an unknown key or invalid value in a file names the key and line", "[config]") {
  configuration cfg;
  CHECK(cfg.load_string("broker {\n  ttl = 4\n  foo = 1\n}", "a.conf").message()
        == R"(a.conf:3:3: unknown option "broker.foo")");
  CHECK(cfg.load_string("[broker]\npeer-overflow-policy = block\n", "a.conf").message()
        == "a.conf:2:1: broker.peer-overflow-policy: expected one of drop_oldest, drop_newest, "
           "disconnect, got \"block\"");
  CHECK(cfg.load_string("broker.ttl = [1, 2]", "a.conf").message()
        == "a.conf:1:1: broker.ttl: expected a count, got a list");
  CHECK(cfg.load_string("brocker { scheduler { max-threads = 4 } }", "a.conf").message()
        == R"(a.conf:1:23: unknown option "brocker.scheduler.max-threads" )"
           R"((did you mean "broker.scheduler.max-threads"?))");
}

TEST_CASE("a file with an error changes nothing", "[config]") {
  configuration cfg;
  CHECK(cfg.load_string("broker.ttl = 4\nbroker.port = 1\nbroker.disable-ssl = maybe\n")
        == ec::invalid_config);
  CHECK(cfg == configuration{});
}

TEST_CASE("the last assignment in a file wins", "[config]") {
  configuration cfg;
  CHECK_FALSE(cfg.load_string("broker.ttl = 4\nbroker { ttl = 5 }\n"));
  CHECK(cfg.ttl() == 5);
}

TEST_CASE("load_file reads a file and reports a missing one", "[config]") {
  temp_file file{"broker {\n  port = 4242\n  ttl = 9\n}\n"};
  configuration cfg;
  CHECK_FALSE(cfg.load_file(file.path));
  CHECK(cfg.port() == 4242);
  CHECK(cfg.ttl() == 9);
  auto err = cfg.load_file("/nonexistent/broker.conf");
  CHECK(err == ec::cannot_open_file);
  CHECK(contains(err.message(), "/nonexistent/broker.conf"));
  CHECK(cfg.load_file("/tmp").message() == R"(cannot read config file "/tmp": Is a directory)");
  CHECK(cfg.load_file("/dev/zero").message()
        == R"(config file "/dev/zero" is larger than 4194304 bytes)");
  temp_file bad{"broker.ttl = 0\n"};
  CHECK(cfg.load_file(bad.path).message()
        == bad.path + ":1:1: broker.ttl: expected an integer between 1 and 65535, got \"0\"");
}

// -- environment -------------------------------------------------------------------------------

TEST_CASE("environment variables set the ports, with or without /tcp", "[config]") {
  configuration cfg;
  CHECK_FALSE(cfg.load_env(fake_env({{"BROKER_PORT", "9999"},
                                     {"BROKER_WEB_SOCKET_PORT", "9997/tcp"},
                                     {"BROKER_METRICS_PORT", "9100"}})));
  CHECK(cfg.port() == 9999);
  CHECK(cfg.web_socket_port() == 9997);
  CHECK(cfg.metrics_port() == 9100);
}

TEST_CASE("an invalid environment variable is an error that names the variable", "[config]") {
  configuration cfg;
  CHECK(cfg.load_env(fake_env({{"BROKER_PORT", "9997/udp"}})).message()
        == "BROKER_PORT (broker.port): expected a port number 0-65535, optionally followed "
           "by /tcp, got \"9997/udp\"");
  CHECK(contains(cfg.load_env(fake_env({{"BROKER_WEB_SOCKET_PORT", "70000"}})).message(),
                 "BROKER_WEB_SOCKET_PORT (broker.web-socket.port)"));
  CHECK(contains(cfg.load_env(fake_env({{"BROKER_METRICS_PORT", ""}})).message(),
                 "BROKER_METRICS_PORT"));
  CHECK(cfg.load_env(fake_env({{"BROKER_PORT", "1"}, {"BROKER_METRICS_PORT", "x"}}))
        == ec::invalid_config);
  CHECK(cfg == configuration{});
}

TEST_CASE("unset environment variables leave the options alone", "[config]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.set("broker.port", "5"));
  CHECK_FALSE(cfg.load_env(fake_env({{"BROKER_PORTS", "1"}})));
  CHECK(cfg.port() == 5);
}

// -- command line ------------------------------------------------------------------------------

TEST_CASE("the command line accepts --key=value, --key value and short flags", "[config]") {
  configuration cfg;
  CHECK_FALSE(parse(cfg, {"--broker.ttl=5", "--broker.peer-buffer-size", "77", "-p", "9999",
                          "--broker.ssl.passphrase=", "--broker.log-level", "debug"}));
  CHECK(cfg.ttl() == 5);
  CHECK(cfg.peer_buffer_size() == 77);
  CHECK(cfg.port() == 9999);
  CHECK(cfg.log_level() == "debug");
  CHECK_FALSE(parse(cfg, {"-p8888"}));
  CHECK(cfg.port() == 8888);
  CHECK_FALSE(parse(cfg, {"-p=7777/tcp"}));
  CHECK(cfg.port() == 7777);
}

TEST_CASE("boolean flags need no value but accept =true and =false", "[config]") {
  configuration cfg;
  std::vector<std::string> rest;
  CHECK_FALSE(parse(cfg, {"--broker.disable-ssl", "file.txt"}, &rest));
  CHECK(cfg.disable_ssl());
  CHECK(rest == std::vector<std::string>{"file.txt"});
  CHECK_FALSE(parse(cfg, {"--broker.disable-ssl=false", "--broker.disable-forwarding=true"}));
  CHECK_FALSE(cfg.disable_ssl());
  CHECK(cfg.disable_forwarding());
  CHECK(parse(cfg, {"--broker.disable-ssl=yes"}).message()
        == R"(broker.disable-ssl: expected true or false, got "yes")");
}

TEST_CASE("command-line keys may omit the broker prefix", "[config]") {
  configuration cfg;
  CHECK_FALSE(parse(cfg, {"--ttl=3", "--port", "1234", "--web-socket.port=9997",
                          "--disable-ssl"}));
  CHECK(cfg.ttl() == 3);
  CHECK(cfg.port() == 1234);
  CHECK(cfg.web_socket_port() == 9997);
  CHECK(cfg.disable_ssl());
}

TEST_CASE("an unknown flag is an error that names it", "[config]") {
  configuration cfg;
  CHECK(parse(cfg, {"--frobnicate"}).message() == R"(unknown option "--frobnicate")");
  CHECK(parse(cfg, {"--frobnicate=1"}).message() == R"(unknown option "--frobnicate")");
  CHECK(parse(cfg, {"-x"}).message() == R"(unknown option "-x")");
  CHECK(parse(cfg, {"--broker.tll=1"}).message()
        == R"(unknown option "--broker.tll" (did you mean "--broker.ttl"?))");
  CHECK(parse(cfg, {"--tll=1"}).message()
        == R"(unknown option "--tll" (did you mean "--broker.ttl"?))");
}

TEST_CASE("a flag without its value is an error", "[config]") {
  configuration cfg;
  CHECK(parse(cfg, {"--broker.ttl"}).message() == R"("--broker.ttl" needs a value)");
  CHECK(parse(cfg, {"-p"}).message() == R"("-p" needs a value)");
  CHECK(parse(cfg, {"--config-file"}).message() == R"("--config-file" needs a value)");
  CHECK(parse(cfg, {"--broker.ttl="}).message()
        == R"(broker.ttl: expected a positive integer, got "")");
}

TEST_CASE("positional arguments go to the remainder or are an error", "[config]") {
  configuration cfg;
  std::vector<std::string> rest{"stale"};
  CHECK_FALSE(parse(cfg, {"a", "--ttl=2", "-", "--", "--ttl=9", "-p"}, &rest));
  CHECK(rest == std::vector<std::string>{"a", "-", "--ttl=9", "-p"});
  CHECK(cfg.ttl() == 2);
  CHECK(parse(cfg, {"a"}).message() == R"(unexpected argument "a")");
  CHECK_FALSE(parse(cfg, {}));
  CHECK_FALSE(cfg.parse_args(0, nullptr));
}

TEST_CASE("help flags set help_requested even next to an error", "[config]") {
  for (auto flag : {"-h", "-?", "--help"}) {
    configuration cfg;
    CHECK_FALSE(parse(cfg, {flag}));
    CHECK(cfg.help_requested());
    CHECK(parse(cfg, {"--bogus", flag}) == ec::invalid_config);
    CHECK(cfg.help_requested());
  }
  configuration cfg;
  std::vector<std::string> rest;
  CHECK_FALSE(parse(cfg, {"--", "--help"}, &rest));
  CHECK_FALSE(cfg.help_requested());
}

TEST_CASE("a failed command line changes no option", "[config]") {
  configuration cfg;
  CHECK(parse(cfg, {"--ttl=3", "--port=70000"}) == ec::invalid_config);
  CHECK(cfg == configuration{});
  CHECK(cfg.config_file().empty());
}

TEST_CASE("the --config-file option is recorded by parse_args and read by load", "[config]") {
  temp_file file{"broker.ttl = 7\n"};
  configuration cfg;
  CHECK_FALSE(parse(cfg, {"--config-file", file.path}));
  CHECK(cfg.config_file() == file.path);
  CHECK(cfg.ttl() == 16);
  args a{{"--config-file=" + file.path}};
  CHECK_FALSE(cfg.load(a.argc(), a.argv()));
  CHECK(cfg.ttl() == 7);
}

TEST_CASE("sources override in the order defaults, file, environment, command line",
          "[config]") {
  temp_file file{"broker {\n port = 1\n web-socket.port = 2\n metrics.port = 3\n ttl = 4\n}\n"};
  std::string env_backup[3];
  const char* names[] = {"BROKER_PORT", "BROKER_WEB_SOCKET_PORT", "BROKER_METRICS_PORT"};
  bool had[3];
  for (int i = 0; i < 3; ++i) {
    auto old = std::getenv(names[i]);
    had[i] = old != nullptr;
    if (old)
      env_backup[i] = old;
    unsetenv(names[i]);
  }
  setenv("BROKER_PORT", "10", 1);
  setenv("BROKER_WEB_SOCKET_PORT", "20/tcp", 1);
  configuration cfg;
  std::vector<std::string> rest;
  args a{{"-p", "100", "--config-file", file.path, "positional"}};
  auto err = cfg.load(a.argc(), a.argv(), &rest);
  for (int i = 0; i < 3; ++i) {
    if (had[i])
      setenv(names[i], env_backup[i].c_str(), 1);
    else
      unsetenv(names[i]);
  }
  CHECK_FALSE(err);
  CHECK(cfg.port() == 100);           // command line beats environment and file
  CHECK(cfg.web_socket_port() == 20); // environment beats file
  CHECK(cfg.metrics_port() == 3);     // file beats default
  CHECK(cfg.ttl() == 4);
  CHECK(cfg.peer_buffer_size() == 2048);
  CHECK(rest == std::vector<std::string>{"positional"});
}

TEST_CASE("load reports a bad config file and changes nothing", "[config]") {
  temp_file file{"broker.ttl = 4\nbroker.nope = 1\n"};
  configuration cfg;
  args a{{"--help", "--config-file=" + file.path, "--ttl=5"}};
  auto err = cfg.load(a.argc(), a.argv());
  CHECK(err.message() == file.path + R"(:2:1: unknown option "broker.nope")");
  CHECK(cfg.help_requested());
  CHECK(cfg.ttl() == 16);
}

// -- help and docs -----------------------------------------------------------------------------

TEST_CASE("the help text lists every key with its type, default and variable", "[config]") {
  configuration cfg;
  auto help = cfg.help_text();
  for (const auto& info : configuration::options()) {
    INFO("key: " << info.key);
    CHECK(contains(help, "--" + info.key));
    CHECK(contains(help, info.help));
    if (!info.env.empty())
      CHECK(contains(help, "env " + info.env));
  }
  CHECK(contains(help, "-p, --broker.port=<port>"));
  CHECK(contains(help, "--broker.disable-ssl[=<bool>]"));
  CHECK(contains(help, "(default: 2048; 1-16777216)"));
  CHECK(contains(help, "--help"));
  CHECK(contains(help, "--config-file=<path>"));
  CHECK(contains(help, "\nbroker.ssl:\n"));
}

TEST_CASE("doc/configuration.md contains the table generated from the options", "[config]") {
  std::string here = __FILE__;
  // __FILE__ is absolute in CMake builds; a relative one is taken from the working directory.
  auto root = here.substr(0, here.rfind("libbroker/"));
  std::ifstream in{root + "doc/configuration.md"};
  if (!in) {
    WARN("doc/configuration.md not found next to " << here << "; skipped");
    return;
  }
  std::string doc{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  auto table = markdown_table();
  INFO("paste this table into doc/configuration.md:\n" << table);
  CHECK(contains(doc, table));
}

// -- hostile input -----------------------------------------------------------------------------

namespace {

constexpr const char* sample_file = R"(# sample
broker {
  disable-ssl = true
  web-socket { port = 9997, address = "127.0.0.1" }
  ssl.passphrase = 'p\'w'
}
broker.ttl = 4
[broker.metrics]
port = 9100/tcp
)";

// Either a value or an error, never a crash; and an error changes nothing.
void check_total(const std::string& text) {
  configuration cfg;
  REQUIRE_FALSE(cfg.add_option(topics_option()));
  auto before = cfg;
  if (auto err = cfg.load_string(text)) {
    CHECK(err == ec::invalid_config);
    CHECK(cfg == before);
  }
}

} // namespace

TEST_CASE("random bytes as a config file yield a value or an error", "[config]") {
  std::mt19937 rng{20240601};
  const std::string alphabet = "broker.ttl-sp{}[]=\"'#,\\\n\r\t 0123456789/\x01\xff";
  for (int round = 0; round < 3000; ++round) {
    std::uniform_int_distribution<size_t> len{0, 200};
    std::string text(len(rng), '\0');
    auto structured = round % 2 == 0;
    for (auto& c : text) {
      if (structured)
        c = alphabet[std::uniform_int_distribution<size_t>{0, alphabet.size() - 1}(rng)];
      else
        c = static_cast<char>(std::uniform_int_distribution<int>{0, 255}(rng));
    }
    check_total(text);
  }
}

TEST_CASE("every truncation and mutation of a valid config file yields a value or an error",
          "[config]") {
  std::string sample = sample_file;
  {
    configuration cfg;
    REQUIRE_FALSE(cfg.load_string(sample));
    CHECK(cfg.web_socket_port() == 9997);
    CHECK(cfg.ssl_passphrase() == "p'w");
  }
  for (size_t n = 0; n <= sample.size(); ++n)
    check_total(sample.substr(0, n));
  std::mt19937 rng{7};
  for (int round = 0; round < 2000; ++round) {
    auto text = sample;
    std::uniform_int_distribution<size_t> pos{0, text.size() - 1};
    for (int edits = 0; edits < 3; ++edits) {
      auto i = pos(rng) % text.size();
      switch (rng() % 3) {
        case 0:
          text[i] = static_cast<char>(rng());
          break;
        case 1:
          text.erase(i, 1);
          break;
        default:
          text.insert(i, 1, "{}[]\"'#=,\n"[rng() % 10]);
      }
      if (text.empty())
        break;
    }
    check_total(text);
  }
}

TEST_CASE("random command lines and variables yield a value or an error", "[config]") {
  std::mt19937 rng{99};
  const std::vector<std::string> pieces = {"--", "-", "-p", "--ttl", "=", "9997", "/tcp", "x",
                                           "--broker.disable-ssl", "--help", "-h", "--config-file",
                                           "true", "\xff", "--broker.", "[", "]", "/udp"};
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::string> argv_strings;
    auto count = rng() % 6;
    for (size_t i = 0; i < count; ++i) {
      std::string arg;
      auto parts = rng() % 4;
      for (size_t j = 0; j < parts; ++j)
        arg += pieces[rng() % pieces.size()];
      argv_strings.push_back(arg);
    }
    configuration cfg;
    std::vector<std::string> rest;
    auto before = cfg;
    if (parse(cfg, argv_strings, round % 2 == 0 ? &rest : nullptr))
      CHECK(cfg == before);
    std::string value = argv_strings.empty() ? "" : argv_strings.front();
    if (cfg.load_env(fake_env({{"BROKER_PORT", value}})))
      CHECK(cfg.port() == before.port());
  }
}
