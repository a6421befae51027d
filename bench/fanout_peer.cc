// broker-fanout-peer: the peered fan-out (bench/README.md, "Fan-out"): one publishing
// endpoint and N receiving endpoints, each its own process, all peered with one hub (a
// broker-node relay). The hub is what is measured: it receives every message once and
// sends it to N peers.
//
//   broker-fanout-peer --receive --hub 127.0.0.1:P --id K        # N times, K = 0..N-1
//   broker-fanout-peer --publish --hub 127.0.0.1:P --receivers N # prints the RESULT line
//
// Peerings have no back-pressure (a full peer queue drops or disconnects), so the
// publisher paces itself on acknowledgements that travel back through the hub:
//   1. The publisher sends probes (kind P) every 50 ms until every receiver has answered
//      one: then all subscriptions are known along the path.
//   2. Latency phase: `latency_rate` messages/s, the last one flagged for an ack; the
//      publisher waits for every receiver's ack of it.
//   3. Throughput phase: batches of `batch` messages for `seconds`, never more than
//      `window` beyond the slowest receiver's last ack; every window/4-th message is
//      flagged. The last message is flagged too, and awaited.
//   4. An end message (kind E): each receiver answers with its summary (deliveries, gaps,
//      last delivery time, latency histograms) and exits; the publisher merges them.
// Acks and summaries go on /fanout-ack, which only the publisher subscribes to.

#include "bench_util.hh"
#include "fanout_stats.hh"

#include <broker/endpoint.hh>

#include <poll.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>

namespace {

using namespace fanout;
using namespace std::chrono_literals;

constexpr const char* data_topic = "/fanout/data";
constexpr const char* ack_topic = "/fanout-ack";
constexpr auto probe_interval = 50ms;
constexpr auto dial_retry = 250ms;

struct options {
  bool publish = false;
  bool receive = false;
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  size_t id = 0;
  size_t receivers = 1;
  double seconds = 2;
  double latency_seconds = 1;
  double latency_rate = 0; ///< 0: default_latency_rate(receivers).
  size_t window = 0;       ///< 0: default_window(receivers).
  size_t batch = 32;
  double timeout = 120;
};

[[noreturn]] void usage(const char* self, int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: %s --receive --hub HOST:PORT --id K [--timeout S]\n"
               "       %s --publish --hub HOST:PORT --receivers N [--seconds S]\n"
               "          [--latency-seconds S] [--latency-rate R] [--window W] [--batch B]\n"
               "          [--timeout S]\n"
               "Peered fan-out through a hub: see the comment of bench/fanout_peer.cc.\n",
               self, self);
  std::exit(code);
}

options parse(int argc, char** argv) {
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
    if (arg == "--help" || arg == "-h") {
      usage(argv[0], 0);
    } else if (arg == "--publish") {
      o.publish = true;
    } else if (arg == "--receive") {
      o.receive = true;
    } else if (arg == "--hub" && i + 1 < argc) {
      std::string hub = argv[++i];
      auto colon = hub.rfind(':');
      if (colon == std::string::npos)
        usage(argv[0], 2);
      o.host = hub.substr(0, colon);
      o.port = static_cast<uint16_t>(std::strtoul(hub.c_str() + colon + 1, nullptr, 10));
    } else if (arg == "--id") {
      o.id = static_cast<size_t>(num(i));
    } else if (arg == "--receivers") {
      o.receivers = static_cast<size_t>(num(i));
    } else if (arg == "--seconds") {
      o.seconds = num(i);
    } else if (arg == "--latency-seconds") {
      o.latency_seconds = num(i);
    } else if (arg == "--latency-rate") {
      o.latency_rate = num(i);
    } else if (arg == "--window") {
      o.window = static_cast<size_t>(num(i));
    } else if (arg == "--batch") {
      o.batch = static_cast<size_t>(num(i));
    } else if (arg == "--timeout") {
      o.timeout = num(i);
    } else {
      usage(argv[0], 2);
    }
  }
  if (o.publish == o.receive || o.port == 0 || o.receivers == 0 || o.batch == 0)
    usage(argv[0], 2);
  if (o.latency_rate == 0)
    o.latency_rate = default_latency_rate(o.receivers);
  if (o.window == 0)
    o.window = default_window(o.receivers);
  o.batch = std::min(o.batch, o.window);
  return o;
}

broker::configuration make_config() {
  broker::configuration cfg;
  auto err = cfg.set_bool("broker.disable-ssl", true);
  if (!err)
    err = cfg.set("broker.log-level", "warning");
  if (err) {
    std::fprintf(stderr, "configuration: %s\n", err.message().c_str());
    std::exit(1);
  }
  return cfg;
}

/// Waits at most `timeout` until `fd` is readable.
void wait_readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  ::poll(&p, 1, static_cast<int>(timeout.count()));
}

broker::vector flatten(const histogram& h) {
  broker::vector result;
  for (auto [i, n] : h.sparse()) {
    result.emplace_back(broker::count{i});
    result.emplace_back(broker::count{n});
  }
  return result;
}

void unflatten(const broker::data& x, uint64_t max, histogram& h) {
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  if (auto* xs = broker::get_if<broker::vector>(x))
    for (size_t i = 0; i + 1 < xs->size(); i += 2)
      pairs.emplace_back(broker::get<broker::count>((*xs)[i]),
                         broker::get<broker::count>((*xs)[i + 1]));
  h.add_sparse(pairs, max);
}

// -- receiver ---------------------------------------------------------------------------

int run_receiver(const options& o) {
  broker::endpoint ep{make_config()};
  auto sub = ep.make_subscriber({data_topic});
  if (!ep.peer(o.host, o.port, dial_retry)) {
    std::fprintf(stderr, "receiver %zu: cannot peer with %s:%u\n", o.id, o.host.c_str(), o.port);
    return 1;
  }
  auto ack = [&](uint64_t seq) {
    ep.publish(ack_topic, broker::vector{broker::count{o.id}, broker::count{seq}});
  };
  histogram latency, loaded;
  uint64_t last_seq = 0, delivered = 0, lost = 0, last_ns = 0;
  auto deadline = bench::clock_type::now() + std::chrono::duration_cast<bench::clock_type::duration>(
                                               std::chrono::duration<double>(o.timeout));
  while (bench::clock_type::now() < deadline) {
    wait_readable(sub.fd(), 100ms);
    auto xs = sub.poll();
    auto now = now_ns();
    for (auto& msg : xs) {
      auto* text = broker::get_if<std::string>(msg.value());
      stamp s;
      if (text == nullptr || !parse_payload(*text, s))
        continue;
      switch (s.what) {
        case kind::probe:
          ack(0);
          continue;
        case kind::end:
          ep.publish(ack_topic,
                     broker::vector{broker::count{o.id}, broker::count{delivered},
                                    broker::count{lost}, broker::count{last_ns},
                                    flatten(latency), broker::count{latency.max()},
                                    flatten(loaded), broker::count{loaded.max()}});
          return 0; // The endpoint flushes its peer queues when it shuts down.
        default:
          break;
      }
      lost += s.seq - last_seq - 1;
      last_seq = s.seq;
      auto delay = now > s.sent_ns ? now - s.sent_ns : 0;
      if (s.what == kind::latency) {
        latency.record(delay);
      } else {
        loaded.record(delay);
        ++delivered;
        last_ns = now;
      }
      if (s.ack)
        ack(s.seq);
    }
  }
  std::fprintf(stderr, "receiver %zu: timeout at sequence %llu\n", o.id,
               static_cast<unsigned long long>(last_seq));
  return 1;
}

// -- publisher --------------------------------------------------------------------------

class publisher_run {
public:
  explicit publisher_run(const options& o)
    : o_(o), ep_(make_config()), acks_(ep_.make_subscriber({ack_topic})),
      acked_(o.receivers, 0) {
    deadline_ = bench::clock_type::now() + std::chrono::duration_cast<bench::clock_type::duration>(
                                             std::chrono::duration<double>(o.timeout));
  }

  int run() {
    auto pub = ep_.make_publisher(data_topic);
    if (!pub || !ep_.peer(o_.host, o_.port, dial_retry)) {
      std::fprintf(stderr, "publisher: cannot peer with %s:%u\n", o_.host.c_str(), o_.port);
      return 1;
    }
    run_result res;
    res.system = "broker";
    res.mode = "peer";
    res.receivers = o_.receivers;
    res.latency_rate = o_.latency_rate;
    res.window = o_.window;
    auto cpu_start = bench::cpu_seconds();
    // 1. Probes.
    while (probed_.size() < o_.receivers) {
      if (timed_out("probes"))
        return 1;
      pub->publish(make(kind::probe, 0, false));
      auto until = bench::clock_type::now() + probe_interval;
      while (bench::clock_type::now() < until && probed_.size() < o_.receivers) {
        wait_readable(acks_.fd(), 10ms);
        drain_acks();
      }
    }
    // 2. Latency phase.
    auto total = static_cast<uint64_t>(o_.latency_rate * o_.latency_seconds + 0.5);
    auto interval = std::chrono::duration<double>(1.0 / o_.latency_rate);
    auto start = bench::clock_type::now();
    for (uint64_t k = 0; k < total; ++k) {
      std::this_thread::sleep_until(start + std::chrono::duration_cast<bench::clock_type::duration>(
                                              interval * static_cast<double>(k)));
      pub->publish(make(kind::latency, ++seq_, k + 1 == total));
    }
    if (!await_acks(seq_, "latency phase"))
      return 1;
    // 3. Throughput phase.
    auto first = seq_ + 1;
    auto start_ns = now_ns();
    auto stop_ns = start_ns + static_cast<uint64_t>(o_.seconds * 1e9);
    auto ack_every = std::max<size_t>(1, o_.window / 4);
    while (now_ns() < stop_ns) {
      drain_acks();
      // Partial batches too: the next flagged message must always get published.
      auto room = min_acked() + o_.window - seq_;
      if (room == 0) {
        if (timed_out("throughput phase"))
          return 1;
        wait_readable(acks_.fd(), 1ms);
        continue;
      }
      auto n = std::min<uint64_t>(o_.batch, room);
      std::vector<broker::data> xs;
      xs.reserve(n);
      auto ts = now_ns();
      for (uint64_t i = 0; i < n; ++i) {
        ++seq_;
        xs.emplace_back(broker::data{make_payload(stamp{ts, seq_, kind::throughput,
                                                        seq_ % ack_every == 0})});
      }
      pub->publish(std::move(xs));
    }
    pub->publish(make(kind::throughput, ++seq_, true));
    res.sent = seq_ - first + 1;
    if (!await_acks(seq_, "throughput drain"))
      return 1;
    // 4. Summaries.
    pub->publish(make(kind::end, seq_ + 1, false));
    uint64_t last_ns = start_ns;
    std::set<uint64_t> reported;
    while (reported.size() < o_.receivers) {
      if (timed_out("summaries"))
        return 1;
      wait_readable(acks_.fd(), 100ms);
      for (auto& msg : acks_.poll()) {
        auto* xs = broker::get_if<broker::vector>(msg.value());
        if (xs == nullptr || xs->size() != 8)
          continue;
        auto num = [&](size_t i) { return broker::get<broker::count>((*xs)[i]); };
        if (!reported.insert(num(0)).second)
          continue;
        res.delivered += num(1);
        res.lost += num(2);
        last_ns = std::max(last_ns, num(3));
        unflatten((*xs)[4], num(5), res.latency);
        unflatten((*xs)[6], num(7), res.loaded);
      }
    }
    res.seconds = static_cast<double>(last_ns - start_ns) / 1e9;
    res.cpu_seconds = bench::cpu_seconds() - cpu_start;
    res.complete = res.lost == 0 && res.delivered == res.sent * o_.receivers;
    res.print();
    return res.complete ? 0 : 1;
  }

private:
  static broker::data make(kind k, uint64_t seq, bool ack) {
    return broker::data{make_payload(stamp{now_ns(), seq, k, ack})};
  }

  void drain_acks() {
    if (acks_.available() == 0)
      return;
    for (auto& msg : acks_.poll()) {
      auto* xs = broker::get_if<broker::vector>(msg.value());
      if (xs == nullptr || xs->size() != 2)
        continue;
      auto id = broker::get<broker::count>((*xs)[0]);
      auto seq = broker::get<broker::count>((*xs)[1]);
      if (id >= acked_.size())
        continue;
      if (seq == 0)
        probed_.insert(id);
      acked_[id] = std::max(acked_[id], seq);
    }
  }

  uint64_t min_acked() const { return *std::min_element(acked_.begin(), acked_.end()); }

  bool await_acks(uint64_t seq, const char* what) {
    while (min_acked() < seq) {
      if (timed_out(what))
        return false;
      wait_readable(acks_.fd(), 10ms);
      drain_acks();
    }
    return true;
  }

  bool timed_out(const char* what) const {
    if (bench::clock_type::now() < deadline_)
      return false;
    std::printf("FAILED system=broker mode=peer N=%zu reason=timeout in %s: %zu of %zu "
                "receivers probed, slowest ack %llu of %llu\n",
                o_.receivers, what, probed_.size(), o_.receivers,
                static_cast<unsigned long long>(min_acked()),
                static_cast<unsigned long long>(seq_));
    std::fflush(stdout);
    return true;
  }

  options o_;
  broker::endpoint ep_;
  broker::subscriber acks_;
  std::vector<uint64_t> acked_; ///< Highest acknowledged sequence number per receiver.
  std::set<uint64_t> probed_;   ///< Receivers that answered a probe.
  uint64_t seq_ = 0;
  bench::clock_type::time_point deadline_;
};

} // namespace

int main(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (o.receive)
    return run_receiver(o);
  return publisher_run{o}.run();
}
