#include "broker/internal/core/core.hh"

#include "broker/error.hh"
#include "broker/status.hh"

#include <algorithm>
#include <iterator>
#include <set>

namespace broker::internal {

core_state::core_state(core_options opts)
  : opts_(std::move(opts)), index_(opts_.topic_cache_size) {
}

core_state::~core_state() {
  shutdown();
}

handler* core_state::find(uint64_t id) {
  auto i = handlers_.find(id);
  return i != handlers_.end() ? i->second.get() : nullptr;
}

// -- handlers -------------------------------------------------------------------

void core_state::add_handler(std::unique_ptr<handler> h, filter_type filter) {
  auto id = h->id();
  handlers_.emplace(id, std::move(h));
  subscribe(id, filter);
}

void core_state::remove_handler(uint64_t id) {
  auto i = handlers_.find(id);
  if (i == handlers_.end())
    return;
  auto& h = *i->second;
  // Anything staged was flushed at the end of the last batch; settle() guarantees it.
  filter_type all{h.filter().begin(), h.filter().end()};
  index_.unsubscribe(&h, all);
  if (h.kind() != handler_kind::peer) {
    local_filter_remove(all);
    announce_needed_ = true; // Peers stop sending what nobody here wants any more.
  }
  h.close();
  dirty_.erase(std::remove(dirty_.begin(), dirty_.end(), &h), dirty_.end());
  peers_.erase(id);
  clients_.erase(id);
  handlers_.erase(i);
  // A source may have been parked on this handler.
  resume_needed_ = true;
  settle();
}

// Subscription changes cost O(changed prefixes · log n) for a handler with n prefixes:
// the handler's prefixes are a sorted set, and only the changed ones reach the index.

void core_state::subscribe(uint64_t id, const filter_type& prefixes) {
  auto* h = find(id);
  if (h == nullptr || prefixes.empty())
    return;
  auto& f = h->filter();
  filter_type added;
  for (auto& p : prefixes)
    if (f.insert(p).second)
      added.push_back(p);
  if (added.empty())
    return;
  index_.subscribe(h, added);
  if (h->kind() != handler_kind::peer)
    local_filter_add(added);
  announce_needed_ = true;
}

void core_state::unsubscribe(uint64_t id, const filter_type& prefixes) {
  auto* h = find(id);
  if (h == nullptr || prefixes.empty())
    return;
  auto& f = h->filter();
  filter_type removed;
  for (auto& p : prefixes)
    if (f.erase(p) > 0)
      removed.push_back(p);
  if (removed.empty())
    return;
  index_.unsubscribe(h, removed);
  if (h->kind() != handler_kind::peer)
    local_filter_remove(removed);
  announce_needed_ = true;
}

void core_state::set_filter(handler& h, const filter_type& prefixes) {
  // One merge of two sorted ranges finds what changed.
  std::set<topic> wanted{prefixes.begin(), prefixes.end()};
  filter_type added;
  filter_type removed;
  std::set_difference(wanted.begin(), wanted.end(), h.filter().begin(), h.filter().end(),
                      std::back_inserter(added));
  std::set_difference(h.filter().begin(), h.filter().end(), wanted.begin(), wanted.end(),
                      std::back_inserter(removed));
  unsubscribe(h.id(), removed);
  subscribe(h.id(), added);
}

void core_state::local_filter_add(const filter_type& xs) {
  for (auto& x : xs)
    if (!x.is_reserved())
      ++local_prefixes_[x.string()];
}

void core_state::local_filter_remove(const filter_type& xs) {
  for (auto& x : xs) {
    auto i = local_prefixes_.find(x.string());
    if (i != local_prefixes_.end() && --i->second == 0)
      local_prefixes_.erase(i);
  }
}

filter_type core_state::filter() const {
  filter_type result;
  for (auto& [prefix, refs] : local_prefixes_)
    result.emplace_back(prefix);
  minimize(result);
  return result;
}

// -- peers ----------------------------------------------------------------------

void core_state::add_peer(peer_attachment att) {
  auto h = std::make_unique<peer_handler>(att.id, att.remote, att.queue);
  h->announced() = std::move(att.handshake_filter);
  h->network() = network_info{att.address, att.port, 0};
  peers_[att.id] = h.get();
  add_handler(std::move(h), att.filter);
  add_source(att.inbox);
  sources_[att.id].remote = true;
  endpoint_info ctx{att.remote, network_info{att.address, att.port, 0}};
  emit_status(status{sc::endpoint_discovered, ctx, "found a new peer in the network"});
  emit_status(status{sc::peer_added, ctx, "handshake successful"});
  announce_needed_ = true;
}

void core_state::remove_peer(uint64_t id, peer_end why, std::string reason) {
  auto i = peers_.find(id);
  if (i == peers_.end())
    return;
  endpoint_info ctx{i->second->remote(), i->second->network()};
  remove_source(id);
  remove_handler(id);
  if (why == peer_end::lost)
    emit_status(status{sc::peer_lost, ctx, "lost connection to remote peer: " + reason});
  else
    emit_status(status{sc::peer_removed, ctx, "removed connection to remote peer: " + reason});
  emit_status(status{sc::endpoint_unreachable, ctx, "lost the last path"});
  announce_needed_ = true;
  settle();
}

void core_state::update_peer_filter(uint64_t id, filter_type filter) {
  auto i = peers_.find(id);
  if (i == peers_.end())
    return;
  set_filter(*i->second, filter);
}

void core_state::add_client(client_attachment att) {
  auto h = std::make_unique<client_handler>(att.id, att.client, att.queue);
  h->network() = network_info{att.address, att.port, 0};
  clients_[att.id] = h.get();
  add_handler(std::move(h), att.filter);
  add_source(att.inbox);
  sources_[att.id].client = true;
  endpoint_info ctx{att.client, network_info{att.address, att.port, 0}};
  emit_status(status{sc::endpoint_discovered, ctx, "found a new WebSocket client"});
  emit_status(status{sc::peer_added, ctx, "handshake successful"});
}

void core_state::remove_client(uint64_t id, peer_end why, std::string reason) {
  auto i = clients_.find(id);
  if (i == clients_.end())
    return;
  endpoint_info ctx{i->second->client(), std::nullopt};
  remove_source(id);
  remove_handler(id);
  if (why == peer_end::lost)
    emit_status(status{sc::peer_lost, ctx, "lost WebSocket client: " + reason});
  else
    emit_status(status{sc::peer_removed, ctx, "removed WebSocket client: " + reason});
  emit_status(status{sc::endpoint_unreachable, ctx, "lost the last path"});
  settle();
}

std::vector<std::pair<endpoint_id, filter_type>> core_state::peer_filters() const {
  std::vector<std::pair<endpoint_id, filter_type>> result;
  for (auto& [id, h] : peers_)
    result.emplace_back(h->remote(), filter_type{h->filter().begin(), h->filter().end()});
  std::sort(result.begin(), result.end());
  return result;
}

std::map<topic, size_t> core_state::forwarded_prefixes() const {
  // How many peers want each prefix we may forward: one pass over the peers' filters, so
  // that announcing to N peers costs O(N · prefixes), not O(N²) (a node with 1000 peers
  // spent a minute per mass connect or disconnect recomputing every peer's union).
  std::map<topic, size_t> result;
  if (!opts_.disable_forwarding)
    for (auto& [other, h] : peers_)
      for (auto& p : h->filter())
        if (!p.is_reserved())
          ++result[p];
  return result;
}

filter_type core_state::announcement_from(const std::map<topic, size_t>& forwarded,
                                          const handler* to) const {
  // Split horizon: a peer hears our local subscriptions plus, when we forward, what our
  // other peers want; never its own wishes echoed back.
  auto result = filter();
  for (auto& [p, wanted_by] : forwarded) {
    auto own = to != nullptr && to->filter().count(p) > 0 ? 1u : 0u;
    if (wanted_by > own)
      result.push_back(p);
  }
  minimize(result);
  return result;
}

filter_type core_state::announcement_for(uint64_t id) const {
  auto i = peers_.find(id);
  return announcement_from(forwarded_prefixes(), i != peers_.end() ? i->second : nullptr);
}

void core_state::announce() {
  auto forwarded = forwarded_prefixes();
  for (auto& [id, h] : peers_) {
    auto f = announcement_from(forwarded, h);
    if (f != h->announced()) {
      h->announced() = f;
      h->queue()->announce(std::move(f));
    }
  }
  if (on_filter_change_)
    on_filter_change_(announcement_from(forwarded, nullptr));
}

// Per origin, a node routes sequence numbers in increasing order only: a copy that arrives
// after a newer message of its origin (it took a slower path, or the faster path dropped
// it) is dropped and counted, so every subscriber sees each origin's messages in order
// (doc/architecture.md, "Core, handlers and overflow policies"; doc/protocol/peering.md §7),
// and a gap shows up as a counted drop instead of a reordering.
core_state::sighting core_state::first_sighting(const route_info& route) {
  constexpr uint64_t window = 4096; // Sequence numbers remembered per origin.
  constexpr uint64_t word_bits = 64;
  if (route.origin.is_nil())
    return sighting::fresh; // A Broker peer: only TTL protects against loops.
  if (route.origin == opts_.id)
    return sighting::duplicate; // Our own message came back around a cycle.
  auto& w = seen_[route.origin];
  if (w.bits.empty())
    w.bits.resize(window / word_bits);
  auto bit = [&](uint64_t offset) -> std::pair<uint64_t&, uint64_t> {
    auto slot = (route.sequence - offset) % window; // Position in a ring of bits.
    return {w.bits[slot / word_bits], uint64_t{1} << (slot % word_bits)};
  };
  if (route.sequence > w.highest) {
    // Clear the bits of the sequence numbers we skip over.
    auto gap = std::min(route.sequence - w.highest, window);
    for (uint64_t k = 0; k < gap; ++k) {
      auto [word, mask] = bit(k);
      word &= ~mask;
    }
    w.highest = route.sequence;
    auto [word, mask] = bit(0);
    word |= mask;
    return sighting::fresh;
  }
  if (w.highest - route.sequence >= window)
    return sighting::stale; // Too old to tell; certainly behind a newer one.
  auto [word, mask] = bit(0);
  if (word & mask)
    return sighting::duplicate;
  word |= mask; // A later copy of it is a duplicate.
  return sighting::stale;
}

// -- sources --------------------------------------------------------------------

void core_state::add_source(std::shared_ptr<source_inbox> inbox) {
  auto id = inbox->id();
  source_state st;
  st.inbox = std::move(inbox);
  sources_.emplace(id, std::move(st));
}

void core_state::remove_source(uint64_t id) {
  auto i = sources_.find(id);
  if (i == sources_.end())
    return;
  i->second.removing = true;
  if (!i->second.parked)
    process(id);
  settle();
}

void core_state::on_wake(uint64_t id) {
  auto i = sources_.find(id);
  if (i == sources_.end() || i->second.parked)
    return; // A parked source takes its inbox again when it resumes.
  process(id);
  settle();
}

void core_state::on_room(uint64_t) {
  resume_needed_ = true;
  settle();
}

bool core_state::apply_events(uint64_t id, source_state& src) {
  while (src.event_pos < src.events.size() && src.events[src.event_pos].first <= src.pos) {
    auto& ev = src.events[src.event_pos].second;
    ++src.event_pos;
    switch (ev.what) {
      case source_event::kind::filter:
        update_peer_filter(id, std::move(ev.filter));
        break;
      case source_event::kind::error:
        emit_error(ev.err);
        break;
      case source_event::kind::detach:
        src.detached = std::move(ev);
        return false;
    }
  }
  return true;
}

void core_state::finish_detach(uint64_t id, source_event ev) {
  if (ev.limit)
    if (auto* h = find(id))
      ++counters_.kinds[static_cast<size_t>(h->kind())].limit_disconnects;
  if (peers_.count(id) != 0)
    remove_peer(id, ev.why, std::move(ev.reason));
  else if (clients_.count(id) != 0)
    remove_client(id, ev.why, std::move(ev.reason));
  else
    remove_handler(id);
}

void core_state::process(uint64_t id) {
  auto i = sources_.find(id);
  if (i == sources_.end())
    return;
  auto& src = i->second;
  for (size_t rounds = 0;; ++rounds) {
    if (src.batch.empty() && src.events.empty()) {
      if (rounds >= max_rounds_ && reschedule_) {
        // Let other sources and messages in; the inbox still counts as scheduled, so
        // nobody else would wake this source again.
        reschedule_(id);
        break;
      }
      if (src.inbox->take(src.batch, src.events) == 0)
        break;
    }
    while (apply_events(id, src) && src.pos < src.batch.size()) {
      auto& msg = src.batch[src.pos];
      if (src.remote && src.pos >= src.checked) {
        src.checked = src.pos + 1; // Check each message once, also across a park.
        auto seen = first_sighting(msg.impl().route());
        if (seen != sighting::fresh) {
          ++(seen == sighting::duplicate ? counters_.duplicates : counters_.out_of_order);
          ++src.pos;
          continue;
        }
      }
      if (!src.remote) {
        // Route a run of same-topic, same-kind messages handler-major: one lookup, one room
        // check and one reference-count add per message for the whole fan-out. A run ends
        // at the next event.
        auto limit = src.event_pos < src.events.size() ? src.events[src.event_pos].first
                                                       : src.batch.size();
        auto end = src.pos + 1;
        while (end < limit && src.batch[end].topic() == msg.topic()
               && src.batch[end].kind() == msg.kind())
          ++end;
        if (end - src.pos > 1 && route_run(&msg, end - src.pos, src, id)) {
          src.pos = end;
          continue;
        }
      }
      if (!route(msg, &src, id, true)) {
        src.parked = true;
        parked_.push_back(id);
        ++counters_.suspensions;
        break;
      }
      ++src.pos;
    }
    // Deliver before releasing credit, so a publisher never runs ahead of its sinks.
    flush_all();
    auto done = src.pos + src.event_pos;
    src.inbox->release(done - src.released);
    src.released = done;
    if (src.parked)
      return;
    src.batch.clear();
    src.events.clear();
    src.pos = 0;
    src.event_pos = 0;
    src.released = 0;
    src.checked = 0;
    if (src.detached)
      break;
  }
  if (src.detached) {
    auto ev = std::move(*src.detached);
    sources_.erase(i);
    finish_detach(id, std::move(ev));
    return;
  }
  if (src.removing)
    sources_.erase(i);
}

void core_state::resume_parked() {
  auto ids = std::move(parked_);
  parked_.clear();
  for (auto id : ids) {
    auto i = sources_.find(id);
    if (i == sources_.end())
      continue;
    i->second.parked = false;
    process(id);
  }
}

// -- routing --------------------------------------------------------------------

bool core_state::route(const data_message& msg, const source_state* src,
                       uint64_t source_id, bool may_park) {
  bool remote = src != nullptr && src->remote;
  ++counters_.processed;
  if (msg.kind() == message_kind::command)
    ++counters_.processed_commands;
  const auto& targets = index_.lookup(msg.topic());
  if (targets.empty()) {
    ++counters_.unrouted;
    return true;
  }
  // What peers get: our own messages start a new route; relayed ones keep their origin.
  route_info out;
  bool may_forward = true;
  if (remote) {
    const auto& in = msg.impl().route();
    out = route_info{in.origin, in.sequence, static_cast<uint8_t>(in.hops + 1),
                     static_cast<uint16_t>(in.ttl > 0 ? in.ttl - 1 : 0)};
    if (in.origin.is_nil()) {
      // Entering our overlay from a peer without origin-v1 (Broker): we become the origin,
      // so copies circulating among our nodes are recognized.
      out.origin = opts_.id;
      out.sequence = ++next_sequence_;
    }
    // A message whose TTL is used up is still delivered here, just not relayed.
    may_forward = !opts_.disable_forwarding && out.ttl > 0;
  } else if (src != nullptr) {
    out = route_info{opts_.id, ++next_sequence_, 0, opts_.ttl};
    // WebSocket clients count as non-local: a leaf node does not forward their messages.
    may_forward = !(src->client && opts_.disable_forwarding);
  } else {
    may_forward = false; // Core events are local by definition.
  }
  // "<$>" topics (store events, statuses) never leave the node, even to a peer whose
  // filter is the empty prefix.
  if (may_forward && is_reserved_topic(msg.topic()))
    may_forward = false;
  if (may_park) {
    for (auto* t : targets) {
      auto* h = static_cast<handler*>(t);
      if (!must_wait(*h, msg.kind()) || h->id() == source_id || h->closed()
          || !h->accepts(msg.kind()) || h->has_room())
        continue;
      // Make the sink's view exact, then ask it to tell us when it drains. The flush
      // cannot change the index (removals wait for settle()), so `targets` stays valid.
      flush_all();
      if (!h->request_wakeup(1)) {
        --counters_.processed; // Counted again when the source resumes.
        if (msg.kind() == message_kind::command)
          --counters_.processed_commands;
        return false;
      }
    }
  }
  for (auto* t : targets) {
    auto* h = static_cast<handler*>(t);
    if (h->kind() == handler_kind::peer) {
      auto* p = static_cast<peer_handler*>(h);
      if (!may_forward || p->remote() == out.origin)
        continue;
    }
    bool was_clean = !h->has_staged();
    switch (h->offer(msg, source_id, out)) {
      case offer_result::ok:
        if (was_clean)
          dirty_.push_back(h);
        break;
      case offer_result::overflow:
        // Only core events get here (may_park == false): they never wait.
        ++counters_.kinds[static_cast<size_t>(h->kind())]
            .dropped[static_cast<size_t>(overflow_policy::drop_newest)];
        break;
      case offer_result::skipped:
      case offer_result::closed:
        break;
    }
  }
  return true;
}

bool core_state::route_run(const data_message* xs, size_t k, const source_state& src,
                           uint64_t source_id) {
  const auto& targets = index_.lookup(xs[0].topic());
  auto commands = xs[0].kind() == message_kind::command ? k : 0; // A run has one kind.
  if (targets.empty()) {
    counters_.processed += k;
    counters_.processed_commands += commands;
    counters_.unrouted += k;
    return true;
  }
  for (auto* t : targets) {
    auto* h = static_cast<handler*>(t);
    if (must_wait(*h, xs[0].kind()) && h->id() != source_id && !h->closed()
        && h->accepts(xs[0].kind()) && !h->has_room(k))
      return false; // The per-message path parks exactly at the first message that waits.
  }
  counters_.processed += k;
  counters_.processed_commands += commands;
  run_routes_.clear();
  for (size_t i = 0; i < k; ++i)
    run_routes_.push_back(route_info{opts_.id, ++next_sequence_, 0, opts_.ttl});
  bool may_forward = !(src.client && opts_.disable_forwarding)
                     && !is_reserved_topic(xs[0].topic());
  auto n = targets.size();
  for (size_t i = 0; i < k; ++i)
    xs[i].impl().ref(n);
  size_t unused = 0;
  for (auto* t : targets) {
    auto* h = static_cast<handler*>(t);
    if (h->kind() == handler_kind::peer && !may_forward) {
      ++unused;
      continue;
    }
    bool was_clean = !h->has_staged();
    if (h->offer_run(xs, k, source_id, run_routes_.data())) {
      if (was_clean)
        dirty_.push_back(h);
    } else {
      ++unused;
    }
  }
  if (unused > 0)
    for (size_t i = 0; i < k; ++i)
      xs[i].impl().deref(unused);
  return true;
}

void core_state::flush_all() {
  for (auto* h : dirty_) {
    auto res = h->flush();
    auto& k = counters_.kinds[static_cast<size_t>(h->kind())];
    k.delivered += res.accepted;
    k.dropped[static_cast<size_t>(h->policy())] += res.dropped;
    if (res.disconnected) {
      ++k.disconnects;
      removals_.push_back(h->id());
      emit_error(error{ec::backpressure_overflow,
                       std::string{to_string(h->kind())} + " " + std::to_string(h->id())
                         + " exceeded its queue of " + std::to_string(h->capacity())
                         + " messages; disconnected"});
    }
  }
  dirty_.clear();
}

void core_state::settle() {
  if (settling_)
    return;
  settling_ = true;
  for (;;) {
    flush_all();
    if (!removals_.empty()) {
      auto ids = std::move(removals_);
      removals_.clear();
      for (auto id : ids) {
        if (auto i = peers_.find(id); i != peers_.end()) {
          remove_peer(id, peer_end::removed, "send buffer overflow");
          continue;
        }
        if (auto i = clients_.find(id); i != clients_.end()) {
          remove_client(id, peer_end::removed, "output queue overflow");
          continue;
        }
        remove_handler(id);
      }
      continue;
    }
    if (!events_.empty()) {
      auto msg = std::move(events_.front());
      events_.pop_front();
      route(msg, nullptr, core_source_id, false);
      continue;
    }
    if (resume_needed_) {
      resume_needed_ = false;
      resume_parked();
      continue;
    }
    if (announce_needed_) {
      announce_needed_ = false;
      announce();
      continue;
    }
    break;
  }
  settling_ = false;
}

void core_state::publish_local(std::string topic, data value) {
  events_.emplace_back(data_message{std::move(topic), std::move(value)});
}

void core_state::emit_error(const error& err) {
  publish_local(std::string{topic::errors}, to_data(err));
}

void core_state::emit_status(const status& st) {
  publish_local(std::string{topic::statuses}, to_data(st));
}

// -- introspection and shutdown -------------------------------------------------

endpoint_metrics core_state::metrics() const {
  auto result = counters_;
  for (auto& [id, h] : handlers_) {
    auto& k = result.kinds[static_cast<size_t>(h->kind())];
    ++k.handlers;
    k.buffered += h->buffered();
  }
  result.suspended_sources = parked_.size();
  return result;
}

void core_state::shutdown() {
  for (auto& [id, h] : handlers_)
    h->close();
  for (auto& [id, src] : sources_)
    src.inbox->close();
}

} // namespace broker::internal
