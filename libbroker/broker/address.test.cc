#include "broker/address.hh"
#include "broker/port.hh"
#include "broker/subnet.hh"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

using namespace broker;
using namespace std::literals;

namespace {

// Parses `text`, which must be valid, and renders it again.
std::string reformat(std::string_view text) {
  auto addr = address::parse(text);
  INFO("input: " << text);
  REQUIRE(addr.has_value());
  return to_string(*addr);
}

std::string hex(const address& x) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (auto b : x.bytes()) {
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

} // namespace

// -- address ----------------------------------------------------------------------------------

TEST_CASE("an IPv4 address is stored IPv4-mapped", "[address]") {
  auto addr = address::v4(127, 0, 0, 1);
  CHECK(hex(addr) == "00000000000000000000ffff7f000001");
  CHECK(addr.is_v4());
  CHECK(to_string(addr) == "127.0.0.1");
  CHECK(address::parse("127.0.0.1") == addr);
}

TEST_CASE("the default address is the all-zero IPv6 address", "[address]") {
  address addr;
  CHECK_FALSE(addr.is_v4());
  CHECK(to_string(addr) == "::");
  CHECK(address::parse("::") == addr);
}

TEST_CASE("an address is IPv4 exactly when its first 12 bytes are the mapped marker",
          "[address]") {
  CHECK(address::parse("::ffff:10.0.0.1")->is_v4());
  CHECK(address::parse("::ffff:0:0")->is_v4());
  CHECK_FALSE(address::parse("::fffe:0:0")->is_v4());
  CHECK_FALSE(address::parse("1::ffff:0:0")->is_v4());
  CHECK_FALSE(address::parse("::1.2.3.4")->is_v4());
}

TEST_CASE("IPv6 output follows RFC 5952", "[address]") {
  // doc/protocol/websocket.md §6.4 and §10.6; Broker prints the same texts.
  CHECK(reformat("2001:db8::") == "2001:db8::");
  CHECK(reformat("::1") == "::1");
  CHECK(reformat("fe80::1:0:0:1") == "fe80::1:0:0:1");
  CHECK(reformat("2001:db8:0:1:1:1:1:1") == "2001:db8:0:1:1:1:1:1");
  CHECK(reformat("2001:0:0:1:0:0:0:1") == "2001:0:0:1::1");
  CHECK(reformat("::ffff:10.0.0.1") == "10.0.0.1");
  CHECK(reformat("::1.2.3.4") == "::102:304");
  CHECK(reformat("ff02::1") == "ff02::1");
  CHECK(reformat("0:0:0:0:0:0:0:0") == "::");
}

TEST_CASE("IPv6 output compresses the first of two equally long zero runs", "[address]") {
  CHECK(reformat("1:0:0:2:0:0:3:4") == "1::2:0:0:3:4");
  CHECK(reformat("1:0:0:2:3:0:0:0") == "1:0:0:2:3::");
  CHECK(reformat("0:0:1:2:3:4:0:0") == "::1:2:3:4:0:0");
}

TEST_CASE("IPv6 output writes a single zero group as 0 instead of ::", "[address]") {
  CHECK(reformat("1:0:2:3:4:5:6:7") == "1:0:2:3:4:5:6:7");
  CHECK(reformat("0:1:2:3:4:5:6:7") == "0:1:2:3:4:5:6:7");
  CHECK(reformat("1:2:3:4:5:6:7:0") == "1:2:3:4:5:6:7:0");
}

TEST_CASE("IPv6 output is lowercase without leading zeros", "[address]") {
  CHECK(reformat("2001:0DB8:00AB:000C:0000:0000:0000:0001") == "2001:db8:ab:c::1");
  CHECK(reformat("ABCD:EF01:2345:6789:ABCD:EF01:2345:6789")
        == "abcd:ef01:2345:6789:abcd:ef01:2345:6789");
}

TEST_CASE("the parser accepts every RFC 4291 text form", "[address]") {
  CHECK(hex(*address::parse("1:2:3:4:5:6:7:8")) == "00010002000300040005000600070008");
  CHECK(hex(*address::parse("1::")) == "00010000000000000000000000000000");
  CHECK(hex(*address::parse("::8")) == "00000000000000000000000000000008");
  CHECK(hex(*address::parse("1:2:3:4:5:6:7::")) == "00010002000300040005000600070000");
  CHECK(hex(*address::parse("::2:3:4:5:6:7:8")) == "00000002000300040005000600070008");
  CHECK(hex(*address::parse("1:2::7:8")) == "00010002000000000000000000070008");
  CHECK(hex(*address::parse("1:2:3:4:5:6:1.2.3.4")) == "00010002000300040005000601020304");
  CHECK(hex(*address::parse("::ffff:192.168.9.8")) == "00000000000000000000ffffc0a80908");
  CHECK(hex(*address::parse("1::1.2.3.4")) == "00010000000000000000000001020304");
  CHECK(hex(*address::parse("::0.0.0.0")) == "00000000000000000000000000000000");
  CHECK(hex(*address::parse("255.255.255.255")) == "00000000000000000000ffffffffffff");
  CHECK(hex(*address::parse("0.0.0.0")) == "00000000000000000000ffff00000000");
}

TEST_CASE("the parser rejects malformed addresses", "[address]") {
  for (auto text : {""sv,
                    " "sv,
                    " 1.2.3.4"sv,
                    "1.2.3.4 "sv,
                    "1.2.3"sv,
                    "1.2.3.4.5"sv,
                    "1.2.3."sv,
                    ".1.2.3"sv,
                    "256.0.0.1"sv,
                    "1.2.3.1000"sv,
                    "01.2.3.4"sv,
                    "1..3.4"sv,
                    "a.b.c.d"sv,
                    "1.2.3.4/8"sv,
                    ":"sv,
                    ":::"sv,
                    "1::2::3"sv,
                    "::1::"sv,
                    "1:2:3:4:5:6:7:8:9"sv,
                    "1:2:3:4:5:6:7"sv,
                    "1:2:3:4:5:6:7:8::"sv,
                    "::1:2:3:4:5:6:7:8"sv,
                    ":1::"sv,
                    "1:"sv,
                    ":1"sv,
                    "1:::2"sv,
                    "12345::"sv,
                    "g::"sv,
                    "fe80::1%eth0"sv,
                    "fe80::1%1"sv,
                    "1:2:3:4:5:6:7:1.2.3.4"sv,
                    "::1.2.3"sv,
                    "::1.2.3.4:5"sv,
                    "::256.1.1.1"sv,
                    "::ffff:1.2.3.04"sv,
                    "[::1]"sv,
                    "::1 "sv,
                    "hello"sv}) {
    INFO("input: \"" << text << '"');
    CHECK_FALSE(address::parse(text).has_value());
  }
}

TEST_CASE("masking zeroes every bit after the prefix", "[address]") {
  auto addr = *address::parse("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
  auto masked = addr;
  masked.mask(128);
  CHECK(masked == addr);
  masked.mask(65);
  CHECK(to_string(masked) == "ffff:ffff:ffff:ffff:8000::");
  masked.mask(12);
  CHECK(to_string(masked) == "fff0::");
  masked.mask(0);
  CHECK(to_string(masked) == "::");
}

// -- subnet -----------------------------------------------------------------------------------

TEST_CASE("an IPv4 subnet stores its prefix plus 96", "[address][subnet]") {
  auto sn = subnet::parse("192.168.9.0/24");
  REQUIRE(sn);
  CHECK(sn->raw_length() == 120);
  CHECK(sn->length() == 24);
  CHECK(to_string(*sn) == "192.168.9.0/24");
  CHECK(subnet::parse("10.0.0.0/8")->raw_length() == 0x68);
}

TEST_CASE("subnet text shows the masked network and the user-facing prefix",
          "[address][subnet]") {
  CHECK(to_string(*subnet::parse("10.1.2.3/8")) == "10.0.0.0/8");
  CHECK(to_string(*subnet::parse("192.168.99.77/24")) == "192.168.99.0/24");
  CHECK(to_string(*subnet::parse("255.255.255.0/24")) == "255.255.255.0/24");
  CHECK(to_string(*subnet::parse("2001:db8::/32")) == "2001:db8::/32");
  CHECK(to_string(*subnet::parse("2001:db8:1:2::/32")) == "2001:db8::/32");
  CHECK(to_string(*subnet::parse("::/0")) == "::/0");
  CHECK(to_string(*subnet::parse("0.0.0.0/0")) == "0.0.0.0/0");
  CHECK(to_string(*subnet::parse("1.2.3.4/32")) == "1.2.3.4/32");
  CHECK(to_string(*subnet::parse("::1/128")) == "::1/128");
  CHECK(to_string(subnet{}) == "::/0");
}

TEST_CASE("subnet parsing requires a plain in-range decimal length", "[address][subnet]") {
  for (auto text : {""sv, "/"sv, "10.0.0.0"sv, "10.0.0.0/"sv, "10.0.0.0/40"sv, "10.0.0.0/33"sv,
                    "10.0.0.0/8abc"sv, "10.0.0.0/ 8"sv, "10.0.0.0/+8"sv, "10.0.0.0/-8"sv,
                    "10.0.0.0/8 "sv, " 10.0.0.0/8"sv, "::/129"sv, "::/255"sv,
                    "::/99999999999999999999"sv, "10.0.0/8"sv, "10.0.0.0/8/8"sv, "/8"sv,
                    "fe80::1%eth0/64"sv}) {
    INFO("input: \"" << text << '"');
    CHECK_FALSE(subnet::parse(text).has_value());
  }
  CHECK(subnet::parse("::/128"));
  CHECK(subnet::parse("10.0.0.0/32"));
  CHECK(subnet::parse("10.0.0.0/08"));
}

TEST_CASE("subnet::from_raw rejects lengths a Broker subnet cannot have", "[address][subnet]") {
  auto v4 = address::v4(10, 0, 0, 0);
  CHECK_FALSE(subnet::from_raw(v4, 129));
  CHECK_FALSE(subnet::from_raw(v4, 200));
  CHECK_FALSE(subnet::from_raw(v4, 95));
  CHECK_FALSE(subnet::from_raw(v4, 50));
  CHECK(subnet::from_raw(v4, 96)->length() == 0);
  CHECK(subnet::from_raw(address{}, 0)->length() == 0);
  CHECK_FALSE(subnet::from_raw(address{}, 129));
}

TEST_CASE("subnet::from_raw and make mask the host bits", "[address][subnet]") {
  auto sn = subnet::from_raw(address::v4(10, 1, 2, 3), 104);
  REQUIRE(sn);
  CHECK(sn->network() == address::v4(10, 0, 0, 0));
  auto made = subnet::make(address::v4(10, 1, 2, 3), 16);
  REQUIRE(made);
  CHECK(to_string(*made) == "10.1.0.0/16");
  CHECK_FALSE(subnet::make(address::v4(10, 1, 2, 3), 33));
  CHECK_FALSE(subnet::make(address{}, 129));
  CHECK(subnet::make(address{}, 128));
}

TEST_CASE("a subnet contains exactly the addresses that share its prefix",
          "[address][subnet]") {
  auto sn = *subnet::parse("192.168.0.0/16");
  CHECK(sn.contains(*address::parse("192.168.0.0")));
  CHECK(sn.contains(*address::parse("192.168.255.255")));
  CHECK_FALSE(sn.contains(*address::parse("192.169.0.0")));
  CHECK_FALSE(sn.contains(*address::parse("::c0a8:1")));
  auto any_v4 = *subnet::parse("0.0.0.0/0");
  CHECK(any_v4.contains(address::v4(1, 2, 3, 4)));
  CHECK_FALSE(any_v4.contains(*address::parse("2001:db8::1")));
  auto any = *subnet::parse("::/0");
  CHECK(any.contains(address::v4(1, 2, 3, 4)));
  CHECK(any.contains(*address::parse("2001:db8::1")));
}

TEST_CASE("subnets order by network bytes first, then by raw length", "[address][subnet]") {
  CHECK(*subnet::parse("10.0.0.0/8") < *subnet::parse("10.0.0.0/16"));
  CHECK(*subnet::parse("10.0.0.0/16") < *subnet::parse("10.1.0.0/16"));
  CHECK(*subnet::parse("::/0") < *subnet::parse("10.0.0.0/8"));
}

// -- port -------------------------------------------------------------------------------------

TEST_CASE("port text is the number, a slash and the protocol name", "[address][port]") {
  CHECK(to_string(port{8080, port::protocol::tcp}) == "8080/tcp");
  CHECK(to_string(port{9000, port::protocol::udp}) == "9000/udp");
  CHECK(to_string(port{123, port::protocol::icmp}) == "123/icmp");
  CHECK(to_string(port{0, port::protocol::unknown}) == "0/?");
  CHECK(to_string(port{65535, port::protocol::tcp}) == "65535/tcp");
}

TEST_CASE("port parsing accepts the four protocols and a bare number as tcp",
          "[address][port]") {
  CHECK(port::parse("8080/tcp") == port{8080, port::protocol::tcp});
  CHECK(port::parse("53/udp") == port{53, port::protocol::udp});
  CHECK(port::parse("123/icmp") == port{123, port::protocol::icmp});
  CHECK(port::parse("0/?") == port{0, port::protocol::unknown});
  CHECK(port::parse("80") == port{80, port::protocol::tcp});
  CHECK(port::parse("65535/udp") == port{65535, port::protocol::udp});
}

TEST_CASE("port parsing rejects out-of-range numbers and unknown protocols",
          "[address][port]") {
  for (auto text : {""sv, "/"sv, "/tcp"sv, "70000/tcp"sv, "65536"sv, "80/foo"sv, "80/"sv,
                    "80/TCP"sv, "80/tcp "sv, " 80/tcp"sv, "-1/tcp"sv, "+80/tcp"sv, "8 0"sv,
                    "80/tcp/udp"sv, "99999999999999999999/tcp"sv, "0x50/tcp"sv}) {
    INFO("input: \"" << text << '"');
    CHECK_FALSE(port::parse(text).has_value());
  }
}

TEST_CASE("ports order by number first, then by protocol code", "[address][port]") {
  CHECK(port{80, port::protocol::udp} < port{443, port::protocol::tcp});
  CHECK(port{53, port::protocol::tcp} < port{53, port::protocol::udp});
  CHECK_FALSE(port{53, port::protocol::udp} < port{53, port::protocol::tcp});
}
