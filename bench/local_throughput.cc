// broker-local-bench: in-process throughput and memory of the local pub/sub path.
//
// Throughput (default): one publisher thread publishes 64-byte strings on /bench/data to N
// local subscribers for a few seconds, single or in batches; consumer threads drain the
// subscribers through their fd()s (bench_util.hh). Prints one RESULT line: messages/s
// published, messages/s delivered summed over subscribers, drops, peak RSS.
//
// Memory (--slow): one subscriber under drop_oldest that never reads while the publisher
// runs; prints the process RSS once per second. The queue holds at most --capacity
// messages, so RSS must level off.
//
// Examples:
//   broker-local-bench --subscribers 100 --mode batch --policy block --seconds 3
//   broker-local-bench --slow --capacity 100000 --seconds 15

#include "bench_util.hh"

#include <broker/endpoint.hh>

#include <cstdio>
#include <string>
#include <thread>

namespace {

broker::overflow_policy to_policy(const std::string& name) {
  if (name == "block")
    return broker::overflow_policy::block;
  if (name == "drop_oldest")
    return broker::overflow_policy::drop_oldest;
  if (name == "drop_newest")
    return broker::overflow_policy::drop_newest;
  std::fprintf(stderr, "unsupported policy for this benchmark: %s\n", name.c_str());
  std::exit(2);
}

constexpr const char* bench_topic = "/bench/data";

uint64_t dropped_by_subscribers(const broker::endpoint_metrics& m) {
  uint64_t result = 0;
  for (auto x : m[broker::handler_kind::subscriber].dropped)
    result += x;
  return result;
}

int run_throughput(const bench::options& o) {
  broker::endpoint ep;
  broker::queue_options qopts{o.capacity, to_policy(o.policy)};
  std::vector<broker::subscriber> subs;
  subs.reserve(o.subscribers);
  for (size_t i = 0; i < o.subscribers; ++i)
    subs.push_back(ep.make_subscriber({bench_topic}, qopts));
  auto pub = ep.make_publisher(bench_topic);
  if (!pub) {
    std::fprintf(stderr, "make_publisher: %s\n", to_string(pub.error_value()).c_str());
    return 1;
  }
  const std::string payload(o.payload, 'x');
  auto is_sentinel = [](const broker::data_message& x) {
    return x.value().is<broker::count>();
  };
  bench::result res{"ours", &o};
  auto start = bench::clock_type::now();
  bench::consumer_pool pool{subs, o.consumers, is_sentinel, o.timeout};
  res.sent = bench::publish_for(
    o, [&] { return broker::data{payload}; },
    [&](broker::data x) { pub->publish(std::move(x)); },
    [&](std::vector<broker::data> xs) { pub->publish(std::move(xs)); });
  pub->publish(broker::data{broker::count{0}});
  auto published = bench::clock_type::now();
  res.complete = pool.join();
  res.delivered = pool.delivered();
  res.dropped = dropped_by_subscribers(ep.metrics());
  res.publish_seconds = bench::seconds_between(start, published);
  res.total_seconds = bench::seconds_between(start, pool.finished());
  res.print();
  return res.complete ? 0 : 1;
}

int run_slow(const bench::options& o) {
  auto base_kb = bench::proc_status_kb("VmRSS");
  broker::endpoint ep;
  auto sub = ep.make_subscriber({bench_topic},
                                broker::queue_options{o.capacity,
                                                      broker::overflow_policy::drop_oldest});
  auto pub = ep.make_publisher(bench_topic);
  if (!pub)
    return 1;
  const std::string payload(o.payload, 'x');
  std::atomic<bool> done{false};
  std::atomic<uint64_t> sent{0};
  std::printf("# slow subscriber: drop_oldest, capacity %zu, payload %zu bytes, RSS before "
              "the endpoint %.1f MiB\n",
              o.capacity, o.payload, static_cast<double>(base_kb) / 1024.0);
  std::printf("%6s %12s %12s %10s\n", "t_s", "published", "queued", "rss_mb");
  std::thread sampler{[&] {
    auto start = bench::clock_type::now();
    for (int t = 1; !done.load(); ++t) {
      std::this_thread::sleep_until(start + std::chrono::seconds{t});
      std::printf("%6d %12llu %12zu %10.1f\n", t,
                  static_cast<unsigned long long>(sent.load()), sub.available(),
                  static_cast<double>(bench::proc_status_kb("VmRSS")) / 1024.0);
      std::fflush(stdout);
    }
  }};
  auto stop = bench::clock_type::now()
              + std::chrono::duration_cast<bench::clock_type::duration>(
                std::chrono::duration<double>(o.seconds));
  while (bench::clock_type::now() < stop) {
    std::vector<broker::data> xs;
    xs.reserve(o.batch_size);
    for (size_t i = 0; i < o.batch_size; ++i)
      xs.emplace_back(payload);
    pub->publish(std::move(xs));
    sent += o.batch_size;
  }
  done = true;
  sampler.join();
  auto m = ep.metrics();
  std::printf("# published %llu, queued %zu, dropped %llu (drop_oldest), peak RSS %.1f MiB\n",
              static_cast<unsigned long long>(sent.load()), sub.available(),
              static_cast<unsigned long long>(
                m.dropped(broker::handler_kind::subscriber,
                          broker::overflow_policy::drop_oldest)),
              static_cast<double>(bench::proc_status_kb("VmHWM")) / 1024.0);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto o = bench::parse(argc, argv);
  return o.slow ? run_slow(o) : run_throughput(o);
}
