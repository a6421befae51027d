#include "broker/internal/web/ws_session.hh"

#include "broker/internal/codec/json.hh"
#include "broker/internal/config/logger.hh"
#include "broker/internal/core/core_runtime.hh"
#include "broker/internal/web/server_impl.hh"

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>

namespace asio = boost::asio;

namespace broker::internal {

namespace {

constexpr std::string_view component = "web-socket";

/// Control frames waiting to be written beyond which the session stops reading for a while
/// (a burst of pings); broker.max-pending-control-bytes, much larger, ends the session.
constexpr size_t control_read_pause = 64 * 1024;

/// How long the session waits for the client's close frame after sending its own, and
/// for that close frame to be written at all.
constexpr auto close_timeout = std::chrono::seconds{1};

} // namespace

ws_session::ws_session(std::shared_ptr<server_impl> srv, std::unique_ptr<stream> conn,
                       std::string response, std::string_view early, std::string app,
                       std::unique_ptr<security::connection_access> access)
  : queued_channel(std::move(conn), &srv->gate),
    srv_(std::move(srv)),
    reader_(srv_->opts.max_message_size),
    access_(std::move(access)),
    app_(app.empty() ? nullptr : std::make_unique<const std::string>(std::move(app))) {
  boost::system::error_code ec;
  auto ep = conn_->socket().remote_endpoint(ec);
  if (!ec) {
    address_ = ep.address().to_string();
    port_ = ep.port();
  }
  ctrl_ = std::move(response);
  if (!early.empty())
    rx_.assign(early.data(), early.size());
  ++srv_->clients;
}

ws_session::~ws_session() {
  --srv_->clients;
}

void ws_session::start(const std::string& app_error) {
  if (!app_error.empty()) {
    // Zeek's server answers exactly so (code and close), after the 101.
    log(log_level::info, component,
        "client " + address_ + ":" + std::to_string(port_) + " rejected: " + app_error);
    srv_->reject(client_reject::application_name);
    queue_control(ws::make_frame(ws::opcode::text,
                                 json::make_error("invalid_application_name", app_error)));
    close_with(ws::close_policy_violation, "invalid X-Application-Name");
    write_more();
    read_more();
    return;
  }
  if (access_) {
    std::weak_ptr<ws_session> weak = self();
    access_->watch_reloads([weak, exec = conn_->get_executor(), srv = srv_] {
      srv->post(exec, [weak] {
        if (auto self = weak.lock())
          self->check_access();
      });
    });
  }
  timer().expires_after(std::chrono::milliseconds{srv_->opts.handshake_timeout_ms});
  timer().async_wait([self = self()](boost::system::error_code ec) {
    if (!ec && self->phase_ == phase::awaiting_filter && !self->closed_) {
      self->log(log_level::info, component,
                "client " + self->address_ + " sent no subscriptions in time");
      self->finish(peer_end::lost, "no subscriptions in time");
    }
  });
  decode_carried(); // Frames that came with the upgrade request (after the 101 in ctrl_).
  write_more();
  read_more();
}

void ws_session::close_for_shutdown() {
  asio::post(conn_->get_executor(), [self = self()] {
    if (self->closed_ || self->close_pending_ || self->close_sent_)
      return;
    if (self->phase_ != phase::attached) {
      self->finish(peer_end::removed, "shutting down");
      return;
    }
    self->close_with(ws::close_normal, "shutting down");
    self->write_more();
  });
}

void ws_session::abort() {
  asio::post(conn_->get_executor(),
             [self = self()] { self->finish(peer_end::removed, "shutting down"); });
}

// -- reading ------------------------------------------------------------------------------

bool ws_session::hold_input() const noexcept {
  return ctrl_.size() > control_read_pause;
}

void ws_session::on_read_error(const boost::system::error_code& ec) {
  if (close_sent_)
    finish(peer_end::removed, close_reason_);
  else
    finish(peer_end::lost, ec == asio::error::eof ? "closed by client" : ec.message());
}

namespace {

/// One decoder per I/O thread: its scratch is reused from message to message, and a
/// session does not keep the scratch of its largest message. Looked up once per read (a
/// thread_local with a constructor costs a call into the TLS machinery per access).
json::decoder& thread_decoder() {
  thread_local json::decoder decoder;
  return decoder;
}

} // namespace

size_t ws_session::decode(char* data, size_t size) {
  heard_since_tick_ = true;
  size_t pos = 0;
  json::decoder* dec = nullptr;
  while (!closed_ && phase_ != phase::attaching) {
    auto ev = reader_.next(data, size, pos);
    switch (ev.kind) {
      case ws::event::need_more:
        return pos;
      case ws::event::text:
      case ws::event::binary: // Zeek's clients send their JSON in binary frames.
        if (close_pending_ || close_sent_)
          break; // Closing: nothing new is accepted.
        if (phase_ == phase::awaiting_filter)
          on_first_message(ev.payload);
        else
          on_text(ev.payload, dec ? *dec : *(dec = &thread_decoder()));
        break;
      case ws::event::ping:
        if (!close_pending_ && !close_sent_)
          queue_control(ws::make_frame(ws::opcode::pong, ev.payload));
        break;
      case ws::event::pong:
        break;
      case ws::event::close:
        if (close_sent_ && !close_is_final_) {
          // The answer to our close: the handshake is complete.
          finish(peer_end::removed, close_reason_);
          return pos;
        }
        if (!close_pending_ && !close_sent_)
          close_with(ev.code == ws::close_no_status ? ws::close_normal : ev.code,
                     "closed by client", true);
        return pos;
      case ws::event::fail:
        log(log_level::info, component,
            "client " + address_ + ":" + std::to_string(port_)
              + " violated the protocol: " + std::string{ev.payload});
        // Failing the connection (RFC 6455 §7.1.7): our close frame, then the client's
        // answer if it comes within the close timeout (clients report a clean close only
        // if they could answer), then TCP.
        if (!close_pending_ && !close_sent_)
          close_with(ev.code, std::string{ev.payload});
        return size; // Nothing behind a violation is read.
    }
  }
  return pos;
}

void ws_session::on_first_message(std::string_view text) {
  drop_timer(); // The deadline is met; a rejection below arms the close timer anew.
  auto filter = json::decode_filter(text, srv_->opts.max_depth);
  if (!filter) {
    auto context = filter.error_value().message();
    log(log_level::info, component, describe() + " rejected: " + context);
    srv_->reject(client_reject::subscriptions);
    queue_control(ws::make_frame(ws::opcode::text,
                                 json::make_error("deserialization_failed", context)));
    close_with(ws::close_policy_violation, "first message must contain a filter");
    return;
  }
  const auto& opts = srv_->opts;
  if (filter->size() > opts.max_subscriptions) {
    auto text = "client subscribed to " + std::to_string(filter->size())
                + " topics, more than broker.web-socket.max-subscriptions="
                + std::to_string(opts.max_subscriptions);
    log(log_level::warning, component, text + " (" + describe() + ")");
    srv_->reject(client_reject::max_subscriptions);
    srv_->rt->post([](core_state& st) { st.count_limit_disconnect(handler_kind::web_socket); });
    queue_control(ws::make_frame(ws::opcode::text, json::make_error("limit_exceeded", text)));
    close_with(ws::close_policy_violation, "too many subscriptions");
    return;
  }
  auto id = srv_->next_id();
  set_queue(std::make_shared<message_queue>(opts.buffer_size, opts.policy));
  attach(id, std::make_unique<net_input>(srv_->rt->routing(), id, source_kind::client));
  if (access_) {
    auto sub = access_->subscribe(std::move(*filter));
    *filter = std::move(sub.granted);
    if (!sub.notices.empty())
      access_notices_ = std::make_unique<std::vector<std::string>>(std::move(sub.notices));
    in_->set_gate(access_.get());
  }
  std::weak_ptr<ws_session> weak = self();
  out_->on_ready([weak] {
    if (auto self = weak.lock())
      self->schedule_write();
  });
  client_attachment att;
  att.id = id;
  att.client = client_id_;
  for (auto& prefix : *filter)
    att.filter.emplace_back(prefix);
  att.address = address_;
  att.port = port_;
  att.queue = out_;
  att.stats = in_->stats();
  // The ack goes out only after the core subscribed us (doc/protocol/websocket.md §4.2; Broker
  // subscribed in parallel); the task keeps
  // the session alive while the core attaches it.
  registered_ = true;
  if (app_) // Only named clients have an entry (the status page shows no empty name).
    srv_->set_app(id, app_.get());
  phase_ = phase::attaching;
  raise_barrier(); // Frames behind the subscriptions wait until the core attached us.
  srv_->rt->post([att = std::move(att), self = self()](core_state& st) mutable {
    st.add_client(std::move(att));
    st.commit(); // The ack must not overtake the snapshot that routes to us.
    self->core_caught_up();
  });
}

void ws_session::on_caught_up() {
  // finish() may already have told the core to remove us again: the channel checks that.
  phase_ = phase::attached;
  log(log_level::info, component,
      "client " + to_string(client_id_) + " connected from " + address_ + ":"
        + std::to_string(port_) + (app_ ? " (app " + *app_ + ")" : std::string{}));
  queue_control(ws::make_frame(ws::opcode::text,
                               json::make_ack(to_string(srv_->opts.node), srv_->opts.version)));
  if (auto notices = std::move(access_notices_))
    tell_access(*notices);
  // The channel decodes the frames that arrived right behind the subscriptions next.
}

void ws_session::on_text(std::string_view text, json::decoder& dec) {
  ++inputs_;
  std::string topic;
  data value;
  auto res = dec.data_message(text, topic, value, srv_->opts.max_depth);
  if (!res) {
    reject_input(json::error_context(inputs_, res));
    return;
  }
  // Straight into the shared message: no broker::topic in between, one move fewer of the
  // topic and of the value (each a call into libstdc++ for a string).
  in_->add(data_message{new message_impl(std::move(topic), std::move(value))});
}

void ws_session::reject_input(const std::string& context) {
  uint64_t suppressed = 0;
  if (srv_->reject_input(suppressed)) {
    auto line = describe() + " sent invalid input: " + context;
    if (suppressed > 0)
      line += " (and " + std::to_string(suppressed)
              + " rejected messages not logged since the last line)";
    log(log_level::info, component, line);
  }
  queue_control(ws::make_frame(ws::opcode::text,
                               json::make_error("deserialization_failed", context)));
}

std::string ws_session::describe() const {
  std::string out = "client ";
  if (registered_)
    out += to_string(client_id_) + " ";
  out += "(" + address_ + ":" + std::to_string(port_);
  if (app_)
    out += ", app " + *app_;
  out += ")";
  return out;
}

// -- liveness -----------------------------------------------------------------------------

void ws_session::ping_tick() {
  post([self = self()] { self->on_ping_tick(); });
}

boost::asio::steady_timer& ws_session::timer() {
  if (!timer_)
    timer_ = std::make_unique<boost::asio::steady_timer>(conn_->get_executor());
  return *timer_;
}

void ws_session::drop_timer() {
  // Destroying the timer cancels its wait; the handler still runs (aborted) and holds the
  // session, not the timer.
  timer_.reset();
}

void ws_session::on_ping_tick() {
  if (closed_ || close_pending_ || close_sent_ || phase_ != phase::attached)
    return;
  bool heard = heard_since_tick_;
  heard_since_tick_ = false;
  if (!heard && ping_pending_) {
    if (writing_ || input_blocked())
      return; // Our side kept the ping or its answer from moving: no verdict.
    // Silent for a whole interval after our ping.
    srv_->ping_timeouts.fetch_add(1, std::memory_order_relaxed);
    auto why = "no answer to a ping within " + std::to_string(srv_->opts.ping_interval_ms)
               + " ms (broker.web-socket.ping-interval)";
    log(log_level::info, component, describe() + " closed: " + why);
    close_end_ = peer_end::lost;
    close_with(ws::close_going_away, why, true);
    return;
  }
  if (!heard || ping_pending_) {
    // Idle, or it answered our last ping: the next one (as Zeek's server, every interval).
    // A client that sends on its own accord proves it is alive and gets none.
    ping_pending_ = true;
    queue_control(ws::make_frame(ws::opcode::ping, {}));
    write_more();
  }
}

void ws_session::detach() {
  srv_->rt->post([id = id(), why = detach_why_, reason = std::move(close_reason_),
                  limit = detach_limit_](core_state& st) mutable {
    if (limit)
      st.count_limit_disconnect(handler_kind::web_socket);
    st.remove_client(id, why, std::move(reason));
  });
}

// -- writing ------------------------------------------------------------------------------

void ws_session::queue_control(std::string frame) {
  ctrl_ += frame;
  if (ctrl_.size() > srv_->opts.max_control_bytes && !closed_) {
    // The client sends pings or bad input but does not read the answers.
    auto text = "client " + to_string(client_id_) + " (" + address_ + ":"
                + std::to_string(port_) + ") exceeded broker.max-pending-control-bytes="
                + std::to_string(srv_->opts.max_control_bytes);
    log(log_level::warning, component, text + "; disconnecting");
    if (registered_)
      srv_->rt->post([err = error{ec::limit_exceeded, text}](core_state& st) {
        st.emit_error(err);
      });
    finish(peer_end::removed, "exceeded broker.max-pending-control-bytes", true);
  }
}

void ws_session::close_with(uint16_t code, std::string reason, bool final) {
  close_pending_ = true;
  close_code_ = code;
  close_reason_ = std::move(reason);
  close_is_final_ = final;
  // A client that stops reading must not keep us: the close gets written in time or the
  // session ends anyway.
  timer().expires_after(close_timeout);
  timer().async_wait([self = self()](boost::system::error_code ec) {
    if (!ec && !self->closed_)
      self->finish(peer_end::removed, self->close_reason_);
  });
  write_more();
}

bool ws_session::fill(gather_buffer& out) {
  if (close_sent_)
    return false; // Nothing follows our close frame.
  out.copy(ctrl_);
  ctrl_.clear();
  bool data = false;
  if (phase_ == phase::attached && out_ && !close_pending_) {
    for (;;) {
      std::optional<filter_type> unused;
      bool open = out_->take(batch_, unused);
      if (!open) {
        // The queue closed: the core removed us, or we overflowed under `disconnect`.
        if (out_->overflowed()) {
          out.copy(ws::make_frame(
            ws::opcode::text,
            json::make_error("backpressure_overflow",
                             "output queue exceeded " + std::to_string(srv_->opts.buffer_size)
                               + " messages; disconnecting")));
          close_with(ws::close_normal, "backpressure overflow");
        } else {
          close_with(ws::close_normal, "EOF");
        }
      }
      // Each frame is encoded once and shared by all clients; the first client to send
      // a run of messages encodes their frames back to back, so every client finds runs
      // of adjacent frames and sends each as one piece (copied if small).
      message_impl::encode_ws_frames(batch_.data(), batch_.size());
      std::string_view run;
      for (auto& msg : batch_)
        if (!access_ || access_->may_receive(msg.topic())) { // Filtered: counted.
          auto frame = msg.impl().ws_frame();
          if (!extend_run(run, frame)) {
            out.share(run);
            run = frame;
          }
          data = true;
        }
      out.share(run);
      if (!open || batch_.empty() || !out.empty())
        break;
      // Every message was refused: take again, so that the queue sees an empty take and
      // counts us idle; otherwise its next push would not wake us.
      batch_.clear();
    }
  }
  if (close_pending_ && !close_sent_) {
    out.copy(ws::make_close_frame(close_code_, close_reason_));
    close_pending_ = false;
    close_sent_ = true;
  }
  if (out.empty())
    return false;
  last_write_data_ = data;
  return true;
}

void ws_session::on_drained() {
  // The last write carried only control frames: the handshake (the 101 response and the
  // ack), a ping or a pong. The write buffers hold its leftovers, and an idle client should
  // not keep them; a client that receives data keeps its buffers (no allocation per write).
  if (!last_write_data_ && gather_.capacity() > 0)
    gather_buffer{}.swap(gather_);
  channel::on_drained();
}

bool ws_session::after_write() {
  if (!close_sent_)
    return true;
  // Our close frame is out. A reply (or a failure) ends the session; otherwise wait
  // (bounded by the close timer) for the client's answer, which the read loop sees.
  if (close_is_final_)
    finish(close_end_, close_reason_);
  return false;
}

void ws_session::on_write_error(const boost::system::error_code& ec) {
  finish(peer_end::lost, "write failed: " + ec.message());
}

// -- access control -----------------------------------------------------------------------

void ws_session::on_routed() {
  check_access();
}

void ws_session::tell_access(const std::vector<std::string>& notices) {
  for (const auto& notice : notices) {
    log(log_level::info, "security",
        describe() + " (" + access_->describe_identity() + "): " + notice);
    queue_control(ws::make_frame(ws::opcode::text, json::make_error("access_denied", notice)));
  }
  if (!notices.empty())
    write_more();
}

void ws_session::check_access() {
  if (!access_ || closed_ || phase_ != phase::attached || !access_->needs_attention())
    return;
  if (access_->has_notices())
    tell_access(access_->take_notices());
  auto res = access_->poll_reload();
  if (!res.reloaded || closed_)
    return;
  if (res.revoked) {
    tell_access({"the client's credential has no identity any more after a reload of the "
                 "rules; closing"});
    if (!close_pending_ && !close_sent_)
      close_with(ws::close_policy_violation, "identity revoked");
    return;
  }
  if (!res.sub.changed)
    return;
  tell_access(res.sub.notices);
  srv_->rt->post([id = id(), f = security::connection_access::to_filter(res.sub.granted)](
                   core_state& st) mutable {
    st.update_client_filter(id, std::move(f));
    st.commit();
  });
}

// -- ending -------------------------------------------------------------------------------

void ws_session::finish(peer_end why, std::string reason, bool limit) {
  if (closed_)
    return;
  mark_closed();
  if (timer_)
    timer_->cancel();
  if (out_)
    out_->on_ready(nullptr);
  if (registered_) {
    if (phase_ == phase::attached)
      log(log_level::info, component,
          "client " + to_string(client_id_) + " removed: " + reason);
    // The core learns of the end after the client's last message was routed.
    detach_why_ = why;
    detach_limit_ = limit;
    close_reason_ = std::move(reason); // Nothing is sent any more: now the detach's reason.
    end_input();
    if (app_)
      srv_->set_app(id(), nullptr);
  }
  close_transport(); // Untracks the session once the transport is closed.
}

void ws_session::close_transport() {
  if (!conn_->secure() || writing_) {
    end_transport();
    return;
  }
  // TLS: close_notify first, bounded by a short timer, then the socket. The server counts
  // the session as live until then: a node that shuts down waits for it (bounded), so
  // that its I/O does not stop under a pending close_notify and reset the connection.
  timer().expires_after(std::chrono::milliseconds{500});
  timer().async_wait([self = self()](boost::system::error_code ec) {
    if (!ec)
      self->end_transport();
  });
  conn_->async_shutdown([self = self()](boost::system::error_code) {
    self->timer_->cancel();
    self->end_transport();
  });
}

void ws_session::end_transport() {
  if (transport_closed_)
    return;
  transport_closed_ = true;
  conn_->close();
  srv_->untrack(this); // Last: every caller holds its own reference.
}

} // namespace broker::internal
