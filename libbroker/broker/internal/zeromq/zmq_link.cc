#include "broker/internal/zeromq/zmq_link.hh"

#include "broker/data.hh"
#include "broker/internal/codec/bin.hh"
#include "broker/internal/zeromq/plain_writer.hh"
#include "broker/internal/zmtp/curve.hh"

#include <algorithm>
#include <iterator>

#include <boost/asio/error.hpp>

#include <chrono>
#include <optional>

namespace broker::internal::zeromq {

namespace {

/// Events taken from the queue per write (at most IOV_MAX pieces when all are referenced).
constexpr size_t max_batch = 1024;

/// Capacity of the write buffer (plain_writer.hh) kept once the write loop drained.
constexpr size_t max_idle_wbuf = 16 * 1024;

/// Capacity of the decoded events' list (pending_) kept between reads.
constexpr size_t max_pending = 4096;

/// A ZMTP multipart message has at most this many frames here (zmtp::limits default).
constexpr size_t max_frames = 64;

/// Missed heartbeat intervals after which a silent connection is closed.
constexpr unsigned max_silent_ticks = 3;

std::string_view side_name(side x) {
  return x == side::xsub ? "xsub" : "xpub";
}

} // namespace

zmq_link::zmq_link(std::unique_ptr<stream> conn, gate* g, std::shared_ptr<forwarder> fwd,
                   link_options opts)
  : channel(std::move(conn), g),
    fwd_(std::move(fwd)),
    opts_(std::move(opts)),
    session_(make_session_config()),
    queue_(opts_.buffer_size, opts_.policy),
    timer_(conn_->get_executor()) {
  name_ = !opts_.name.empty()
            ? opts_.name
            : std::string{side_name(opts_.role)} + " connection from " + conn_->remote_name();
}

zmq_link::~zmq_link() = default;

// -- access control (doc/security.md, "ZeroMQ") -------------------------------------------------

zmtp::session_config zmq_link::make_session_config() {
  auto cfg = opts_.session;
  if (opts_.security && cfg.mech == zmtp::mechanism::curve)
    cfg.authorize = [this](const zmtp::key& k) { return admit_key(k); };
  return cfg;
}

bool zmq_link::admit_key(const zmtp::key& k) {
  auto z85 = zmtp::to_z85(k);
  auto& sec = *opts_.security;
  // The shared key (broker.zeromq.curve-client-public-key) names nobody: the anonymous
  // identity, unless an identity lists it.
  auto adm = opts_.shared_key && k == *opts_.shared_key && sec.identity_of_curve_key(z85).empty()
               ? sec.admit(security::credential::anonymous(), opts_.address, opts_.port)
               : sec.admit_curve_key(z85, opts_.address, opts_.port);
  if (!adm.admitted)
    return false; // Counted and logged by the runtime; the session sends ERROR.
  access_ = std::make_unique<security::connection_access>(opts_.security,
                                                          std::move(*adm.admitted));
  return true;
}

bool zmq_link::admit_anonymous() {
  auto adm = opts_.security->admit(security::credential::anonymous(), opts_.address,
                                   opts_.port);
  if (!adm.admitted)
    return false;
  access_ = std::make_unique<security::connection_access>(opts_.security,
                                                          std::move(*adm.admitted));
  return true;
}

bool zmq_link::may_publish(std::string_view topic) {
  // A run of events on one allowed topic: one string compare (refusals always go to the
  // guard, which counts them).
  auto& g = access_->checks();
  if (allowed_cached_ && allowed_generation_ == g.generation() && !g.reload_pending()
      && topic == allowed_topic_)
    return true;
  if (!access_->may_publish(topic, 1))
    return false;
  allowed_cached_ = true;
  allowed_topic_.assign(topic.data(), topic.size());
  allowed_generation_ = access_->checks().generation();
  return true;
}

void zmq_link::on_subscription(bool subscribe, const std::string& prefix) {
  auto sub = access_->update(prefix, subscribe);
  apply_grants(sub, subscribe ? &prefix : nullptr);
}

void zmq_link::apply_grants(const security::connection_access::subscription& sub,
                            const std::string* again) {
  if (opts_.log)
    for (const auto& line : sub.notices)
      opts_.log(true, name_ + " (" + access_->describe_identity() + "): " + line);
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::set_difference(sub.granted.begin(), sub.granted.end(), granted_.begin(), granted_.end(),
                      std::back_inserter(added));
  std::set_difference(granted_.begin(), granted_.end(), sub.granted.begin(), sub.granted.end(),
                      std::back_inserter(removed));
  for (const auto& p : removed)
    fwd_->subscription(this, false, p);
  for (const auto& p : added)
    fwd_->subscription(this, true, p);
  // A repeated subscribe of a granted prefix passes on again (VERBOSER, forwarder.hh).
  if (again != nullptr && std::binary_search(granted_.begin(), granted_.end(), *again)
      && std::binary_search(sub.granted.begin(), sub.granted.end(), *again))
    fwd_->subscription(this, true, *again);
  granted_ = sub.granted;
}

void zmq_link::attend() {
  if (!access_ || closed_ || !access_->needs_attention())
    return;
  if (opts_.log)
    for (const auto& line : access_->take_notices())
      opts_.log(true, name_ + " (" + access_->describe_identity() + "): " + line);
  auto res = access_->poll_reload();
  if (res.revoked) {
    close("its identity was revoked by a reload of the rules", false);
    return;
  }
  allowed_cached_ = false;
  if (res.reloaded && opts_.role == side::xpub && joined_)
    apply_grants(res.sub, nullptr);
}

void zmq_link::start() {
  ctrl_sink sink{&ctrl_};
  session_.flush(sink); // The greeting.
  arm_timer();
  write_more();
  read_more();
}

void zmq_link::close_async(std::string reason) {
  post([self = self(), reason = std::move(reason)] { self->close(reason, false); });
}

// -- the forwarder's calls (any thread) -----------------------------------------------------

void zmq_link::deliver(const shared_event& ev) {
  bool was_empty = false;
  auto res = queue_.push(1, [&](size_t) { return ev; }, was_empty);
  after_push(res, was_empty);
}

void zmq_link::deliver(const shared_event* evs, const uint32_t* which, size_t n) {
  bool was_empty = false;
  auto res = queue_.push(n, [&](size_t i) { return evs[which[i]]; }, was_empty);
  after_push(res, was_empty);
}

void zmq_link::after_push(const push_result& res, bool was_empty) {
  if (res.dropped > 0)
    stats_.dropped.fetch_add(res.dropped, std::memory_order_relaxed);
  if (res.disconnected) {
    if (!overflow_close_.exchange(true))
      close_async("its queue exceeded broker.zeromq.buffer-size="
                  + std::to_string(opts_.buffer_size) + " (policy disconnect)");
    return;
  }
  if (was_empty)
    schedule_write();
}

void zmq_link::pass_subscription(bool subscribe, const std::string& prefix) {
  post([self = self(), subscribe, prefix] {
    if (self->closed_)
      return;
    if (subscribe)
      self->session_.subscribe(prefix);
    else
      self->session_.unsubscribe(prefix);
    self->write_more();
  });
}

// -- reading -----------------------------------------------------------------------------------

size_t zmq_link::decode(char* data, size_t size) {
  heard_since_tick_ = true;
  stats_.bytes_in.fetch_add(size, std::memory_order_relaxed);
  session_.feed(std::string_view{data, size}, events_);
  ctrl_sink sink{&ctrl_};
  session_.flush(sink);
  for (auto& ev : events_) {
    if (closed_)
      break;
    on_event(ev);
  }
  publish_pending();
  events_.clear();
  attend();
  return size; // The session keeps a partial frame itself.
}

void zmq_link::publish_pending() {
  if (pending_.empty())
    return;
  zmtp::encode_plain(to_encode_.data(), to_encode_.size());
  to_encode_.clear();
  if (joined_)
    fwd_->publish(this, pending_.data(), pending_.size());
  pending_.clear();
  if (pending_.capacity() > max_pending) {
    std::vector<shared_event>{}.swap(pending_);
    std::vector<zmtp::multipart*>{}.swap(to_encode_);
  }
}

void zmq_link::on_event(zmtp::event& ev) {
  using kind = zmtp::event::kind;
  if (ev.what != kind::message)
    publish_pending(); // The events before it go first (e.g. before a failure closes).
  switch (ev.what) {
    case kind::ready:
      timer_.cancel();
      if (opts_.security) {
        if (!access_ && !admit_anonymous()) {
          close("refused: the anonymous identity may not connect (doc/security.md)", true);
          break;
        }
        std::weak_ptr<zmq_link> weak = self();
        access_->watch_reloads([weak] {
          if (auto l = weak.lock())
            l->post([l] { l->attend(); });
        });
      }
      joined_ = true;
      if (opts_.role == side::xsub)
        fwd_->add_publisher(this);
      else
        fwd_->add_subscriber(this);
      arm_timer();
      if (auto f = std::move(on_ready_))
        f();
      break;
    case kind::subscribe:
    case kind::unsubscribe:
      if (opts_.role == side::xpub) {
        if (ev.what == kind::subscribe)
          learn_from_subscription(ev.data);
        if (access_)
          on_subscription(ev.what == kind::subscribe, ev.data);
        else
          fwd_->subscription(this, ev.what == kind::subscribe, ev.data);
      }
      break;
    case kind::message:
      stats_.messages_in.fetch_add(1, std::memory_order_relaxed);
      if (opts_.role == side::xsub) {
        if (!named_)
          learn_from_event(ev.msg);
        if (access_ && !may_publish(ev.msg.size() > 0 ? ev.msg.frame(0) : std::string_view{}))
          break; // Counted per identity and rule (audit), told once per rule.
        {
          auto msg = std::make_shared<zmtp::multipart>(std::move(ev.msg));
          // Under NULL (every link of the server speaks one mechanism) each receiver
          // writes these bytes: encoded once, not per receiver, and the events of one
          // read back to back (publish_pending(), plain_writer.hh).
          if (session_.writes_plain())
            to_encode_.push_back(msg.get());
          pending_.push_back(std::move(msg)); // Published after the read (decode()).
        }
      }
      break;
    case kind::pong:
      break;
    case kind::failed:
      write_more(); // An ERROR command the session queued goes out if it can.
      close(ev.err.reason, true);
      break;
  }
}

// -- the Zeek node on the other end (status only) ------------------------------------------------

namespace {

// Zeek's topics and its hello (doc/protocol/zeromq.md): a node subscribes to
// "zeek.cluster.nodeid.<id>." and greets the others with ZeroMQ::hello(name, id).
constexpr std::string_view nodeid_prefix = "zeek.cluster.nodeid.";
constexpr std::string_view zeromq_hello = "Cluster::Backend::ZeroMQ::hello";

/// (name, id) of a ZeroMQ::hello event in Broker's binary encoding: vector(count 1,
/// count 1, vector(name, vector(args))); nothing for anything else.
std::optional<std::pair<std::string, std::string>> hello_of(std::string_view payload) {
  auto x = bin::decode(payload);
  if (!x)
    return std::nullopt;
  auto* outer = get_if<vector>(*x);
  if (outer == nullptr || outer->size() != 3)
    return std::nullopt;
  auto* ev = get_if<vector>((*outer)[2]);
  if (ev == nullptr || ev->size() < 2)
    return std::nullopt;
  auto* name = get_if<std::string>((*ev)[0]);
  auto* args = get_if<vector>((*ev)[1]);
  if (name == nullptr || *name != zeromq_hello || args == nullptr || args->size() != 2)
    return std::nullopt;
  auto* node = get_if<std::string>((*args)[0]);
  auto* id = get_if<std::string>((*args)[1]);
  if (node == nullptr || id == nullptr)
    return std::nullopt;
  return std::make_pair(*node, *id);
}

} // namespace

void zmq_link::learn_from_event(const zmtp::multipart& msg) {
  // Until the name is known: the sender frame gives the id; a ZeroMQ::hello (sent to a
  // nodeid topic, so rare) the name. Other events cost one prefix compare.
  if (msg.size() != 4)
    return;
  auto topic = msg.frame(0);
  bool maybe_hello = topic.substr(0, nodeid_prefix.size()) == nodeid_prefix
                     && msg.frame(2) == "broker-bin-v1";
  if (id_known_ && !maybe_hello)
    return; // The common case: no lock.
  std::optional<std::pair<std::string, std::string>> hello;
  if (maybe_hello)
    hello = hello_of(msg.frame(3));
  std::lock_guard<std::mutex> guard{node_mtx_};
  if (zeek_id_.empty())
    zeek_id_ = std::string{msg.frame(1)};
  id_known_ = !zeek_id_.empty();
  if (hello && hello->second == zeek_id_) {
    zeek_name_ = hello->first;
    named_ = true;
  }
}

void zmq_link::learn_from_subscription(const std::string& prefix) {
  // A Zeek node's XSUB subscribes to its own nodeid topic first (Cluster::init()).
  if (prefix.size() <= nodeid_prefix.size() + 1 || prefix.back() != '.'
      || prefix.compare(0, nodeid_prefix.size(), nodeid_prefix) != 0)
    return;
  std::lock_guard<std::mutex> guard{node_mtx_};
  if (zeek_id_.empty())
    zeek_id_ = prefix.substr(nodeid_prefix.size(),
                             prefix.size() - nodeid_prefix.size() - 1);
}

std::pair<std::string, std::string> zmq_link::zeek_node() const {
  std::lock_guard<std::mutex> guard{node_mtx_};
  return {zeek_id_, zeek_name_};
}

void zmq_link::on_read_error(const boost::system::error_code& ec) {
  if (ec == boost::asio::error::eof) {
    if (session_.ready())
      close("the peer closed the connection", false);
    else
      close(session_.peer_closed().reason, true);
    return;
  }
  close("read failed: " + ec.message(), true);
}

// -- writing -----------------------------------------------------------------------------------

bool zmq_link::fill(gather_buffer& out) {
  if (!ctrl_.empty()) {
    out.copy(ctrl_);
    ctrl_.clear();
  }
  if (session_.ready() && queue_.size() > 0) {
    queue_.pop(batch_, max_batch);
    if (access_ && !access_->delivers_unchecked()) {
      // A granted prefix with denied topics below it: refused deliveries are counted.
      batch_.erase(std::remove_if(batch_.begin(), batch_.end(),
                                  [this](const shared_event& ev) {
                                    return !access_->may_receive(
                                      ev->size() > 0 ? ev->frame(0) : std::string_view{});
                                  }),
                   batch_.end());
    }
    // Pre-encoded events (plain_writer.hh) go out as they are, after the control output;
    // others (the bridge's, or under CURVE) are encoded for this session.
    session_.flush(out);
    bool plain = session_.writes_plain();
    plain_writer pw{wbuf_};
    if (plain) {
      plain_writer::planner plan;
      for (auto& ev : batch_)
        plan.add(ev->plain);
      pw.reserve(plan.need());
    }
    std::string_view frames[max_frames];
    for (auto& ev : batch_) {
      if (plain && !ev->plain.empty()) {
        pw.add(ev->plain, out);
        continue;
      }
      pw.finish(out);
      auto n = std::min(ev->size(), max_frames);
      for (size_t i = 0; i < n; ++i)
        frames[i] = ev->frame(i);
      session_.write_message(frames, n, out);
    }
    pw.finish(out);
    stats_.messages_out.fetch_add(batch_.size(), std::memory_order_relaxed);
  }
  session_.flush(out);
  return !out.empty();
}

void zmq_link::on_write_error(const boost::system::error_code& ec) {
  close("write failed: " + ec.message(), true);
}

void zmq_link::shrink_batch() {
  if (batch_.capacity() > 64)
    std::vector<shared_event>{}.swap(batch_);
  if (wbuf_.capacity() > max_idle_wbuf)
    std::string{}.swap(wbuf_);
}

// -- timers and the end ------------------------------------------------------------------------

void zmq_link::arm_timer() {
  size_t ms = session_.ready() ? opts_.heartbeat_ms : opts_.handshake_ms;
  if (ms == 0 || closed_)
    return;
  timer_.expires_after(std::chrono::milliseconds{ms});
  timer_.async_wait([self = self()](boost::system::error_code ec) {
    if (!ec)
      self->on_tick();
  });
}

void zmq_link::on_tick() {
  if (closed_)
    return;
  if (!session_.ready()) {
    close(session_.timed_out(opts_.handshake_ms).reason + " (handshake not done in "
            + std::to_string(opts_.handshake_ms) + " ms)",
          true);
    return;
  }
  if (heard_since_tick_) {
    heard_since_tick_ = false;
    silent_ticks_ = 0;
  } else if (++silent_ticks_ >= max_silent_ticks) {
    close(session_.timed_out(silent_ticks_ * opts_.heartbeat_ms).reason, true);
    return;
  }
  // TTL: how long the peer may wait for our next heartbeat, in deciseconds.
  auto ttl = std::min<size_t>(max_silent_ticks * opts_.heartbeat_ms / 100, 0xffff);
  if (session_.ping(static_cast<uint16_t>(ttl)))
    write_more();
  arm_timer();
}

void zmq_link::close(const std::string& reason, bool error) {
  if (closed_)
    return;
  if (opts_.log)
    opts_.log(error, name_ + " closed: " + reason);
  if (joined_) {
    joined_ = false;
    if (opts_.role == side::xsub)
      fwd_->remove_publisher(this);
    else
      fwd_->remove_subscriber(this);
  }
  mark_closed();
  timer_.cancel();
  conn_->close();
  queue_.clear();
  if (auto f = std::move(on_close_))
    f(error);
}

} // namespace broker::internal::zeromq
