#include "broker/internal/core/announcer.hh"

namespace broker::internal {

void announcer::add_local(const filter_type& xs) {
  for (auto& x : xs)
    if (!x.is_reserved())
      ++local_[x.string()];
}

void announcer::remove_local(const filter_type& xs) {
  for (auto& x : xs) {
    auto i = local_.find(x.string());
    if (i != local_.end() && --i->second == 0)
      local_.erase(i);
  }
}

void announcer::add_peer(uint64_t id, const std::set<topic>& filter, filter_type announced) {
  peers_[id] = peer_entry{filter, std::move(announced)};
}

void announcer::set_peer_filter(uint64_t id, const std::set<topic>& filter) {
  if (auto i = peers_.find(id); i != peers_.end())
    i->second.filter = filter;
}

void announcer::remove_peer(uint64_t id) {
  peers_.erase(id);
}

filter_type announcer::local_filter() const {
  filter_type result;
  for (auto& [prefix, refs] : local_)
    result.emplace_back(prefix);
  minimize(result);
  return result;
}

std::map<topic, size_t> announcer::forwarded_prefixes() const {
  std::map<topic, size_t> result;
  if (!disable_forwarding_)
    for (auto& [id, p] : peers_)
      for (auto& x : p.filter)
        if (!x.is_reserved())
          ++result[x];
  return result;
}

filter_type announcer::announcement_from(const std::map<topic, size_t>& forwarded,
                                         const peer_entry* to) const {
  auto result = local_filter();
  for (auto& [prefix, wanted_by] : forwarded) {
    auto own = to != nullptr && to->filter.count(prefix) > 0 ? 1u : 0u;
    if (wanted_by > own)
      result.push_back(prefix);
  }
  minimize(result);
  return result;
}

filter_type announcer::announcement_for(uint64_t id) const {
  auto i = peers_.find(id);
  return announcement_from(forwarded_prefixes(), i != peers_.end() ? &i->second : nullptr);
}

const filter_type& announcer::announced(uint64_t id) const {
  static const filter_type none;
  auto i = peers_.find(id);
  return i != peers_.end() ? i->second.announced : none;
}

filter_type announcer::announce(
  const std::function<void(uint64_t, const filter_type&)>& send) {
  auto forwarded = forwarded_prefixes();
  for (auto& [id, p] : peers_) {
    auto f = announcement_from(forwarded, &p);
    if (f != p.announced) {
      p.announced = std::move(f);
      send(id, p.announced);
    }
  }
  return announcement_from(forwarded, nullptr);
}

} // namespace broker::internal
