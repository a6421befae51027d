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
    for (auto& [id, e] : st.handlers_) {
      const auto& h = *e.h;
      handler_status x;
      x.id = id;
      x.kind = h.kind();
      x.policy = h.policy();
      x.capacity = h.capacity();
      x.buffered = h.buffered();
      x.delivered = h.delivered();
      x.dropped = h.dropped();
      if (e.peer || e.client) {
        x.remote = e.remote;
        x.address = e.network.address;
        x.port = e.network.port;
      }
      if (x.kind != handler_kind::web_socket)
        add_filters(st, e, x);
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
        add_filters(st, st.handlers_.at(clients[i]->id), *clients[i]);
    }
    std::sort(result.handlers.begin(), result.handlers.end(),
              [](auto& a, auto& b) { return a.id < b.id; });
    add_sources(st, result);
    result.announced = strings_of(st.announcement_for(0));
    return result;
  }

  static void add_filters(const core_state& st, const core_state::entry& e,
                          handler_status& x) {
    x.filters = true;
    x.filter = strings_of(e.filter);
    if (e.peer)
      x.announced = strings_of(st.announcer_.announced(x.id));
  }

  static void add_sources(const core_state& st, core_status& result) {
    auto by_id = [&result](uint64_t id) -> handler_status* {
      auto i = std::lower_bound(result.handlers.begin(), result.handlers.end(), id,
                                [](auto& x, uint64_t y) { return x.id < y; });
      return i != result.handlers.end() && i->id == id ? &*i : nullptr;
    };
    for (auto& [id, src] : st.sources_) {
      auto waiting = src->pending.load(std::memory_order_relaxed);
      auto routed = src->routed.load(std::memory_order_relaxed);
      auto* h = by_id(id);
      if (h != nullptr) {
        h->has_source = true;
        h->received = routed;
        h->inbox = waiting;
      } else {
        ++result.publishers;
        result.published += routed;
      }
      if (src->kind == source_kind::store)
        result.waiting_commands += waiting;
      else
        result.waiting_data += waiting;
    }
  }
};

core_status collect_core_status(const core_state& st, size_t client_filters) {
  return core_status_reader::collect(st, client_filters);
}

} // namespace broker::internal
