#include "broker/internal/zeromq/forwarder.hh"

namespace broker::internal::zeromq {

link::~link() = default;

void link::deliver(const shared_event* evs, const uint32_t* which, size_t n) {
  for (size_t i = 0; i < n; ++i)
    deliver(evs[which[i]]);
}

namespace {

void add(std::atomic<uint64_t>& x, uint64_t n) {
  x.fetch_add(n, std::memory_order_relaxed);
}

} // namespace

void forwarder::add_publisher(link* x) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (!publishers_.insert(x).second)
    return;
  // libzmq's XSUB replays these to a new pipe by itself: not the proxy's traffic, so not
  // counted (the counters are zmq_proxy_steerable's STATISTICS, forwarder.hh).
  for (auto& [prefix, n] : held_)
    x->pass_subscription(true, prefix);
}

void forwarder::remove_publisher(link* x) {
  std::lock_guard<std::mutex> guard{mtx_};
  publishers_.erase(x);
}

void forwarder::add_subscriber(link* x) {
  std::lock_guard<std::mutex> guard{mtx_};
  subscribers_.emplace(x, std::set<std::string, std::less<>>{});
}

void forwarder::remove_subscriber(link* x) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = subscribers_.find(x);
  if (i == subscribers_.end())
    return;
  auto prefixes = std::move(i->second);
  subscribers_.erase(i);
  // libzmq's XPUB (VERBOSER) reports one unsubscribe per prefix the pipe held; the proxy
  // receives each from its backend and sends it to its frontend.
  for (auto& prefix : prefixes) {
    count_subscription(prefix);
    xsub_send(x, false, prefix);
  }
}

void forwarder::subscription(link* x, bool subscribe, const std::string& prefix) {
  std::lock_guard<std::mutex> guard{mtx_};
  count_subscription(prefix);
  // The XPUB side: a set of prefixes per connection (libzmq's mtrie holds each pipe once
  // per prefix: a second subscribe adds nothing, one unsubscribe removes it).
  if (auto i = subscribers_.find(x); i != subscribers_.end()) {
    if (subscribe)
      i->second.insert(prefix);
    else
      i->second.erase(prefix);
  }
  // XPUB_VERBOSER reports every one of them to the XSUB side.
  xsub_send(x, subscribe, prefix);
}

void forwarder::count_subscription(const std::string& prefix) {
  // One message from the backend (XPUB) and one to the frontend (XSUB), whatever the XSUB
  // side then passes on and to how many publishers.
  add(counters_.backend_messages_received, 1);
  add(counters_.backend_bytes_received, prefix.size() + 1);
  add(counters_.frontend_messages_sent, 1);
  add(counters_.frontend_bytes_sent, prefix.size() + 1);
}

void forwarder::xsub_send(link* from, bool subscribe, const std::string& prefix) {
  // The XSUB side counts (libzmq's xsub_t): every subscribe is passed on, duplicates
  // included; an unsubscribe only when the last reference to the prefix goes.
  if (subscribe) {
    ++held_[prefix];
    pass_locked(from, true, prefix);
    return;
  }
  auto h = held_.find(prefix);
  if (h == held_.end())
    return;
  if (--h->second > 0)
    return;
  held_.erase(h);
  pass_locked(from, false, prefix);
}

void forwarder::pass_locked(link* from, bool subscribe, const std::string& prefix) {
  for (auto* p : publishers_) {
    if (p == from)
      continue; // The bridge is both: it does not need its own subscriptions back.
    p->pass_subscription(subscribe, prefix);
  }
}

void forwarder::set_tap(link* owner, tap_fn fn) {
  std::lock_guard<std::mutex> guard{mtx_};
  tap_owner_ = owner;
  tap_ = std::move(fn);
}

namespace {

/// Whether one of `prefixes` (sorted) is a prefix of `topic`.
bool matches(const std::set<std::string, std::less<>>& prefixes, std::string_view topic) {
  // A prefix of the topic sorts at or before it: stop at the first prefix after it.
  for (auto& prefix : prefixes) {
    if (prefix.size() <= topic.size() && topic.compare(0, prefix.size(), prefix) == 0)
      return true;
    if (prefix > topic)
      return false;
  }
  return false;
}

} // namespace

size_t forwarder::publish(link* from, const shared_event& ev) {
  return publish(from, &ev, 1);
}

size_t forwarder::publish(link* from, const shared_event* evs, size_t n) {
  std::lock_guard<std::mutex> guard{mtx_};
  // Runs of one topic (events without frames are skipped: nobody gets them, uncounted).
  runs_.clear();
  std::string_view last;
  uint64_t bytes = 0;
  size_t counted = 0;
  for (size_t i = 0; i < n; ++i) {
    auto& ev = evs[i];
    if (ev->size() == 0)
      continue;
    ++counted;
    bytes += ev->bytes.size();
    auto topic = ev->frame(0);
    if (runs_.empty() || topic != last) {
      runs_.push_back(static_cast<uint32_t>(i));
      last = topic;
    }
  }
  if (counted == 0)
    return 0;
  add(counters_.frontend_messages_received, counted);
  add(counters_.frontend_bytes_received, bytes);
  size_t delivered = 0;
  for (auto& [sub, prefixes] : subscribers_) {
    which_.clear();
    for (size_t r = 0; r < runs_.size(); ++r) {
      auto first = runs_[r];
      auto end = r + 1 < runs_.size() ? runs_[r + 1] : static_cast<uint32_t>(n);
      if (!matches(prefixes, evs[first]->frame(0)))
        continue;
      for (auto i = first; i < end; ++i)
        if (evs[i]->size() > 0)
          which_.push_back(i);
    }
    if (!which_.empty()) {
      sub->deliver(evs, which_.data(), which_.size());
      delivered += which_.size();
    }
  }
  if (tap_ && from != tap_owner_)
    tap_(evs, n);
  // The proxy sends each event once to its backend (XPUB), which fans it out or drops it:
  // once, whatever the number of receivers (zmq_proxy_steerable's STATISTICS).
  add(counters_.backend_messages_sent, counted);
  add(counters_.backend_bytes_sent, bytes);
  return delivered;
}

size_t forwarder::prefixes() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return held_.size();
}

size_t forwarder::publishers() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return publishers_.size();
}

size_t forwarder::subscribers() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return subscribers_.size();
}

} // namespace broker::internal::zeromq
