#pragma once

// announcer: what this node announces to each peer (its routing updates), so that a peer
// sends us only what somebody here, or beyond us, wants.
//
// A peer hears our local subscriptions (every handler that is not a peer: subscribers,
// hubs, WebSocket clients, stores; reserved `<$>` prefixes excluded) plus, when we forward
// (no broker.disable-forwarding), what our other peers want. Never its own wishes echoed
// back (split horizon). Announcing to N peers costs O(N · prefixes) per change: each
// forwarded prefix is counted once per change, not once per pair of peers.
//
// Threads: the core's only (core.hh).

#include "broker/topic.hh"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace broker::internal {

/// See the file comment.
class announcer {
public:
  explicit announcer(bool disable_forwarding) : disable_forwarding_(disable_forwarding) {}

  /// A local handler subscribed to (or dropped) `xs`; reference-counted per prefix.
  void add_local(const filter_type& xs);
  void remove_local(const filter_type& xs);

  /// A peering came, changed its filter, or went. `announced` is what the handshake
  /// already told it.
  void add_peer(uint64_t id, const std::set<topic>& filter, filter_type announced);
  void set_peer_filter(uint64_t id, const std::set<topic>& filter);
  void remove_peer(uint64_t id);

  /// The union of the local subscriptions, minimized.
  filter_type local_filter() const;

  /// What we announce to peer `id` right now; for an id that is no peer (e.g. 0): what a
  /// new peer would get in the handshake.
  filter_type announcement_for(uint64_t id) const;

  /// What we last announced to peer `id` (empty for unknown ids).
  const filter_type& announced(uint64_t id) const;

  /// Recomputes every peer's announcement and calls `send(id, filter)` for each that
  /// changed. Returns what a new peer would get.
  filter_type announce(const std::function<void(uint64_t, const filter_type&)>& send);

private:
  struct peer_entry {
    std::set<topic> filter;
    filter_type announced;
  };

  /// Per prefix that peers want (reserved ones excluded), how many peers want it; empty
  /// with disable_forwarding.
  std::map<topic, size_t> forwarded_prefixes() const;

  filter_type announcement_from(const std::map<topic, size_t>& forwarded,
                                const peer_entry* to) const;

  bool disable_forwarding_;
  std::map<std::string, size_t> local_; // Local prefixes, reference-counted.
  std::map<uint64_t, peer_entry> peers_;
};

} // namespace broker::internal
