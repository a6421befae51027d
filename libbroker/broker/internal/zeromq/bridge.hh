#pragma once

// bridge: joins the ZeroMQ cluster to the rest of the node (doc/protocol/zeromq.md §9):
// Broker peers, WebSocket clients, local subscribers and stores.
//
// ZeroMQ -> core: every event a node publishes is offered to the bridge (forwarder::tap);
// one whose topic matches what the node's other handlers subscribed (local ones and peers,
// not the bridge itself: core_state::filter_without()), whose
// format is `broker-bin-v1` and whose payload is a valid bin-v1 value becomes a data
// message built from the received bytes (decoded only if somebody reads the value; peers
// get the same bytes) and is routed as the bridge's source. Others are counted as not
// bridged (they still reach ZeroMQ subscribers: the forwarder does not need the bridge).
//
// core -> ZeroMQ: the bridge is a handler (kind zeromq) subscribed to every prefix that a
// ZeroMQ subscriber holds; what it receives goes to the forwarder as a 4-frame event with
// this node's id and `broker-bin-v1`, the message's binary encoding as payload.
//
// Loop-free: the core never hands a source its own messages, so an event from ZeroMQ never
// comes back to ZeroMQ through the bridge; an event with our own node id is not bridged
// (dropped and counted in `own_events`: in node mode the forwarder sends our own events
// back to us whenever we subscribe to their topic, as it does to every Zeek node).
//
// Subscriptions on behalf of the node: ZeroMQ filters at the publisher, so the bridge
// subscribes (as a forwarder subscriber, passed to every node XPUB) to the node's filter
// minus the prefixes ZeroMQ subscribers hold already.
//
// Node mode (join_as_node(), node_client.hh): the bridge is a Zeek node of somebody else's
// forwarder. Two forwarders then: `fwd` (out) holds our XPUB connection as its subscriber
// (the cluster's subscriptions, from the forwarder's XSUB) and the bridge as publisher;
// `in` holds our XSUB connection as its publisher and the bridge as subscriber (our
// subscriptions go up, the events come down to tap()). Nothing passes from one connection
// to the other: events from ZeroMQ go only into the core, subscriptions from ZeroMQ only
// into the bridge (split horizon). The bridge subscribes to the whole filter (the
// cluster's subscriptions say what others want, not what we receive) plus its nodeid
// topic `zeek.cluster.nodeid.<id>.` as Zeek nodes do, and answers every other node's
// nodeid subscription with Cluster::Backend::ZeroMQ::hello(name, id), as Zeek's script
// does (so Zeek's nodes complete the exchange instead of expiring it with a warning).
//
// Threads: one strand of the I/O runtime. The forwarder calls tap() and
// pass_subscription() from the links' strands (queue and post); the core's queue wakes the
// strand; update_filter() comes from the core actor.

#include "broker/internal/core/core_runtime.hh"
#include "broker/internal/core/mpsc_ring.hh"
#include "broker/internal/core/net_input.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/internal/io/gate.hh"
#include "broker/internal/zeromq/forwarder.hh"
#include "broker/topic.hh"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace broker::internal::zeromq {

struct server_counters;

/// The bridge's counters (any thread).
struct bridge_counters {
  std::atomic<uint64_t> to_core{0};       ///< ZeroMQ events routed into the node
  std::atomic<uint64_t> not_bridged{0};   ///< offered but not broker-bin-v1 or not decoding
  std::atomic<uint64_t> from_core{0};     ///< node messages sent to ZeroMQ subscribers
  std::atomic<uint64_t> dropped{0};       ///< inbound events dropped (queue full)
  std::atomic<uint64_t> own_events{0};    ///< ZeroMQ events with our own node id, dropped
  std::atomic<uint64_t> to_node{0};       ///< node mode: events to our nodeid topic (hellos)
  std::atomic<uint64_t> hellos_sent{0};   ///< node mode: our ZeroMQ::hello events
};

class bridge : public link, public std::enable_shared_from_this<bridge> {
public:
  bridge(boost::asio::io_context& ioc, gate& g, std::shared_ptr<core_runtime> rt, uint64_t id,
         std::shared_ptr<forwarder> fwd, std::string node_id, size_t buffer_size,
         overflow_policy policy);
  ~bridge() override;

  /// Node mode (see above): our subscriptions go to `in` (whose publisher is our XSUB
  /// connection) and its events come from there; `name` is ours in ZeroMQ::hello. Before
  /// start().
  void join_as_node(std::shared_ptr<forwarder> in, std::string name);

  /// Attaches to the core and the forwarder(s). Once.
  void start();

  /// Detaches from the core and the forwarder. Idempotent.
  void stop();

  /// The node's filter changed (the core's announcement): the bridge asks the core for
  /// what the other handlers want (core_state::filter_without()) and subscribes to that.
  /// Any thread.
  void update_filter(const filter_type& announced);

  /// A batch of events from a ZeroMQ publisher (the forwarder's tap). Any thread.
  void tap(const shared_event* evs, size_t n);

  const bridge_counters& counters() const noexcept { return stats_; }

  /// Copies the counters into the server's (or node client's) totals. Any thread.
  void report(server_counters& c) const;

  // -- link (the bridge as a forwarder subscriber and publisher) -------------------------------
  void deliver(const shared_event&) override {} // Events arrive through tap().
  void pass_subscription(bool subscribe, const std::string& prefix) override;

private:
  template <class F>
  void post(F&& f);

  void drain_in();
  void drain_out();
  void on_zmq_subscription(bool subscribe, const std::string& prefix);
  void sync_subscriptions();
  /// Whether the node's filter wants `topic`; the caller holds filter_mtx_.
  bool wanted(std::string_view topic) const;
  void say_hello(const std::string& nodeid_prefix);
  shared_event make_event(std::string_view topic, std::string_view payload) const;

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  gate& gate_;
  std::shared_ptr<core_runtime> rt_;
  uint64_t id_;
  std::shared_ptr<forwarder> fwd_; ///< ZeroMQ subscribers get our events here
  std::shared_ptr<forwarder> in_fwd_; ///< we subscribe here and get events from here
  bool node_mode_ = false;
  std::string name_;         ///< node mode: ours in ZeroMQ::hello
  std::string own_topic_;    ///< node mode: zeek.cluster.nodeid.<node id>.
  std::string node_id_;
  std::shared_ptr<message_queue> out_;
  std::unique_ptr<net_input> in_;
  mpsc_ring<shared_event> inbox_;
  std::atomic<bool> in_scheduled_{false};
  bool parked_ = false;
  bool stopped_ = false;
  bridge_counters stats_;

  // On the strand.
  std::set<std::string, std::less<>> zmq_held_; ///< ZeroMQ subscribers' prefixes
  std::set<std::string> passed_;                        ///< What we subscribed for the node
  std::vector<data_message> batch_;
  std::vector<shared_event> events_;

  // The node's filter, read by tap() on any thread.
  mutable std::mutex filter_mtx_;
  std::vector<std::string> filter_;
};

} // namespace broker::internal::zeromq
