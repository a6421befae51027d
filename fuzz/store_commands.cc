// Fuzz target: Zeek Broker's store commands (store/store_wire) arriving from the network at a
// data store's master and at a clone (store/master, store/clone over the memory backend). The
// two stores are also wired to each other through a simulated bus, so hostile commands land
// in every protocol state that real traffic reaches.
// Input: records (fuzz_common.hh), op modulo 9:
//   0 command -> master, master topic    body: one command frame payload (store_wire bytes);
//   1 command -> master, clone topic       arg bit 0: its sender becomes the peer store's
//   2 command -> clone                     (bit 1: the clone's reader instead of its writer),
//                                          bit 2: its receiver the addressed store's entity
//   3 pump                   delivers what the stores sent each other (1 + arg % 8 rounds)
//   4 tick                   advances the clock by time_step(arg), ticks both, flushes
//   5 local write            body: a command; its put, erase, add, subtract or clear is
//                            written at the master (arg bit 0 clear) or the clone
//   6 queries                body: a key (binary value); get, exists, keys, get_index
//   7 put_unique             body: a command; its put_unique is asked at the master or clone
//   8 loss                   drops (arg bit 7: duplicates) the next 1 + (arg >> 1) % 8
//                            messages queued by the master (arg bit 0 clear) or the clone
//
// Checks: the decoder's promises (store_checks.hh) on every body; everything the stores send
// is a canonical command on one of the two store topics; store events survive the value
// codec; write failures carry an error; queries answer at once and exactly once, a
// put_unique at most once and with a boolean. Without hostile commands (ops 0-2), after
// some quiet time the clone holds exactly the master's keys and values and every put_unique
// has been answered: whatever the loss, duplication and timing, the stores converge.

#include "fuzz_common.hh"
#include "store_checks.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/store/backend.hh"
#include "broker/internal/store/clone.hh"
#include "broker/internal/store/store_logic.hh"

#include <deque>
#include <map>
#include <memory>
#include <optional>

using namespace broker;
using namespace broker::internal;
using namespace std::chrono_literals;

namespace stores = broker::fuzz::stores;

namespace {

constexpr const char* store_name = "s";
constexpr size_t max_queued = 4096;
constexpr size_t max_pump_rounds = 8;

const entity_id master_id{stores::endpoint(0x11), 1000};
const entity_id clone_id{stores::endpoint(0x22), 2000};

class env final : public store_env {
public:
  void send_command(const std::string& topic, std::string bytes) override {
    FUZZ_CHECK_MSG(topic == master_topic(store_name) || topic == clone_topic(store_name),
                   topic);
    stores::check_sent(bytes);
    if (queue.size() < max_queued)
      queue.emplace_back(topic, std::move(bytes));
  }

  void store_event(data ev) override { stores::check_event(ev); }

  void write_failed(const error& err) override { FUZZ_CHECK(err != ec::none); }

  std::deque<std::pair<std::string, std::string>> queue;
};

// The keys and values a store answers with.
std::map<data, data> contents(store_logic& x) {
  std::map<data, data> result;
  data ks;
  x.keys([&ks](const expected<data>& r) {
    FUZZ_CHECK(r);
    ks = *r;
  });
  auto* xs = get_if<set>(ks);
  FUZZ_CHECK(xs != nullptr);
  for (auto& k : *xs)
    x.get(k, [&](const expected<data>& r) {
      FUZZ_CHECK_MSG(r, to_string(k));
      result.emplace(k, *r);
    });
  return result;
}

std::string describe(const std::map<data, data>& xs) {
  std::string out = "{";
  for (auto& [k, v] : xs)
    out += to_string(k) + ": " + to_string(v) + ", ";
  return out + "}";
}

// Short intervals, as in store_logic.test.hh: time_step() units (100 ms) span two heartbeats,
// timeouts are a few records away, and the convergence check needs little simulated time.
store_settings fast_settings() {
  store_settings st;
  st.heartbeat_interval = 50ms;
  st.timeout_intervals = 10;
  st.request_timeout = 1s;
  st.probe_timeout = 100ms;
  st.tick_interval = 10ms;
  return st;
}

struct world {
  env master_env;
  env clone_env;
  std::unique_ptr<store_logic> master;
  std::unique_ptr<store_logic> clone;
  store_settings settings = fast_settings();
  timestamp now{std::chrono::seconds{1'700'000'000}};
  bool hostile = false;
  // Replies per put_unique request; each must stay at most 1.
  std::vector<std::shared_ptr<int>> unique_replies;

  world() {
    master = make_master_logic(store_name, master_id, make_memory_backend(), settings,
                               master_env);
    clone = make_clone_logic(store_name, clone_id, settings, clone_env);
    master->start(now);
    clone->start(now);
  }

  // The clone's current reader entity (clone.hh: object = uid + attach id).
  entity_id reader() const { return static_cast<clone_logic&>(*clone).reader(); }

  // Delivers a hostile command; `to_master` / `topic` say where.
  void hostile_command(std::string_view bytes, uint8_t arg, bool to_master,
                       const std::string& topic) {
    hostile = true;
    auto cmd = stores::check_decode(bytes);
    std::string patched;
    if (cmd && (arg & 0b101) != 0) {
      if (arg & 1)
        cmd->sender = to_master ? ((arg & 2) ? reader() : clone_id) : master_id;
      if (arg & 4)
        cmd->receiver = to_master ? master_id : ((arg & 2) ? reader() : clone_id);
      auto encoded = store_wire::encode(*cmd);
      if (!encoded)
        return;
      patched = std::move(*encoded);
      bytes = patched;
    }
    if (to_master)
      master->handle(topic, bytes, now);
    else
      clone->handle(topic, bytes, now);
  }

  // Delivers what each store sent to the stores subscribed to its topic.
  void pump(size_t rounds) {
    for (size_t i = 0; i < rounds; ++i) {
      auto from_master = std::move(master_env.queue);
      auto from_clone = std::move(clone_env.queue);
      master_env.queue.clear();
      clone_env.queue.clear();
      // The master hears only the clone (a store does not receive its own messages); the
      // clone subscribes to the clone topic only.
      for (auto& [topic, bytes] : from_master)
        if (topic == clone_topic(store_name))
          clone->handle(topic, bytes, now);
      for (auto& [topic, bytes] : from_clone)
        master->handle(topic, bytes, now);
      flush();
    }
  }

  void flush() {
    master->flush();
    clone->flush();
  }

  void tick(timespan dt) {
    now += dt;
    master->tick(now);
    clone->tick(now);
    flush();
  }

  void lose(uint8_t arg) {
    auto& q = (arg & 1) ? clone_env.queue : master_env.queue;
    size_t n = 1 + (arg >> 1) % 8;
    for (size_t i = 0; i < n && !q.empty(); ++i) {
      if (arg & 0x80) {
        if (q.size() < max_queued)
          q.push_back(q.front());
      }
      q.pop_front();
    }
  }

  void put_unique(const store_wire::put_unique& op, bool on_clone) {
    auto replies = std::make_shared<int>(0);
    unique_replies.push_back(replies);
    auto& s = on_clone ? clone : master;
    s->put_unique(op.key, op.value, op.expiry, op.publisher, now,
                  [replies](const expected<data>& x) {
                    FUZZ_CHECK(++*replies == 1);
                    if (x)
                      FUZZ_CHECK(x->is<bool>());
                  });
    flush();
  }

  void query(const data& key, uint8_t arg) {
    for (auto* s : {master.get(), clone.get()}) {
      int replies = 0;
      auto reply = [&replies](const expected<data>& x) {
        ++replies;
        if (x)
          (void) to_string(*x);
      };
      switch (arg % 4) {
        case 0:
          s->get(key, reply);
          break;
        case 1:
          s->exists(key, reply);
          break;
        case 2:
          s->keys(reply);
          break;
        default:
          s->get_index_from_value(key, data{count{arg}}, reply);
      }
      FUZZ_CHECK(replies == 1);
      FUZZ_CHECK(s->stats().entries == s->size());
    }
  }

  // Without hostile commands, the stores converge once the network is quiet for a while.
  void check_converged() {
    if (hostile)
      return;
    // Long enough for re-attaches and retransmits (heartbeat 50 ms, timeout 10 intervals)
    // and a clone's request timeout (1 s). Then rounds without time passing, so that no
    // expiry is in flight when the contents are compared.
    for (int i = 0; i < 30; ++i) {
      tick(settings.heartbeat_interval * 2);
      pump(2);
    }
    for (int i = 0; i < 8 && !(master_env.queue.empty() && clone_env.queue.empty()); ++i) {
      tick(timespan{0});
      pump(1);
    }
    FUZZ_CHECK(master->ready());
    FUZZ_CHECK(clone->ready());
    auto m = contents(*master);
    auto c = contents(*clone);
    FUZZ_CHECK_MSG(m == c, "master " + describe(m) + " clone " + describe(c));
    for (auto& replies : unique_replies)
      FUZZ_CHECK(*replies == 1);
  }
};

// A write the store API can make (make_op_*, store_logic.hh).
bool is_api_write(const store_wire::content& x) {
  return std::holds_alternative<store_wire::put>(x) || std::holds_alternative<store_wire::erase>(x)
         || std::holds_alternative<store_wire::add>(x)
         || std::holds_alternative<store_wire::subtract>(x)
         || std::holds_alternative<store_wire::clear>(x);
}

std::string cmd(uint64_t seq, const entity_id& from, const entity_id& to,
                store_wire::content what) {
  return stores::encode(store_wire::command{seq, from, to, std::move(what)});
}

// A local write or put_unique record's body: the command around the operation.
std::string op(store_wire::content what) {
  return cmd(0, {}, {}, std::move(what));
}

std::string key(const data& x) {
  auto bytes = internal::bin::encode(x);
  FUZZ_CHECK(bytes);
  return std::move(*bytes);
}

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  using namespace store_wire;
  const entity_id reader1{clone_id.endpoint, clone_id.object + 1};
  const entity_id stranger{stores::endpoint(0x77), 7};
  const entity_id nil{};
  auto one_entry = std::make_shared<const snapshot>(snapshot{{data{"k"}, data{count{1}}}});
  std::vector<seed> result;
  // A clone of ours or Broker's attaches to the master, opens its write channel and writes
  // every kind of operation; then the clone's acks and nacks, and a second master's answer.
  std::string to_master;
  auto m = [&](uint8_t op, const std::string& bytes) { append_record(to_master, op, 0, bytes); };
  m(0, cmd(0, stranger, nil, nack{{0}}));
  m(0, cmd(0, stranger, master_id, attach_writer{1, 10}));
  m(0, cmd(2, stranger, master_id, put{"k", count{42}, 10s, stranger}));
  m(0, cmd(3, stranger, master_id, add{"k", count{1}, data::type::count, std::nullopt, stranger}));
  m(0, cmd(4, stranger, master_id, put_unique{"u", count{1}, std::nullopt, stranger, 1, stranger}));
  m(0, cmd(5, stranger, master_id, subtract{"k", count{1}, std::nullopt, stranger}));
  m(0, cmd(6, stranger, master_id, erase{"k", stranger}));
  m(0, cmd(8, stranger, master_id, clear{stranger}));
  m(0, cmd(0, stranger, master_id, keepalive{9}));
  m(0, cmd(0, stranger, master_id, retransmit_failed{7}));
  m(0, cmd(0, stranger, master_id, cumulative_ack{1}));
  m(0, cmd(0, stranger, master_id, nack{{2, 3}}));
  append_record(to_master, 4, 20, "");
  m(1, cmd(0, stranger, nil, keepalive{3}));
  m(1, cmd(1, stranger, nil, ack_clone{1, 5, one_entry}));
  result.push_back({"to-master", to_master});
  // A master (ours or Broker's) serves the clone: snapshot, updates, a gap, a lost event.
  std::string to_clone;
  auto c = [&](const std::string& bytes) { append_record(to_clone, 2, 0, bytes); };
  c(cmd(1, stranger, reader1, ack_clone{1, 10, one_entry}));
  c(cmd(2, stranger, nil, put{"k2", count{2}, std::nullopt, stranger}));
  c(cmd(4, stranger, nil, erase{"k", stranger}));
  c(cmd(0, stranger, nil, keepalive{6}));
  c(cmd(5, stranger, nil, expire{"k2", stranger}));
  c(cmd(3, stranger, nil, put_unique_result{true, clone_id, 1, stranger}));
  c(cmd(0, stranger, reader1, retransmit_failed{6}));
  c(cmd(0, stranger, clone_id, cumulative_ack{1}));
  c(cmd(0, stranger, clone_id, nack{{0}}));
  c(cmd(7, stranger, nil, clear{stranger}));
  append_record(to_clone, 4, 20, "");
  result.push_back({"to-clone", to_clone});
  // The same with the entities the stores expect (arg bits 0 and 2).
  std::string addressed;
  append_record(addressed, 3, 4, "");
  append_record(addressed, 2, 5, cmd(9, nil, nil, put{"x", count{1}, std::nullopt, nil}));
  append_record(addressed, 2, 5, cmd(0, nil, nil, keepalive{12}));
  append_record(addressed, 0, 5, cmd(0, nil, nil, attach_writer{1, 10}));
  append_record(addressed, 0, 5, cmd(3, nil, nil, put{"y", count{2}, std::nullopt, nil}));
  append_record(addressed, 0, 7, cmd(0, nil, nil, nack{{1, 2, 3}}));
  append_record(addressed, 1, 1, cmd(0, nil, nil, keepalive{3}));
  append_record(addressed, 4, 30, "");
  append_record(addressed, 3, 4, "");
  result.push_back({"addressed", addressed});
  // Real traffic only: the clone attaches, both write, time passes, messages get lost and
  // duplicated; the stores must converge.
  std::string wired;
  append_record(wired, 4, 5, "");
  append_record(wired, 3, 4, "");
  append_record(wired, 5, 0, op(put{"a", count{1}, 5s, master_id}));
  append_record(wired, 5, 1, op(put{"b", "x", std::nullopt, clone_id}));
  append_record(wired, 5, 1, op(add{"n", integer{2}, data::type::integer, std::nullopt, clone_id}));
  append_record(wired, 3, 4, "");
  append_record(wired, 6, 0, key("a"));
  append_record(wired, 4, 60, "");
  append_record(wired, 3, 4, "");
  append_record(wired, 6, 2, key("b"));
  append_record(wired, 8, 0x02, "");
  append_record(wired, 5, 1, op(subtract{"n", integer{1}, std::nullopt, clone_id}));
  append_record(wired, 8, 0x83, "");
  append_record(wired, 5, 0, op(erase{"b", master_id}));
  append_record(wired, 3, 4, "");
  append_record(wired, 7, 1, op(put_unique{"u", count{1}, std::nullopt, nil, 0, clone_id}));
  append_record(wired, 7, 0, op(put_unique{"u", count{2}, 1s, nil, 0, master_id}));
  append_record(wired, 3, 4, "");
  append_record(wired, 5, 1, op(clear{clone_id}));
  append_record(wired, 4, 210, "");
  append_record(wired, 3, 4, "");
  result.push_back({"wired", wired});
  // Expiries at the ends of the int64 range, locally and through the write channel (F2 in
  // doc/fuzzing.md: the master's deadlines overflowed).
  std::string expiries;
  append_record(expiries, 4, 5, "");
  append_record(expiries, 3, 4, "");
  append_record(expiries, 5, 0, op(put{"max", count{1}, timespan::max(), master_id}));
  append_record(expiries, 5, 0, op(put{"min", count{1}, timespan::min(), master_id}));
  append_record(expiries, 5, 1, op(put{"w-max", count{1}, timespan::max(), clone_id}));
  append_record(expiries, 5, 1, op(add{"w-min", count{1}, data::type::count, timespan::min(),
                                       clone_id}));
  append_record(expiries, 7, 1, op(put_unique{"u", count{1}, timespan::max(), nil, 0, clone_id}));
  append_record(expiries, 3, 4, "");
  append_record(expiries, 4, 201, "");
  append_record(expiries, 3, 4, "");
  result.push_back({"expiries", expiries});
  return result;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  world w;
  fuzz::record_reader in{fuzz::as_text(data, size)};
  fuzz::record rec;
  while (in.next(rec)) {
    switch (rec.op % 9) {
      case 0:
        w.hostile_command(rec.body, rec.arg, true, master_topic(store_name));
        break;
      case 1:
        w.hostile_command(rec.body, rec.arg, true, clone_topic(store_name));
        break;
      case 2:
        w.hostile_command(rec.body, rec.arg, false, clone_topic(store_name));
        break;
      case 3:
        w.pump(1 + rec.arg % max_pump_rounds);
        break;
      case 4:
        w.tick(fuzz::time_step(rec.arg));
        break;
      case 5:
        if (auto cmd = stores::check_decode(rec.body); cmd && is_api_write(cmd->content)) {
          auto& s = (rec.arg & 1) ? w.clone : w.master;
          s->write(cmd->content, w.now);
          w.flush();
        }
        break;
      case 6:
        if (auto key = internal::bin::decode(rec.body))
          w.query(*key, rec.arg);
        break;
      case 7:
        if (auto cmd = stores::check_decode(rec.body))
          if (auto* x = std::get_if<store_wire::put_unique>(&cmd->content))
            w.put_unique(*x, rec.arg & 1);
        break;
      case 8:
        w.lose(rec.arg);
        break;
    }
  }
  w.check_converged();
  return 0;
}
