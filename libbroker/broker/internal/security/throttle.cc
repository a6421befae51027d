#include "broker/internal/security/throttle.hh"

#include <algorithm>

namespace broker::internal::security {

auth_throttle::auth_throttle(size_t burst, clock::duration refill, size_t max_addresses)
  : burst_(std::max<size_t>(1, burst)),
    refill_(refill.count() > 0 ? refill : clock::duration{1}),
    max_addresses_(std::max<size_t>(1, max_addresses)) {
}

void auth_throttle::refill(bucket& b, clock::time_point now) const {
  if (b.left >= burst_) {
    b.last = now;
    return;
  }
  if (now <= b.last)
    return;
  auto earned = static_cast<size_t>((now - b.last) / refill_);
  if (earned == 0)
    return;
  if (earned >= burst_ - b.left) {
    b.left = burst_;
    b.last = now;
  } else {
    b.left += earned;
    b.last += refill_ * static_cast<clock::rep>(earned);
  }
}

uint64_t auth_throttle::wait_seconds(std::string_view address, clock::time_point now) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = buckets_.find(std::string{address});
  if (i == buckets_.end())
    return 0;
  auto& b = i->second;
  refill(b, now);
  if (b.left > 0)
    return 0;
  auto due = b.last + refill_;
  auto wait = std::chrono::duration_cast<std::chrono::seconds>(due - now + std::chrono::seconds{1}
                                                                - clock::duration{1});
  return static_cast<uint64_t>(std::max<int64_t>(1, wait.count()));
}

void auth_throttle::failed(std::string_view address, clock::time_point now) {
  std::lock_guard<std::mutex> guard{mtx_};
  std::string key{address};
  auto i = buckets_.find(key);
  if (i == buckets_.end()) {
    if (buckets_.size() >= max_addresses_)
      evict(now);
    i = buckets_.emplace(std::move(key), bucket{burst_, now}).first;
  }
  auto& b = i->second;
  refill(b, now); // A full bucket's clock starts now.
  if (b.left > 0)
    --b.left;
}

void auth_throttle::evict(clock::time_point now) {
  auto oldest = buckets_.end();
  for (auto i = buckets_.begin(); i != buckets_.end(); ++i) {
    refill(i->second, now);
    if (i->second.left >= burst_) {
      buckets_.erase(i);
      return;
    }
    if (oldest == buckets_.end() || i->second.last < oldest->second.last)
      oldest = i;
  }
  if (oldest != buckets_.end())
    buckets_.erase(oldest);
}

size_t auth_throttle::tracked() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return buckets_.size();
}

} // namespace broker::internal::security
