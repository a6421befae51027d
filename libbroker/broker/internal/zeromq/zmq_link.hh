#pragma once

// zmq_link: one ZeroMQ connection of the node: a ZMTP session (zmtp/session.hh, sans-I/O)
// driven on the connection skeleton (net/channel.hh), attached to the forwarder
// (forwarder.hh) as a publisher (a node's XPUB on our XSUB port) or a subscriber (a node's
// XSUB on our XPUB port).
//
// Owner and threads: the server (server.hh) holds every link until it closes; the link
// runs on its socket's strand. The forwarder reaches it from other strands through
// deliver() and pass_subscription(), which only queue and post.
//
// Output: a bounded queue of shared events (core/mpsc_ring.hh) with the configured policy
// (default drop_oldest); every drop is counted, `disconnect` closes the link. Each write
// gathers the session's control output (greeting, handshake, PONG, subscriptions) and the
// queued events. Under NULL an event is encoded once, by the link it came from
// (zmtp::encode_plain()), and each receiver copies those bytes (small events: one
// contiguous piece per write) or references them (large ones): plain_writer.hh. Events
// without that encoding (the bridge's) and CURVE are encoded per receiver.
//
// Access control (doc/security.md, "ZeroMQ"): with rules configured (`security` set), the
// link admits its peer as an identity (CURVE: by its public key in the session's
// `authorize` hook; NULL: the anonymous identity) and keeps a connection_access on its
// strand: a node's subscriptions enter the forwarder as the rules grant them, its events
// are forwarded only if it may publish on their topic (the last allowed topic is
// remembered, so a run of events on one topic costs a string compare), deliveries under
// a filtered grant are checked before writing. Refusals are counted in the audit and
// logged once per rule.
//
// Errors: a failed session (bad greeting, mechanism, CURVE, oversized frames, flood...),
// a read or write error, a handshake deadline or a missed heartbeat: one log line naming
// the peer and the reason, the link leaves the forwarder and closes, counted.

#include "broker/internal/core/mpsc_ring.hh"
#include "broker/internal/net/channel.hh"
#include "broker/internal/security/connection_access.hh"
#include "broker/internal/zeromq/forwarder.hh"
#include "broker/internal/zmtp/session.hh"

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace broker::internal::zeromq {

/// Which forwarder socket the connection came in on.
enum class side : uint8_t { xsub, xpub };

/// What a link needs besides its socket.
struct link_options {
  side role = side::xsub;
  zmtp::session_config session;
  size_t buffer_size = 1000;
  overflow_policy policy = overflow_policy::drop_oldest;
  size_t heartbeat_ms = 0;
  size_t handshake_ms = 30000; ///< libzmq's ZMQ_HANDSHAKE_IVL
  /// Access control (null: none, everything allowed): the rules runtime, with a rules file.
  std::shared_ptr<security::runtime> security;
  /// broker.zeromq.curve-client-public-key: with `security`, a client presenting it that
  /// no identity lists is admitted as the anonymous identity.
  std::optional<zmtp::key> shared_key;
  /// The peer's address and port (for admission and its log).
  std::string address;
  uint16_t port = 0;
  /// Writes one log line (level warning for errors, info otherwise).
  std::function<void(bool error, const std::string&)> log;
  /// The link's name in logs and status; empty: "<side> connection from <address:port>"
  /// (node mode names its outgoing connections, node_client.hh).
  std::string name;
};

/// Counters of one link (any thread reads them).
struct link_counters {
  std::atomic<uint64_t> messages_in{0};
  std::atomic<uint64_t> messages_out{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> bytes_in{0};
};

class zmq_link : public channel, public link {
public:
  /// `fwd` stays alive as long as the link (the owner's gate `g` lives with it).
  zmq_link(std::unique_ptr<stream> conn, gate* g, std::shared_ptr<forwarder> fwd,
           link_options opts);
  ~zmq_link() override;

  /// Sends the greeting and starts reading. On the strand (or before anything runs).
  void start();

  /// Called once on the strand when the link closed, with whether it failed (the server
  /// forgets it). Set before start().
  void set_on_close(std::function<void(bool failed)> f) { on_close_ = std::move(f); }

  /// Called once on the strand when the handshake completed (node mode: connected). Set
  /// before start().
  void set_on_ready(std::function<void()> f) { on_ready_ = std::move(f); }

  /// Closes the link (any thread).
  void close_async(std::string reason);

  /// "xsub|xpub connection from <address:port>" (or link_options::name)
  const std::string& name() const noexcept { return name_; }

  side role() const noexcept { return opts_.role; }

  const link_counters& stats() const noexcept { return stats_; }

  size_t queue_size() const noexcept { return queue_.size(); }

  /// The Zeek node on the other end, for the status page: its node id (xsub side: the
  /// sender frame of its events; xpub side: its first nodeid subscription) and its name
  /// (from a ZeroMQ::hello it publishes); empty until seen. Any thread.
  std::pair<std::string, std::string> zeek_node() const;

  // -- link -----------------------------------------------------------------------------------
  void deliver(const shared_event& ev) override;
  void deliver(const shared_event* evs, const uint32_t* which, size_t n) override;
  void pass_subscription(bool subscribe, const std::string& prefix) override;

private:
  std::shared_ptr<zmq_link> self() {
    return std::static_pointer_cast<zmq_link>(shared_from_this());
  }

  // -- channel hooks
  size_t decode(char* data, size_t size) override;
  void on_read_error(const boost::system::error_code& ec) override;
  bool fill(gather_buffer& out) override;
  void on_write_error(const boost::system::error_code& ec) override;
  void detach() override {}
  size_t queued() const noexcept override { return queue_.size(); }
  void release_batch() noexcept override { batch_.clear(); }
  void shrink_batch() override;
  size_t batch_bytes() const noexcept override {
    return batch_.capacity() * sizeof(shared_event) + wbuf_.capacity();
  }

  void on_event(zmtp::event& ev);
  void publish_pending();
  void after_push(const push_result& res, bool was_empty);
  zmtp::session_config make_session_config();
  bool admit_key(const zmtp::key& k);
  bool admit_anonymous();
  bool may_publish(std::string_view topic);
  void on_subscription(bool subscribe, const std::string& prefix);
  void apply_grants(const security::connection_access::subscription& sub,
                    const std::string* again);
  void attend();
  void learn_from_event(const zmtp::multipart& msg);
  void learn_from_subscription(const std::string& prefix);
  void close(const std::string& reason, bool error);
  void arm_timer();
  void on_tick();

  /// Appends to ctrl_ (a sink for zmtp::session::flush()).
  struct ctrl_sink {
    std::string* out;
    void copy(std::string_view bytes) { out->append(bytes); }
    void ref(std::string_view bytes) { out->append(bytes); }
  };

  std::shared_ptr<forwarder> fwd_;
  std::function<void(bool failed)> on_close_;
  std::function<void()> on_ready_;
  link_options opts_;
  zmtp::session session_;
  std::string name_;
  mpsc_ring<shared_event> queue_;
  std::vector<shared_event> batch_;
  /// The small events of the write in flight, copied (plain_writer.hh); unchanged until
  /// the write is done (the next fill() reuses it).
  std::string wbuf_;
  std::vector<zmtp::event> events_;
  /// Events of the current read, published together (forwarder::publish() of a batch).
  std::vector<shared_event> pending_;
  std::vector<zmtp::multipart*> to_encode_; ///< Those of pending_ to encode_plain().
  boost::asio::steady_timer timer_;
  link_counters stats_;
  bool joined_ = false;       ///< Added to the forwarder (after the handshake).
  bool heard_since_tick_ = false;
  unsigned silent_ticks_ = 0;
  std::atomic<bool> overflow_close_{false};
  /// The Zeek node's id and name (zeek_node()); written on the link's strand.
  mutable std::mutex node_mtx_;
  std::string zeek_id_;
  std::string zeek_name_;
  bool named_ = false; ///< Strand only: a name was learned (nothing more to look for).
  bool id_known_ = false; ///< Strand only: zeek_id_ is set (events need no lock until a hello).
  // Access control (strand only; access_ null without rules).
  std::unique_ptr<security::connection_access> access_;
  std::vector<std::string> granted_; ///< What of them is in the forwarder, sorted.
  std::string allowed_topic_;        ///< The last topic the node was allowed to publish on.
  uint64_t allowed_generation_ = 0;  ///< Of the rules that allowed it.
  bool allowed_cached_ = false;
};

} // namespace broker::internal::zeromq
