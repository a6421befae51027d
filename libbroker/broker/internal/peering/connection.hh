#pragma once

// connection: one peering TCP connection (doc/protocol/peering.md), from the TLS handshake
// through the peering handshake to phase 3. Private to peering/.
//
// Owner: runs on its own strand; the peer manager's tables, the send queue's ready callback
// and pending operations keep it alive. The manager calls in from other threads only
// through the public members, which post to the strand. The skeleton (reading into the
// I/O thread's buffer, routing, barriers, the gathered write loop, write coalescing,
// write-through, attach and detach) is net/channel.hh; this class is the peering protocol
// on it.
//
// Phase 3:
//   - First, the origin-v1 probe (wire.hh), sent once the peer's first frame has been
//     answered, or after a quiet spell as long as the handshake took (50 ms to 1 s): a
//     Broker peer that pings first gets its pong first. Data waits until the peer's
//     answer, so that every data frame already has the right format.
//   - Input in batches, run to completion: every complete frame a read brought is decoded
//     on the strand straight from the read buffer, and the strand routes the data and
//     command messages itself (core/net_input.hh, core/router.hh). A routing update is a
//     barrier: the messages before it are routed, then the core applies it, and only then
//     are the frames behind it routed. While a `block` sink lacks room the connection stops
//     reading: TCP carries the back-pressure.
//   - Output in gathered writes: pongs, the pending routing update and every queued message
//     go out in one system call; a message's frame header is built per connection, its
//     payload (the value bytes, encoded once per message) is referenced, not copied.
//   - Write coalescing (broker.peer-write-delay, the channel's hold): a peering that
//     streams without hearing back writes at most once per delay: what arrives meanwhile
//     goes out in the next write. So a stream of single events costs the receiver one
//     wake-up per delay, not one per event. Once a frame arrived from the peer since our
//     last write (a pong, an answer, a ping), the next write goes at once: an exchange is
//     never held. Nor is a burst: once a quarter of the queue (at most 64 messages) waits,
//     it goes at once. Never while probing, closing, or with control frames waiting.
//   - Write-through (plain TCP, the channel's): when a message reaches an idle connection
//     that would not hold it (an exchange), the thread that routed it writes it to the
//     socket itself, without waking this strand: a round trip wakes two threads fewer.
//     The peering allows it (may_write_through()) only while attached, not probing, not
//     closing, and while deliveries need no access check (no filtered subscription, rules
//     picked up); it remembers the rules' generation, and disarms before a filter that
//     needs checks reaches the core; a routing thread writes through only while the rules
//     in force still have that generation (one atomic load) and never touches access_.
//   - Budgets (doc/configuration.md): a peer that announces more prefixes than
//     broker.peer-max-subscriptions, or leaves more than broker.max-pending-control-bytes of
//     pongs unread, is cut off with an error event naming the option (counted as a limit
//     disconnect); its input waiting for room is at most what one read decoded.
//   - Access control (doc/security.md), with the endpoint's rules: after TLS the peer's
//     verified certificate (or nothing: anonymous) is admitted or refused with a
//     drop_conn naming the reason; its filter (handshake and routing updates) is checked
//     before the core gets it; the router asks access_ once per run of what it publishes;
//     deliveries are checked under filtered prefixes; refusals become error events. After
//     a reload: new subscriptions for the core, or an unpeer if the identity was revoked.
//   - The end (loss, unpeer, overflow) reaches the core after the last message was routed
//     (a parked connection finishes routing first). A failed write ends the connection at
//     once; closing never waits on a peer that does not read for longer than the BYE
//     timeout.

#include "broker/internal/config/logger.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/internal/core/net_input.hh"
#include "broker/internal/net/channel.hh"
#include "broker/internal/peering/handshake.hh"
#include "broker/internal/peering/peer_manager.hh"
#include "broker/internal/peering/wire.hh"
#include "broker/internal/security/connection_access.hh"

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace broker::internal {

class core_state;
struct outgoing_peering;
struct peer_manager_impl;

/// Control frames a connection received, counted on its strand and read by the status page
/// from any thread (one writer: relaxed loads and stores, no read-modify-write).
class control_counters {
public:
  void routing_update() noexcept { bump(routing_updates_); }
  void ping() noexcept { bump(pings_); }
  void pong() noexcept { bump(pongs_); }

  control_counts load() const noexcept {
    return control_counts{routing_updates_.load(std::memory_order_relaxed),
                          pings_.load(std::memory_order_relaxed),
                          pongs_.load(std::memory_order_relaxed)};
  }

private:
  static void bump(std::atomic<uint64_t>& x) noexcept {
    x.store(x.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  std::atomic<uint64_t> routing_updates_{0};
  std::atomic<uint64_t> pings_{0};
  std::atomic<uint64_t> pongs_{0};
};

class connection : public queued_channel<send_item> {
public:
  connection(std::shared_ptr<peer_manager_impl> mgr, boost::asio::ip::tcp::socket sock,
             handshake::role role,
             std::shared_ptr<outgoing_peering> out);

  /// Starts the TLS handshake (if configured), then the peering handshake.
  void start();

  /// Graceful unpeer: BYE, wait for its pong (bounded), close.
  void unpeer(std::string reason);

  /// Paused redundant handshake: the other one finished, send drop_conn 39 and close.
  void drop_paused();

  // schedule_write() (the send queue's ready callback, writing through where it may),
  // resume_input(), core_caught_up(), id(), input_stats() and writes_through() are the
  // channel's.

  const endpoint_id& remote() const noexcept { return remote_; }
  const std::string& address() const noexcept { return address_; }
  uint16_t port() const noexcept { return port_; }
  bool outbound() const noexcept { return role_ == handshake::role::dialer; }
  bool secure() const noexcept { return conn_->secure(); }
  const control_counters& counters() const noexcept { return counters_; }
  const std::shared_ptr<outgoing_peering>& outgoing() const noexcept { return outgoing_; }

  /// Called by the manager while attaching (under its mutex).
  void set_attachment(uint64_t id, std::shared_ptr<send_queue> out,
                      std::unique_ptr<net_input> in);

  /// The filter we sent in the handshake.
  const filter_type& sent_filter() const noexcept { return sent_filter_; }
  const filter_type& remote_filter() const noexcept { return remote_filter_; }

private:
  std::shared_ptr<connection> self() {
    return std::static_pointer_cast<connection>(shared_from_this());
  }

  /// Writes through the endpoint's logger (defined in peer_manager.cc).
  void log(log_level level, std::string_view component, std::string_view message) const;

  void do_start();

  // -- reading (channel hooks and the frames)
  size_t decode(char* data, size_t size) override;
  void on_read_error(const boost::system::error_code& ec) override;
  bool hold_input() const noexcept override;
  void on_routed() override; // Posts a pending routing update; checks access.
  std::string closed_text() const;
  bool handle_handshake_frame(std::string_view payload);
  void handle_node_frame(std::string_view payload);
  void handle_data(const wire::node_message_view& msg);
  void handle_command(const wire::node_message_view& msg);
  void handle_routing_update(std::string_view payload);
  void send_probe();
  void arm_probe_timer(int lively_windows);
  void learn_extension(bool supported, std::string_view how);
  void post_to_core(std::function<void(core_state&)> task);

  // -- access control
  bool admit();
  filter_type checked_filter(const filter_type& requested);
  void check_access();
  void tell_access(const std::vector<std::string>& notices);

  // -- writing (channel hooks)
  bool fill(gather_buffer& out) override;
  void on_write_error(const boost::system::error_code& ec) override;
  void on_drained() override;
  bool may_hold() const noexcept override;
  bool may_write_through() override;
  bool through_allowed() const noexcept override;
  take_result fill_through(gather_buffer& out) override;
  void send_raw(std::string bytes);
  /// Moves what the send queue holds into `out` (data frames, a routing update). Under the
  /// write lock, from the strand's fill() or a routing thread's fill_through().
  take_result take_into_gather(gather_buffer& out, bool check_access);
  /// `check`: ask access_ whether the item may go (the strand); false: write-through,
  /// armed only while no delivery needs a check.
  void append_data(gather_buffer& out, const send_item& item, bool check = true);
  /// Disarms write-through if deliveries now need access checks (after a subscribe()).
  void disarm_if_checked();
  void take_pending_data();

  // -- closing
  void do_unpeer(const std::string& reason);
  void fail(const std::string& reason, bool handshake_error);
  void exceeded(std::string_view option, size_t limit, const std::string& what);
  void finish_close(peer_end why, const std::string& reason, bool limit = false);
  void detach() override; // Tells the core of the end once the input is routed.
  void on_outgoing_closed();

  std::shared_ptr<peer_manager_impl> mgr_;
  boost::asio::steady_timer timer_;
  handshake::role role_;
  std::shared_ptr<outgoing_peering> outgoing_;
  std::string address_;
  uint16_t port_ = 0;

  std::unique_ptr<handshake> hs_;
  wire::frame_reader reader_; // Frame rules and state; the bytes are the channel's.
  filter_type sent_filter_;
  filter_type remote_filter_;
  endpoint_id remote_;
  bool probing_ = false;   // Waiting to learn whether the peer speaks origin-v1: no data yet.
  bool extension_ = false; // The peer speaks origin-v1 (wire.hh).
  bool probe_sent_ = false;
  uint64_t frames_in_ = 0; // Operation frames received (the probe timer's liveness test).
  std::chrono::steady_clock::time_point hs_started_; // When the peering handshake began.
  boost::asio::steady_timer probe_timer_;
  bool tls_ready_ = false;
  bool attached_ = false;
  bool redundant_ = false;
  ec fail_code_ = ec::peer_invalid; // Code of a handshake failure's error event.
  error last_error_;

  std::optional<filter_type> update_; // A routing update behind the pending messages.
  std::optional<std::pair<peer_end, std::string>> detach_; // Sent once the input is routed.
  bool detach_limit_ = false;
  uint64_t malformed_ = 0;
  control_counters counters_;
  std::unique_ptr<security::connection_access> access_; // Null without access control.

  bool closing_ = false;     // Unpeering: BYE sent, waiting for its pong.
  bool close_after_write_ = false;
  std::string close_reason_;
  std::string bye_token_;
  std::string head_;     // Scratch for one frame header (under the write lock).
  uint64_t through_generation_ = 0; // Rules generation when write-through was armed.
};

} // namespace broker::internal
