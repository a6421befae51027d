#include "broker/internal/codec/bin.hh"
#include "broker/internal/codec/bin.test.hh"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

// Every test vector of doc/protocol/binary.md §3 and §9 (and more), plus the encoder's and
// decode_prefix's contracts. Robustness (nesting, sizes, fuzzing) lives in bin_limits.test.cc.

using namespace broker;
using namespace broker::internal::bin::test;
using namespace std::literals;
namespace bin = broker::internal::bin;

// -- varbyte (doc/protocol/binary.md §3) -------------------------------------------------------

TEST_CASE("varbyte encodes the examples of the spec minimally", "[bin]") {
  std::pair<uint32_t, std::string_view> examples[] = {
    {0, "00"},
    {1, "01"},
    {127, "7f"},
    {128, "80 01"},
    {200, "c8 01"},
    {255, "ff 01"},
    {300, "ac 02"},
    {16383, "ff 7f"},
    {16384, "80 80 01"},
    {(1u << 28) - 1, "ff ff ff 7f"},
    {1u << 28, "80 80 80 80 01"},
    {std::numeric_limits<uint32_t>::max(), "ff ff ff ff 0f"},
  };
  for (auto [n, hex] : examples) {
    INFO("n = " << n);
    std::string out;
    bin::write_varbyte(n, out);
    CHECK(to_hex(out) == normalized_hex(hex));
    size_t pos = 0;
    uint32_t decoded = 0;
    auto bytes = from_hex(hex);
    CHECK(bin::read_varbyte(bytes, pos, decoded));
    CHECK(decoded == n);
    CHECK(pos == bytes.size());
  }
}

TEST_CASE("varbyte decoding accepts non-minimal forms", "[bin]") {
  for (auto [hex, n] : {std::pair{"80 00"sv, 0u}, std::pair{"81 80 00"sv, 1u},
                        std::pair{"80 80 80 80 00"sv, 0u}, std::pair{"ff 80 80 80 00"sv, 127u}}) {
    INFO("hex: " << hex);
    auto bytes = from_hex(hex);
    size_t pos = 0;
    uint32_t decoded = 42;
    CHECK(bin::read_varbyte(bytes, pos, decoded));
    CHECK(decoded == n);
    CHECK(pos == bytes.size());
  }
  check_decodes_to("05 80 00", data{""});
}

TEST_CASE("varbyte decoding rejects a 6th byte, values above 2^32-1 and truncation", "[bin]") {
  for (auto hex : {"80 80 80 80 80 01"sv, "ff ff ff ff ff 01"sv, "80 80 80 80 10"sv,
                   "ff ff ff ff 1f"sv, "ff ff ff ff 7f"sv, ""sv, "80"sv, "ff ff ff ff"sv}) {
    INFO("hex: " << hex);
    auto bytes = from_hex(hex);
    size_t pos = 0;
    uint32_t decoded = 42;
    CHECK_FALSE(bin::read_varbyte(bytes, pos, decoded));
    CHECK(pos == 0);
  }
  CHECK_THAT(check_rejected_hex("0e 80 80 80 80 80 01"), Catch::Contains("longer than 5 bytes"));
  CHECK_THAT(check_rejected_hex("05 80 80 80 80 10"), Catch::Contains("exceeds 2^32-1"));
}

TEST_CASE("varbyte decoding reads from the given position", "[bin]") {
  auto bytes = from_hex("ff ac 02 05");
  size_t pos = 1;
  uint32_t decoded = 0;
  CHECK(bin::read_varbyte(bytes, pos, decoded));
  CHECK(decoded == 300);
  CHECK(pos == 3);
}

// -- §9: V-B, vectors from Broker's tests -------------------------------------------------------

TEST_CASE("the scalar vectors from Broker's tests round-trip (V-B1..V-B8, V-B12)", "[bin]") {
  check_vector(data{"hello world"}, "05 0b 68656c6c6f20776f726c64");   // V-B1
  check_vector(data{true}, "01 01");                                     // V-B2
  check_vector(data{false}, "01 00");                                    // V-B3
  check_vector(c(0x0102030405060708), "02 0102030405060708");            // V-B4
  check_vector(i(0x0102030405060708), "03 0102030405060708");            // V-B5
  check_vector(data{2.5}, "04 4004000000000000");                        // V-B6
  check_vector(data{"abc"}, "05 03 616263");                             // V-B7
  check_vector(e("abc"), "0b 03 616263");                                // V-B8
  check_vector(data{}, "00");                                            // V-B12
}

TEST_CASE("the container vectors from Broker's tests round-trip (V-B9..V-B23)", "[bin]") {
  check_vector(vec({true, "abc", vec({i(1), i(2)})}),
               "0e 03 01 01 05 03 616263 0e 02 03 0000000000000001 03 0000000000000002"); // V-B9
  check_vector(st({i(1), i(2), "abc"}),
               "0c 03 03 0000000000000001 03 0000000000000002 05 03 616263"); // V-B10
  check_vector(tbl({{"key1", i(1)}, {"key2", i(2)}, {"key3", i(3)}}),
               "0d 03 05 04 6b657931 03 0000000000000001 05 04 6b657932 03 0000000000000002"
               " 05 04 6b657933 03 0000000000000003"); // V-B11
  check_vector(st({}), "0c 00");                                       // V-B13
  check_vector(st({data{}}), "0c 01 00");                              // V-B14
  check_vector(st({c(1)}), "0c 01 02 0000000000000001");               // V-B16
  check_vector(st({i(1)}), "0c 01 03 0000000000000001");               // V-B17
  check_vector(tbl({}), "0d 00");                                      // V-B18
  check_vector(tbl({{"k1", data{}}}), "0d 01 05 02 6b31 00");          // V-B19
  check_vector(tbl({{"k1", "v1"}, {"k2", "v2"}}),
               "0d 02 05 02 6b31 05 02 7631 05 02 6b32 05 02 7632");   // V-B20
  check_vector(vec({}), "0e 00");                                      // V-B21
  check_vector(vec({data{}}), "0e 01 00");                             // V-B22
  check_vector(vec({"hello", "broker"}),
               "0e 02 05 05 68656c6c6f 05 06 62726f6b6572");           // V-B23
}

TEST_CASE("an unsorted set from Broker's set_builder decodes, and we re-encode it sorted",
          "[bin]") {
  // V-B15: decode-only.
  auto value = st({"hello", "broker"});
  check_decodes_to("0c 02 05 05 68656c6c6f 05 06 62726f6b6572", value);
  check_encodes_to(value, "0c 02 05 06 62726f6b6572 05 05 68656c6c6f");
}

// -- §9: rejected input -------------------------------------------------------------------------

TEST_CASE("a payload with bytes after its value is rejected", "[bin]") {
  CHECK(check_rejected_hex("00 01") == "1 trailing bytes at offset 1");
  check_rejected_hex("01 01 01");
  check_rejected_hex("02 010203040506070809");
  check_rejected_hex("05 03 61626364");
  check_rejected_hex("0b 03 61626364");
}

TEST_CASE("a fixed-width body shorter or longer than 8 bytes is rejected", "[bin]") {
  CHECK(check_rejected_hex("01") == "truncated boolean at offset 1");
  for (char tag : {'\x02', '\x03', '\x04', '\x09', '\x0a'}) {
    for (size_t n = 0; n <= 9; ++n) {
      if (n == 8)
        continue;
      std::string bytes(1, tag);
      for (size_t k = 1; k <= n; ++k)
        bytes += static_cast<char>(k);
      check_rejected(bytes);
    }
  }
  CHECK(check_rejected_hex("02 01") == "truncated count at offset 1");
  CHECK(check_rejected_hex("03 01020304050607") == "truncated integer at offset 1");
  CHECK(check_rejected_hex("04") == "truncated real at offset 1");
}

TEST_CASE("a string or enum value shorter than its length is rejected", "[bin]") {
  for (auto tag : {"05"sv, "0b"sv}) {
    auto prefix = std::string{tag};
    check_rejected_hex(prefix);
    check_rejected_hex(prefix + " 03");
    check_rejected_hex(prefix + " 03 61");
    check_rejected_hex(prefix + " 03 6162");
  }
  CHECK(check_rejected_hex("05") == "truncated string length at offset 1");
  CHECK(check_rejected_hex("05 03 61") == "truncated string (length 3, 1 bytes left) at offset 2");
}

TEST_CASE("the computed negative vectors are rejected", "[bin]") {
  CHECK(check_rejected_hex("0f") == "unknown type tag 15 at offset 0");
  CHECK(check_rejected_hex("ff") == "unknown type tag 255 at offset 0");
  CHECK(check_rejected_hex("08 0050 04") == "invalid port protocol 4 at offset 3");
  CHECK(check_rejected_hex("0c 02 03 0000000000000001 03 0000000000000001")
        == "duplicate set element at offset 11");
  CHECK(check_rejected_hex("0d 02 05 01 61 00 05 01 61 00") == "duplicate table key at offset 6");
  CHECK(check_rejected_hex("0e 02 00") == "vector count 2 exceeds the 1 bytes left at offset 2");
  CHECK(check_rejected_hex("0e 02 00 05") == "truncated string length at offset 4");
  CHECK_THAT(check_rejected_hex("0c 02 04 3ff0000000000000 04 ffffffffffffffff"),
             Catch::Contains("NaN together with another real"));
  CHECK(check_rejected_hex("0c 02 04 0000000000000000 04 8000000000000000")
        == "duplicate set element at offset 11");
  CHECK(check_rejected_hex("") == "empty payload");
  CHECK(bin::decode("").error_value() == ec::deserialization_failed);
}

TEST_CASE("a set or table with NaN next to another real is rejected in any order", "[bin]") {
  check_rejected_hex("0c 02 04 ffffffffffffffff 04 3ff0000000000000");
  check_rejected_hex("0c 02 04 7ff8000000000000 04 fff0000000000000");
  check_rejected_hex("0d 02 04 ffffffffffffffff 00 04 0000000000000000 00");
  // Two NaNs are duplicates of each other.
  CHECK(check_rejected_hex("0c 02 04 ffffffffffffffff 04 7ff8000000000000")
        == "duplicate set element at offset 11");
}

TEST_CASE("subnet decoding rejects impossible prefix lengths and re-masks the network",
          "[bin]") {
  CHECK(check_rejected_hex("07 00000000000000000000ffff0a000000 c8")
        == "invalid subnet prefix length 200 at offset 17");
  check_rejected_hex("07 00000000000000000000ffff0a000000 81");
  check_rejected_hex("07 00000000000000000000ffff0a000000 32");
  check_rejected_hex("07 00000000000000000000ffff0a000000 5f");
  check_decodes_to("07 00000000000000000000ffff0a000000 60", net("0.0.0.0/0"));
  check_decodes_to("07 00000000000000000000ffff0a010203 68", net("10.0.0.0/8"));
  check_decodes_to("07 ffffffffffffffffffffffffffffffff 80",
                   net("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"));
}

TEST_CASE("truncated addresses, subnets, ports and containers are rejected", "[bin]") {
  CHECK(check_rejected_hex("06 0000") == "truncated address at offset 1");
  CHECK(check_rejected_hex("07 00000000000000000000ffff0a000000")
        == "truncated subnet at offset 1");
  CHECK(check_rejected_hex("08 0050") == "truncated port at offset 1");
  CHECK(check_rejected_hex("0c") == "truncated set count at offset 1");
  CHECK(check_rejected_hex("0d 01 00") == "truncated value at offset 3");
  CHECK(check_rejected_hex("0d 01 05 01")
        == "truncated string (length 1, 0 bytes left) at offset 4");
}

// -- lenient decoding that Broker also accepts ---------------------------------------------------

TEST_CASE("a boolean decodes any non-zero byte as true", "[bin]") {
  check_decodes_to("01 02", data{true});
  check_decodes_to("01 ff", data{true});
}

TEST_CASE("the decoder maps Broker's real patterns and foreign NaNs", "[bin]") {
  check_decodes_to("04 fff0000000000000", data{infinity});
  check_decodes_to("04 7ff0000000000000", data{-infinity});
  check_decodes_to("04 ffffffffffffffff", data{not_a_number});
  check_decodes_to("04 7ff8000000000000", data{not_a_number});
  check_decodes_to("04 fff8000000000000", data{not_a_number});
  check_decodes_to("04 7ff0000000000001", data{not_a_number});
  check_decodes_to("04 0000000000000001", data{std::numeric_limits<double>::denorm_min()});
  auto largest_subnormal = std::nextafter(std::numeric_limits<double>::min(), 0.0);
  check_decodes_to("04 800fffffffffffff", data{-largest_subnormal});
}

TEST_CASE("a set of NaN and a non-real, and a table keyed by a set, decode", "[bin]") {
  check_decodes_to("0c 02 04 ffffffffffffffff 05 03 616263", st({not_a_number, "abc"}));
  check_decodes_to("0d 01 0c 01 02 0000000000000001 05 01 6e", tbl({{st({c(1)}), "n"}}));
}

// -- §9: V-C, computed vectors -------------------------------------------------------------------

TEST_CASE("the computed scalar vectors round-trip (V-C1..V-C19b)", "[bin]") {
  check_vector(data{}, "00");                                            // V-C1
  check_vector(data{false}, "0100");                                     // V-C2
  check_vector(data{true}, "0101");                                      // V-C2
  check_vector(c(0), "02 0000000000000000");                             // V-C3
  check_vector(c(42), "02 000000000000002a");                            // V-C4
  check_vector(c(18446744073709551615u), "02 ffffffffffffffff");         // V-C5
  check_vector(i(0), "03 0000000000000000");                             // V-C6
  check_vector(i(-1), "03 ffffffffffffffff");                            // V-C7
  check_vector(i(42), "03 000000000000002a");                            // V-C8
  check_vector(i(-42), "03 ffffffffffffffd6");                           // V-C9
  check_vector(i(std::numeric_limits<int64_t>::min()), "03 8000000000000000"); // V-C10
  check_vector(i(std::numeric_limits<int64_t>::max()), "03 7fffffffffffffff"); // V-C11
  check_vector(data{1.0}, "04 3ff0000000000000");                        // V-C12
  check_vector(data{-1.0}, "04 bff0000000000000");                       // V-C13
  check_vector(data{-7.5}, "04 c01e000000000000");                       // V-C14
  check_vector(data{0.1}, "04 3fb999999999999a");                        // V-C15
  check_vector(data{0.0}, "04 0000000000000000");                        // V-C16
  check_vector(data{-0.0}, "04 8000000000000000");                       // V-C16
  check_vector(data{infinity}, "04 fff0000000000000");                   // V-C17
  check_vector(data{-infinity}, "04 7ff0000000000000");                  // V-C18
  check_vector(data{not_a_number}, "04 ffffffffffffffff");               // V-C19
  check_vector(data{-std::nan("1")}, "04 ffffffffffffffff");             // V-C19
  check_vector(data{-std::ldexp(1.0, 974)}, "04 fcd0000000000000");      // V-C19a
  check_encodes_to(data{5e-324}, "04 0000000000000001");                 // V-C19a
  check_vector(data{2.0}, "04 4000000000000000");                        // V-C19b
  check_vector(data{1e-7}, "04 3e7ad7f29abcaf48");                       // V-C19b
}

TEST_CASE("the decoder keeps the sign of -0.0", "[bin]") {
  auto decoded = bin::decode(from_hex("04 8000000000000000"));
  REQUIRE(decoded);
  CHECK(std::signbit(get<real>(*decoded)));
}

TEST_CASE("the computed string, address, subnet and port vectors round-trip (V-C20..V-C37)",
          "[bin]") {
  check_vector(data{""}, "05 00");                                           // V-C20
  check_vector(data{"foo"}, "05 03 666f6f");                                 // V-C21
  check_vector(data{"\xc3\xbc"}, "05 02 c3bc");                              // V-C22
  check_vector(data{std::string(200, 'a')}, "05 c8 01" + to_hex(std::string(200, 'a'))); // V-C23
  check_vector(addr("127.0.0.1"), "06 00000000000000000000ffff 7f000001");   // V-C24
  check_vector(addr("192.168.9.8"), "06 00000000000000000000ffff c0a80908"); // V-C25
  check_vector(addr("::1"), "06 00000000000000000000000000000001");          // V-C26
  check_vector(addr("::"), "06 00000000000000000000000000000000");           // V-C27
  check_vector(addr("2001:db8::"), "06 20010db8000000000000000000000000");   // V-C28
  check_vector(net("192.168.9.0/24"), "07 00000000000000000000ffff c0a80900 78"); // V-C29
  check_vector(net("10.0.0.0/8"), "07 00000000000000000000ffff 0a000000 68");     // V-C30
  check_vector(net("255.255.255.0/24"), "07 00000000000000000000ffff ffffff00 78"); // V-C31
  check_vector(net("2001:db8::/32"), "07 20010db8000000000000000000000000 20");   // V-C32
  check_vector(net("::/0"), "07 00000000000000000000000000000000 00");            // V-C33
  check_vector(data{port{8080, port::protocol::tcp}}, "08 1f90 01");         // V-C34
  check_vector(data{port{9000, port::protocol::udp}}, "08 2328 02");         // V-C35
  check_vector(data{port{123, port::protocol::icmp}}, "08 007b 03");         // V-C36
  check_vector(data{port{0, port::protocol::unknown}}, "08 0000 00");        // V-C37
}

TEST_CASE("the computed time, enum and container vectors round-trip (V-C38..V-C49)", "[bin]") {
  check_vector(ts(1234567890), "09 00000000499602d2");                       // V-C38
  check_vector(ts(1649574000000000000), "09 16e476d02cb86000");              // V-C39
  check_vector(ts(-1), "09 ffffffffffffffff");                               // V-C40
  check_vector(span(15000000), "0a 0000000000e4e1c0");                       // V-C41
  check_vector(span(-1500), "0a fffffffffffffa24");                          // V-C42
  check_vector(span(0), "0a 0000000000000000");                              // V-C43
  check_vector(e("foo"), "0b 03 666f6f");                                    // V-C44
  check_vector(st({"foo", "bar"}), "0c 02 05 03 626172 05 03 666f6f");       // V-C45
  check_vector(st({c(1), i(2), "abc", data{}}),
               "0c 04 00 02 0000000000000001 03 0000000000000002 05 03 616263"); // V-C46
  check_vector(tbl({{"first-name", "John"}, {"last-name", "Doe"}}),
               "0d 02 05 0a 66697273742d6e616d65 05 04 4a6f686e 05 09 6c6173742d6e616d65"
               " 05 03 446f65"); // V-C47
  check_vector(tbl({{c(2), "b"}, {c(1), "a"}}),
               "0d 02 02 0000000000000001 05 01 61 02 0000000000000002 05 01 62"); // V-C48
  check_vector(vec({c(1), i(2), "three"}),
               "0e 03 02 0000000000000001 03 0000000000000002 05 05 7468726565"); // V-C49
}

// -- §9: V-N, nested vectors ---------------------------------------------------------------------

TEST_CASE("a Zeek event without metadata round-trips (V-N1)", "[bin]") {
  auto event = vec({c(1), c(1), vec({"event_1", vec({i(42), "test"})})});
  check_vector(event, "0e030200000000000000010200000000000000010e0205076576656e745f310e0203000000"
                      "000000002a050474657374");
}

TEST_CASE("a Zeek event with metadata round-trips (V-N2)", "[bin]") {
  auto metadata = vec({vec({c(1), ts(1681827194000000000)})});
  auto event = vec({c(1), c(1), vec({"event_1", vec({i(42), "test"}), metadata})});
  check_vector(event, "0e030200000000000000010200000000000000010e0305076576656e745f310e0203000000"
                      "000000002a0504746573740e010e020200000000000000010917570cec17f64400");
}

TEST_CASE("the WebSocket all-types vector round-trips (V-N3)", "[bin]") {
  auto value = vec({
    i(std::numeric_limits<int64_t>::min()),
    i(std::numeric_limits<int64_t>::max()),
    c(0),
    c(std::numeric_limits<uint64_t>::max()),
    data{R"(Hello \u003cBroker\u003e!)"},
    data{},
    data{true},
    data{-7.5},
    span(15000000),
    e("foo"),
    addr("2001:db8::"),
    net("255.255.255.0/24"),
    data{port{8080, port::protocol::tcp}},
    st({"bar", "foo"}),
    tbl({{"first-name", "John"}, {"last-name", "Doe"}}),
  });
  auto hex = "0e0f038000000000000000037fffffffffffffff02000000000000000002ffffffffffffffff05194865"
             "6c6c6f205c753030336342726f6b65725c75303033652100010104c01e0000000000000a000000000"
             "0e4e1c00b03666f6f0620010db80000000000000000000000000700000000000000000000ffffffff"
             "ff0078081f90010c0205036261720503666f6f0d02050a66697273742d6e616d6505044a6f686e05"
             "096c6173742d6e616d650503446f65"sv;
  CHECK(from_hex(hex).size() == 178);
  check_vector(value, hex);
}

// -- §7 ordering: sets encode in ascending order ---------------------------------------------

TEST_CASE("sets encode their elements in the total order of §9.5", "[bin]") {
  // Each example line of §7, built in scrambled order, must encode in ascending order.
  std::vector<std::vector<data>> lines = {
    {data{}, data{false}, data{true}, c(0), c(18446744073709551615u),
     i(std::numeric_limits<int64_t>::min()), i(0), data{-infinity}, data{-1.0}, data{0.0},
     data{infinity}},
    {data{""}, data{"A"}, data{"a"}, data{"ab"}, data{"b"}, data{"\xff"}},
    {addr("::"), addr("::1"), addr("127.0.0.1"), addr("192.168.9.8"), addr("2001:db8::"),
     addr("ff02::1")},
    {net("10.0.0.0/8"), net("10.0.0.0/16")},
    {data{port{80, port::protocol::udp}}, data{port{443, port::protocol::tcp}}},
    {data{port{53, port::protocol::tcp}}, data{port{53, port::protocol::udp}}},
    {vec({}), vec({c(1)}), vec({c(1), c(0)}), vec({c(2)})},
    {data{"z"}, data{"\xc3\xa9"}},
  };
  for (const auto& line : lines) {
    std::string expected;
    bin::write_varbyte(static_cast<uint32_t>(line.size()), expected);
    for (const auto& x : line)
      expected += bin::encode(x).value();
    set scrambled(line.rbegin(), line.rend());
    REQUIRE(scrambled.size() == line.size());
    auto encoded = bin::encode(data{scrambled});
    REQUIRE(encoded);
    CHECK(to_hex(*encoded) == "0c" + to_hex(expected));
  }
}

// -- encoder limits --------------------------------------------------------------------------

TEST_CASE("the encoder refuses a set or table with NaN next to another real", "[bin]") {
  auto check_refused = [](const data& x) {
    INFO("value: " << x);
    auto encoded = bin::encode(x);
    REQUIRE_FALSE(encoded);
    CHECK(encoded.error_value() == ec::serialization_failed);
    CHECK_THAT(encoded.error_value().message(), Catch::Contains("NaN"));
  };
  check_refused(st({1.0, not_a_number}));
  check_refused(st({-infinity, not_a_number, "x"}));
  check_refused(tbl({{1.0, data{}}, {not_a_number, data{}}}));
  check_refused(vec({c(1), st({0.0, not_a_number})}));
  check_vector(st({not_a_number}), "0c 01 04 ffffffffffffffff");
  check_vector(st({not_a_number, "abc"}), "0c 02 04 ffffffffffffffff 05 03 616263");
  check_vector(tbl({{"k", 1.0}, {"l", not_a_number}}),
               "0d 02 05 01 6b 04 3ff0000000000000 05 01 6c 04 ffffffffffffffff");
}

TEST_CASE("encode counts each top-level call once", "[bin]") {
  auto value = vec({1, vec({2, st({3})})});
  auto before = bin::encode_calls();
  REQUIRE(bin::encode(value));
  CHECK(bin::encode_calls() == before + 1);
  std::string out;
  REQUIRE_FALSE(bin::encode(value, out));
  CHECK(bin::encode_calls() == before + 2);
}

TEST_CASE("encode appends to an existing buffer", "[bin]") {
  std::string out = "xy";
  REQUIRE_FALSE(bin::encode(data{true}, out));
  REQUIRE_FALSE(bin::encode(data{"a"}, out));
  CHECK(to_hex(out) == "7879" "0101" "050161");
}

// -- decode_prefix ---------------------------------------------------------------------------

TEST_CASE("decode_prefix reads one value and leaves trailing bytes", "[bin]") {
  auto bytes = from_hex("ff 01 01 05 01 61 00");
  size_t pos = 1;
  auto first = bin::decode_prefix(bytes, pos);
  REQUIRE(first);
  CHECK(*first == data{true});
  CHECK(pos == 3);
  auto second = bin::decode_prefix(bytes, pos);
  REQUIRE(second);
  CHECK(*second == data{"a"});
  CHECK(pos == 6);
  auto third = bin::decode_prefix(bytes, pos);
  REQUIRE(third);
  CHECK(pos == 7);
  auto past_end = bin::decode_prefix(bytes, pos);
  CHECK_FALSE(past_end);
  CHECK(pos == 7);
  size_t bad_pos = 100;
  CHECK_FALSE(bin::decode_prefix(bytes, bad_pos));
}

TEST_CASE("decode_prefix leaves the position alone on failure", "[bin]") {
  auto bytes = from_hex("0e 02 00");
  size_t pos = 0;
  CHECK_FALSE(bin::decode_prefix(bytes, pos));
  CHECK(pos == 0);
}

// -- validate(): what a relay checks without decoding ----------------------------------------

TEST_CASE("validate accepts and rejects exactly what decode does, with the same message",
          "[bin]") {
  auto event = vec({c(1), c(1), vec({"event_1", vec({i(42), "test"}), vec({vec({c(1),
                    ts(1681827194000000000)})})})});
  auto all = vec({i(-1), c(7), data{"text"}, data{}, data{true}, data{-7.5}, span(15),
                  e("foo"), addr("2001:db8::"), net("10.0.0.0/8"),
                  data{port{53, port::protocol::udp}}, st({"a", "b"}),
                  tbl({{"k", "v"}}), vec({vec({vec({})})})});
  std::mt19937 rng{7};
  size_t rejected = 0;
  for (auto& value : {event, all}) {
    auto bytes = *bin::encode(value);
    CHECK(!bin::validate(bytes));
    // Every truncation, every single-byte change and a few random splices.
    std::vector<std::string> inputs;
    for (size_t n = 0; n < bytes.size(); ++n)
      inputs.push_back(bytes.substr(0, n));
    for (size_t k = 0; k < bytes.size(); ++k)
      for (int b : {0x00, 0x01, 0x0e, 0x0f, 0x7f, 0x80, 0xff}) {
        auto x = bytes;
        x[k] = static_cast<char>(b);
        inputs.push_back(std::move(x));
      }
    for (int k = 0; k < 200; ++k) {
      auto x = bytes;
      x.insert(rng() % (x.size() + 1), bytes.substr(rng() % bytes.size(), rng() % 8));
      inputs.push_back(std::move(x));
    }
    inputs.push_back(bytes + "x");
    for (auto& x : inputs) {
      auto decoded = bin::decode(x);
      auto err = bin::validate(x);
      CAPTURE(to_hex(x));
      REQUIRE(static_cast<bool>(decoded) == !err);
      if (!decoded) {
        CHECK(err.message() == decoded.error_value().message());
        ++rejected;
      }
    }
  }
  CHECK(rejected > 100); // The mutations did reach the error paths.
}

TEST_CASE("validate applies the nesting limit as decode does", "[bin]") {
  data deep = vec({});
  for (int k = 0; k < 20; ++k)
    deep = vec({deep});
  auto bytes = *bin::encode(deep);
  CHECK(!bin::validate(bytes, 21));
  auto err = bin::validate(bytes, 20);
  REQUIRE(err);
  CHECK(err.message() == bin::decode(bytes, 20).error_value().message());
}
