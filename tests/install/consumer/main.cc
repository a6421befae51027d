// A downstream program: publishes a value through an endpoint, reads it back, and checks
// that the headers and the library it runs with agree on the version.
#include <broker/endpoint.hh>
#include <broker/json.hh>
#include <broker/version.hh>

#include <chrono>
#include <cstdio>
#include <cstring>

int main() {
  if (std::strcmp(broker::version(), BROKER_VERSION_STRING) != 0) {
    std::printf("version mismatch: headers %s, library %s\n", BROKER_VERSION_STRING,
                broker::version());
    return 1;
  }
  broker::endpoint ep;
  auto sub = ep.make_subscriber({"/consumer"});
  if (auto err = ep.publish("/consumer/test", broker::data{broker::count{42}})) {
    std::printf("publish failed: %s\n", to_string(err).c_str());
    return 1;
  }
  auto msg = sub.get(std::chrono::seconds{10});
  if (!msg) {
    std::printf("no message within 10 s\n");
    return 1;
  }
  std::printf("consumer %s: %s %s\n", broker::version(), msg->topic().c_str(),
              broker::to_json(msg->value()).c_str());
  return 0;
}
