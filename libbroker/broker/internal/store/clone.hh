#pragma once

// clone_logic: a replica of a data store (store_logic.hh) that speaks Zeek Broker's clone
// protocol (doc/protocol/stores.md): it attaches to a master of ours or of Broker's alike.
// Owned by one store actor; single-threaded.
//
// Two channels (replication_channel.hh), two kinds of entity:
//   - reads: a snapshot-mode consumer. Every (re-)attach sends nack{[0]} from a fresh reader
//     entity (object = uid + attach id); the master answers ack_clone to that entity, then
//     broadcasts its effects as actions. A new reader entity per attach is what lets a
//     Broker master, which knows consumers only by entity, serve a fresh snapshot to a clone
//     that starts over.
//   - writes: a writer-mode producer under the clone's fixed entity (object = uid). Once the
//     reader attached to master M, it sends M attach_writer and, after M's first ack, the
//     writes in order. Writes wait in the clone until then, and while M has
//     clone_write_window of them unacknowledged. Nothing on this channel gives up for
//     silence: writes survive outages exactly once. A new master (another entity) gets a
//     new writer channel; writes in flight to the old one are lost (Broker loses them too).
//
// put_unique carries who = our writer entity and a request id; the master's answer comes back
// through the read channel as put_unique_result, after the put it caused.
//
// verdict() asks the master about the writes before it (doc/protocol/stores.md §5): a
// put_unique_result{who = our writer entity, a request id} goes down the write channel
// behind them. Our master answers it through the read channel, after the effects of those
// writes, with the first rejection's code; Broker's master ignores it. So once the master
// has acknowledged the request on the write channel and the read channel holds nothing out
// of order, a missing answer means a master that does not report rejections: the verdict
// is `none` (acknowledged, outcome unknown).

#include "broker/internal/store/replication_channel.hh"
#include "broker/internal/store/store_logic.hh"

#include <deque>
#include <map>
#include <memory>

namespace broker::internal {

/// See the file comment.
class clone_logic final : public store_logic {
public:
  clone_logic(std::string name, entity_id self, store_settings st, store_env& env);

  bool is_master() const noexcept override { return false; }
  void start(timestamp now) override;
  void handle(const std::string& topic, std::string_view bytes, timestamp now) override;
  void tick(timestamp now) override;
  void write(store_op op, timestamp now, std::function<void()> done) override;
  void put_unique(data key, data value, std::optional<timespan> expiry, entity_id publisher,
                  timestamp now, store_reply reply) override;
  void verdict(timestamp now, store_reply reply) override;
  void get(const data& key, const store_reply& reply) override;
  void get_index_from_value(const data& key, const data& index,
                            const store_reply& reply) override;
  void exists(const data& key, const store_reply& reply) override;
  void keys(const store_reply& reply) override;
  bool ready() const noexcept override { return synced_; }
  const error& failure() const noexcept override { return failure_; }
  size_t size() const override;
  store_stats stats() const override;

  /// The entity our reads currently come through (for tests).
  entity_id reader() const noexcept { return reader_entity(reader_.attach_id()); }

  /// The master we are attached to, if any (for tests).
  const std::optional<entity_id>& master() const noexcept { return master_; }

private:
  struct request {
    store_reply reply;
    timestamp deadline;
    bool verdict = false; ///< A verdict request, not a put_unique.
    channel::sequence_number seq = 0; ///< Verdict: its number on the write channel, once sent.
  };

  struct pending_write {
    store_op op;
    std::function<void()> done;
    uint64_t verdict_request = 0; ///< The request id of a verdict request, else 0.
  };

  entity_id reader_entity(uint64_t attach_id) const noexcept;
  bool stale(const store_reply& reply);
  void on_master(const entity_id& master, timestamp now);
  void drain_pending();
  void settle_verdicts();
  void answer(uint64_t req, expected<data> x);
  void send_reader_outputs(const channel::consumer::outputs& outs);
  void send_writer_outputs(const channel::producer::outputs& outs);
  void apply_snapshot(const channel::state_ptr& state);
  void apply_effect(const channel::payload& effect);

  std::unique_ptr<store_backend> state_;
  channel::consumer reader_;
  channel::producer writer_;
  /// The master of the reader's current attachment (receiver of our acks and nacks).
  std::optional<entity_id> reader_master_;
  /// The master our writes go to.
  std::optional<entity_id> master_;
  std::deque<pending_write> pending_;
  std::map<uint64_t, request> requests_;
  uint64_t next_request_ = 1;
  bool synced_ = false;
  error failure_;
};

} // namespace broker::internal
