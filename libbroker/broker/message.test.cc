// data_message: shared, immutable, encoded and decoded at most once.

#include "broker/message.hh"

#include "broker/internal/codec/bin.hh"

#include <catch2/catch.hpp>

#include <thread>
#include <vector>

using namespace broker;

namespace {

data zeek_event() {
  return vector{count{1}, count{1}, vector{"event_1", vector{integer{42}, "test"}}};
}

} // namespace

TEST_CASE("a message built from its encoding keeps the bytes and decodes the value on use",
          "[message]") {
  auto bytes = *internal::bin::encode(zeek_event());
  data_message msg{new message_impl("/t", bytes, route_info{}, message_kind::data)};
  // Relaying needs only the bytes: the very same bytes, not a re-encoding.
  auto before = internal::bin::encode_calls();
  CHECK(msg.impl().binary() == bytes);
  CHECK(internal::bin::encode_calls() == before);
  CHECK(msg.value() == zeek_event());
  CHECK(&msg.value() == &msg.impl().value()); // Decoded once, then shared.
}

TEST_CASE("threads that read a lazily decoded value at once all see the same value",
          "[message]") {
  for (int round = 0; round < 50; ++round) {
    data_message msg{new message_impl("/t", *internal::bin::encode(zeek_event()),
                                      route_info{}, message_kind::data)};
    std::vector<const data*> seen(4);
    std::vector<std::thread> threads;
    for (size_t k = 0; k < seen.size(); ++k)
      threads.emplace_back([&, k] { seen[k] = &msg.value(); });
    for (auto& t : threads)
      t.join();
    for (auto* x : seen) {
      REQUIRE(x == seen[0]);
      CHECK(*x == zeek_event());
    }
  }
}

TEST_CASE("a store command whose bytes are no value reads as none", "[message]") {
  data_message msg{new message_impl("/s", std::string{"\x0e\xff", 2}, route_info{},
                                    message_kind::command)};
  CHECK(msg.value() == data{});
  CHECK(msg.impl().binary() == std::string{"\x0e\xff", 2});
}
