// broker-bin-bench: cost of the bin v1 codec (a small harness, no Catch2).
//
// Shapes:
//   event    a Zeek event [1, 1, ["event_1", [42, "test", 1.2.3.4, 1.5]]] (74 bytes);
//   strings  a vector of 1000 strings of 20 bytes (22 KB; one allocation per string);
//   counts   a set of 1000 counts (9 KB; one tree node per element);
//   table    a table of 100 string keys to 4-element vectors.
//
// Usage: broker-bin-bench [--reps R]
//   Prints ns per encode() and per decode() for each shape: the median of R runs, each run
//   sized to about the same number of bytes.
//
// The file sits beside the unit it measures. libbroker globs every .cc under broker/ into
// the library, so the program is compiled only where BROKER_BIN_BENCH_PROGRAM is defined
// (bench/CMakeLists.txt).

#ifdef BROKER_BIN_BENCH_PROGRAM

#include "broker/internal/codec/bin.hh"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace broker;
namespace bin = broker::internal::bin;

namespace {

constexpr int default_reps = 5;
constexpr size_t bytes_per_run = 8 * 1024 * 1024;
constexpr int shape_size = 1000;
constexpr int table_size = 100;
constexpr size_t string_len = 20;

volatile size_t sink;

struct shape {
  const char* name;
  data value;
};

std::vector<shape> make_shapes() {
  std::vector<shape> result;
  vector args{integer{42}, "test", address::v4(1, 2, 3, 4), 1.5};
  result.push_back({"event", vector{count{1}, count{1}, vector{"event_1", std::move(args)}}});
  vector strings;
  for (int i = 0; i < shape_size; ++i)
    strings.emplace_back(std::string(string_len, static_cast<char>('a' + i % 26)));
  result.push_back({"strings", std::move(strings)});
  set counts;
  for (int i = 0; i < shape_size; ++i)
    counts.emplace(count{static_cast<uint64_t>(i)});
  result.push_back({"counts", std::move(counts)});
  table tbl;
  for (int i = 0; i < table_size; ++i)
    tbl.emplace("key-" + std::to_string(i), vector{count{1}, "x", 2.5, data{}});
  result.push_back({"table", std::move(tbl)});
  return result;
}

template <class F>
double median_ns(int reps, size_t ops, F&& run) {
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < ops; ++i)
      run();
    auto elapsed = std::chrono::steady_clock::now() - start;
    samples.push_back(std::chrono::duration<double, std::nano>(elapsed).count()
                      / static_cast<double>(ops));
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  int reps = default_reps;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0)
      reps = std::max(1, std::atoi(argv[++i]));
  std::printf("%-8s %8s %12s %12s\n", "shape", "bytes", "encode ns", "decode ns");
  for (const auto& [name, value] : make_shapes()) {
    auto encoded = bin::encode(value).value();
    auto ops = std::max<size_t>(1, bytes_per_run / encoded.size());
    auto enc = median_ns(reps, ops, [&] { sink = bin::encode(value)->size(); });
    auto dec = median_ns(reps, ops, [&] { sink = bin::decode(encoded)->is<none>(); });
    std::printf("%-8s %8zu %12.0f %12.0f\n", name, encoded.size(), enc, dec);
  }
  return 0;
}

#endif // BROKER_BIN_BENCH_PROGRAM
