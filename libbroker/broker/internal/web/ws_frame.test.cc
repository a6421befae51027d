#include "broker/internal/web/ws_frame.hh"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

using namespace broker::internal;

namespace {

/// A client frame: masked with `key` unless `key` is empty.
std::string client_frame(uint8_t first_byte, std::string_view payload,
                         std::string_view key = "\x11\x22\x33\x44") {
  std::string out;
  out.push_back(static_cast<char>(first_byte));
  uint8_t mask_bit = key.empty() ? 0 : 0x80;
  auto n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(mask_bit | n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(mask_bit | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(mask_bit | 127));
    for (int i = 0; i < 8; ++i)
      out.push_back(static_cast<char>((uint64_t{n} >> (56 - 8 * i)) & 0xFF));
  }
  out.append(key.data(), key.size());
  for (size_t i = 0; i < n; ++i)
    out.push_back(key.empty() ? payload[i] : static_cast<char>(payload[i] ^ key[i % 4]));
  return out;
}

std::string text(std::string_view payload, bool fin = true) {
  return client_frame((fin ? 0x80 : 0x00) | 0x1, payload);
}

std::string cont(std::string_view payload, bool fin = true) {
  return client_frame((fin ? 0x80 : 0x00) | 0x0, payload);
}

std::string close_payload(uint16_t code, std::string_view reason = {}) {
  std::string p;
  p.push_back(static_cast<char>(code >> 8));
  p.push_back(static_cast<char>(code & 0xFF));
  p.append(reason.data(), reason.size());
  return p;
}

struct seen {
  ws::event::kind_type kind;
  uint16_t code;
  std::string payload;
};

/// Feeds `bytes` in chunks of `chunk` bytes and collects every event.
std::vector<seen> read_all(std::string_view bytes, size_t chunk = SIZE_MAX,
                           size_t limit = 1 << 20) {
  ws::reader r{limit};
  std::vector<seen> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    auto n = std::min(chunk, bytes.size() - pos);
    r.feed(bytes.substr(pos, n));
    pos += n;
    for (;;) {
      auto ev = r.next();
      if (ev.kind == ws::event::need_more)
        break;
      out.push_back(seen{ev.kind, ev.code, std::string{ev.payload}});
      if (ev.kind == ws::event::fail)
        return out;
    }
  }
  return out;
}

} // namespace

TEST_CASE("a masked text frame yields its unmasked payload", "[ws_frame]") {
  auto evs = read_all(text("hello"));
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].kind == ws::event::text);
  CHECK(evs[0].payload == "hello");
}

TEST_CASE("an unmasked client frame is accepted as Broker does", "[ws_frame]") {
  auto evs = read_all(client_frame(0x81, "plain", ""));
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].payload == "plain");
}

TEST_CASE("many frames in one read come out as many events, in order", "[ws_frame]") {
  std::string bytes;
  for (int i = 0; i < 100; ++i)
    bytes += text("message " + std::to_string(i));
  auto evs = read_all(bytes);
  REQUIRE(evs.size() == 100);
  for (int i = 0; i < 100; ++i)
    CHECK(evs[i].payload == "message " + std::to_string(i));
}

TEST_CASE("a frame split at every byte boundary still parses", "[ws_frame]") {
  std::string payload(300, 'x'); // 16-bit length form
  auto bytes = text("a") + text(payload) + client_frame(0x89, "ping!") + text("z");
  for (size_t chunk = 1; chunk <= 16; ++chunk) {
    auto evs = read_all(bytes, chunk);
    REQUIRE(evs.size() == 4);
    CHECK(evs[0].payload == "a");
    CHECK(evs[1].payload == payload);
    CHECK(evs[2].kind == ws::event::ping);
    CHECK(evs[2].payload == "ping!");
    CHECK(evs[3].payload == "z");
  }
}

TEST_CASE("64-bit lengths are read", "[ws_frame]") {
  std::string payload(70000, 'y');
  auto evs = read_all(text(payload), 4096);
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].payload.size() == 70000);
}

TEST_CASE("fragments are reassembled, with a ping between them", "[ws_frame]") {
  auto bytes = text("one ", false) + client_frame(0x89, "p") + cont("two ", false)
               + cont("three");
  auto evs = read_all(bytes);
  REQUIRE(evs.size() == 2);
  CHECK(evs[0].kind == ws::event::ping);
  CHECK(evs[1].kind == ws::event::text);
  CHECK(evs[1].payload == "one two three");
}

TEST_CASE("on the caller's bytes, a reader keeps nothing once a fragmented message is out",
          "[ws_frame]") {
  // What a WebSocket session does (net/channel.hh: it decodes in the thread's buffer).
  ws::reader r{1 << 20};
  CHECK(r.capacity() == 0);
  std::string big(100000, 'x');
  auto bytes = text(big.substr(0, 60000), false) + cont(big.substr(60000)) + text("next");
  size_t pos = 0;
  auto ev = r.next(bytes.data(), bytes.size(), pos);
  REQUIRE(ev.kind == ws::event::text);
  CHECK(ev.payload == big); // Valid until the next call.
  CHECK(r.capacity() >= big.size());
  ev = r.next(bytes.data(), bytes.size(), pos);
  REQUIRE(ev.kind == ws::event::text);
  CHECK(ev.payload == "next");
  CHECK(r.capacity() == 0);
  CHECK(r.buffered() == 0);
  // A failure's reason lives until the reader goes.
  auto bad = client_frame(0x83, "x");
  pos = 0;
  ev = r.next(bad.data(), bad.size(), pos);
  CHECK(ev.kind == ws::event::fail);
  CHECK(ev.code == ws::close_protocol_error);
  auto reason = std::string{ev.payload};
  CHECK_FALSE(reason.empty());
  ev = r.next(bad.data(), bad.size(), pos);
  CHECK(ev.kind == ws::event::fail);
  CHECK(ev.payload == reason);
}

TEST_CASE("a UTF-8 character split across fragments is valid", "[ws_frame]") {
  std::string smile = "\xF0\x9F\x98\x80";
  auto evs = read_all(text(smile.substr(0, 2), false) + cont(smile.substr(2)));
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].payload == smile);
}

TEST_CASE("invalid UTF-8 in a text message fails with 1007", "[ws_frame]") {
  for (auto bad : {std::string{"\xff\xfe"}, std::string{"\xC0\xAF"}, std::string{"\xED\xA0\x80"},
                   std::string{"\xF4\x90\x80\x80"}, std::string{"abc\xE2\x82"}}) {
    auto evs = read_all(text(bad));
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].kind == ws::event::fail);
    CHECK(evs[0].code == ws::close_invalid_payload);
  }
}

TEST_CASE("binary messages arrive like text ones, without the UTF-8 rule", "[ws_frame]") {
  // zeek-websocket-rs sends its JSON in binary frames (Zeek's server accepts them).
  auto evs = read_all(client_frame(0x82, R"(["/t"])") + text("x"));
  REQUIRE(evs.size() == 2);
  CHECK(evs[0].kind == ws::event::binary);
  CHECK(evs[0].payload == R"(["/t"])");
  CHECK(evs[1].kind == ws::event::text);
  // Not UTF-8: still a message; the JSON decoder judges it.
  evs = read_all(client_frame(0x82, "\xff\xfe"));
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].kind == ws::event::binary);
  // Fragmented: the first frame decides the kind, also across reads of one byte.
  auto frag = client_frame(0x02, "ab") + client_frame(0x89, "p") + cont("c\xff");
  for (size_t chunk : {size_t{1}, SIZE_MAX}) {
    evs = read_all(frag, chunk);
    REQUIRE(evs.size() == 2);
    CHECK(evs[0].kind == ws::event::ping);
    CHECK(evs[1].kind == ws::event::binary);
    CHECK(evs[1].payload == "abc\xff");
  }
  // A text message fragmented after a binary one is still checked for UTF-8.
  evs = read_all(client_frame(0x82, "\xff") + text("\xff", false) + cont("x"));
  REQUIRE(evs.size() == 2);
  CHECK(evs[0].kind == ws::event::binary);
  CHECK(evs[1].kind == ws::event::fail);
  CHECK(evs[1].code == ws::close_invalid_payload);
  // A binary frame inside a fragmented message breaks the order.
  evs = read_all(text("a", false) + client_frame(0x82, "b"));
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].code == ws::close_protocol_error);
}

TEST_CASE("a message over the limit fails with 1009, also when fragmented", "[ws_frame]") {
  auto evs = read_all(text(std::string(101, 'a')), SIZE_MAX, 100);
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].code == ws::close_too_big);
  evs = read_all(text(std::string(60, 'a'), false) + cont(std::string(41, 'b')), SIZE_MAX,
                 100);
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].code == ws::close_too_big);
  evs = read_all(text(std::string(100, 'a')), SIZE_MAX, 100);
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].kind == ws::event::text);
}

TEST_CASE("the limit applies before the payload arrives", "[ws_frame]") {
  // Only the header of a 2^40-byte frame: the reader must not wait for (or buffer) it.
  std::string hdr = "\x81\xFF";
  hdr += std::string("\x00\x00\x01\x00\x00\x00\x00\x00", 8);
  hdr += "abcd";
  auto evs = read_all(hdr);
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].code == ws::close_too_big);
}

TEST_CASE("protocol violations fail with 1002", "[ws_frame]") {
  auto is_1002 = [](const std::string& bytes) {
    auto evs = read_all(bytes);
    return evs.size() == 1 && evs[0].kind == ws::event::fail
           && evs[0].code == ws::close_protocol_error;
  };
  CHECK(is_1002(client_frame(0xC1, "rsv1")));                 // reserved bit
  CHECK(is_1002(client_frame(0x83, "op3")));                  // unknown opcode
  CHECK(is_1002(client_frame(0x09, "frag")));                 // fragmented ping
  CHECK(is_1002(client_frame(0x89, std::string(126, 'p'))));  // control frame too long
  CHECK(is_1002(cont("orphan")));                             // continuation first
  CHECK(is_1002(text("a", false) + text("b")));               // text inside a message
  CHECK(is_1002(client_frame(0x88, "x")));                    // one-byte close payload
  std::string top_bit = "\x81\xFF\x80";
  top_bit += std::string(7, '\0') + "abcd";
  CHECK(is_1002(top_bit));
}

TEST_CASE("close frames carry code and reason; invalid codes fail with 1002", "[ws_frame]") {
  auto evs = read_all(client_frame(0x88, close_payload(1000, "bye")));
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].kind == ws::event::close);
  CHECK(evs[0].code == 1000);
  CHECK(evs[0].payload == "bye");
  evs = read_all(client_frame(0x88, ""));
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].code == ws::close_no_status);
  for (uint16_t bad : {0, 999, 1004, 1005, 1006, 1015, 2000, 2999, 5000, 65535}) {
    evs = read_all(client_frame(0x88, close_payload(bad)));
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].kind == ws::event::fail);
    CHECK(evs[0].code == ws::close_protocol_error);
  }
  for (uint16_t good : {1000, 1001, 1003, 1011, 3000, 4999}) {
    evs = read_all(client_frame(0x88, close_payload(good)));
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].kind == ws::event::close);
  }
  evs = read_all(client_frame(0x88, close_payload(1000, "\xff")));
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].code == ws::close_invalid_payload);
}

TEST_CASE("after a failure the reader keeps failing with the same code", "[ws_frame]") {
  ws::reader r{1000};
  r.feed(client_frame(0x83, "reserved opcode") + text("ignored"));
  CHECK(r.next().code == ws::close_protocol_error);
  CHECK(r.next().code == ws::close_protocol_error);
}

TEST_CASE("server frames use the shortest length form and no mask", "[ws_frame]") {
  std::string out;
  ws::append_header(out, ws::opcode::text, 5);
  CHECK(out == std::string("\x81\x05", 2));
  out.clear();
  ws::append_header(out, ws::opcode::text, 126);
  CHECK(out == std::string("\x81\x7E\x00\x7E", 4));
  out.clear();
  ws::append_header(out, ws::opcode::text, 65536);
  CHECK(out == std::string("\x81\x7F\x00\x00\x00\x00\x00\x01\x00\x00", 10));
  CHECK(ws::make_close_frame(1000, "EOF") == std::string("\x88\x05\x03\xE8" "EOF", 7));
  auto long_reason = ws::make_close_frame(1000, std::string(300, 'r'));
  CHECK(long_reason.size() == 2 + 125);
}

TEST_CASE("a server frame parses back through the reader", "[ws_frame]") {
  auto frame = ws::make_frame(ws::opcode::text, "round trip");
  auto evs = read_all(frame);
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].payload == "round trip");
}

TEST_CASE("random and truncated input never crashes and stays bounded", "[ws_frame]") {
  std::mt19937 rng{42};
  std::string good = text("abc") + client_frame(0x89, "p") + text("a", false) + cont("b");
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = good;
    auto flips = rng() % 4;
    for (unsigned i = 0; i < flips; ++i)
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    bytes.resize(rng() % (bytes.size() + 1));
    ws::reader r{64};
    r.feed(bytes);
    for (int i = 0; i < 100; ++i) {
      auto ev = r.next();
      if (ev.kind == ws::event::need_more || ev.kind == ws::event::fail)
        break;
      CHECK(ev.payload.size() <= 64 + 125);
    }
    CHECK(r.buffered() <= bytes.size());
  }
}

TEST_CASE("the buffers shrink again after a large message", "[ws_frame]") {
  ws::reader r{8 << 20};
  r.feed(text(std::string(4 << 20, 'l')));
  auto ev = r.next();
  REQUIRE(ev.kind == ws::event::text);
  r.prepare(4096);
  CHECK(r.capacity() < (1 << 20) + 8192);
}

TEST_CASE("UTF-8 validation follows RFC 3629", "[ws_frame]") {
  CHECK(ws::is_valid_utf8(""));
  CHECK(ws::is_valid_utf8("plain ascii, long enough for the fast path"));
  CHECK(ws::is_valid_utf8("\xC3\xBC\xE2\x82\xAC\xF0\x9F\x98\x80"));
  CHECK(ws::is_valid_utf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  CHECK_FALSE(ws::is_valid_utf8("\x80"));         // lone continuation byte
  CHECK_FALSE(ws::is_valid_utf8("\xE0\x80\xAF")); // overlong
  CHECK_FALSE(ws::is_valid_utf8("\xF8\x88\x80\x80\x80"));
}

TEST_CASE("unmasking is exact at every length and key phase", "[ws_frame]") {
  // The reader unmasks 16 bytes at a time with an overlapping last block; every length
  // around the block sizes, every byte value and a key with all four bytes distinct.
  std::mt19937 rng{7};
  for (size_t n = 0; n <= 80; ++n) {
    std::string payload(n, '\0');
    for (auto& c : payload)
      c = static_cast<char>(rng() % 0x80); // ASCII
    for (auto key : {std::string_view{"\x11\x22\x33\x44", 4},
                     std::string_view{"\xA5\x00\xFF\x3C", 4}}) {
      auto evs = read_all(client_frame(0x82, payload, key) + client_frame(0x81, payload, key));
      REQUIRE(evs.size() == 2);
      CHECK(evs[0].payload == payload);
      CHECK(evs[1].kind == ws::event::text);
      CHECK(evs[1].payload == payload);
    }
  }
}

TEST_CASE("a non-ASCII byte anywhere in a masked text message is validated", "[ws_frame]") {
  // An all-ASCII message skips UTF-8 validation; one byte >= 0x80 at any offset (block,
  // overlapping tail, short tail) must bring it back.
  for (size_t n = 1; n <= 70; ++n) {
    for (size_t at = 0; at < n; ++at) {
      std::string bad(n, 'a');
      bad[at] = '\xff';
      auto evs = read_all(text(bad));
      REQUIRE(evs.size() == 1);
      CHECK(evs[0].kind == ws::event::fail);
      CHECK(evs[0].code == ws::close_invalid_payload);
      if (at + 2 <= n) {
        std::string good(n, 'a');
        good[at] = '\xC3'; // U+00FC
        good[at + 1] = '\xBC';
        auto ok = read_all(text(good));
        REQUIRE(ok.size() == 1);
        CHECK(ok[0].kind == ws::event::text);
        CHECK(ok[0].payload == good);
      }
    }
  }
}

TEST_CASE("invalid UTF-8 is found in any fragment and in unmasked frames", "[ws_frame]") {
  // The bad byte in the first, middle or last fragment; the others ASCII.
  for (int which = 0; which < 3; ++which) {
    std::string parts[3] = {std::string(20, 'a'), std::string(5, 'b'), std::string(33, 'c')};
    parts[which][which] = '\x80';
    auto evs = read_all(text(parts[0], false) + cont(parts[1], false) + cont(parts[2]));
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].kind == ws::event::fail);
    CHECK(evs[0].code == ws::close_invalid_payload);
  }
  // An ASCII fragment after a non-ASCII one does not clear the need to validate.
  auto evs = read_all(text("\xE2\x82", false) + cont(std::string(40, 'x')));
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].kind == ws::event::fail);
  // Unmasked frames are validated too (they skip the unmasking pass).
  evs = read_all(client_frame(0x81, std::string(30, 'q') + "\xC0\xAF", ""));
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].kind == ws::event::fail);
  CHECK(evs[0].code == ws::close_invalid_payload);
}

TEST_CASE("UTF-8 validation finds a bad byte after long ASCII runs", "[ws_frame]") {
  for (size_t at = 0; at < 48; ++at) {
    std::string s(48, 'z');
    s[at] = '\xF5';
    CHECK_FALSE(ws::is_valid_utf8(s));
    s[at] = 'z';
    CHECK(ws::is_valid_utf8(s));
  }
}
