// pubsub-example: the local publish/subscribe API in one program.
//
// A consumer thread waits on its subscriber's file descriptor with poll(), the way an
// application would wait on its own sockets too; the main thread publishes Zeek-style
// events through a publisher; a status subscriber reports what the overflow policies did.

#include <broker/endpoint.hh>

#include <cstdio>
#include <poll.h>
#include <thread>

int main() {
  broker::endpoint ep;
  std::printf("endpoint %s started\n", to_string(ep.node_id()).c_str());

  auto events = ep.make_subscriber({"/demo/events"});
  // A deliberately tiny queue that nobody reads, under drop_oldest: it keeps the newest 4.
  auto slow = ep.make_subscriber({"/demo"}, broker::queue_options{4,
                                                                  broker::overflow_policy::drop_oldest});
  auto statuses = ep.make_status_subscriber(true);

  constexpr int total = 10;
  std::thread consumer{[&] {
    int received = 0;
    while (received < total) {
      pollfd pfd{events.fd(), POLLIN, 0};
      if (::poll(&pfd, 1, 5000) <= 0) {
        std::printf("consumer: timed out\n");
        return;
      }
      for (auto& msg : events.poll()) {
        std::printf("consumer: %s -> %s\n", msg.topic().c_str(),
                    to_string(msg.value()).c_str());
        ++received;
      }
    }
  }};

  auto pub = ep.make_publisher("/demo/events");
  if (!pub) {
    std::printf("cannot create publisher: %s\n", to_string(pub.error_value()).c_str());
    return 1;
  }
  for (int i = 0; i < total; ++i) {
    // A Zeek event: [format 1, type 1 = event, [name, [args...]]].
    auto event = broker::vector_builder{}
                   .add(broker::count{1})
                   .add(broker::count{1})
                   .add(broker::vector_builder{}
                          .add("ping")
                          .add(broker::vector_builder{}.add(i).add("hello").build())
                          .build())
                   .build();
    pub->publish(std::move(event));
  }
  consumer.join();

  auto err = ep.publish("<$>/local/data/statuses", broker::data{"forged"});
  std::printf("publishing to a reserved topic: %s\n", to_string(err).c_str());

  auto m = ep.metrics();
  std::printf("slow subscriber kept %zu messages; dropped %llu under drop_oldest\n",
              slow.available(),
              static_cast<unsigned long long>(
                m.dropped(broker::handler_kind::subscriber, broker::overflow_policy::drop_oldest)));
  std::printf("messages routed by the core: %llu\n",
              static_cast<unsigned long long>(m.processed));
  ep.shutdown();
  std::printf("done\n");
  return 0;
}
