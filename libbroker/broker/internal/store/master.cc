#include "broker/internal/store/master.hh"

#include <limits>
#include <type_traits>
#include <utility>

namespace broker::internal {

namespace {

/// A writer silent for this many timeouts is gone (or restarted under a new entity).
constexpr uint32_t writer_forget_timeouts = 60;

/// Bound on the unknown writers remembered for rate-limiting handshake requests.
constexpr size_t max_asked = 4096;

/// Rejected writes logged one by one; after these, only at every power of two.
constexpr uint64_t rejections_logged_individually = 10;

channel::producer_config producer_settings(const store_settings& st) {
  channel::producer_config cfg;
  cfg.heartbeat_interval = st.heartbeat_interval;
  cfg.timeout_intervals = st.timeout_intervals;
  cfg.heartbeat_always = true;
  return cfg;
}

channel::consumer_config writer_input_settings(const store_settings& st) {
  channel::consumer_config cfg;
  cfg.attach_interval = st.heartbeat_interval;
  cfg.timeout_intervals = st.timeout_intervals;
  return cfg;
}

std::string where(const std::string& store, const char* what, const data& key) {
  return "store " + store + ": " + what + " of key " + describe_key(key);
}

/// `now + expiry`, saturated at the ends of the clock. An expiry is any int64 nanoseconds a
/// clone (ours or Broker's) sends with a write, so the plain sum may overflow, which is
/// undefined behaviour; saturated, a huge expiry means "never" and a huge negative one
/// "already expired".
timestamp saturated_deadline(timestamp now, timespan expiry) noexcept {
  using rep = timespan::rep;
  rep sum = 0;
  if (__builtin_add_overflow(now.time_since_epoch().count(), expiry.count(), &sum))
    sum = expiry.count() > 0 ? std::numeric_limits<rep>::max()
                             : std::numeric_limits<rep>::min();
  return timestamp{timespan{sum}};
}

/// A clone's write: what a master accepts from a write channel.
bool is_write(const store_op& op) {
  return std::holds_alternative<store_wire::put>(op)
         || std::holds_alternative<store_wire::put_unique>(op)
         || std::holds_alternative<store_wire::erase>(op)
         || std::holds_alternative<store_wire::add>(op)
         || std::holds_alternative<store_wire::subtract>(op)
         || std::holds_alternative<store_wire::clear>(op);
}

} // namespace

master_logic::master_logic(std::string name, entity_id self,
                           std::unique_ptr<store_backend> backend, store_settings st,
                           store_env& env)
  : store_logic(std::move(name), self, st, env),
    be_(std::move(backend)),
    prod_(store_wire::digest(self), producer_settings(st_), [this] { return snapshot(); }),
    forget_after_(st_.heartbeat_interval * st_.timeout_intervals * writer_forget_timeouts) {
  if (auto xs = be_->expiries())
    for (auto& [key, at] : *xs)
      timers_.emplace(at, key);
}

void master_logic::start(timestamp now) {
  clock_ = now;
  if (st_.probe_timeout <= timespan::zero())
    return;
  probing_ = true;
  probe_deadline_ = now + st_.probe_timeout;
  // A throw-away entity of ours asks to attach, as a clone would: any master answers.
  probe_ = entity_id{self_.endpoint, ~self_.object};
  send(mtopic_, store_wire::command{0, probe_, entity_id{}, store_wire::nack{{0}}});
}

void master_logic::handle(const std::string& topic, std::string_view bytes, timestamp now) {
  // Writes from a clone's channel are applied at clock_: it must be now, or their expiries
  // count from the last local write.
  clock_ = now;
  auto cmd = parse(bytes);
  if (!cmd || cmd->sender == self_ || cmd->sender == probe_)
    return;
  if (topic == ctopic_) {
    on_clone_topic(*cmd);
    return;
  }
  if (!cmd->receiver.is_nil() && cmd->receiver != self_)
    return; // For another master (e.g. our predecessor).
  if (store_wire::tag_of(cmd->content) == store_wire::tag::consumer_control)
    on_consumer_control(*cmd, now);
  else
    on_writer_message(*cmd, now);
}

void master_logic::on_consumer_control(const store_wire::command& cmd, timestamp now) {
  channel::message msg;
  if (auto* ack = std::get_if<store_wire::cumulative_ack>(&cmd.content)) {
    msg = channel::cumulative_ack{ack->seq};
  } else {
    auto& seqs = std::get<store_wire::nack>(cmd.content).seqs;
    if (seqs.empty()) {
      reject(cmd, "a nack without sequence numbers");
      return;
    }
    if (seqs.front() == 0)
      msg = channel::attach{};
    else
      msg = channel::nack{seqs};
  }
  send_outputs(prod_.handle_message(cmd.sender, msg, now));
}

void master_logic::on_writer_message(const store_wire::command& cmd, timestamp now) {
  auto epoch = store_wire::digest(cmd.sender);
  if (auto* open = std::get_if<store_wire::attach_writer>(&cmd.content)) {
    if (auto i = writers_.find(cmd.sender); i != writers_.end()) {
      i->second.last_heard = now; // Repeated: ignored, as Broker's master does.
      return;
    }
    auto writer_id = cmd.sender;
    auto cons = std::make_unique<channel::consumer>(
      writer_input_settings(st_), [](const channel::state_ptr&) {},
      [this, writer_id](const channel::payload& op) { deliver(writer_id, op); },
      [this, writer_id](channel::sequence_number seq) {
        env_.warn("store " + name_ + ": lost write " + std::to_string(seq) + " of "
                  + to_string(writer_id) + " (its clone could not retransmit it)");
      });
    auto& ref = *cons;
    writers_.emplace(writer_id, writer{std::move(cons), now, error{}});
    asked_.erase(writer_id);
    channel::handshake hs{epoch, 0, open->offset, from_ticks(open->heartbeat_interval), nullptr};
    send_writer_outputs(writer_id, ref.accept(hs, now));
    return;
  }
  channel::message msg;
  if (auto* alive = std::get_if<store_wire::keepalive>(&cmd.content)) {
    msg = channel::heartbeat{epoch, alive->seq};
  } else if (auto* failed = std::get_if<store_wire::retransmit_failed>(&cmd.content)) {
    msg = channel::retransmit_failed{epoch, failed->seq};
  } else if (store_wire::tag_of(cmd.content) == store_wire::tag::action) {
    if (!is_write(cmd.content) && !std::holds_alternative<store_wire::put_unique_result>(
                                    cmd.content)) { // That one: a verdict request.
      reject(cmd, "not a write");
      return;
    }
    if (cmd.seq == 0) {
      reject(cmd, "a write without a sequence number");
      return;
    }
    msg = channel::event{epoch, cmd.seq, cmd.content};
  } else {
    return; // ack_clone: a master's message, not for us.
  }
  auto i = writers_.find(cmd.sender);
  if (i == writers_.end()) {
    ask_handshake(cmd.sender, now);
    return;
  }
  i->second.last_heard = now;
  auto outs = i->second.cons->handle(msg, now);
  send_writer_outputs(cmd.sender, outs);
}

void master_logic::deliver(const entity_id& writer_id, const store_op& op) {
  auto i = writers_.find(writer_id);
  if (auto* ask = std::get_if<store_wire::put_unique_result>(&op)) {
    // A verdict request of our clone: answered after the effects of its writes before it.
    error first;
    if (i != writers_.end())
      first = std::exchange(i->second.rejection, error{});
    auto code = first ? static_cast<uint64_t>(first.code()) : 0;
    produce(store_wire::put_unique_result{!first, writer_id, ask->req_id,
                                          entity_id{self_.endpoint, code}});
    return;
  }
  rejection_ = error{};
  apply(op, clock_, nullptr);
  if (rejection_ && i != writers_.end() && !i->second.rejection)
    i->second.rejection = rejection_;
}

void master_logic::ask_handshake(const entity_id& writer, timestamp now) {
  auto i = asked_.find(writer);
  if (i != asked_.end() && now - i->second < st_.heartbeat_interval)
    return;
  if (i == asked_.end() && asked_.size() >= max_asked)
    return; // tick() prunes; a writer that keeps talking gets its turn.
  asked_[writer] = now;
  send(ctopic_, store_wire::command{0, self_, writer, store_wire::nack{{0}}});
}

void master_logic::on_clone_topic(const store_wire::command& cmd) {
  // Only masters send on the clone topic: this is another one.
  auto* answer = std::get_if<store_wire::ack_clone>(&cmd.content);
  if (answer != nullptr && cmd.receiver != probe_)
    answer = nullptr; // Its answer to someone else.
  if (!probing_) {
    another_master(cmd.sender, "runs as well");
    return;
  }
  if (answer != nullptr) {
    // Confirm, so that it drops the snapshot it keeps for us; our probe entity then falls
    // silent and is dropped.
    send(mtopic_, store_wire::command{0, probe_, cmd.sender,
                                      store_wire::cumulative_ack{answer->offset}});
  }
  probing_ = false;
  failure_ = error{ec::master_exists, "store " + name_ + ": another master runs at "
                                        + to_string(cmd.sender)};
}

void master_logic::another_master(const entity_id& who, const char* how) {
  if (other_master_ == who)
    return;
  other_master_ = who;
  env_.warn("store " + name_ + ": another master (" + to_string(who) + ") " + how
            + "; clones follow whichever answers them first");
}

void master_logic::tick(timestamp now) {
  clock_ = now;
  if (probing_ && now >= probe_deadline_)
    probing_ = false;
  if (!probing_)
    send_outputs(prod_.tick(now));
  for (auto i = writers_.begin(); i != writers_.end();) {
    if (now - i->second.last_heard > forget_after_) {
      i = writers_.erase(i);
      continue;
    }
    auto outs = i->second.cons->tick(now);
    send_writer_outputs(i->first, outs);
    ++i;
  }
  for (auto i = asked_.begin(); i != asked_.end();) {
    if (now - i->second >= st_.heartbeat_interval)
      i = asked_.erase(i);
    else
      ++i;
  }
  expire(now);
}

void master_logic::flush() {
  if (!batch_open_)
    return;
  batch_open_ = false;
  if (auto err = be_->commit_batch())
    env_.write_failed(error{err.code(), "store " + name_ + ": " + err.message()});
}

void master_logic::write(store_op op, timestamp now, std::function<void()> done) {
  rejection_ = error{};
  apply(op, now, nullptr);
  if (rejection_ && !local_rejection_)
    local_rejection_ = rejection_;
  if (done)
    done();
}

void master_logic::verdict(timestamp, store_reply reply) {
  // Local writes are applied in order before this runs.
  if (local_rejection_)
    reply(std::exchange(local_rejection_, error{}));
  else
    reply(data{true});
}

void master_logic::put_unique(data key, data value, std::optional<timespan> expiry,
                              entity_id publisher, timestamp now, store_reply reply) {
  store_wire::put_unique op{std::move(key), std::move(value), expiry, entity_id{}, 0,
                            publisher};
  clock_ = now;
  begin();
  apply_put_unique(op, now, &reply);
}

void master_logic::get(const data& key, const store_reply& reply) {
  reply(be_->get(key));
}

void master_logic::get_index_from_value(const data& key, const data& index,
                                        const store_reply& reply) {
  reply(be_->get_index_from_value(key, index));
}

void master_logic::exists(const data& key, const store_reply& reply) {
  auto x = be_->exists(key);
  if (x)
    reply(data{*x});
  else
    reply(x.error_value());
}

void master_logic::keys(const store_reply& reply) {
  reply(be_->keys());
}

size_t master_logic::size() const {
  auto n = be_->size();
  return n ? static_cast<size_t>(*n) : 0;
}

store_stats master_logic::stats() const {
  store_stats result;
  result.name = name_;
  result.master = true;
  result.entries = size();
  result.output_channels = prod_.consumers().size();
  result.unacknowledged_updates = prod_.buffered();
  result.processed_updates = prod_.acknowledged();
  result.rejected_writes = rejected_;
  for (auto& [who, w] : writers_) {
    if (w.cons->current_state() == channel::consumer::state::attached)
      ++result.input_channels;
    result.out_of_order_updates += w.cons->buffered();
  }
  return result;
}

channel::state_ptr master_logic::snapshot() {
  auto xs = be_->snapshot();
  if (!xs) {
    env_.write_failed(error{xs.error_value().code(), "store " + name_
                                                       + ": cannot take a snapshot: "
                                                       + xs.error_value().message()});
    return std::make_shared<const store_wire::snapshot>();
  }
  return std::make_shared<const store_wire::snapshot>(std::move(*xs));
}

void master_logic::send_outputs(const channel::producer::outputs& outs) {
  for (auto& out : outs) {
    auto to = out.to.value_or(entity_id{});
    std::visit(
      [&](const auto& msg) {
        using type = std::decay_t<decltype(msg)>;
        if constexpr (std::is_same_v<type, channel::event>) {
          // Retransmissions too go out as broadcasts, as in Broker: whoever lacks it takes it.
          send(ctopic_, store_wire::command{msg.seq, self_, entity_id{}, msg.content});
        } else if constexpr (std::is_same_v<type, channel::heartbeat>) {
          send(ctopic_, store_wire::command{0, self_, entity_id{}, store_wire::keepalive{msg.seq}});
        } else if constexpr (std::is_same_v<type, channel::handshake>) {
          auto state = msg.state ? msg.state : std::make_shared<const store_wire::snapshot>();
          store_wire::ack_clone answer{msg.offset, to_ticks(msg.heartbeat_interval), state};
          send(ctopic_, store_wire::command{msg.offset, self_, to, std::move(answer)});
        } else if constexpr (std::is_same_v<type, channel::retransmit_failed>) {
          send(ctopic_, store_wire::command{0, self_, to, store_wire::retransmit_failed{msg.seq}});
        }
      },
      out.msg);
  }
}

void master_logic::send_writer_outputs(const entity_id& writer,
                                       const channel::consumer::outputs& outs) {
  for (auto& msg : outs) {
    if (auto* ack = std::get_if<channel::cumulative_ack>(&msg))
      send(ctopic_, store_wire::command{0, self_, writer, store_wire::cumulative_ack{ack->seq}});
    else if (auto* request = std::get_if<channel::nack>(&msg))
      send(ctopic_, store_wire::command{0, self_, writer, store_wire::nack{request->seqs}});
  }
}

void master_logic::produce(store_op effect) {
  send_outputs(prod_.produce(std::move(effect)));
}

void master_logic::begin() {
  if (batch_open_)
    return;
  if (auto err = be_->begin_batch(); !err)
    batch_open_ = true;
}

void master_logic::fail(const error& err, const char* what, const data& key) {
  error rejected{err.code(), where(name_, what, key) + ": " + err.message()};
  // A rejected write is lost to its writer: it shows in the log, the metrics, an error
  // event and the writer's next verdict.
  ++rejected_;
  if (rejected_ <= rejections_logged_individually || (rejected_ & (rejected_ - 1)) == 0)
    env_.warn(rejected.message() + " (rejected write " + std::to_string(rejected_) + ")");
  env_.write_failed(rejected);
  if (!rejection_)
    rejection_ = std::move(rejected);
}

void master_logic::apply(const store_op& op, timestamp now, store_reply* reply) {
  clock_ = now;
  begin();
  if (auto* request = std::get_if<store_wire::put_unique>(&op))
    apply_put_unique(*request, now, reply);
  else
    apply_change(op, now);
}

void master_logic::apply_put_unique(const store_wire::put_unique& op, timestamp now,
                                    store_reply* reply) {
  auto inserted = be_->put_unique(op.key, op.value, deadline(now, op.expiry));
  if (inserted && *inserted)
    changed(op.key, expected<data>{ec::no_such_key}, op.value, op.expiry, op.expiry,
            op.publisher);
  if (!inserted)
    fail(inserted.error_value(), "put_unique", op.key);
  if (reply != nullptr) {
    if (inserted)
      (*reply)(data{*inserted});
    else
      (*reply)(inserted.error_value());
    return;
  }
  // Through the channel, after the put: the asking clone learns the verdict once it holds
  // the value (Broker's master does the same).
  produce(store_wire::put_unique_result{inserted && *inserted, op.who, op.req_id, self_});
}

void master_logic::apply_change(const store_op& op, timestamp now) {
  if (auto* x = std::get_if<store_wire::put>(&op)) {
    auto old = be_->get(x->key);
    if (auto err = be_->put(x->key, x->value, deadline(now, x->expiry))) {
      fail(err, "put", x->key);
      return;
    }
    changed(x->key, old, x->value, x->expiry, x->expiry, x->publisher);
  } else if (auto* x = std::get_if<store_wire::erase>(&op)) {
    auto had = be_->exists(x->key);
    if (auto err = be_->erase(x->key)) {
      fail(err, "erase", x->key);
      return;
    }
    if (had && *had) {
      produce(store_wire::erase{x->key, x->publisher});
      emit_erase("erase", x->key, x->publisher);
    }
  } else if (auto* x = std::get_if<store_wire::add>(&op)) {
    auto old = be_->get(x->key);
    if (auto err = be_->add(x->key, x->value, x->init_type, deadline(now, x->expiry))) {
      fail(err, "add", x->key);
      return;
    }
    if (auto value = be_->get(x->key))
      changed(x->key, old, *value, x->expiry, std::nullopt, x->publisher);
  } else if (auto* x = std::get_if<store_wire::subtract>(&op)) {
    auto old = be_->get(x->key);
    if (auto err = be_->subtract(x->key, x->value, deadline(now, x->expiry))) {
      fail(err, "subtract", x->key);
      return;
    }
    if (auto value = be_->get(x->key))
      changed(x->key, old, *value, x->expiry, std::nullopt, x->publisher);
  } else if (auto* x = std::get_if<store_wire::clear>(&op)) {
    auto ks = be_->keys();
    if (auto err = be_->clear()) {
      fail(err, "clear", data{});
      return;
    }
    produce(store_wire::clear{x->publisher});
    if (ks)
      if (auto* xs = get_if<set>(*ks))
        for (auto& k : *xs)
          emit_erase("erase", k, x->publisher);
  }
}

std::optional<timestamp> master_logic::deadline(timestamp now, std::optional<timespan> expiry) {
  if (!expiry)
    return std::nullopt;
  return saturated_deadline(now, *expiry); // changed() arms the timer.
}

void master_logic::changed(const data& key, const expected<data>& old, const data& value,
                           std::optional<timespan> expiry,
                           std::optional<timespan> effect_expiry, const entity_id& publisher) {
  if (expiry)
    timers_.emplace(saturated_deadline(clock_, *expiry), key);
  // Broker's clones take the put as it is; its expiry is informational there (clones never
  // expire keys), and add/subtract travel as plain puts of the result.
  produce(store_wire::put{key, value, effect_expiry, publisher});
  if (old)
    emit_update(key, *old, value, expiry, publisher);
  else
    emit_insert(key, value, expiry, publisher);
}

void master_logic::expire(timestamp now) {
  while (!timers_.empty() && timers_.begin()->first <= now) {
    auto key = std::move(timers_.begin()->second);
    timers_.erase(timers_.begin());
    begin();
    auto gone = be_->expire(key, now);
    if (gone && *gone) {
      produce(store_wire::expire{key, self_});
      emit_erase("expire", key, self_);
    }
  }
}

std::unique_ptr<store_logic> make_master_logic(std::string name, entity_id self,
                                               std::unique_ptr<store_backend> backend,
                                               store_settings settings, store_env& env) {
  return std::make_unique<master_logic>(std::move(name), self, std::move(backend), settings,
                                        env);
}

} // namespace broker::internal
