#pragma once

// server_impl: what the sessions of one http_server share (see server.hh). Private to web/.
//
// Threads: the acceptor and every session run on strands of the runtime's io_context; the
// session table is guarded by `mtx`; `gate` lets other threads (the core, queue callbacks)
// post to a session's strand only while the server runs, so that nothing reaches a strand
// after stop() returned and the endpoint may destroy the io_context next.

#include "broker/internal/io/gate.hh"
#include "broker/internal/web/server.hh"
#include "broker/internal/ops/status.hh"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace boost::asio::ssl {
class context;
} // namespace boost::asio::ssl

namespace broker::internal {

class ws_session;

class server_impl : public http_server, public std::enable_shared_from_this<server_impl> {
public:
  server_impl(io_runtime& io, std::shared_ptr<core_runtime> rt,
              std::function<uint64_t()> next_id, http_options opts);

  uint16_t port() const noexcept override { return bound_port; }

  web_socket_counters counters() const override;

  /// Counts a client turned away.
  void reject(client_reject why) noexcept {
    rejected[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  }

  /// Counts a rejected client message; true if it may be logged now (at most one line a
  /// second per server, so a client that sends garbage in a loop cannot flood the log).
  /// `suppressed` gets how many rejections went unlogged since the last line.
  bool reject_input(uint64_t& suppressed) noexcept;

  /// Records (or, with an empty optional, forgets) the application name of client `id`.
  void set_app(uint64_t id, const std::string* app);

  void stop() override;

  /// Starts the ping sweep (broker.web-socket.ping-interval > 0): one timer for the whole
  /// server that hands every session a tick each interval (ws_session::ping_tick()), so
  /// that an idle client holds no timer and no pending timer operation of its own.
  void start_pings();

  /// Accepts connections until stop().
  void accept();

  /// Posts `f` to `exec` while the server runs (see the file comment).
  template <class Executor, class F>
  void post(const Executor& exec, F&& f) {
    gate.pass([&] { boost::asio::post(exec, std::forward<F>(f)); });
  }

  /// Registers an upgraded session; false once the server stopped.
  bool track(const std::shared_ptr<ws_session>& session);

  /// Pre: the caller holds its own reference to the session.
  void untrack(const ws_session* session);

  io_runtime& io;
  boost::asio::ip::tcp::acceptor acc;
  std::shared_ptr<core_runtime> rt;
  std::function<uint64_t()> next_id;
  http_options opts;
  boost::asio::ssl::context* tls = nullptr; ///< wss:// context, or null (ws://).
  internal::gate gate;
  uint16_t bound_port = 0;
  std::atomic<size_t> clients{0};
  rate_tracker rates; ///< For /v1/status.
  std::array<std::atomic<uint64_t>, num_client_rejects> rejected{};
  std::atomic<uint64_t> rejected_inputs{0};
  std::atomic<uint64_t> ping_timeouts{0};

private:
  mutable std::mutex mtx;
  std::condition_variable gone; ///< Signalled when `live` becomes empty.
  /// Strands for new connections, handed out in turn (accept() only, one at a time): a
  /// strand of its own cost every connection about 140 bytes (its implementation, the
  /// shared_ptr block, the service's bookkeeping). Sharing one serializes a few
  /// connections' handlers, which changes nothing with one I/O thread and leaves many
  /// more strands than threads otherwise.
  static constexpr size_t num_strands = 64;
  std::vector<boost::asio::strand<boost::asio::io_context::executor_type>> strands;
  size_t next_strand = 0;
  /// The ping sweep's timer, on its own strand (stop() cancels it there). Null: no pings.
  std::unique_ptr<boost::asio::steady_timer> ping_timer;
  void arm_ping_sweep();
  void ping_sweep();
  bool stopped = false;
  /// Every session from upgrade to finish(). A session that stopped reading because its
  /// inbox is full has no pending operation, so this is what keeps it alive then.
  std::unordered_map<const ws_session*, std::shared_ptr<ws_session>> live;
  /// Attached clients' X-Application-Name by handler id (guarded by mtx).
  std::unordered_map<uint64_t, std::string> apps;
  /// Rate limit of the rejected-input log lines (milliseconds of the steady clock).
  std::atomic<int64_t> last_reject_log{0};
  std::atomic<uint64_t> unlogged_rejects{0};
};

} // namespace broker::internal
