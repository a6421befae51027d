// Fuzz target: the replication channel between a store's master and its clones
// (store/replication_channel): message decoding and both state machines, with small bounds
// so that every limit is reachable. Messages are decoded through store_wire.hh.
// Input: records (fuzz_common.hh), op modulo 5:
//   0 message -> producer    from consumer handle arg % 4 (handle 1 is our consumer)
//   1 message -> consumer
//   2 produce                body: the payload bytes (a count if they do not decode)
//   3 tick                   advances the clock by time_step(arg), ticks both
//   4 pump                   delivers queued producer output to the consumer and back
//
// Checks: a decoded message re-encodes to the very value it came from and decodes to an
// equal message; every output survives the wire format; the consumer delivers exactly
// next_seq - first_seq events after each snapshot, holds at most max_out_of_order events and
// nacks at most max_nack_seqs ascending sequence numbers >= 1; the producer buffers at most
// max_buffered_events and answers one nack with at most max_nack_seqs events.

#include "fuzz_common.hh"
#include "known_issues.hh"
#include "store_wire.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/store/replication_channel.hh"

#include <deque>

using namespace broker;
using namespace broker::internal::channel;
using namespace std::chrono_literals;

namespace {

constexpr epoch_id producer_epoch = 77;
constexpr consumer_handle our_consumer = 1;
constexpr size_t max_queued = 1024;

producer_config small_producer() {
  producer_config cfg;
  cfg.heartbeat_interval = 1s;
  cfg.timeout_intervals = 3;
  cfg.max_buffered_events = 16;
  cfg.max_nack_seqs = 4;
  return cfg;
}

consumer_config small_consumer() {
  consumer_config cfg;
  cfg.attach_interval = 1s;
  cfg.timeout_intervals = 3;
  cfg.max_out_of_order = 8;
  cfg.ack_every = 4;
  cfg.max_nack_seqs = 4;
  return cfg;
}

void check_wire(const message& msg) {
  auto bytes = fuzz::store_wire::encode_channel(msg);
  auto back = fuzz::store_wire::decode_channel(bytes);
  FUZZ_CHECK_MSG(back && *back == msg, to_string(msg));
}

struct world {
  timestamp now{std::chrono::seconds{1'700'000'000}};
  producer prod{producer_epoch, small_producer(), [] { return data{vector{"snapshot"}}; }};
  consumer cons{small_consumer(), [this](const data&) { delivered = 0; },
                [this](const data&) { ++delivered; }};
  sequence_number first_seq = 0;
  uint64_t delivered = 0;
  std::deque<message> to_consumer;
  std::deque<message> to_producer;

  void from_producer(const producer::outputs& outs) {
    size_t events_for_nack = 0;
    for (auto& out : outs) {
      check_wire(out.msg);
      if (std::holds_alternative<event>(out.msg) && out.to)
        ++events_for_nack;
      if ((!out.to || *out.to == our_consumer) && to_consumer.size() < max_queued)
        to_consumer.push_back(out.msg);
    }
    FUZZ_CHECK(events_for_nack <= small_producer().max_nack_seqs);
    FUZZ_CHECK(prod.buffered() <= small_producer().max_buffered_events);
  }

  void from_consumer(const consumer::outputs& outs) {
    for (auto& msg : outs) {
      check_wire(msg);
      if (auto* n = std::get_if<nack>(&msg)) {
        FUZZ_CHECK(!n->seqs.empty() && n->seqs.size() <= small_consumer().max_nack_seqs);
        for (size_t i = 0; i < n->seqs.size(); ++i)
          FUZZ_CHECK(n->seqs[i] >= 1 && (i == 0 || n->seqs[i - 1] < n->seqs[i]));
      }
      if (to_producer.size() < max_queued)
        to_producer.push_back(msg);
    }
    FUZZ_CHECK(cons.buffered() <= small_consumer().max_out_of_order);
    if (cons.current_state() == consumer::state::attached)
      FUZZ_CHECK(cons.next_seq() - first_seq == delivered);
  }

  void to_cons(const message& msg) {
    auto snapshots = cons.snapshots();
    auto outs = cons.handle(msg, now);
    if (cons.snapshots() != snapshots)
      first_seq = std::get<handshake>(msg).first_seq;
    from_consumer(outs);
  }

  void pump() {
    auto for_consumer = std::move(to_consumer);
    auto for_producer = std::move(to_producer);
    to_consumer.clear();
    to_producer.clear();
    for (auto& msg : for_consumer)
      to_cons(msg);
    for (auto& msg : for_producer)
      from_producer(prod.handle(our_consumer, msg, now));
  }
};

// Decodes `bytes` and checks that the message is exactly the value it came from.
std::optional<message> decode_checked(std::string_view bytes) {
  auto msg = fuzz::store_wire::decode_channel(bytes);
  if (!msg)
    return std::nullopt;
  auto value = internal::bin::decode(bytes);
  FUZZ_CHECK(value);
  FUZZ_CHECK_MSG(encode(*msg) == *value, to_string(*msg) + " came from " + to_string(*value));
  check_wire(*msg);
  return std::move(*msg);
}

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  using fuzz::store_wire::encode_channel;
  // A consumer attached by hand, then gaps, duplicates, nacks and a new epoch.
  std::string hostile;
  auto to_cons = [&hostile](const message& m) { append_record(hostile, 1, 0, encode_channel(m)); };
  auto to_prod = [&hostile](uint8_t from, const message& m) {
    append_record(hostile, 0, from, encode_channel(m));
  };
  to_cons(handshake{5, 1, 10, vector{vector{"k", count{1}}}, 1s});
  to_cons(event{5, 10, count{1}});
  to_cons(event{5, 12, count{3}});
  to_cons(event{5, 10, count{1}});
  to_cons(heartbeat{5, 20});
  to_cons(retransmit_failed{5, 11});
  to_cons(event{6, 1, count{1}});
  to_prod(1, attach{1});
  to_prod(2, cumulative_ack{producer_epoch, 0});
  to_prod(1, nack{producer_epoch, {1, 2, 3, 4, 5}});
  to_prod(3, nack{producer_epoch, {1}});
  // Not a valid nack (it names no event): the decoder must refuse it.
  append_record(hostile, 0, 1, store_wire::encode_command(vector{count{6}, count{1}, vector{}}));
  append_record(hostile, 3, 40, "");
  // Real traffic between the two machines.
  std::string wired;
  append_record(wired, 4, 0, "");
  append_record(wired, 4, 0, "");
  for (int i = 0; i < 6; ++i)
    append_record(wired, 2, 0, store_wire::encode_command(count{static_cast<uint64_t>(i)}));
  append_record(wired, 4, 0, "");
  append_record(wired, 3, 15, "");
  append_record(wired, 4, 0, "");
  append_record(wired, 3, 50, "");
  append_record(wired, 4, 0, "");
  return {{"hostile", hostile}, {"wired", wired}};
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  world w;
  w.from_consumer(w.cons.start(w.now));
  fuzz::record_reader in{fuzz::as_text(bytes, size)};
  fuzz::record rec;
  while (in.next(rec)) {
    switch (rec.op % 5) {
      case 0:
        if (auto msg = decode_checked(rec.body))
          w.from_producer(w.prod.handle(rec.arg % 4, *msg, w.now));
        break;
      case 1:
        if (auto msg = decode_checked(rec.body);
            msg && !fuzz::known_issues::channel_interval_overflows(
              *msg, small_consumer().timeout_intervals))
          w.to_cons(*msg);
        break;
      case 2: {
        auto payload = fuzz::store_wire::decode_command(rec.body);
        w.from_producer(w.prod.produce(payload ? *payload : data{count{rec.body.size()}}));
        break;
      }
      case 3:
        w.now += fuzz::time_step(rec.arg);
        w.from_producer(w.prod.tick(w.now));
        w.from_consumer(w.cons.tick(w.now));
        break;
      case 4:
        w.pump();
        break;
    }
  }
  return 0;
}
