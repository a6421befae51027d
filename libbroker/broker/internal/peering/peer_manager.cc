#include "broker/internal/peering/peer_manager.hh"

#include "broker/internal/config/address_text.hh"
#include "broker/internal/config/logger.hh"
#include "broker/internal/core/core_runtime.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/internal/core/net_input.hh"
#include "broker/internal/peering/connection.hh"
#include "broker/internal/peering/peer_manager_impl.hh"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace broker::internal {

namespace {

/// How long a dialer waits for TCP to connect.
constexpr auto connect_timeout = std::chrono::seconds{5};

/// How long shutdown waits for the BYE exchanges (each connection force-closes after 3 s).
constexpr auto bye_wait = std::chrono::milliseconds{3500};

constexpr std::string_view component = "peering";

/// Remote addresses whose inbound failures are tracked at once; beyond, failures from new
/// addresses are logged without summarizing (and the oldest entries make room).
constexpr size_t max_inbound_failure_logs = 1024;

std::string endpoint_text(const std::string& host, uint16_t port) {
  return address_text(host, port);
}

/// "1 s", "500 ms": how often a dial is retried.
std::string retry_text(timespan retry) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(retry).count();
  if (ms % 1000 == 0)
    return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

} // namespace

peer_manager_impl::peer_manager_impl(endpoint_id own_id, const configuration& cfg,
                                     io_runtime& io, std::shared_ptr<core_runtime> runtime,
                                     std::function<uint64_t()> ids,
                                     std::shared_ptr<security::runtime> access)
  : io(io),
    own(own_id),
    peer_capacity(cfg.peer_buffer_size()),
    peer_policy(cfg.peer_overflow_policy()),
    max_depth(cfg.max_nesting_depth()),
    max_subscriptions(cfg.peer_max_subscriptions()),
    max_control_bytes(cfg.max_pending_control_bytes()),
    write_delay(static_cast<int64_t>(cfg.peer_write_delay())),
    rt(std::move(runtime)),
    next_id(std::move(ids)),
    access(std::move(access)) {
}

handshake::decision peer_manager_impl::proceed(connection* conn, const endpoint_id& remote,
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
    paused[remote].push_back(std::static_pointer_cast<connection>(conn->shared_from_this()));
    return handshake::decision::pause;
  }
  return handshake::decision::no_pending_handshake;
}

bool peer_manager_impl::attach(const std::shared_ptr<connection>& conn) {
  auto remote = conn->remote();
  uint64_t id = 0;
  std::shared_ptr<send_queue> out;
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
    conn->set_attachment(id, out,
                         std::make_unique<net_input>(rt->routing(), id, source_kind::remote));
  }
  std::weak_ptr<connection> weak = conn;
  out->on_ready([weak] {
    if (auto c = weak.lock())
      c->schedule_write();
  });
  peer_attachment att;
  att.id = id;
  att.remote = remote;
  att.filter = conn->remote_filter();
  att.address = conn->address();
  att.port = conn->port();
  att.queue = out;
  att.stats = conn->input_stats();
  att.handshake_filter = conn->sent_filter();
  rt->post([att = std::move(att), conn](core_state& st) mutable {
    st.add_peer(std::move(att));
    st.commit();
    conn->core_caught_up(); // The connection routes what follows the handshake now.
  });
  io.get_logger().write(log_level::info, component,
                        "peered with " + to_string(remote) + " at "
                          + endpoint_text(conn->address(), conn->port()));
  for (auto& w : to_drop)
    if (auto c = w.lock())
      c->drop_paused();
  if (auto& out = conn->outgoing()) {
    std::optional<std::string> recovered;
    {
      std::lock_guard<std::mutex> guard{mtx};
      out->remote = remote;
      recovered = out->failures.succeeded("peering with " + endpoint_text(out->host, out->port));
    }
    if (recovered)
      io.get_logger().write(log_level::info, component, *recovered);
    report(out, error{});
  } else {
    inbound_succeeded(conn->address());
  }
  return true;
}

void peer_manager_impl::detached(connection* conn, const endpoint_id& remote,
                                  bool was_attached) {
  std::vector<std::weak_ptr<connection>> to_drop;
  {
    std::lock_guard<std::mutex> guard{mtx};
    if (was_attached) {
      ended_control += conn->counters().load();
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

void peer_manager_impl::dial(std::shared_ptr<outgoing_peering> out) {
  auto resolver = std::make_shared<tcp::resolver>(io.context());
  resolver->async_resolve(
    out->host, std::to_string(out->port),
    [this, self = shared_from_this(), out, resolver](boost::system::error_code ec,
                                                     tcp::resolver::results_type results) {
      if (ec) {
        dial_failed(out, error{ec::peer_unavailable, "cannot resolve " + out->host + ": "
                                                       + ec.message()});
        return;
      }
      auto sock = std::make_shared<tcp::socket>(asio::make_strand(io.context()));
      auto timer = std::make_shared<asio::steady_timer>(io.context(), connect_timeout);
      timer->async_wait([sock](boost::system::error_code ec) {
        if (!ec) {
          boost::system::error_code ignored;
          sock->close(ignored);
        }
      });
      asio::async_connect(
        *sock, results,
        [this, self, out, sock, timer](boost::system::error_code ec, const tcp::endpoint&) {
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
          auto conn = std::make_shared<connection>(self, std::move(*sock),
                                                   handshake::role::dialer, out);
          {
            std::lock_guard<std::mutex> guard{mtx};
            out->conn = conn;
          }
          conn->start();
        });
    });
}

void peer_manager_impl::report(const std::shared_ptr<outgoing_peering>& out, const error& err) {
  std::function<void(error)> done;
  {
    std::lock_guard<std::mutex> guard{mtx};
    done = std::move(out->done);
    out->done = nullptr;
  }
  if (done)
    done(err);
}

void peer_manager_impl::dial_failed(const std::shared_ptr<outgoing_peering>& out,
                                     const error& err, bool reported) {
  // A connection that reached phase 3 reports success when it attaches; see attach().
  bool retry;
  {
    std::lock_guard<std::mutex> guard{mtx};
    retry = !shutting_down && !out->removed && out->retry.count() > 0;
    if (err)
      out->last_error = err.message();
  }
  if (err) {
    if (!reported)
      rt->post([err](core_state& st) { st.emit_error(err); });
    // Every attempt is an error event; the log gets the first failure, a changed reason
    // and a periodic summary (failure_log.hh), not a line per attempt.
    std::optional<std::string> line;
    {
      std::lock_guard<std::mutex> guard{mtx};
      line = out->failures.failed(err.message(),
                                  retry ? "retrying every " + retry_text(out->retry) : "",
                                  std::chrono::steady_clock::now());
    }
    if (line)
      io.get_logger().write(log_level::warning, component, *line);
    if (!retry)
      report(out, err);
  }
  if (!retry)
    return;
  out->timer.expires_after(out->retry);
  out->timer.async_wait([this, self = shared_from_this(), out](boost::system::error_code ec) {
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

void peer_manager_impl::inbound_failed(const std::string& address, const std::string& reason) {
  auto now = std::chrono::steady_clock::now();
  std::optional<std::string> line;
  {
    std::lock_guard<std::mutex> guard{mtx};
    auto i = inbound_failures.find(address);
    if (i == inbound_failures.end()) {
      if (inbound_failures.size() >= max_inbound_failure_logs) {
        // Make room: forget the address logged longest ago.
        auto oldest = inbound_failures.begin();
        for (auto j = inbound_failures.begin(); j != inbound_failures.end(); ++j)
          if (j->second.last_logged() < oldest->second.last_logged())
            oldest = j;
        inbound_failures.erase(oldest);
      }
      i = inbound_failures.emplace(address, failure_log{}).first;
    }
    line = i->second.failed(reason, "", now);
  }
  if (line)
    io.get_logger().write(log_level::warning, component, *line);
}

void peer_manager_impl::inbound_succeeded(const std::string& address) {
  std::optional<std::string> line;
  {
    std::lock_guard<std::mutex> guard{mtx};
    auto i = inbound_failures.find(address);
    if (i == inbound_failures.end())
      return;
    line = i->second.succeeded("inbound peering from " + address);
    inbound_failures.erase(i);
  }
  if (line)
    io.get_logger().write(log_level::info, component, *line);
}

void peer_manager_impl::stop() {
  std::vector<std::shared_ptr<connection>> live;
  {
    std::lock_guard<std::mutex> guard{mtx};
    if (shutting_down)
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
    if (!io.on_io_thread())
      detached_cv.wait_for(guard, bye_wait, [this] { return peered.empty(); });
  }
  std::vector<std::shared_ptr<tcp::acceptor>> accs;
  std::vector<std::shared_ptr<outgoing_peering>> outs;
  {
    std::lock_guard<std::mutex> guard{mtx};
    accs = std::move(acceptors);
    outs = std::move(outgoing);
    accept_loops.clear();
    paused.clear();
    peered.clear(); // Connections that did not detach in time end with the I/O runtime.
  }
  // Acceptors and timers belong to the I/O threads: close them there.
  asio::post(io.context(), [accs = std::move(accs), outs = std::move(outs)] {
    for (auto& acc : accs) {
      boost::system::error_code ignored;
      acc->close(ignored);
    }
    for (auto& out : outs)
      out->timer.cancel();
  });
}

// -- connection hooks -------------------------------------------------------------------

void connection::log(log_level level, std::string_view component,
                     std::string_view message) const {
  mgr_->io.get_logger().write(level, component, message);
}

// -- peer_manager -----------------------------------------------------------------------

peer_manager::peer_manager(endpoint_id own, const configuration& cfg, io_runtime& io,
                           std::shared_ptr<core_runtime> rt, std::function<uint64_t()> next_id,
                           std::shared_ptr<security::runtime> access)
  : impl_(std::make_shared<peer_manager_impl>(own, cfg, io, std::move(rt), std::move(next_id),
                                              std::move(access))) {
}

peer_manager::~peer_manager() {
  shutdown();
}

expected<uint16_t> peer_manager::listen(const std::string& address, uint16_t port) {
  if (auto tls = impl_->tls(); !tls)
    return tls.error_value();
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(address.empty() ? "0.0.0.0" : address, ec);
  if (ec)
    return error{ec::invalid_config, "invalid listen address \"" + address + "\""};
  auto acc = std::make_shared<tcp::acceptor>(impl_->io.context());
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
                 "cannot listen for peerings on " + endpoint_text(address, port) + ": "
                   + ec.message()};
  auto bound = acc->local_endpoint().port();
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    impl_->acceptors.push_back(acc);
  }
  std::weak_ptr<peer_manager_impl> weak_mgr = impl_;
  auto accept = std::make_shared<std::function<void()>>();
  std::weak_ptr<std::function<void()>> weak_accept = accept;
  auto& ioc = impl_->io.context();
  *accept = [&ioc, weak_mgr, acc, weak_accept] {
    acc->async_accept(asio::make_strand(ioc), [weak_mgr, acc, weak_accept](
                                                     boost::system::error_code ec,
                                                     tcp::socket sock) {
      if (ec == asio::error::operation_aborted || !acc->is_open())
        return;
      if (!ec) {
        sock.set_option(tcp::no_delay{true}, ec);
        auto mgr = weak_mgr.lock();
        if (!mgr)
          return;
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
  asio::post(impl_->io.context(), [accept] { (*accept)(); });
  impl_->io.get_logger().write(log_level::info, component,
                               "listening on " + endpoint_text(address, bound));
  return bound;
}

void peer_manager::peer(const std::string& host, uint16_t port, timespan retry,
                        std::function<void(error)> done) {
  auto out = std::make_shared<outgoing_peering>(impl_->io.context(), host, port, retry,
                                                std::move(done));
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
  if (auto tls = impl_->tls(); !tls) {
    impl_->report(out, tls.error_value());
    return;
  }
  asio::post(impl_->io.context(), [mgr = impl_, out] { mgr->dial(out); });
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
    result.push_back(peer_record{id, c->address(), c->port(), c->outbound(), c->id(),
                                 c->secure(), c->counters().load(), c->writes_through()});
  return result;
}

std::vector<dial_record> peer_manager::pending_dials() const {
  std::vector<dial_record> result;
  std::lock_guard<std::mutex> guard{impl_->mtx};
  for (auto& out : impl_->outgoing) {
    if (out->removed)
      continue;
    // Peered through this dial, or through the remote's own dial (ours was redundant).
    auto conn = out->conn.lock();
    bool peered = !out->remote.is_nil() && impl_->peered.count(out->remote) != 0;
    for (auto& [id, c] : impl_->peered)
      peered = peered || (conn && c == conn);
    if (!peered)
      result.push_back(
        dial_record{out->host, out->port, conn != nullptr, out->remote, out->last_error});
  }
  return result;
}

control_counts peer_manager::control_totals() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  auto result = impl_->ended_control;
  for (auto& [id, c] : impl_->peered)
    result += c->counters().load();
  return result;
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
