// Fuzz target: the WebSocket unmasking layer (web/unmask frame_masker) on the byte stream a
// client sends after the upgrade. Input: [chunking seed][mode][client bytes...]; the mode's
// bit 0 lets the harness move passthrough() payload bytes itself with skip(), as the server
// does when it reads payloads straight into place.
//
// Checks: whatever the split of input and output buffers (including empty and null output),
// the masker's output equals a reference rewrite of the whole stream (unmasked headers get
// the mask bit and a zero key, everything else passes unchanged; a trailing incomplete
// header is held back); it never reads or writes past the buffers it is given, makes
// progress whenever it can, and counts the frames it masked.

#include "fuzz_common.hh"

#include "broker/internal/web/unmask.hh"

#include <algorithm>
#include <random>
#include <vector>

using broker::internal::frame_masker;

namespace {

constexpr uint8_t mask_bit = 0x80;

// The whole-stream rewrite the masker must reproduce chunk by chunk.
std::string reference(std::string_view in, uint64_t& unmasked) {
  std::string out;
  size_t pos = 0;
  unmasked = 0;
  while (in.size() - pos >= 2) {
    auto second = static_cast<uint8_t>(in[pos + 1]);
    bool masked = second & mask_bit;
    auto len7 = second & 0x7F;
    size_t ext = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
    size_t header = 2 + ext + (masked ? 4 : 0);
    if (in.size() - pos < header)
      break;
    uint64_t len = len7;
    if (ext > 0) {
      len = 0;
      for (size_t i = 0; i < ext; ++i)
        len = (len << 8) | static_cast<uint8_t>(in[pos + 2 + i]);
    }
    auto head = std::string{in.substr(pos, header)};
    if (!masked) {
      head[1] = static_cast<char>(second | mask_bit);
      head.append(4, '\0');
      ++unmasked;
    }
    out += head;
    pos += header;
    auto n = static_cast<size_t>(std::min<uint64_t>(len, in.size() - pos));
    out.append(in.substr(pos, n));
    pos += n;
  }
  return out;
}

std::string frame(uint8_t first, std::string_view payload, bool masked) {
  std::string out(1, static_cast<char>(first));
  auto n = payload.size();
  char mask = masked ? static_cast<char>(mask_bit) : 0;
  if (n < 126) {
    out += static_cast<char>(mask | static_cast<char>(n));
  } else {
    out += static_cast<char>(mask | 126);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(n & 0xFF);
  }
  if (masked)
    out += "\x11\x22\x33\x44";
  out.append(payload);
  return out;
}

} // namespace

std::vector<broker::fuzz::seed> broker::fuzz::seeds() {
  const std::string filter = R"(["/topic/test"])";
  const std::string message =
    R"({"type":"data-message","topic":"/t","@data-type":"count","data":1})";
  auto control = [](uint8_t mode) { return std::string{'\x07', static_cast<char>(mode)}; };
  std::string large(300, 'x');
  std::string large64 = "\x82\x7f" + from_hex("0000000000010000") + std::string(40, 'y');
  return {
    {"unmasked-text", control(0) + frame(0x81, filter, false) + frame(0x81, message, false)},
    {"masked-text", control(1) + frame(0x81, filter, true) + frame(0x81, message, true)},
    {"mixed", control(1) + frame(0x81, filter, true) + frame(0x81, message, false)
                + frame(0x89, "ping", false) + frame(0x88, "\x03\xe8", true)},
    {"fragmented", control(0) + frame(0x01, "[\"/a", false) + frame(0x80, "\"]", false)},
    {"length-16", control(1) + frame(0x82, large, false) + frame(0x82, large, true)},
    {"length-64-truncated", control(0) + large64},
    {"empty-frames", control(0) + frame(0x81, "", false) + frame(0x81, "", true)},
    {"split-header", control(0) + std::string{"\x81"}},
  };
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2)
    return 0;
  std::minstd_rand rng{data[0]};
  bool use_skip = data[1] & 1;
  auto in = broker::fuzz::as_text(data + 2, size - 2);
  auto bytes = reinterpret_cast<const std::byte*>(in.data());
  frame_masker masker;
  std::string out;
  std::vector<std::byte> buf;
  size_t pos = 0;
  size_t calls = 0;
  for (;;) {
    FUZZ_CHECK_MSG(++calls < 16 * in.size() + 256, "no progress");
    auto choice = rng() % 8;
    auto pass = masker.passthrough();
    if (use_skip && choice == 0 && pass > 0 && pos < in.size()) {
      auto n = static_cast<size_t>(std::min<uint64_t>({pass, in.size() - pos, 1 + rng() % 100}));
      out.append(in.substr(pos, n));
      masker.skip(n);
      pos += n;
      continue;
    }
    size_t in_n = std::min<size_t>(in.size() - pos, rng() % 40);
    size_t out_n = choice == 1 ? 0 : 1 + rng() % 40;
    buf.assign(out_n, std::byte{0xEE});
    auto p = masker.transform(bytes + pos, in_n, out_n == 0 ? nullptr : buf.data(), out_n);
    FUZZ_CHECK(p.consumed <= in_n && p.produced <= out_n);
    if (in_n > 0 && out_n > 0)
      FUZZ_CHECK(p.consumed + p.produced > 0);
    out.append(reinterpret_cast<const char*>(buf.data()), p.produced);
    pos += p.consumed;
    // Drained: all input taken and a call with room for output produced nothing.
    if (pos == in.size() && out_n > 0 && p.produced == 0 && in_n == 0)
      break;
  }
  uint64_t unmasked = 0;
  auto expected = reference(in, unmasked);
  FUZZ_CHECK_MSG(out == expected,
                 broker::fuzz::to_hex(out) + " vs " + broker::fuzz::to_hex(expected));
  FUZZ_CHECK(masker.unmasked_frames() == unmasked);
  return 0;
}
