// broker-fanout-local: one publisher thread -> N local subscribers of one endpoint, with
// latency (bench/README.md, "Fan-out"). The in-process counterpart of broker-fanout-ws and
// broker-fanout-peer: same payload (fanout_stats.hh), same phases, same RESULT line.
//
// Threads: the main thread publishes; `consumers` threads each own every consumers-th
// subscriber, wait on their fd()s with epoll and drain them with poll(), recording the
// latency of every message in a histogram of their own. The endpoint's threads come on top.
//
//   1. Latency phase: `latency_rate` messages/s, one publish(data) each, stamped when
//      built. The publisher then waits until every subscriber has the last one.
//   2. Throughput phase: publish(std::vector<data>) of `batch` messages (one stamp per
//      batch) for `seconds`; subscribers use the `block` policy, so the publisher runs as
//      fast as the slowest subscriber drains. Then one end message (kind E).
//   3. A subscriber is done at the end message; the run at the last one. delivered/s is
//      the throughput phase's deliveries over the time from its first publish to the last
//      delivery.

#include "bench_util.hh"
#include "fanout_stats.hh"

#include <broker/endpoint.hh>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

namespace {

using namespace fanout;

constexpr const char* data_topic = "/fanout/data";

struct options {
  size_t subscribers = 1;
  double seconds = 2;
  double latency_seconds = 1;
  double latency_rate = 0; ///< 0: default_latency_rate(subscribers).
  size_t consumers = 2;
  size_t batch = 256;
  size_t capacity = 1024;
  double timeout = 120;
};

[[noreturn]] void usage(const char* self, int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: %s [--subscribers N] [--seconds S] [--latency-seconds S]\n"
               "          [--latency-rate R] [--consumers C] [--batch B] [--capacity Q]\n"
               "          [--timeout S]\n"
               "One publisher thread -> N local subscribers (policy block, queue Q = 1024):\n"
               "a latency phase at R messages/s (default 1000, at most 20000/N), then S\n"
               "seconds (default 2) of batches of B (256). Prints one RESULT line.\n",
               self);
  std::exit(code);
}

options parse(int argc, char** argv) {
  bench::raise_fd_limit();
  options o;
  auto num = [&](int& i) {
    if (i + 1 >= argc)
      usage(argv[0], 2);
    char* end = nullptr;
    auto x = std::strtod(argv[++i], &end);
    if (*end != '\0' || x < 0)
      usage(argv[0], 2);
    return x;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h")
      usage(argv[0], 0);
    else if (arg == "--subscribers")
      o.subscribers = static_cast<size_t>(num(i));
    else if (arg == "--seconds")
      o.seconds = num(i);
    else if (arg == "--latency-seconds")
      o.latency_seconds = num(i);
    else if (arg == "--latency-rate")
      o.latency_rate = num(i);
    else if (arg == "--consumers")
      o.consumers = static_cast<size_t>(num(i));
    else if (arg == "--batch")
      o.batch = static_cast<size_t>(num(i));
    else if (arg == "--capacity")
      o.capacity = static_cast<size_t>(num(i));
    else if (arg == "--timeout")
      o.timeout = num(i);
    else
      usage(argv[0], 2);
  }
  if (o.subscribers == 0 || o.consumers == 0 || o.batch == 0 || o.capacity == 0)
    usage(argv[0], 2);
  if (o.latency_rate == 0)
    o.latency_rate = default_latency_rate(o.subscribers);
  return o;
}

/// What one consumer thread saw.
struct alignas(64) consumer_state {
  histogram latency;
  histogram loaded;
  uint64_t delivered = 0;
  uint64_t lost = 0;
  uint64_t last_delivery_ns = 0;
  bool ok = false;
};

/// Shared between the publisher and the consumers.
struct progress {
  std::atomic<uint64_t> awaited_seq{UINT64_MAX}; ///< Last latency-phase sequence number.
  std::atomic<size_t> reached{0};                ///< Subscribers that have it.
};

void consume(std::vector<broker::subscriber>& subs, size_t self, size_t threads,
             bench::clock_type::time_point deadline, progress& prog, consumer_state& st) {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  size_t remaining = 0;
  std::vector<uint64_t> last_seq(subs.size(), 0);
  for (size_t i = self; i < subs.size(); i += threads) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, subs[i].fd(), &ev) != 0) {
      std::perror("epoll_ctl");
      std::exit(1);
    }
    ++remaining;
  }
  std::vector<epoll_event> events(256);
  while (remaining > 0 && bench::clock_type::now() < deadline) {
    int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
    for (int j = 0; j < n; ++j) {
      auto i = events[j].data.u64;
      auto xs = subs[i].poll();
      auto now = now_ns();
      for (auto& msg : xs) {
        auto* text = broker::get_if<std::string>(msg.value());
        stamp s;
        if (text == nullptr || !parse_payload(*text, s)) {
          std::fprintf(stderr, "unexpected message: %s\n", to_string(msg.value()).c_str());
          std::exit(1);
        }
        if (s.what == kind::end) {
          --remaining;
          ::epoll_ctl(ep, EPOLL_CTL_DEL, subs[i].fd(), nullptr);
          break;
        }
        st.lost += s.seq - last_seq[i] - 1;
        last_seq[i] = s.seq;
        auto delay = now > s.sent_ns ? now - s.sent_ns : 0;
        if (s.what == kind::latency) {
          st.latency.record(delay);
          if (s.seq == prog.awaited_seq.load(std::memory_order_acquire))
            prog.reached.fetch_add(1, std::memory_order_release);
        } else {
          st.loaded.record(delay);
          ++st.delivered;
        }
      }
      st.last_delivery_ns = now;
    }
  }
  ::close(ep);
  st.ok = remaining == 0;
}

} // namespace

int main(int argc, char** argv) {
  auto o = parse(argc, argv);
  broker::endpoint ep;
  broker::queue_options qopts{o.capacity, broker::overflow_policy::block};
  std::vector<broker::subscriber> subs;
  subs.reserve(o.subscribers);
  for (size_t i = 0; i < o.subscribers; ++i)
    subs.push_back(ep.make_subscriber({data_topic}, qopts));
  auto pub = ep.make_publisher(data_topic);
  if (!pub) {
    std::fprintf(stderr, "make_publisher: %s\n", to_string(pub.error_value()).c_str());
    return 1;
  }
  run_result res;
  res.system = "broker";
  res.mode = "local";
  res.receivers = o.subscribers;
  res.latency_rate = o.latency_rate;
  auto cpu_start = bench::cpu_seconds();
  progress prog;
  std::vector<consumer_state> states(o.consumers);
  std::vector<std::thread> threads;
  auto deadline = bench::clock_type::now() + std::chrono::duration_cast<bench::clock_type::duration>(
                                               std::chrono::duration<double>(o.timeout));
  for (size_t t = 0; t < o.consumers; ++t)
    threads.emplace_back([&, t] { consume(subs, t, o.consumers, deadline, prog, states[t]); });
  uint64_t seq = 0;
  auto next = [&](kind k) { return broker::data{make_payload(stamp{now_ns(), ++seq, k, false})}; };
  // 1. Latency phase.
  auto total = static_cast<uint64_t>(o.latency_rate * o.latency_seconds + 0.5);
  if (total > 0) {
    prog.awaited_seq = total;
    auto interval = std::chrono::duration<double>(1.0 / o.latency_rate);
    auto start = bench::clock_type::now();
    for (uint64_t k = 0; k < total; ++k) {
      std::this_thread::sleep_until(start + std::chrono::duration_cast<bench::clock_type::duration>(
                                              interval * static_cast<double>(k)));
      pub->publish(next(kind::latency));
    }
    while (prog.reached.load(std::memory_order_acquire) < o.subscribers
           && bench::clock_type::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds{100});
  }
  // 2. Throughput phase.
  auto first = seq + 1;
  auto start_ns = now_ns();
  auto stop_ns = start_ns + static_cast<uint64_t>(o.seconds * 1e9);
  while (now_ns() < stop_ns) {
    std::vector<broker::data> xs;
    xs.reserve(o.batch);
    auto ts = now_ns();
    for (size_t i = 0; i < o.batch; ++i)
      xs.emplace_back(make_payload(stamp{ts, ++seq, kind::throughput, false}));
    pub->publish(std::move(xs));
  }
  res.sent = seq - first + 1;
  pub->publish(next(kind::end));
  // 3. Collect.
  res.complete = true;
  uint64_t last_ns = start_ns;
  for (size_t t = 0; t < o.consumers; ++t) {
    threads[t].join();
    auto& st = states[t];
    res.latency.merge(st.latency);
    res.loaded.merge(st.loaded);
    res.delivered += st.delivered;
    res.lost += st.lost;
    last_ns = std::max(last_ns, st.last_delivery_ns);
    res.complete = res.complete && st.ok;
  }
  res.seconds = static_cast<double>(last_ns - start_ns) / 1e9;
  res.complete = res.complete && res.lost == 0 && res.delivered == res.sent * o.subscribers;
  res.cpu_seconds = bench::cpu_seconds() - cpu_start;
  res.peak_rss_mb = static_cast<double>(bench::proc_status_kb("VmHWM")) / 1024.0;
  res.print();
  return res.complete ? 0 : 1;
}
