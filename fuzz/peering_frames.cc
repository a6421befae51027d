// Fuzz target: the peering byte stream (peering/wire frame_reader) and every payload it
// yields. Input: [control][chunking seed][stream bytes...].
//   control bits 0-1: the phase-3 frame limit (64 MiB, 16, 1 KiB, 64 KiB)
//   control bits 4-7: handshake frames read before enter_operation() (0: at once)
// The stream is fed in chunks of pseudo-random sizes drawn from the chunking seed.
//
// Checks: the reader returns exactly the frames, and fails exactly where, a plain reference
// parser of the whole stream does (so chunking and lazy compaction change nothing); no frame
// exceeds its phase's limit; a failure is sticky; buffered() never exceeds what was fed.
// Handshake payloads and phase-3 payloads go through peering_checks.hh.

#include "fuzz_common.hh"
#include "peering_checks.hh"
#include "peering_vectors.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/peering/wire.hh"

#include <random>

using namespace broker;
namespace wire = internal::wire;

namespace {

constexpr uint32_t frame_limits[] = {wire::default_max_frame_size, 16, 1024, 65536};

// The frame rules of doc/protocol/peering.md §1 applied to the whole stream at once.
class reference_reader {
public:
  reference_reader(std::string_view stream, uint32_t limit) : in_(stream), limit_(limit) {}

  // The next frame among the first `available` bytes: 1 frame, 0 need more, -1 failed.
  int next(size_t available, bool handshake, std::string_view& payload) {
    for (;;) {
      if (available - pos_ < wire::length_prefix_size)
        return 0;
      uint32_t len = 0;
      for (size_t i = 0; i < wire::length_prefix_size; ++i)
        len = (len << 8) | static_cast<uint8_t>(in_[pos_ + i]);
      if (len == 0 && handshake)
        return -1;
      if (len == 0) {
        pos_ += wire::length_prefix_size;
        continue;
      }
      if (len > (handshake ? wire::max_handshake_frame_size : limit_))
        return -1;
      if (available - pos_ - wire::length_prefix_size < len)
        return 0;
      payload = in_.substr(pos_ + wire::length_prefix_size, len);
      pos_ += wire::length_prefix_size + len;
      return 1;
    }
  }

  size_t pos() const noexcept { return pos_; }

private:
  std::string_view in_;
  uint32_t limit_;
  size_t pos_ = 0;
};

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  std::string handshake;
  size_t count = 0;
  for (auto& f : handshake_frames()) {
    if (f.name == "hello-b" || f.name == "version-select-b" || f.name == "originator-syn-test"
        || f.name == "originator-ack") {
      handshake += f.bytes;
      ++count;
    }
  }
  std::string phase3;
  for (auto& f : node_frames())
    phase3 += f.bytes;
  auto control = [](size_t handshake_frames, uint8_t limit) {
    return std::string{static_cast<char>((handshake_frames << 4) | limit), '\x2a'};
  };
  std::vector<seed> result{
    {"conversation", control(count, 0) + handshake + phase3},
    {"phase3-only", control(0, 0) + phase3},
    {"phase3-limit-16", control(0, 1) + phase3},
    {"handshake-only", control(15, 0) + handshake},
  };
  for (auto& f : handshake_frames())
    result.push_back({"handshake-" + f.name, control(1, 0) + f.bytes});
  return result;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2)
    return 0;
  auto control = data[0];
  std::minstd_rand chunks{data[1]};
  auto stream = fuzz::as_text(data + 2, size - 2);
  auto limit = frame_limits[control & 0x03];
  size_t handshake_frames = control >> 4;
  wire::frame_reader reader{limit};
  reference_reader ref{stream, limit};
  if (handshake_frames == 0)
    reader.enter_operation();
  size_t fed = 0;
  bool failed = false;
  while (fed < stream.size() && !failed) {
    auto n = std::min<size_t>(stream.size() - fed, 1 + chunks() % 64);
    reader.feed(stream.substr(fed, n));
    fed += n;
    for (;;) {
      auto handshake = reader.current_phase() == wire::frame_reader::phase::handshake;
      std::string_view expected;
      auto want = ref.next(fed, handshake, expected);
      auto res = reader.next();
      FUZZ_CHECK(reader.buffered() <= fed);
      if (want == 0) {
        FUZZ_CHECK(res.kind == wire::frame_reader::status::need_more);
        FUZZ_CHECK(reader.buffered() == fed - ref.pos());
        break;
      }
      if (want < 0) {
        FUZZ_CHECK(res.kind == wire::frame_reader::status::failed);
        FUZZ_CHECK(res.err == ec::invalid_message);
        // Sticky, even with a valid frame after it.
        reader.feed(std::string_view{"\x00\x00\x00\x01x", 5});
        FUZZ_CHECK(reader.next().kind == wire::frame_reader::status::failed);
        failed = true;
        break;
      }
      FUZZ_CHECK(res.kind == wire::frame_reader::status::frame);
      FUZZ_CHECK_MSG(res.payload == expected, fuzz::to_hex(res.payload) + " vs "
                                                + fuzz::to_hex(expected));
      if (handshake) {
        fuzz::check_handshake_payload(res.payload);
        if (--handshake_frames == 0)
          reader.enter_operation();
      } else {
        fuzz::check_node_payload(res.payload, internal::bin::default_max_depth);
      }
    }
  }
  return 0;
}
