#include "broker/internal/peering/peer_manager.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/core/core_runtime.hh"
#include "broker/internal/peering/handshake.hh"
#include "broker/internal/config/logger.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/internal/core/source_inbox.hh"
#include "broker/internal/peering/wire.hh"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <array>
#include <condition_variable>
#include <map>
#include <set>
#include <thread>

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace broker::internal {

namespace {

/// How long a dialer waits for TCP to connect.
constexpr auto connect_timeout = std::chrono::seconds{5};

/// How long a handshake may take (spec §3.5: SHOULD 10 s).
constexpr auto handshake_timeout = std::chrono::seconds{10};

/// How long an unpeer waits for the pong to its BYE (spec §6.4: 3 s).
constexpr auto bye_timeout = std::chrono::seconds{3};

/// Bytes read from a socket per read call.
constexpr size_t read_chunk_size = 64 * 1024;

constexpr std::string_view component = "peering";

using strand_type = asio::strand<asio::io_context::executor_type>;

std::string endpoint_text(const std::string& host, uint16_t port) {
  return host + ":" + std::to_string(port);
}

} // namespace

class connection;

/// One peer() request: re-dialed until unpeered.
struct outgoing_peering {
  outgoing_peering(asio::io_context& ioc, std::string h, uint16_t p, timespan r,
                   std::function<void(error)> d)
    : host(std::move(h)), port(p), retry(r), done(std::move(d)), timer(ioc) {}

  std::string host;
  uint16_t port;
  timespan retry;
  std::function<void(error)> done; // Reset once called.
  asio::steady_timer timer;
  bool removed = false;
  std::weak_ptr<connection> conn;
  endpoint_id remote; // Known after the first successful handshake.
};

/// The peer status Broker keeps per remote id (spec §5.3), reduced to what decisions need.
enum class remote_state : uint8_t { connecting, peered };

struct peer_manager::impl {
  impl(endpoint_id own_id, const configuration& cfg, std::shared_ptr<core_runtime> runtime,
       std::function<uint64_t()> ids)
    : own(own_id),
      peer_capacity(cfg.peer_buffer_size()),
      peer_policy(cfg.peer_overflow_policy()),
      inbox_capacity(cfg.publisher_buffer_size()),
      max_depth(cfg.max_nesting_depth()),
      rt(std::move(runtime)),
      next_id(std::move(ids)),
      work(asio::make_work_guard(ioc)) {
    filter = wire::with_extension({});
    setup_tls(cfg);
    auto n = cfg.io_threads() == 0 ? 1 : cfg.io_threads();
    for (size_t i = 0; i < n; ++i)
      threads.emplace_back([this] { ioc.run(); });
  }

  ~impl() {
    stop();
  }

  void stop();

  /// Builds the TLS context from broker.ssl.* (see doc/node.md, "TLS"). Errors end up in
  /// tls_error and make listen() and peer() fail.
  void setup_tls(const configuration& cfg);

  // -- status table ---------------------------------------------------------------

  handshake::decision proceed(connection* conn, const endpoint_id& remote, bool originator);
  void handshake_failed(connection* conn, const endpoint_id& remote);
  bool attach(const std::shared_ptr<connection>& conn);
  void detached(connection* conn, const endpoint_id& remote, bool was_attached);
  void drop_paused(const endpoint_id& remote);

  // -- dialing ----------------------------------------------------------------------

  void dial(std::shared_ptr<outgoing_peering> out);
  /// A dial attempt ended without a peering (`err` empty: a peering ended). `reported`:
  /// the connection already emitted the error event.
  void dial_failed(const std::shared_ptr<outgoing_peering>& out, const error& err,
                   bool reported = false);
  void report(const std::shared_ptr<outgoing_peering>& out, const error& err);

  // The io_context is declared first so that it is destroyed last: pending handlers (and the
  // connections they keep alive) go away while the sockets' services still exist.
  asio::io_context ioc;
  const endpoint_id own;
  const size_t peer_capacity;
  const overflow_policy peer_policy;
  const size_t inbox_capacity;
  const size_t max_depth;
  std::shared_ptr<core_runtime> rt;
  std::function<uint64_t()> next_id;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::vector<std::thread> threads;
  std::unique_ptr<asio::ssl::context> tls; // Null: plain TCP.
  error tls_error;
  bool warn_plain = false;
  std::once_flag warned_plain;

  /// Warns once that peerings run over plain TCP although TLS was not disabled.
  void warn_if_plain() {
    if (warn_plain)
      std::call_once(warned_plain, [] {
        log(log_level::warning, component,
            "peerings are NOT encrypted or authenticated: no broker.ssl.* certificate is "
            "configured (set broker.disable-ssl=true to acknowledge plain TCP)");
      });
  }

  mutable std::mutex mtx;
  std::condition_variable detached_cv;
  bool shutting_down = false;
  filter_type filter;
  std::map<endpoint_id, remote_state> status;
  std::map<endpoint_id, connection*> in_flight; // Handshake that set `connecting`.
  std::map<endpoint_id, std::vector<std::weak_ptr<connection>>> paused;
  std::map<endpoint_id, std::shared_ptr<connection>> peered;
  std::vector<std::shared_ptr<outgoing_peering>> outgoing;
  std::vector<std::shared_ptr<tcp::acceptor>> acceptors;
  std::vector<std::shared_ptr<std::function<void()>>> accept_loops;
  uint64_t bye_counter = 0;
};

/// One TCP connection: handshake, then phase 3 (see the header's flow).
class connection : public std::enable_shared_from_this<connection> {
public:
  connection(peer_manager::impl* mgr, tcp::socket sock, handshake::role role,
             std::shared_ptr<outgoing_peering> out)
    : mgr_(mgr),
      strand_(asio::make_strand(mgr->ioc)),
      sock_(std::move(sock)),
      timer_(strand_),
      role_(role),
      outgoing_(std::move(out)) {
    if (mgr->tls)
      tls_ = std::make_unique<asio::ssl::stream<tcp::socket&>>(sock_, *mgr->tls);
    boost::system::error_code ec;
    auto ep = sock_.remote_endpoint(ec);
    if (!ec) {
      address_ = ep.address().to_string();
      port_ = ep.port();
    }
  }

  /// Starts the TLS handshake (if configured), then the peering handshake.
  void start() {
    asio::dispatch(strand_, [self = shared_from_this()] {
      if (!self->tls_) {
        self->do_start();
        return;
      }
      self->timer_.expires_after(handshake_timeout);
      self->timer_.async_wait([self](boost::system::error_code ec) {
        if (!ec && !self->tls_ready_ && !self->closed_)
          self->fail("TLS handshake timed out", false);
      });
      auto type = self->role_ == handshake::role::dialer ? asio::ssl::stream_base::client
                                                         : asio::ssl::stream_base::server;
      self->tls_->async_handshake(type, [self](boost::system::error_code ec) {
        if (self->closed_)
          return;
        if (ec) {
          self->fail("TLS handshake failed: " + ec.message(), true);
          return;
        }
        self->tls_ready_ = true;
        self->timer_.cancel();
        self->do_start();
      });
    });
  }

  /// Graceful unpeer: BYE, wait for its pong, close.
  void unpeer(std::string reason) {
    asio::dispatch(strand_, [self = shared_from_this(), reason = std::move(reason)] {
      self->do_unpeer(reason);
    });
  }

  /// Paused redundant handshake: the other one finished, send drop_conn 39 and close.
  void drop_paused() {
    asio::dispatch(strand_, [self = shared_from_this()] {
      if (!self->hs_ || self->closed_)
        return;
      auto res = self->hs_->drop_paused();
      self->redundant_ = true;
      self->close_after_write_ = true;
      self->close_reason_ = "redundant connection";
      self->send_raw(std::move(res.output));
    });
  }

  const endpoint_id& remote() const noexcept { return remote_; }
  const std::string& address() const noexcept { return address_; }
  uint16_t port() const noexcept { return port_; }
  bool outbound() const noexcept { return role_ == handshake::role::dialer; }
  uint64_t id() const noexcept { return id_; }

  /// Called by the manager while attaching (under its mutex).
  void set_attachment(uint64_t id, std::shared_ptr<send_queue> out,
                      std::shared_ptr<source_inbox> in) {
    id_ = id;
    out_ = std::move(out);
    in_ = std::move(in);
  }

  /// The filter we sent in the handshake.
  const filter_type& sent_filter() const noexcept { return sent_filter_; }
  const filter_type& remote_filter() const noexcept { return remote_filter_; }
  bool extension() const noexcept { return extension_; }

private:
  void do_start() {
    filter_type own_filter;
    {
      std::lock_guard<std::mutex> guard{mgr_->mtx};
      own_filter = mgr_->filter;
    }
    sent_filter_ = own_filter;
    hs_ = std::make_unique<handshake>(
      mgr_->own, std::move(own_filter), role_,
      [this](const endpoint_id& remote, bool originator) {
        return mgr_->proceed(this, remote, originator);
      });
    timer_.expires_after(handshake_timeout);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && !self->attached_ && !self->closed_)
        self->fail("handshake timed out", false);
    });
    send_raw(hs_->start());
    read_more();
  }

  // -- reading ----------------------------------------------------------------------

  void read_more() {
    if (closed_ || reading_ || read_paused_)
      return;
    reading_ = true;
    auto handler = [self = shared_from_this()](boost::system::error_code ec, size_t n) {
      self->reading_ = false;
      self->on_read(ec, n);
    };
    if (tls_)
      tls_->async_read_some(asio::buffer(rbuf_), std::move(handler));
    else
      sock_.async_read_some(asio::buffer(rbuf_), std::move(handler));
  }

  void on_read(boost::system::error_code ec, size_t n) {
    if (closed_)
      return;
    if (ec) {
      if (closing_)
        finish_close(peer_end::removed, close_reason_);
      else
        fail(ec == asio::error::eof ? "connection closed by peer" : ec.message(), false);
      return;
    }
    reader_.feed(std::string_view{rbuf_.data(), n});
    handle_frames();
    if (closed_)
      return;
    flush_input();
    read_more();
  }

  void handle_frames() {
    for (;;) {
      auto res = reader_.next();
      if (res.kind == wire::frame_reader::status::need_more)
        return;
      if (res.kind == wire::frame_reader::status::failed) {
        fail("framing error: " + res.err.message(), false);
        return;
      }
      if (attached_)
        handle_node_frame(res.payload);
      else if (!handle_handshake_frame(res.payload))
        return;
      if (closed_)
        return;
    }
  }

  /// Returns false if the connection stops reading (failed or paused).
  bool handle_handshake_frame(std::string_view payload) {
    if (!hs_)
      return false;
    auto res = hs_->feed(payload);
    send_raw(std::move(res.output));
    switch (res.kind) {
      case handshake::status::in_progress:
        return true;
      case handshake::status::paused:
        read_paused_ = true; // Wait for drop_paused().
        return false;
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
        extension_ = wire::has_extension(res.remote_filter);
        remote_filter_ = wire::strip_extension(res.remote_filter);
        reader_.enter_operation();
        timer_.cancel();
        if (!mgr_->attach(shared_from_this())) {
          fail("attach refused (shutting down)", false);
          return false;
        }
        attached_ = true;
        return true;
    }
    return false;
  }

  void handle_node_frame(std::string_view payload) {
    auto msg = wire::decode_node_message(payload);
    if (!msg) {
      ++malformed_;
      log(log_level::warning, component,
          "dropped malformed frame from " + to_string(remote_) + ": " + msg.error_value().message());
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
        if (msg->sender == remote_)
          handle_routing_update(msg->payload);
        break;
      case wire::message_type::ping:
        if (!local_sender) {
          wire::append_pong(ctrl_, mgr_->own, *msg);
          write_more();
        }
        break;
      case wire::message_type::pong:
        if (closing_ && msg->payload == bye_token_) {
          finish_close(peer_end::removed, close_reason_);
        }
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

  void handle_data(const wire::node_message_view& msg) {
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
    auto value = bin::decode(value_bytes, mgr_->max_depth);
    if (!value) {
      ++malformed_;
      log(log_level::warning, component,
          "dropped undecodable data from " + to_string(remote_) + ": "
            + value.error_value().message());
      return;
    }
    // Keep the received bytes: relaying this message re-encodes nothing.
    input_.emplace_back(new message_impl(std::string{msg.topic}, std::move(*value),
                                         std::string{value_bytes}, route));
  }

  /// Data-store traffic (spec §6.5). Our stores encode their commands as one binary
  /// value; a payload that is no such value (e.g. Broker's own store protocol) is still
  /// relayed by topic like any command, it just means nothing to our stores.
  void handle_command(const wire::node_message_view& msg) {
    if (!msg.receiver.is_nil() && msg.receiver != mgr_->own)
      return;
    if (is_reserved_topic(msg.topic)) {
      ++malformed_;
      return;
    }
    route_info route;
    route.ttl = msg.ttl;
    auto value = bin::decode(msg.payload, mgr_->max_depth);
    input_.emplace_back(new message_impl(std::string{msg.topic},
                                         value ? std::move(*value) : data{},
                                         std::string{msg.payload}, route,
                                         message_kind::command));
  }

  void handle_routing_update(std::string_view payload) {
    auto filter = wire::decode_filter(payload);
    if (!filter) {
      ++malformed_;
      log(log_level::warning, component,
          "dropped malformed routing update from " + to_string(remote_));
      return;
    }
    auto stripped = wire::strip_extension(std::move(*filter));
    auto id = id_;
    mgr_->rt->post([id, stripped](core_state& st) { st.update_peer_filter(id, stripped); });
  }

  /// Hands decoded messages to the core; stops reading while the inbox is full.
  void flush_input() {
    if (!in_ || input_.empty())
      return;
    input_pos_ += in_->try_push_some(input_, input_pos_);
    if (input_pos_ == input_.size()) {
      input_.clear();
      input_pos_ = 0;
      if (read_paused_ && !hs_paused()) {
        read_paused_ = false;
        read_more();
      }
    } else {
      read_paused_ = true; // Back-pressure: TCP carries it to the peer.
    }
  }

  bool hs_paused() const {
    return hs_ && hs_->current_state() == handshake::state::paused;
  }

  // -- writing ----------------------------------------------------------------------

  void send_raw(std::string bytes) {
    if (bytes.empty())
      return;
    ctrl_ += bytes;
    write_more();
  }

public:
  /// Drains the send queue into one write (called via the queue's ready callback).
  void write_more() {
    if (closed_ || writing_)
      return;
    wbuf_.clear();
    wbuf_.swap(ctrl_);
    if (out_ && !closing_) {
      items_.clear();
      std::optional<filter_type> announcement;
      if (!out_->take(items_, announcement)) {
        if (!closing_)
          fail_removed("send buffer overflow");
        return;
      }
      if (announcement)
        wire::append_routing_update(wbuf_, mgr_->own, remote_, *announcement);
      for (auto& item : items_)
        append_data(item);
      items_.clear();
    }
    if (wbuf_.empty()) {
      if (close_after_write_)
        fail(close_reason_, false);
      return;
    }
    writing_ = true;
    async_write_buffer([self = shared_from_this()](boost::system::error_code ec, size_t) {
                        self->writing_ = false;
                        if (self->closed_) {
                          self->close_socket();
                          return;
                        }
                        if (ec) {
                          self->fail("write failed: " + ec.message(), false);
                          return;
                        }
                        self->write_more();
                      });
  }

private:
  void append_data(const send_item& item) {
    const auto& bytes = item.msg.impl().binary(); // Encoded once, shared by all peers.
    if (bytes.empty())
      return;
    const auto& topic = item.msg.topic();
    error err;
    if (item.msg.kind() == message_kind::command) {
      err = wire::append_node_message(wbuf_, mgr_->own, endpoint_id{},
                                      wire::message_type::command, item.route.ttl, topic, bytes);
    } else if (extension_ && !item.route.origin.is_nil()) {
      wire::extended_data ext{item.route.origin, item.route.sequence, item.route.hops, bytes};
      err = wire::append_extended_data(wbuf_, mgr_->own, endpoint_id{}, item.route.ttl, topic,
                                       ext);
    } else {
      err = wire::append_node_message(wbuf_, mgr_->own, endpoint_id{},
                                      wire::message_type::data, item.route.ttl, topic, bytes);
    }
    if (err)
      log(log_level::warning, component, "cannot send message: " + err.message());
  }

  // -- closing ----------------------------------------------------------------------

  void do_unpeer(const std::string& reason) {
    if (closed_ || closing_)
      return;
    if (!attached_) {
      fail(reason, false);
      return;
    }
    closing_ = true;
    close_reason_ = reason;
    // Flush what the core already queued, then BYE (spec §6.4).
    write_pending_data();
    {
      std::lock_guard<std::mutex> guard{mgr_->mtx};
      bye_token_ = wire::make_bye_payload(++mgr_->bye_counter);
    }
    wire::append_ping(ctrl_, mgr_->own, remote_, bye_token_);
    write_more();
    timer_.expires_after(bye_timeout);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && !self->closed_)
        self->finish_close(peer_end::removed, "timeout during graceful disconnect");
    });
  }

  void write_pending_data() {
    if (!out_)
      return;
    std::optional<filter_type> announcement;
    items_.clear();
    out_->take(items_, announcement);
    for (auto& item : items_)
      append_data_to_ctrl(item);
    items_.clear();
  }

  void append_data_to_ctrl(const send_item& item) {
    std::swap(wbuf_, ctrl_);
    append_data(item);
    std::swap(wbuf_, ctrl_);
  }

  /// Writes wbuf_ completely, through TLS if configured.
  template <class Handler>
  void async_write_buffer(Handler handler) {
    if (tls_)
      asio::async_write(*tls_, asio::buffer(wbuf_), std::move(handler));
    else
      asio::async_write(sock_, asio::buffer(wbuf_), std::move(handler));
  }

  void close_socket() {
    boost::system::error_code ignored;
    sock_.shutdown(tcp::socket::shutdown_both, ignored);
    sock_.close(ignored);
  }

  void fail_removed(const std::string& reason) {
    finish_close(peer_end::removed, reason);
  }

  void fail(const std::string& reason, bool handshake_error) {
    if (closed_)
      return;
    if (!attached_) {
      last_error_ = error{handshake_error ? fail_code_ : ec::peer_unavailable,
                          "peering with " + endpoint_text(address_, port_)
                            + " failed: " + reason};
      if (!redundant_) {
        log(log_level::warning, component, last_error_.message());
        // Applications learn about failed attempts through error events.
        auto err = last_error_;
        mgr_->rt->post([err](core_state& st) { st.emit_error(err); });
      }
    }
    finish_close(peer_end::lost, reason);
  }

  void finish_close(peer_end why, const std::string& reason) {
    if (closed_)
      return;
    closed_ = true;
    timer_.cancel();
    // Let pending control bytes (e.g. a drop_conn) reach the peer before the FIN. A write
    // in flight closes the socket from its completion handler.
    if (!writing_ && !ctrl_.empty()) {
      wbuf_.clear();
      wbuf_.swap(ctrl_);
      writing_ = true;
      async_write_buffer([self = shared_from_this()](boost::system::error_code, size_t) {
                          self->writing_ = false;
                          self->close_socket();
                        });
    } else if (!writing_) {
      close_socket();
    }
    if (in_)
      in_->on_release(nullptr);
    if (out_)
      out_->on_ready(nullptr);
    if (attached_) {
      log(log_level::info, component,
          std::string{why == peer_end::lost ? "lost peer " : "removed peer "}
            + to_string(remote_) + " (" + endpoint_text(address_, port_) + "): " + reason);
      // Hand over what we decoded before the core forgets the source.
      if (!input_.empty() && in_)
        in_->try_push_some(input_, input_pos_);
      auto id = id_;
      mgr_->rt->post([id, why, reason](core_state& st) { st.remove_peer(id, why, reason); });
    }
    mgr_->detached(this, remote_, attached_);
    if (outgoing_)
      on_outgoing_closed();
  }

  void on_outgoing_closed() {
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

  peer_manager::impl* mgr_;
  strand_type strand_;
  tcp::socket sock_;
  std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls_; // Null for plain TCP.
  bool tls_ready_ = false;
  asio::steady_timer timer_;
  handshake::role role_;
  std::shared_ptr<outgoing_peering> outgoing_;
  std::string address_;
  uint16_t port_ = 0;

  std::unique_ptr<handshake> hs_;
  wire::frame_reader reader_;
  std::array<char, read_chunk_size> rbuf_;
  filter_type sent_filter_;
  filter_type remote_filter_;
  endpoint_id remote_;
  bool extension_ = false;
  bool attached_ = false;
  bool redundant_ = false;
  ec fail_code_ = ec::peer_invalid; // Code of a handshake failure's error event.
  error last_error_;

  uint64_t id_ = 0;
  std::shared_ptr<send_queue> out_;
  std::shared_ptr<source_inbox> in_;
  std::vector<data_message> input_;
  size_t input_pos_ = 0;
  std::vector<send_item> items_;
  uint64_t malformed_ = 0;

  bool reading_ = false;
  bool read_paused_ = false;
  bool writing_ = false;
  bool closing_ = false;
  bool closed_ = false;
  bool close_after_write_ = false;
  std::string close_reason_;
  std::string bye_token_;
  std::string wbuf_;
  std::string ctrl_;

  friend struct peer_manager::impl;

public:
  /// Resumes reading once the core made room in the inbox (posted from the core thread).
  void on_inbox_room() {
    asio::dispatch(strand_, [self = shared_from_this()] {
      if (self->closed_)
        return;
      self->flush_input();
    });
  }

  /// Schedules write_more() on the strand (the queue's ready callback).
  void schedule_write() {
    asio::post(strand_, [self = shared_from_this()] { self->write_more(); });
  }
};

// -- peer_manager::impl -----------------------------------------------------------------

void peer_manager::impl::setup_tls(const configuration& cfg) {
  bool configured = !cfg.ssl_certificate().empty() || !cfg.ssl_key().empty()
                    || !cfg.ssl_passphrase().empty() || !cfg.ssl_cafile().empty()
                    || !cfg.ssl_capath().empty();
  if (cfg.disable_ssl())
    return;
  if (!configured) {
    warn_plain = true; // Said once, when the endpoint first listens or dials.
    return;
  }
  auto fail = [this](std::string what, const boost::system::error_code& ec) {
    tls_error = error{ec::invalid_config, "TLS setup failed: " + what + ": " + ec.message()};
    tls.reset();
    log(log_level::error, component, tls_error.message());
  };
  // Mutual authentication, as Broker's certificate mode: TLS >= 1.2, strong ciphers, and
  // both sides must present a certificate signed by the configured CA.
  tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls);
  boost::system::error_code ec;
  tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2
                     | asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1
                     | asio::ssl::context::no_tlsv1_1,
                   ec);
  if (!ec && SSL_CTX_set_cipher_list(tls->native_handle(), "HIGH:!aNULL:!MD5") != 1)
    ec = boost::system::error_code{static_cast<int>(ERR_get_error()),
                                   asio::error::get_ssl_category()};
  if (ec)
    return fail("options", ec);
  if (!cfg.ssl_passphrase().empty()) {
    auto pass = cfg.ssl_passphrase();
    tls->set_password_callback(
      [pass](size_t, asio::ssl::context::password_purpose) { return pass; }, ec);
  }
  if (!cfg.ssl_certificate().empty())
    tls->use_certificate_chain_file(cfg.ssl_certificate(), ec);
  if (ec)
    return fail("broker.ssl.certificate \"" + cfg.ssl_certificate() + "\"", ec);
  if (!cfg.ssl_key().empty())
    tls->use_private_key_file(cfg.ssl_key(), asio::ssl::context::pem, ec);
  if (ec)
    return fail("broker.ssl.key \"" + cfg.ssl_key() + "\"", ec);
  if (!cfg.ssl_cafile().empty())
    tls->load_verify_file(cfg.ssl_cafile(), ec);
  if (ec)
    return fail("broker.ssl.cafile \"" + cfg.ssl_cafile() + "\"", ec);
  if (!cfg.ssl_capath().empty())
    tls->add_verify_path(cfg.ssl_capath(), ec);
  if (ec)
    return fail("broker.ssl.capath \"" + cfg.ssl_capath() + "\"", ec);
  tls->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
  if (ec)
    return fail("verify mode", ec);
  log(log_level::info, component, "peerings use mutually authenticated TLS");
}

handshake::decision peer_manager::impl::proceed(connection* conn, const endpoint_id& remote,
                                                bool originator) {
  std::lock_guard<std::mutex> guard{mtx};
  if (shutting_down)
    return handshake::decision::shutting_down;
  auto i = status.find(remote);
  if (i == status.end()) {
    status.emplace(remote, remote_state::connecting);
    in_flight[remote] = conn;
    return handshake::decision::proceed;
  }
  if (i->second == remote_state::peered)
    return handshake::decision::redundant;
  // Connecting: another handshake with this peer is under way.
  if (!originator)
    return handshake::decision::redundant;
  if (in_flight.count(remote) != 0 && in_flight[remote] != conn) {
    // Our other handshake decides; this one waits and is dropped with code 39 afterwards.
    paused[remote].push_back(conn->weak_from_this());
    return handshake::decision::pause;
  }
  return handshake::decision::no_pending_handshake;
}

bool peer_manager::impl::attach(const std::shared_ptr<connection>& conn) {
  auto remote = conn->remote();
  uint64_t id = 0;
  std::shared_ptr<send_queue> out;
  std::shared_ptr<source_inbox> in;
  std::vector<std::weak_ptr<connection>> to_drop;
  {
    std::lock_guard<std::mutex> guard{mtx};
    if (shutting_down)
      return false;
    status[remote] = remote_state::peered;
    in_flight.erase(remote);
    peered[remote] = conn;
    if (auto i = paused.find(remote); i != paused.end()) {
      to_drop = std::move(i->second);
      paused.erase(i);
    }
    id = next_id();
    out = std::make_shared<send_queue>(peer_capacity, peer_policy);
    in = std::make_shared<source_inbox>(id, inbox_capacity);
    conn->set_attachment(id, out, in);
  }
  std::weak_ptr<connection> weak = conn;
  out->on_ready([weak] {
    if (auto c = weak.lock())
      c->schedule_write();
  });
  out->on_room(rt->room_callback(id));
  in->on_wake(rt->wake_callback(id));
  in->on_release([weak] {
    if (auto c = weak.lock())
      c->on_inbox_room();
  });
  peer_attachment att;
  att.id = id;
  att.remote = remote;
  att.filter = conn->remote_filter();
  att.extension = conn->extension();
  att.address = conn->address();
  att.port = conn->port();
  att.queue = out;
  att.inbox = in;
  att.handshake_filter = conn->sent_filter();
  rt->post([att = std::move(att)](core_state& st) mutable { st.add_peer(std::move(att)); });
  log(log_level::info, component,
      "peered with " + to_string(remote) + " at " + endpoint_text(conn->address(), conn->port())
        + (conn->extension() ? " (origin-v1)" : ""));
  for (auto& w : to_drop)
    if (auto c = w.lock())
      c->drop_paused();
  if (conn->outgoing_) {
    {
      std::lock_guard<std::mutex> guard{mtx};
      conn->outgoing_->remote = remote;
    }
    report(conn->outgoing_, error{});
  }
  return true;
}

void peer_manager::impl::detached(connection* conn, const endpoint_id& remote,
                                  bool was_attached) {
  std::vector<std::weak_ptr<connection>> to_drop;
  {
    std::lock_guard<std::mutex> guard{mtx};
    if (was_attached) {
      if (auto i = peered.find(remote); i != peered.end() && i->second.get() == conn)
        peered.erase(i);
      status.erase(remote);
    } else if (auto i = in_flight.find(remote); i != in_flight.end() && i->second == conn) {
      // Our handshake set `connecting` and failed: undo, and release paused twins.
      in_flight.erase(i);
      if (status[remote] == remote_state::connecting)
        status.erase(remote);
      if (auto j = paused.find(remote); j != paused.end()) {
        to_drop = std::move(j->second);
        paused.erase(j);
      }
    }
  }
  detached_cv.notify_all();
  for (auto& w : to_drop)
    if (auto c = w.lock())
      c->drop_paused();
}

void peer_manager::impl::dial(std::shared_ptr<outgoing_peering> out) {
  auto resolver = std::make_shared<tcp::resolver>(ioc);
  resolver->async_resolve(
    out->host, std::to_string(out->port),
    [this, out, resolver](boost::system::error_code ec, tcp::resolver::results_type results) {
      if (ec) {
        dial_failed(out, error{ec::peer_unavailable, "cannot resolve " + out->host + ": "
                                                       + ec.message()});
        return;
      }
      auto sock = std::make_shared<tcp::socket>(ioc);
      auto timer = std::make_shared<asio::steady_timer>(ioc, connect_timeout);
      timer->async_wait([sock](boost::system::error_code ec) {
        if (!ec) {
          boost::system::error_code ignored;
          sock->close(ignored);
        }
      });
      asio::async_connect(
        *sock, results,
        [this, out, sock, timer](boost::system::error_code ec, const tcp::endpoint&) {
          timer->cancel();
          {
            std::lock_guard<std::mutex> guard{mtx};
            if (shutting_down || out->removed)
              return;
          }
          if (ec) {
            dial_failed(out, error{ec::peer_unavailable,
                                   "cannot connect to " + endpoint_text(out->host, out->port)
                                     + ": " + ec.message()});
            return;
          }
          sock->set_option(tcp::no_delay{true});
          auto conn = std::make_shared<connection>(this, std::move(*sock),
                                                   handshake::role::dialer, out);
          {
            std::lock_guard<std::mutex> guard{mtx};
            out->conn = conn;
          }
          conn->start();
        });
    });
}

void peer_manager::impl::report(const std::shared_ptr<outgoing_peering>& out, const error& err) {
  std::function<void(error)> done;
  {
    std::lock_guard<std::mutex> guard{mtx};
    done = std::move(out->done);
    out->done = nullptr;
  }
  if (done)
    done(err);
}

void peer_manager::impl::dial_failed(const std::shared_ptr<outgoing_peering>& out,
                                     const error& err, bool reported) {
  // A connection that reached phase 3 reports success when it attaches; see attach().
  bool retry;
  {
    std::lock_guard<std::mutex> guard{mtx};
    retry = !shutting_down && !out->removed && out->retry.count() > 0;
  }
  if (err) {
    if (!reported)
      rt->post([err](core_state& st) { st.emit_error(err); });
    if (!retry)
      report(out, err);
    else
      log(log_level::info, component,
          err.message() + "; retrying in "
            + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(out->retry)
                               .count())
            + " ms");
  }
  if (!retry)
    return;
  out->timer.expires_after(out->retry);
  out->timer.async_wait([this, out](boost::system::error_code ec) {
    if (ec)
      return;
    bool already_peered = false;
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (shutting_down || out->removed)
        return;
      auto i = out->remote.is_nil() ? status.end() : status.find(out->remote);
      already_peered = i != status.end() && i->second == remote_state::peered;
    }
    if (already_peered) {
      // Peered through another connection (the peer dialed us): check again later.
      dial_failed(out, error{});
      return;
    }
    dial(out);
  });
}

void peer_manager::impl::stop() {
  std::vector<std::shared_ptr<connection>> live;
  {
    std::lock_guard<std::mutex> guard{mtx};
    if (shutting_down && threads.empty())
      return;
    shutting_down = true;
    for (auto& [id, c] : peered)
      live.push_back(c);
    for (auto& out : outgoing)
      out->removed = true;
  }
  for (auto& c : live)
    c->unpeer("shutting down");
  {
    // Wait for the BYE exchanges (each connection force-closes after bye_timeout).
    std::unique_lock<std::mutex> guard{mtx};
    detached_cv.wait_for(guard, bye_timeout + std::chrono::milliseconds{500},
                         [this] { return peered.empty(); });
  }
  asio::post(ioc, [this] {
    for (auto& acc : acceptors) {
      boost::system::error_code ignored;
      acc->close(ignored);
    }
    for (auto& out : outgoing)
      out->timer.cancel();
  });
  work.reset();
  // Give handlers a moment to finish closing, then stop hard.
  std::this_thread::sleep_for(std::chrono::milliseconds{20});
  ioc.stop();
  for (auto& t : threads)
    if (t.joinable())
      t.join();
  threads.clear();
  std::lock_guard<std::mutex> guard{mtx};
  peered.clear();
  paused.clear();
  outgoing.clear();
  acceptors.clear();
}

// -- peer_manager -----------------------------------------------------------------------

peer_manager::peer_manager(endpoint_id own, const configuration& cfg,
                           std::shared_ptr<core_runtime> rt, std::function<uint64_t()> next_id)
  : impl_(std::make_shared<impl>(own, cfg, std::move(rt), std::move(next_id))) {
}

peer_manager::~peer_manager() {
  shutdown();
}

expected<uint16_t> peer_manager::listen(const std::string& address, uint16_t port) {
  if (impl_->tls_error)
    return impl_->tls_error;
  impl_->warn_if_plain();
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(address.empty() ? "0.0.0.0" : address, ec);
  if (ec)
    return error{ec::invalid_config, "invalid listen address \"" + address + "\""};
  auto acc = std::make_shared<tcp::acceptor>(impl_->ioc);
  tcp::endpoint ep{addr, port};
  acc->open(ep.protocol(), ec);
  if (!ec)
    acc->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec)
    acc->bind(ep, ec);
  if (!ec)
    acc->listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return error{ec::cannot_open_resource,
                 "cannot listen on " + endpoint_text(address, port) + ": " + ec.message()};
  auto bound = acc->local_endpoint().port();
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    impl_->acceptors.push_back(acc);
  }
  auto* mgr = impl_.get();
  auto accept = std::make_shared<std::function<void()>>();
  std::weak_ptr<std::function<void()>> weak_accept = accept;
  *accept = [mgr, acc, weak_accept] {
    acc->async_accept(asio::make_strand(mgr->ioc), [mgr, acc, weak_accept](
                                                     boost::system::error_code ec,
                                                     tcp::socket sock) {
      if (ec == asio::error::operation_aborted || !acc->is_open())
        return;
      if (!ec) {
        sock.set_option(tcp::no_delay{true}, ec);
        auto conn = std::make_shared<connection>(mgr, std::move(sock),
                                                 handshake::role::acceptor, nullptr);
        conn->start();
      }
      if (auto next = weak_accept.lock())
        (*next)();
    });
  };
  // The acceptor loop keeps itself alive through this shared function until the manager
  // stops (acceptors are closed, the loop ends, the function is released).
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    impl_->accept_loops.push_back(accept);
  }
  asio::post(impl_->ioc, [accept] { (*accept)(); });
  log(log_level::info, component, "listening on " + endpoint_text(address, bound));
  return bound;
}

void peer_manager::peer(const std::string& host, uint16_t port, timespan retry,
                        std::function<void(error)> done) {
  auto out = std::make_shared<outgoing_peering>(impl_->ioc, host, port, retry, std::move(done));
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    if (impl_->shutting_down) {
      out->removed = true;
    } else {
      impl_->outgoing.push_back(out);
    }
  }
  if (out->removed) {
    impl_->report(out, error{ec::shutting_down, "the endpoint has shut down"});
    return;
  }
  if (impl_->tls_error) {
    impl_->report(out, impl_->tls_error);
    return;
  }
  impl_->warn_if_plain();
  asio::post(impl_->ioc, [mgr = impl_.get(), out] { mgr->dial(out); });
}

bool peer_manager::unpeer(const std::string& host, uint16_t port) {
  std::shared_ptr<connection> conn;
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    auto& outs = impl_->outgoing;
    auto i = std::find_if(outs.begin(), outs.end(), [&](const auto& out) {
      return out->host == host && out->port == port && !out->removed;
    });
    if (i != outs.end()) {
      (*i)->removed = true;
      (*i)->timer.cancel();
      conn = (*i)->conn.lock();
      outs.erase(i);
    } else {
      // Also accept the address of an inbound peering.
      for (auto& [id, c] : impl_->peered)
        if (c->address() == host && c->port() == port)
          conn = c;
      if (!conn)
        return false;
    }
  }
  if (conn)
    conn->unpeer("unpeered");
  return true;
}

bool peer_manager::unpeer(const endpoint_id& id) {
  std::shared_ptr<connection> conn;
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    auto i = impl_->peered.find(id);
    if (i == impl_->peered.end())
      return false;
    conn = i->second;
    for (auto& out : impl_->outgoing)
      if (out->conn.lock() == conn)
        out->removed = true;
  }
  conn->unpeer("unpeered");
  return true;
}

std::vector<peer_record> peer_manager::peers() const {
  std::vector<peer_record> result;
  std::lock_guard<std::mutex> guard{impl_->mtx};
  for (auto& [id, c] : impl_->peered)
    result.push_back(peer_record{id, c->address(), c->port(), c->outbound()});
  return result;
}

boost::asio::io_context& peer_manager::io_context() noexcept {
  return impl_->ioc;
}

void* peer_manager::tls_context(error& err) const noexcept {
  err = impl_->tls_error;
  return impl_->tls.get();
}

void peer_manager::update_filter(const filter_type& filter) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->filter = filter;
}

void peer_manager::shutdown() {
  if (impl_)
    impl_->stop();
}

} // namespace broker::internal
