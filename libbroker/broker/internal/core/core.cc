#include "broker/internal/core/core.hh"

#include "broker/error.hh"
#include "broker/status.hh"

#include <algorithm>
#include <iterator>

namespace broker::internal {

core_state::core_state(const endpoint_id& id, std::shared_ptr<router> r)
  : id_(id), router_(std::move(r)), announcer_(router_->options().disable_forwarding) {
  commit(); // Publish the empty index: routing works from the start.
}

core_state::~core_state() {
  shutdown();
}

core_state::entry* core_state::find(uint64_t id) {
  auto i = handlers_.find(id);
  return i != handlers_.end() ? &i->second : nullptr;
}

// -- handlers -------------------------------------------------------------------

void core_state::add_handler(std::shared_ptr<handler> h, filter_type filter) {
  auto id = h->id();
  entry e;
  e.h = std::move(h);
  e.peer = e.h->kind() == handler_kind::peer;
  e.client = e.h->kind() == handler_kind::web_socket;
  handlers_.emplace(id, std::move(e));
  subscribe(id, filter);
}

void core_state::remove_handler(uint64_t id) {
  auto i = handlers_.find(id);
  if (i == handlers_.end())
    return;
  auto& e = i->second;
  filter_type all{e.filter.begin(), e.filter.end()};
  index_.unsubscribe(e.h.get(), all);
  if (e.peer)
    announcer_.remove_peer(id);
  else
    announcer_.remove_local(all);
  announce_needed_ = true; // Peers stop sending what nobody here wants any more.
  // Closing wakes the sources waiting for room in it; routers that still see the
  // handler find it closed, and the router frees it once none can see it (commit()).
  e.h->close();
  removed_.push_back(std::move(e.h));
  handlers_.erase(i);
}

// Subscription changes cost O(changed prefixes · log n) for a handler with n prefixes:
// the handler's prefixes are a sorted set, and only the changed ones reach the index.

void core_state::subscribe(uint64_t id, const filter_type& prefixes) {
  auto* e = find(id);
  if (e == nullptr || prefixes.empty())
    return;
  filter_type added;
  for (auto& p : prefixes)
    if (e->filter.insert(p).second)
      added.push_back(p);
  if (added.empty())
    return;
  index_.subscribe(e->h.get(), added);
  if (e->peer)
    announcer_.set_peer_filter(id, e->filter);
  else
    announcer_.add_local(added);
  announce_needed_ = true;
}

void core_state::unsubscribe(uint64_t id, const filter_type& prefixes) {
  auto* e = find(id);
  if (e == nullptr || prefixes.empty())
    return;
  filter_type removed;
  for (auto& p : prefixes)
    if (e->filter.erase(p) > 0)
      removed.push_back(p);
  if (removed.empty())
    return;
  index_.unsubscribe(e->h.get(), removed);
  if (e->peer)
    announcer_.set_peer_filter(id, e->filter);
  else
    announcer_.remove_local(removed);
  announce_needed_ = true;
}

void core_state::set_filter(entry& e, const filter_type& prefixes) {
  // One merge of two sorted ranges finds what changed.
  std::set<topic> wanted{prefixes.begin(), prefixes.end()};
  filter_type added;
  filter_type removed;
  std::set_difference(wanted.begin(), wanted.end(), e.filter.begin(), e.filter.end(),
                      std::back_inserter(added));
  std::set_difference(e.filter.begin(), e.filter.end(), wanted.begin(), wanted.end(),
                      std::back_inserter(removed));
  auto id = e.h->id();
  unsubscribe(id, removed);
  subscribe(id, added);
}

filter_type core_state::filter() const {
  return announcer_.local_filter();
}

filter_type core_state::filter_without(uint64_t id) const {
  filter_type result;
  for (auto& [hid, e] : handlers_)
    if (hid != id)
      for (auto& x : e.filter)
        if (!x.is_reserved())
          result.push_back(x);
  minimize(result);
  return result;
}

// -- sources --------------------------------------------------------------------

void core_state::add_source(uint64_t id, std::shared_ptr<source_stats> stats) {
  sources_[id] = std::move(stats);
}

void core_state::remove_source(uint64_t id) {
  sources_.erase(id);
}

// -- peers and clients ----------------------------------------------------------

void core_state::add_peer(peer_attachment att) {
  auto h = std::make_shared<peer_handler>(att.id, att.remote, att.queue);
  add_handler(std::move(h), {});
  auto& e = handlers_.at(att.id);
  e.remote = att.remote;
  e.network = network_info{att.address, att.port, 0};
  announcer_.add_peer(att.id, {}, std::move(att.handshake_filter));
  subscribe(att.id, att.filter);
  if (att.stats)
    add_source(att.id, std::move(att.stats));
  endpoint_info ctx{att.remote, e.network};
  emit_status(status{sc::endpoint_discovered, ctx, "found a new peer in the network"});
  emit_status(status{sc::peer_added, ctx, "handshake successful"});
  announce_needed_ = true;
}

void core_state::end_connection(uint64_t id, const status& last) {
  remove_source(id);
  remove_handler(id);
  emit_status(last);
  emit_status(status{sc::endpoint_unreachable, last.context(), "lost the last path"});
}

void core_state::remove_peer(uint64_t id, peer_end why, std::string reason) {
  auto* e = find(id);
  if (e == nullptr || !e->peer)
    return;
  endpoint_info ctx{e->remote, e->network};
  if (why == peer_end::lost)
    end_connection(id, status{sc::peer_lost, ctx, "lost connection to remote peer: " + reason});
  else
    end_connection(id,
                   status{sc::peer_removed, ctx, "removed connection to remote peer: " + reason});
}

void core_state::update_peer_filter(uint64_t id, filter_type filter) {
  auto* e = find(id);
  if (e == nullptr || !e->peer)
    return;
  set_filter(*e, filter);
}

void core_state::add_client(client_attachment att) {
  auto h = std::make_shared<client_handler>(att.id, att.queue);
  add_handler(std::move(h), att.filter);
  auto& e = handlers_.at(att.id);
  e.remote = att.client;
  e.network = network_info{att.address, att.port, 0};
  if (att.stats)
    add_source(att.id, std::move(att.stats));
  endpoint_info ctx{att.client, e.network};
  emit_status(status{sc::endpoint_discovered, ctx, "found a new WebSocket client"});
  emit_status(status{sc::peer_added, ctx, "handshake successful"});
}

void core_state::update_client_filter(uint64_t id, filter_type filter) {
  auto* e = find(id);
  if (e == nullptr || !e->client)
    return;
  set_filter(*e, filter);
}

void core_state::remove_client(uint64_t id, peer_end why, std::string reason) {
  auto* e = find(id);
  if (e == nullptr || !e->client)
    return;
  endpoint_info ctx{e->remote, std::nullopt};
  if (why == peer_end::lost)
    end_connection(id, status{sc::peer_lost, ctx, "lost WebSocket client: " + reason});
  else
    end_connection(id, status{sc::peer_removed, ctx, "removed WebSocket client: " + reason});
}

std::vector<std::pair<endpoint_id, filter_type>> core_state::peer_filters() const {
  std::vector<std::pair<endpoint_id, filter_type>> result;
  for (auto& [id, e] : handlers_)
    if (e.peer)
      result.emplace_back(e.remote, filter_type{e.filter.begin(), e.filter.end()});
  std::sort(result.begin(), result.end());
  return result;
}

filter_type core_state::announcement_for(uint64_t id) const {
  return announcer_.announcement_for(id);
}

// -- events ---------------------------------------------------------------------

void core_state::publish_local(std::string topic, data value) {
  events_.emplace_back(std::move(topic), std::move(value));
}

void core_state::emit_error(const error& err) {
  publish_local(std::string{topic::errors}, to_data(err));
}

void core_state::emit_status(const status& st) {
  publish_local(std::string{topic::statuses}, to_data(st));
}

void core_state::on_overflow(uint64_t id) {
  auto* e = find(id);
  if (e == nullptr)
    return;
  auto& h = *e->h;
  emit_error(error{ec::backpressure_overflow,
                   std::string{to_string(h.kind())} + " " + std::to_string(id)
                     + " exceeded its queue of " + std::to_string(h.capacity())
                     + " messages; disconnected"});
  if (e->peer)
    remove_peer(id, peer_end::removed, "send buffer overflow");
  else if (e->client)
    remove_client(id, peer_end::removed, "output queue overflow");
  else
    remove_handler(id);
}

void core_state::commit() {
  if (shut_down_)
    return;
  if (index_.dirty())
    router_->publish(index_.snapshot());
  // After the publish: no new reader can see these handlers any more.
  for (auto& h : removed_)
    router_->retire(std::move(h));
  removed_.clear();
  if (!events_.empty()) {
    auto xs = std::move(events_);
    events_.clear();
    size_t pos = 0;
    router_->route(route_source{core_source_id, source_kind::core}, xs.data(), xs.size(),
                   pos);
  }
  if (announce_needed_) {
    announce_needed_ = false;
    auto fresh = announcer_.announce([this](uint64_t id, const filter_type& f) {
      if (auto* e = find(id); e != nullptr && e->peer)
        static_cast<peer_handler&>(*e->h).queue()->announce(f);
    });
    if (on_filter_change_)
      on_filter_change_(fresh);
  }
}

bool core_state::collect_garbage() {
  return router_->collect();
}

// -- introspection and shutdown -------------------------------------------------

endpoint_metrics core_state::metrics() const {
  auto result = router_->counters();
  for (auto& [id, e] : handlers_) {
    auto& k = result.kinds[static_cast<size_t>(e.h->kind())];
    ++k.handlers;
    k.buffered += e.h->buffered();
  }
  for (size_t i = 0; i < num_handler_kinds; ++i)
    result.kinds[i].limit_disconnects = limit_disconnects_[i];
  for (auto& [id, st] : sources_)
    if (st->parked.load(std::memory_order_relaxed))
      ++result.suspended_sources;
  return result;
}

void core_state::shutdown() {
  if (shut_down_)
    return;
  shut_down_ = true;
  // Stop routing first: a publisher that closing its sink wakes must find nothing to route
  // to, not deliver the rest of its batch into closed queues.
  router_->shutdown();
  for (auto& [id, e] : handlers_)
    e.h->close();
}

} // namespace broker::internal
