// broker14-bench: the scenario of broker-local-bench against Debian's Broker 1.4.0
// (libbroker-dev 1.4.0+ds1), for a side-by-side comparison on the same machine.
//
// Built by run-local.sh with a plain g++ line against Broker 1.4's headers and library
// only: our headers are also named <broker/...>, so this file must never see ours.
//
// Differences from broker-local-bench, all imposed by Broker 1.4:
//   - Broker 1.x never delivers a locally published message to a subscriber of the same
//     endpoint (core_policy::push() forwards to peers only; its local_push() is commented
//     out). So this program runs two endpoints in one process: a publishing endpoint
//     peered over 127.0.0.1 TCP with a subscribing endpoint that holds the N subscribers.
//     The fan-out to N subscribers happens inside the second endpoint, as in ours, but
//     every message also crosses one serialization + loopback TCP hop that ours does not.
//   - No overflow policies: a 1.4 subscriber's queue (max_qsize, here --capacity) is a
//     credit window of CAF's streaming; a full subscriber slows the stream (like `block`).
//   - The publisher's flare pipe is made non-blocking to work around a 1.4 deadlock
//     (see run_throughput()).

#include "bench_util.hh"

#include <broker/broker.hh>
#include <broker/endpoint.hh>
#include <broker/publisher.hh>
#include <broker/subscriber.hh>

#include <fcntl.h>

#include <cstdio>
#include <string>
#include <thread>

namespace {

constexpr const char* bench_topic = "/bench/data";

int run_throughput(const bench::options& o) {
  if (o.policy != "block") {
    std::fprintf(stderr, "Broker 1.4 has no overflow policies; use --policy block\n");
    return 2;
  }
  broker::broker_options bopts;
  bopts.ignore_broker_conf = true;
  broker::endpoint ep_sub{broker::configuration{bopts}};
  broker::endpoint ep_pub{broker::configuration{bopts}};
  std::vector<broker::subscriber> subs;
  subs.reserve(o.subscribers);
  for (size_t i = 0; i < o.subscribers; ++i)
    subs.push_back(ep_sub.make_subscriber({broker::topic{bench_topic}}, o.capacity));
  auto port = ep_sub.listen("127.0.0.1", 0);
  if (port == 0 || !ep_pub.peer("127.0.0.1", port, broker::timeout::seconds{0})) {
    std::fprintf(stderr, "cannot peer the two endpoints over 127.0.0.1\n");
    return 1;
  }
  auto pub = ep_pub.make_publisher(broker::topic{bench_topic});
  // Broker 1.4 bug (zeek/broker#196, fixed upstream in #197 for 2.1): the publisher's
  // flare pipe is left blocking, so publish() deadlocks as soon as the 30-slot publisher
  // queue fills up. The upstream fix makes the pipe non-blocking; do the same from here.
  // fd() is that pipe's read end.
  if (::fcntl(pub.fd(), F_SETFL, ::fcntl(pub.fd(), F_GETFL) | O_NONBLOCK) != 0) {
    std::perror("fcntl");
    return 1;
  }
  // Wait until the subscribers' filter has reached the publishing side: repeat a warm-up
  // message until every subscriber has one, then drop what they got.
  for (size_t i = 0, tries = 0; i < subs.size();) {
    if (subs[i].available() > 0) {
      subs[i].poll();
      ++i;
      continue;
    }
    if (++tries > 200) {
      std::fprintf(stderr, "subscriptions did not propagate to the publishing endpoint\n");
      std::_Exit(1);
    }
    pub.publish(broker::data{true});
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  for (auto& sub : subs)
    sub.poll();
  const std::string payload(o.payload, 'x');
  auto is_sentinel = [](const broker::data_message& x) {
    return broker::is<broker::count>(broker::get_data(x));
  };
  bench::result res{"broker-1.4", &o};
  auto start = bench::clock_type::now();
  bench::consumer_pool pool{subs, o.consumers, is_sentinel, o.timeout};
  res.sent = bench::publish_for(
    o, [&] { return broker::data{payload}; },
    [&](broker::data x) { pub.publish(std::move(x)); },
    [&](std::vector<broker::data> xs) { pub.publish(std::move(xs)); });
  pub.publish(broker::data{broker::count{0}});
  auto published = bench::clock_type::now();
  res.complete = pool.join();
  res.delivered = pool.delivered();
  res.publish_seconds = bench::seconds_between(start, published);
  res.total_seconds = bench::seconds_between(start, pool.finished());
  res.print();
  // Skip the endpoint's orderly shutdown on failure: it waits for all subscribers.
  if (!res.complete)
    std::_Exit(1);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto o = bench::parse(argc, argv);
  if (o.slow) {
    std::fprintf(stderr, "--slow is only implemented by broker-local-bench\n");
    return 2;
  }
  return run_throughput(o);
}
