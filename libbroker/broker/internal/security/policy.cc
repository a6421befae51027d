#include "broker/internal/security/policy.hh"

#include <utility>

namespace broker::internal::security {

// -- policy_store ---------------------------------------------------------------------------

policy_store::policy_store(std::shared_ptr<const rule_set> initial)
  : current_(initial ? std::move(initial) : rule_set::allow_all()) {
}

void policy_store::publish(std::shared_ptr<const rule_set> next) {
  if (!next)
    next = rule_set::allow_all();
  std::shared_ptr<const rule_set> old;
  {
    std::lock_guard<std::mutex> lock{mtx_};
    old = std::exchange(current_, std::move(next));
    generation_.fetch_add(1, std::memory_order_release);
  }
  // `old` goes away here, outside the lock, unless a reader still holds it.
}

std::shared_ptr<const rule_set> policy_store::current() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return current_;
}

// -- policy_view ----------------------------------------------------------------------------

policy_view::policy_view(const policy_store& store) : store_(&store) {
  std::lock_guard<std::mutex> lock{store.mtx_};
  cached_ = store.current_;
  seen_ = store.generation_.load(std::memory_order_relaxed);
}

bool policy_view::refresh() {
  if (store_->generation_.load(std::memory_order_acquire) == seen_)
    return false;
  std::lock_guard<std::mutex> lock{store_->mtx_};
  cached_ = store_->current_;
  seen_ = store_->generation_.load(std::memory_order_relaxed);
  return true;
}

// -- guard ----------------------------------------------------------------------------------

guard::guard(const policy_store& store, credential cred)
  : view_(store), cred_(std::move(cred)) {
  authenticate();
}

void guard::authenticate() {
  auto result = view_.rules().authenticate(cred_);
  status_ = result.status;
  id_ = result.status == auth_status::ok ? result.id : no_identity;
  if (status_ == auth_status::ok)
    was_ok_ = true;
  else if (was_ok_)
    revoked_ = true;
}

bool guard::refresh() {
  if (!view_.refresh())
    return false;
  authenticate();
  reloaded_ = true;
  return true;
}

bool guard::poll_reload() {
  refresh();
  return std::exchange(reloaded_, false);
}

const std::string& guard::identity() const noexcept {
  return view_.rules().name_of(id_);
}

verdict guard::check_publish(std::string_view topic, uint64_t n) {
  refresh();
  const auto& rs = view_.rules();
  auto result = rs.check_publish(id_, topic);
  if (!result.allowed) {
    result.by->counters->refused_publishes.fetch_add(n, std::memory_order_relaxed);
    rs.identity_counters(id_).refused_publishes.fetch_add(n, std::memory_order_relaxed);
  }
  return result;
}

std::vector<subscribe_verdict> guard::check_subscribe(const std::vector<std::string>& filter) {
  refresh();
  const auto& rs = view_.rules();
  auto result = rs.check_subscribe(id_, filter);
  for (const auto& v : result)
    if (v.outcome != subscribe_outcome::allowed) {
      v.by->counters->refused_subscriptions.fetch_add(1, std::memory_order_relaxed);
      rs.identity_counters(id_).refused_subscriptions.fetch_add(1, std::memory_order_relaxed);
    }
  return result;
}

verdict guard::check_receive(std::string_view topic) {
  refresh();
  const auto& rs = view_.rules();
  auto result = rs.check_receive(id_, topic);
  if (!result.allowed) {
    result.by->counters->refused_deliveries.fetch_add(1, std::memory_order_relaxed);
    rs.identity_counters(id_).refused_deliveries.fetch_add(1, std::memory_order_relaxed);
  }
  return result;
}

void guard::count_refused_delivery(const rule& by) noexcept {
  by.counters->refused_deliveries.fetch_add(1, std::memory_order_relaxed);
  view_.rules().identity_counters(id_).refused_deliveries.fetch_add(1,
                                                                    std::memory_order_relaxed);
}

} // namespace broker::internal::security
