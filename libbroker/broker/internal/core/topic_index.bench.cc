// broker-index-bench: lookup cost of the topic index (a small harness, no Catch2).
//
// The index holds N subscribed prefixes shaped like Zeek's ("/zeek/event/<n>/<name>/",
// "/zeek/cluster/worker-<n>/", "/zeek/logs/<name>/<n>", "/zeek/store/<n>/data"), one
// target each. Probes cycle through 16 distinct topics per kind:
//   hit   "/zeek/event/8/dns/request_<k>": matches exactly one prefix, "/zeek/event/8/dns/"
//         (present for every N >= 9); the walk gets deeper as N grows ("/zeek/event/8"
//         is shared with 80, 800, ...);
//   miss  "/zeek/event/x<k>/conn_established": walks into "/zeek/event/", matches none;
//   churn like hit but 4096 distinct topics, more than the default cache holds, so with the
//         cache on every lookup misses the cache and replaces an entry.
//
// Modes:
//   broker-index-bench [--reps R] [--lookups L]
//       The table: ns per lookup (median of R runs of L lookups) for N in {10, 1000,
//       100000}, cache 1024 and 0, hit and miss.
//   broker-index-bench --fixed N CACHE hit|miss|churn LOOKUPS
//       Builds one index and does exactly LOOKUPS lookups in run_lookups(), for
//       `valgrind --tool=callgrind --toggle-collect=run_lookups ...` (instructions per
//       lookup = Ir / LOOKUPS, free of set-up cost and of wall-clock noise).
//
// The file sits beside the unit it measures. libbroker globs every .cc under broker/ into
// the library, so the whole program is compiled only where bench/CMakeLists.txt defines
// BROKER_INDEX_BENCH_PROGRAM.

#ifdef BROKER_INDEX_BENCH_PROGRAM

#include "broker/internal/core/topic_index.hh"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using broker::internal::index_target;
using broker::internal::index_snapshot;
using broker::internal::lookup_scratch;
using broker::internal::topic_index;

namespace {

volatile size_t sink;

constexpr size_t probes_per_kind = 16;
constexpr size_t churn_probes = 4096;

enum class probe_kind { hit, miss, churn };

const char* to_string(probe_kind x) {
  return x == probe_kind::hit ? "hit" : x == probe_kind::miss ? "miss" : "churn";
}

/// The n-th realistic subscription prefix.
std::string make_prefix(size_t n) {
  static const char* names[] = {"conn", "dns", "http", "ssl", "files", "notice", "weird"};
  auto i = std::to_string(n);
  switch (n % 4) {
    case 0:
      return "/zeek/event/" + i + "/" + names[n % 7] + "/";
    case 1:
      return "/zeek/cluster/worker-" + i + "/";
    case 2:
      return "/zeek/logs/" + std::string{names[n % 7]} + "/" + i;
    default:
      return "/zeek/store/" + i + "/data";
  }
}

std::vector<std::string> make_probes(probe_kind kind) {
  std::vector<std::string> result;
  auto n = kind == probe_kind::churn ? churn_probes : probes_per_kind;
  for (size_t k = 0; k < n; ++k)
    result.push_back(kind == probe_kind::miss
                       ? "/zeek/event/x" + std::to_string(k) + "/conn_established"
                       : "/zeek/event/8/dns/request_" + std::to_string(k));
  return result;
}

/// An index with `n` subscriptions, one per target, and one routing thread's scratch with
/// a cache of `cache` slots: what a routing thread sees.
struct fixture {
  explicit fixture(size_t n, size_t cache) : scratch(cache), targets(n) {
    for (size_t i = 0; i < n; ++i)
      index.subscribe(&targets[i], {broker::topic{make_prefix(i)}});
    snapshot = index.snapshot();
  }

  size_t node_count() const { return index.node_count(); }

  topic_index index;
  std::unique_ptr<const index_snapshot> snapshot;
  lookup_scratch scratch;
  std::vector<index_target> targets;
};

/// Exactly `count` lookups over `probes`, round robin. Not inlined so that callgrind's
/// --toggle-collect can count it alone.
__attribute__((noinline)) size_t run_lookups(fixture& f,
                                             const std::vector<std::string>& probes,
                                             size_t count) {
  size_t found = 0;
  size_t k = 0;
  for (size_t i = 0; i < count; ++i) {
    found += f.snapshot->lookup(probes[k], f.scratch).size();
    if (++k == probes.size())
      k = 0;
  }
  return found;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  auto n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

/// Median ns per lookup over `reps` runs of `lookups` lookups; checks the hit count.
double measure(fixture& f, probe_kind kind, size_t reps, size_t lookups) {
  auto probes = make_probes(kind);
  bool hit = kind != probe_kind::miss;
  run_lookups(f, probes, probes.size() * 4); // Warm the cache and the trie.
  std::vector<double> samples;
  for (size_t r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    auto found = run_lookups(f, probes, lookups);
    auto stop = std::chrono::steady_clock::now();
    sink = found;
    if (found != (hit ? lookups : 0)) {
      std::fprintf(stderr, "unexpected result: %zu matches in %zu %s lookups\n", found,
                   lookups, to_string(kind));
      std::exit(1);
    }
    samples.push_back(std::chrono::duration<double, std::nano>(stop - start).count()
                      / static_cast<double>(lookups));
  }
  return median(samples);
}

size_t parse_size(const char* x) {
  char* end = nullptr;
  auto result = std::strtoull(x, &end, 10);
  if (end == x || *end != '\0') {
    std::fprintf(stderr, "not a number: %s\n", x);
    std::exit(2);
  }
  return static_cast<size_t>(result);
}

constexpr size_t min_prefixes = 9; // The hit probes need prefix #8.

int run_fixed(size_t n, size_t cache, probe_kind kind, size_t lookups) {
  if (n < min_prefixes) {
    std::fprintf(stderr, "N must be at least %zu\n", min_prefixes);
    return 2;
  }
  fixture f{n, cache};
  auto probes = make_probes(kind);
  sink = run_lookups(f, probes, lookups);
  std::printf("N=%zu cache=%zu %s lookups=%zu found=%zu nodes=%zu\n", n, cache,
              to_string(kind), lookups, static_cast<size_t>(sink), f.node_count());
  return 0;
}

int run_table(size_t reps, size_t lookups) {
  const size_t sizes[] = {10, 1000, 100000};
  const size_t caches[] = {1024, 0};
  std::printf("# ns per lookup, median of %zu runs x %zu lookups\n", reps, lookups);
  std::printf("%-8s %-6s %10s %10s %10s %10s %10s\n", "N", "cache", "hit_ns", "miss_ns",
              "churn_ns", "nodes", "build_ms");
  for (auto cache : caches) {
    for (auto n : sizes) {
      auto start = std::chrono::steady_clock::now();
      fixture f{n, cache};
      auto built = std::chrono::steady_clock::now();
      auto hit = measure(f, probe_kind::hit, reps, lookups);
      auto miss = measure(f, probe_kind::miss, reps, lookups);
      auto churn = measure(f, probe_kind::churn, reps, lookups);
      std::printf("%-8zu %-6zu %10.1f %10.1f %10.1f %10zu %10.1f\n", n, cache, hit, miss,
                  churn, f.node_count(),
                  std::chrono::duration<double, std::milli>(built - start).count());
      std::fflush(stdout);
    }
  }
  return 0;
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: broker-index-bench [--reps R] [--lookups L]\n"
                       "       broker-index-bench --fixed N CACHE hit|miss|churn LOOKUPS\n");
  std::exit(2);
}

} // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::strcmp(argv[1], "--fixed") == 0) {
    probe_kind kind;
    if (std::strcmp(argv[4], "hit") == 0)
      kind = probe_kind::hit;
    else if (std::strcmp(argv[4], "miss") == 0)
      kind = probe_kind::miss;
    else if (std::strcmp(argv[4], "churn") == 0)
      kind = probe_kind::churn;
    else
      usage();
    return run_fixed(parse_size(argv[2]), parse_size(argv[3]), kind, parse_size(argv[5]));
  }
  size_t reps = 7;
  size_t lookups = 2'000'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = parse_size(argv[++i]);
    else if (std::strcmp(argv[i], "--lookups") == 0 && i + 1 < argc)
      lookups = parse_size(argv[++i]);
    else
      usage();
  }
  if (reps == 0 || lookups == 0)
    usage();
  return run_table(reps, lookups);
}

#endif // BROKER_INDEX_BENCH_PROGRAM
