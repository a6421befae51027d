#pragma once

// bench_util: the scenario shared by broker-local-bench (local_throughput.cc, our API) and
// broker14-bench (broker14_throughput.cc, Debian's Broker 1.4), so both measure the same
// thing. It includes no broker header: the Broker 1.4 program must see only 1.4's headers.
//
// Threads of one run:
//   - the calling thread publishes for `seconds` (at most `messages`), then publishes one
//     sentinel value;
//   - `consumers` threads each own every consumers-th subscriber, wait on the subscribers'
//     fd()s with epoll (level-triggered) and drain a ready subscriber with poll();
//   - a subscriber is done when the last message of a poll() is the sentinel: the sentinel
//     is the newest message, so even drop_oldest cannot evict it before it is read.
// The endpoint's own threads (CAF scheduler) come on top.

#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace bench {

using clock_type = std::chrono::steady_clock;

/// Command-line settings of one run.
struct options {
  size_t subscribers = 1;
  double seconds = 2.0;
  uint64_t messages = 0;      ///< Stop publishing after this many (0: no limit).
  bool batch = true;          ///< publish(std::vector<data>) of `batch_size`, else single.
  size_t batch_size = 256;
  std::string policy = "block";
  size_t capacity = 1024;     ///< Subscriber queue size (Broker 1.4: max_qsize).
  size_t consumers = 2;
  size_t payload = 64;        ///< Bytes of the std::string each message carries.
  bool slow = false;          ///< Memory scenario: one subscriber that never reads.
  double timeout = 120.0;     ///< Give up (exit 1) if the consumers take longer.
};

inline const char* usage_text =
  "usage: %s [--subscribers N] [--seconds S] [--messages M] [--mode batch|single]\n"
  "          [--batch B] [--policy block|drop_oldest|drop_newest] [--capacity Q]\n"
  "          [--consumers C] [--payload BYTES] [--timeout S]\n"
  "       %s --slow [--capacity Q] [--seconds S] [--payload BYTES]\n";

[[noreturn]] inline void usage(const char* self) {
  std::fprintf(stderr, usage_text, self, self);
  std::exit(2);
}

/// Raises the open-file limit as far as allowed: every subscriber holds a descriptor
/// (Broker 1.4: two), so 10 000 subscribers exceed common defaults.
inline void raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0)
    return;
  // RLIM_INFINITY is the largest rlim_t, so std::max keeps an unlimited hard limit.
  constexpr rlim_t wanted = 1 << 16;
  rlimit raised{std::max(lim.rlim_cur, wanted), std::max(lim.rlim_max, wanted)};
  if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) { // Unprivileged: up to the hard limit.
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

/// Parses the command line (see usage_text) and raises the descriptor limit.
inline options parse(int argc, char** argv) {
  raise_fd_limit();
  options o;
  auto num = [&](int& i) {
    if (i + 1 >= argc)
      usage(argv[0]);
    char* end = nullptr;
    auto x = std::strtod(argv[++i], &end);
    if (*end != '\0' || x < 0)
      usage(argv[0]);
    return x;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--subscribers")
      o.subscribers = static_cast<size_t>(num(i));
    else if (arg == "--seconds")
      o.seconds = num(i);
    else if (arg == "--messages")
      o.messages = static_cast<uint64_t>(num(i));
    else if (arg == "--batch")
      o.batch_size = static_cast<size_t>(num(i));
    else if (arg == "--capacity")
      o.capacity = static_cast<size_t>(num(i));
    else if (arg == "--consumers")
      o.consumers = static_cast<size_t>(num(i));
    else if (arg == "--payload")
      o.payload = static_cast<size_t>(num(i));
    else if (arg == "--timeout")
      o.timeout = num(i);
    else if (arg == "--slow")
      o.slow = true;
    else if (arg == "--mode" && i + 1 < argc && (std::string{argv[i + 1]} == "batch"
                                                 || std::string{argv[i + 1]} == "single"))
      o.batch = std::string{argv[++i]} == "batch";
    else if (arg == "--policy" && i + 1 < argc)
      o.policy = argv[++i];
    else
      usage(argv[0]);
  }
  if (o.subscribers == 0 || o.consumers == 0 || o.batch_size == 0 || o.capacity == 0)
    usage(argv[0]);
  return o;
}

/// A field of /proc/self/status in KiB ("VmHWM" = peak RSS, "VmRSS" = current RSS).
inline uint64_t proc_status_kb(const char* key) {
  std::ifstream in{"/proc/self/status"};
  std::string line;
  auto len = std::strlen(key);
  while (std::getline(in, line))
    if (line.compare(0, len, key) == 0 && line.size() > len && line[len] == ':')
      return std::strtoull(line.c_str() + len + 1, nullptr, 10);
  return 0;
}

/// User + system CPU time of the whole process so far.
inline double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

inline double seconds_between(clock_type::time_point from, clock_type::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

/// Drains `subs` on `threads` threads (see the file comment).
template <class Subscriber, class IsSentinel>
class consumer_pool {
public:
  consumer_pool(std::vector<Subscriber>& subs, size_t threads, IsSentinel is_sentinel,
                double timeout)
    : subs_(subs), is_sentinel_(is_sentinel), counts_(threads), ok_(threads) {
    auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                          std::chrono::duration<double>(timeout));
    for (size_t t = 0; t < threads; ++t)
      threads_.emplace_back([this, t, threads, deadline] { run(t, threads, deadline); });
  }

  /// Waits for every consumer; true if all subscribers saw the sentinel in time.
  bool join() {
    for (auto& t : threads_)
      t.join();
    finished_ = clock_type::now();
    return std::all_of(ok_.begin(), ok_.end(), [](const slot& x) { return x.value != 0; });
  }

  /// Messages consumed over all subscribers, sentinels excluded.
  uint64_t delivered() const {
    uint64_t result = 0;
    for (auto& c : counts_)
      result += c.value;
    return result;
  }

  clock_type::time_point finished() const { return finished_; }

private:
  struct alignas(64) slot { // One cache line per thread: no false sharing of counters.
    uint64_t value = 0;
  };

  void run(size_t self, size_t threads, clock_type::time_point deadline) {
    int ep = ::epoll_create1(EPOLL_CLOEXEC);
    size_t remaining = 0;
    for (size_t i = self; i < subs_.size(); i += threads) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;
      if (::epoll_ctl(ep, EPOLL_CTL_ADD, subs_[i].fd(), &ev) != 0) {
        std::perror("epoll_ctl");
        std::exit(1);
      }
      ++remaining;
    }
    uint64_t count = 0;
    std::vector<epoll_event> events(256);
    while (remaining > 0 && clock_type::now() < deadline) {
      int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
      for (int j = 0; j < n; ++j) {
        auto& sub = subs_[events[j].data.u64];
        auto xs = sub.poll();
        count += xs.size();
        if (!xs.empty() && is_sentinel_(xs.back())) {
          --count;
          --remaining;
          ::epoll_ctl(ep, EPOLL_CTL_DEL, sub.fd(), nullptr);
        }
      }
    }
    ::close(ep);
    counts_[self].value = count;
    ok_[self].value = remaining == 0 ? 1 : 0;
  }

  std::vector<Subscriber>& subs_;
  IsSentinel is_sentinel_;
  std::vector<slot> counts_;
  std::vector<slot> ok_;
  std::vector<std::thread> threads_;
  clock_type::time_point finished_;
};

template <class Subscriber, class IsSentinel>
consumer_pool(std::vector<Subscriber>&, size_t, IsSentinel, double)
  -> consumer_pool<Subscriber, IsSentinel>;

/// Publishes for `o.seconds` (or until `o.messages`, rounded up to whole batches) through `publish_one(value)` or `publish_many(values)`;
/// returns the number of messages published (the sentinel not included).
template <class MakeValue, class PublishOne, class PublishMany>
uint64_t publish_for(const options& o, MakeValue make_value, PublishOne publish_one,
                     PublishMany publish_many) {
  using value_type = decltype(make_value());
  auto stop = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                    std::chrono::duration<double>(o.seconds));
  uint64_t sent = 0;
  while (clock_type::now() < stop && (o.messages == 0 || sent < o.messages)) {
    if (o.batch) {
      std::vector<value_type> xs;
      xs.reserve(o.batch_size);
      for (size_t i = 0; i < o.batch_size; ++i)
        xs.push_back(make_value());
      publish_many(std::move(xs));
    } else {
      for (size_t i = 0; i < o.batch_size; ++i)
        publish_one(make_value());
    }
    sent += o.batch_size;
  }
  return sent;
}

/// One machine-readable result line (run-local.sh parses it). Construct it when the
/// measured phase starts: it notes the CPU time used so far.
struct result {
  result(const char* impl, const options* opts) : impl(impl), opts(opts) {}

  const char* impl;
  const options* opts;
  double cpu_at_start = cpu_seconds();
  uint64_t sent = 0;
  uint64_t delivered = 0;
  uint64_t dropped = 0;
  double publish_seconds = 0;
  double total_seconds = 0;
  bool complete = true;

  void print() const {
    auto& o = *opts;
    auto cpu = cpu_seconds() - cpu_at_start;
    std::printf("RESULT impl=%s mode=%s policy=%s N=%zu capacity=%zu consumers=%zu "
                "sent=%llu delivered=%llu dropped=%llu pub_s=%.3f total_s=%.3f "
                "pub_rate=%.0f deliv_rate=%.0f cpu_s=%.3f cpu_ns_per_delivery=%.1f "
                "peak_rss_mb=%.1f complete=%d\n",
                impl, o.batch ? "batch" : "single", o.policy.c_str(), o.subscribers,
                o.capacity, o.consumers, static_cast<unsigned long long>(sent),
                static_cast<unsigned long long>(delivered),
                static_cast<unsigned long long>(dropped), publish_seconds, total_seconds,
                static_cast<double>(sent) / publish_seconds,
                static_cast<double>(delivered) / total_seconds, cpu,
                delivered > 0 ? cpu * 1e9 / static_cast<double>(delivered) : 0.0,
                static_cast<double>(proc_status_kb("VmHWM")) / 1024.0, complete ? 1 : 0);
    std::fflush(stdout);
  }
};

} // namespace bench
