#include "broker/internal/core.hh"

#include "broker/error.hh"
#include "broker/status.hh"

#include <algorithm>

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
  auto* ptr = h.get();
  auto id = h->id();
  handlers_.emplace(id, std::move(h));
  subscribe(id, filter);
  (void) ptr;
}

void core_state::remove_handler(uint64_t id) {
  auto i = handlers_.find(id);
  if (i == handlers_.end())
    return;
  auto& h = *i->second;
  // Anything staged was flushed at the end of the last batch; settle() guarantees it.
  index_.unsubscribe(&h, h.filter());
  h.close();
  dirty_.erase(std::remove(dirty_.begin(), dirty_.end(), &h), dirty_.end());
  handlers_.erase(i);
  // A source may have been parked on this handler.
  resume_needed_ = true;
  settle();
}

void core_state::subscribe(uint64_t id, const filter_type& prefixes) {
  auto* h = find(id);
  if (h == nullptr || prefixes.empty())
    return;
  index_.subscribe(h, prefixes);
  auto& f = h->filter();
  for (auto& p : prefixes)
    if (std::find(f.begin(), f.end(), p) == f.end())
      f.push_back(p);
}

void core_state::unsubscribe(uint64_t id, const filter_type& prefixes) {
  auto* h = find(id);
  if (h == nullptr || prefixes.empty())
    return;
  index_.unsubscribe(h, prefixes);
  auto& f = h->filter();
  f.erase(std::remove_if(f.begin(), f.end(),
                         [&](const topic& x) {
                           return std::find(prefixes.begin(), prefixes.end(), x)
                                  != prefixes.end();
                         }),
          f.end());
}

filter_type core_state::filter() const {
  auto result = index_.prefixes();
  // Internal topics never leave the node.
  result.erase(std::remove_if(result.begin(), result.end(),
                              [](const topic& x) { return x.is_reserved(); }),
               result.end());
  minimize(result);
  return result;
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
  if (i == sources_.end())
    return;
  if (i->second.parked) {
    i->second.wake_pending = true;
    return;
  }
  process(id);
  settle();
}

void core_state::on_room(uint64_t) {
  resume_needed_ = true;
  settle();
}

void core_state::process(uint64_t id) {
  auto i = sources_.find(id);
  if (i == sources_.end())
    return;
  auto& src = i->second;
  for (;;) {
    if (src.batch.empty() && src.inbox->take(src.batch) == 0)
      break;
    while (src.pos < src.batch.size()) {
      if (!route(src.batch[src.pos], id, true)) {
        src.parked = true;
        parked_.push_back(id);
        ++counters_.suspensions;
        break;
      }
      ++src.pos;
    }
    // Deliver before releasing credit, so a publisher never runs ahead of its sinks.
    flush_all();
    src.inbox->release(src.pos - src.released);
    src.released = src.pos;
    if (src.parked)
      return;
    src.batch.clear();
    src.pos = 0;
    src.released = 0;
    if (!src.wake_pending && !src.removing)
      break;
    src.wake_pending = false;
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

bool core_state::route(const data_message& msg, uint64_t source_id, bool may_park) {
  ++counters_.processed;
  const auto& targets = index_.lookup(msg.topic());
  if (targets.empty()) {
    ++counters_.unrouted;
    return true;
  }
  if (may_park) {
    for (auto* t : targets) {
      auto* h = static_cast<handler*>(t);
      if (h->policy() != overflow_policy::block || h->id() == source_id || h->closed()
          || h->has_room())
        continue;
      // Make the sink's view exact, then ask it to tell us when it drains. The flush
      // cannot change the index (removals wait for settle()), so `targets` stays valid.
      flush_all();
      if (!h->request_wakeup(1)) {
        --counters_.processed; // Counted again when the source resumes.
        return false;
      }
    }
  }
  for (auto* t : targets) {
    auto* h = static_cast<handler*>(t);
    bool was_clean = !h->has_staged();
    switch (h->offer(msg, source_id)) {
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
        if (auto i = handlers_.find(id); i != handlers_.end()) {
          auto& h = *i->second;
          index_.unsubscribe(&h, h.filter());
          h.close();
          handlers_.erase(i);
          resume_needed_ = true;
        }
      }
      continue;
    }
    if (!events_.empty()) {
      auto msg = std::move(events_.front());
      events_.pop_front();
      route(msg, core_source_id, false);
      continue;
    }
    if (resume_needed_) {
      resume_needed_ = false;
      resume_parked();
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
