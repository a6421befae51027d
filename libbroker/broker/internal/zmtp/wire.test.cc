#include "broker/internal/zmtp/wire.hh"

#include "broker/internal/zmtp/z85.hh"

#include <catch2/catch.hpp>

#include <string>

// The byte vectors of doc/protocol/zeromq.md §2-§4 and the Z85 vector of RFC 32.

using namespace broker::internal::zmtp;
using namespace std::literals;

namespace {

// Hex digits to bytes; spaces are ignored.
std::string hex(std::string_view text) {
  std::string out;
  int hi = -1;
  for (auto c : text) {
    if (c == ' ')
      continue;
    int v = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    if (hi < 0) {
      hi = v;
    } else {
      out += static_cast<char>(hi * 16 + v);
      hi = -1;
    }
  }
  return out;
}

} // namespace

TEST_CASE("our NULL greeting is the 64 bytes of doc/protocol/zeromq.md §2", "[zmtp]") {
  auto expected = hex("ff 00 00 00 00 00 00 00 01 7f 03 01"
                      "4e 55 4c 4c 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
                      "00"
                      "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
                      "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
  CHECK(make_greeting(mechanism::null, false) == expected);
  greeting g;
  REQUIRE(!parse_greeting(expected, g));
  CHECK(g.major == 3);
  CHECK(g.minor == 1);
  CHECK(g.mechanism == "NULL");
  CHECK(!g.as_server);
}

TEST_CASE("a CURVE server greeting names CURVE and sets as-server", "[zmtp]") {
  auto bytes = make_greeting(mechanism::curve, true);
  REQUIRE(bytes.size() == 64);
  CHECK(bytes.substr(12, 6) == "CURVE\0"sv);
  CHECK(bytes[32] == 1);
  greeting g;
  REQUIRE(!parse_greeting(bytes, g));
  CHECK(g.mechanism == "CURVE");
  CHECK(g.as_server);
}

TEST_CASE("greetings of other protocols and versions are refused early", "[zmtp]") {
  SECTION("not 0xff first: ZMTP 1.0 or not ZMTP (HTTP here)") {
    auto err = check_greeting_prefix("GET / HTTP/1.1");
    CHECK(err.code == errc::unsupported_version);
    CHECK_THAT(err.reason, Catch::Contains("byte 0 is 0x47"));
  }
  SECTION("ZMTP 1.0 with a long identity: byte 9 has its low bit clear") {
    auto err = check_greeting_prefix(hex("ff 00 00 00 00 00 00 01 00 00"));
    CHECK(err.code == errc::unsupported_version);
  }
  SECTION("ZMTP 2.0: revision 1") {
    auto err = check_greeting_prefix(hex("ff 00 00 00 00 00 00 00 01 7f 01 05"));
    CHECK(err.code == errc::unsupported_version);
    CHECK_THAT(err.reason, Catch::Contains("ZMTP 2.0"));
  }
  SECTION("a signature ending in another odd byte") {
    CHECK(check_greeting_prefix(hex("ff 00 00 00 00 00 00 00 01 7d")).code
          == errc::bad_greeting);
  }
  SECTION("a valid prefix of any length passes") {
    auto full = make_greeting(mechanism::null, false);
    for (size_t n = 0; n <= full.size(); ++n)
      CHECK(!check_greeting_prefix(full.substr(0, n)));
  }
}

TEST_CASE("greeting fields are checked", "[zmtp]") {
  auto base = make_greeting(mechanism::null, false);
  greeting g;
  SECTION("version 3.0 and 4.2 parse: later versions talk 3.x") {
    auto bytes = base;
    bytes[11] = 0;
    REQUIRE(!parse_greeting(bytes, g));
    CHECK(g.minor == 0);
    bytes[10] = 4;
    bytes[11] = 2;
    REQUIRE(!parse_greeting(bytes, g));
    CHECK(g.major == 4);
  }
  SECTION("an empty mechanism") {
    auto bytes = base;
    bytes.replace(12, 4, 4, '\0');
    CHECK(parse_greeting(bytes, g).code == errc::bad_greeting);
  }
  SECTION("bytes after the mechanism's padding") {
    auto bytes = base;
    bytes[20] = 'X';
    CHECK(parse_greeting(bytes, g).code == errc::bad_greeting);
  }
  SECTION("a lower-case mechanism") {
    auto bytes = base;
    bytes.replace(12, 4, "null");
    CHECK_THAT(parse_greeting(bytes, g).reason, Catch::Contains("0x6e"));
  }
  SECTION("as-server other than 0 or 1") {
    auto bytes = base;
    bytes[32] = 2;
    CHECK(parse_greeting(bytes, g).code == errc::bad_greeting);
  }
  SECTION("a filler with garbage is ignored") {
    auto bytes = base;
    bytes[40] = 'x';
    CHECK(!parse_greeting(bytes, g));
  }
  SECTION("a short greeting") {
    CHECK(parse_greeting(base.substr(0, 63), g).code == errc::bad_greeting);
  }
}

TEST_CASE("frame headers use the short form up to 255 bytes", "[zmtp]") {
  std::string out;
  append_frame_header(out, false, false, 0);
  append_frame_header(out, true, false, 255);
  append_frame_header(out, false, true, 5);
  append_frame_header(out, true, false, 256);
  CHECK(out == hex("00 00  01 ff  04 05  03 00 00 00 00 00 00 01 00"));
  frame_header h;
  error err;
  REQUIRE(parse_frame_header(out.substr(6), h, err) == parse_status::ok);
  CHECK(h.size == 256);
  CHECK(h.more());
  CHECK(h.header_size == 9);
  CHECK(parse_frame_header(out.substr(6, 8), h, err) == parse_status::need_more);
  CHECK(parse_frame_header(out.substr(0, 1), h, err) == parse_status::need_more);
}

TEST_CASE("frame headers with reserved bits or a 64-bit size fail", "[zmtp]") {
  frame_header h;
  error err;
  CHECK(parse_frame_header(hex("08 00"), h, err) == parse_status::failed);
  CHECK_THAT(err.reason, Catch::Contains("0x08"));
  CHECK(parse_frame_header(hex("02 80 00 00 00 00 00 00 00"), h, err)
        == parse_status::failed);
  // A long frame with a small size is valid (libzmq accepts it too).
  CHECK(parse_frame_header(hex("02 00 00 00 00 00 00 00 03"), h, err) == parse_status::ok);
  CHECK(h.size == 3);
}

TEST_CASE("a NULL READY command of an XPUB", "[zmtp]") {
  std::string md;
  append_property(md, "Socket-Type", "XPUB");
  std::string out;
  append_command(out, "READY", md);
  CHECK(out == hex("04 1a 05 52 45 41 44 59 0b 53 6f 63 6b 65 74 2d 54 79 70 65"
                   "00 00 00 04 58 50 55 42"));
  command cmd;
  auto body = out.substr(2);
  REQUIRE(!parse_command(body, cmd));
  CHECK(cmd.name == "READY");
  properties props;
  REQUIRE(!parse_properties(cmd.data, props));
  REQUIRE(props.size() == 1);
  CHECK(*find_property(props, "socket-type") == "XPUB");
  CHECK(find_property(props, "Identity") == nullptr);
}

TEST_CASE("malformed commands and metadata name what is wrong", "[zmtp]") {
  command cmd;
  CHECK(parse_command("", cmd).code == errc::malformed_command);
  CHECK(parse_command("\x00"s, cmd).code == errc::malformed_command);
  CHECK_THAT(parse_command("\x05READ", cmd).reason, Catch::Contains("5 bytes"));
  properties props;
  CHECK(parse_properties("\x00"s, props).code == errc::malformed_command);
  CHECK(parse_properties("\x04Name\x00\x00\x00"s, props).code == errc::malformed_command);
  CHECK_THAT(parse_properties("\x04Name\x00\x00\x00\x09xy"s, props).reason,
             Catch::Contains("claims 9 bytes, 2 remain"));
  CHECK(!parse_properties("", props));
  CHECK(props.empty());
}

TEST_CASE("ERROR and PING bodies", "[zmtp]") {
  std::string reason;
  CHECK(error_data("400") == "\x03" "400");
  REQUIRE(!parse_error_data("\x03" "400", reason));
  CHECK(reason == "400");
  CHECK(parse_error_data("\x05" "400", reason).code == errc::malformed_command);
  CHECK(parse_error_data("", reason).code == errc::malformed_command);
  CHECK(error_data(std::string(300, 'x')).size() == 256);
  // PING: TTL 30 s (300 deciseconds), context "ab".
  CHECK(ping_data(300, "ab") == hex("01 2c 61 62"));
  uint16_t ttl = 0;
  std::string_view ctx;
  REQUIRE(!parse_ping_data(hex("01 2c 61 62"), ttl, ctx));
  CHECK(ttl == 300);
  CHECK(ctx == "ab");
  CHECK(parse_ping_data("\x01", ttl, ctx).code == errc::malformed_command);
  CHECK(parse_ping_data(std::string(19, 'x'), ttl, ctx).code == errc::malformed_command);
  CHECK(!parse_ping_data(std::string(18, 'x'), ttl, ctx));
}

TEST_CASE("socket type compatibility follows ZMTP", "[zmtp]") {
  CHECK(compatible(socket_type::xpub, socket_type::xsub));
  CHECK(compatible(socket_type::xpub, socket_type::sub));
  CHECK(!compatible(socket_type::xpub, socket_type::pub));
  CHECK(!compatible(socket_type::xpub, socket_type::xpub));
  CHECK(compatible(socket_type::xsub, socket_type::pub));
  CHECK(compatible(socket_type::xsub, socket_type::xpub));
  CHECK(!compatible(socket_type::xsub, socket_type::sub));
  CHECK(!compatible(socket_type::xsub, socket_type::other));
  CHECK(parse_socket_type("XSUB") == socket_type::xsub);
  CHECK(parse_socket_type("xsub") == socket_type::other);
  CHECK(parse_socket_type("PUSH") == socket_type::other);
}

TEST_CASE("Z85 encodes the RFC 32 test vector", "[zmtp]") {
  auto bytes = hex("86 4f d2 6f b5 59 f7 5b");
  CHECK(z85_encode(bytes) == "HelloWorld");
  CHECK(z85_decode("HelloWorld") == bytes);
  CHECK(z85_encode("") == "");
  CHECK(z85_encode(hex("00 00 00 00")) == "00000");
  CHECK(z85_encode(hex("ff ff ff ff")) == "%nSc0");
  CHECK(z85_decode("%nSc0") == hex("ff ff ff ff"));
}

TEST_CASE("Z85 refuses bad lengths, letters and overflowing groups", "[zmtp]") {
  CHECK(!z85_encode("abc"));
  CHECK(!z85_decode("Hello Worl"));
  CHECK(!z85_decode("Hell"));
  CHECK(!z85_decode("Hell\""));
  CHECK(!z85_decode("%nSc1")); // 2^32
  CHECK(!z85_decode("#####"));
}
