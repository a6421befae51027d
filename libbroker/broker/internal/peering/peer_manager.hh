#pragma once

// peer_manager: the network side of peering (doc/protocol/peering.md), on the endpoint's I/O
// runtime (io_runtime.hh).
//
// Threads: the runtime's io_context runs every socket; each connection is a strand
// (connection.hh). The manager's own tables (peer statuses for redundancy checks,
// connections, outgoing peerings) are guarded by one mutex (peer_manager_impl.hh);
// connections call in from their strands, the endpoint from application threads. A
// connection routes what it reads itself (core/router.hh); the core is reached only through
// core_runtime::post() (attach, routing updates, errors, the end) and the send queues.
//
// Flow of one peering:
//   1. listen() accepts, or peer() dials (re-dialing after `retry` until unpeered).
//   2. The connection runs the handshake state machine; the manager's status table answers
//      its redundancy checks (one live peering per remote id, doc/protocol/peering.md §3.6).
//   3. On success the manager creates the peer's send queue and input and posts
//      core_state::add_peer(); from then on routing threads fill the queue and the
//      connection drains it in gathered writes, while frames read from the socket are
//      decoded and routed on the strand (reading stops while a `block` sink lacks room).
//   4. On loss the connection, once its last message is routed, posts remove_peer (lost),
//      and an outgoing peering is re-dialed; on unpeer() the connection sends BYE, waits
//      for its pong (at most 3 s), and detaches (removed).

#include "broker/configuration.hh"
#include "broker/endpoint_id.hh"
#include "broker/error.hh"
#include "broker/status.hh"
#include "broker/time.hh"
#include "broker/topic.hh"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace broker::internal {

class core_runtime;
class io_runtime;
struct peer_manager_impl;

namespace security {
class runtime;
} // namespace security

/// Control frames received from peers (Broker's processed routing-update, ping, pong).
struct control_counts {
  uint64_t routing_updates = 0;
  uint64_t pings = 0;
  uint64_t pongs = 0;

  control_counts& operator+=(const control_counts& other) noexcept {
    routing_updates += other.routing_updates;
    pings += other.pings;
    pongs += other.pongs;
    return *this;
  }
};

/// What peers() reports about one peering.
struct peer_record {
  endpoint_id id;
  std::string address;
  uint16_t port = 0;
  bool outbound = false;
  uint64_t handler = 0;   ///< The id of its handler and source in the core.
  bool secure = false;    ///< TLS (the I/O runtime's mode says which kind).
  control_counts control; ///< Received on this connection so far.
  uint64_t writes_through = 0; ///< Writes a routing thread made itself (connection.hh).
};

/// An outgoing peering (peer()) without a live connection right now.
struct dial_record {
  std::string host;
  uint16_t port = 0;
  bool connecting = false; ///< A connection attempt or handshake is under way.
  endpoint_id remote;      ///< Known if it was peered before.
  std::string last_error;  ///< Why the last attempt failed; empty if none did.
};

/// See the file comment.
class peer_manager {
public:
  /// `access`: the endpoint's access control (security/runtime.hh); null: none.
  peer_manager(endpoint_id own, const configuration& cfg, io_runtime& io,
               std::shared_ptr<core_runtime> rt, std::function<uint64_t()> next_id,
               std::shared_ptr<security::runtime> access = nullptr);
  ~peer_manager();

  peer_manager(const peer_manager&) = delete;
  peer_manager& operator=(const peer_manager&) = delete;

  /// Starts accepting peers on `address`:`port` (port 0: an ephemeral port). Returns the
  /// bound port.
  expected<uint16_t> listen(const std::string& address, uint16_t port);

  /// Dials `host`:`port` and keeps the peering up: after a failure or loss it re-dials every
  /// `retry` (0: never). `done` (optional) is called once, with the first attempt's outcome
  /// if `retry` is 0, else when the first connection succeeds.
  void peer(const std::string& host, uint16_t port, timespan retry,
            std::function<void(error)> done);

  /// Ends the outgoing peering to `host`:`port` (and stops re-dialing) gracefully. Returns
  /// false if there is no such peering.
  bool unpeer(const std::string& host, uint16_t port);

  /// Ends the peering with `id` gracefully, whoever dialed. False if not peered.
  bool unpeer(const endpoint_id& id);

  /// The live peerings.
  std::vector<peer_record> peers() const;

  /// Outgoing peerings that are not peered right now (dialing, or waiting to re-dial).
  std::vector<dial_record> pending_dials() const;

  /// Control frames received from all peers since start, also over ended connections.
  control_counts control_totals() const;

  /// The current filter for new handshakes (the core calls this on every change).
  void update_filter(const filter_type& filter);

  /// Sends BYE on every peering, waits for the pongs (at most 3 s in all), then closes
  /// the acceptors and stops re-dialing. The I/O runtime keeps running. Idempotent.
  void shutdown();

private:
  std::shared_ptr<peer_manager_impl> impl_;
};

} // namespace broker::internal
