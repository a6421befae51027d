#include "fuzz_common.hh"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace broker::fuzz {

namespace {

constexpr size_t record_header_size = 4;

// Seed names become file names: keep them to a safe alphabet.
std::string file_name(const std::string& name) {
  std::string out = "seed-";
  for (char c : name) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || c == '-' || c == '_' || c == '.';
    out += safe ? c : '_';
  }
  return out;
}

// scripts/fuzz seeds: write the seeds into `dir` and stop before fuzzing starts.
[[noreturn]] void write_seeds(const std::string& dir) {
  int written = 0;
  for (const auto& s : seeds()) {
    auto path = dir + "/" + file_name(s.name);
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out.write(s.bytes.data(), static_cast<std::streamsize>(s.bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      std::exit(1);
    }
    ++written;
  }
  std::printf("wrote %d seeds to %s\n", written, dir.c_str());
  std::exit(0);
}

} // namespace

void violated(const char* expr, const char* file, int line, const std::string& detail) {
  std::fprintf(stderr, "\n*** fuzz invariant violated: %s\n    at %s:%d\n", expr, file, line);
  if (!detail.empty())
    std::fprintf(stderr, "    %s\n", detail.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string from_hex(std::string_view text) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    violated("hex digit", __FILE__, __LINE__, std::string{"bad seed hex: "} + c);
  };
  std::string out;
  int hi = -1;
  for (char c : text) {
    if (c == ' ')
      continue;
    if (hi < 0) {
      hi = nibble(c);
    } else {
      out += static_cast<char>((hi << 4) | nibble(c));
      hi = -1;
    }
  }
  if (hi >= 0)
    violated("even number of hex digits", __FILE__, __LINE__, std::string{text});
  return out;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    auto b = static_cast<uint8_t>(c);
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

bool record_reader::next(record& out) noexcept {
  if (in_.size() - pos_ < record_header_size)
    return false;
  auto byte = [this](size_t i) { return static_cast<uint8_t>(in_[pos_ + i]); };
  size_t len = (size_t{byte(2)} << 8) | byte(3);
  if (in_.size() - pos_ - record_header_size < len)
    return false;
  out.op = byte(0);
  out.arg = byte(1);
  out.body = in_.substr(pos_ + record_header_size, len);
  pos_ += record_header_size + len;
  return true;
}

std::chrono::nanoseconds time_step(uint8_t arg) noexcept {
  constexpr uint8_t minutes_from = 200;
  if (arg < minutes_from)
    return std::chrono::milliseconds{100} * arg;
  return std::chrono::minutes{arg - minutes_from + 1};
}

void append_record(std::string& out, uint8_t op, uint8_t arg, std::string_view body) {
  assert(body.size() <= 0xFFFF);
  out += static_cast<char>(op);
  out += static_cast<char>(arg);
  out += static_cast<char>(body.size() >> 8);
  out += static_cast<char>(body.size() & 0xFF);
  out.append(body);
}

} // namespace broker::fuzz

// libFuzzer calls this once before fuzzing.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("BROKER_FUZZ_WRITE_SEEDS"))
    broker::fuzz::write_seeds(dir);
  return 0;
}
