#pragma once

// The reliable, ordered channel that keeps data-store clones consistent with their master
// (DESIGN.md §8), as two pure state machines: messages and time in, messages out. No sockets,
// no threads, no clock. It mirrors the ideas of Broker's store channel (spec/peering-wire.md
// §6.5: attach_writer, keepalive, cumulative_ack, nack, ack_clone, retransmit_failed), not its
// bytes.
//
// Ownership: one `producer` per master and one `consumer` per clone, each owned and driven by
// its store actor (single-threaded use). The owner maps consumer handles to endpoints, moves
// messages (encode()/decode() turn them into `data` for a topic), passes the time, and owns
// the store state: the channel never interprets payloads or snapshots.
//
// Flow:
//   1. A clone's consumer starts by sending `attach{id}` and repeats it on tick() until a
//      `handshake` answering that id arrives. Every (re-)attach takes a new id.
//   2. On `attach` the producer takes a snapshot through the owner's callback and answers
//      `handshake{epoch, id, first_seq = next sequence number, snapshot, interval}`.
//   3. The consumer applies the snapshot through its owner's callback and from then on
//      delivers events in order, exactly once, starting at first_seq.
//   4. produce() numbers a payload, keeps it in the retransmit buffer and broadcasts
//      `event`. The consumer buffers out-of-order events (bounded), drops duplicates and
//      sends `nack` for gaps: when it sees one, and on tick() (at most once per heartbeat
//      interval) while it persists.
//   5. The consumer sends `cumulative_ack` after every `ack_every` deliveries and once per
//      heartbeat interval (its keepalive). The producer retransmits nacked events and drops
//      events every attached consumer has acknowledged.
//   6. The producer broadcasts `heartbeat{last_seq}` every interval; a consumer that learns
//      of events it has not seen nacks them.
//   7. Recovery always goes through a fresh snapshot (back to step 1): the producer drops a
//      consumer that stays silent or that lags beyond the retransmit buffer and tells it
//      `retransmit_failed`; it answers acks and nacks from consumers it does not know, and
//      nacks for events it no longer holds, the same way. A consumer re-attaches on a
//      retransmit_failed for an event it lacks, after a silent producer, and when a message
//      shows a new producer epoch (the master restarted).
//
// Epochs: every producer incarnation has an owner-chosen epoch id, unique per incarnation
// (e.g. random, or a start time; no order needed), that all messages but `attach` carry,
// because sequence numbers restart with the producer. A consumer takes a message of another
// epoch as a sign of a restart and re-attaches; it remembers the last few epochs it moved
// away from and ignores their late messages. Only a handshake echoing the consumer's current
// attach id ends an attach, so late handshakes never count, and a consumer never waits on a
// producer that is gone.
//
// Broadcasts: an output without a destination goes to every attached consumer. The owner may
// publish it once on the clones' topic, reaching unattached consumers too; they tolerate it.
//
// Guarantees: between two snapshots a consumer delivers the producer's events in order,
// exactly once, without gaps, starting right after its snapshot, so the owner's state is
// always one the master had. Whenever a producer stays up and some messages get through each
// way, every consumer catches up (the tests drive loss, duplication, reordering, one- and
// two-way partitions and restarts). Not covered: persisting the master's state across
// restarts (the owner's backend does), hostile peers, and flow control beyond the bounds.
// Time passed in should not go backwards (if it does, timers merely fire late).
//
// The other direction (clone writes to the master) can use the same machinery: each clone runs
// a producer whose only consumer is the master, and the master runs one consumer per clone.
// The snapshot is then `nil` (a fresh attach means "from here on"), and a re-attach tells the
// master that writes may have been lost.

#include "broker/data.hh"
#include "broker/error.hh"
#include "broker/time.hh"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace broker::internal::channel {

/// Numbers events from 1; 0 means "none yet".
using sequence_number = uint64_t;

/// Identifies one producer incarnation.
using epoch_id = uint64_t;

/// The owner's opaque name for one consumer.
using consumer_handle = uint64_t;

// -- messages, producer to consumer -------------------------------------------------------

/// One payload. Pre: seq >= 1.
struct event {
  epoch_id epoch = 0;
  sequence_number seq = 0;
  data payload;
};

/// The producer is alive and has produced up to `last_seq` (0: nothing).
struct heartbeat {
  epoch_id epoch = 0;
  sequence_number last_seq = 0;
};

/// Answers `attach{attach_id}`: apply `snapshot`, then expect `first_seq` (>= 1). The
/// consumer uses `heartbeat_interval` (> 0) for its acks, nack retries and silence detection.
struct handshake {
  epoch_id epoch = 0;
  uint64_t attach_id = 0;
  sequence_number first_seq = 0;
  data snapshot;
  timespan heartbeat_interval{};
};

/// The producer cannot serve event `seq` to this consumer: it dropped the consumer, never
/// knew it, or no longer holds the event. A consumer that lacks `seq` re-attaches.
struct retransmit_failed {
  epoch_id epoch = 0;
  sequence_number seq = 0;
};

// -- messages, consumer to producer -------------------------------------------------------

/// Asks for a handshake (join or rejoin). `id` is new for every attach of a consumer (its
/// retries repeat it); the handshake echoes it.
struct attach {
  uint64_t id = 0;
};

/// Everything up to and including `seq` was delivered. Also the consumer's keepalive.
struct cumulative_ack {
  epoch_id epoch = 0;
  sequence_number seq = 0;
};

/// Please resend these events (non-empty, each >= 1; consumers list them ascending, the
/// producer does not rely on it).
struct nack {
  epoch_id epoch = 0;
  std::vector<sequence_number> seqs;
};

/// Any channel message.
using message =
  std::variant<event, heartbeat, handshake, retransmit_failed, attach, cumulative_ack, nack>;

bool operator==(const event& x, const event& y);
bool operator==(const heartbeat& x, const heartbeat& y);
bool operator==(const handshake& x, const handshake& y);
bool operator==(const retransmit_failed& x, const retransmit_failed& y);
bool operator==(const attach& x, const attach& y);
bool operator==(const cumulative_ack& x, const cumulative_ack& y);
bool operator==(const nack& x, const nack& y);

/// Encodes `msg` as a `data` vector whose first element is a kind tag (a count):
///   event             [0, epoch, seq, payload]
///   heartbeat         [1, epoch, last_seq]
///   handshake         [2, epoch, attach_id, first_seq, snapshot, heartbeat_interval]
///   retransmit_failed [3, epoch, seq]
///   attach            [4, id]
///   cumulative_ack    [5, epoch, seq]
///   nack              [6, epoch, [seq, ...]]
/// Epochs, ids and sequence numbers are counts; heartbeat_interval is a timespan.
data encode(const message& msg);

/// The inverse of encode(). Total: anything that is not exactly one of the shapes above
/// (wrong size, wrong element type, unknown tag, seq 0 where >= 1 is required, an empty nack,
/// a non-positive interval) is ec::invalid_message with a text naming the problem.
expected<message> decode(const data& x);

/// For logs and test failures, e.g. "event(epoch=7, seq=3, payload=42)".
std::string to_string(const message& msg);

// -- producer -----------------------------------------------------------------------------

/// Default producer heartbeat interval.
inline constexpr timespan default_heartbeat_interval = std::chrono::seconds{1};

/// Default number of heartbeat intervals without a message before a peer counts as gone.
inline constexpr uint32_t default_timeout_intervals = 10;

/// Default retransmit buffer size, in events.
inline constexpr size_t default_max_buffered_events = 8192;

/// Default cap on the sequence numbers one nack carries or the producer serves from one nack.
inline constexpr size_t default_max_nack_seqs = 256;

/// Producer settings. Pre: heartbeat_interval > 0, timeout_intervals >= 1,
/// max_buffered_events >= 1, max_nack_seqs >= 1.
struct producer_config {
  timespan heartbeat_interval = default_heartbeat_interval;
  /// A consumer silent this many heartbeat intervals is dropped.
  uint32_t timeout_intervals = default_timeout_intervals;
  /// A consumer that would need more buffered events than this is dropped.
  size_t max_buffered_events = default_max_buffered_events;
  /// Retransmits served per nack; the rest of a longer nack is ignored.
  size_t max_nack_seqs = default_max_nack_seqs;
};

/// The master's side. See the flow at the top of this file.
class producer {
public:
  /// Returns the owner's current state. Called on every attach.
  using snapshot_fn = std::function<data()>;

  /// Why the producer let go of a consumer.
  enum class drop_reason : uint8_t {
    silent,  ///< No message for timeout_intervals heartbeat intervals.
    lagging, ///< It needed an event the bounded retransmit buffer had to let go.
  };

  /// Tells the owner (logs, metrics). Must not call back into the producer.
  using drop_fn = std::function<void(consumer_handle, drop_reason)>;

  /// A message to send; `to` empty means every attached consumer (a broadcast).
  struct output {
    std::optional<consumer_handle> to;
    message msg;
  };

  using outputs = std::vector<output>;

  /// Pre: `snapshot` is callable, `cfg` as documented.
  producer(epoch_id epoch, producer_config cfg, snapshot_fn snapshot, drop_fn on_drop = {});

  /// Numbers `payload` and broadcasts it (also with no consumer attached, so that consumers
  /// of an earlier incarnation notice the new epoch). May drop lagging consumers.
  outputs produce(data payload);

  /// Processes a message from consumer `from`: attach, cumulative_ack or nack. Other kinds
  /// are ignored.
  outputs handle(consumer_handle from, const message& msg, timestamp now);

  /// Drops silent consumers and, with at least one consumer attached, broadcasts a heartbeat
  /// once per interval. Call at least once per heartbeat interval.
  outputs tick(timestamp now);

  /// Forgets `who` without telling it (e.g. the owner learned the clone is gone).
  void detach(consumer_handle who);

  epoch_id epoch() const noexcept { return epoch_; }

  /// The number of the last produced event (0: none).
  sequence_number last_seq() const noexcept { return next_seq_ - 1; }

  /// Events held for retransmission.
  size_t buffered() const noexcept { return buffer_.size(); }

  /// The attached consumers, ascending.
  std::vector<consumer_handle> consumers() const;

  /// The highest sequence number `who` acknowledged, or nothing if it is not attached.
  std::optional<sequence_number> acked(consumer_handle who) const;

  const producer_config& config() const noexcept { return cfg_; }

private:
  struct peer_state {
    sequence_number acked = 0;
    timestamp last_seen;
  };

  void on_attach(consumer_handle from, const attach& msg, timestamp now, outputs& out);
  void on_ack(consumer_handle from, const cumulative_ack& ack, timestamp now, outputs& out);
  void on_nack(consumer_handle from, const nack& msg, timestamp now, outputs& out);
  void drop(consumer_handle who, drop_reason why, sequence_number failed, outputs& out);
  void enforce_buffer_limit(outputs& out);
  void trim_buffer();

  epoch_id epoch_;
  producer_config cfg_;
  snapshot_fn snapshot_;
  drop_fn on_drop_;
  sequence_number next_seq_ = 1;
  /// Holds the events [next_seq_ - buffer_.size(), next_seq_).
  std::deque<data> buffer_;
  std::map<consumer_handle, peer_state> peers_;
  std::optional<timestamp> last_heartbeat_;
};

// -- consumer -----------------------------------------------------------------------------

/// Default time between attach messages while no handshake arrived.
inline constexpr timespan default_attach_interval = std::chrono::seconds{1};

/// Default bound on out-of-order events a consumer holds.
inline constexpr size_t default_max_out_of_order = 1024;

/// Default number of deliveries after which a consumer acknowledges without waiting.
inline constexpr size_t default_ack_every = 64;

/// How many left epochs a consumer remembers in order to ignore their late messages.
inline constexpr size_t retired_epochs_kept = 8;

/// Consumer settings. Pre: attach_interval > 0, every count >= 1.
struct consumer_config {
  timespan attach_interval = default_attach_interval;
  /// Re-attach after hearing nothing from the producer for this many heartbeat intervals.
  uint32_t timeout_intervals = default_timeout_intervals;
  /// Out-of-order events held; also the window [next, next + this) that nacks cover.
  size_t max_out_of_order = default_max_out_of_order;
  size_t ack_every = default_ack_every;
  size_t max_nack_seqs = default_max_nack_seqs;
};

/// A clone's side. See the flow at the top of this file.
class consumer {
public:
  /// Replaces the owner's state with a snapshot. Must not call back into the consumer.
  using snapshot_fn = std::function<void(const data& snapshot)>;

  /// Applies the next event's payload. Must not call back into the consumer.
  using deliver_fn = std::function<void(const data& payload)>;

  /// Where the consumer is.
  enum class state : uint8_t {
    idle,      ///< Before start().
    attaching, ///< Sent attach, waiting for a handshake.
    attached,  ///< Delivering events of epoch().
  };

  /// Messages to send to the producer, in order.
  using outputs = std::vector<message>;

  /// Pre: both callbacks are callable, `cfg` as documented.
  consumer(consumer_config cfg, snapshot_fn on_snapshot, deliver_fn on_deliver);

  /// Emits the first attach. Pre: state idle (otherwise nothing happens).
  outputs start(timestamp now);

  /// Processes a message from the producer: handshake, event, heartbeat or
  /// retransmit_failed. Other kinds, and everything before start(), are ignored.
  outputs handle(const message& msg, timestamp now);

  /// Repeats attach, re-nacks persistent gaps, acknowledges once per heartbeat interval and
  /// re-attaches after a silent producer. Call at least once per heartbeat interval.
  outputs tick(timestamp now);

  state current_state() const noexcept { return state_; }

  /// The epoch of the current or last attachment (0 before the first handshake).
  epoch_id epoch() const noexcept { return epoch_; }

  /// The sequence number delivered next (valid while attached).
  sequence_number next_seq() const noexcept { return next_; }

  /// Out-of-order events held (while attached) or early events held (while attaching).
  size_t buffered() const noexcept { return buffer_.size() + early_.size(); }

  /// Snapshots applied so far.
  size_t snapshots() const noexcept { return snapshots_; }

private:
  void on_handshake(const handshake& msg, timestamp now, outputs& out);
  void on_event(const event& msg, timestamp now, outputs& out);
  void on_heartbeat(const heartbeat& msg, timestamp now, outputs& out);
  void on_retransmit_failed(const retransmit_failed& msg, timestamp now, outputs& out);
  void reattach(std::optional<epoch_id> seen, timestamp now, outputs& out);
  void retire(epoch_id x);
  void deliver_ready();
  void learn_last_seq(sequence_number seq, outputs& out);
  void send_ack(timestamp now, outputs& out);
  void send_nack(sequence_number from, sequence_number to, outputs& out);
  bool is_retired(epoch_id x) const;
  sequence_number window_end() const noexcept;

  consumer_config cfg_;
  snapshot_fn on_snapshot_;
  deliver_fn on_deliver_;
  state state_ = state::idle;
  /// The id of the current (or last) attach.
  uint64_t attach_id_ = 0;
  epoch_id epoch_ = 0;
  /// The unknown epoch that made us re-attach, if any.
  std::optional<epoch_id> seen_epoch_;
  sequence_number next_ = 0;
  /// The highest sequence number known to exist (from events and heartbeats).
  sequence_number highest_seen_ = 0;
  timespan interval_{};
  timestamp last_heard_;
  timestamp last_ack_;
  /// The last time tick() re-nacked, and highest_seen_ then: only gaps known since then
  /// are old enough to nack again (the newer ones were nacked when they showed up).
  timestamp last_retry_;
  sequence_number retry_horizon_ = 0;
  timestamp last_attach_;
  size_t unacked_ = 0;
  size_t snapshots_ = 0;
  /// Attached: events above next_, by sequence number.
  std::map<sequence_number, data> buffer_;
  /// Attaching: events that beat the handshake, by (epoch, seq).
  std::map<std::pair<epoch_id, sequence_number>, data> early_;
  std::deque<epoch_id> retired_;
};

} // namespace broker::internal::channel
