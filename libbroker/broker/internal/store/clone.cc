#include "broker/internal/store/clone.hh"

#include <type_traits>
#include <utility>

namespace broker::internal {

namespace {

/// Writes waiting in a clone for its master; beyond this, writes fail visibly.
constexpr size_t max_pending_writes = 1 << 20;

channel::consumer_config reader_settings(const store_settings& st) {
  channel::consumer_config cfg;
  cfg.attach_interval = st.heartbeat_interval;
  cfg.timeout_intervals = st.timeout_intervals;
  return cfg;
}

channel::producer_config writer_settings(const store_settings& st) {
  channel::producer_config cfg;
  cfg.heartbeat_interval = st.heartbeat_interval;
  // Never give up on the master for silence: dropping it would lose the writes in flight.
  // After an outage of any length the acks resume and gaps are nacked and retransmitted.
  cfg.timeout_intervals = 0;
  return cfg;
}

} // namespace

clone_logic::clone_logic(std::string name, entity_id self, store_settings st, store_env& env)
  : store_logic(std::move(name), self, st, env),
    state_(make_memory_backend()),
    reader_(reader_settings(st_), [this](const channel::state_ptr& x) { apply_snapshot(x); },
            [this](const channel::payload& x) { apply_effect(x); }),
    writer_(store_wire::digest(self), writer_settings(st_), {}) {}

void clone_logic::start(timestamp now) {
  send_reader_outputs(reader_.start(now));
}

entity_id clone_logic::reader_entity(uint64_t attach_id) const noexcept {
  return entity_id{self_.endpoint, self_.object + attach_id};
}

void clone_logic::handle(const std::string&, std::string_view bytes, timestamp now) {
  auto cmd = parse(bytes);
  if (!cmd)
    return;
  const auto& to = cmd->receiver;
  auto epoch = store_wire::digest(cmd->sender);
  auto current = reader_entity(reader_.attach_id());
  auto feed = [&](const channel::message& msg) {
    send_reader_outputs(reader_.handle(msg, now));
  };
  if (auto* answer = std::get_if<store_wire::ack_clone>(&cmd->content)) {
    if (to.endpoint != self_.endpoint)
      return;
    // The receiver names the attach it answers; the reader takes only the current one.
    auto attach_id = to.object - self_.object;
    auto before = reader_.snapshots();
    channel::handshake hs{epoch, attach_id, answer->offset,
                          from_ticks(answer->heartbeat_interval), answer->state};
    auto outs = reader_.handle(hs, now);
    if (reader_.snapshots() != before)
      reader_master_ = cmd->sender;
    send_reader_outputs(outs);
    if (reader_.snapshots() != before)
      on_master(cmd->sender, now);
    return;
  }
  bool for_reader = to.is_nil() || to == current;
  switch (store_wire::tag_of(cmd->content)) {
    case store_wire::tag::action:
      if (!for_reader)
        return;
      if (cmd->seq == 0) {
        reject(*cmd, "an update without a sequence number");
        return;
      }
      feed(channel::event{epoch, cmd->seq, cmd->content});
      return;
    case store_wire::tag::producer_control:
      if (auto* alive = std::get_if<store_wire::keepalive>(&cmd->content); alive && for_reader)
        feed(channel::heartbeat{epoch, alive->seq});
      else if (auto* failed = std::get_if<store_wire::retransmit_failed>(&cmd->content);
               failed && to == current)
        feed(channel::retransmit_failed{epoch, failed->seq});
      return;
    case store_wire::tag::consumer_control:
      break;
  }
  // The master's acks and nacks for our writes.
  if (to != self_ || !master_ || cmd->sender != *master_)
    return;
  channel::message msg;
  if (auto* ack = std::get_if<store_wire::cumulative_ack>(&cmd->content)) {
    msg = channel::cumulative_ack{ack->seq};
  } else {
    auto& seqs = std::get<store_wire::nack>(cmd->content).seqs;
    if (seqs.empty()) {
      reject(*cmd, "a nack without sequence numbers");
      return;
    }
    if (seqs.front() == 0)
      msg = channel::attach{}; // The master lost our channel: resume it.
    else
      msg = channel::nack{seqs};
  }
  send_writer_outputs(writer_.handle_message(cmd->sender, msg, now));
  drain_pending();
  settle_verdicts();
}

void clone_logic::on_master(const entity_id& master, timestamp now) {
  if (master_ == master)
    return; // Re-attached to the same master: the write channel goes on.
  // A new master (or a restarted one): its predecessor will never ack our writes.
  if (master_)
    writer_.detach(*master_);
  std::vector<uint64_t> orphans; // Verdict requests the old master got.
  for (auto& [req, r] : requests_)
    if (r.verdict && r.seq != 0)
      orphans.push_back(req);
  for (auto req : orphans)
    answer(req, error{ec::no_such_master, "store " + name_ + ": the master changed before it "
                                          "answered; writes in flight to the old one are lost"});
  master_ = master;
  send_writer_outputs(writer_.add(master, now));
}

void clone_logic::tick(timestamp now) {
  send_reader_outputs(reader_.tick(now));
  send_writer_outputs(writer_.tick(now));
  drain_pending();
  settle_verdicts();
  for (auto i = requests_.begin(); i != requests_.end();) {
    if (i->second.deadline > now) {
      ++i;
      continue;
    }
    auto reply = std::move(i->second.reply);
    auto verdict = i->second.verdict;
    i = requests_.erase(i);
    if (reader_.current_state() == channel::consumer::state::attached)
      reply(error{ec::request_timeout, "store " + name_ + ": the master did not answer"});
    else if (verdict)
      reply(error{ec::no_such_master, "store " + name_ + ": no master reachable; the writes "
                                        "wait in the clone until one is"});
    else
      reply(error{ec::no_such_master, "store " + name_ + ": no master reachable"});
  }
}

void clone_logic::write(store_op op, timestamp, std::function<void()> done) {
  if (pending_.size() >= max_pending_writes) {
    env_.write_failed(error{ec::no_such_master, "store " + name_ + ": write dropped, "
                                                  + std::to_string(max_pending_writes)
                                                  + " writes already wait for a master"});
    if (done)
      done();
    return;
  }
  pending_.push_back(pending_write{std::move(op), std::move(done)});
  drain_pending();
}

void clone_logic::put_unique(data key, data value, std::optional<timespan> expiry,
                             entity_id publisher, timestamp now, store_reply reply) {
  auto req = next_request_++;
  requests_.emplace(req, request{std::move(reply), now + st_.request_timeout});
  write(store_wire::put_unique{std::move(key), std::move(value), expiry, self_, req, publisher},
        now, {});
}

void clone_logic::verdict(timestamp now, store_reply reply) {
  auto req = next_request_++;
  requests_.emplace(req, request{std::move(reply), now + st_.request_timeout, true});
  // Behind every write made so far, through the same queue.
  pending_.push_back(pending_write{store_wire::put_unique_result{false, self_, req, self_},
                                   {}, req});
  drain_pending();
}

void clone_logic::answer(uint64_t req, expected<data> x) {
  auto i = requests_.find(req);
  if (i == requests_.end())
    return;
  auto reply = std::move(i->second.reply);
  requests_.erase(i);
  reply(std::move(x));
}

void clone_logic::settle_verdicts() {
  if (!master_ || reader_.buffered() != 0)
    return; // An answer may still wait behind a gap of the read channel.
  auto acked = writer_.acked(*master_);
  if (!acked)
    return;
  std::vector<uint64_t> settled;
  for (auto& [req, r] : requests_)
    if (r.verdict && r.seq != 0 && r.seq <= *acked)
      settled.push_back(req);
  // Acknowledged, and our master would have answered before its ack: this master does not
  // report rejections (Zeek Broker's).
  for (auto req : settled)
    answer(req, data{});
}

void clone_logic::get(const data& key, const store_reply& reply) {
  if (!stale(reply))
    reply(state_->get(key));
}

void clone_logic::get_index_from_value(const data& key, const data& index,
                                       const store_reply& reply) {
  if (!stale(reply))
    reply(state_->get_index_from_value(key, index));
}

void clone_logic::exists(const data& key, const store_reply& reply) {
  if (stale(reply))
    return;
  auto x = state_->exists(key);
  reply(x ? expected<data>{data{*x}} : expected<data>{x.error_value()});
}

void clone_logic::keys(const store_reply& reply) {
  if (!stale(reply))
    reply(state_->keys());
}

size_t clone_logic::size() const {
  auto n = state_->size();
  return n ? static_cast<size_t>(*n) : 0;
}

store_stats clone_logic::stats() const {
  store_stats result;
  result.name = name_;
  result.entries = size();
  result.input_channels = reader_.current_state() == channel::consumer::state::attached;
  result.output_channels = writer_.consumers().size();
  result.out_of_order_updates = reader_.buffered();
  result.unacknowledged_updates = writer_.buffered();
  result.processed_updates = writer_.acknowledged();
  return result;
}

bool clone_logic::stale(const store_reply& reply) {
  if (synced_)
    return false;
  reply(error{ec::stale_data, "store " + name_ + ": the clone has no data from its master yet"});
  return true;
}

void clone_logic::drain_pending() {
  // Writes go out once the master acknowledged our handshake, in windows of unacked ones.
  if (!master_ || !writer_.confirmed(*master_))
    return;
  while (!pending_.empty() && writer_.buffered() < clone_write_window) {
    auto next = std::move(pending_.front());
    pending_.pop_front();
    send_writer_outputs(writer_.produce(std::move(next.op)));
    if (next.verdict_request != 0)
      if (auto i = requests_.find(next.verdict_request); i != requests_.end())
        i->second.seq = writer_.last_seq();
    if (next.done)
      next.done();
  }
}

void clone_logic::send_reader_outputs(const channel::consumer::outputs& outs) {
  auto me = reader_entity(reader_.attach_id());
  auto master = reader_master_.value_or(entity_id{});
  for (auto& msg : outs) {
    if (auto* request = std::get_if<channel::attach>(&msg)) {
      // Addressed to no one: whichever master runs answers.
      send(mtopic_, store_wire::command{0, reader_entity(request->id), entity_id{},
                                        store_wire::nack{{0}}});
    } else if (auto* ack = std::get_if<channel::cumulative_ack>(&msg)) {
      send(mtopic_, store_wire::command{0, me, master, store_wire::cumulative_ack{ack->seq}});
    } else if (auto* gap = std::get_if<channel::nack>(&msg)) {
      send(mtopic_, store_wire::command{0, me, master, store_wire::nack{gap->seqs}});
    }
  }
}

void clone_logic::send_writer_outputs(const channel::producer::outputs& outs) {
  for (auto& out : outs) {
    auto to = out.to.value_or(master_.value_or(entity_id{}));
    std::visit(
      [&](const auto& msg) {
        using type = std::decay_t<decltype(msg)>;
        if constexpr (std::is_same_v<type, channel::handshake>) {
          store_wire::attach_writer open{msg.offset, to_ticks(msg.heartbeat_interval)};
          send(mtopic_, store_wire::command{0, self_, to, open});
        } else if constexpr (std::is_same_v<type, channel::event>) {
          send(mtopic_, store_wire::command{msg.seq, self_, to, msg.content});
        } else if constexpr (std::is_same_v<type, channel::heartbeat>) {
          send(mtopic_, store_wire::command{0, self_, entity_id{}, store_wire::keepalive{msg.seq}});
        } else if constexpr (std::is_same_v<type, channel::retransmit_failed>) {
          send(mtopic_, store_wire::command{0, self_, to, store_wire::retransmit_failed{msg.seq}});
        }
      },
      out.msg);
  }
}

void clone_logic::apply_snapshot(const channel::state_ptr& state) {
  state_->clear();
  if (state)
    for (auto& [key, value] : *state)
      state_->put(key, value, std::nullopt);
  synced_ = true;
}

void clone_logic::apply_effect(const channel::payload& effect) {
  if (auto* x = std::get_if<store_wire::put>(&effect)) {
    auto old = state_->get(x->key);
    state_->put(x->key, x->value, std::nullopt);
    if (old)
      emit_update(x->key, *old, x->value, x->expiry, x->publisher);
    else
      emit_insert(x->key, x->value, x->expiry, x->publisher);
  } else if (auto* x = std::get_if<store_wire::erase>(&effect)) {
    auto had = state_->exists(x->key);
    state_->erase(x->key);
    if (had && *had)
      emit_erase("erase", x->key, x->publisher);
  } else if (auto* x = std::get_if<store_wire::expire>(&effect)) {
    auto had = state_->exists(x->key);
    state_->erase(x->key);
    if (had && *had)
      emit_erase("expire", x->key, x->publisher);
  } else if (auto* x = std::get_if<store_wire::clear>(&effect)) {
    auto ks = state_->keys();
    state_->clear();
    if (ks)
      if (auto* xs = get_if<set>(*ks))
        for (auto& k : *xs)
          emit_erase("erase", k, x->publisher);
  } else if (auto* x = std::get_if<store_wire::put_unique_result>(&effect)) {
    if (x->who != self_)
      return; // Another clone's answer.
    auto i = requests_.find(x->req_id);
    if (i == requests_.end())
      return;
    if (!i->second.verdict) {
      answer(x->req_id, data{x->inserted});
    } else if (x->inserted) {
      answer(x->req_id, data{true});
    } else {
      // Our master's answer carries the code of the first rejection (doc/protocol/stores.md
      // §5); its log and error event have the details.
      auto code = x->publisher.object;
      auto rejected = code > 0 && code <= 0xff ? static_cast<ec>(code) : ec::unspecified;
      answer(x->req_id, error{rejected, "store " + name_ + ": the master rejected a write ("
                                          + std::string{to_string(rejected)}
                                          + "); its log names the key and the reason"});
    }
  }
}

std::unique_ptr<store_logic> make_clone_logic(std::string name, entity_id self,
                                              store_settings settings, store_env& env) {
  return std::make_unique<clone_logic>(std::move(name), self, settings, env);
}

} // namespace broker::internal
