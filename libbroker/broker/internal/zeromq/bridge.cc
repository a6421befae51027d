#include "broker/internal/zeromq/bridge.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/core/client_handler.hh"
#include "broker/internal/core/core.hh"
#include "broker/internal/zeromq/server.hh"

#include <boost/asio/post.hpp>

namespace asio = boost::asio;

namespace broker::internal::zeromq {

namespace {

constexpr std::string_view bin_format = "broker-bin-v1";

// Zeek's nodeid topics and its hello (doc/protocol/zeromq.md).
constexpr std::string_view nodeid_prefix = "zeek.cluster.nodeid.";
constexpr std::string_view zeromq_hello = "Cluster::Backend::ZeroMQ::hello";

/// Events routed per strand turn (others wait for the next turn).
constexpr size_t max_inbound_batch = 256;

} // namespace

bridge::bridge(asio::io_context& ioc, gate& g, std::shared_ptr<core_runtime> rt, uint64_t id,
               std::shared_ptr<forwarder> fwd, std::string node_id, size_t buffer_size,
               overflow_policy policy)
  : strand_(asio::make_strand(ioc)),
    gate_(g),
    rt_(std::move(rt)),
    id_(id),
    fwd_(std::move(fwd)),
    in_fwd_(fwd_),
    node_id_(std::move(node_id)),
    out_(std::make_shared<message_queue>(buffer_size, policy)),
    inbox_(buffer_size, overflow_policy::drop_oldest) {}

bridge::~bridge() = default;

template <class F>
void bridge::post(F&& f) {
  gate_.pass([&] { asio::post(strand_, std::forward<F>(f)); });
}

void bridge::join_as_node(std::shared_ptr<forwarder> in, std::string name) {
  in_fwd_ = std::move(in);
  node_mode_ = true;
  name_ = std::move(name);
  own_topic_ = std::string{nodeid_prefix} + node_id_ + ".";
}

void bridge::start() {
  in_ = std::make_unique<net_input>(rt_->routing(), id_, source_kind::client);
  std::weak_ptr<bridge> weak = weak_from_this();
  out_->on_ready([weak] {
    if (auto self = weak.lock())
      self->post([self] { self->drain_out(); });
  });
  auto h = std::make_shared<client_handler>(id_, out_, handler_kind::zeromq);
  auto stats = in_->stats();
  rt_->post([h, stats, id = id_](core_state& st) {
    st.add_handler(h, filter_type{});
    st.add_source(id, stats);
  });
  in_fwd_->add_subscriber(this);
  fwd_->add_publisher(this);
  in_fwd_->set_tap(this, [weak](const shared_event* evs, size_t n) {
    if (auto self = weak.lock())
      self->tap(evs, n);
  });
  if (node_mode_) // Our nodeid topic, before anything else (Zeek's Cluster::init()).
    post([self = shared_from_this()] { self->sync_subscriptions(); });
}

void bridge::stop() {
  post([self = shared_from_this()] {
    if (self->stopped_)
      return;
    self->stopped_ = true;
    self->in_fwd_->set_tap(nullptr, nullptr);
    self->fwd_->remove_publisher(self.get());
    self->in_fwd_->remove_subscriber(self.get());
    self->out_->on_ready(nullptr);
    self->rt_->post([id = self->id_](core_state& st) {
      st.remove_handler(id);
      st.remove_source(id);
    });
  });
}

// -- ZeroMQ -> core ------------------------------------------------------------------------------

bool bridge::wanted(std::string_view topic) const {
  for (auto& prefix : filter_)
    if (topic.substr(0, prefix.size()) == prefix)
      return true;
  return false;
}

void bridge::tap(const shared_event* evs, size_t n) {
  size_t queued = 0;
  {
    std::lock_guard<std::mutex> guard{filter_mtx_}; // Once per batch.
    for (size_t i = 0; i < n; ++i) {
      auto& ev = evs[i];
      if (ev->size() == 0)
        continue;
      if (ev->size() > 1 && ev->frame(1) == node_id_) {
        // Our own event back from the forwarder (node mode), or somebody using our id.
        stats_.own_events.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      auto topic = ev->frame(0);
      if (!wanted(topic)) {
        // Node mode: what Zeek's nodes send to our nodeid topic (their hellos) ends here
        // unless a local subscriber wants it; nothing else arrives that we did not ask for.
        if (node_mode_ && topic.substr(0, own_topic_.size()) == own_topic_)
          stats_.to_node.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      bool was_empty = false;
      auto res = inbox_.push(1, [&](size_t) { return ev; }, was_empty);
      if (res.dropped > 0)
        stats_.dropped.fetch_add(res.dropped, std::memory_order_relaxed);
      ++queued;
    }
  }
  if (queued > 0 && !in_scheduled_.exchange(true))
    post([self = shared_from_this()] { self->drain_in(); });
}

void bridge::drain_in() {
  in_scheduled_.store(false);
  if (stopped_)
    return;
  if (parked_ || in_->pending() > 0) {
    // Finish what waited for room first.
    if (!in_->flush([self = shared_from_this()] {
          self->post([self] {
            self->parked_ = false;
            self->drain_in();
          });
        })) {
      parked_ = true;
      return;
    }
  }
  events_.clear();
  inbox_.pop(events_, max_inbound_batch);
  for (auto& ev : events_) {
    if (ev->size() != 4 || ev->frame(2) != bin_format || bin::validate(ev->frame(3))) {
      stats_.not_bridged.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    in_->add(data_message{new message_impl(std::string{ev->frame(0)},
                                           std::string{ev->frame(3)}, route_info{},
                                           message_kind::data)});
    stats_.to_core.fetch_add(1, std::memory_order_relaxed);
  }
  events_.clear();
  if (!in_->flush([self = shared_from_this()] {
        self->post([self] {
          self->parked_ = false;
          self->drain_in();
        });
      })) {
    parked_ = true;
    return;
  }
  if (inbox_.size() > 0 && !in_scheduled_.exchange(true))
    post([self = shared_from_this()] { self->drain_in(); });
}

// -- core -> ZeroMQ ------------------------------------------------------------------------------

void bridge::drain_out() {
  if (stopped_)
    return;
  std::optional<filter_type> unused;
  while (out_->take(batch_, unused) && !batch_.empty()) {
    for (auto& msg : batch_) {
      const auto& bytes = msg.impl().binary();
      if (bytes.empty())
        continue; // Not encodable (bin::encode): nothing a Zeek node could read.
      fwd_->publish(this, make_event(msg.topic(), bytes));
      stats_.from_core.fetch_add(1, std::memory_order_relaxed);
    }
    batch_.clear();
  }
}

shared_event bridge::make_event(std::string_view topic, std::string_view payload) const {
  auto ev = std::make_shared<zmtp::multipart>();
  ev->bytes.reserve(topic.size() + node_id_.size() + bin_format.size() + payload.size());
  for (std::string_view part : {topic, std::string_view{node_id_}, bin_format, payload}) {
    ev->bytes.append(part);
    ev->ends.push_back(ev->bytes.size());
  }
  return ev;
}

void bridge::say_hello(const std::string& prefix) {
  // Zeek's script: a node that sees another node's nodeid subscription on its XPUB sends
  // it Cluster::Backend::ZeroMQ::hello(name, id) (broker-bin-v1: vector(count 1, count 1,
  // vector(name, vector(args)))).
  if (prefix.size() <= nodeid_prefix.size() + 1 || prefix.back() != '.'
      || prefix.compare(0, nodeid_prefix.size(), nodeid_prefix) != 0 || prefix == own_topic_)
    return;
  data ev = vector{data{count{1}}, data{count{1}},
                   data{vector{data{std::string{zeromq_hello}},
                               data{vector{data{name_}, data{node_id_}}}}}};
  auto payload = bin::encode(ev);
  if (!payload)
    return;
  fwd_->publish(this, make_event(prefix, *payload));
  stats_.hellos_sent.fetch_add(1, std::memory_order_relaxed);
}

// -- subscriptions -------------------------------------------------------------------------------

void bridge::pass_subscription(bool subscribe, const std::string& prefix) {
  // Called under the forwarder's lock: only post.
  post([self = shared_from_this(), subscribe, prefix] {
    self->on_zmq_subscription(subscribe, prefix);
  });
}

void bridge::on_zmq_subscription(bool subscribe, const std::string& prefix) {
  if (stopped_)
    return;
  // The core's handler holds each prefix once, as long as some ZeroMQ subscriber does. The
  // forwarder's XSUB side passes every subscribe (duplicates included) but an unsubscribe
  // only when the last holder went (forwarder.hh), so a set, as a libzmq XPUB keeps it.
  bool changed = subscribe ? zmq_held_.insert(prefix).second : zmq_held_.erase(prefix) > 0;
  if (!changed)
    return;
  filter_type f{topic{prefix}};
  rt_->post([id = id_, f, subscribe](core_state& st) {
    if (subscribe)
      st.subscribe(id, f);
    else
      st.unsubscribe(id, f);
  });
  if (node_mode_) {
    // What the cluster wants does not change what we subscribe to upstream.
    if (subscribe)
      say_hello(prefix);
    return;
  }
  sync_subscriptions();
}

void bridge::update_filter(const filter_type&) {
  // What the node's other handlers want: the announced filter holds the bridge's own
  // subscriptions too (what ZeroMQ subscribers want), and subscribing to those on their
  // behalf would pull every cluster event into the core and, in node mode, keep each
  // prefix alive upstream for good (our own subscription holds it at the forwarder).
  // Computed on the core's thread, applied on the strand, in order.
  std::weak_ptr<bridge> weak = weak_from_this();
  rt_->post([weak, id = id_](core_state& st) {
    auto self = weak.lock();
    if (!self)
      return;
    std::vector<std::string> prefixes;
    for (auto& t : st.filter_without(id))
      prefixes.push_back(t.string());
    self->post([self, prefixes = std::move(prefixes)]() mutable {
      {
        std::lock_guard<std::mutex> guard{self->filter_mtx_};
        self->filter_ = std::move(prefixes);
      }
      self->sync_subscriptions();
    });
  });
}

void bridge::sync_subscriptions() {
  if (stopped_)
    return;
  // Wanted: the node's prefixes that no ZeroMQ subscriber holds (those reach every node
  // XPUB already). Node mode: all of them, and our nodeid topic.
  std::set<std::string> want;
  {
    std::lock_guard<std::mutex> guard{filter_mtx_};
    for (auto& p : filter_)
      if (node_mode_ || zmq_held_.count(p) == 0)
        want.insert(p);
  }
  if (node_mode_)
    want.insert(own_topic_);
  for (auto& p : passed_)
    if (want.count(p) == 0)
      in_fwd_->subscription(this, false, p);
  for (auto& p : want)
    if (passed_.count(p) == 0)
      in_fwd_->subscription(this, true, p);
  passed_ = std::move(want);
}

void bridge::report(server_counters& c) const {
  auto ld = [](const std::atomic<uint64_t>& x) { return x.load(std::memory_order_relaxed); };
  c.bridged_to_core = ld(stats_.to_core);
  c.bridged_from_core = ld(stats_.from_core);
  c.not_bridged = ld(stats_.not_bridged);
  c.bridge_dropped = ld(stats_.dropped);
  c.own_events = ld(stats_.own_events);
  c.to_node = ld(stats_.to_node);
  c.hellos_sent = ld(stats_.hellos_sent);
}

} // namespace broker::internal::zeromq
