// broker-security-bench: the cost of check_publish() (a small harness, no Catch2).
//
// One identity holds N publish rules shaped like a Zeek cluster's: allow
// "/zeek/event/<n>/", "/zeek/logs/<name>/<n>", deny "/zeek/event/<n>/control/", plus allow
// "/zeek/" and deny "/zeek/control/" (N counts them all). N = 0 is the rule set without
// identities, what a node runs with when no rules are configured. Probes cycle through 16
// topics per kind:
//   hit    "/zeek/event/<k>/dns/request_<j>": allowed by "/zeek/event/<k>/" (deep match)
//   deny   "/zeek/event/<k>/control/stop": refused by the longer deny below it
//   miss   "/other/<j>/x": no rule matches, refused by the identity's default
//
// Modes:
//   broker-security-bench [--reps R] [--checks C]
//       The table: ns per check (median of R runs of C checks) through rule_set and
//       through guard (which also watches for reloads and counts refusals), for
//       N in {0, 10, 100, 1000, 10000} and each probe kind.
//   broker-security-bench --fixed N hit|deny|miss CHECKS [--guard]
//       Exactly CHECKS checks in run_checks() (through a guard with --guard), for
//       `valgrind --tool=callgrind --toggle-collect='*run_checks*' ...`
//       (instructions per check = Ir / CHECKS).
//
// libbroker globs every .cc under broker/ into the library, so the program is compiled
// only where bench/CMakeLists.txt defines BROKER_SECURITY_BENCH_PROGRAM.

#ifdef BROKER_SECURITY_BENCH_PROGRAM

#include "broker/internal/security/policy.hh"
#include "broker/internal/security/rule_set.hh"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

using namespace broker::internal::security;

namespace {

volatile size_t sink;

constexpr size_t probes_per_kind = 16;

constexpr std::string_view bench_token = "bench";

const char* log_names[] = {"conn", "dns", "http", "ssl", "files", "notice", "weird"};

/// A rule set with `n` publish rules for identity "worker" (none at all for n = 0).
std::shared_ptr<const rule_set> make_rules(size_t n) {
  if (n == 0)
    return rule_set::allow_all();
  rule_set_builder b;
  auto w = b.add_identity("worker", "bench:1:1");
  b.add_token(w, *sha256(bench_token), "bench:1:2"); // So that a guard can be the worker.
  b.add_rule(w, action::publish, effect::allow, "/zeek/", "bench:2:1");
  b.add_rule(w, action::publish, effect::deny, "/zeek/control/", "bench:3:1");
  for (size_t i = 2; i < n; ++i) {
    auto k = std::to_string(i / 3);
    switch (i % 3) {
      case 0:
        b.add_rule(w, action::publish, effect::allow, "/zeek/event/" + k + "/", "bench:4:1");
        break;
      case 1:
        b.add_rule(w, action::publish, effect::deny, "/zeek/event/" + k + "/control/",
                   "bench:5:1");
        break;
      default:
        b.add_rule(w, action::publish, effect::allow,
                   "/zeek/logs/" + std::string{log_names[i % 7]} + "/" + k, "bench:6:1");
    }
  }
  return *b.build();
}

enum class probe_kind { hit, deny, miss };

std::vector<std::string> make_probes(size_t n, probe_kind kind) {
  std::vector<std::string> result;
  // Event numbers that have rules for this n (at least one, also for small n).
  auto events = std::max<size_t>(n / 3, 1);
  for (size_t j = 0; j < probes_per_kind; ++j) {
    auto k = std::to_string((j * 7919) % events);
    switch (kind) {
      case probe_kind::hit:
        result.push_back("/zeek/event/" + k + "/dns/request_" + std::to_string(j));
        break;
      case probe_kind::deny:
        result.push_back("/zeek/event/" + k + "/control/stop");
        break;
      case probe_kind::miss:
        result.push_back("/other/" + std::to_string(j) + "/x");
        break;
    }
  }
  return result;
}

/// The measured loop (kept out of line for callgrind's --toggle-collect).
__attribute__((noinline)) size_t run_checks(const rule_set& rs, identity_handle id,
                                            const std::vector<std::string>& probes,
                                            size_t checks) {
  size_t allowed = 0;
  for (size_t i = 0; i < checks; ++i)
    allowed += rs.check_publish(id, probes[i % probes.size()]).allowed ? 1 : 0;
  return allowed;
}

__attribute__((noinline)) size_t run_checks(guard& g, const std::vector<std::string>& probes,
                                            size_t checks) {
  size_t allowed = 0;
  for (size_t i = 0; i < checks; ++i)
    allowed += g.check_publish(probes[i % probes.size()]).allowed ? 1 : 0;
  return allowed;
}

double ns_per_check(size_t n, probe_kind kind, bool through_guard, size_t checks) {
  auto rs = make_rules(n);
  auto probes = make_probes(n, kind);
  auto start = std::chrono::steady_clock::now();
  if (through_guard) {
    policy_store store{rs};
    guard g{store, credential::from_token(bench_token)};
    start = std::chrono::steady_clock::now();
    sink = run_checks(g, probes, checks);
  } else {
    auto id = rs->enforcing() ? rs->find("worker") : no_identity;
    sink = run_checks(*rs, id, probes, checks);
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  return std::chrono::duration<double, std::nano>(elapsed).count() / static_cast<double>(checks);
}

const char* to_string(probe_kind x) {
  return x == probe_kind::hit ? "hit" : x == probe_kind::deny ? "deny" : "miss";
}

} // namespace

int main(int argc, char** argv) {
  size_t reps = 7;
  size_t checks = 2'000'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fixed") == 0 && i + 3 < argc) {
      auto n = std::strtoull(argv[i + 1], nullptr, 10);
      std::string kind_name = argv[i + 2];
      auto count = std::strtoull(argv[i + 3], nullptr, 10);
      auto kind = kind_name == "hit" ? probe_kind::hit
                  : kind_name == "deny" ? probe_kind::deny
                                        : probe_kind::miss;
      auto rs = make_rules(n);
      auto probes = make_probes(n, kind);
      if (i + 4 < argc && std::strcmp(argv[i + 4], "--guard") == 0) {
        policy_store store{rs};
        guard g{store, credential::from_token(bench_token)};
        sink = run_checks(g, probes, count);
      } else {
        auto id = rs->enforcing() ? rs->find("worker") : no_identity;
        sink = run_checks(*rs, id, probes, count);
      }
      std::printf("checks=%llu allowed=%zu\n", static_cast<unsigned long long>(count),
                  static_cast<size_t>(sink));
      return 0;
    }
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--checks") == 0 && i + 1 < argc)
      checks = std::strtoull(argv[++i], nullptr, 10);
  }
  std::printf("ns per check_publish, median of %zu x %zu checks\n", reps, checks);
  std::printf("%8s %6s %10s %10s\n", "rules", "probe", "rule_set", "guard");
  auto median = [&](size_t n, probe_kind kind, bool through_guard) {
    std::vector<double> xs;
    for (size_t r = 0; r < reps; ++r)
      xs.push_back(ns_per_check(n, kind, through_guard, checks));
    std::sort(xs.begin(), xs.end());
    return xs[xs.size() / 2];
  };
  for (size_t n : {0, 10, 100, 1000, 10000})
    for (auto kind : {probe_kind::hit, probe_kind::deny, probe_kind::miss})
      std::printf("%8zu %6s %10.1f %10.1f\n", n, to_string(kind), median(n, kind, false),
                  median(n, kind, true));
  return 0;
}

#endif // BROKER_SECURITY_BENCH_PROGRAM
