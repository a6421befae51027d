#pragma once

// forwarder: Zeek's central XPUB/XSUB forwarder semantics (doc/protocol/zeromq.md §10)
// between the ZeroMQ connections of the node.
//
// Two sides:
//   - publishers: the nodes' XPUBs, connected to our XSUB port. They send events (4 frames:
//     topic, sender node id, format, payload) and receive every subscription.
//   - subscribers: the nodes' XSUBs, connected to our XPUB port. They send subscriptions
//     (0x01/0x00 messages or SUBSCRIBE/CANCEL) and receive the events that match them.
//
// Rules (libzmq 4.3's proxy: an XPUB with XPUB_VERBOSER, an XSUB without
// XSUB_VERBOSE_UNSUBSCRIBE): every subscribe, duplicates included, goes to every publisher;
// the XSUB side counts each prefix and passes an unsubscribe only when the count drops to
// zero (a node's XPUB keeps one entry per prefix and connection, so an earlier unsubscribe
// would cut off the other holders); a new publisher gets every distinct prefix currently
// held; a subscriber that goes away unsubscribes each prefix it held (once); a connection
// holds a prefix once however often it subscribed it; an event goes once to every
// subscriber with a matching prefix, the sender's own included (Zeek's nodes filter their
// own node id). Events are shared (one immutable multipart per event, encoded once,
// referenced by every receiver's queue); a publisher's events arrive in batches (one per
// read) and each subscriber is offered its matches as one batch.
//
// Threads: every method may be called from any connection's strand; one mutex guards the
// tables. Links are told things (deliver(), pass_subscription()) under the mutex and must
// not call back into the forwarder from there: they queue and post to their own strand.
// Free of sockets, Boost and CAF: unit tests drive it with fake links.

#include "broker/internal/zmtp/session.hh"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal::zeromq {

/// One event, shared by every receiver.
using shared_event = std::shared_ptr<const zmtp::multipart>;

/// One connection as the forwarder sees it.
class link {
public:
  virtual ~link();

  /// Subscriber side: queue `ev` for writing (the policy of the link's queue applies).
  virtual void deliver(const shared_event& ev) = 0;

  /// Subscriber side: queue evs[which[0]], ..., evs[which[n - 1]], in that order, as
  /// deliver() would one by one (a link overrides it to queue them as one batch).
  virtual void deliver(const shared_event* evs, const uint32_t* which, size_t n);

  /// Publisher side: queue a subscribe (true) or unsubscribe of `prefix` for writing.
  virtual void pass_subscription(bool subscribe, const std::string& prefix) = 0;
};

/// Zeek's forwarder counters (zeek_cluster_zeromq_proxy_*), as libzmq 4.3's
/// zmq_proxy_steerable counts them (STATISTICS): the frontend is the XSUB side
/// (publishers), the backend the XPUB side (subscribers); a multipart message counts once,
/// its bytes are the frames' bytes (no framing). The proxy sees each message once on its
/// way through, not per receiver: an event counts once as received by the frontend and
/// once as sent by the backend however many subscribers get it (none included); a
/// subscription message once as received by the backend and sent to the frontend however
/// many publishers it reaches. The XSUB side's replay to a new publisher is not counted.
struct forwarder_counters {
  std::atomic<uint64_t> frontend_messages_received{0}; ///< events from publishers
  std::atomic<uint64_t> frontend_bytes_received{0};
  std::atomic<uint64_t> frontend_messages_sent{0}; ///< subscription messages passed on
  std::atomic<uint64_t> frontend_bytes_sent{0};
  std::atomic<uint64_t> backend_messages_received{0}; ///< subscriptions from subscribers
  std::atomic<uint64_t> backend_bytes_received{0};
  std::atomic<uint64_t> backend_messages_sent{0}; ///< events forwarded (once each)
  std::atomic<uint64_t> backend_bytes_sent{0};
};

class forwarder {
public:
  forwarder() = default;
  forwarder(const forwarder&) = delete;
  forwarder& operator=(const forwarder&) = delete;

  /// A publisher completed its handshake: it gets every distinct prefix held now.
  void add_publisher(link* x);

  /// A publisher went away.
  void remove_publisher(link* x);

  /// A subscriber completed its handshake.
  void add_subscriber(link* x);

  /// A subscriber went away: each prefix it held is unsubscribed (passed to publishers).
  void remove_subscriber(link* x);

  /// Subscriber `x` subscribed (or unsubscribed) `prefix`; passed on to every publisher.
  void subscription(link* x, bool subscribe, const std::string& prefix);

  /// Publisher `from` sent `ev`: delivered to every subscriber with a matching prefix.
  /// Returns the number of receivers.
  size_t publish(link* from, const shared_event& ev);

  /// Publisher `from` sent evs[0..n) in this order (e.g. what one read decoded): the same
  /// as publish() for each in turn, but under one lock, each subscriber's matches offered
  /// as one batch, and a prefix check per run of events on one topic, not per event.
  /// Returns the number of deliveries.
  size_t publish(link* from, const shared_event* evs, size_t n);

  /// Offered every batch of events that a publisher other than `owner` sends (events
  /// without frames included); see set_tap().
  using tap_fn = std::function<void(const shared_event* evs, size_t n)>;

  /// Every batch of events a publisher other than `owner` sends is also offered to `fn`
  /// (the bridge, bridge.hh), once per batch, under the forwarder's lock: `fn` must only
  /// queue. Null: none.
  void set_tap(link* owner, tap_fn fn);

  /// Distinct prefixes held by any subscriber.
  size_t prefixes() const;

  /// Connected publishers and subscribers.
  size_t publishers() const;
  size_t subscribers() const;

  const forwarder_counters& counters() const noexcept { return counters_; }

private:
  void count_subscription(const std::string& prefix);
  void xsub_send(link* from, bool subscribe, const std::string& prefix);
  void pass_locked(link* from, bool subscribe, const std::string& prefix);

  mutable std::mutex mtx_;
  /// publish(): where each run of one topic starts, and one subscriber's matches (under
  /// mtx_, kept to spare the allocations).
  std::vector<uint32_t> runs_;
  std::vector<uint32_t> which_;
  std::set<link*> publishers_;
  /// Subscriber -> the prefixes it holds.
  std::map<link*, std::set<std::string, std::less<>>> subscribers_;
  /// The XSUB side's counted prefixes: subscribes minus unsubscribes passed to it.
  std::map<std::string, size_t, std::less<>> held_;
  forwarder_counters counters_;
  link* tap_owner_ = nullptr;
  tap_fn tap_;
};

} // namespace broker::internal::zeromq
