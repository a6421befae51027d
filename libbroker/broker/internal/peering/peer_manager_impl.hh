#pragma once

// peer_manager_impl: the tables of the peer manager (see peer_manager.hh), shared with the
// connections. Private to peering/.
//
// Threads: the tables are guarded by `mtx`; connections call in from their strands, the
// endpoint from application threads.

#include "broker/configuration.hh"
#include "broker/internal/io/io_runtime.hh"
#include "broker/internal/peering/failure_log.hh"
#include "broker/internal/peering/handshake.hh"
#include "broker/internal/peering/peer_manager.hh"
#include "broker/time.hh"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace broker::internal {

class connection;
class core_runtime;

/// One peer() request: re-dialed until unpeered.
struct outgoing_peering {
  outgoing_peering(boost::asio::io_context& ioc, std::string h, uint16_t p, timespan r,
                   std::function<void(error)> d)
    : host(std::move(h)), port(p), retry(r), done(std::move(d)), timer(ioc) {}

  std::string host;
  uint16_t port;
  timespan retry;
  std::function<void(error)> done; // Reset once called.
  boost::asio::steady_timer timer;
  bool removed = false;
  std::weak_ptr<connection> conn;
  endpoint_id remote; // Known after the first successful handshake.
  std::string last_error; // Why the last attempt failed (guarded by mtx), for the status.
  failure_log failures; // Which failed attempts get a log line (guarded by the mutex).
};

/// The peer status Broker keeps per remote id (doc/protocol/peering.md §3.6), reduced to what
/// decisions need.
enum class remote_state : uint8_t { connecting, peered };

struct peer_manager_impl : std::enable_shared_from_this<peer_manager_impl> {
  peer_manager_impl(endpoint_id own_id, const configuration& cfg, io_runtime& io,
                    std::shared_ptr<core_runtime> runtime, std::function<uint64_t()> ids,
                    std::shared_ptr<security::runtime> access);

  /// Unpeers everything (BYE, bounded), closes acceptors and timers.
  void stop();

  // -- status table (doc/protocol/peering.md §3.6) ---------------------------------------------

  handshake::decision proceed(connection* conn, const endpoint_id& remote, bool originator);
  bool attach(const std::shared_ptr<connection>& conn);
  void detached(connection* conn, const endpoint_id& remote, bool was_attached);

  // -- dialing ------------------------------------------------------------------------

  void dial(std::shared_ptr<outgoing_peering> out);
  /// A dial attempt ended without a peering (`err` empty: a peering ended). `reported`:
  /// the connection already emitted the error event.
  void dial_failed(const std::shared_ptr<outgoing_peering>& out, const error& err,
                   bool reported = false);
  void report(const std::shared_ptr<outgoing_peering>& out, const error& err);

  /// Logs a failed inbound handshake from `address`, unless it repeats one logged lately
  /// (failure_log.hh: one line, then a summary per interval).
  void inbound_failed(const std::string& address, const std::string& reason);

  /// An inbound peering from `address` came up: logs the failures it ends, if any.
  void inbound_succeeded(const std::string& address);

  /// The TLS context for a new connection (null: plain TCP), or the setup error.
  expected<boost::asio::ssl::context*> tls() { return io.tls(); }

  io_runtime& io;
  const endpoint_id own;
  const size_t peer_capacity;
  const overflow_policy peer_policy;
  const size_t max_depth;
  const size_t max_subscriptions;  ///< broker.peer-max-subscriptions.
  const size_t max_control_bytes;  ///< broker.max-pending-control-bytes.
  const std::chrono::microseconds write_delay; ///< broker.peer-write-delay.
  std::shared_ptr<core_runtime> rt;
  std::function<uint64_t()> next_id;
  const std::shared_ptr<security::runtime> access; ///< Access control; null: none.

  mutable std::mutex mtx;
  std::condition_variable detached_cv;
  bool shutting_down = false;
  filter_type filter; // For new handshakes.
  std::map<endpoint_id, remote_state> status;
  std::map<endpoint_id, connection*> in_flight; // Handshake that set `connecting`.
  std::map<endpoint_id, std::vector<std::weak_ptr<connection>>> paused;
  std::map<endpoint_id, std::shared_ptr<connection>> peered;
  std::vector<std::shared_ptr<outgoing_peering>> outgoing;
  std::vector<std::shared_ptr<boost::asio::ip::tcp::acceptor>> acceptors;
  std::vector<std::shared_ptr<std::function<void()>>> accept_loops;
  uint64_t bye_counter = 0;
  control_counts ended_control; // Control frames of connections that ended.
  std::map<std::string, failure_log> inbound_failures; // By remote address (bounded).
};

} // namespace broker::internal
