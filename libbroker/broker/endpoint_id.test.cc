#include "broker/endpoint_id.hh"

#include <catch2/catch.hpp>

#include <set>
#include <string_view>

using namespace broker;
using namespace std::literals;

TEST_CASE("an endpoint id prints as lowercase 8-4-4-4-12 hex in wire byte order",
          "[endpoint_id]") {
  // doc/protocol/peering.md §8.
  endpoint_id::bytes_type bytes{0x92, 0x5c, 0x91, 0x10, 0x5b, 0x87, 0x57, 0xd9,
                                0x9d, 0x80, 0xb6, 0x55, 0x68, 0xe8, 0x7a, 0x44};
  endpoint_id id{bytes};
  CHECK(to_string(id) == "925c9110-5b87-57d9-9d80-b65568e87a44");
  CHECK(endpoint_id::parse("925c9110-5b87-57d9-9d80-b65568e87a44") == id);
}

TEST_CASE("endpoint id parsing accepts either case and surrounding whitespace",
          "[endpoint_id]") {
  auto id = endpoint_id::parse("925c9110-5b87-57d9-9d80-b65568e87a44");
  REQUIRE(id);
  CHECK(endpoint_id::parse("925C9110-5B87-57D9-9D80-B65568E87A44") == id);
  CHECK(endpoint_id::parse("  925c9110-5b87-57d9-9d80-b65568e87a44\n") == id);
  CHECK(endpoint_id::parse("\t925c9110-5b87-57d9-9d80-b65568e87a44 ") == id);
}

TEST_CASE("the all-zero endpoint id parses and is nil", "[endpoint_id]") {
  auto id = endpoint_id::parse("00000000-0000-0000-0000-000000000000");
  REQUIRE(id);
  CHECK(id->is_nil());
  CHECK(endpoint_id{}.is_nil());
  CHECK(to_string(endpoint_id{}) == "00000000-0000-0000-0000-000000000000");
}

TEST_CASE("endpoint id parsing rejects bad layouts and versions", "[endpoint_id]") {
  for (auto text : {""sv, "   "sv, "925c9110-5b87-57d9-9d80-b65568e87a4"sv,
                    "925c9110-5b87-57d9-9d80-b65568e87a444"sv,
                    "925c91105b8757d99d80b65568e87a44"sv,
                    "925c9110-5b8757d9-9d80-b65568e87a44-"sv,
                    "925c911-05b87-57d9-9d80-b65568e87a44"sv,
                    "925c9110-5b87-57d9-9d80-b65568e87a4g"sv,
                    "{925c9110-5b87-57d9-9d80-b65568e87a44}"sv,
                    "925c9110-5b87-07d9-9d80-b65568e87a44"sv,
                    "925c9110-5b87-67d9-9d80-b65568e87a44"sv,
                    "925c9110-5b87-f7d9-9d80-b65568e87a44"sv,
                    "925c9110 5b87 57d9 9d80 b65568e87a44"sv}) {
    INFO("input: \"" << text << '"');
    CHECK_FALSE(endpoint_id::parse(text).has_value());
  }
  CHECK(endpoint_id::parse("925c9110-5b87-17d9-9d80-b65568e87a44"));
  CHECK(endpoint_id::parse("925c9110-5b87-47d9-9d80-b65568e87a44"));
}

TEST_CASE("random endpoint ids are distinct version-4 UUIDs", "[endpoint_id]") {
  std::set<endpoint_id> seen;
  for (int i = 0; i < 1000; ++i) {
    auto id = endpoint_id::random();
    CHECK((id.bytes()[6] >> 4) == 4);
    CHECK((id.bytes()[8] & 0xc0) == 0x80);
    CHECK_FALSE(id.is_nil());
    CHECK(endpoint_id::parse(to_string(id)) == id);
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("endpoint ids order bytewise", "[endpoint_id]") {
  auto a = *endpoint_id::parse("00000000-0000-4000-8000-000000000001");
  auto b = *endpoint_id::parse("00000000-0000-4000-8000-000000000002");
  auto c = *endpoint_id::parse("ff000000-0000-4000-8000-000000000000");
  CHECK(a < b);
  CHECK(b < c);
}
