// Fuzz target: the replication channel state machines (store/replication_channel) in both of
// their uses, with small bounds so that every limit is reachable:
//   - snapshot mode: the master's producer P and a clone's reader consumer R;
//   - writer mode: the clone's writer producer W and the master's passive consumer Q.
// Everything between them travels as Zeek Broker's store commands (store/store_wire), mapped
// to and from channel messages the way master.cc and clone.cc map them, so hostile commands
// reach the state machines exactly as they would through a store.
// Input: records (fuzz_common.hh), op modulo 7:
//   0 command -> master side (P, Q)   body: one command (store_wire bytes); arg bit 0: its
//                                     sender becomes the clone's writer (bit 1: its current
//                                     reader entity), bit 2: its receiver the master
//   1 command -> clone side (R, W)    arg bit 0: sender = the master, bit 2: receiver = the
//                                     writer (bit 1: the current reader entity)
//   2 produce at P                    body: a command whose action is the payload (a put
//   3 produce at W                    otherwise)
//   4 tick                            advances the clock by time_step(arg), ticks all four
//   5 pump                            delivers the queued commands both ways (1 + arg % 4)
//   6 loss                            drops (arg bit 7: duplicates) the next 1 + (arg >> 1)
//                                     % 8 commands queued towards the master (bit 0 clear)
//                                     or the clone
//
// Checks: every command the channel's outputs map to is canonical on the wire; a consumer
// delivers exactly next_seq - first_seq events per snapshot (in passive mode counting the
// skipped ones), holds at most max_out_of_order events, nacks at most max_nack_seqs
// ascending sequence numbers >= 1; a producer buffers at most max_buffered_events and
// answers one nack with at most max_nack_seqs events. Unless hostile commands used the
// producer's own entity: a consumer delivers exactly what its producer produced under each
// sequence number, and a snapshot is the producer's state at the handshake's offset.

#include "fuzz_common.hh"
#include "store_checks.hh"

#include "broker/internal/store/replication_channel.hh"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>

using namespace broker;
using namespace std::chrono_literals;

namespace channel = broker::internal::channel;
namespace stores = broker::fuzz::stores;
namespace store_wire = broker::internal::store_wire;

namespace {

using store_wire::entity_id;

constexpr size_t max_queued = 1024;
constexpr timespan tick_interval = 100ms;

const entity_id master_id{stores::endpoint(0x11), 1000};
const entity_id writer_id{stores::endpoint(0x22), 2000};
const entity_id nobody{};


// The clone's reader entity for an attach (clone.hh: object = uid + attach id).
entity_id reader_entity(uint64_t attach_id) {
  return {writer_id.endpoint, writer_id.object + attach_id};
}

channel::producer_config small_producer(uint32_t timeout_intervals) {
  channel::producer_config cfg;
  cfg.heartbeat_interval = 1s;
  cfg.timeout_intervals = timeout_intervals;
  cfg.max_buffered_events = 16;
  cfg.max_nack_seqs = 4;
  return cfg;
}

channel::consumer_config small_consumer() {
  channel::consumer_config cfg;
  cfg.attach_interval = 1s;
  cfg.timeout_intervals = 3;
  cfg.max_out_of_order = 8;
  cfg.ack_every = 4;
  cfg.max_nack_seqs = 4;
  return cfg;
}

// Heartbeat intervals travel in ticks (store_logic.cc to_ticks / from_ticks).
uint16_t to_ticks(timespan x) {
  auto ticks = (x + tick_interval / 2) / tick_interval;
  return static_cast<uint16_t>(std::clamp<int64_t>(ticks, 1, 0xFFFF));
}

timespan from_ticks(uint16_t ticks) {
  return ticks == 0 ? 1s : tick_interval * ticks;
}

// Payloads compare through their encoding (as store_wire::same does).
std::string payload_bytes(const channel::payload& x) {
  return stores::encode(store_wire::command{0, nobody, nobody, x});
}

std::string state_text(const channel::state_ptr& x) {
  if (!x)
    return "none";
  std::string out;
  for (auto& [k, v] : *x)
    out += to_string(k) + "=" + to_string(v) + " ";
  return out;
}

struct world {
  timestamp now{std::chrono::seconds{1'700'000'000}};

  channel::producer prod{store_wire::digest(master_id), small_producer(3),
                         [this] { return snapshot(); }};
  channel::consumer reader{small_consumer(),
                           [this](const channel::state_ptr& x) { on_reader_snapshot(x); },
                           [this](const channel::payload& x) { on_reader_deliver(x); }};
  // Writer mode never drops its peer for silence (clone.cc).
  channel::producer writer{store_wire::digest(writer_id), small_producer(0), {}};
  std::unique_ptr<channel::consumer> passive;

  std::deque<std::string> to_master;
  std::deque<std::string> to_clone;

  // What P and W produced, by sequence number; whether hostile commands spoke for them.
  std::map<channel::sequence_number, std::string> produced_p;
  std::map<channel::sequence_number, std::string> produced_w;
  bool forged_p = false;
  bool forged_w = false;

  // Deliveries since the last snapshot (or passive handshake).
  channel::sequence_number first_r = 0;
  uint64_t delivered_r = 0;
  channel::state_ptr snapshot_r;
  channel::sequence_number first_q = 0;
  uint64_t delivered_q = 0;

  channel::state_ptr snapshot() {
    // P's state: how many events it produced before the snapshot.
    return std::make_shared<const store_wire::snapshot>(
      store_wire::snapshot{{data{"seq"}, data{count{prod.last_seq()}}}});
  }

  void on_reader_snapshot(const channel::state_ptr& x) {
    delivered_r = 0;
    snapshot_r = x;
  }

  void on_reader_deliver(const channel::payload& x) {
    ++delivered_r;
    if (forged_p || reader.epoch() != prod.epoch())
      return;
    auto i = produced_p.find(reader.next_seq());
    FUZZ_CHECK_MSG(i != produced_p.end(), std::to_string(reader.next_seq()));
    FUZZ_CHECK(i->second == payload_bytes(x));
  }

  void on_passive_deliver(const channel::payload& x) {
    ++delivered_q;
    if (forged_w || passive->epoch() != writer.epoch())
      return;
    auto i = produced_w.find(passive->next_seq());
    FUZZ_CHECK_MSG(i != produced_w.end(), std::to_string(passive->next_seq()));
    FUZZ_CHECK(i->second == payload_bytes(x));
  }

  void start() {
    from_reader(reader.start(now));
    from_writer(writer.add(master_id, now));
  }

  // -- outputs, mapped to commands as the owners do --------------------------------------

  void send(std::deque<std::string>& q, const store_wire::command& cmd) {
    auto bytes = stores::encode(cmd);
    stores::check_sent(bytes);
    if (q.size() < max_queued)
      q.push_back(std::move(bytes));
  }

  // master.cc send_outputs().
  void from_producer(const channel::producer::outputs& outs) {
    check_producer(prod, outs);
    for (auto& out : outs) {
      auto to = out.to.value_or(nobody);
      if (auto* ev = std::get_if<channel::event>(&out.msg))
        send(to_clone, {ev->seq, master_id, nobody, ev->content});
      else if (auto* hb = std::get_if<channel::heartbeat>(&out.msg))
        send(to_clone, {0, master_id, nobody, store_wire::keepalive{hb->seq}});
      else if (auto* hs = std::get_if<channel::handshake>(&out.msg))
        send(to_clone, {hs->offset, master_id, to,
                        store_wire::ack_clone{hs->offset, to_ticks(hs->heartbeat_interval),
                                              hs->state}});
      else if (auto* rf = std::get_if<channel::retransmit_failed>(&out.msg))
        send(to_clone, {0, master_id, to, store_wire::retransmit_failed{rf->seq}});
      else
        FUZZ_CHECK_MSG(false, channel::to_string(out.msg));
    }
  }

  // clone.cc send_writer_outputs().
  void from_writer(const channel::producer::outputs& outs) {
    check_producer(writer, outs);
    for (auto& out : outs) {
      auto to = out.to.value_or(master_id);
      if (auto* hs = std::get_if<channel::handshake>(&out.msg)) {
        FUZZ_CHECK(hs->state == nullptr);
        send(to_master, {0, writer_id, to,
                         store_wire::attach_writer{hs->offset, to_ticks(hs->heartbeat_interval)}});
      } else if (auto* ev = std::get_if<channel::event>(&out.msg)) {
        send(to_master, {ev->seq, writer_id, to, ev->content});
      } else if (auto* hb = std::get_if<channel::heartbeat>(&out.msg)) {
        send(to_master, {0, writer_id, nobody, store_wire::keepalive{hb->seq}});
      } else if (auto* rf = std::get_if<channel::retransmit_failed>(&out.msg)) {
        send(to_master, {0, writer_id, to, store_wire::retransmit_failed{rf->seq}});
      } else {
        FUZZ_CHECK_MSG(false, channel::to_string(out.msg));
      }
    }
  }

  // clone.cc send_reader_outputs().
  void from_reader(const channel::consumer::outputs& outs) {
    check_consumer(reader, outs);
    if (reader.current_state() == channel::consumer::state::attached)
      FUZZ_CHECK_MSG(reader.next_seq() - first_r == delivered_r,
                     std::to_string(reader.next_seq()) + " - " + std::to_string(first_r)
                       + " != " + std::to_string(delivered_r));
    auto me = reader_entity(reader.attach_id());
    for (auto& msg : outs) {
      if (auto* a = std::get_if<channel::attach>(&msg))
        send(to_master, {0, reader_entity(a->id), nobody, store_wire::nack{{0}}});
      else if (auto* ack = std::get_if<channel::cumulative_ack>(&msg))
        send(to_master, {0, me, master_id, store_wire::cumulative_ack{ack->seq}});
      else if (auto* n = std::get_if<channel::nack>(&msg))
        send(to_master, {0, me, master_id, store_wire::nack{n->seqs}});
      else
        FUZZ_CHECK_MSG(false, channel::to_string(msg));
    }
  }

  // master.cc send_writer_outputs().
  void from_passive(const channel::consumer::outputs& outs) {
    check_consumer(*passive, outs);
    if (passive->current_state() == channel::consumer::state::attached)
      FUZZ_CHECK(passive->next_seq() - first_q == delivered_q);
    for (auto& msg : outs) {
      if (auto* ack = std::get_if<channel::cumulative_ack>(&msg))
        send(to_clone, {0, master_id, writer_id, store_wire::cumulative_ack{ack->seq}});
      else if (auto* n = std::get_if<channel::nack>(&msg))
        send(to_clone, {0, master_id, writer_id, store_wire::nack{n->seqs}});
      else
        FUZZ_CHECK_MSG(false, channel::to_string(msg));
    }
  }

  static void check_producer(const channel::producer& p, const channel::producer::outputs& outs) {
    size_t retransmits = 0;
    for (auto& out : outs)
      if (out.to && std::holds_alternative<channel::event>(out.msg))
        ++retransmits;
    FUZZ_CHECK(retransmits <= p.config().max_nack_seqs);
    FUZZ_CHECK(p.buffered() <= p.config().max_buffered_events);
  }

  static void check_consumer(const channel::consumer& c, const channel::consumer::outputs& outs) {
    for (auto& msg : outs)
      if (auto* n = std::get_if<channel::nack>(&msg)) {
        FUZZ_CHECK(!n->seqs.empty() && n->seqs.size() <= small_consumer().max_nack_seqs);
        for (size_t i = 0; i < n->seqs.size(); ++i)
          FUZZ_CHECK(n->seqs[i] >= 1 && (i == 0 || n->seqs[i - 1] < n->seqs[i]));
      }
    FUZZ_CHECK(c.buffered() <= small_consumer().max_out_of_order);
  }

  // -- inputs, mapped from commands as the owners do ---------------------------------------

  // A consumer-control command as a channel message for a producer (nullopt: dropped).
  static std::optional<channel::message> consumer_control(const store_wire::command& cmd) {
    if (auto* ack = std::get_if<store_wire::cumulative_ack>(&cmd.content))
      return channel::cumulative_ack{ack->seq};
    auto& seqs = std::get<store_wire::nack>(cmd.content).seqs;
    if (seqs.empty())
      return std::nullopt;
    if (seqs.front() == 0)
      return channel::attach{};
    return channel::nack{seqs};
  }

  // master.cc handle(), for one writer (W) and the master's channel (P).
  void master_receives(const store_wire::command& cmd) {
    if (!cmd.receiver.is_nil() && cmd.receiver != master_id)
      return;
    auto epoch = store_wire::digest(cmd.sender);
    if (store_wire::tag_of(cmd.content) == store_wire::tag::consumer_control) {
      if (auto msg = consumer_control(cmd))
        from_producer(prod.handle_message(cmd.sender, *msg, now));
      return;
    }
    if (cmd.sender != writer_id)
      return; // The model has one writer.
    if (auto* open = std::get_if<store_wire::attach_writer>(&cmd.content)) {
      if (passive)
        return;
      passive = std::make_unique<channel::consumer>(
        small_consumer(), [](const channel::state_ptr&) {},
        [this](const channel::payload& x) { on_passive_deliver(x); },
        [this](channel::sequence_number) { ++delivered_q; });
      channel::handshake hs{epoch, 0, open->offset, from_ticks(open->heartbeat_interval),
                            nullptr};
      delivered_q = 0;
      auto outs = passive->accept(hs, now);
      first_q = passive->next_seq(); // accept() delivers nothing: it buffered nothing yet.
      FUZZ_CHECK(delivered_q == 0);
      from_passive(outs);
      return;
    }
    channel::message msg;
    if (auto* alive = std::get_if<store_wire::keepalive>(&cmd.content))
      msg = channel::heartbeat{epoch, alive->seq};
    else if (auto* failed = std::get_if<store_wire::retransmit_failed>(&cmd.content))
      msg = channel::retransmit_failed{epoch, failed->seq};
    else if (store_wire::tag_of(cmd.content) == store_wire::tag::action && cmd.seq != 0)
      msg = channel::event{epoch, cmd.seq, cmd.content};
    else
      return;
    if (!passive) {
      // The master asks an unknown writer for its handshake.
      send(to_clone, {0, master_id, writer_id, store_wire::nack{{0}}});
      return;
    }
    from_passive(passive->handle(msg, now));
  }

  // clone.cc handle().
  void clone_receives(const store_wire::command& cmd) {
    const auto& to = cmd.receiver;
    auto epoch = store_wire::digest(cmd.sender);
    auto current = reader_entity(reader.attach_id());
    if (auto* answer = std::get_if<store_wire::ack_clone>(&cmd.content)) {
      if (to.endpoint != writer_id.endpoint)
        return;
      channel::handshake hs{epoch, to.object - writer_id.object, answer->offset,
                            from_ticks(answer->heartbeat_interval), answer->state};
      auto before = reader.snapshots();
      auto outs = reader.handle(hs, now);
      if (reader.snapshots() != before) {
        first_r = answer->offset + 1;
        first_r = first_r == 0 ? answer->offset : first_r; // Saturated, as the consumer does.
        if (!forged_p && epoch == prod.epoch()) {
          auto expected = data{count{answer->offset}};
          FUZZ_CHECK_MSG(snapshot_r && snapshot_r->size() == 1
                           && snapshot_r->front().second == expected,
                         state_text(snapshot_r) + " at offset " + std::to_string(answer->offset));
        }
      }
      from_reader(outs);
      return;
    }
    bool for_reader = to.is_nil() || to == current;
    switch (store_wire::tag_of(cmd.content)) {
      case store_wire::tag::action:
        if (for_reader && cmd.seq != 0)
          from_reader(reader.handle(channel::event{epoch, cmd.seq, cmd.content}, now));
        return;
      case store_wire::tag::producer_control:
        if (auto* alive = std::get_if<store_wire::keepalive>(&cmd.content); alive && for_reader)
          from_reader(reader.handle(channel::heartbeat{epoch, alive->seq}, now));
        else if (auto* failed = std::get_if<store_wire::retransmit_failed>(&cmd.content);
                 failed && to == current)
          from_reader(reader.handle(channel::retransmit_failed{epoch, failed->seq}, now));
        return;
      case store_wire::tag::consumer_control:
        break;
    }
    if (to != writer_id || cmd.sender != master_id)
      return;
    if (auto msg = consumer_control(cmd))
      from_writer(writer.handle_message(cmd.sender, *msg, now));
  }

  // -- the records ---------------------------------------------------------------------------

  void hostile(std::string_view bytes, uint8_t arg, bool to_master_side) {
    auto cmd = stores::check_decode(bytes);
    if (!cmd)
      return;
    auto current = reader_entity(reader.attach_id());
    if (arg & 1)
      cmd->sender = to_master_side ? ((arg & 2) ? current : writer_id) : master_id;
    if (arg & 4)
      cmd->receiver = to_master_side ? master_id : ((arg & 2) ? current : writer_id);
    bool control = store_wire::tag_of(cmd->content) == store_wire::tag::consumer_control;
    if (to_master_side) {
      forged_w |= !control && cmd->sender == writer_id;
      master_receives(*cmd);
    } else {
      forged_p |= !control && cmd->sender == master_id;
      clone_receives(*cmd);
    }
  }

  void produce(std::string_view bytes, bool at_writer) {
    channel::payload x = store_wire::put{data{count{bytes.size()}}, data{}, std::nullopt, nobody};
    if (auto cmd = stores::check_decode(bytes);
        cmd && store_wire::tag_of(cmd->content) == store_wire::tag::action)
      x = cmd->content;
    auto& p = at_writer ? writer : prod;
    auto outs = p.produce(x);
    (at_writer ? produced_w : produced_p)[p.last_seq()] = payload_bytes(x);
    if (at_writer)
      from_writer(outs);
    else
      from_producer(outs);
  }

  void tick(timespan dt) {
    now += dt;
    from_producer(prod.tick(now));
    from_writer(writer.tick(now));
    from_reader(reader.tick(now));
    if (passive)
      from_passive(passive->tick(now));
  }

  void pump(size_t rounds) {
    for (size_t i = 0; i < rounds; ++i) {
      auto for_master = std::move(to_master);
      auto for_clone = std::move(to_clone);
      to_master.clear();
      to_clone.clear();
      for (auto& bytes : for_clone)
        clone_receives(stores::check_sent(bytes));
      for (auto& bytes : for_master)
        master_receives(stores::check_sent(bytes));
    }
  }

  void lose(uint8_t arg) {
    auto& q = (arg & 1) ? to_clone : to_master;
    size_t n = 1 + (arg >> 1) % 8;
    for (size_t i = 0; i < n && !q.empty(); ++i) {
      if ((arg & 0x80) && q.size() < max_queued)
        q.push_back(q.front());
      q.pop_front();
    }
  }
};

std::string cmd(uint64_t seq, const entity_id& from, const entity_id& to,
                store_wire::content what) {
  return stores::encode(store_wire::command{seq, from, to, std::move(what)});
}

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  using namespace store_wire;
  auto state = std::make_shared<const snapshot>(snapshot{{data{"k"}, data{count{1}}}});
  const entity_id reader1 = reader_entity(1);
  const entity_id other{stores::endpoint(0x55), 5};
  std::vector<seed> result;
  // Hostile messages to the clone's reader: a snapshot, gaps, duplicates, a lost event, a
  // new epoch; then to the master's producer: attach, acks, nacks beyond its bounds.
  std::string hostile;
  auto to_clone = [&](uint8_t arg, const std::string& bytes) {
    append_record(hostile, 1, arg, bytes);
  };
  auto to_master = [&](uint8_t arg, const std::string& bytes) {
    append_record(hostile, 0, arg, bytes);
  };
  to_clone(0, cmd(9, other, reader1, ack_clone{9, 10, state}));
  to_clone(0, cmd(10, other, nobody, put{"a", count{1}, std::nullopt, other}));
  to_clone(0, cmd(12, other, nobody, erase{"a", other}));
  to_clone(0, cmd(10, other, nobody, put{"a", count{1}, std::nullopt, other}));
  to_clone(0, cmd(0, other, nobody, keepalive{20}));
  to_clone(0, cmd(0, other, reader1, retransmit_failed{11}));
  to_clone(1, cmd(1, nobody, nobody, put{"b", count{2}, std::nullopt, nobody}));
  to_clone(5, cmd(0, nobody, nobody, nack{{0}}));
  to_clone(5, cmd(0, nobody, nobody, cumulative_ack{1}));
  to_master(0, cmd(0, reader1, nobody, nack{{0}}));
  to_master(0, cmd(0, other, nobody, cumulative_ack{0}));
  to_master(0, cmd(0, reader1, master_id, nack{{1, 2, 3, 4, 5}}));
  to_master(0, cmd(0, other, master_id, nack{{1}}));
  to_master(0, cmd(0, reader1, master_id, nack{}));
  to_master(1, cmd(0, nobody, nobody, attach_writer{1, 10}));
  to_master(1, cmd(3, nobody, nobody, put{"w", count{1}, std::nullopt, nobody}));
  to_master(1, cmd(0, nobody, nobody, retransmit_failed{2}));
  to_master(1, cmd(0, nobody, nobody, keepalive{5}));
  append_record(hostile, 4, 40, "");
  result.push_back({"hostile", hostile});
  // Real traffic: both channels attach, events flow, some get lost or duplicated, time
  // passes beyond the timeouts.
  std::string wired;
  append_record(wired, 5, 1, "");
  append_record(wired, 5, 1, "");
  for (uint64_t i = 0; i < 6; ++i) {
    append_record(wired, 2, 0, cmd(0, nobody, nobody, put{"k", count{i}, std::nullopt, master_id}));
    append_record(wired, 3, 0, cmd(0, nobody, nobody, add{"n", count{i}, data::type::count,
                                                    std::nullopt, writer_id}));
  }
  append_record(wired, 6, 0x04, "");
  append_record(wired, 6, 0x83, "");
  append_record(wired, 5, 0, "");
  append_record(wired, 4, 15, "");
  append_record(wired, 5, 1, "");
  for (uint64_t i = 0; i < 20; ++i)
    append_record(wired, 2, 0, cmd(0, nobody, nobody, erase{count{i}, master_id}));
  append_record(wired, 5, 0, "");
  append_record(wired, 4, 50, "");
  append_record(wired, 5, 3, "");
  result.push_back({"wired", wired});
  return result;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  world w;
  w.start();
  fuzz::record_reader in{fuzz::as_text(bytes, size)};
  fuzz::record rec;
  while (in.next(rec)) {
    switch (rec.op % 7) {
      case 0:
        w.hostile(rec.body, rec.arg, true);
        break;
      case 1:
        w.hostile(rec.body, rec.arg, false);
        break;
      case 2:
        w.produce(rec.body, false);
        break;
      case 3:
        w.produce(rec.body, true);
        break;
      case 4:
        w.tick(fuzz::time_step(rec.arg));
        break;
      case 5:
        w.pump(1 + rec.arg % 4);
        break;
      case 6:
        w.lose(rec.arg);
        break;
    }
  }
  return 0;
}
