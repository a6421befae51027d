#pragma once

// The reliable, ordered channel between a data store's master and its clones
// (doc/architecture.md, "Data stores"; doc/protocol/stores.md §4), as two pure state machines:
// messages and time in, messages out. No sockets, no threads, no clock. Its messages are those
// of Zeek Broker's store channel, so that the owners can put them on the wire as Broker's
// commands (store_wire.hh, doc/protocol/stores.md):
//
//   channel message        command on the wire
//   attach{id}             nack{[0]}, sent by entity (endpoint, base + id)
//   handshake              ack_clone (with a snapshot) or attach_writer (without)
//   event                  an action (put, erase, ...) with its sequence number
//   heartbeat              keepalive
//   cumulative_ack, nack   cumulative_ack, nack
//   retransmit_failed      retransmit_failed
//
// Ownership: a `producer` and a `consumer` per direction, each owned and driven by its store
// (single-threaded use). The owner maps handles and epochs to entities, moves messages and
// passes the time; the channel never interprets payloads or snapshots.
//
// Two uses, as in Broker:
//   - master -> clones (snapshot mode): the producer has a snapshot function. A consumer
//     asks with attach; the producer adds it and answers a handshake that carries the state
//     and the offset: the consumer applies the state and expects offset + 1 next.
//   - clone -> master (writer mode): the producer has no snapshot function. The owner adds
//     the master with add(); the producer sends the handshake unasked and repeats it every
//     heartbeat interval until an ack arrives. The master's consumer starts passive, from
//     that handshake (consumer::accept()).
//
// Flow, once attached:
//   1. produce() numbers a payload (the first gets offset + 1; numbering starts at 2, as in
//      Broker), keeps it while some consumer may nack it, and broadcasts `event` (nothing
//      while no consumer is attached).
//   2. The consumer delivers events in order exactly once, buffers out-of-order ones (bounded)
//      and nacks gaps: when it sees one, and again every heartbeat interval while it lasts.
//   3. The consumer acks after every `ack_every` deliveries and once per heartbeat interval
//      (its keepalive). A nack also acknowledges everything below its first sequence number.
//      The producer trims what every consumer acknowledged.
//   4. The producer broadcasts `heartbeat{last_seq}` once per interval; a consumer learns of
//      events it has not seen and nacks them.
//   5. The producer answers a nack with the events it holds, and with retransmit_failed for
//      each it no longer holds (and with one retransmit_failed to a consumer it does not
//      know). A snapshot-mode consumer that lacks such an event re-attaches; a passive one
//      skips it (the owner is told: a lost write).
//
// Recovery (snapshot mode) always goes through a fresh attach with a new id, which the owner
// turns into a new consumer entity: the producer sees a new consumer and answers with a fresh
// snapshot; the old path is dropped when it falls silent. A consumer re-attaches after a
// retransmit_failed for an event it lacks, after hearing nothing for timeout_intervals
// heartbeat intervals, when a gap stays unfilled that long (a producer that forgot the
// consumer ignores its nacks), and when a message shows another epoch (a new master).
//
// Epochs: the owner gives every producer incarnation an epoch (a digest of its entity) and
// stamps it on everything that producer sends. A consumer takes a message of another epoch as
// a sign of a new master and re-attaches; it remembers the last few epochs it moved away
// from and ignores their late messages. Only a handshake for the consumer's current attach id
// ends an attach, so late handshakes never count.
//
// Guarantees: between two snapshots a consumer delivers the producer's events in order,
// exactly once, without gaps, starting right after its snapshot, so the owner's state is
// always one the master had. Whenever a producer stays up and some messages get through each
// way, every consumer catches up (the tests drive loss, duplication, reordering, one- and
// two-way partitions and restarts). In writer mode nothing gives up for silence, so writes
// survive outages of any length exactly once (as long as both sides keep their state).

#include "broker/internal/store/store_wire.hh"
#include "broker/time.hh"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace broker::internal::channel {

/// Numbers events; 0 means "none".
using sequence_number = uint64_t;

/// Identifies one producer incarnation.
using epoch_id = uint64_t;

/// Names a consumer (snapshot mode) or a producer's peer: the store entity.
using handle = store_wire::entity_id;

/// What an event carries: one action command's fields.
using payload = store_wire::content;

/// What a snapshot-mode handshake carries.
using state_ptr = std::shared_ptr<const store_wire::snapshot>;

// -- messages, producer to consumer -------------------------------------------------------

/// One payload. Pre: seq >= 1.
struct event {
  epoch_id epoch = 0;
  sequence_number seq = 0;
  payload content;
};

/// The producer is alive and has produced up to `seq`.
struct heartbeat {
  epoch_id epoch = 0;
  sequence_number seq = 0;
};

/// Apply `state` (snapshot mode), then expect offset + 1. `attach_id` names the attach it
/// answers (snapshot mode; the owner reads it from the receiver entity). The consumer uses
/// `heartbeat_interval` (> 0) for its acks, nack retries and silence detection.
struct handshake {
  epoch_id epoch = 0;
  uint64_t attach_id = 0;
  sequence_number offset = 0;
  timespan heartbeat_interval{};
  state_ptr state;
};

/// The producer cannot serve event `seq` to this consumer.
struct retransmit_failed {
  epoch_id epoch = 0;
  sequence_number seq = 0;
};

// -- messages, consumer to producer -------------------------------------------------------

/// Asks for a handshake (join or rejoin); `id` is new for every attach of a consumer.
struct attach {
  uint64_t id = 0;
};

/// Everything up to and including `seq` was delivered. Also the consumer's keepalive.
struct cumulative_ack {
  sequence_number seq = 0;
};

/// Please resend these events (non-empty, each >= 1, ascending).
struct nack {
  std::vector<sequence_number> seqs;
};

/// Any channel message.
using message =
  std::variant<event, heartbeat, handshake, retransmit_failed, attach, cumulative_ack, nack>;

/// For logs and test failures, e.g. "event(epoch=7, seq=3, put)".
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

/// Producer settings. Pre: heartbeat_interval > 0, max_buffered_events >= 1,
/// max_nack_seqs >= 1.
struct producer_config {
  timespan heartbeat_interval = default_heartbeat_interval;
  /// A consumer silent this many heartbeat intervals is dropped; 0: never.
  uint32_t timeout_intervals = default_timeout_intervals;
  /// A consumer that would need more buffered events than this is dropped.
  size_t max_buffered_events = default_max_buffered_events;
  /// Retransmits served per nack; the rest of a longer nack is ignored.
  size_t max_nack_seqs = default_max_nack_seqs;
  /// Heartbeats also while no consumer is attached (a master: consumers of its previous
  /// incarnation learn of the new one at once).
  bool heartbeat_always = false;
};

/// The sending side. See the flow at the top of this file.
class producer {
public:
  /// Returns the owner's current state; called for every snapshot-mode handshake.
  using snapshot_fn = std::function<state_ptr()>;

  /// Why the producer let go of a consumer.
  enum class drop_reason : uint8_t {
    silent,  ///< No message for timeout_intervals heartbeat intervals.
    lagging, ///< It needed an event the bounded retransmit buffer had to let go.
  };

  /// Tells the owner (logs, metrics). Must not call back into the producer.
  using drop_fn = std::function<void(const handle&, drop_reason)>;

  /// A message to send; `to` empty means a broadcast.
  struct output {
    std::optional<handle> to;
    message msg;
  };

  using outputs = std::vector<output>;

  /// `snapshot` empty: writer mode. Pre: `cfg` as documented.
  producer(epoch_id epoch, producer_config cfg, snapshot_fn snapshot, drop_fn on_drop = {});

  /// Numbers `content` and broadcasts it, unless no consumer is attached. May drop lagging
  /// consumers.
  outputs produce(payload content);

  /// Writer mode: opens a path to `peer` and sends it the handshake (repeated on tick()
  /// until `peer` acknowledges). Nothing happens if `peer` is known already.
  outputs add(const handle& peer, timestamp now);

  /// Processes a message from `from`: attach, cumulative_ack or nack. Other kinds are
  /// ignored. An attach from an unknown consumer adds it in snapshot mode only.
  outputs handle_message(const handle& from, const message& msg, timestamp now);

  /// Drops silent consumers, heartbeats once per interval and repeats unanswered writer
  /// handshakes. Call at least once per heartbeat interval.
  outputs tick(timestamp now);

  /// Forgets `who` without telling it.
  void detach(const handle& who);

  epoch_id epoch() const noexcept { return epoch_; }

  /// The number of the last produced event (1 before the first: numbering starts at 2).
  sequence_number last_seq() const noexcept { return seq_; }

  /// Events held for retransmission.
  size_t buffered() const noexcept { return buffer_.size(); }

  /// Events produced so far that no consumer needs any more: acknowledged by every
  /// consumer, or produced while none was attached (for metrics).
  uint64_t acknowledged() const noexcept {
    auto produced = seq_ - 1;
    return produced - std::min<uint64_t>(produced, buffer_.size());
  }

  /// The attached consumers (or the writer's peer), ascending.
  std::vector<handle> consumers() const;

  /// True if `who` acknowledged a handshake (writer mode: the master answers).
  bool confirmed(const handle& who) const;

  /// The highest sequence number `who` acknowledged, or nothing if it is not attached.
  std::optional<sequence_number> acked(const handle& who) const;

  const producer_config& config() const noexcept { return cfg_; }

private:
  struct path {
    sequence_number offset = 0;
    sequence_number acked = 0;
    bool confirmed = false;
    timestamp last_seen;
    /// Snapshot mode: the handshake's state, resent as is until confirmed.
    state_ptr state;
    std::optional<timestamp> last_handshake;
  };

  state_ptr take_snapshot();
  handshake make_handshake(const path& p) const;
  void send_handshake(const handle& to, path& p, timestamp now, outputs& out);
  void on_attach(const handle& from, timestamp now, outputs& out);
  void on_ack(const handle& from, sequence_number seq, timestamp now);
  void on_nack(const handle& from, const nack& msg, timestamp now, outputs& out);
  void drop(const handle& who, drop_reason why);
  void enforce_buffer_limit();
  void trim_buffer();

  epoch_id epoch_;
  producer_config cfg_;
  snapshot_fn snapshot_;
  drop_fn on_drop_;
  sequence_number seq_ = 1;
  /// Holds the events [seq_ + 1 - buffer_.size(), seq_].
  std::deque<payload> buffer_;
  std::map<handle, path> paths_;
  std::optional<timestamp> last_heartbeat_;
  /// The last snapshot and the seq it was taken at (shared until the next event).
  state_ptr cached_;
  sequence_number cached_seq_ = 0;
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
  /// Re-attach after hearing nothing from the producer, or seeing no progress on a known
  /// gap, for this many heartbeat intervals (snapshot mode).
  uint32_t timeout_intervals = default_timeout_intervals;
  /// Out-of-order events held; also the window [next, next + this) that nacks cover.
  size_t max_out_of_order = default_max_out_of_order;
  size_t ack_every = default_ack_every;
  size_t max_nack_seqs = default_max_nack_seqs;
};

/// The receiving side. See the flow at the top of this file.
class consumer {
public:
  /// Replaces the owner's state (snapshot mode). Must not call back into the consumer.
  using snapshot_fn = std::function<void(const state_ptr& state)>;

  /// Applies the next event's payload. Must not call back into the consumer.
  using deliver_fn = std::function<void(const payload& content)>;

  /// Passive mode: the producer could not retransmit event `seq`; it is skipped.
  using lost_fn = std::function<void(sequence_number seq)>;

  /// Where the consumer is.
  enum class state : uint8_t {
    idle,      ///< Before start() or accept().
    attaching, ///< Sent attach, waiting for a handshake.
    attached,  ///< Delivering events of epoch().
  };

  /// Messages to send to the producer, in order.
  using outputs = std::vector<message>;

  /// Pre: on_snapshot and on_deliver are callable, `cfg` as documented.
  consumer(consumer_config cfg, snapshot_fn on_snapshot, deliver_fn on_deliver,
           lost_fn on_lost = {});

  /// Snapshot mode: emits the first attach. Pre: state idle (otherwise nothing happens).
  outputs start(timestamp now);

  /// Passive mode: starts from a handshake the producer sent unasked (writer channels).
  /// Pre: state idle (otherwise nothing happens).
  outputs accept(const handshake& msg, timestamp now);

  /// Processes a message from the producer: handshake, event, heartbeat or
  /// retransmit_failed. Other kinds, and everything before start()/accept(), are ignored.
  outputs handle(const message& msg, timestamp now);

  /// Repeats attach, re-nacks persistent gaps, acknowledges once per heartbeat interval and
  /// re-attaches when the producer stays silent or a gap unfilled. Call at least once per
  /// heartbeat interval.
  outputs tick(timestamp now);

  state current_state() const noexcept { return state_; }

  /// True if started with accept().
  bool passive() const noexcept { return passive_; }

  /// The id of the current (or last) attach.
  uint64_t attach_id() const noexcept { return attach_id_; }

  /// The epoch of the current or last attachment (0 before the first handshake).
  epoch_id epoch() const noexcept { return epoch_; }

  /// The sequence number delivered next (valid while attached).
  sequence_number next_seq() const noexcept { return next_; }

  /// Out-of-order events held (while attached) or early events held (while attaching).
  size_t buffered() const noexcept { return buffer_.size() + early_.size(); }

  /// Snapshots (or passive handshakes) applied so far.
  size_t snapshots() const noexcept { return snapshots_; }

private:
  void on_handshake(const handshake& msg, timestamp now, outputs& out);
  void on_event(const event& msg, timestamp now, outputs& out);
  void on_retransmit_failed(const retransmit_failed& msg, timestamp now, outputs& out);
  void begin(const handshake& msg, timestamp now, outputs& out);
  void reattach(std::optional<epoch_id> seen, timestamp now, outputs& out);
  void retire(epoch_id x);
  /// Delivers buffered events from next_ on; true if it delivered (or skipped) any.
  bool deliver_ready();
  void learn_last_seq(sequence_number seq, outputs& out);
  void send_ack(timestamp now, outputs& out);
  void send_nack(sequence_number from, sequence_number to, outputs& out);
  bool is_retired(epoch_id x) const;
  sequence_number window_end() const noexcept;

  consumer_config cfg_;
  snapshot_fn on_snapshot_;
  deliver_fn on_deliver_;
  lost_fn on_lost_;
  state state_ = state::idle;
  bool passive_ = false;
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
  /// The last delivery (or handshake): a gap older than the timeout means we were forgotten.
  timestamp last_progress_;
  /// The last time tick() re-nacked, and highest_seen_ then: only gaps known since then
  /// are old enough to nack again (the newer ones were nacked when they showed up).
  timestamp last_retry_;
  sequence_number retry_horizon_ = 0;
  timestamp last_attach_;
  size_t unacked_ = 0;
  size_t snapshots_ = 0;
  /// Attached: events above next_, by sequence number; nothing = lost (passive mode).
  std::map<sequence_number, std::optional<payload>> buffer_;
  /// Attaching: events that beat the handshake, by (epoch, seq).
  std::map<std::pair<epoch_id, sequence_number>, payload> early_;
  std::deque<epoch_id> retired_;
};

} // namespace broker::internal::channel
