// broker-store-bench: write throughput of the store backends (a small harness, no Catch2).
//
// Each run opens a fresh backend and puts N keys ("key-<i>" -> [i, "value-<i>", now]),
// either one write per transaction or B writes per begin_batch()/commit_batch().
// Scenarios: memory; SQLite (WAL) with synchronous NORMAL and FULL, batched and unbatched;
// SQLite with journal_mode DELETE and synchronous FULL, batched and unbatched.
//
// Usage: broker-store-bench [--n N] [--unbatched-n M] [--batch B] [--dir DIR]
//   Prints writes/s per scenario. Unbatched SQLite runs use M writes (default 1000), since
//   with synchronous=FULL each of them waits for the disk.
//
// libbroker globs every .cc under broker/ into the library, so the program is compiled only
// where BROKER_STORE_BENCH_PROGRAM is defined (like bin.bench.cc and topic_index.bench.cc).

#ifdef BROKER_STORE_BENCH_PROGRAM

#include "broker/internal/store/backend.hh"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

using namespace broker;
using namespace broker::internal;

namespace {

struct scenario {
  const char* name;
  backend_kind kind;
  const char* journal_mode;
  const char* synchronous;
  bool batched;
};

double run(const scenario& s, const std::string& dir, size_t n, size_t batch) {
  backend_options options;
  auto path = dir + "/bench.db";
  if (s.kind == backend_kind::sqlite) {
    for (auto suffix : {"", "-wal", "-shm", "-journal"})
      std::filesystem::remove(path + suffix);
    options = {{"path", path}, {"journal_mode", s.journal_mode},
               {"synchronous", s.synchronous}};
  }
  auto backend = make_backend(s.kind, options);
  if (!backend) {
    std::fprintf(stderr, "%s: %s\n", s.name, to_string(backend.error_value()).c_str());
    std::exit(EXIT_FAILURE);
  }
  auto& b = **backend;
  auto fail = [&](const error& err) {
    std::fprintf(stderr, "%s: %s\n", s.name, to_string(err).c_str());
    std::exit(EXIT_FAILURE);
  };
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    if (s.batched && i % batch == 0)
      if (auto err = b.begin_batch())
        fail(err);
    auto key = data{"key-" + std::to_string(i)};
    auto value = vector_builder{}.add(count{i}).add("value-" + std::to_string(i))
                   .add(broker::now()).build();
    if (auto err = b.put(key, std::move(value), std::nullopt))
      fail(err);
    if (s.batched && (i % batch == batch - 1 || i == n - 1))
      if (auto err = b.commit_batch())
        fail(err);
  }
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start);
  return static_cast<double>(n) / elapsed.count();
}

size_t arg_or(int argc, char** argv, const char* name, size_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0)
      return std::strtoull(argv[i + 1], nullptr, 10);
  return fallback;
}

} // namespace

int main(int argc, char** argv) {
  auto n = arg_or(argc, argv, "--n", 100'000);
  auto unbatched_n = arg_or(argc, argv, "--unbatched-n", 1000);
  auto batch = arg_or(argc, argv, "--batch", 1000);
  std::string dir = std::filesystem::temp_directory_path() / "broker-store-bench";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--dir") == 0)
      dir = argv[i + 1];
  std::filesystem::create_directories(dir);
  const scenario scenarios[] = {
    {"memory", backend_kind::memory, "", "", false},
    {"sqlite WAL NORMAL, batched", backend_kind::sqlite, "WAL", "NORMAL", true},
    {"sqlite WAL FULL, batched", backend_kind::sqlite, "WAL", "FULL", true},
    {"sqlite DELETE FULL, batched", backend_kind::sqlite, "DELETE", "FULL", true},
    {"sqlite WAL NORMAL, unbatched", backend_kind::sqlite, "WAL", "NORMAL", false},
    {"sqlite WAL FULL, unbatched", backend_kind::sqlite, "WAL", "FULL", false},
    {"sqlite DELETE FULL, unbatched", backend_kind::sqlite, "DELETE", "FULL", false},
  };
  std::printf("%-32s %10s %14s\n", "scenario", "writes", "writes/s");
  for (const auto& s : scenarios) {
    auto count = (s.kind == backend_kind::sqlite && !s.batched) ? unbatched_n : n;
    auto rate = run(s, dir, count, batch);
    std::printf("%-32s %10zu %14.0f\n", s.name, count, rate);
  }
  std::filesystem::remove_all(dir);
}

#endif // BROKER_STORE_BENCH_PROGRAM
