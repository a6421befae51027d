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

namespace {

/// The frame a message gets on its own (what a lone writer encodes).
std::string lone_frame(const data_message& msg) {
  data_message copy{msg.topic(), msg.value()};
  return std::string{copy.impl().ws_frame()};
}

/// Messages whose JSON texts span the three WebSocket header sizes (2, 4 and 10 bytes).
std::vector<data_message> mixed_messages() {
  std::vector<data_message> msgs;
  for (size_t len : {0, 10, 90, 130, 1000, 70000, 5, 65600})
    msgs.emplace_back("/t/" + std::to_string(len), data{std::string(len, 'x')});
  return msgs;
}

} // namespace

TEST_CASE("frames encoded together are the frames encoded alone, back to back",
          "[message]") {
  auto msgs = mixed_messages();
  message_impl::encode_ws_frames(msgs.data(), msgs.size());
  const char* end = nullptr;
  size_t adjacent = 0;
  for (auto& m : msgs) {
    auto frame = m.impl().ws_frame();
    CHECK(frame == lone_frame(m));
    // The JSON text is the frame behind its header.
    CHECK(frame.substr(frame.size() - m.impl().json().size()) == m.impl().json());
    CHECK(m.impl().json().front() == '{');
    if (frame.data() == end)
      ++adjacent;
    end = frame.data() + frame.size();
  }
  // A block closes after 4 KiB: the frame after the 70000-byte one starts a new block,
  // every other frame follows its predecessor.
  CHECK(adjacent == msgs.size() - 2);
}

TEST_CASE("encoding a batch skips the frames somebody encoded already", "[message]") {
  auto msgs = mixed_messages();
  auto first = msgs[2].impl().ws_frame(); // Encoded alone, before the batch.
  message_impl::encode_ws_frames(msgs.data(), msgs.size());
  CHECK(msgs[2].impl().ws_frame().data() == first.data());
  CHECK(msgs[1].impl().ws_frame().data() + msgs[1].impl().ws_frame().size()
        != msgs[2].impl().ws_frame().data());
  // Encoding again changes nothing.
  auto before = msgs[0].impl().ws_frame().data();
  message_impl::encode_ws_frames(msgs.data(), msgs.size());
  CHECK(msgs[0].impl().ws_frame().data() == before);
  for (auto& m : msgs)
    CHECK(m.impl().ws_frame() == lone_frame(m));
}

TEST_CASE("a block of frames lives as long as its last message", "[message]") {
  std::vector<data_message> msgs;
  for (int i = 0; i < 200; ++i) // More than one block holds (64 messages).
    msgs.emplace_back("/t", data{count(i)});
  message_impl::encode_ws_frames(msgs.data(), msgs.size());
  auto last = msgs.back();
  auto expected = lone_frame(last);
  // Drop every message but one, in an order other than the block's.
  for (size_t i = 0; i < msgs.size(); i += 2)
    msgs[i] = data_message{};
  msgs.clear();
  CHECK(last.impl().ws_frame() == expected);
}

TEST_CASE("threads that encode overlapping batches at once agree on every frame",
          "[message]") {
  for (int round = 0; round < 50; ++round) {
    std::vector<data_message> msgs;
    for (int i = 0; i < 100; ++i)
      msgs.emplace_back("/t/" + std::to_string(i), data{std::string(i * 3, 'y')});
    std::vector<std::thread> threads;
    for (size_t k = 0; k < 4; ++k)
      threads.emplace_back([&, k] {
        // Each thread takes a different window of the messages.
        auto from = k * 20;
        message_impl::encode_ws_frames(msgs.data() + from, msgs.size() - from);
      });
    for (auto& t : threads)
      t.join();
    for (auto& m : msgs)
      REQUIRE(m.impl().ws_frame() == lone_frame(m));
  }
}
