// Fuzz target: the WebSocket frame reader (web/ws_frame ws::reader), which unmasks, checks and
// reassembles what a client sends after the upgrade, and the frame writers behind it.
// Input: [chunking seed][limit][client bytes...]; the limit byte picks the message size
// limit (16, 125, 4096 or 70000 bytes; libFuzzer's inputs stay below the last).
//
// Checks:
// - The reader yields the same events (kind, close code, payload) as a whole-stream
//   reference parser of RFC 6455 written here, whether the bytes arrive at once (feed()) or
//   in random chunks through prepare()/commit() with next() in between; it stops at the
//   same place; a failure is sticky (every later next() repeats it, whatever arrives).
// - is_valid_utf8() agrees with a reference UTF-8 decoder (RFC 3629) on every payload and
//   on the input itself.
// - Text payloads are valid UTF-8 within the limit, control payloads at most 125 bytes,
//   close codes valid (or 1005 for none); the buffers stay within the limit plus a read.
// - What the server writes parses back: a text event's payload framed with append_header()
//   (and the same frame masked), ping and pong payloads through make_frame(), a close event
//   and a failure's code and reason through make_close_frame().

#include "fuzz_common.hh"

#include "broker/internal/web/ws_frame.hh"

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace ws = broker::internal::ws;
namespace fuzz = broker::fuzz;

namespace {

constexpr size_t limits[] = {16, 125, 4096, 70000};
constexpr size_t max_chunk = 4096;

struct ev {
  ws::event::kind_type kind;
  uint16_t code;
  std::string payload;

  friend bool operator==(const ev& x, const ev& y) {
    // A failure's reason is for people: compare its code only.
    return x.kind == y.kind && x.code == y.code
           && (x.kind == ws::event::fail || x.payload == y.payload);
  }
};

std::string describe(const std::vector<ev>& xs) {
  static constexpr const char* names[] = {"need_more", "text", "ping", "pong", "close", "fail"};
  std::string out;
  for (auto& x : xs)
    out += std::string{names[x.kind]} + "(" + std::to_string(x.code) + ", "
           + std::to_string(x.payload.size()) + " bytes) ";
  return out;
}

// RFC 3629, one code point at a time, the slow and obvious way.
bool reference_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<uint8_t>(s[i]);
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size())
      return false; // Truncated.
    for (size_t k = 1; k <= n; ++k) {
      auto d = static_cast<uint8_t>(s[i + k]);
      if ((d & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr uint32_t min_of[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min_of[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

void check_utf8(std::string_view s) {
  FUZZ_CHECK_MSG(ws::is_valid_utf8(s) == reference_utf8(s), fuzz::to_hex(s));
}

bool valid_close_code(uint16_t code) {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014)
         || (code >= 3000 && code <= 4999);
}

// The whole stream at once: every event up to the end or the first failure.
std::vector<ev> reference(std::string_view in, size_t limit) {
  std::vector<ev> out;
  auto fail = [&out](uint16_t code) { out.push_back({ws::event::fail, code, {}}); };
  size_t pos = 0;
  bool in_message = false;
  bool binary = false; // The message under assembly began with a binary frame.
  std::string message;
  while (in.size() - pos >= 2) {
    auto b0 = static_cast<uint8_t>(in[pos]);
    auto b1 = static_cast<uint8_t>(in[pos + 1]);
    bool fin = b0 & 0x80;
    uint8_t op = b0 & 0x0F;
    bool masked = b1 & 0x80;
    uint64_t len = b1 & 0x7F;
    bool control = op >= 8;
    if ((b0 & 0x70) != 0 || (op > 2 && op < 8) || op > 10) {
      fail(1002);
      return out;
    }
    if (control && (!fin || len > 125)) {
      fail(1002);
      return out;
    }
    if ((op == 0 && !in_message) || ((op == 1 || op == 2) && in_message)) {
      fail(1002);
      return out;
    }
    size_t ext = len == 126 ? 2 : len == 127 ? 8 : 0;
    size_t header = 2 + ext + (masked ? 4 : 0);
    if (in.size() - pos < header)
      return out;
    if (ext > 0) {
      len = 0;
      for (size_t i = 0; i < ext; ++i)
        len = (len << 8) | static_cast<uint8_t>(in[pos + 2 + i]);
      if (len >> 63) {
        fail(1002);
        return out;
      }
    }
    if (!control && (in_message ? message.size() : 0) + static_cast<double>(len) > limit) {
      fail(1009);
      return out;
    }
    if (in.size() - pos - header < len)
      return out;
    std::string payload{in.substr(pos + header, static_cast<size_t>(len))};
    if (masked)
      for (size_t i = 0; i < payload.size(); ++i)
        payload[i] = static_cast<char>(payload[i] ^ in[pos + header - 4 + i % 4]);
    pos += header + static_cast<size_t>(len);
    switch (op) {
      case 0:
      case 1:
      case 2:
        if (op != 0) {
          message.clear();
          binary = op == 2;
        }
        message += payload;
        in_message = !fin;
        if (!fin)
          break;
        if (binary) { // Binary messages carry JSON too, without the UTF-8 rule.
          out.push_back({ws::event::binary, 0, message});
          break;
        }
        if (!reference_utf8(message)) {
          fail(1007);
          return out;
        }
        out.push_back({ws::event::text, 0, message});
        break;
      case 8:
        if (payload.empty()) {
          out.push_back({ws::event::close, 1005, {}});
          break;
        }
        if (payload.size() == 1) {
          fail(1002);
          return out;
        }
        {
          auto code = static_cast<uint16_t>((static_cast<uint8_t>(payload[0]) << 8)
                                            | static_cast<uint8_t>(payload[1]));
          if (!valid_close_code(code)) {
            fail(1002);
            return out;
          }
          auto reason = payload.substr(2);
          if (!reference_utf8(reason)) {
            fail(1007);
            return out;
          }
          out.push_back({ws::event::close, code, reason});
        }
        break;
      case 9:
        out.push_back({ws::event::ping, 0, payload});
        break;
      default:
        out.push_back({ws::event::pong, 0, payload});
    }
  }
  return out;
}

// Takes every event the reader has now; true if it failed.
bool drain(ws::reader& r, std::vector<ev>& out, size_t limit) {
  for (;;) {
    auto e = r.next();
    if (e.kind == ws::event::need_more)
      return false;
    out.push_back({e.kind, e.code, std::string{e.payload}});
    auto& x = out.back();
    switch (e.kind) {
      case ws::event::text:
        FUZZ_CHECK(x.payload.size() <= limit);
        FUZZ_CHECK(ws::is_valid_utf8(x.payload));
        break;
      case ws::event::binary:
        FUZZ_CHECK(x.payload.size() <= limit);
        break;
      case ws::event::ping:
      case ws::event::pong:
        FUZZ_CHECK(x.payload.size() <= ws::max_control_payload);
        break;
      case ws::event::close:
        FUZZ_CHECK(x.payload.size() + 2 <= ws::max_control_payload);
        FUZZ_CHECK(x.code == ws::close_no_status || ws::is_valid_close_code(x.code));
        break;
      case ws::event::fail: {
        FUZZ_CHECK(x.code == ws::close_protocol_error || x.code == ws::close_invalid_payload
                   || x.code == ws::close_too_big);
        FUZZ_CHECK(!x.payload.empty());
        // Sticky, with the same code.
        auto again = r.next();
        FUZZ_CHECK(again.kind == ws::event::fail && again.code == x.code);
        return true;
      }
      default:
        FUZZ_CHECK(false);
    }
  }
}

// The only event of `bytes` read by a fresh reader.
ev read_one(std::string_view bytes, size_t limit) {
  ws::reader r{limit};
  r.feed(bytes);
  std::vector<ev> got;
  drain(r, got, limit);
  FUZZ_CHECK_MSG(got.size() == 1, describe(got));
  return got.front();
}

// What the server writes parses back.
void check_writers(const ev& x, size_t limit, std::string_view key) {
  switch (x.kind) {
    case ws::event::text: {
      std::string frame;
      ws::append_header(frame, ws::opcode::text, x.payload.size());
      frame += x.payload;
      FUZZ_CHECK(read_one(frame, limit) == x);
      // The same frame as a client sends it: mask bit and key after the length.
      auto masked = frame.substr(0, frame.size() - x.payload.size());
      masked[1] = static_cast<char>(masked[1] | 0x80);
      masked.append(key.substr(0, 4));
      for (size_t i = 0; i < x.payload.size(); ++i)
        masked += static_cast<char>(x.payload[i] ^ key[i % 4]);
      FUZZ_CHECK(read_one(masked, limit) == x);
      break;
    }
    case ws::event::ping:
    case ws::event::pong: {
      auto op = x.kind == ws::event::ping ? ws::opcode::ping : ws::opcode::pong;
      FUZZ_CHECK(read_one(ws::make_frame(op, x.payload), limit) == x);
      break;
    }
    case ws::event::close:
      if (x.code != ws::close_no_status)
        FUZZ_CHECK(read_one(ws::make_close_frame(x.code, x.payload), limit) == x);
      break;
    case ws::event::fail: {
      // The close frame we answer a failure with.
      auto back = read_one(ws::make_close_frame(x.code, x.payload), limit);
      FUZZ_CHECK(back.kind == ws::event::close && back.code == x.code);
      FUZZ_CHECK(x.payload.substr(0, back.payload.size()) == back.payload);
      break;
    }
    default:
      break;
  }
}

std::string client_frame(uint8_t first, std::string_view payload, bool masked = true) {
  std::string out(1, static_cast<char>(first));
  uint8_t mask = masked ? 0x80 : 0;
  if (payload.size() < 126) {
    out += static_cast<char>(mask | payload.size());
  } else if (payload.size() <= 0xFFFF) {
    out += static_cast<char>(mask | 126);
    out += static_cast<char>(payload.size() >> 8);
    out += static_cast<char>(payload.size() & 0xFF);
  } else {
    out += static_cast<char>(mask | 127);
    for (int i = 7; i >= 0; --i)
      out += static_cast<char>((uint64_t{payload.size()} >> (8 * i)) & 0xFF);
  }
  static constexpr char key[] = "\x11\x22\x33\x44";
  if (masked)
    out.append(key, 4);
  for (size_t i = 0; i < payload.size(); ++i)
    out += masked ? static_cast<char>(payload[i] ^ key[i % 4]) : payload[i];
  return out;
}

std::string close_payload(uint16_t code, std::string_view reason = "") {
  std::string out{static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
  return out.append(reason);
}

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  // The frames of web/ws_frame.test.cc, behind a chunking seed and a limit byte (4096).
  auto with = [](uint8_t chunking, const std::string& bytes) {
    return std::string{static_cast<char>(chunking), '\x02'} + bytes;
  };
  auto text = [](std::string_view p, bool fin = true) {
    return client_frame((fin ? 0x80 : 0x00) | 0x1, p);
  };
  auto cont = [](std::string_view p, bool fin = true) {
    return client_frame((fin ? 0x80 : 0x00) | 0x0, p);
  };
  std::string smile = "\xF0\x9F\x98\x80";
  std::string top_bit = "\x81\xFF\x80";
  top_bit += std::string(7, '\0');
  std::string over_limit = "\x81\xFF";
  over_limit += std::string("\x00\x00\x01\x00\x00\x00\x00\x00", 8);
  return {
    {"masked-text", with(0, text("hello"))},
    {"unmasked-text", with(1, client_frame(0x81, "plain", false))},
    {"many-frames", with(2, text("a") + text(std::string(300, 'b')) + client_frame(0x89, "ping!")
                              + client_frame(0x8A, "pong") + text("z"))},
    // The 64-bit length form (longer frames only slow the fuzzer down: the reader takes
    // any length form, and the limits come from the limit byte).
    {"64-bit-length", with(3, std::string{"\x81\xFF", 2} + std::string(7, '\0') + "\x05"
                                + std::string{"\x11\x22\x33\x44", 4}
                                + client_frame(0x81, "hello").substr(6))},
    {"16-bit-length-over-4096", with(0x43, client_frame(0x81, std::string(5000, 'x')))},
    {"16-bit-length-within-70000",
     std::string{"\x44\x03", 2} + client_frame(0x81, std::string(5000, 'y'))},
    {"fragments-with-ping", with(4, text("one ", false) + client_frame(0x89, "p")
                                      + cont("two ", false) + cont("three"))},
    {"utf8-split", with(5, text(smile.substr(0, 2), false) + cont(smile.substr(2)))},
    {"invalid-utf8", with(6, text("\xED\xA0\x80") + text("\xF4\x90\x80\x80"))},
    {"binary", with(7, client_frame(0x82, "bin"))},
    {"too-big-fragmented", with(8, text(std::string(3000, 'a'), false)
                                     + cont(std::string(3000, 'b')))},
    {"limit-before-payload", with(9, over_limit)},
    {"reserved-bit", with(10, client_frame(0xC1, "rsv1"))},
    {"unknown-opcode", with(11, client_frame(0x83, "op3"))},
    {"fragmented-ping", with(12, client_frame(0x09, "frag"))},
    {"long-control", with(13, client_frame(0x89, std::string(126, 'p')))},
    {"continuation-first", with(14, cont("x"))},
    {"text-inside-message", with(15, text("a", false) + text("b"))},
    {"one-byte-close", with(16, client_frame(0x88, "x"))},
    {"top-bit-length", with(17, top_bit)},
    {"close-with-reason", with(18, client_frame(0x88, close_payload(1000, "bye")))},
    {"close-empty", with(19, client_frame(0x88, ""))},
    {"close-bad-code", with(20, client_frame(0x88, close_payload(1005)))},
    {"close-4999", with(21, client_frame(0x88, close_payload(4999, "private")))},
    {"close-bad-reason", with(22, client_frame(0x88, close_payload(1000, "\xff")))},
    {"after-failure", with(23, client_frame(0x82, "bin") + text("ignored"))},
    {"json-message", with(24, text(R"({"type":"data-message","topic":"/t","@data-type":)"
                                   R"("count","data":1})"))},
  };
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2)
    return 0;
  auto chunking = data[0];
  auto limit = limits[data[1] % std::size(limits)];
  auto in = fuzz::as_text(data + 2, size - 2);
  check_utf8(in);
  auto want = reference(in, limit);
  for (auto& x : want)
    check_utf8(x.payload);
  // All at once.
  {
    ws::reader r{limit};
    r.feed(in);
    std::vector<ev> got;
    drain(r, got, limit);
    FUZZ_CHECK_MSG(got == want, "whole: " + describe(got) + "| reference: " + describe(want));
  }
  // In chunks, through prepare() and commit() (sometimes less than prepared) or feed().
  ws::reader r{limit};
  std::minstd_rand rng{chunking + 1u};
  std::vector<ev> got;
  bool failed = false;
  size_t pos = 0;
  while (pos < in.size() && !failed) {
    size_t n = std::min<size_t>(in.size() - pos, 1 + rng() % (rng() % 4 == 0 ? max_chunk : 16));
    if (rng() % 3 == 0) {
      r.feed(in.substr(pos, n));
    } else {
      auto room = n + rng() % 64;
      auto* dst = r.prepare(room);
      std::copy_n(in.data() + pos, n, dst);
      r.commit(n);
    }
    pos += n;
    failed = drain(r, got, limit);
    if (!failed) {
      // Drained: at most one incomplete frame (header, payload within the limit or a control
      // frame's) and a message under assembly; the buffers hold that plus one read.
      FUZZ_CHECK(r.buffered()
                 <= 2 * limit + ws::max_header_size + ws::max_control_payload);
      FUZZ_CHECK(r.capacity() <= 4 * (limit + max_chunk + 256));
    }
  }
  FUZZ_CHECK_MSG(got == want, "chunked: " + describe(got) + "| reference: " + describe(want));
  // The reader keeps failing whatever arrives after a failure.
  if (failed) {
    r.feed("\x81\x80\x00\x00\x00\x00");
    auto e = r.next();
    FUZZ_CHECK(e.kind == ws::event::fail && e.code == got.back().code);
  }
  auto key = in.size() >= 4 ? in.substr(in.size() - 4) : std::string_view{"\x01\x02\x03\x04"};
  for (auto& x : got)
    check_writers(x, limit, key);
  return 0;
}
