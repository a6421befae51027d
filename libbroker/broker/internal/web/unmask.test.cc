// frame_masker: unmasked client frames become masked with the zero key, everything else
// passes unchanged, whatever the split of the byte stream and the size of the output.

#include "broker/internal/web/unmask.hh"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using broker::internal::frame_masker;

namespace {

using bytes = std::vector<std::byte>;

constexpr uint8_t op_cont = 0x0, op_text = 0x1, op_binary = 0x2, op_close = 0x8,
                  op_ping = 0x9;

struct frame {
  bool fin = true;
  uint8_t opcode = op_text;
  bytes payload;
  bool masked = false;
  uint8_t key[4] = {0x11, 0x22, 0x33, 0x44};
};

bytes payload_of(size_t n, uint8_t seed = 0) {
  bytes out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = std::byte(static_cast<uint8_t>(seed + i * 7));
  return out;
}

bytes payload_of(const std::string& text) {
  bytes out;
  for (auto c : text)
    out.push_back(std::byte(static_cast<uint8_t>(c)));
  return out;
}

/// A frame as the client sends it, or (`as_server_sees`) as Beast must see it.
bytes encode(const frame& f, bool as_server_sees = false) {
  bytes out;
  auto push = [&out](uint64_t b) { out.push_back(std::byte(static_cast<uint8_t>(b))); };
  push((f.fin ? 0x80 : 0) | f.opcode);
  bool masked = f.masked || as_server_sees;
  uint8_t mask = masked ? 0x80 : 0;
  auto n = f.payload.size();
  if (n < 126) {
    push(mask | n);
  } else if (n < 65536) {
    push(mask | 126);
    push(n >> 8);
    push(n);
  } else {
    push(mask | 127);
    for (int shift = 56; shift >= 0; shift -= 8)
      push(n >> shift);
  }
  if (f.masked) {
    for (auto k : f.key)
      push(k);
    for (size_t i = 0; i < n; ++i)
      out.push_back(f.payload[i] ^ std::byte{f.key[i % 4]});
  } else {
    if (as_server_sees)
      for (int i = 0; i < 4; ++i)
        push(0);
    out.insert(out.end(), f.payload.begin(), f.payload.end());
  }
  return out;
}

bytes concat(const std::vector<frame>& frames, bool as_server_sees) {
  bytes out;
  for (auto& f : frames) {
    auto b = encode(f, as_server_sees);
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

/// Feeds `in` in pieces cut at `cuts`, with an output buffer of `out_size` bytes per call.
bytes run(frame_masker& m, const bytes& in, const std::vector<size_t>& cuts,
          size_t out_size) {
  bytes result;
  bytes out(out_size);
  size_t pos = 0;
  auto feed_until = [&](size_t end) {
    while (pos < end) {
      auto p = m.transform(in.data() + pos, end - pos, out.data(), out.size());
      REQUIRE(p.consumed + p.produced > 0); // Always progress.
      pos += p.consumed;
      result.insert(result.end(), out.begin(), out.begin() + p.produced);
    }
    // Drain what the masker still holds once its input is used up.
    for (;;) {
      auto p = m.transform(nullptr, 0, out.data(), out.size());
      if (p.produced == 0)
        break;
      result.insert(result.end(), out.begin(), out.begin() + p.produced);
    }
  };
  for (auto cut : cuts)
    feed_until(cut);
  feed_until(in.size());
  return result;
}

bytes run_whole(const bytes& in, size_t out_size = 1 << 20) {
  frame_masker m;
  return run(m, in, {}, out_size);
}

} // namespace

TEST_CASE("an empty unmasked text frame gets the mask bit and a zero key",
          "[web_socket][unmask]") {
  frame f;
  auto out = run_whole(encode(f));
  CHECK(out == bytes{std::byte{0x81}, std::byte{0x80}, std::byte{0}, std::byte{0},
                     std::byte{0}, std::byte{0}});
}

TEST_CASE("masked frames pass through byte for byte", "[web_socket][unmask]") {
  for (size_t n : {0, 1, 125, 126, 65535, 65536, 70000}) {
    INFO("payload size " << n);
    frame f;
    f.masked = true;
    f.payload = payload_of(n);
    auto in = encode(f);
    frame_masker m;
    CHECK(run(m, in, {}, 4096) == in);
    CHECK(m.unmasked_frames() == 0);
  }
}

TEST_CASE("unmasked frames keep 7-, 16- and 64-bit lengths and their payload",
          "[web_socket][unmask]") {
  for (size_t n : {1, 125, 126, 127, 65535, 65536, 70000}) {
    INFO("payload size " << n);
    frame f;
    f.payload = payload_of(n, 3);
    frame_masker m;
    CHECK(run(m, encode(f), {}, 4096) == encode(f, true));
    CHECK(m.unmasked_frames() == 1);
  }
}

TEST_CASE("a header split at every byte offset is rewritten the same way",
          "[web_socket][unmask]") {
  std::vector<frame> frames(4);
  frames[0].payload = payload_of("hello");
  frames[1].payload = payload_of(300, 1); // 16-bit length
  frames[1].masked = true;
  frames[2].payload = payload_of(66000, 2); // 64-bit length
  frames[3].opcode = op_close;
  frames[3].payload = payload_of(std::string{"\x03\xe8"});
  auto in = concat(frames, false);
  auto expected = concat(frames, true);
  // Cuts at every offset of the first headers and around each frame boundary.
  std::vector<size_t> offsets;
  for (size_t i = 1; i < 40; ++i)
    offsets.push_back(i);
  size_t boundary = 0;
  for (auto& f : frames) {
    boundary += encode(f).size();
    for (size_t d = 0; d < frame_masker::max_header_size + 2; ++d)
      if (boundary + d < in.size())
        offsets.push_back(boundary + d);
  }
  for (auto cut : offsets) {
    INFO("cut at " << cut);
    frame_masker m;
    CHECK(run(m, in, {cut}, 4096) == expected);
  }
  for (size_t out_size : {1, 2, 3, 5, 13, 14, 15}) {
    INFO("output buffer of " << out_size << " bytes");
    frame_masker m;
    CHECK(run(m, in, {}, out_size) == expected);
  }
  SECTION("one byte at a time") {
    std::vector<size_t> every;
    for (size_t i = 1; i < in.size(); ++i)
      every.push_back(i);
    frame_masker m;
    CHECK(run(m, in, every, 7) == expected);
    CHECK(m.unmasked_frames() == 3);
  }
}

TEST_CASE("fragments and control frames between them are each rewritten",
          "[web_socket][unmask]") {
  std::vector<frame> frames(5);
  frames[0].fin = false;
  frames[0].payload = payload_of("[\"/a");
  frames[1].opcode = op_ping;
  frames[1].payload = payload_of("ping");
  frames[1].masked = true;
  frames[2].fin = false;
  frames[2].opcode = op_cont;
  frames[2].payload = payload_of("\", ");
  frames[3].opcode = op_cont;
  frames[3].payload = payload_of("\"/b\"]");
  frames[3].masked = true;
  frames[4].opcode = op_binary;
  CHECK(run_whole(concat(frames, false)) == concat(frames, true));
}

TEST_CASE("random mixes of masked and unmasked frames survive random splits",
          "[web_socket][unmask]") {
  std::mt19937 rng{42};
  for (int round = 0; round < 200; ++round) {
    std::vector<frame> frames(1 + rng() % 8);
    for (auto& f : frames) {
      f.masked = rng() % 2 == 0;
      f.opcode = (rng() % 4 == 0) ? op_ping : op_text;
      static constexpr size_t sizes[] = {0, 1, 5, 125, 126, 200, 65535, 65536, 70001};
      f.payload = payload_of(f.opcode == op_ping ? rng() % 126 : sizes[rng() % 9], rng());
      for (auto& k : f.key)
        k = static_cast<uint8_t>(rng());
    }
    auto in = concat(frames, false);
    std::vector<size_t> cuts;
    for (size_t pos = 0; pos < in.size();) {
      pos += 1 + rng() % (rng() % 2 ? 20 : 5000);
      if (pos < in.size())
        cuts.push_back(pos);
    }
    frame_masker m;
    INFO("round " << round);
    REQUIRE(run(m, in, cuts, 1 + rng() % 9000) == concat(frames, true));
  }
}

TEST_CASE("passthrough() names the payload a caller may move itself",
          "[web_socket][unmask]") {
  frame f;
  f.payload = payload_of(1000);
  auto in = encode(f);
  frame_masker m;
  bytes out(64);
  // Only the 4-byte header: nothing to pass through until the header is produced.
  auto p = m.transform(in.data(), 4, out.data(), 0);
  CHECK(p.consumed == 4);
  CHECK(p.produced == 0);
  CHECK(m.passthrough() == 0);
  p = m.transform(nullptr, 0, out.data(), out.size());
  CHECK(p.produced == 8); // 4 header bytes + 4 key bytes
  CHECK(m.passthrough() == 1000);
  m.skip(600);
  CHECK(m.passthrough() == 400);
  p = m.transform(in.data() + 604, 400, out.data(), out.size());
  CHECK(p.consumed == 64);
  CHECK(m.passthrough() == 336);
  m.skip(336);
  CHECK(m.passthrough() == 0);
  // The next frame's header follows.
  auto next = encode(frame{});
  p = m.transform(next.data(), next.size(), out.data(), out.size());
  CHECK(p.produced == 6);
}

TEST_CASE("hostile headers never crash and flow on for Beast to reject",
          "[web_socket][unmask]") {
  SECTION("a 64-bit length with the top bit set") {
    bytes in{std::byte{0x81}, std::byte{127}};
    for (int i = 0; i < 8; ++i)
      in.push_back(std::byte{0xFF});
    in.push_back(std::byte{'x'});
    frame_masker m;
    auto out = run(m, in, {3, 7}, 5);
    REQUIRE(out.size() == in.size() + 4);
    CHECK(out[1] == std::byte{0xFF});
    CHECK(m.passthrough() == ~uint64_t{0} - 1);
  }
  SECTION("random garbage") {
    std::mt19937 rng{7};
    for (int round = 0; round < 500; ++round) {
      bytes in(1 + rng() % 300);
      for (auto& b : in)
        b = std::byte(static_cast<uint8_t>(rng()));
      frame_masker m;
      auto out = run(m, in, {rng() % in.size()}, 1 + rng() % 32);
      // Each header grows by at most the 4 key bytes; only an unfinished header is held.
      CHECK(out.size() + frame_masker::max_header_size >= in.size());
      CHECK(out.size() <= in.size() + 4 * (in.size() / 2 + 1));
    }
  }
}
