// Secret options (option_info::secret): set and used like any option, but no printer
// shows their values: dump(), error messages, the help text.

#include "broker/configuration.hh"
#include "broker/configuration.test.hh"

#include <catch2/catch.hpp>

#include <string>

using namespace broker;
using namespace broker::test;

namespace {

constexpr const char* passphrase = "hunter2-do-not-print";

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

option_info secret_count(std::string key) {
  option_info info;
  info.key = std::move(key);
  info.type = option_type::count;
  info.default_value = "0";
  info.min = 0;
  info.max = 100;
  info.help = "a secret number";
  info.secret = true;
  return info;
}

} // namespace

TEST_CASE("the table marks the passphrase and the CURVE secret keys as secret, and only "
          "those",
          "[config][secrets]") {
  for (const auto& info : configuration::options()) {
    INFO(info.key);
    CHECK(info.secret
          == (info.key == "broker.ssl.passphrase"
              || info.key == "broker.zeromq.curve-server-secret-key"
              || info.key == "broker.zeromq.curve-client-secret-key"));
  }
}

TEST_CASE("dump() shows that a secret is set, never its value", "[config][secrets]") {
  configuration cfg;
  temp_file file{std::string{"broker.ssl.passphrase = \""} + passphrase + "\"\nbroker.ttl = 5\n"};
  args a{{"--config-file", file.path}};
  REQUIRE_FALSE(cfg.load(a.argc(), a.argv()));
  REQUIRE(cfg.ssl_passphrase() == passphrase); // The program still gets it.
  auto text = cfg.dump();
  INFO(text);
  CHECK_FALSE(contains(text, passphrase));
  CHECK(contains(text, "# broker.ssl.passphrase = <secret, not shown>"));
  CHECK(contains(text, "# file " + file.path + ":1:1"));
  // The text reads back to the same configuration except for the secret.
  configuration fresh;
  REQUIRE_FALSE(fresh.load_string(text, "dump"));
  CHECK(fresh.ttl() == 5);
  CHECK(fresh.ssl_passphrase().empty());
  REQUIRE_FALSE(fresh.set("broker.ssl.passphrase", passphrase));
  CHECK(fresh.ssl_passphrase() == cfg.ssl_passphrase());
}

TEST_CASE("an unset secret dumps as an ordinary empty value", "[config][secrets]") {
  configuration cfg;
  auto text = cfg.dump();
  CHECK(contains(text, "\nbroker.ssl.passphrase = \"\""));
  CHECK_FALSE(contains(text, "<secret, not shown>"));
}

TEST_CASE("a secret on the command line works, with a notice that others can read it",
          "[config][secrets]") {
  configuration cfg;
  REQUIRE_FALSE(parse(cfg, {std::string{"--broker.ssl.passphrase="} + passphrase}));
  CHECK(cfg.ssl_passphrase() == passphrase);
  REQUIRE(cfg.notices().size() == 1);
  CHECK(contains(cfg.notices()[0], "broker.ssl.passphrase is given on the command line"));
  CHECK_FALSE(contains(cfg.notices()[0], passphrase));
  CHECK_FALSE(contains(cfg.dump(), passphrase));
  // An empty one reveals nothing and gets no notice.
  configuration other;
  REQUIRE_FALSE(parse(other, {"--broker.ssl.passphrase="}));
  CHECK(other.notices().empty());
}

TEST_CASE("a program's secret option is masked everywhere, errors included",
          "[config][secrets]") {
  configuration cfg;
  REQUIRE_FALSE(cfg.add_option(secret_count("pin")));
  REQUIRE_FALSE(cfg.set("pin", "42"));
  CHECK_FALSE(contains(cfg.dump(), "pin = 42"));
  CHECK(contains(cfg.dump(), "# pin = <secret, not shown>"));
  // A value that does not parse is not quoted back, from any source.
  auto err = cfg.set("pin", "4711-secret");
  REQUIRE(err);
  CHECK(contains(err.message(), "pin: "));
  CHECK(contains(err.message(), "not shown"));
  CHECK_FALSE(contains(err.message(), "4711-secret"));
  err = parse(cfg, {"--pin=4711-secret"});
  REQUIRE(err);
  CHECK_FALSE(contains(err.message(), "4711-secret"));
  err = cfg.load_string("pin = 4711-secret\n", "node.cfg");
  REQUIRE(err);
  CHECK(contains(err.message(), "node.cfg:1:1"));
  CHECK_FALSE(contains(err.message(), "4711-secret"));
  err = cfg.set_count("pin", 4711);
  REQUIRE(err);
  CHECK_FALSE(contains(err.message(), "4711"));
  CHECK(cfg.get_count("pin") == 42u);
}

TEST_CASE("the help text marks secrets", "[config][secrets]") {
  configuration cfg;
  auto help = cfg.help_text();
  auto line_start = help.find("--broker.ssl.passphrase");
  REQUIRE(line_start != std::string::npos);
  // The description may wrap onto the next line: look at both.
  auto two_lines = help.substr(line_start, help.find('\n', help.find('\n', line_start) + 1)
                                             - line_start);
  CHECK(contains(two_lines, "secret: never printed"));
}
