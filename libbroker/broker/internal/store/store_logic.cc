#include "broker/internal/store/store_logic.hh"

#include "broker/topic.hh"

#include <utility>

namespace broker::internal {

store_env::~store_env() = default;

store_logic::~store_logic() = default;

std::string master_topic(const std::string& name) {
  return name + "/<$>/data/master";
}

std::string clone_topic(const std::string& name) {
  return name + "/<$>/data/clone";
}

namespace {

/// Writes waiting in a clone for its master; beyond this, writes fail visibly.
constexpr size_t max_pending_writes = 1 << 20;

data opt_span(std::optional<timespan> x) {
  return x ? data{*x} : data{};
}

// -- reading envelopes ------------------------------------------------------------------

const vector* as_vector(const data& x, size_t min_size) {
  auto* xs = get_if<vector>(x);
  return xs != nullptr && xs->size() >= min_size ? xs : nullptr;
}

const std::string* as_string(const data& x) {
  return get_if<std::string>(x);
}

std::optional<uint64_t> as_count(const data& x) {
  if (auto* c = get_if<count>(x))
    return *c;
  return std::nullopt;
}

/// An expiry field: nil or a timespan (anything else counts as none).
std::optional<timespan> as_expiry(const data& x) {
  if (auto* t = get_if<timespan>(x))
    return *t;
  return std::nullopt;
}

std::string publisher_of(const vector& op) {
  if (auto* s = as_string(op.back()))
    return *s;
  return {};
}

std::string where(const std::string& store, const char* what, const data& key) {
  std::string result = "store ";
  result += store;
  result += ": ";
  result += what;
  result += " of key ";
  result += describe_key(key);
  return result;
}

data event_insert(const std::string& store, const data& key, const data& value,
                  std::optional<timespan> expiry, const std::string& publisher) {
  return vector{"insert", store, key, value, opt_span(expiry), publisher};
}

data event_update(const std::string& store, const data& key, const data& old_value,
                  const data& new_value, std::optional<timespan> expiry,
                  const std::string& publisher) {
  return vector{"update", store, key, old_value, new_value, opt_span(expiry), publisher};
}

data event_erase(const char* what, const std::string& store, const data& key,
                 const std::string& publisher) {
  return vector{what, store, key, publisher};
}

channel::producer_config producer_settings(const store_settings& st) {
  channel::producer_config cfg;
  cfg.heartbeat_interval = st.heartbeat_interval;
  cfg.timeout_intervals = st.timeout_intervals;
  return cfg;
}

/// A clone's write channel never gives up on its master for silence: dropping it (or
/// re-attaching) would lose the writes in flight. After an outage of any length the
/// heartbeats resume and gaps are nacked and retransmitted, so every write arrives exactly
/// once. A master that went away for good is detached as soon as the clone attaches to its
/// successor; a clone that went away is forgotten when the master's main channel drops it.
constexpr uint32_t write_channel_timeout_intervals = 1'000'000;

channel::producer_config write_producer_settings(const store_settings& st) {
  auto cfg = producer_settings(st);
  cfg.timeout_intervals = write_channel_timeout_intervals;
  return cfg;
}

channel::consumer_config consumer_settings(const store_settings& st) {
  channel::consumer_config cfg;
  cfg.attach_interval = st.heartbeat_interval;
  cfg.timeout_intervals = st.timeout_intervals;
  return cfg;
}

// -- master -----------------------------------------------------------------------------

class master_logic final : public store_logic {
public:
  master_logic(std::string name, uint64_t uid, std::unique_ptr<store_backend> backend,
               store_settings st, store_env& env)
    : store_logic(std::move(name), uid),
      env_(env),
      st_(st),
      be_(std::move(backend)),
      prod_(uid, producer_settings(st), [this] { return snapshot(); },
            // A dropped clone re-attaches for a snapshot; its write channel keeps
            // running, or the writes in flight on it would be lost (see forget_after_).
            [](channel::consumer_handle, channel::producer::drop_reason) {}),
      mtopic_(master_topic(name_)),
      ctopic_(clone_topic(name_)),
      forget_after_(st.heartbeat_interval * st.timeout_intervals * 60) {
    if (auto xs = be_->expiries())
      for (auto& [key, at] : *xs)
        timers_.emplace(at, key);
  }

  bool is_master() const noexcept override { return true; }

  void start(timestamp now) override {
    if (st_.probe_timeout.count() > 0) {
      probing_ = true;
      probe_deadline_ = now + st_.probe_timeout;
      env_.send_command(mtopic_, vector{"probe", uid_});
    }
  }

  void handle(const data& msg, timestamp now) override {
    // Writes from a clone's channel are applied at clock_: it must be now, or their
    // expiries count from the last local write (or from the epoch before the first one).
    clock_ = now;
    auto* xs = as_vector(msg, 2);
    if (xs == nullptr)
      return;
    auto* tag = as_string((*xs)[0]);
    if (tag == nullptr)
      return;
    if (*tag == "c" && xs->size() == 3) {
      auto clone = as_count((*xs)[1]);
      auto m = channel::decode((*xs)[2]);
      if (!clone || !m)
        return;
      if (std::holds_alternative<channel::attach>(*m))
        writer_for(*clone, now);
      send_outputs(prod_.handle(*clone, *m, now));
    } else if (*tag == "w" && xs->size() == 3) {
      auto clone = as_count((*xs)[1]);
      auto m = channel::decode((*xs)[2]);
      if (!clone || !m)
        return;
      auto& w = writer_for(*clone, now);
      writers_[*clone].last_heard = now;
      send_writer_outputs(*clone, w.handle(*m, now));
    } else if (*tag == "probe") {
      auto other = as_count((*xs)[1]);
      if (other && *other != uid_)
        env_.send_command(mtopic_, vector{"exists", *other, uid_});
    } else if (*tag == "exists" && xs->size() == 3) {
      auto to = as_count((*xs)[1]);
      if (probing_ && to && *to == uid_) {
        probing_ = false;
        failure_ = error{ec::master_exists,
                         "store " + name_ + ": another master runs in the network"};
      }
    }
  }

  void tick(timestamp now) override {
    clock_ = now;
    if (probing_ && now >= probe_deadline_)
      probing_ = false;
    send_outputs(prod_.tick(now));
    for (auto i = writers_.begin(); i != writers_.end();) {
      // A clone silent for 60 timeouts is gone (or restarted under a new id).
      if (now - i->second.last_heard > forget_after_) {
        i = writers_.erase(i);
        continue;
      }
      send_writer_outputs(i->first, i->second.cons->tick(now));
      ++i;
    }
    expire(now);
  }

  void flush() override {
    if (!batch_open_)
      return;
    batch_open_ = false;
    if (auto err = be_->commit_batch())
      env_.write_failed(error{err.code(), "store " + name_ + ": " + err.message()});
  }

  void write(data op, timestamp now, std::function<void()> done) override {
    apply(op, now, 0, nullptr);
    if (done)
      done();
  }

  void put_unique(data key, data value, std::optional<timespan> expiry, std::string publisher,
                  timestamp now, store_reply reply) override {
    data op = vector{"put_unique", std::move(key), std::move(value), opt_span(expiry),
                     count{0}, count{0}, std::move(publisher)};
    apply(op, now, 0, &reply);
  }

  void get(const data& key, const store_reply& reply) override {
    reply(be_->get(key));
  }

  void get_index_from_value(const data& key, const data& index,
                            const store_reply& reply) override {
    reply(be_->get_index_from_value(key, index));
  }

  void exists(const data& key, const store_reply& reply) override {
    auto x = be_->exists(key);
    if (x)
      reply(data{*x});
    else
      reply(x.error_value());
  }

  void keys(const store_reply& reply) override {
    reply(be_->keys());
  }

  bool ready() const noexcept override { return !probing_ && !failure_; }

  const error& failure() const noexcept override { return failure_; }

  size_t size() const override {
    auto n = be_->size();
    return n ? static_cast<size_t>(*n) : 0;
  }

  store_stats stats() const override {
    store_stats result;
    result.name = name_;
    result.master = true;
    result.entries = size();
    result.output_channels = prod_.consumers().size();
    result.unacknowledged_updates = prod_.buffered();
    result.processed_updates = prod_.last_seq() - std::min<uint64_t>(prod_.last_seq(),
                                                                    prod_.buffered());
    for (auto& [clone, w] : writers_) {
      if (w.cons->current_state() == channel::consumer::state::attached)
        ++result.input_channels;
      result.out_of_order_updates += w.cons->buffered();
    }
    return result;
  }

private:
  data snapshot() {
    vector result;
    if (auto xs = be_->snapshot()) {
      result.reserve(xs->size());
      for (auto& [k, v] : *xs)
        result.emplace_back(vector{std::move(k), std::move(v)});
    } else {
      env_.write_failed(error{xs.error_value().code(), "store " + name_
                                                         + ": cannot take a snapshot: "
                                                         + xs.error_value().message()});
    }
    return result;
  }

  channel::consumer& writer_for(uint64_t clone, timestamp now) {
    auto i = writers_.find(clone);
    if (i != writers_.end())
      return *i->second.cons;
    auto cfg = consumer_settings(st_);
    cfg.timeout_intervals = write_channel_timeout_intervals; // See there.
    auto w = std::make_unique<channel::consumer>(
      cfg, [](const data&) {},
      [this, clone](const data& op) { apply(op, clock_, clone, nullptr); });
    auto& ref = *w;
    writers_.emplace(clone, writer{std::move(w), now});
    send_writer_outputs(clone, ref.start(now));
    return ref;
  }

  void send_outputs(const channel::producer::outputs& outs) {
    for (auto& out : outs)
      env_.send_command(ctopic_, vector{"c", out.to.value_or(0), uid_, channel::encode(out.msg)});
  }

  void send_writer_outputs(uint64_t clone, const channel::consumer::outputs& outs) {
    for (auto& m : outs)
      env_.send_command(ctopic_, vector{"w", clone, uid_, channel::encode(m)});
  }

  void produce(data effect) {
    send_outputs(prod_.produce(std::move(effect)));
  }

  void begin() {
    if (batch_open_)
      return;
    if (auto err = be_->begin_batch(); !err)
      batch_open_ = true;
  }

  void fail(const error& err, const char* what, const data& key) {
    env_.write_failed(error{err.code(), where(name_, what, key) + ": " + err.message()});
  }

  /// Applies one operation. `clone` names the requesting clone of a put_unique (0: local,
  /// answered through `reply`).
  void apply(const data& op_data, timestamp now, uint64_t clone, store_reply* reply) {
    clock_ = now;
    auto* op = as_vector(op_data, 2);
    auto* tag = op != nullptr ? as_string((*op)[0]) : nullptr;
    if (tag == nullptr)
      return;
    auto publisher = publisher_of(*op);
    begin();
    if (*tag == "put" && op->size() == 5) {
      auto& key = (*op)[1];
      auto expiry = as_expiry((*op)[3]);
      auto old = be_->get(key);
      if (auto err = be_->put(key, (*op)[2], deadline(now, expiry))) {
        fail(err, "put", key);
        return;
      }
      changed(key, old, (*op)[2], expiry, publisher);
    } else if (*tag == "put_unique" && op->size() == 7) {
      auto& key = (*op)[1];
      auto expiry = as_expiry((*op)[3]);
      auto inserted = be_->put_unique(key, (*op)[2], deadline(now, expiry));
      if (inserted && *inserted)
        changed(key, expected<data>{ec::no_such_key}, (*op)[2], expiry, publisher);
      if (!inserted)
        fail(inserted.error_value(), "put_unique", key);
      if (reply != nullptr) {
        if (inserted)
          (*reply)(data{*inserted});
        else
          (*reply)(inserted.error_value());
      } else if (auto req = as_count((*op)[5]); req && clone != 0) {
        env_.send_command(ctopic_, vector{"r", clone, *req, inserted && *inserted});
      }
    } else if (*tag == "erase" && op->size() == 3) {
      auto& key = (*op)[1];
      auto had = be_->exists(key);
      if (auto err = be_->erase(key)) {
        fail(err, "erase", key);
        return;
      }
      if (had && *had) {
        produce(vector{"erase", key, publisher});
        env_.store_event(event_erase("erase", name_, key, publisher));
      }
    } else if ((*tag == "add" && op->size() == 6) || (*tag == "subtract" && op->size() == 5)) {
      bool add = *tag == "add";
      auto& key = (*op)[1];
      auto expiry = as_expiry((*op)[add ? 4 : 3]);
      auto old = be_->get(key);
      error err;
      if (add) {
        auto init = as_count((*op)[3]);
        if (!init || *init > static_cast<count>(data::type::vector)) {
          fail(error{ec::invalid_data, "bad initial type"}, "add", key);
          return;
        }
        err = be_->add(key, (*op)[2], static_cast<data::type>(*init), deadline(now, expiry));
      } else {
        err = be_->subtract(key, (*op)[2], deadline(now, expiry));
      }
      if (err) {
        fail(err, add ? "add" : "subtract", key);
        return;
      }
      auto now_value = be_->get(key);
      if (now_value)
        changed(key, old, *now_value, expiry, publisher);
    } else if (*tag == "clear") {
      auto ks = be_->keys();
      if (auto err = be_->clear()) {
        fail(err, "clear", data{});
        return;
      }
      produce(vector{"clear", publisher});
      if (ks)
        if (auto* xs = get_if<set>(*ks))
          for (auto& k : *xs)
            env_.store_event(event_erase("erase", name_, k, publisher));
    }
  }

  std::optional<timestamp> deadline(timestamp now, std::optional<timespan> expiry) {
    if (!expiry)
      return std::nullopt;
    return now + *expiry; // changed() arms the timer.
  }

  /// A key now holds `value` (after put, put_unique, add or subtract).
  void changed(const data& key, const expected<data>& old, const data& value,
               std::optional<timespan> expiry, const std::string& publisher) {
    if (expiry)
      timers_.emplace(clock_ + *expiry, key);
    produce(vector{"put", key, value, publisher});
    if (old)
      env_.store_event(event_update(name_, key, *old, value, expiry, publisher));
    else
      env_.store_event(event_insert(name_, key, value, expiry, publisher));
  }

  void expire(timestamp now) {
    while (!timers_.empty() && timers_.begin()->first <= now) {
      auto key = std::move(timers_.begin()->second);
      timers_.erase(timers_.begin());
      begin();
      auto gone = be_->expire(key, now);
      if (gone && *gone) {
        produce(vector{"expire", key, std::string{}});
        env_.store_event(event_erase("expire", name_, key, std::string{}));
      }
    }
  }

  store_env& env_;
  store_settings st_;
  std::unique_ptr<store_backend> be_;
  channel::producer prod_;
  std::string mtopic_;
  std::string ctopic_;
  /// The consumer side of each clone's write channel.
  struct writer {
    std::unique_ptr<channel::consumer> cons;
    timestamp last_heard;
  };
  std::map<uint64_t, writer> writers_;
  /// How long a silent clone's write channel is kept (writes survive outages up to this).
  timespan forget_after_;
  std::multimap<timestamp, data> timers_;
  timestamp clock_;
  bool batch_open_ = false;
  bool probing_ = false;
  timestamp probe_deadline_;
  error failure_;
};

// -- clone ------------------------------------------------------------------------------

class clone_logic final : public store_logic {
public:
  clone_logic(std::string name, uint64_t uid, store_settings st, store_env& env)
    : store_logic(std::move(name), uid),
      env_(env),
      st_(st),
      state_(make_memory_backend()),
      cons_(consumer_settings(st), [this](const data& x) { apply_snapshot(x); },
            [this](const data& x) { apply_effect(x); }),
      wprod_(uid, write_producer_settings(st), [] { return data{}; }),
      mtopic_(master_topic(name_)),
      ctopic_(clone_topic(name_)) {}

  bool is_master() const noexcept override { return false; }

  void start(timestamp now) override {
    send_consumer_outputs(cons_.start(now));
  }

  void handle(const data& msg, timestamp now) override {
    auto* xs = as_vector(msg, 4);
    if (xs == nullptr)
      return;
    auto* tag = as_string((*xs)[0]);
    auto to = as_count((*xs)[1]);
    if (tag == nullptr || !to || (*to != 0 && *to != uid_))
      return;
    if (*tag == "r") {
      auto req = as_count((*xs)[2]);
      auto* inserted = get_if<bool>((*xs)[3]);
      if (!req || inserted == nullptr)
        return;
      if (auto i = requests_.find(*req); i != requests_.end()) {
        auto reply = std::move(i->second.reply);
        requests_.erase(i);
        reply(data{*inserted});
      }
      return;
    }
    auto master = as_count((*xs)[2]);
    auto m = channel::decode((*xs)[3]);
    if (!master || !m)
      return;
    if (*tag == "c") {
      send_consumer_outputs(cons_.handle(*m, now));
      if (cons_.current_state() == channel::consumer::state::attached
          && cons_.epoch() != master_) {
        // A new master (or a restarted one): its predecessor will never ack our writes.
        if (master_ != 0)
          wprod_.detach(master_);
        master_ = cons_.epoch();
      }
    } else if (*tag == "w" && *to == uid_) {
      send_producer_outputs(wprod_.handle(*master, *m, now));
      drain_pending();
    }
  }

  void tick(timestamp now) override {
    send_consumer_outputs(cons_.tick(now));
    send_producer_outputs(wprod_.tick(now));
    drain_pending();
    for (auto i = requests_.begin(); i != requests_.end();) {
      if (i->second.deadline > now) {
        ++i;
        continue;
      }
      auto reply = std::move(i->second.reply);
      i = requests_.erase(i);
      if (cons_.current_state() == channel::consumer::state::attached)
        reply(error{ec::request_timeout, "store " + name_ + ": the master did not answer"});
      else
        reply(error{ec::no_such_master, "store " + name_ + ": no master reachable"});
    }
  }

  void write(data op, timestamp, std::function<void()> done) override {
    if (pending_.size() >= max_pending_writes) {
      env_.write_failed(error{ec::no_such_master,
                              "store " + name_ + ": write dropped, "
                                + std::to_string(max_pending_writes)
                                + " writes already wait for a master"});
      if (done)
        done();
      return;
    }
    pending_.push_back(pending_write{std::move(op), std::move(done)});
    drain_pending();
  }

  void put_unique(data key, data value, std::optional<timespan> expiry, std::string publisher,
                  timestamp now, store_reply reply) override {
    auto req = next_request_++;
    requests_.emplace(req, request{std::move(reply), now + st_.request_timeout});
    write(vector{"put_unique", std::move(key), std::move(value), opt_span(expiry), uid_, req,
                 std::move(publisher)},
          now, {});
  }

  void get(const data& key, const store_reply& reply) override {
    if (stale(reply))
      return;
    reply(state_->get(key));
  }

  void get_index_from_value(const data& key, const data& index,
                            const store_reply& reply) override {
    if (stale(reply))
      return;
    reply(state_->get_index_from_value(key, index));
  }

  void exists(const data& key, const store_reply& reply) override {
    if (stale(reply))
      return;
    auto x = state_->exists(key);
    reply(x ? expected<data>{data{*x}} : expected<data>{x.error_value()});
  }

  void keys(const store_reply& reply) override {
    if (stale(reply))
      return;
    reply(state_->keys());
  }

  bool ready() const noexcept override { return synced_; }

  const error& failure() const noexcept override { return failure_; }

  size_t size() const override {
    auto n = state_->size();
    return n ? static_cast<size_t>(*n) : 0;
  }

  store_stats stats() const override {
    store_stats result;
    result.name = name_;
    result.entries = size();
    result.input_channels = cons_.current_state() == channel::consumer::state::attached;
    result.output_channels = wprod_.consumers().size();
    result.out_of_order_updates = cons_.buffered();
    result.unacknowledged_updates = wprod_.buffered();
    result.processed_updates = wprod_.last_seq() - std::min<uint64_t>(wprod_.last_seq(),
                                                                     wprod_.buffered());
    return result;
  }

private:
  struct request {
    store_reply reply;
    timestamp deadline;
  };

  struct pending_write {
    data op;
    std::function<void()> done;
  };

  bool stale(const store_reply& reply) {
    if (synced_)
      return false;
    reply(error{ec::stale_data, "store " + name_ + ": the clone has no data from its master yet"});
    return true;
  }

  /// Hands waiting writes to the write channel while the master is attached and has
  /// acknowledged enough of them.
  void drain_pending() {
    if (wprod_.consumers().empty())
      return;
    while (!pending_.empty() && wprod_.buffered() < clone_write_window) {
      auto next = std::move(pending_.front());
      pending_.pop_front();
      send_producer_outputs(wprod_.produce(std::move(next.op)));
      if (next.done)
        next.done();
    }
  }

  void send_consumer_outputs(const channel::consumer::outputs& outs) {
    for (auto& m : outs)
      env_.send_command(mtopic_, vector{"c", uid_, channel::encode(m)});
  }

  void send_producer_outputs(const channel::producer::outputs& outs) {
    for (auto& out : outs)
      env_.send_command(mtopic_, vector{"w", uid_, channel::encode(out.msg)});
  }

  void apply_snapshot(const data& snapshot) {
    state_->clear();
    if (auto* xs = get_if<vector>(snapshot))
      for (auto& x : *xs)
        if (auto* kv = as_vector(x, 2))
          state_->put((*kv)[0], (*kv)[1], std::nullopt);
    synced_ = true;
  }

  void apply_effect(const data& effect) {
    auto* xs = as_vector(effect, 2);
    auto* tag = xs != nullptr ? as_string((*xs)[0]) : nullptr;
    if (tag == nullptr)
      return;
    auto publisher = publisher_of(*xs);
    if (*tag == "put" && xs->size() == 4) {
      auto& key = (*xs)[1];
      auto old = state_->get(key);
      state_->put(key, (*xs)[2], std::nullopt);
      if (old)
        env_.store_event(event_update(name_, key, *old, (*xs)[2], std::nullopt, publisher));
      else
        env_.store_event(event_insert(name_, key, (*xs)[2], std::nullopt, publisher));
    } else if ((*tag == "erase" || *tag == "expire") && xs->size() == 3) {
      auto& key = (*xs)[1];
      state_->erase(key);
      env_.store_event(event_erase(*tag == "erase" ? "erase" : "expire", name_, key, publisher));
    } else if (*tag == "clear") {
      auto ks = state_->keys();
      state_->clear();
      if (ks)
        if (auto* keys = get_if<set>(*ks))
          for (auto& k : *keys)
            env_.store_event(event_erase("erase", name_, k, publisher));
    }
  }

  store_env& env_;
  store_settings st_;
  std::unique_ptr<store_backend> state_;
  channel::consumer cons_;
  channel::producer wprod_;
  std::string mtopic_;
  std::string ctopic_;
  std::deque<pending_write> pending_;
  std::map<uint64_t, request> requests_;
  uint64_t next_request_ = 1;
  uint64_t master_ = 0; ///< The master (its uid) our main channel is attached to.
  bool synced_ = false;
  error failure_;
};

} // namespace

data make_op_put(data key, data value, std::optional<timespan> expiry, std::string publisher) {
  return vector{"put", std::move(key), std::move(value), opt_span(expiry), std::move(publisher)};
}

data make_op_erase(data key, std::string publisher) {
  return vector{"erase", std::move(key), std::move(publisher)};
}

data make_op_add(data key, data value, data::type init_type, std::optional<timespan> expiry,
                 std::string publisher) {
  return vector{"add", std::move(key), std::move(value), static_cast<count>(init_type),
                opt_span(expiry), std::move(publisher)};
}

data make_op_subtract(data key, data value, std::optional<timespan> expiry,
                      std::string publisher) {
  return vector{"subtract", std::move(key), std::move(value), opt_span(expiry),
                std::move(publisher)};
}

data make_op_clear(std::string publisher) {
  return vector{"clear", std::move(publisher)};
}

std::unique_ptr<store_logic> make_master_logic(std::string name, uint64_t uid,
                                               std::unique_ptr<store_backend> backend,
                                               store_settings settings, store_env& env) {
  return std::make_unique<master_logic>(std::move(name), uid, std::move(backend), settings, env);
}

std::unique_ptr<store_logic> make_clone_logic(std::string name, uint64_t uid,
                                              store_settings settings, store_env& env) {
  return std::make_unique<clone_logic>(std::move(name), uid, settings, env);
}

} // namespace broker::internal
