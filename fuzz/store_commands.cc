// Fuzz target: store commands from the network arriving at a data store's master and at a
// clone (store/store_logic), decoded through store_wire.hh. The two stores are also wired to
// each other, so hostile commands land in every protocol state the real traffic reaches.
// Input: records (fuzz_common.hh), op modulo 7:
//   0 command -> master      body: one command frame payload
//   1 command -> clone       body: one command frame payload
//   2 pump                   delivers what master and clone sent each other (arg rounds)
//   3 tick                   advances the clock by time_step(arg), ticks both, flushes
//   4 local write            body: an operation value; arg bit 0: on the clone
//   5 queries                body: a key value; get, exists, keys, get_index_from_value
//   6 put_unique             body: [key, value]; arg bit 0: on the clone
//
// Checks: every command and store event the stores emit survives the wire format (encodes,
// and decodes to an equal value); write failures carry an error code; queries answer at
// once and exactly once, a put_unique at most once (a clone's when its master answers or
// the request times out).

#include "fuzz_common.hh"
#include "known_issues.hh"
#include "store_wire.hh"

#include "broker/internal/store/backend.hh"
#include "broker/internal/store/store_logic.hh"

#include <deque>
#include <memory>
#include <optional>

using namespace broker;
using namespace broker::internal;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t master_uid = 1000;
constexpr uint64_t clone_uid = 2000;
constexpr const char* store_name = "s";
constexpr size_t max_queued = 4096;
constexpr size_t max_pump_rounds = 8;
// The largest timeout_intervals of any channel consumer in a store: the master's consumers
// of clone write channels (write_channel_timeout_intervals in store_logic.cc).
constexpr uint32_t max_timeout_intervals = 1'000'000;

// Everything the wire carries must be representable in it.
void check_encodable(const data& x) {
  auto bytes = fuzz::store_wire::encode_command(x);
  auto back = fuzz::store_wire::decode_command(bytes);
  FUZZ_CHECK_MSG(back && *back == x, to_string(x));
}

class env final : public store_env {
public:
  void send_command(const std::string& topic, data msg) override {
    check_encodable(msg);
    if (queue.size() < max_queued)
      queue.emplace_back(topic, std::move(msg));
  }

  void store_event(data ev) override { check_encodable(ev); }

  void write_failed(const error& err) override { FUZZ_CHECK(err != ec::none); }

  std::deque<std::pair<std::string, data>> queue;
};

struct world {
  env master_env;
  env clone_env;
  std::unique_ptr<store_logic> master;
  std::unique_ptr<store_logic> clone;
  store_settings settings;
  timestamp now{std::chrono::seconds{1'700'000'000}};

  world() {
    master = make_master_logic(store_name, master_uid, make_memory_backend(), settings,
                               master_env);
    clone = make_clone_logic(store_name, clone_uid, settings, clone_env);
    master->start(now);
    clone->start(now);
  }

  // A hostile command, unless it trips an open finding (known_issues.hh).
  std::optional<data> command(std::string_view bytes) {
    auto cmd = fuzz::store_wire::decode_command(bytes);
    if (!cmd || fuzz::known_issues::store_command_trips(*cmd, max_timeout_intervals))
      return std::nullopt;
    return std::move(*cmd);
  }

  // Delivers what each store sent to the other store's topic (and drops the rest).
  void pump(size_t rounds) {
    for (size_t i = 0; i < rounds; ++i) {
      auto to_clone = std::move(master_env.queue);
      auto to_master = std::move(clone_env.queue);
      master_env.queue.clear();
      clone_env.queue.clear();
      for (auto& [topic, msg] : to_clone)
        if (topic == clone_topic(store_name))
          clone->handle(msg, now);
      for (auto& [topic, msg] : to_master)
        if (topic == master_topic(store_name))
          master->handle(msg, now);
      master->flush();
      clone->flush();
    }
  }

  // Replies per put_unique request; each must stay at most 1.
  std::vector<std::shared_ptr<int>> unique_replies;

  void put_unique(const data& kv, bool on_clone) {
    auto* xs = get_if<vector>(kv);
    if (xs == nullptr || xs->size() != 2)
      return;
    auto replies = std::make_shared<int>(0);
    unique_replies.push_back(replies);
    auto& s = on_clone ? clone : master;
    s->put_unique((*xs)[0], (*xs)[1], std::nullopt, "fuzz", now,
                  [replies](const expected<data>& x) {
                    FUZZ_CHECK(++*replies == 1);
                    if (x)
                      FUZZ_CHECK(x->is<bool>());
                  });
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
      (void) s->size();
    }
  }
};

std::string command(const data& x) {
  return fuzz::store_wire::encode_command(x);
}

data channel_msg(const channel::message& m) {
  return channel::encode(m);
}

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  using channel::attach;
  using channel::event;
  using channel::handshake;
  using channel::heartbeat;
  using channel::cumulative_ack;
  constexpr uint64_t writer_epoch = 99;
  std::string to_master;
  auto m = [&to_master](const data& x) { append_record(to_master, 0, 0, command(x)); };
  // A clone (id 7) attaches, opens its write channel and writes every kind of operation.
  m(vector{"c", count{7}, channel_msg(attach{1})});
  m(vector{"w", count{7}, channel_msg(handshake{writer_epoch, 1, 1, data{}, 1s})});
  m(vector{"w", count{7},
           channel_msg(event{writer_epoch, 1, make_op_put("k", count{42}, 10s, "pub")})});
  m(vector{"w", count{7}, channel_msg(event{writer_epoch, 2,
                                            make_op_add("k", count{1}, data::type::count,
                                                        std::nullopt, "pub")})});
  m(vector{"w", count{7},
           channel_msg(event{writer_epoch, 3, vector{"put_unique", "u", count{1}, data{},
                                                    count{7}, count{1}, "pub"}})});
  m(vector{"w", count{7}, channel_msg(event{writer_epoch, 4, make_op_erase("k", "pub")})});
  m(vector{"w", count{7}, channel_msg(event{writer_epoch, 5, make_op_clear("pub")})});
  m(vector{"c", count{7}, channel_msg(cumulative_ack{master_uid, 0})});
  m(vector{"probe", count{5}});
  m(vector{"exists", count{master_uid}, count{5}});
  append_record(to_master, 3, 20, "");
  std::string to_clone;
  auto c = [&to_clone](const data& x) { append_record(to_clone, 1, 0, command(x)); };
  c(vector{"c", count{clone_uid}, count{master_uid},
           channel_msg(handshake{master_uid, 1, 1, vector{vector{"k", count{1}}}, 1s})});
  c(vector{"c", count{0}, count{master_uid},
           channel_msg(event{master_uid, 1, vector{"put", "k2", count{2}, "pub"}})});
  c(vector{"c", count{0}, count{master_uid},
           channel_msg(event{master_uid, 3, vector{"erase", "k", "pub"}})});
  c(vector{"c", count{0}, count{master_uid}, channel_msg(heartbeat{master_uid, 5})});
  c(vector{"r", count{clone_uid}, count{1}, true});
  c(vector{"w", count{clone_uid}, count{master_uid},
           channel_msg(cumulative_ack{clone_uid, 0})});
  append_record(to_clone, 3, 20, "");
  // Real traffic: the two stores attach, both write, time passes.
  std::string wired;
  append_record(wired, 3, 5, "");
  append_record(wired, 2, 4, "");
  append_record(wired, 4, 0, command(make_op_put("a", count{1}, 5s, "m")));
  append_record(wired, 4, 1, command(make_op_put("b", "x", std::nullopt, "c")));
  append_record(wired, 2, 4, "");
  append_record(wired, 5, 0, command(data{"a"}));
  append_record(wired, 3, 60, "");
  append_record(wired, 2, 4, "");
  append_record(wired, 5, 2, command(data{"b"}));
  append_record(wired, 4, 0, command(make_op_clear("m")));
  append_record(wired, 2, 4, "");
  append_record(wired, 6, 1, command(vector{"u", count{1}}));
  append_record(wired, 6, 0, command(vector{"u", count{2}}));
  append_record(wired, 2, 4, "");
  append_record(wired, 3, 210, "");
  return {{"to-master", to_master}, {"to-clone", to_clone}, {"wired", wired}};
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  world w;
  fuzz::record_reader in{fuzz::as_text(data, size)};
  fuzz::record rec;
  while (in.next(rec)) {
    switch (rec.op % 7) {
      case 0:
        if (auto cmd = w.command(rec.body))
          w.master->handle(*cmd, w.now);
        break;
      case 1:
        if (auto cmd = w.command(rec.body))
          w.clone->handle(*cmd, w.now);
        break;
      case 2:
        w.pump(1 + rec.arg % max_pump_rounds);
        break;
      case 3:
        w.now += fuzz::time_step(rec.arg);
        w.master->tick(w.now);
        w.clone->tick(w.now);
        w.master->flush();
        w.clone->flush();
        break;
      case 4:
        if (auto op = fuzz::store_wire::decode_command(rec.body);
            op && !fuzz::known_issues::write_expiry_overflows(*op)) {
          auto& s = (rec.arg & 1) ? w.clone : w.master;
          s->write(*op, w.now);
        }
        break;
      case 5:
        if (auto key = fuzz::store_wire::decode_command(rec.body))
          w.query(*key, rec.arg);
        break;
      case 6:
        if (auto kv = fuzz::store_wire::decode_command(rec.body))
          w.put_unique(*kv, rec.arg & 1);
        break;
    }
  }
  return 0;
}
