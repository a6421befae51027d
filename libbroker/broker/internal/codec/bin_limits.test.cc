#include "broker/internal/codec/bin.hh"
#include "broker/internal/codec/bin.test.hh"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

// Robustness of the bin codec: nesting and size limits, round trips of random values, and fuzzing
// with random and mutated inputs. The vectors of doc/protocol/binary.md §9 live in bin.test.cc.

using namespace broker;
using namespace broker::internal::bin::test;
using namespace std::literals;
namespace bin = broker::internal::bin;

namespace {

std::string nested_vectors(size_t depth) {
  std::string bytes;
  for (size_t n = 0; n < depth; ++n)
    bytes += "\x0e\x01"s;
  bytes += '\x00';
  return bytes;
}

data nested_value(size_t depth) {
  data result;
  for (size_t n = 0; n < depth; ++n)
    result = data{vector{std::move(result)}};
  return result;
}

// -- random values ----------------------------------------------------------------------------

class value_generator {
public:
  explicit value_generator(uint32_t seed) : rng_(seed) {}

  // `in_sorted` is set for set elements and table keys, where a NaN next to another real is
  // not encodable (doc/protocol/binary.md §5), so those never get NaN.
  data next(size_t depth, bool in_sorted = false) {
    auto max_tag = depth == 0 ? 11 : 14;
    switch (pick(0, max_tag)) {
      case 0:
        return data{};
      case 1:
        return data{pick(0, 1) == 1};
      case 2:
        return c(rng_());
      case 3:
        return i(static_cast<int64_t>(rng_()));
      case 4:
        return data{real_value(in_sorted)};
      case 5:
        return data{bytes()};
      case 6:
        return data{address{address_bytes()}};
      case 7: {
        auto network = address{address_bytes()};
        auto raw = static_cast<uint8_t>(pick(network.is_v4() ? 96 : 0, 128));
        return data{*subnet::from_raw(network, raw)};
      }
      case 8:
        return data{port{static_cast<uint16_t>(pick(0, 65535)),
                         static_cast<port::protocol>(pick(0, 3))}};
      case 9:
        return ts(static_cast<int64_t>(rng_()));
      case 10:
        return span(static_cast<int64_t>(rng_()));
      case 11:
        return e(bytes());
      case 12: {
        set xs;
        for (auto n = pick(0, 5); n > 0; --n)
          xs.emplace(next(depth - 1, true));
        return data{std::move(xs)};
      }
      case 13: {
        table xs;
        for (auto n = pick(0, 5); n > 0; --n)
          xs.emplace(next(depth - 1, true), next(depth - 1));
        return data{std::move(xs)};
      }
      default: {
        vector xs;
        for (auto n = pick(0, 5); n > 0; --n)
          xs.emplace_back(next(depth - 1));
        return data{std::move(xs)};
      }
    }
  }

  int pick(int lo, int hi) {
    return std::uniform_int_distribution<int>{lo, hi}(rng_);
  }

  std::mt19937& rng() {
    return rng_;
  }

private:
  double real_value(bool in_sorted) {
    switch (pick(0, 7)) {
      case 0:
        return in_sorted ? 1.0 : not_a_number;
      case 1:
        return pick(0, 1) ? infinity : -infinity;
      case 2:
        return pick(0, 1) ? 0.0 : -0.0;
      case 3:
        return std::numeric_limits<double>::denorm_min() * pick(1, 1000);
      default:
        return std::uniform_real_distribution<double>{-1e6, 1e6}(rng_);
    }
  }

  std::string bytes() {
    std::string result;
    for (auto n = pick(0, 12); n > 0; --n)
      result += static_cast<char>(pick(0, 255));
    if (pick(0, 20) == 0)
      result.append(200, 'x'); // a two-byte varbyte length
    return result;
  }

  address::bytes_type address_bytes() {
    address::bytes_type result{};
    if (pick(0, 1) == 1)
      return address::v4(static_cast<uint8_t>(pick(0, 255)), static_cast<uint8_t>(pick(0, 255)),
                         static_cast<uint8_t>(pick(0, 255)), static_cast<uint8_t>(pick(0, 255)))
        .bytes();
    for (auto& b : result)
      b = static_cast<uint8_t>(pick(0, 255));
    return result;
  }

  std::mt19937 rng_;
};

// Whenever a decode succeeds, re-encoding must succeed and decode to an equal value.
void check_decode_is_stable(const std::string& bytes) {
  auto decoded = bin::decode(bytes);
  if (!decoded)
    return;
  INFO("input: " << to_hex(bytes) << ", decoded: " << *decoded);
  auto encoded = bin::encode(*decoded);
  REQUIRE(encoded);
  auto again = bin::decode(*encoded);
  REQUIRE(again);
  CHECK(*again == *decoded);
  CHECK(bin::encode(*again).value() == *encoded);
}

} // namespace

// -- depth and size limits ---------------------------------------------------------------------

TEST_CASE("64 and 128 nested vectors decode, 129 are rejected", "[bin]") {
  for (size_t depth : {1, 64, 128}) {
    INFO("depth " << depth);
    auto bytes = nested_vectors(depth);
    auto decoded = bin::decode(bytes);
    REQUIRE(decoded);
    CHECK(*decoded == nested_value(depth));
    CHECK(bin::encode(*decoded).value() == bytes);
  }
  CHECK(check_rejected(nested_vectors(129)) == "nesting deeper than 128 at offset 256");
}

TEST_CASE("the nesting limit counts every container type and is configurable", "[bin]") {
  auto deep_mix = from_hex("0c 01 0d 01 0e 00 00");
  CHECK_FALSE(bin::decode(deep_mix, 2));
  CHECK(bin::decode(deep_mix, 3));
  auto rejected = bin::decode(from_hex("0c 01 0d 01 0e 01 0e 00 00"), 3);
  REQUIRE_FALSE(rejected);
  CHECK(rejected.error_value().message() == "nesting deeper than 3 at offset 6");
  CHECK(bin::decode(nested_vectors(10), 10));
  CHECK_FALSE(bin::decode(nested_vectors(11), 10));
  CHECK(bin::decode(from_hex("05 00"), 0));
  CHECK_FALSE(bin::decode(from_hex("0e 00"), 0));
}

TEST_CASE("100000 nested vectors are rejected without deep recursion", "[bin]") {
  CHECK_THAT(check_rejected(nested_vectors(100000)), Catch::StartsWith("nesting deeper than 128"));
}

TEST_CASE("a huge declared count with few bytes is rejected before allocating", "[bin]") {
  CHECK(check_rejected_hex("0e ffffffff0f 00")
        == "vector count 4294967295 exceeds the 1 bytes left at offset 6");
  CHECK(check_rejected_hex("0c ffffffff0f")
        == "set count 4294967295 exceeds the 0 bytes left at offset 6");
  check_rejected_hex("0d 80808080 08 00 00");
  CHECK(check_rejected_hex("05 ffffffff0f 61")
        == "truncated string (length 4294967295, 1 bytes left) at offset 6");
  check_rejected_hex("0b ffffffff0f");
}

TEST_CASE("error messages render with the deserialization_failed code", "[bin]") {
  auto decoded = bin::decode(from_hex("02 01"));
  REQUIRE_FALSE(decoded);
  CHECK(to_string(decoded.error_value()) == "deserialization_failed: truncated count at offset 1");
}

// -- round trips and fuzzing -------------------------------------------------------------------

TEST_CASE("random values survive a bin encode-decode round trip", "[bin]") {
  value_generator gen{0xb10c};
  for (int n = 0; n < 3000; ++n) {
    auto value = gen.next(4);
    INFO("value: " << value);
    auto encoded = bin::encode(value);
    REQUIRE(encoded);
    CHECK(bin::encoded_size(value) == encoded->size());
    auto decoded = bin::decode(*encoded);
    if (!decoded)
      FAIL("decode failed: " << to_string(decoded.error_value()));
    CHECK(*decoded == value);
    CHECK(bin::encode(*decoded).value() == *encoded);
  }
}

TEST_CASE("random bytes never crash the bin decoder", "[bin]") {
  std::mt19937 rng{20240601};
  std::uniform_int_distribution<int> length{0, 64};
  std::uniform_int_distribution<int> byte{0, 255};
  std::uniform_int_distribution<int> small{0, 15};
  size_t decoded = 0;
  for (int n = 0; n < 20000; ++n) {
    std::string bytes;
    for (auto len = length(rng); len > 0; --len)
      bytes += static_cast<char>(n % 2 == 0 ? byte(rng) : small(rng));
    if (bin::decode(bytes))
      ++decoded;
    check_decode_is_stable(bytes);
  }
  CHECK(decoded > 0);
}

TEST_CASE("mutated bin encodings never crash the decoder", "[bin]") {
  value_generator gen{7};
  auto& rng = gen.rng();
  std::vector<std::string> corpus;
  for (int n = 0; n < 200; ++n)
    corpus.push_back(bin::encode(gen.next(3)).value());
  corpus.push_back(from_hex("0c 02 05 05 68656c6c6f 05 06 62726f6b6572"));
  corpus.push_back(nested_vectors(130));
  for (int n = 0; n < 20000; ++n) {
    auto bytes = corpus[static_cast<size_t>(gen.pick(0, static_cast<int>(corpus.size()) - 1))];
    for (auto edits = gen.pick(1, 3); edits > 0 && !bytes.empty(); --edits) {
      auto at = static_cast<size_t>(gen.pick(0, static_cast<int>(bytes.size()) - 1));
      switch (gen.pick(0, 3)) {
        case 0:
          bytes[at] = static_cast<char>(bytes[at] ^ (1 << gen.pick(0, 7)));
          break;
        case 1:
          bytes.resize(at);
          break;
        case 2:
          bytes.insert(at, 1, static_cast<char>(rng()));
          break;
        default:
          bytes.erase(at, 1);
          break;
      }
    }
    check_decode_is_stable(bytes);
  }
}
