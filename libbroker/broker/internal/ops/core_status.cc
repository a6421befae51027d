#include "broker/internal/ops/core_status.hh"

#include "broker/internal/core/core.hh"

#include <algorithm>

namespace broker::internal {

namespace {

std::vector<std::string> strings_of(const std::set<topic>& xs) {
  std::vector<std::string> result;
  result.reserve(xs.size());
  for (auto& x : xs)
    result.push_back(x.string());
  return result;
}

std::vector<std::string> strings_of(const filter_type& xs) {
  std::vector<std::string> result;
  result.reserve(xs.size());
  for (auto& x : xs)
    result.push_back(x.string());
  return result;
}

/// Fill level for ordering: the fuller queue first.
double fill_of(const handler_status& x) {
  return x.capacity == 0 ? 0.0 : static_cast<double>(x.buffered) / x.capacity;
}

} // namespace

/// The one reader of core_state's private tables (a friend of core_state).
struct core_status_reader {
  static core_status collect(const core_state& st, size_t client_filters) {
    core_status result;
    result.metrics = st.metrics();
    result.handlers.reserve(st.handlers_.size());
    for (auto& [id, h] : st.handlers_) {
      handler_status x;
      x.id = id;
      x.kind = h->kind();
      x.policy = h->policy();
      x.capacity = h->capacity();
      x.buffered = h->buffered();
      x.delivered = h->delivered();
      x.dropped = h->dropped();
      if (auto i = st.peers_.find(id); i != st.peers_.end()) {
        x.remote = i->second->remote();
        x.address = i->second->network().address;
        x.port = i->second->network().port;
      } else if (auto j = st.clients_.find(id); j != st.clients_.end()) {
        x.remote = j->second->client();
        x.address = j->second->network().address;
        x.port = j->second->network().port;
      }
      if (x.kind != handler_kind::web_socket)
        add_filters(st, *h, x);
      result.handlers.push_back(std::move(x));
    }
    if (client_filters > 0) {
      // The fullest clients are the interesting ones.
      std::vector<handler_status*> clients;
      for (auto& x : result.handlers)
        if (x.kind == handler_kind::web_socket)
          clients.push_back(&x);
      auto n = std::min(client_filters, clients.size());
      std::partial_sort(clients.begin(), clients.begin() + static_cast<std::ptrdiff_t>(n),
                        clients.end(), [](auto* a, auto* b) {
                          auto fa = fill_of(*a);
                          auto fb = fill_of(*b);
                          return fa != fb ? fa > fb : a->id < b->id;
                        });
      for (size_t i = 0; i < n; ++i)
        add_filters(st, *st.handlers_.at(clients[i]->id), *clients[i]);
    }
    std::sort(result.handlers.begin(), result.handlers.end(),
              [](auto& a, auto& b) { return a.id < b.id; });
    add_sources(st, result);
    result.announced = strings_of(st.announcement_for(0));
    return result;
  }

  static void add_filters(const core_state& st, handler& h, handler_status& x) {
    x.filters = true;
    x.filter = strings_of(h.filter());
    if (auto i = st.peers_.find(x.id); i != st.peers_.end())
      x.announced = strings_of(i->second->announced());
  }

  static void add_sources(const core_state& st, core_status& result) {
    auto by_id = [&result](uint64_t id) -> handler_status* {
      auto i = std::lower_bound(result.handlers.begin(), result.handlers.end(), id,
                                [](auto& x, uint64_t y) { return x.id < y; });
      return i != result.handlers.end() && i->id == id ? &*i : nullptr;
    };
    for (auto& [id, src] : st.sources_) {
      auto waiting = src.inbox->buffered();
      auto* h = by_id(id);
      if (h != nullptr) {
        h->has_source = true;
        h->received = src.inbox->taken();
        h->inbox = waiting;
      } else {
        ++result.publishers;
        result.published += src.inbox->taken();
      }
      bool store = h != nullptr
                   && (h->kind == handler_kind::store_master
                       || h->kind == handler_kind::store_clone);
      if (store) {
        result.waiting_commands += waiting;
      } else {
        auto events = src.remote ? src.inbox->pending_events() : 0;
        result.waiting_routing_updates += events;
        result.waiting_data += waiting - std::min(waiting, events);
      }
    }
  }
};

core_status collect_core_status(const core_state& st, size_t client_filters) {
  return core_status_reader::collect(st, client_filters);
}

} // namespace broker::internal
