#pragma once

// uplink: one of node mode's two sockets (node_client.hh): connects to the forwarder,
// runs a zmq_link on the connection, and connects again when it fails or closes.
//
// Owner and threads: the node_client holds both uplinks; pending handlers keep one alive.
// Everything but start(), stop() and status() runs on the uplink's strand, which is also
// its links' (the socket's executor). The counters and the current link are under a mutex
// for status() (any thread).
//
// Reconnecting, like libzmq (ZMQ_RECONNECT_IVL): the next attempt after 100 ms, doubled
// after each one that failed, at most 2 s; back to 100 ms once a connection lasted 2 s (not
// at every handshake: a forwarder that fails each connection at once is retried every 2 s).
// The host is resolved at each attempt. An attempt (name lookup and TCP connect) that takes
// longer than broker.zeromq.connect-timeout fails like any other (a forwarder host that
// drops our SYNs is tried again after the backoff, not after the OS's 2 minutes).
//
// Logging, once per outage: the first line of an outage (the link's close, or the first
// attempt that failed) is written; further failures of it are counted, not logged. The
// first connection is logged at once; a reconnection once it has lasted 2 s ("connected
// again"), which ends the outage, so a flapping forwarder writes two lines, not two a cycle.

#include "broker/internal/config/logger.hh"
#include "broker/internal/io/gate.hh"
#include "broker/internal/io/io_runtime.hh"
#include "broker/internal/zeromq/forwarder.hh"
#include "broker/internal/zeromq/node_client.hh"
#include "broker/internal/zeromq/zmq_link.hh"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace broker::internal::zeromq {

/// What the links and the bridge of node mode share (they may outlive the node_client).
struct node_hub {
  forwarder out; ///< our XPUB connection subscribes, the bridge publishes
  forwarder in;  ///< our XSUB connection publishes, the bridge subscribes
  gate g;
};

class uplink : public std::enable_shared_from_this<uplink> {
public:
  /// `base`: the links' options (role, session type, mechanism and keys, queue).
  uplink(io_runtime& io, std::shared_ptr<node_hub> hub, connect_target target,
         link_options base, std::chrono::milliseconds connect_timeout);

  /// Starts connecting. Once.
  void start();

  /// Closes the link and stops reconnecting. Any thread; before the hub's gate closes.
  void stop();

  /// The connection for the status page. Any thread.
  link_status status() const;

private:
  using tcp = boost::asio::ip::tcp;

  void log(log_level lvl, const std::string& text);
  void connect();
  void on_resolved(boost::system::error_code ec, tcp::resolver::results_type rs);
  void on_connected(boost::system::error_code ec);
  void on_attempt_timeout(uint64_t attempt);
  std::string attempt_error(const std::string& what) const;
  void link_log(bool is_error, const std::string& text);
  void on_link_ready();
  void on_link_closed(bool failed);
  void attempt_failed(const std::string& why);
  void retry_later();
  bool stable() const;
  bool is_stopped() const;

  io_runtime& io_;
  std::shared_ptr<node_hub> hub_;
  connect_target target_;
  link_options base_;
  std::string name_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;        ///< The next attempt, or the current one's end.
  boost::asio::steady_timer stable_timer_; ///< When a reconnection counts as lasting.
  tcp::resolver resolver_;
  std::optional<tcp::socket> socket_; ///< While connecting.
  std::chrono::milliseconds connect_timeout_;
  // Strand only.
  uint64_t attempt_ = 0;        ///< Counts connect() calls.
  bool attempting_ = false;     ///< Resolving or connecting.
  bool timed_out_ = false;      ///< The current attempt was cut short by connect_timeout_.
  size_t backoff_ms_ = reconnect_min_ms;
  bool quiet_ = false; ///< In an outage that was logged: its further failures are not.
  std::optional<std::chrono::steady_clock::time_point> up_since_; ///< The link's handshake

  mutable std::mutex mtx_;
  bool stopped_ = false;
  std::shared_ptr<zmq_link> link_;
  std::string state_ = "connecting";
  std::string peer_;
  std::string last_error_;
  uint64_t connects_ = 0;
  uint64_t connect_failures_ = 0;
  uint64_t failed_ = 0;
  struct {
    uint64_t in = 0, out = 0, dropped = 0;
  } totals_; ///< Of the closed links.
};

} // namespace broker::internal::zeromq
