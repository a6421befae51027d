#pragma once

// throttle: failed authentications per remote address, so that guessing tokens costs time
// (doc/security.md, "Identities").
//
// Each address may fail `burst` times in a row; after that it earns one more attempt per
// `refill`. While it has none left, its attempts with a credential are refused without
// being checked (HTTP 429 with Retry-After for WebSocket clients), and counted. A
// successful authentication does not reset the address: a client that guessed right
// after many failures learns so only when the address may try again. Anonymous
// connections (no credential) are never throttled: they have nothing to guess.
//
// Bounded: at most `max_addresses` addresses are tracked; a new one evicts an address
// that has recovered, else the one that failed longest ago (an attacker with that many
// addresses is limited per address all the same, only less long).
//
// Threads: thread-safe (one mutex; authentication failures are rare, and when they are
// not, they are what is to be slowed down).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace broker::internal::security {

/// See the file comment.
class auth_throttle {
public:
  using clock = std::chrono::steady_clock;

  static constexpr size_t default_burst = 10;
  static constexpr std::chrono::seconds default_refill{6};
  static constexpr size_t default_max_addresses = 4096;

  explicit auth_throttle(size_t burst = default_burst,
                         clock::duration refill = default_refill,
                         size_t max_addresses = default_max_addresses);

  /// 0 if `address` may try to authenticate now; otherwise the seconds (at least 1) until
  /// it may.
  uint64_t wait_seconds(std::string_view address, clock::time_point now = clock::now());

  /// Records a failed authentication from `address`.
  void failed(std::string_view address, clock::time_point now = clock::now());

  /// Addresses tracked right now.
  size_t tracked() const;

private:
  struct bucket {
    size_t left = 0;           ///< Attempts left.
    clock::time_point last{};  ///< When `left` was last refilled or spent.
  };

  /// Adds the attempts earned since b.last.
  void refill(bucket& b, clock::time_point now) const;

  /// Makes room for one more address.
  void evict(clock::time_point now);

  mutable std::mutex mtx_;
  size_t burst_;
  clock::duration refill_;
  size_t max_addresses_;
  std::unordered_map<std::string, bucket> buckets_;
};

} // namespace broker::internal::security
