// broker-store's literals against the table python -m brokerclient is tested with too
// (tests/data/literals.json, doc/literals.md): one syntax for both tools.

#include "values.hh"

#include <broker/json.hh>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

using broker_store::parse_value;

namespace {

nlohmann::json literal_table() {
  std::ifstream in{BROKER_LITERALS_TABLE};
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

} // namespace

TEST_CASE("every word of the shared literal table parses to its value", "[literals]") {
  auto table = literal_table();
  REQUIRE(table["values"].size() > 30);
  for (auto& entry : table["values"]) {
    auto word = entry["word"].get<std::string>();
    INFO("word: " << word);
    auto want = broker::from_json(entry["value"].dump());
    REQUIRE(want);
    auto got = parse_value(word);
    REQUIRE(got);
    CHECK(broker::to_json(*got) == broker::to_json(*want));
    CHECK(*got == *want);
  }
}

TEST_CASE("every error word of the shared literal table is refused", "[literals]") {
  auto table = literal_table();
  REQUIRE(table["errors"].size() > 5);
  for (auto& entry : table["errors"]) {
    auto word = entry["word"].get<std::string>();
    INFO("word: " << word);
    auto got = parse_value(word);
    REQUIRE_FALSE(got);
    auto code = got.error_value().code();
    CHECK((code == broker::ec::invalid_json || code == broker::ec::invalid_data));
    CHECK(!got.error_value().message().empty());
  }
}

TEST_CASE("a word that starts like a number but is none says how to write a string",
          "[literals]") {
  auto got = parse_value("1.5.3");
  REQUIRE_FALSE(got);
  CHECK(got.error_value().message().find("quote it for a string: '\"1.5.3\"'")
        != std::string::npos);
}
