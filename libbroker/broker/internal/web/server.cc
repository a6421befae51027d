#include "broker/internal/web/server.hh"

#include "broker/internal/io/io_runtime.hh"
#include "broker/internal/web/http_session.hh"
#include "broker/internal/web/server_impl.hh"
#include "broker/internal/web/ws_session.hh"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace broker::internal {

void ws_session::log(log_level level, std::string_view component,
                     std::string_view message) const {
  srv_->io.get_logger().write(level, component, message);
}

server_impl::server_impl(io_runtime& io, std::shared_ptr<core_runtime> rt,
                         std::function<uint64_t()> next_id, http_options opts)
  : io(io),
    acc(io.context()),
    rt(std::move(rt)),
    next_id(std::move(next_id)),
    opts(std::move(opts)) {
}

std::string_view to_string(client_reject x) noexcept {
  switch (x) {
    case client_reject::handshake:
      return "handshake";
    case client_reject::tls:
      return "tls";
    case client_reject::max_clients:
      return "max_clients";
    case client_reject::application_name:
      return "application_name";
    case client_reject::subscriptions:
      return "subscriptions";
    case client_reject::max_subscriptions:
      return "max_subscriptions";
    case client_reject::authentication:
      return "authentication";
  }
  return "?";
}

web_socket_counters server_impl::counters() const {
  web_socket_counters result;
  result.rejected_inputs = rejected_inputs.load(std::memory_order_relaxed);
  for (size_t i = 0; i < num_client_rejects; ++i)
    result.rejected_clients[i] = rejected[i].load(std::memory_order_relaxed);
  result.ping_timeouts = ping_timeouts.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> guard{mtx};
  result.apps.assign(apps.begin(), apps.end());
  return result;
}

bool server_impl::reject_input(uint64_t& suppressed) noexcept {
  rejected_inputs.fetch_add(1, std::memory_order_relaxed);
  using namespace std::chrono;
  auto now = duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  auto last = last_reject_log.load(std::memory_order_relaxed);
  if (now - last < 1000 || !last_reject_log.compare_exchange_strong(last, now)) {
    unlogged_rejects.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  suppressed = unlogged_rejects.exchange(0, std::memory_order_relaxed);
  return true;
}

void server_impl::set_app(uint64_t id, const std::string* app) {
  std::lock_guard<std::mutex> guard{mtx};
  if (app)
    apps[id] = *app;
  else
    apps.erase(id);
}

void server_impl::start_pings() {
  if (opts.ping_interval_ms == 0)
    return;
  ping_timer = std::make_unique<asio::steady_timer>(asio::make_strand(io.context()));
  asio::post(ping_timer->get_executor(), [self = shared_from_this()] { self->arm_ping_sweep(); });
}

void server_impl::arm_ping_sweep() {
  ping_timer->expires_after(std::chrono::milliseconds{opts.ping_interval_ms});
  ping_timer->async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (ec)
      return;
    if (auto self = weak.lock())
      self->ping_sweep();
  });
}

void server_impl::ping_sweep() {
  std::vector<std::shared_ptr<ws_session>> sessions;
  {
    std::lock_guard<std::mutex> guard{mtx};
    if (stopped)
      return;
    sessions.reserve(live.size());
    for (auto& [key, session] : live)
      sessions.push_back(session);
  }
  for (auto& session : sessions)
    session->ping_tick();
  arm_ping_sweep();
}

void server_impl::stop() {
  std::vector<std::shared_ptr<ws_session>> sessions;
  {
    std::lock_guard<std::mutex> guard{mtx};
    if (stopped)
      return;
    stopped = true;
    for (auto& [key, session] : live)
      sessions.push_back(session);
  }
  asio::post(acc.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ignored;
    self->acc.close(ignored);
  });
  if (ping_timer)
    asio::post(ping_timer->get_executor(), [self = shared_from_this()] {
      self->ping_timer->cancel(); // A sweep that ran meanwhile saw `stopped` or re-armed.
    });
  // Clients see a normal close instead of a dropped connection. On an I/O thread we
  // cannot wait for the handshakes: this thread would have to run them.
  for (auto& session : sessions)
    session->close_for_shutdown();
  sessions.clear();
  std::unique_lock<std::mutex> guard{mtx};
  if (!io.on_io_thread())
    gone.wait_for(guard, shutdown_close_timeout, [this] { return live.empty(); });
  // Whoever is left goes now. The posted aborts keep their sessions alive until they ran;
  // dropping our references breaks the session <-> server cycle even if they never run.
  std::unordered_map<const ws_session*, std::shared_ptr<ws_session>> rest;
  rest.swap(live);
  guard.unlock();
  for (auto& [key, session] : rest)
    session->abort();
  gate.close();
}

bool server_impl::track(const std::shared_ptr<ws_session>& session) {
  std::lock_guard<std::mutex> guard{mtx};
  if (stopped)
    return false;
  live.emplace(session.get(), session);
  return true;
}

void server_impl::untrack(const ws_session* session) {
  std::lock_guard<std::mutex> guard{mtx};
  if (live.erase(session) > 0 && live.empty())
    gone.notify_all();
}

void server_impl::accept() {
  if (strands.empty())
    for (size_t i = 0; i < num_strands; ++i)
      strands.push_back(asio::make_strand(io.context()));
  auto strand = strands[next_strand++ % num_strands];
  acc.async_accept(strand,
                   [self = shared_from_this()](boost::system::error_code ec, tcp::socket sock) {
                     if (ec == asio::error::operation_aborted || !self->acc.is_open())
                       return;
                     if (!ec) {
                       sock.set_option(tcp::no_delay{true}, ec);
                       auto conn = std::make_unique<stream>(std::move(sock), self->tls);
                       std::make_shared<http_session>(self, std::move(conn))->start();
                     }
                     self->accept();
                   });
}

expected<std::shared_ptr<http_server>>
http_server::start(io_runtime& io, std::shared_ptr<core_runtime> rt,
                   std::function<uint64_t()> next_id, const std::string& address,
                   uint16_t port, http_options opts) {
  // Without a rules file no rule can ever apply (a reload reads the same, absent file) and
  // the JSON decoder already refuses reserved topics: no client needs a guard then, which
  // saves each one its connection_access and reload watcher (about 0.75 KiB).
  if (opts.access && opts.access->rules_file().empty())
    opts.access = nullptr;
  auto srv = std::make_shared<server_impl>(io, std::move(rt), std::move(next_id),
                                           std::move(opts));
  if (srv->opts.web_socket) {
    // The same settings as peering (doc/protocol/websocket.md §1): wss:// whenever the runtime has
    // a TLS context, and a broken setup is an error here too.
    auto tls = io.tls();
    if (!tls)
      return tls.error_value();
    srv->tls = *tls;
  }
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(address.empty() ? "0.0.0.0" : address, ec);
  if (ec)
    return error{ec::invalid_config, "invalid listen address \"" + address + "\""};
  tcp::endpoint ep{addr, port};
  srv->acc.open(ep.protocol(), ec);
  if (!ec)
    srv->acc.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec)
    srv->acc.bind(ep, ec);
  if (!ec)
    srv->acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return error{ec::cannot_open_resource, "cannot listen on " + address + ":"
                                             + std::to_string(port) + ": " + ec.message()};
  srv->bound_port = srv->acc.local_endpoint().port();
  asio::post(srv->acc.get_executor(), [srv] { srv->accept(); });
  if (srv->opts.web_socket)
    srv->start_pings();
  std::shared_ptr<http_server> result = srv;
  return result;
}

} // namespace broker::internal
