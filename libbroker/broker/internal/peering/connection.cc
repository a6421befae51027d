#include "broker/internal/peering/connection.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/config/address_text.hh"
#include "broker/internal/config/logger.hh"
#include "broker/internal/core/core_runtime.hh"
#include "broker/internal/peering/diagnosis.hh"
#include "broker/internal/peering/peer_manager_impl.hh"
#include "broker/internal/security/x509_names.hh"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace broker::internal {

namespace {

/// How long a handshake may take (doc/protocol/peering.md §3.4; Broker has no limit).
constexpr auto handshake_timeout = std::chrono::seconds{10};

/// How long an unpeer waits for the pong to its BYE (doc/protocol/peering.md §5.5, as Broker).
constexpr auto bye_timeout = std::chrono::seconds{3};

/// How long a new peering waits for the answer to its origin-v1 probe (wire.hh) before it
/// takes the peer for one that does not speak it. Broker answers at once.
constexpr auto ext_probe_timeout = std::chrono::seconds{2};

/// The probe goes out after the peer's first phase-3 frame, or after a quiet spell as long
/// as the handshake took, within these bounds: a Broker peer that pings right after the
/// handshake gets its pong first, as from Broker (doc/protocol/peering.md §7).
constexpr auto probe_quiet_min = std::chrono::milliseconds{50};
constexpr auto probe_quiet_max = std::chrono::seconds{1};

/// How long a closing connection tries to deliver its last control frames (TLS).
constexpr auto linger_timeout = std::chrono::seconds{1};

/// A burst that fills a quarter of the queue (at most 64 messages) is worth a write now.
constexpr size_t max_held = 64;

constexpr std::string_view component = "peering";

std::string endpoint_text(const std::string& host, uint16_t port) {
  return address_text(host, port);
}

asio::ssl::context* tls_of(peer_manager_impl* mgr) {
  auto tls = mgr->tls();
  return tls ? *tls : nullptr; // peer()/listen() refuse to start on a broken setup.
}

} // namespace

connection::connection(std::shared_ptr<peer_manager_impl> mgr, tcp::socket sock,
                       handshake::role role, std::shared_ptr<outgoing_peering> out)
  : queued_channel(std::make_unique<stream>(std::move(sock), tls_of(mgr.get()))),
    mgr_(std::move(mgr)),
    timer_(conn_->get_executor()),
    role_(role),
    outgoing_(std::move(out)),
    probe_timer_(conn_->get_executor()) {
  boost::system::error_code ec;
  auto ep = conn_->socket().remote_endpoint(ec);
  if (!ec) {
    address_ = ep.address().to_string();
    port_ = ep.port();
  }
  enable_hold(mgr_->write_delay,
              std::max<size_t>(1, std::min(max_held, mgr_->peer_capacity / 4)));
  enable_write_through(); // Armed only over plain TCP (the channel checks).
}

void connection::start() {
  asio::dispatch(conn_->get_executor(), [self = self()] {
    if (!self->conn_->secure()) {
      self->do_start();
      return;
    }
    self->timer_.expires_after(handshake_timeout);
    self->timer_.async_wait([self](boost::system::error_code ec) {
      if (!ec && !self->tls_ready_ && !self->closed_)
        self->fail("TLS handshake timed out", false);
    });
    bool client = self->role_ == handshake::role::dialer;
    self->conn_->async_handshake(client, [self, client](boost::system::error_code ec) {
      if (self->closed_)
        return;
      if (ec) {
        self->fail(tls_failure(ec, client), true);
        return;
      }
      self->tls_ready_ = true;
      self->timer_.cancel();
      self->do_start();
    });
  });
}

void connection::unpeer(std::string reason) {
  asio::dispatch(conn_->get_executor(), [self = self(), reason = std::move(reason)] {
    self->do_unpeer(reason);
  });
}

void connection::drop_paused() {
  asio::dispatch(conn_->get_executor(), [self = self()] {
    if (!self->hs_ || self->closed_)
      return;
    auto res = self->hs_->drop_paused();
    self->redundant_ = true;
    self->close_after_write_ = true;
    self->close_reason_ = "redundant connection";
    self->send_raw(std::move(res.output));
  });
}

void connection::post_to_core(std::function<void(core_state&)> task) {
  mgr_->rt->post(std::move(task));
}

void connection::set_attachment(uint64_t id, std::shared_ptr<send_queue> out,
                                std::unique_ptr<net_input> in) {
  set_queue(std::move(out));
  attach(id, std::move(in));
  if (access_)
    in_->set_gate(access_.get());
}

void connection::do_start() {
  if (!admit())
    return;
  filter_type own_filter;
  {
    std::lock_guard<std::mutex> guard{mgr_->mtx};
    own_filter = mgr_->filter;
  }
  sent_filter_ = own_filter;
  hs_started_ = std::chrono::steady_clock::now();
  hs_ = std::make_unique<handshake>(
    mgr_->own, std::move(own_filter), role_,
    [this](const endpoint_id& remote, bool originator) {
      return mgr_->proceed(this, remote, originator);
    });
  timer_.expires_after(handshake_timeout);
  timer_.async_wait([self = self()](boost::system::error_code ec) {
    if (!ec && !self->attached_ && !self->closed_)
      self->fail("handshake timed out", false);
  });
  send_raw(hs_->start());
  read_more();
}

// -- reading ------------------------------------------------------------------------------

bool connection::hold_input() const noexcept {
  return update_ || (hs_ && hs_->current_state() == handshake::state::paused);
}

void connection::on_read_error(const boost::system::error_code& ec) {
  if (closing_)
    finish_close(peer_end::removed, close_reason_);
  else
    fail(ec == asio::error::eof ? closed_text() : ec.message(), false);
}

std::string connection::closed_text() const {
  bool silent = reader_.at_start() && rx_.empty();
  return closed_failure(!attached_ && role_ == handshake::role::dialer && !conn_->secure()
                        && silent);
}

size_t connection::decode(char* data, size_t size) {
  // A routing update (or the attach) is a barrier: the frames behind it wait until the
  // core applied it; they stay in the channel's carry buffer meanwhile.
  std::string_view bytes{data, size};
  size_t pos = 0;
  while (!update_ && !barrier_ && !closed_) {
    size_t used = 0;
    auto res = reader_.next(bytes.substr(pos), used);
    if (res.kind == wire::frame_reader::status::need_more)
      return pos + used; // Skipped empty frames are used too.
    if (res.kind == wire::frame_reader::status::failed) {
      fail(framing_failure(reader_, res.err, conn_->secure()), false);
      return size;
    }
    pos += used;
    if (attached_) {
      handle_node_frame(res.payload);
      send_probe(); // After what the peer's first frame asked for (e.g. its pong).
    } else if (!handle_handshake_frame(res.payload)) {
      break;
    }
  }
  return closed_ ? size : pos;
}

bool connection::handle_handshake_frame(std::string_view payload) {
  if (!hs_)
    return false;
  auto res = hs_->feed(payload);
  send_raw(std::move(res.output));
  switch (res.kind) {
    case handshake::status::in_progress:
      return true;
    case handshake::status::paused:
      return false; // Wait for drop_paused(); input_blocked() holds the reading.
    case handshake::status::failed: {
      remote_ = res.remote.is_nil() ? hs_->remote_id() : res.remote;
      auto text = to_string(res.err);
      if (res.err == ec::peer_incompatible)
        fail_code_ = ec::peer_incompatible;
      if (res.redundant) {
        log(log_level::info, component,
            "closing redundant connection to " + endpoint_text(address_, port_));
        redundant_ = true;
      }
      fail(text, true);
      return false;
    }
    case handshake::status::done:
      remote_ = res.remote;
      remote_filter_ = res.remote_filter;
      if (remote_filter_.size() > mgr_->max_subscriptions) {
        post_to_core([](core_state& st) { st.count_limit_disconnect(handler_kind::peer); });
        fail("its handshake announces " + std::to_string(remote_filter_.size())
               + " subscriptions, more than broker.peer-max-subscriptions="
               + std::to_string(mgr_->max_subscriptions),
             false);
        return false;
      }
      remote_filter_ = checked_filter(remote_filter_);
      reader_.enter_operation();
      timer_.cancel();
      if (!mgr_->attach(self())) {
        fail("attach refused (shutting down)", false);
        return false;
      }
      attached_ = true;
      // Like a routing update, the attach is a barrier: what the peer sends next is routed
      // once the core has the peer's handler, so that an answer to it reaches the peer
      // (the core calls core_caught_up() back).
      raise_barrier();
      // Ask whether the peer speaks origin-v1 before any data goes out (wire.hh), but not
      // before the peer had its say: after its first frame, or a quiet spell.
      probing_ = true;
      {
        auto took = std::chrono::steady_clock::now() - hs_started_;
        probe_timer_.expires_after(std::clamp<std::chrono::steady_clock::duration>(
          took, probe_quiet_min, probe_quiet_max));
      }
      probe_timer_.async_wait([self = self()](boost::system::error_code ec) {
        if (ec || self->closed_)
          return;
        self->send_probe();
        self->write_more();
      });
      return true;
  }
  return false;
}

void connection::handle_node_frame(std::string_view payload) {
  heard();
  ++frames_in_;
  auto msg = wire::decode_node_message(payload);
  if (!msg) {
    ++malformed_;
    log(log_level::warning, component,
        "dropped malformed frame from " + to_string(remote_) + ": "
          + msg.error_value().message());
    return;
  }
  // Broker treats frames from nil or from ourselves as local; so do we.
  bool local_sender = msg->sender.is_nil() || msg->sender == mgr_->own;
  switch (msg->type) {
    case wire::message_type::data:
    case wire::message_type::data_ext:
      if (!local_sender)
        handle_data(*msg);
      break;
    case wire::message_type::routing_update:
      counters_.routing_update();
      if (msg->sender == remote_)
        handle_routing_update(msg->payload);
      break;
    case wire::message_type::ping:
      counters_.ping();
      if (!local_sender) {
        wire::append_pong(ctrl_, mgr_->own, *msg);
        if (msg->payload == wire::ext_probe_query)
          learn_extension(true, "its probe");
        if (ctrl_.size() > mgr_->max_control_bytes)
          exceeded("broker.max-pending-control-bytes", mgr_->max_control_bytes,
                   std::to_string(ctrl_.size()) + " bytes of pongs it does not read");
      }
      break;
    case wire::message_type::pong:
      counters_.pong();
      if (closing_ && msg->payload == bye_token_)
        finish_close(peer_end::removed, close_reason_);
      else if (msg->payload == wire::ext_probe_answer)
        learn_extension(true, "our answer");
      else if (msg->payload == wire::ext_probe_query)
        learn_extension(false, "an echo");
      break;
    case wire::message_type::command:
      if (!local_sender)
        handle_command(*msg);
      break;
    default:
      ++malformed_;
      break;
  }
}

void connection::handle_data(const wire::node_message_view& msg) {
  if (!msg.receiver.is_nil() && msg.receiver != mgr_->own)
    return; // Addressed to another node; we do not route by receiver (yet).
  if (is_reserved_topic(msg.topic)) {
    ++malformed_;
    log(log_level::warning, component,
        "dropped data on reserved topic from " + to_string(remote_));
    return;
  }
  route_info route;
  route.ttl = msg.ttl;
  std::string_view value_bytes = msg.payload;
  if (msg.type == wire::message_type::data_ext) {
    auto ext = wire::decode_extended_data(msg.payload);
    if (!ext) {
      ++malformed_;
      return;
    }
    route.origin = ext->origin;
    route.sequence = ext->sequence;
    route.hops = ext->hops;
    value_bytes = ext->value;
  }
  // Checked now, decoded only when somebody reads the value (a relay never does).
  if (auto err = bin::validate(value_bytes, mgr_->max_depth)) {
    ++malformed_;
    log(log_level::warning, component,
        "dropped undecodable data from " + to_string(remote_) + ": " + err.message());
    return;
  }
  // Keep the received bytes: relaying this message re-encodes nothing.
  in_->add(data_message{new message_impl(std::string{msg.topic}, std::string{value_bytes},
                                         route, message_kind::data)});
}

/// Data-store traffic (doc/protocol/peering.md §5.3): the payload is one of Broker's store
/// commands (store/store_wire.hh). Its bytes are kept as received: relays pass them on by
/// topic like any command, and the stores decode them.
void connection::handle_command(const wire::node_message_view& msg) {
  if (!msg.receiver.is_nil() && msg.receiver != mgr_->own)
    return;
  if (is_reserved_topic(msg.topic)) {
    ++malformed_;
    return;
  }
  route_info route;
  route.ttl = msg.ttl;
  // Stores decode the command from its bytes; nobody needs the value here.
  in_->add(data_message{new message_impl(std::string{msg.topic}, std::string{msg.payload},
                                         route, message_kind::command)});
}

void connection::handle_routing_update(std::string_view payload) {
  auto filter = wire::decode_filter(payload);
  if (!filter) {
    ++malformed_;
    log(log_level::warning, component,
        "dropped malformed routing update from " + to_string(remote_));
    return;
  }
  if (filter->size() > mgr_->max_subscriptions) {
    exceeded("broker.peer-max-subscriptions", mgr_->max_subscriptions,
             "a routing update with " + std::to_string(filter->size()) + " subscriptions");
    return;
  }
  // Applied exactly where it stands: after the messages before it are routed, and before
  // any message behind it is (decode() stops here; on_routed() posts it). A peer
  // that subscribes and then says "ready" must receive the answer to its "ready".
  update_ = std::move(*filter);
}

void connection::exceeded(std::string_view option, size_t limit, const std::string& what) {
  if (closed_)
    return;
  auto text = "peer " + to_string(remote_) + " (" + endpoint_text(address_, port_)
              + ") exceeded " + std::string{option} + "=" + std::to_string(limit) + ": "
              + what;
  log(log_level::warning, component, text + "; disconnecting");
  post_to_core([err = error{ec::limit_exceeded, text}](core_state& st) { st.emit_error(err); });
  finish_close(peer_end::removed, "exceeded " + std::string{option}, true);
}

void connection::send_probe() {
  if (!probing_ || probe_sent_ || closed_)
    return;
  probe_sent_ = true;
  wire::append_ping(ctrl_, mgr_->own, remote_, wire::ext_probe_query);
  arm_probe_timer(0);
}

void connection::arm_probe_timer(int lively_windows) {
  // Broker answers every ping in order, so a peer that keeps sending frames without
  // answering ours does not speak origin-v1. But a link that carries nothing (a paused
  // peer, a stalled path) says nothing either way: concluding "Broker" there would turn a
  // peering of two of our nodes into an origin-less one for good, and messages re-entering
  // the overlay through it would be delivered twice. So: only two windows in a row in which
  // frames arrived, and still no answer, make the peer a Broker node; a silent window
  // starts the count again.
  auto frames_before = frames_in_;
  probe_timer_.expires_after(ext_probe_timeout);
  probe_timer_.async_wait([self = self(), frames_before,
                           lively_windows](boost::system::error_code ec) {
    if (ec || self->closed_ || !self->probing_)
      return;
    if (self->out_ && self->out_->overflowed()) {
      // The queue overflowed under `disconnect` while data waited for the answer (the
      // write loop takes nothing while probing, so no push wakes it for this).
      self->finish_close(peer_end::removed, "send buffer overflow");
      return;
    }
    int lively = self->frames_in_ != frames_before ? lively_windows + 1 : 0;
    if (lively >= 2)
      self->learn_extension(false, "no answer to the probe");
    else
      self->arm_probe_timer(lively);
  });
}

void connection::learn_extension(bool supported, std::string_view how) {
  if (!probing_)
    return;
  probing_ = false;
  extension_ = supported;
  probe_timer_.cancel();
  log(log_level::debug, component,
      to_string(remote_) + (supported ? " speaks" : " does not speak") + " origin-v1 ("
        + std::string{how} + ")");
  write_more(); // Data waited for this.
}

void connection::on_routed() {
  // Everything decoded is routed (and no end is pending).
  check_access();
  if (update_ && !closed_) {
    // Everything before the update is routed: hand it to the core, and continue with the
    // frames behind it once the core has published it.
    raise_barrier();
    post_to_core([self = self(), id = id(), f = checked_filter(*update_)](
                   core_state& st) mutable {
      st.update_peer_filter(id, std::move(f));
      st.commit();
      self->core_caught_up();
    });
    update_.reset();
  }
}

// -- access control -----------------------------------------------------------------------

bool connection::admit() {
  if (!mgr_->access)
    return true;
  auto res = mgr_->access->admit(security::tls_credential(conn_->native_tls()), address_, port_);
  if (res.admitted) {
    access_ = std::make_unique<security::connection_access>(mgr_->access,
                                                            std::move(*res.admitted));
    std::weak_ptr<connection> weak = self();
    access_->watch_reloads([weak] {
      if (auto self = weak.lock())
        asio::post(self->conn_->get_executor(), [self] { self->check_access(); });
    });
    return true;
  }
  // Tell the peer why, as for any failed handshake (a drop_conn; Broker's codes end at 40),
  // and close: finish_close() lets the frame out first.
  wire::append_frame(ctrl_, wire::drop_conn_msg{mgr_->own, ec::peer_invalid,
                                                "access denied: " + res.reason});
  fail_code_ = ec::access_denied;
  fail("access denied: " + res.reason, true);
  return false;
}

filter_type connection::checked_filter(const filter_type& requested) {
  if (!access_)
    return requested;
  auto sub = access_->subscribe(requested);
  disarm_if_checked(); // Before the core routes anything under a filtered prefix.
  tell_access(sub.notices);
  return security::connection_access::to_filter(sub.granted);
}

void connection::tell_access(const std::vector<std::string>& notices) {
  for (const auto& notice : notices) {
    auto text = "peer " + to_string(remote_) + " (" + endpoint_text(address_, port_) + ", "
                + access_->describe_identity() + "): " + notice;
    log(log_level::info, "security", text);
    post_to_core([err = error{ec::access_denied, text}](core_state& st) { st.emit_error(err); });
  }
}

void connection::check_access() {
  if (!access_ || closed_ || !access_->needs_attention())
    return;
  if (access_->has_notices())
    tell_access(access_->take_notices());
  auto res = access_->poll_reload();
  if (!res.reloaded)
    return;
  if (res.revoked) {
    tell_access({"its credential no longer has an identity after a reload of the rules; "
                 "unpeering"});
    do_unpeer("identity revoked by a reload of the rules");
    return;
  }
  disarm_if_checked();
  if (!res.sub.changed)
    return;
  tell_access(res.sub.notices);
  if (attached_)
    post_to_core([id = id(), f = security::connection_access::to_filter(res.sub.granted)](
                   core_state& st) mutable {
      st.update_peer_filter(id, std::move(f));
      st.commit();
    });
}

// -- writing ------------------------------------------------------------------------------

void connection::send_raw(std::string bytes) {
  if (bytes.empty())
    return;
  ctrl_ += bytes;
  write_more();
}

void connection::append_data(gather_buffer& out, const send_item& item, bool check) {
  if (check && access_ && !access_->may_receive(item.msg.topic()))
    return; // Under a filtered subscription; counted as a refused delivery.
  const auto& bytes = item.msg.impl().binary(); // Encoded once, shared by all peers.
  if (bytes.empty())
    return;
  const auto& topic = item.msg.topic();
  auto& head = head_; // Reused scratch; copied into the gather buffer below.
  head.clear();
  error err;
  if (item.msg.kind() == message_kind::command) {
    err = wire::append_node_message_head(head, mgr_->own, endpoint_id{},
                                         wire::message_type::command, item.route.ttl, topic,
                                         bytes.size());
  } else if (extension_ && !item.route.origin.is_nil()) {
    wire::extended_data ext{item.route.origin, item.route.sequence, item.route.hops, bytes};
    err = wire::append_extended_data_head(head, mgr_->own, endpoint_id{}, item.route.ttl,
                                          topic, ext);
  } else {
    err = wire::append_node_message_head(head, mgr_->own, endpoint_id{},
                                         wire::message_type::data, item.route.ttl, topic,
                                         bytes.size());
  }
  if (err) {
    log(log_level::warning, component, "cannot send message: " + err.message());
    return;
  }
  out.copy(head);
  out.share(bytes);
}

bool connection::may_hold() const noexcept {
  return attached_ && !closing_ && !probing_;
}

bool connection::fill(gather_buffer& out) {
  out.copy(ctrl_);
  ctrl_.clear();
  if (out_ && attached_ && !closing_ && probing_ && out_->overflowed()) {
    // Data waits for the probe's answer, but a queue that overflowed under `disconnect`
    // ends the peering now: a peer that never answers must not hold its slot forever.
    finish_close(peer_end::removed, "send buffer overflow");
    return false;
  }
  if (out_ && attached_ && !closing_ && !probing_
      && take_into_gather(out, true) == take_result::closed) {
    finish_close(peer_end::removed, "send buffer overflow");
    return false;
  }
  return !out.empty();
}

connection::take_result connection::take_into_gather(gather_buffer& out, bool check_access) {
  for (;;) {
    std::optional<filter_type> announcement;
    if (!out_->take(batch_, announcement))
      return take_result::closed;
    if (batch_.empty() && !announcement)
      return take_result::idle; // The queue counts us idle again: the next push wakes us.
    if (announcement) {
      std::string frame;
      wire::append_routing_update(frame, mgr_->own, remote_, *announcement);
      out.copy(frame);
    }
    auto before = out.size();
    for (auto& item : batch_)
      append_data(out, item, check_access);
    if (out.size() > before)
      wrote_data();
    if (!out.empty())
      return take_result::ready;
    // Every message was dropped (refused by a filtered subscription, or unencodable):
    // take again, so that the queue sees an empty take and counts us idle. Otherwise its
    // next push would not wake us, and that message would wait for the one after it.
    batch_.clear();
  }
}

bool connection::may_write_through() {
  // On the strand, under the write lock (the channel checked: plain TCP, open, nothing in
  // flight, no control frame waiting).
  if (!attached_ || closing_ || probing_ || close_after_write_ || !out_
      || (access_ && !access_->delivers_unchecked()))
    return false;
  if (access_)
    through_generation_ = access_->checks().generation();
  return true;
}

bool connection::through_allowed() const noexcept {
  // Rules reloaded since the strand armed write-through: it applies them first.
  return !access_ || mgr_->access->policy().generation() == through_generation_;
}

connection::take_result connection::fill_through(gather_buffer& out) {
  // Armed only while no delivery needs an access check: none here.
  return take_into_gather(out, false);
}

void connection::disarm_if_checked() {
  if (!access_ || access_->delivers_unchecked())
    return;
  lock_writes(); // After a write-through in progress; disarms.
}

void connection::on_write_error(const boost::system::error_code& ec) {
  fail("write failed: " + ec.message(), false);
}

void connection::on_drained() {
  if (close_after_write_)
    fail(close_reason_, false);
  else
    read_more(); // Reading may have waited for pongs to drain.
}

void connection::take_pending_data() {
  // Called when unpeering: what the core already queued goes out before BYE.
  auto guard = lock_writes();
  if (!out_)
    return;
  std::optional<filter_type> announcement;
  send_batch items;
  out_->take(items, announcement);
  if (items.empty())
    return;
  // Encode into ctrl_ (copies), so BYE can follow in order.
  for (auto& item : items) {
    if (access_ && !access_->may_receive(item.msg.topic()))
      continue;
    const auto& bytes = item.msg.impl().binary();
    if (bytes.empty())
      continue;
    error err;
    if (item.msg.kind() == message_kind::command)
      err = wire::append_node_message(ctrl_, mgr_->own, endpoint_id{},
                                      wire::message_type::command, item.route.ttl,
                                      item.msg.topic(), bytes);
    else if (extension_ && !item.route.origin.is_nil())
      err = wire::append_extended_data(ctrl_, mgr_->own, endpoint_id{}, item.route.ttl,
                                       item.msg.topic(),
                                       wire::extended_data{item.route.origin,
                                                           item.route.sequence,
                                                           item.route.hops, bytes});
    else
      err = wire::append_node_message(ctrl_, mgr_->own, endpoint_id{},
                                      wire::message_type::data, item.route.ttl,
                                      item.msg.topic(), bytes);
    if (err)
      log(log_level::warning, component, "cannot send message: " + err.message());
  }
}

// -- closing ------------------------------------------------------------------------------

void connection::do_unpeer(const std::string& reason) {
  if (closed_ || closing_)
    return;
  if (!attached_) {
    fail(reason, false);
    return;
  }
  // Flush what the core already queued, then BYE (doc/protocol/peering.md §5.5).
  take_pending_data();
  closing_ = true;
  close_reason_ = reason;
  {
    std::lock_guard<std::mutex> guard{mgr_->mtx};
    bye_token_ = wire::make_bye_payload(++mgr_->bye_counter);
  }
  wire::append_ping(ctrl_, mgr_->own, remote_, bye_token_);
  write_more();
  timer_.expires_after(bye_timeout);
  timer_.async_wait([self = self()](boost::system::error_code ec) {
    if (!ec && !self->closed_)
      self->finish_close(peer_end::removed, "timeout during graceful disconnect");
  });
}

void connection::fail(const std::string& reason, bool handshake_error) {
  if (closed_)
    return;
  if (!attached_) {
    last_error_ = error{handshake_error ? fail_code_ : ec::peer_unavailable,
                        "peering with " + endpoint_text(address_, port_)
                          + " failed: " + reason};
    if (!redundant_) {
      // The log is the manager's: it summarizes repeated failures (failure_log.hh).
      if (!outgoing_)
        mgr_->inbound_failed(address_, "inbound peering from " + address_ + " failed: " + reason);
      // Applications learn about failed attempts through error events.
      auto err = last_error_;
      post_to_core([err](core_state& st) { st.emit_error(err); });
    }
  }
  finish_close(peer_end::lost, reason);
}

void connection::finish_close(peer_end why, const std::string& reason, bool limit) {
  if (closed_)
    return;
  auto write_guard = lock_writes(); // No write-through from here on.
  mark_closed();
  timer_.cancel();
  probe_timer_.cancel();
  if (out_)
    out_->on_ready(nullptr);
  // Let pending control bytes (e.g. a drop_conn) reach the peer before the FIN, within a
  // short time: a peer that does not read gets no more of ours.
  if (!writing_ && !ctrl_.empty()) {
    gather_.clear();
    gather_.copy(ctrl_);
    ctrl_.clear();
    if (conn_->secure()) {
      gather_.linearize(tls_buf_);
      writing_ = true;
      timer_.expires_after(linger_timeout);
      timer_.async_wait([self = self()](boost::system::error_code ec) {
        if (!ec)
          self->conn_->close();
      });
      conn_->async_write_all(tls_buf_, [self = self()](boost::system::error_code, size_t) {
        self->timer_.cancel();
        self->conn_->close();
      });
    } else {
      boost::system::error_code ignored;
      conn_->write_now(gather_, ignored);
      conn_->close();
    }
  } else {
    conn_->close();
  }
  write_guard.unlock();
  if (attached_) {
    log(log_level::info, component,
        std::string{why == peer_end::lost ? "lost peer " : "removed peer "}
          + to_string(remote_) + " (" + endpoint_text(address_, port_) + "): " + reason);
    // The core learns of the end after the last message we decoded was routed.
    detach_.emplace(why, reason);
    detach_limit_ = limit;
    end_input(); // Routes what is left (or parks), then detach().
  }
  mgr_->detached(this, remote_, attached_);
  if (outgoing_)
    on_outgoing_closed();
}

void connection::detach() {
  if (!detach_)
    return;
  auto [why, reason] = std::move(*detach_);
  detach_.reset();
  post_to_core([id = id(), why = why, reason = std::move(reason),
                limit = detach_limit_](core_state& st) mutable {
    if (limit)
      st.count_limit_disconnect(handler_kind::peer);
    st.remove_peer(id, why, std::move(reason));
  });
}

void connection::on_outgoing_closed() {
  auto out = outgoing_;
  if (attached_ || redundant_) {
    // A redundant connection means the peering exists (the peer dialed us too).
    if (redundant_) {
      if (!remote_.is_nil()) {
        std::lock_guard<std::mutex> guard{mgr_->mtx};
        out->remote = remote_; // Lets the retry timer see that we are peered.
      }
      mgr_->report(out, error{});
    }
    mgr_->dial_failed(out, error{});
  } else {
    mgr_->dial_failed(out,
                      last_error_ ? last_error_
                                  : error{ec::peer_unavailable, "connection failed"},
                      static_cast<bool>(last_error_));
  }
}

} // namespace broker::internal
