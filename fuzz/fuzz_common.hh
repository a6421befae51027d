#pragma once

// What every fuzz target shares (doc/fuzzing.md):
// - FUZZ_CHECK: an invariant; when it breaks, the target prints what broke and aborts, which
//   libFuzzer reports as a finding and saves the input.
// - seeds(): each target defines the inputs its corpus starts from, built from the unit
//   tests' vectors. fuzz_common.cc writes them when the target runs with
//   BROKER_FUZZ_WRITE_SEEDS=<dir> (scripts/fuzz seeds) instead of fuzzing.
// - record_reader: the small framing several targets use to carry a sequence of steps in
//   one input: each record is [op u8][arg u8][length u16 big-endian][length bytes].
//
// Targets are single-threaded; nothing here is shared between threads.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace broker::fuzz {

/// One starting input of a corpus; `name` becomes the file name "seed-<name>".
struct seed {
  std::string name;
  std::string bytes;
};

/// Defined by each target: its seeds.
std::vector<seed> seeds();

/// Prints the broken invariant with `detail` and aborts.
[[noreturn]] void violated(const char* expr, const char* file, int line,
                           const std::string& detail);

/// Checks an invariant of the code under test.
#define FUZZ_CHECK(cond)                                                                   \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::broker::fuzz::violated(#cond, __FILE__, __LINE__, {});                             \
  } while (false)

/// Checks an invariant and prints `detail` (a std::string expression) when it breaks.
#define FUZZ_CHECK_MSG(cond, detail)                                                       \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::broker::fuzz::violated(#cond, __FILE__, __LINE__, (detail));                       \
  } while (false)

/// The fuzzer's input as text.
inline std::string_view as_text(const uint8_t* data, size_t size) noexcept {
  return {reinterpret_cast<const char*>(data), size};
}

/// Bytes from hex digits; spaces group bytes for the reader (as in the unit tests). Any
/// other character is a bug in a seed table and aborts.
std::string from_hex(std::string_view text);

/// Lower-case hex of `bytes`, for failure details.
std::string to_hex(std::string_view bytes);

/// One step of a record-framed input.
struct record {
  uint8_t op = 0;
  uint8_t arg = 0;
  std::string_view body;
};

/// Splits an input into records; a truncated last record ends the input.
class record_reader {
public:
  explicit record_reader(std::string_view input) noexcept : in_(input) {}

  /// Fills `out` with the next record; false at the end.
  bool next(record& out) noexcept;

private:
  std::string_view in_;
  size_t pos_ = 0;
};

/// The clock step of a record's `arg` in the stateful targets: arg * 100 ms below 200, then
/// whole minutes (arg - 199), so that both heartbeats and long timeouts are a record away.
std::chrono::nanoseconds time_step(uint8_t arg) noexcept;

/// Appends one record (for seeds). Pre: body.size() <= 65535.
void append_record(std::string& out, uint8_t op, uint8_t arg, std::string_view body);

} // namespace broker::fuzz
