#pragma once

// connection: one peering TCP connection (doc/protocol/peering.md), from the TLS handshake
// through the peering handshake to phase 3. Private to peering/.
//
// Owner: runs on its own strand; the peer manager's tables, the send queue's ready callback
// and pending operations keep it alive. The manager calls in from other threads only
// through the public members, which post to the strand.
//
// Phase 3:
//   - First, the origin-v1 probe (wire.hh), sent once the peer's first frame has been
//     answered, or after a quiet spell as long as the handshake took (50 ms to 1 s): a
//     Broker peer that pings first gets its pong first. Data waits until the peer's
//     answer, so that every data frame already has the right format.
//   - Input in batches, run to completion: a read takes what the socket has (up to 64 KiB);
//     every complete frame is decoded on the strand, and the strand routes the data and
//     command messages itself (core/net_input.hh, core/router.hh). A routing update is a
//     barrier: the messages before it are routed, then the core applies it, and only then
//     are the frames behind it routed. While a `block` sink lacks room the connection stops
//     reading: TCP carries the back-pressure.
//   - Output in gathered writes: pongs, the pending routing update and every queued message
//     go out in one system call; a message's frame header is built per connection, its
//     payload (the value bytes, encoded once per message) is referenced, not copied.
//   - Write coalescing (broker.peer-write-delay): a peering that streams without hearing
//     back writes at most once per delay: what arrives meanwhile goes out in the next
//     write. So a stream of single events costs the receiver one wake-up per delay, not one
//     per event. Once a frame arrived from the peer since our last write (a pong, an
//     answer, a ping), the next write goes at once: an exchange is never held. Nor is a
//     burst: once a quarter of the queue (at most 64 messages) waits, it goes at once.
//   - Write-through (plain TCP): when a message reaches an idle connection that would not
//     hold it (an exchange: the peer spoke since our last write), the thread that routed
//     it (an application's publish, another connection's strand) writes it to the socket
//     itself, without waking this strand: a round trip wakes two threads fewer. The
//     strand arms this (`direct_ok_`) only while it has nothing in flight, no control
//     frame waiting, is attached, not probing, not closing; `wmtx_` makes the write path
//     exclusive: the strand's write loop and closing take it, a routing thread only
//     tries it (and posts to the strand as before when it cannot have it). access_ belongs
//     to the strand: the strand arms write-through only while deliveries need no access
//     check (no filtered subscription, rules picked up), remembers the rules' generation,
//     and disarms before a filter that needs checks reaches the core; a routing thread
//     writes through only while the rules in force still have that generation (one atomic
//     load) and never touches access_.
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
#include "broker/internal/io/gather.hh"
#include "broker/internal/io/stream.hh"
#include "broker/internal/peering/handshake.hh"
#include "broker/internal/peering/peer_manager.hh"
#include "broker/internal/peering/wire.hh"
#include "broker/internal/security/connection_access.hh"

#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <optional>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
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

class connection : public std::enable_shared_from_this<connection> {
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

  /// The send queue's ready callback: writes through on the calling thread where it may
  /// (see the file comment), else schedules a write on the strand. Any thread.
  void schedule_write();

  /// Resumes routing input once the sink it waited for has room (its waker).
  void resume_input();

  /// The core applied (and published) what this connection waited for: its attach or a
  /// routing update. Any thread.
  void core_caught_up();

  const endpoint_id& remote() const noexcept { return remote_; }
  const std::string& address() const noexcept { return address_; }
  uint16_t port() const noexcept { return port_; }
  bool outbound() const noexcept { return role_ == handshake::role::dialer; }
  uint64_t id() const noexcept { return id_; }
  bool secure() const noexcept { return conn_.secure(); }
  const control_counters& counters() const noexcept { return counters_; }

  /// Writes made by a routing thread itself (write-through, see the file comment).
  uint64_t writes_through() const noexcept {
    return writes_through_.load(std::memory_order_relaxed);
  }
  const std::shared_ptr<outgoing_peering>& outgoing() const noexcept { return outgoing_; }

  /// Called by the manager while attaching (under its mutex).
  void set_attachment(uint64_t id, std::shared_ptr<send_queue> out,
                      std::unique_ptr<net_input> in);

  /// What this connection routed (for the core's status page).
  std::shared_ptr<source_stats> input_stats() const { return in_ ? in_->stats() : nullptr; }

  /// The filter we sent in the handshake.
  const filter_type& sent_filter() const noexcept { return sent_filter_; }
  const filter_type& remote_filter() const noexcept { return remote_filter_; }

private:
  /// Writes through the endpoint's logger (defined in peer_manager.cc).
  void log(log_level level, std::string_view component, std::string_view message) const;

  void do_start();

  // -- reading
  void read_more();
  std::string closed_text() const;
  void on_read(const boost::system::error_code& ec, size_t n);
  void handle_frames();
  bool handle_handshake_frame(std::string_view payload);
  void handle_node_frame(std::string_view payload);
  void handle_data(const wire::node_message_view& msg);
  void handle_command(const wire::node_message_view& msg);
  void handle_routing_update(std::string_view payload);
  void send_probe();
  void arm_probe_timer(int lively_windows);
  void learn_extension(bool supported, std::string_view how);
  void flush_input();
  void after_update();
  bool input_blocked() const noexcept;
  void post_to_core(std::function<void(core_state&)> task);

  // -- access control
  bool admit();
  filter_type checked_filter(const filter_type& requested);
  void check_access();
  void tell_access(const std::vector<std::string>& notices);

  // -- writing
  bool should_hold();
  bool write_through();
  void arm_write_through();
  size_t hold_limit() const noexcept;
  void send_raw(std::string bytes);
  void write_more();
  bool fill_batch();
  /// What take_into_gather() found in the send queue.
  enum class take_result : uint8_t { closed, idle, ready };
  /// Moves what the send queue holds into gather_ (data frames, a routing update). Under
  /// wmtx_, from the strand's fill_batch() or a routing thread's write_through().
  take_result take_into_gather(bool check_access);
  /// `check`: ask access_ whether the item may go (the strand); false: write-through,
  /// armed only while no delivery needs a check.
  void append_data(const send_item& item, bool check = true);
  /// Clears direct_ok_ if deliveries now need access checks (after a subscribe()).
  void disarm_if_checked();
  void take_pending_data();

  // -- closing
  void do_unpeer(const std::string& reason);
  void fail(const std::string& reason, bool handshake_error);
  void exceeded(std::string_view option, size_t limit, const std::string& what);
  void finish_close(peer_end why, const std::string& reason, bool limit = false);
  void detach_when_routed();
  void on_outgoing_closed();

  std::shared_ptr<peer_manager_impl> mgr_;
  stream conn_;
  boost::asio::steady_timer timer_;
  handshake::role role_;
  std::shared_ptr<outgoing_peering> outgoing_;
  std::string address_;
  uint16_t port_ = 0;

  std::unique_ptr<handshake> hs_;
  wire::frame_reader reader_;
  std::array<char, 64 * 1024> rbuf_;
  filter_type sent_filter_;
  filter_type remote_filter_;
  endpoint_id remote_;
  bool probing_ = false;   // Waiting to learn whether the peer speaks origin-v1: no data yet.
  bool extension_ = false; // The peer speaks origin-v1 (wire.hh).
  bool probe_sent_ = false;
  uint64_t frames_in_ = 0; // Operation frames received (the probe timer's liveness test).
  std::chrono::steady_clock::time_point hs_started_; // When the peering handshake began.
  boost::asio::steady_timer probe_timer_;
  boost::asio::steady_timer hold_timer_; // Ends a held write (should_hold()).
  bool tls_ready_ = false;
  bool attached_ = false;
  bool redundant_ = false;
  ec fail_code_ = ec::peer_invalid; // Code of a handshake failure's error event.
  error last_error_;

  uint64_t id_ = 0;
  std::shared_ptr<send_queue> out_;
  std::unique_ptr<net_input> in_;
  std::optional<filter_type> update_; // A routing update behind the pending messages.
  bool barrier_ = false; // The core applies the attach or an update; frames behind it wait.
  std::optional<std::pair<peer_end, std::string>> detach_; // Sent once the input is routed.
  bool detach_limit_ = false;
  uint64_t malformed_ = 0;
  control_counters counters_;
  std::unique_ptr<security::connection_access> access_; // Null without access control.

  bool reading_ = false;
  bool read_paused_ = false; // Handshake paused, or routing waits for room in a sink.
  bool writing_ = false;
  bool holding_ = false; // Gathering writes until hold_timer_ fires.
  std::atomic<bool> heard_{true}; // A frame arrived since our last data write.
  std::chrono::steady_clock::time_point last_write_; // Of data (not control frames).
  bool closing_ = false;     // Unpeering: BYE sent, waiting for its pong.
  bool closed_ = false;
  bool close_after_write_ = false;
  std::string close_reason_;
  std::string bye_token_;

  std::string ctrl_;     // Control frames waiting (handshake, pongs, BYE), in order.
  send_batch batch_;     // Messages of the write in flight.
  gather_buffer gather_; // The write in flight.
  std::string tls_buf_;  // Its linear copy (TLS only).
  std::string head_;     // Scratch for one frame header.

  // Write-through (see the file comment). `wmtx_` guards the write path (gather_, batch_,
  // head_, last_write_, the send queue's consumer side, closing the socket); recursive,
  // because the write loop may close the connection.
  std::recursive_mutex wmtx_;
  std::atomic<bool> direct_ok_{false}; // Set and cleared under wmtx_, by the strand.
  uint64_t through_generation_ = 0; // Rules generation when armed; under wmtx_.
  std::atomic<uint64_t> writes_through_{0}; // Written under wmtx_; read by the status page.
};

} // namespace broker::internal
