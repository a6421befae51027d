#pragma once

// net_input: the input side of a network connection (a peering, a WebSocket client):
// what the connection decoded from one read, routed by the connection's own strand right
// away (run to completion, router.hh).
//
// A connection with access control sets its publish_gate: the router asks it once per run
// of messages with one topic and drops what it refuses (router.hh).
//
// If a sink with policy `block` lacks room, routing stops at the first message that does
// not fit and the rest stays here; the connection stops reading its socket (TCP carries
// the back-pressure to the sender) until the sink's waker calls it back, and then routes
// the rest before it reads again. So what waits here is at most what one read decoded.
//
// Threads: the connection's strand only; the waker may run on any thread and must post
// to the strand.

#include "broker/internal/core/router.hh"
#include "broker/internal/core/source_stats.hh"
#include "broker/message.hh"

#include <cstdint>
#include <memory>
#include <vector>

namespace broker::internal {

/// Why a peering or client connection ended, for its status event.
enum class peer_end : uint8_t {
  removed, ///< We unpeered (or shut down, or the peer overflowed under `disconnect`).
  lost,    ///< The connection failed or the peer closed it.
};

/// See the file comment.
class net_input {
public:
  net_input(std::shared_ptr<router> r, uint64_t id, source_kind kind)
    : router_(std::move(r)),
      src_{id, kind},
      stats_(std::make_shared<source_stats>(kind)) {}

  uint64_t id() const noexcept { return src_.id; }

  /// Access control for what this connection publishes (publish_gate.hh); null: none.
  /// The gate must outlive the input or be reset first.
  void set_gate(publish_gate* gate) noexcept { src_.gate = gate; }

  /// What this connection routed, for the status page (core_state::add_source).
  const std::shared_ptr<source_stats>& stats() const noexcept { return stats_; }

  /// Appends a decoded message.
  void add(data_message msg) { msgs_.push_back(std::move(msg)); }

  /// Routes what is pending. True if nothing is left; false if parked, in which case
  /// `waker` runs once when the sink has room (call flush() again then). Also true once
  /// the endpoint shut down (what was pending is discarded: nobody can receive it).
  bool flush(const room_waker& waker) {
    if (pos_ == msgs_.size())
      return true;
    auto before = pos_;
    auto res = router_->route(src_, msgs_.data(), msgs_.size(), pos_, waker);
    stats_->add_routed(pos_ - before);
    if (res == route_status::parked) {
      stats_->set_state(true, msgs_.size() - pos_);
      return false;
    }
    stats_->set_state(false, 0);
    msgs_.clear();
    pos_ = 0;
    return true;
  }

  /// Messages decoded but not routed yet.
  size_t pending() const noexcept { return msgs_.size() - pos_; }

private:
  std::shared_ptr<router> router_;
  route_source src_;
  std::shared_ptr<source_stats> stats_;
  std::vector<data_message> msgs_;
  size_t pos_ = 0;
};

} // namespace broker::internal
