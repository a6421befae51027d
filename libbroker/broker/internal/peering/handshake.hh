#pragma once

// The handshake of Broker's native peering protocol (doc/protocol/peering.md §3; section
// numbers below are that page's) as a pure state machine: bytes in, bytes out, no sockets,
// no clock, no threads.
//
// Ownership: one `handshake` per connection, owned and driven by the transport that reads
// that connection (single-threaded use). The owner also owns everything the machine cannot
// see: the per-peer status table (§3.6), timeouts (§3.4: 10 s), retries and the list of
// paused connections.
//
// Flow:
//   1. The owner constructs the machine with its id, its filter and its role, and sends
//      the bytes of start(): a probe
//      (acceptor) or hello(own, 1, 1) (dialer).
//   2. For every handshake frame the owner's wire::frame_reader yields, it calls feed() and
//      sends `outcome.output` (complete frames) before anything else.
//   3. When a node must commit to the handshake (originator on a hello, responder on a
//      version_select) the machine calls the owner's `proceed` callback, which looks up and
//      updates the peer status exactly like Broker (§3.6) and returns a decision. After
//      `proceed` the owner has marked the peer connecting; it undoes that if the handshake
//      later fails.
//   4. outcome `paused`: another handshake with the same peer runs on this node. The owner
//      stops reading this connection and, once the other handshake ends, calls drop_paused()
//      here, sends its output (drop_conn 39) and closes.
//   5. outcome `done`: the owner switches the frame reader to phase 3 and hands the
//      connection, the remote id and the remote filter to the core. Bytes already buffered
//      are phase-3 frames. The machine sent the filter it was constructed with; if the
//      owner's filter changed meanwhile, it follows up with a routing_update.
//   6. outcome `failed`: the owner sends `output` (a drop_conn, or nothing when Broker would
//      just close) and closes. `redundant` means "close quietly, no error event": we sent
//      or received drop_conn 39, so a peering with the remote exists or is being set up;
//      a dialer with a retry interval checks later that it does (§3.6).

#include "broker/endpoint_id.hh"
#include "broker/error.hh"
#include "broker/internal/peering/wire.hh"
#include "broker/topic.hh"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace broker::internal {

/// One connection's handshake state machine (§3.4).
class handshake {
public:
  /// Who opened the TCP connection (independent of originator/responder).
  enum class role : uint8_t { dialer, acceptor };

  /// Broker's states (§3.4) plus the bookends.
  enum class state : uint8_t {
    init,                          ///< Before start().
    await_hello_or_version_select, ///< Dialer after sending hello.
    await_hello,                   ///< Acceptor after sending probe.
    await_version_select,          ///< Must become responder; sent hello.
    await_orig_syn,                ///< Responder.
    await_resp_syn_ack,            ///< Originator; sent version_select and originator_syn.
    await_orig_ack,                ///< Responder; sent responder_syn_ack.
    paused,                        ///< Redundant originator waiting for drop_paused().
    done,                          ///< Complete: phase 3 from here.
    failed,                        ///< Terminal error.
  };

  /// The owner's answer when the machine is about to commit (§3.6).
  enum class decision : uint8_t {
    proceed,              ///< Status absent/initialized/disconnected: now (re)connecting.
    pause,                ///< Connecting, and the other handshake runs on this node.
    no_pending_handshake, ///< Connecting, but the other handshake is not found on this node.
    redundant,            ///< Connected or peered.
    shutting_down,        ///< The node is shutting down.
  };

  /// What a call did.
  enum class status : uint8_t { in_progress, paused, done, failed };

  /// Looks up and updates the peer status for `remote` (§3.6).
  using proceed_fn = std::function<decision(const endpoint_id& remote, bool as_originator)>;

  /// The result of feed() or drop_paused().
  struct outcome {
    status kind = status::in_progress;
    /// Complete frames to send now, in order; on failure, send them before closing.
    std::string output;
    /// failed: the drop_conn we sent, the drop_conn we received (code 0 shows as
    /// ec::unspecified), or ec::unexpected_handshake_message when Broker would just close.
    error err;
    /// failed: the connection ended as redundant (we sent, or received, drop_conn 39).
    bool redundant = false;
    /// done: the peer's id, its filter as received and our role.
    /// failed after a received drop_conn: its sender.
    endpoint_id remote;
    filter_type remote_filter;
    bool originator = false;
  };

  /// `own_filter` goes out in originator_syn or responder_syn_ack as given (sorted and
  /// deduplicated on the wire; it must fit a 64 KiB handshake frame for our own peers to
  /// accept it). Pre: `proceed` is callable.
  handshake(endpoint_id own, filter_type own_filter, role r, proceed_fn proceed);

  /// The first frame: probe (acceptor) or hello(own, 1, 1) (dialer). Pre: state init;
  /// otherwise returns an empty string.
  std::string start();

  /// Processes one handshake frame payload (without the length prefix). In state paused the
  /// frame is ignored (outcome paused). In states init, done and failed nothing changes and
  /// the outcome is failed with ec::invalid_handshake_state.
  outcome feed(std::string_view payload);

  /// Ends a paused handshake with drop_conn(own, 39, "redundant connection"). Outside state
  /// paused it changes nothing and returns failed with ec::invalid_handshake_state.
  outcome drop_paused();

  /// The current state.
  state current_state() const noexcept { return state_; }

  /// Broker's name of the current state, for logs.
  std::string_view state_name() const noexcept;

  /// The remote id once known: from the proceed check (also while paused) or from a received
  /// drop_conn; nil before.
  const endpoint_id& remote_id() const noexcept { return remote_; }

  /// True once this side has committed as originator.
  bool is_originator() const noexcept { return originator_; }

private:
  outcome on_hello(const wire::hello_msg& msg);
  outcome on_version_select(const wire::version_select_msg& msg);
  outcome on_drop_conn(const wire::drop_conn_msg& msg);
  outcome commit(const endpoint_id& remote, bool as_originator);
  outcome complete(std::string output);
  outcome unexpected(wire::message_type type);
  static outcome make_outcome(status kind, std::string output = {});
  outcome misuse(std::string_view call) const;
  outcome fail(ec code, std::string text, bool send_drop_conn, bool redundant = false);

  endpoint_id own_;
  filter_type own_filter_;
  role role_;
  proceed_fn proceed_;
  state state_ = state::init;
  endpoint_id remote_;
  filter_type remote_filter_;
  bool originator_ = false;
};

/// Broker's name of `x`, e.g. "await_hello_or_version_select".
std::string_view to_string(handshake::state x) noexcept;

} // namespace broker::internal
