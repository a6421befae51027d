// Byte-exact vectors of Broker's store commands (doc/protocol/stores.md §4 lists the same
// ones), and the decoder's behaviour on malformed, truncated and hostile input.

#include "broker/internal/store/store_wire.hh"

#include "broker/internal/codec/bin.test.hh"
#include "broker/internal/codec/hex.hh"

#include <catch2/catch.hpp>

#include <random>

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::store_wire;
using namespace std::chrono_literals;

namespace {

// Hex test vectors: the bin codec tests' helpers.
using bin::test::from_hex;
using bin::test::to_hex;

/// For ids spelled right in this file (runs before any test: no REQUIRE here).
endpoint_id parse_id(const char* text) {
  return endpoint_id::parse(text).value_or(endpoint_id{});
}

// The entities of the vectors: a Broker master M (actor 42 on Broker's node B) and a clone
// C (object 7 on our node O).
const auto node_b = parse_id("925c9110-5b87-57d9-9d80-b65568e87a44");
const auto node_o = parse_id("c0551e8d-392b-509b-a47b-ae46f75befac");
const entity_id M{node_b, 42};
const entity_id C{node_o, 7};
const entity_id nil_entity{};

#define HEX_M "925c91105b8757d99d80b65568e87a44 000000000000002a "
#define HEX_C "c0551e8d392b509ba47bae46f75befac 0000000000000007 "
#define HEX_NIL "00000000000000000000000000000000 0000000000000000 "

struct vector_case {
  const char* name;
  command cmd;
  const char* hex;
};

std::shared_ptr<const snapshot> one_entry() {
  return std::make_shared<const snapshot>(snapshot{{data{"a"}, data{count{1}}}});
}

std::vector<vector_case> vectors() {
  return {
    {"nack{[0]}: a clone asks to attach", command{0, C, nil_entity, nack{{0}}},
     "0000000000000000 " HEX_C HEX_NIL "0b 01 0000000000000000"},
    {"ack_clone: offset 1, 5 ticks, {\"a\": 1}",
     command{1, M, C, ack_clone{1, 5, one_entry()}},
     "0000000000000001 " HEX_M HEX_C "0c 0000000000000001 0005 01 050161 020000000000000001"},
    {"put without expiry",
     command{2, M, nil_entity, put{data{"a"}, data{count{2}}, std::nullopt, C}},
     "0000000000000002 " HEX_M HEX_NIL "00 050161 020000000000000002 00 " HEX_C},
    {"put with an expiry of 5 s",
     command{2, M, nil_entity, put{data{"a"}, data{count{2}}, timespan{5s}, C}},
     "0000000000000002 " HEX_M HEX_NIL "00 050161 020000000000000002 01 000000012a05f200 " HEX_C},
    {"put_unique",
     command{3, C, M, put_unique{data{"k"}, data{integer{-1}}, std::nullopt, C, 9, C}},
     "0000000000000003 " HEX_C HEX_M "01 05016b 03ffffffffffffffff 00 " HEX_C
     "0000000000000009 " HEX_C},
    {"put_unique_result", command{4, M, nil_entity, put_unique_result{true, C, 9, M}},
     "0000000000000004 " HEX_M HEX_NIL "02 01 " HEX_C "0000000000000009 " HEX_M},
    {"erase", command{5, M, nil_entity, erase{data{"a"}, C}},
     "0000000000000005 " HEX_M HEX_NIL "03 050161 " HEX_C},
    {"expire", command{6, M, nil_entity, expire{data{"a"}, M}},
     "0000000000000006 " HEX_M HEX_NIL "04 050161 " HEX_M},
    {"add (insert into a set)",
     command{4, C, M, add{data{"s"}, data{"x"}, data::type::set, std::nullopt, C}},
     "0000000000000004 " HEX_C HEX_M "05 050173 050178 0c 00 " HEX_C},
    {"subtract", command{5, C, M, subtract{data{"n"}, data{count{1}}, std::nullopt, C}},
     "0000000000000005 " HEX_C HEX_M "06 05016e 020000000000000001 00 " HEX_C},
    {"clear", command{6, C, M, clear{C}}, "0000000000000006 " HEX_C HEX_M "07 " HEX_C},
    {"attach_writer", command{0, C, M, attach_writer{1, 5}},
     "0000000000000000 " HEX_C HEX_M "08 0000000000000001 0005"},
    {"keepalive", command{0, M, nil_entity, keepalive{6}},
     "0000000000000000 " HEX_M HEX_NIL "09 0000000000000006"},
    {"cumulative_ack", command{0, M, C, cumulative_ack{1}},
     "0000000000000000 " HEX_M HEX_C "0a 0000000000000001"},
    {"nack{[3, 4]}", command{0, C, M, nack{{3, 4}}},
     "0000000000000000 " HEX_C HEX_M "0b 02 0000000000000003 0000000000000004"},
    {"ack_clone with an empty snapshot", command{7, M, C, ack_clone{7, 10, nullptr}},
     "0000000000000007 " HEX_M HEX_C "0c 0000000000000007 000a 00"},
    {"retransmit_failed", command{0, M, C, retransmit_failed{3}},
     "0000000000000000 " HEX_M HEX_C "0d 0000000000000003"},
  };
}

std::string error_text(std::string_view bytes) {
  auto result = decode(bytes);
  REQUIRE_FALSE(result);
  CHECK(result.error_value() == ec::invalid_message);
  return result.error_value().message();
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("store commands encode to Broker's bytes and decode back", "[store_wire]") {
  for (auto& v : vectors()) {
    INFO(v.name);
    auto expected_bytes = from_hex(v.hex);
    auto encoded = encode(v.cmd);
    REQUIRE(encoded);
    CHECK(to_hex(*encoded) == to_hex(expected_bytes));
    auto decoded = decode(expected_bytes);
    REQUIRE(decoded);
    CHECK(same(*decoded, v.cmd));
    CHECK(decoded->content.index() == v.cmd.content.index());
  }
}

TEST_CASE("store command kinds carry Broker's tags", "[store_wire]") {
  CHECK(tag_of(put{}) == tag::action);
  CHECK(tag_of(put_unique_result{}) == tag::action);
  CHECK(tag_of(clear{}) == tag::action);
  CHECK(tag_of(attach_writer{}) == tag::producer_control);
  CHECK(tag_of(keepalive{}) == tag::producer_control);
  CHECK(tag_of(ack_clone{}) == tag::producer_control);
  CHECK(tag_of(retransmit_failed{}) == tag::producer_control);
  CHECK(tag_of(cumulative_ack{}) == tag::consumer_control);
  CHECK(tag_of(nack{}) == tag::consumer_control);
  CHECK(std::string{kind_name(ack_clone{})} == "ack_clone");
  CHECK(num_kinds == 14);
}

TEST_CASE("every truncation of a store command is an error naming the offset",
          "[store_wire]") {
  for (auto& v : vectors()) {
    auto bytes = from_hex(v.hex);
    for (size_t n = 0; n < bytes.size(); ++n) {
      INFO(v.name << ", first " << n << " bytes");
      auto text = error_text(std::string_view{bytes}.substr(0, n));
      CHECK(contains(text, "at offset"));
    }
  }
  CHECK(contains(error_text(""), "truncated seq at offset 0"));
  CHECK(contains(error_text(from_hex("0000000000000000 c055")), "truncated sender entity"));
}

TEST_CASE("a store command with trailing bytes is rejected", "[store_wire]") {
  auto bytes = from_hex("0000000000000000 " HEX_M HEX_C "0a 0000000000000001") + '\0';
  CHECK(contains(error_text(bytes), "1 trailing bytes at offset 65"));
}

TEST_CASE("malformed store command fields are rejected with what was wrong", "[store_wire]") {
  auto head = [](const char* kind) {
    return from_hex(std::string{"0000000000000000 " HEX_C HEX_M} + kind);
  };
  CHECK(contains(error_text(head("0e")), "unknown kind 14 at offset 56"));
  CHECK(contains(error_text(head("ff")), "unknown kind 255"));
  // An expiry flag other than 0 or 1.
  CHECK(contains(error_text(head("00 050161 020000000000000001 02") + std::string(24, '\0')),
                 "expiry flag is 2"));
  // put_unique_result.inserted other than 0 or 1.
  CHECK(contains(error_text(head("02 07") + std::string(56, '\0')), "inserted is 7"));
  // add.init_type beyond the 15 data types.
  CHECK(contains(error_text(head("05 050161 020000000000000001 0f 00")
                           + std::string(24, '\0')),
                 "init_type 15 is no data type"));
  // A data field with an unknown tag.
  CHECK(contains(error_text(head("03 0f") + std::string(24, '\0')), "key:"));
  // A nack count that the bytes cannot hold, and a varbyte of six bytes.
  CHECK(contains(error_text(head("0b ffffffff0f")), "nack count 4294967295 exceeds"));
  CHECK(contains(error_text(head("0b 808080808001")), "bad nack count"));
  // A snapshot count that the bytes cannot hold.
  CHECK(contains(error_text(head("0c 0000000000000001 0005 7f 0000")), "snapshot count 127"));
}

TEST_CASE("an ack_clone that repeats a snapshot key is rejected, as Broker does",
          "[store_wire]") {
  auto bytes = from_hex("0000000000000001 " HEX_M HEX_C
                     "0c 0000000000000001 0005 03 050161 00 050162 00 050161 0101");
  CHECK(contains(error_text(bytes), "duplicate snapshot key at offset"));
}

TEST_CASE("deeply nested values inside a store command are bounded", "[store_wire]") {
  std::string key;
  for (int i = 0; i < 200; ++i)
    key += "\x0e\x01"; // vector of one element, 200 levels
  key.push_back('\0');
  auto bytes = from_hex("0000000000000005 " HEX_M HEX_NIL "03") + key + from_hex(HEX_C);
  CHECK(contains(error_text(bytes), "nesting deeper than 128"));
  auto shallow = decode(bytes, 256);
  CHECK(shallow);
}

TEST_CASE("decoding random and mutated bytes as store commands never crashes",
          "[store_wire]") {
  auto seed = GENERATE(1u, 2u, 3u);
  std::mt19937_64 rng{seed};
  auto samples = vectors();
  size_t accepted = 0;
  for (int k = 0; k < 20000; ++k) {
    std::string bytes;
    if (k % 4 == 0) {
      bytes.resize(rng() % 120);
      for (auto& c : bytes)
        c = static_cast<char>(rng());
    } else {
      bytes = from_hex(samples[rng() % samples.size()].hex);
      auto flips = 1 + rng() % 3;
      for (size_t i = 0; i < flips; ++i)
        bytes[rng() % bytes.size()] = static_cast<char>(rng());
      if (rng() % 5 == 0)
        bytes.resize(rng() % (bytes.size() + 1));
    }
    auto result = decode(bytes);
    if (!result) {
      CHECK(result.error_value() == ec::invalid_message);
      continue;
    }
    ++accepted;
    // What the decoder accepts, the encoder writes in canonical form (minimal varbytes,
    // sorted sets), which decodes to the same command.
    auto again = encode(*result);
    REQUIRE(again);
    auto back = decode(*again);
    REQUIRE(back);
    if (!same(*back, *result))
      FAIL("re-encoding changes " << to_hex(bytes));
  }
  CHECK(accepted > 0);
}

TEST_CASE("entity digests tell entities apart", "[store_wire]") {
  CHECK(digest(M) != digest(C));
  CHECK(digest(M) != digest(entity_id{node_b, 43}));
  CHECK(digest(M) == digest(entity_id{node_b, 42}));
  CHECK(to_string(nil_entity) == "nil");
  CHECK(to_string(C) == "c0551e8d-392b-509b-a47b-ae46f75befac:7");
}
