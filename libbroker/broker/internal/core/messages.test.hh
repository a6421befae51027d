#pragma once

// Messages and queue contents for the unit tests of core/: messages carry an integer
// value, so a test compares what a queue holds with a list of numbers. Concurrent tests
// tag each value with its source (tagged()) and check per-source order with
// per_source_order.

#include "broker/internal/core/local_queue.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/message.hh"

#include <optional>
#include <string>
#include <vector>

namespace broker::internal::test {

/// first, first + 1, ..., last.
inline std::vector<int> range(int first, int last) {
  std::vector<int> result;
  for (int i = first; i <= last; ++i)
    result.push_back(i);
  return result;
}

/// A locally published message.
inline data_message local_msg(std::string topic, int value) {
  return data_message{topic, data{value}};
}

/// Locally published messages with the values first..last on `topic`.
inline std::vector<data_message> local_msgs(int first, int last, const std::string& topic = "/t") {
  std::vector<data_message> xs;
  for (int i = first; i <= last; ++i)
    xs.push_back(local_msg(topic, i));
  return xs;
}

/// A message as a peer connection decodes it: with its route.
inline data_message from_peer(std::string topic, int value, route_info route,
                              message_kind kind = message_kind::data) {
  return data_message{new message_impl(std::move(topic), data{value}, std::string{}, route,
                                       kind)};
}

/// The integer values of `xs`.
inline std::vector<int> values(const std::vector<data_message>& xs) {
  std::vector<int> result;
  for (auto& x : xs)
    result.push_back(static_cast<int>(get<integer>(x.value())));
  return result;
}

inline std::vector<int> values(const send_batch& xs) {
  std::vector<int> result;
  for (auto& x : xs)
    result.push_back(static_cast<int>(get<integer>(x.msg.value())));
  return result;
}

/// Pops up to `max` messages of `q`, as values.
inline std::vector<int> pop(local_queue& q, size_t max) {
  std::vector<data_message> xs;
  q.pop(xs, max);
  return values(xs);
}

/// Everything a local queue holds now, as values.
inline std::vector<int> drain(local_queue& q) {
  return pop(q, 1'000'000);
}

/// Everything a send queue holds now (its announcement is dropped).
template <class Item>
std::vector<Item> take_all(basic_send_queue<Item>& q) {
  std::vector<Item> items;
  std::optional<filter_type> ann;
  q.take(items, ann);
  return items;
}

/// The value of message `i` of source `source` in concurrent tests.
inline int tagged(int source, int i) {
  return source * 1'000'000 + i;
}

/// Checks that each source's tagged values arrive complete and in order.
struct per_source_order {
  explicit per_source_order(int sources) : next(static_cast<size_t>(sources), 0) {}

  void see(int value) {
    auto& n = next[static_cast<size_t>(value / 1'000'000)];
    if (value % 1'000'000 != n)
      ++out_of_order;
    n = value % 1'000'000 + 1;
    ++received;
  }

  void see(const std::vector<int>& xs) {
    for (auto x : xs)
      see(x);
  }

  /// True if every source's values 0..per_source-1 arrived.
  bool complete(int per_source) const {
    for (auto n : next)
      if (n != per_source)
        return false;
    return true;
  }

  std::vector<int> next; ///< Per source: the value expected next.
  int received = 0;
  int out_of_order = 0;
};

} // namespace broker::internal::test
