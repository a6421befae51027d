#pragma once

// Helpers shared by the tests that peer endpoints in one process over loopback TCP.

#include "broker/endpoint.hh"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

namespace broker::test {

/// Polls `pred` every 5 ms until it holds; false after `limit`.
template <class Pred>
bool eventually(Pred pred, std::chrono::seconds limit = std::chrono::seconds{15}) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  return true;
}

/// Peers `a` with `b` (a dials b) and waits until both sides have this new peering, not
/// just any peering (a may already have one).
inline void connect(endpoint& a, endpoint& b) {
  auto na = a.peers().size();
  auto nb = b.peers().size();
  auto port = b.listen("127.0.0.1", 0);
  REQUIRE(port);
  REQUIRE(a.peer("127.0.0.1", *port, std::chrono::seconds{0}));
  REQUIRE(eventually([&] { return b.peers().size() > nb && a.peers().size() > na; }));
}

} // namespace broker::test
