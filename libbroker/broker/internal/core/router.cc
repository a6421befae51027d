#include "broker/internal/core/router.hh"

#include <algorithm>
#include <vector>

namespace broker::internal {

namespace {

/// A routing thread's scratch memory, reused from batch to batch.
struct route_scratch {
  lookup_scratch lookup{0};
  size_t cache_slots = 0;
  std::vector<data_message> msgs;  // A run after loop suppression.
  std::vector<route_info> routes;  // Parallel to msgs, or to a whole run.
  std::vector<data_message> sub;   // What one peer gets of a relayed run.
  std::vector<route_info> sub_routes;
  std::vector<handler*> takers;    // The handlers that take a whole run.
};

route_scratch& scratch_for(size_t cache_slots) {
  thread_local route_scratch s;
  // Several endpoints may route on one thread: the largest cache wins.
  if (s.cache_slots < cache_slots) {
    s.lookup.resize_cache(cache_slots);
    s.cache_slots = cache_slots;
  }
  return s;
}

/// True if a source must wait for room in `h` rather than overflow it: handlers with policy
/// `block`, and peers for store commands (a burst of replication is no reason to cut a
/// peering; a peer that stops reading then slows the stores down, not the rest).
bool must_wait(const handler& h, message_kind kind) noexcept {
  return h.policy() == overflow_policy::block
         || (kind == message_kind::command && h.kind() == handler_kind::peer);
}

size_t kind_index(handler_kind k) noexcept {
  return static_cast<size_t>(k);
}

} // namespace

/// Counters of one route() call, added to the shared totals once at its end.
struct router::counts {
  uint64_t processed = 0;
  uint64_t commands = 0;
  uint64_t unrouted = 0;
  uint64_t suspensions = 0;
  uint64_t duplicates = 0;
  uint64_t out_of_order = 0;
  uint64_t refused = 0;
  std::array<uint64_t, num_handler_kinds> delivered{};
  std::array<uint64_t, num_handler_kinds * num_overflow_policies> dropped{};
  std::array<uint64_t, num_handler_kinds> disconnects{};
};

router::router(router_options opts) : opts_(std::move(opts)), loops_(opts_.id) {
}

router::~router() {
  shutdown();
}

route_status router::route(const route_source& src, const data_message* xs, size_t n,
                           size_t& pos, const room_waker& waker) {
  rcu::read_guard guard;
  const auto* snap = index_.load();
  if (snap == nullptr)
    return route_status::closed;
  auto& s = scratch_for(opts_.topic_cache_size);
  counts cnt;
  auto result = route_status::done;
  while (pos < n) {
    const auto& first = xs[pos];
    auto kind = first.kind();
    // A run: the following messages with the same topic and kind share the lookup.
    size_t end = pos + 1;
    while (end < n && xs[end].kind() == kind && xs[end].topic() == first.topic())
      ++end;
    auto k = end - pos;
    if (src.gate != nullptr && !src.gate->may_publish(first.topic(), k)) {
      cnt.refused += k; // Counted per identity and rule by the gate.
      pos = end;
      continue;
    }
    auto targets = snap->lookup(first.topic(), s.lookup);
    if (targets.empty()) {
      cnt.processed += k;
      cnt.commands += kind == message_kind::command ? k : 0;
      cnt.unrouted += k;
      pos = end;
      continue;
    }
    // Room in the sinks that must not lose messages.
    bool wait = false;
    if (src.kind != source_kind::core) {
      for (auto* t : targets) {
        auto* h = static_cast<handler*>(t);
        if (!must_wait(*h, kind) || h->id() == src.id || h->closed() || !h->accepts(kind))
          continue;
        auto room = h->room();
        if (room >= k)
          continue;
        if (room > 0) {
          k = room; // This much goes now; the rest waits at the next turn.
          continue;
        }
        if (waker && h->request_room(1, waker)) {
          // The consumer made room meanwhile, but perhaps for fewer than k: only what
          // fits goes now (pushing all k would overflow the peer and cut it off).
          k = std::min(k, std::max<size_t>(1, h->room()));
          continue;
        }
        wait = true;
        break;
      }
    }
    if (wait) {
      ++cnt.suspensions;
      result = route_status::parked;
      break;
    }
    cnt.processed += k;
    cnt.commands += kind == message_kind::command ? k : 0;
    deliver(src, xs + pos, k, targets, cnt);
    pos += k;
  }
  // Once per call: the shared counters are touched per batch, not per message.
  auto add = [](std::atomic<uint64_t>& x, uint64_t n) {
    if (n > 0)
      x.fetch_add(n, std::memory_order_relaxed);
  };
  add(totals_.processed, cnt.processed);
  add(totals_.processed_commands, cnt.commands);
  add(totals_.unrouted, cnt.unrouted);
  add(totals_.suspensions, cnt.suspensions);
  add(totals_.duplicates, cnt.duplicates);
  add(totals_.out_of_order, cnt.out_of_order);
  add(totals_.refused, cnt.refused);
  for (size_t i = 0; i < num_handler_kinds; ++i) {
    add(totals_.delivered[i], cnt.delivered[i]);
    add(totals_.disconnects[i], cnt.disconnects[i]);
  }
  for (size_t i = 0; i < cnt.dropped.size(); ++i)
    add(totals_.dropped[i], cnt.dropped[i]);
  return result;
}

void router::account(const handler& h, const push_result& res, counts& cnt) {
  auto k = kind_index(h.kind());
  cnt.delivered[k] += res.accepted;
  cnt.dropped[k * num_overflow_policies + static_cast<size_t>(h.policy())] += res.dropped;
  if (res.disconnected) {
    ++cnt.disconnects[k];
    if (disconnect_)
      disconnect_(h.id());
  }
}

void router::deliver(const route_source& src, const data_message* xs, size_t k,
                     target_span targets, counts& cnt) {
  auto& s = scratch_for(opts_.topic_cache_size);
  auto kind = xs[0].kind();
  const auto& topic = xs[0].topic();
  // "<$>" topics (store events, statuses) never leave the node, even to a peer whose
  // filter is the empty prefix.
  bool may_forward = !is_reserved_topic(topic);
  switch (src.kind) {
    case source_kind::remote:
      may_forward = may_forward && !opts_.disable_forwarding;
      break;
    case source_kind::client:
      // WebSocket clients count as non-local: a leaf node does not forward their messages.
      may_forward = may_forward && !opts_.disable_forwarding;
      break;
    case source_kind::core:
      may_forward = false; // Core events are local by definition.
      break;
    default:
      break;
  }
  bool to_peers = false;
  if (may_forward)
    for (auto* t : targets) {
      auto* h = static_cast<handler*>(t);
      if (h->kind() == handler_kind::peer && h->id() != src.id && h->accepts(kind)) {
        to_peers = true;
        break;
      }
    }
  // Which messages go on, and with which route.
  std::unique_lock<std::mutex> relay_lock;
  std::unique_lock<std::mutex> origin_lock;
  const data_message* msgs = xs;
  size_t m = k;
  const route_info* routes = nullptr;
  if (src.kind == source_kind::remote) {
    relay_lock = std::unique_lock<std::mutex>{relay_mtx_};
    s.msgs.clear();
    s.routes.clear();
    bool renumber = false;
    for (size_t i = 0; i < k; ++i) {
      const auto& in = xs[i].impl().route();
      switch (loops_.check(in)) {
        case loop_filter::sighting::duplicate:
          ++cnt.duplicates;
          continue;
        case loop_filter::sighting::stale:
          ++cnt.out_of_order;
          continue;
        case loop_filter::sighting::fresh:
          break;
      }
      s.msgs.push_back(xs[i]);
      s.routes.push_back(route_info{in.origin, in.sequence, static_cast<uint8_t>(in.hops + 1),
                                    static_cast<uint16_t>(in.ttl > 0 ? in.ttl - 1 : 0)});
      renumber = renumber || in.origin.is_nil();
    }
    if (s.msgs.empty())
      return;
    if (renumber && to_peers) {
      // Entering our overlay from a peer without origin-v1 (Broker): we become the
      // origin, so copies circulating among our nodes are recognized.
      origin_lock = std::unique_lock<std::mutex>{origin_mtx_};
      for (auto& r : s.routes)
        if (r.origin.is_nil()) {
          r.origin = opts_.id;
          r.sequence = ++next_sequence_;
        }
    }
    msgs = s.msgs.data();
    m = s.msgs.size();
    routes = s.routes.data();
  } else if (to_peers) {
    origin_lock = std::unique_lock<std::mutex>{origin_mtx_};
    s.routes.clear();
    for (size_t i = 0; i < k; ++i)
      s.routes.push_back(route_info{opts_.id, ++next_sequence_, 0, opts_.ttl});
    routes = s.routes.data();
  }
  // Peers first, while the locks keep sequence numbers in order on every link.
  if (to_peers) {
    for (auto* t : targets) {
      auto* h = static_cast<handler*>(t);
      if (h->kind() != handler_kind::peer || h->id() == src.id || h->closed()
          || !h->accepts(kind))
        continue;
      if (src.kind != source_kind::remote) {
        account(*h, h->push(msgs, routes, m), cnt);
        continue;
      }
      // Relayed: not back to the origin, and not once the TTL is used up.
      s.sub.clear();
      s.sub_routes.clear();
      for (size_t i = 0; i < m; ++i)
        if (routes[i].ttl > 0 && routes[i].origin != h->remote()) {
          s.sub.push_back(msgs[i]);
          s.sub_routes.push_back(routes[i]);
        }
      if (!s.sub.empty())
        account(*h, h->push(s.sub.data(), s.sub_routes.data(), s.sub.size()), cnt);
    }
  }
  if (origin_lock.owns_lock())
    origin_lock.unlock();
  // The other handlers take the whole run: the references for all of them are taken with
  // one atomic add per message, and each handler adopts its own.
  auto& takers = s.takers;
  takers.clear();
  for (auto* t : targets) {
    auto* h = static_cast<handler*>(t);
    if (h->kind() == handler_kind::peer || h->id() == src.id || h->closed()
        || !h->accepts(kind))
      continue;
    if (src.kind == source_kind::core && h->policy() == overflow_policy::block) {
      // Status and error events never wait: what a full sink cannot take is dropped.
      auto n = std::min(m, h->room());
      if (n < m) {
        h->count_dropped(m - n);
        cnt.dropped[kind_index(h->kind()) * num_overflow_policies
                    + static_cast<size_t>(overflow_policy::drop_newest)]
          += m - n;
      }
      if (n > 0)
        account(*h, h->push(msgs, routes, n), cnt);
      continue;
    }
    takers.push_back(h);
  }
  if (takers.empty())
    return;
  for (size_t i = 0; i < m; ++i)
    msgs[i].impl().ref(takers.size());
  for (auto* h : takers)
    account(*h, h->push_adopted(msgs, routes, m), cnt);
}

endpoint_metrics router::counters() const {
  endpoint_metrics result;
  auto get = [](const std::atomic<uint64_t>& x) { return x.load(std::memory_order_relaxed); };
  result.processed = get(totals_.processed);
  result.processed_commands = get(totals_.processed_commands);
  result.unrouted = get(totals_.unrouted);
  result.suspensions = get(totals_.suspensions);
  result.duplicates = get(totals_.duplicates);
  result.out_of_order = get(totals_.out_of_order);
  result.refused = get(totals_.refused);
  for (size_t i = 0; i < num_handler_kinds; ++i) {
    auto& k = result.kinds[i];
    k.delivered = get(totals_.delivered[i]);
    k.disconnects = get(totals_.disconnects[i]);
    for (size_t p = 0; p < num_overflow_policies; ++p)
      k.dropped[p] = get(totals_.dropped[i * num_overflow_policies + p]);
  }
  return result;
}

void router::publish(std::unique_ptr<const index_snapshot> snap) {
  index_.publish(std::move(snap), garbage_);
  garbage_.collect();
}

void router::retire(std::shared_ptr<handler> h) {
  garbage_.retire([h = std::move(h)]() mutable { h.reset(); });
}

bool router::collect() {
  return garbage_.collect();
}

void router::shutdown() {
  index_.publish(nullptr, garbage_);
  garbage_.drain();
}

} // namespace broker::internal
