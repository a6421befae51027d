#pragma once

// master_logic: the authoritative copy of a data store (store_logic.hh), speaking Zeek
// Broker's master protocol (doc/protocol/stores.md). Owned by one store actor; single-threaded.
//
// It subscribes to both store topics: commands from clones arrive on the master topic; on the
// clone topic it listens for another master (the answer to its probe, or its heartbeats).
//
// Flow:
//   1. start(): unless the probe timeout is 0, sends nack{[0]} from a throw-away probe entity
//      on the master topic, as a clone would. An existing master (ours or Broker's) answers
//      with ack_clone on the clone topic; that answer, or any heartbeat or update of another
//      master heard before the timeout, ends this store with master_exists.
//   2. A clone's nack{[0]} makes it a consumer of the master's channel (replication_channel
//      .hh, snapshot mode): ack_clone with the snapshot, then every effect as an action
//      command, keepalives once per heartbeat interval, retransmits on nack.
//   3. A clone's attach_writer opens a write channel: a passive consumer per writer entity
//      delivers its writes in order, exactly once, and acks them. Writes from a writer we do
//      not know (we forgot it, or its attach_writer is late) make us ask it for a handshake
//      with nack{[0]}, at most once per heartbeat interval.
//   4. Every write (local or from a clone) is applied to the backend and produced as its
//      effect: put with the resulting value, erase, expire, clear; a clone's put_unique also
//      produces put_unique_result for the asking clone. A write it rejects (type_clash,
//      no_such_key, ...) is logged (the first ten, then at every power of two), counted
//      (stats().rejected_writes) and published as an error event, and remembered for the
//      writer's next verdict request.
//   5. A verdict request from a clone of ours (a put_unique_result on its write channel,
//      which Broker's master ignores) is answered in the update sequence, after the effects
//      of the writes before it: put_unique_result{no rejection since the previous request,
//      who = the writer, its req_id, publisher = (our endpoint, code of the first
//      rejection or 0)} (doc/protocol/stores.md §5).
//   6. tick() drives the channels, expiries, and forgets writers silent for 60 timeouts.

#include "broker/internal/store/replication_channel.hh"
#include "broker/internal/store/store_logic.hh"

#include <map>
#include <memory>

namespace broker::internal {

/// See the file comment.
class master_logic final : public store_logic {
public:
  master_logic(std::string name, entity_id self, std::unique_ptr<store_backend> backend,
               store_settings st, store_env& env);

  bool is_master() const noexcept override { return true; }
  void start(timestamp now) override;
  void handle(const std::string& topic, std::string_view bytes, timestamp now) override;
  void tick(timestamp now) override;
  void flush() override;
  void write(store_op op, timestamp now, std::function<void()> done) override;
  void put_unique(data key, data value, std::optional<timespan> expiry, entity_id publisher,
                  timestamp now, store_reply reply) override;
  void verdict(timestamp now, store_reply reply) override;
  void get(const data& key, const store_reply& reply) override;
  void get_index_from_value(const data& key, const data& index,
                            const store_reply& reply) override;
  void exists(const data& key, const store_reply& reply) override;
  void keys(const store_reply& reply) override;
  bool ready() const noexcept override { return !probing_ && !failure_; }
  const error& failure() const noexcept override { return failure_; }
  size_t size() const override;
  store_stats stats() const override;

  /// The clones attached to the master's channel (for tests).
  std::vector<entity_id> clones() const { return prod_.consumers(); }

  /// The writers the master has a channel from (for tests).
  size_t writers() const noexcept { return writers_.size(); }

private:
  struct writer {
    std::unique_ptr<channel::consumer> cons;
    timestamp last_heard;
    error rejection; ///< The first write rejected since its last verdict request.
  };

  void on_clone_topic(const store_wire::command& cmd);
  void on_consumer_control(const store_wire::command& cmd, timestamp now);
  void on_writer_message(const store_wire::command& cmd, timestamp now);
  void deliver(const entity_id& writer_id, const store_op& op);
  void ask_handshake(const entity_id& writer, timestamp now);
  void another_master(const entity_id& who, const char* how);
  channel::state_ptr snapshot();
  void send_outputs(const channel::producer::outputs& outs);
  void send_writer_outputs(const entity_id& writer, const channel::consumer::outputs& outs);
  void produce(store_op effect);
  void begin();
  void fail(const error& err, const char* what, const data& key);
  void apply(const store_op& op, timestamp now, store_reply* reply);
  void apply_put_unique(const store_wire::put_unique& op, timestamp now, store_reply* reply);
  void apply_change(const store_op& op, timestamp now);
  std::optional<timestamp> deadline(timestamp now, std::optional<timespan> expiry);
  void changed(const data& key, const expected<data>& old, const data& value,
               std::optional<timespan> expiry, std::optional<timespan> effect_expiry,
               const entity_id& publisher);
  void expire(timestamp now);

  std::unique_ptr<store_backend> be_;
  channel::producer prod_;
  std::map<entity_id, writer> writers_;
  /// Unknown writers we asked for a handshake, and when (bounded, see ask_handshake).
  std::map<entity_id, timestamp> asked_;
  /// How long a silent writer's channel is kept (its writes survive outages up to this).
  timespan forget_after_;
  std::multimap<timestamp, data> timers_;
  timestamp clock_;
  bool batch_open_ = false;
  bool probing_ = false;
  timestamp probe_deadline_;
  entity_id probe_;
  std::optional<entity_id> other_master_;
  error failure_;
  error rejection_;       ///< Set by fail() while apply() runs.
  error local_rejection_; ///< The first local write rejected since the last verdict().
  uint64_t rejected_ = 0;
};

} // namespace broker::internal
