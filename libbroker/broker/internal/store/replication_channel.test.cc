// The channel's state machines one message at a time. The network simulations are in
// replication_channel_sim.test.cc.

#include "broker/internal/store/replication_channel.test.hh"

#include <limits>
#include <utility>

using namespace broker;
using namespace broker::internal::channel;
using namespace broker::internal::channel::test;
using namespace std::literals;

namespace {

producer snapshot_producer(int* taken = nullptr, producer_config cfg = test_producer_config()) {
  return producer{7, cfg, [taken] {
                    if (taken != nullptr)
                      ++*taken;
                    return state_of({1});
                  }};
}

} // namespace

// -- producer, snapshot mode ----------------------------------------------------------------

TEST_CASE("a channel producer answers attach from a new consumer with a handshake at its "
          "last seq and a fresh snapshot",
          "[channel]") {
  int taken = 0;
  auto p = snapshot_producer(&taken);
  p.produce(pl(10)); // Numbering starts at 2, as in Broker.
  p.produce(pl(11));
  CHECK(render(p.handle_message(h(1), attach{}, at(0ms)))
        == strings{"1: handshake(epoch=7, attach_id=0, offset=3, heartbeat_interval=100ms, "
                   "state=1 entries)"});
  REQUIRE(p.acked(h(1)));
  CHECK(*p.acked(h(1)) == 3);
  CHECK(p.consumers() == std::vector<handle>{h(1)});
  CHECK(!p.confirmed(h(1)));
  SECTION("repeated attaches before the ack get the same handshake, twice per interval") {
    CHECK(p.handle_message(h(1), attach{}, at(10ms)).empty());
    CHECK(render(p.handle_message(h(1), attach{}, at(50ms)))
          == strings{"1: handshake(epoch=7, attach_id=0, offset=3, heartbeat_interval=100ms, "
                     "state=1 entries)"});
    CHECK(taken == 1);
  }
  SECTION("consumers attaching before the next event share one snapshot") {
    p.handle_message(h(2), attach{}, at(1ms));
    CHECK(taken == 1);
    p.produce(pl(12));
    p.handle_message(h(3), attach{}, at(2ms));
    CHECK(taken == 2);
  }
  SECTION("an attach after the ack gets a fresh snapshot but keeps the acknowledgement") {
    p.handle_message(h(1), cumulative_ack{3}, at(1ms));
    CHECK(p.confirmed(h(1)));
    p.produce(pl(12));
    CHECK(render(p.handle_message(h(1), attach{}, at(5ms)))
          == strings{"1: handshake(epoch=7, attach_id=0, offset=4, heartbeat_interval=100ms, "
                     "state=1 entries)"});
    CHECK(taken == 2);
    CHECK(*p.acked(h(1)) == 3);
    CHECK(p.buffered() == 1);
  }
}

TEST_CASE("a channel producer broadcasts events and trims what every consumer acknowledged",
          "[channel]") {
  auto p = snapshot_producer();
  p.handle_message(h(1), attach{}, at(0ms));
  p.handle_message(h(2), attach{}, at(0ms));
  CHECK(render(p.produce(pl(10))) == strings{"*: event(epoch=7, seq=2, put)"});
  p.produce(pl(11));
  p.produce(pl(12));
  CHECK(p.buffered() == 3);
  CHECK(p.handle_message(h(1), cumulative_ack{3}, at(1ms)).empty());
  CHECK(p.buffered() == 3);
  p.handle_message(h(2), cumulative_ack{4}, at(1ms));
  CHECK(p.buffered() == 1);
  p.handle_message(h(1), cumulative_ack{4}, at(1ms));
  CHECK(p.buffered() == 0);
  CHECK(p.last_seq() == 4);
  SECTION("an ack beyond the last event is ignored") {
    p.handle_message(h(1), cumulative_ack{9}, at(2ms));
    CHECK(*p.acked(h(1)) == 4);
  }
}

TEST_CASE("a channel producer sends and keeps nothing when no consumer is attached",
          "[channel]") {
  auto p = snapshot_producer();
  CHECK(p.produce(pl(1)).empty());
  CHECK(p.last_seq() == 2);
  CHECK(p.buffered() == 0);
  CHECK(p.tick(at(0ms)).empty()); // No heartbeat either, unless asked to.
  p.handle_message(h(1), attach{}, at(0ms));
  p.produce(pl(2));
  p.detach(h(1));
  CHECK(p.buffered() == 0);
  CHECK(p.consumers().empty());
  SECTION("a master's producer heartbeats without consumers") {
    auto cfg = test_producer_config();
    cfg.heartbeat_always = true;
    auto q = snapshot_producer(nullptr, cfg);
    CHECK(render(q.tick(at(0ms))) == strings{"*: heartbeat(epoch=7, seq=1)"});
  }
}

TEST_CASE("a channel producer retransmits nacked events, answers each one it lacks with "
          "retransmit_failed and takes a nack as an ack of what precedes it",
          "[channel]") {
  auto p = snapshot_producer();
  p.handle_message(h(1), attach{}, at(0ms)); // Offset 1.
  for (count i = 1; i <= 3; ++i)
    p.produce(pl(i)); // Seqs 2-4.
  CHECK(render(p.handle_message(h(1), nack{{2, 3, 9}}, at(1ms)))
        == strings{"1: event(epoch=7, seq=2, put)", "1: event(epoch=7, seq=3, put)"});
  CHECK(*p.acked(h(1)) == 1);
  CHECK(p.confirmed(h(1)));
  p.handle_message(h(1), cumulative_ack{3}, at(1ms));
  CHECK(render(p.handle_message(h(1), nack{{2, 3, 4}}, at(2ms)))
        == strings{"1: retransmit_failed(epoch=7, seq=2)", "1: retransmit_failed(epoch=7, seq=3)",
                   "1: event(epoch=7, seq=4, put)"});
  SECTION("a nack is served up to max_nack_seqs") {
    auto cfg = test_producer_config();
    cfg.max_nack_seqs = 2;
    auto q = snapshot_producer(nullptr, cfg);
    q.handle_message(h(1), attach{}, at(0ms));
    for (count i = 1; i <= 3; ++i)
      q.produce(pl(i));
    CHECK(q.handle_message(h(1), nack{{2, 3, 4}}, at(1ms)).size() == 2);
  }
}

TEST_CASE("a channel producer ignores acks and answers nacks from unknown consumers with "
          "retransmit_failed",
          "[channel]") {
  auto p = snapshot_producer();
  p.produce(pl(1));
  CHECK(p.handle_message(h(5), cumulative_ack{4}, at(0ms)).empty());
  CHECK(render(p.handle_message(h(5), nack{{3, 4}}, at(0ms)))
        == strings{"5: retransmit_failed(epoch=7, seq=3)"});
  CHECK(p.consumers().empty());
}

TEST_CASE("a channel producer drops a consumer that lags beyond the retransmit buffer, "
          "without notice",
          "[channel]") {
  auto cfg = test_producer_config();
  cfg.max_buffered_events = 4;
  std::vector<std::pair<handle, producer::drop_reason>> drops;
  producer p{7, cfg, [] { return state_of({}); },
             [&](const handle& who, producer::drop_reason why) { drops.emplace_back(who, why); }};
  p.handle_message(h(1), attach{}, at(0ms));
  p.handle_message(h(2), attach{}, at(0ms));
  for (count i = 1; i <= 4; ++i) {
    p.produce(pl(i));
    p.handle_message(h(2), cumulative_ack{i + 1}, at(1ms));
  }
  CHECK(p.buffered() == 4);
  CHECK(render(p.produce(pl(5))) == strings{"*: event(epoch=7, seq=6, put)"});
  CHECK(drops == std::vector<std::pair<handle, producer::drop_reason>>{
                   {h(1), producer::drop_reason::lagging}});
  CHECK(p.consumers() == std::vector<handle>{h(2)});
  CHECK(p.buffered() == 1);
}

TEST_CASE("a channel producer heartbeats once per interval and drops silent consumers",
          "[channel]") {
  std::vector<handle> dropped;
  producer p{7, test_producer_config(), [] { return state_of({}); },
             [&](const handle& who, producer::drop_reason why) {
               CHECK(why == producer::drop_reason::silent);
               dropped.push_back(who);
             }};
  p.handle_message(h(1), attach{}, at(0ms));
  p.handle_message(h(2), attach{}, at(0ms));
  CHECK(render(p.tick(at(0ms))) == strings{"*: heartbeat(epoch=7, seq=1)"});
  CHECK(p.tick(at(50ms)).empty());
  p.produce(pl(1));
  CHECK(render(p.tick(at(100ms))) == strings{"*: heartbeat(epoch=7, seq=2)"});
  p.handle_message(h(2), cumulative_ack{2}, at(500ms));
  CHECK(render(p.tick(at(999ms))) == strings{"*: heartbeat(epoch=7, seq=2)"});
  CHECK(p.tick(at(1000ms)).empty());
  CHECK(dropped == std::vector<handle>{h(1)});
  CHECK(p.consumers() == std::vector<handle>{h(2)});
  CHECK(p.buffered() == 0);
}

// -- producer, writer mode ------------------------------------------------------------------

TEST_CASE("a writer-mode producer sends its handshake unasked and repeats it every interval "
          "until acknowledged",
          "[channel]") {
  producer p{9, test_producer_config(), {}};
  CHECK(render(p.add(h(42), at(0ms)))
        == strings{"42: handshake(epoch=9, attach_id=0, offset=1, heartbeat_interval=100ms, "
                   "state=none)"});
  CHECK(p.add(h(42), at(1ms)).empty());
  CHECK(p.handle_message(h(5), attach{}, at(2ms)).empty()); // Adds no one.
  CHECK(render(p.tick(at(50ms))) == strings{"*: heartbeat(epoch=9, seq=1)"});
  CHECK(render(p.tick(at(150ms)))
        == strings{"*: heartbeat(epoch=9, seq=1)",
                   "42: handshake(epoch=9, attach_id=0, offset=1, heartbeat_interval=100ms, "
                   "state=none)"});
  p.handle_message(h(42), cumulative_ack{1}, at(160ms));
  CHECK(p.confirmed(h(42)));
  CHECK(render(p.tick(at(250ms))) == strings{"*: heartbeat(epoch=9, seq=1)"});
  SECTION("a handshake request from the peer resumes right after what it acknowledged") {
    for (count i = 1; i <= 3; ++i)
      p.produce(pl(i)); // Seqs 2-4.
    p.handle_message(h(42), cumulative_ack{3}, at(300ms));
    CHECK(render(p.handle_message(h(42), attach{}, at(310ms)))
          == strings{"42: handshake(epoch=9, attach_id=0, offset=3, heartbeat_interval=100ms, "
                     "state=none)"});
    CHECK(!p.confirmed(h(42)));
    p.handle_message(h(42), cumulative_ack{3}, at(320ms));
    CHECK(render(p.handle_message(h(42), nack{{4}}, at(330ms)))
          == strings{"42: event(epoch=9, seq=4, put)"});
  }
}

// -- consumer, snapshot mode ----------------------------------------------------------------

TEST_CASE("a channel consumer sends attach on start and repeats it until a handshake for it "
          "arrives",
          "[channel]") {
  recorder r;
  auto c = r.make();
  CHECK(c.tick(at(0ms)).empty());
  CHECK(c.handle(hs(1, 1), at(0ms)).empty()); // Before start.
  CHECK(c.current_state() == consumer::state::idle);
  CHECK(render(c.start(at(0ms))) == strings{"attach(id=1)"});
  CHECK(c.start(at(0ms)).empty());
  CHECK(c.tick(at(149ms)).empty());
  CHECK(render(c.tick(at(150ms))) == strings{"attach(id=1)"});
  CHECK(c.tick(at(200ms)).empty());
  CHECK(c.handle(heartbeat{7, 4}, at(210ms)).empty());
  // Only a handshake for the current attach id ends the attach.
  CHECK(c.handle(hs(0, 4), at(215ms)).empty());
  CHECK(c.current_state() == consumer::state::attaching);
  CHECK(render(c.handle(hs(1, 4, 2), at(220ms))) == strings{"cumulative_ack(seq=4)"});
  CHECK(c.current_state() == consumer::state::attached);
  CHECK(c.epoch() == 7);
  CHECK(c.next_seq() == 5);
  CHECK(r.log == strings{"snapshot 2"});
}

TEST_CASE("a channel consumer applies the snapshot and delivers events in order exactly once",
          "[channel]") {
  recorder r;
  auto c = attached(r, 4);
  CHECK(c.handle(ev(7, 5, 5), at(1ms)).empty());
  CHECK(c.handle(ev(7, 5, 5), at(1ms)).empty());
  CHECK(c.handle(ev(7, 4, 4), at(1ms)).empty()); // Inside the snapshot.
  CHECK(c.handle(ev(7, 6, 6), at(1ms)).empty());
  CHECK(r.log == strings{"deliver 5", "deliver 6"});
  CHECK(c.next_seq() == 7);
  CHECK(c.snapshots() == 1);
}

TEST_CASE("a channel consumer buffers out-of-order events and nacks the gap it detects",
          "[channel]") {
  recorder r;
  auto c = attached(r, 4);
  CHECK(render(c.handle(ev(7, 7, 7), at(1ms))) == strings{"nack(seqs=[5, 6])"});
  CHECK(c.handle(ev(7, 6, 6), at(2ms)).empty()); // Fills a known gap: no new nack.
  CHECK(c.handle(ev(7, 7, 7), at(2ms)).empty()); // Buffered duplicate.
  // A nack lists every gap from the next expected event on (Broker's producer takes its
  // first entry as an ack of what precedes it).
  CHECK(render(c.handle(ev(7, 9, 9), at(3ms))) == strings{"nack(seqs=[5, 8])"});
  CHECK(c.buffered() == 3);
  CHECK(r.log.empty());
  c.handle(ev(7, 5, 5), at(4ms));
  CHECK(r.log == strings{"deliver 5", "deliver 6", "deliver 7"});
  c.handle(ev(7, 8, 8), at(5ms));
  CHECK(r.log == strings{"deliver 5", "deliver 6", "deliver 7", "deliver 8", "deliver 9"});
  CHECK(c.buffered() == 0);
}

TEST_CASE("a channel consumer nacks what a heartbeat reveals and again on the tick after an "
          "interval while the gap persists",
          "[channel]") {
  recorder r;
  auto c = attached(r, 0); // Ticks retry gaps that were known at the previous retry.
  CHECK(render(c.handle(heartbeat{7, 3}, at(10ms))) == strings{"nack(seqs=[1, 2, 3])"});
  CHECK(c.handle(heartbeat{7, 3}, at(20ms)).empty());
  CHECK(c.tick(at(60ms)).empty());
  // At 100 ms the gap is newer than the last retry point (0 ms): not yet.
  CHECK(render(c.tick(at(100ms))) == strings{"cumulative_ack(seq=0)"});
  c.handle(ev(7, 2, 2), at(120ms));
  CHECK(render(c.tick(at(200ms))) == strings{"nack(seqs=[1, 3])", "cumulative_ack(seq=0)"});
  CHECK(render(c.tick(at(300ms))) == strings{"nack(seqs=[1, 3])", "cumulative_ack(seq=0)"});
  c.handle(ev(7, 1, 1), at(320ms));
  c.handle(ev(7, 3, 3), at(320ms));
  CHECK(render(c.tick(at(400ms))) == strings{"cumulative_ack(seq=3)"});
  CHECK(r.log == strings{"deliver 1", "deliver 2", "deliver 3"});
}

TEST_CASE("a channel consumer acknowledges after ack_every deliveries and once per interval",
          "[channel]") {
  recorder r;
  auto c = attached(r, 0); // ack_every = 8
  for (sequence_number seq = 1; seq <= 7; ++seq)
    CHECK(c.handle(ev(7, seq, seq), at(1ms)).empty());
  CHECK(render(c.handle(ev(7, 8, 8), at(1ms))) == strings{"cumulative_ack(seq=8)"});
  CHECK(c.tick(at(100ms)).empty()); // The last ack went out at 1 ms.
  CHECK(render(c.tick(at(101ms))) == strings{"cumulative_ack(seq=8)"});
  CHECK(render(c.tick(at(201ms))) == strings{"cumulative_ack(seq=8)"});
}

TEST_CASE("a channel consumer re-attaches on retransmit_failed for an event it lacks",
          "[channel]") {
  recorder r;
  auto c = attached(r, 2);
  c.handle(ev(7, 3, 3), at(1ms));
  c.handle(ev(7, 4, 4), at(1ms));
  // Events it already delivered: a late answer, no reason to start over.
  CHECK(c.handle(retransmit_failed{7, 2}, at(1ms)).empty());
  CHECK(c.handle(retransmit_failed{7, 4}, at(1ms)).empty());
  CHECK(c.current_state() == consumer::state::attached);
  CHECK(render(c.handle(retransmit_failed{7, 5}, at(2ms))) == strings{"attach(id=2)"});
  CHECK(c.current_state() == consumer::state::attaching);
  CHECK(c.handle(retransmit_failed{7, 5}, at(3ms)).empty());
  c.handle(hs(2, 19, 3), at(4ms));
  CHECK(r.log == strings{"deliver 3", "deliver 4", "snapshot 3"});
  CHECK(c.snapshots() == 2);
  CHECK(c.next_seq() == 20);
}

TEST_CASE("a channel consumer re-attaches after a silent producer", "[channel]") {
  recorder r;
  auto c = attached(r, 0); // At 0 ms, interval 100 ms, timeout 10 intervals.
  c.handle(heartbeat{7, 0}, at(300ms));
  CHECK(render(c.tick(at(1299ms))) == strings{"cumulative_ack(seq=0)"});
  CHECK(render(c.tick(at(1300ms))) == strings{"attach(id=2)"});
  CHECK(c.current_state() == consumer::state::attaching);
  // The producer is back (same epoch, e.g. a healed path): its answer is accepted.
  c.handle(hs(2, 0), at(1310ms));
  CHECK(c.current_state() == consumer::state::attached);
}

TEST_CASE("a channel consumer re-attaches when a gap stays unfilled for the timeout (its "
          "producer forgot it)",
          "[channel]") {
  recorder r;
  auto c = attached(r, 0);
  CHECK(render(c.handle(heartbeat{7, 1}, at(10ms))) == strings{"nack(seqs=[1])"});
  for (auto t = 100ms; t < 1000ms; t += 100ms) {
    c.handle(heartbeat{7, 1}, at(t)); // The producer is alive but never answers the nacks.
    for (auto& out : render(c.tick(at(t))))
      CHECK(out.rfind("attach", 0) != 0);
  }
  c.handle(heartbeat{7, 1}, at(1000ms));
  auto outs = render(c.tick(at(1000ms)));
  CHECK(outs == strings{"attach(id=2)"});
}

TEST_CASE("a channel consumer re-attaches when a new epoch appears and ignores the old one "
          "afterwards",
          "[channel]") {
  recorder r;
  auto c = attached(r, 0);
  c.handle(ev(7, 1, 1), at(1ms));
  CHECK(render(c.handle(ev(8, 2, 100), at(2ms))) == strings{"attach(id=2)"});
  CHECK(c.current_state() == consumer::state::attaching);
  CHECK(c.buffered() == 1); // The new producer's event, kept for after the handshake.
  CHECK(c.handle(hs(1, 2), at(3ms)).empty());
  CHECK(c.current_state() == consumer::state::attaching);
  CHECK(render(c.handle(hs(2, 1, 0, 8), at(4ms))) == strings{"cumulative_ack(seq=2)"});
  CHECK(r.log == strings{"deliver 1", "snapshot 0", "deliver 100"});
  // Late messages of epoch 7 change nothing.
  CHECK(c.handle(ev(7, 2, 2), at(5ms)).empty());
  CHECK(c.handle(heartbeat{7, 9}, at(5ms)).empty());
  CHECK(c.handle(retransmit_failed{7, 9}, at(5ms)).empty());
  CHECK(c.current_state() == consumer::state::attached);
  CHECK(c.epoch() == 8);
  SECTION("a retransmit_failed of a new epoch also reveals a restart") {
    CHECK(render(c.handle(retransmit_failed{9, 3}, at(6ms))) == strings{"attach(id=3)"});
  }
  SECTION("a handshake never interrupts an attachment") {
    CHECK(c.handle(hs(2, 4, 0, 9), at(6ms)).empty());
    CHECK(c.epoch() == 8);
  }
}

TEST_CASE("a channel consumer that a late message of an old epoch made re-attach stays with "
          "the live producer",
          "[channel]") {
  recorder r;
  auto c = attached(r, 0); // Epoch 7 is live; epoch 5 died before we attached.
  CHECK(render(c.handle(heartbeat{5, 40}, at(1ms))) == strings{"attach(id=2)"});
  // The live producer answers: epoch 7 stays, and epoch 5 is ignored from now on.
  c.handle(hs(2, 0, 1), at(2ms));
  CHECK(c.current_state() == consumer::state::attached);
  CHECK(c.epoch() == 7);
  CHECK(c.handle(heartbeat{5, 41}, at(3ms)).empty());
  CHECK(c.handle(ev(7, 1, 1), at(3ms)).empty());
  CHECK(r.log == strings{"snapshot 1", "deliver 1"});
}

TEST_CASE("a channel consumer accepts the answer of a producer whose epoch it retired",
          "[channel]") {
  recorder r;
  auto c = attached(r, 0);
  c.handle(ev(8, 1, 1), at(1ms));   // Epoch 8 appears: re-attach with id 2.
  c.handle(hs(2, 0, 1, 8), at(2ms)); // Retires epoch 7.
  CHECK(c.handle(heartbeat{7, 3}, at(3ms)).empty());
  // Epoch 8 falls silent; only epoch 7 answers the next attach (id 3).
  CHECK(render(c.tick(at(1002ms))) == strings{"attach(id=3)"});
  c.handle(hs(3, 3, 1, 7), at(1010ms));
  CHECK(c.current_state() == consumer::state::attached);
  CHECK(c.epoch() == 7);
  CHECK(c.handle(ev(7, 4, 4), at(1011ms)).empty());
  CHECK(r.log == strings{"snapshot 1", "deliver 1", "snapshot 1", "deliver 4"});
}

TEST_CASE("a channel consumer keeps events that beat the handshake", "[channel]") {
  recorder r;
  auto c = r.make();
  c.start(at(0ms));
  CHECK(c.handle(ev(7, 6, 6), at(1ms)).empty());
  CHECK(c.handle(ev(7, 4, 4), at(1ms)).empty());
  CHECK(c.handle(ev(7, 5, 5), at(1ms)).empty());
  CHECK(c.buffered() == 3);
  CHECK(render(c.handle(hs(1, 4, 1), at(2ms))) == strings{"cumulative_ack(seq=6)"});
  CHECK(r.log == strings{"snapshot 1", "deliver 5", "deliver 6"});
  CHECK(c.buffered() == 0);
}

TEST_CASE("a channel consumer bounds its out-of-order buffer and its nack window",
          "[channel]") {
  auto cfg = test_consumer_config();
  cfg.max_out_of_order = 4;
  cfg.max_nack_seqs = 3;
  recorder r;
  auto c = attached(r, 0, cfg);
  // Seq 10 lies beyond the window [1, 5): dropped, but its gap is nacked (capped).
  CHECK(render(c.handle(ev(7, 10, 10), at(1ms))) == strings{"nack(seqs=[1, 2, 3])"});
  CHECK(c.buffered() == 0);
  c.handle(ev(7, 3, 3), at(2ms));
  c.handle(ev(7, 4, 4), at(2ms));
  CHECK(c.buffered() == 2);
  CHECK(render(c.tick(at(100ms))) == strings{"cumulative_ack(seq=0)"});
  CHECK(render(c.tick(at(200ms))) == strings{"nack(seqs=[1, 2])", "cumulative_ack(seq=0)"});
  SECTION("while attaching, early events are bounded too") {
    recorder r2;
    auto d = r2.make(cfg);
    d.start(at(0ms));
    for (sequence_number seq = 1; seq <= 10; ++seq)
      d.handle(ev(7, seq, seq), at(1ms));
    CHECK(d.buffered() == 4);
  }
}

TEST_CASE("a channel consumer ignores handshakes that do not answer its current attach",
          "[channel]") {
  recorder r;
  auto c = attached(r, 4);
  c.handle(ev(7, 5, 5), at(1ms));
  // A duplicate, or the answer to a repeated attach.
  CHECK(c.handle(hs(1, 5), at(2ms)).empty());
  c.handle(retransmit_failed{7, 6}, at(3ms)); // Re-attach with id 2.
  CHECK(c.handle(hs(1, 4), at(4ms)).empty());
  CHECK(c.current_state() == consumer::state::attaching);
  c.handle(hs(2, 8, 1), at(5ms));
  CHECK(r.log == strings{"deliver 5", "snapshot 1"});
  CHECK(c.next_seq() == 9);
}

// -- consumer, passive mode -----------------------------------------------------------------

TEST_CASE("a passive channel consumer starts from the producer's handshake, ignores "
          "repeated ones and never gives up",
          "[channel]") {
  recorder r;
  auto c = r.make();
  handshake open{9, 0, 1, 100ms, nullptr};
  CHECK(render(c.accept(open, at(0ms))) == strings{"cumulative_ack(seq=1)"});
  CHECK(c.passive());
  CHECK(c.accept(open, at(0ms)).empty());
  CHECK(r.log.empty()); // No snapshot.
  c.handle(ev(9, 2, 2), at(1ms));
  CHECK(c.handle(handshake{9, 0, 5, 100ms, nullptr}, at(2ms)).empty());
  CHECK(c.next_seq() == 3);
  // Silent for a long time: it only keeps acknowledging.
  CHECK(render(c.tick(at(60s))) == strings{"cumulative_ack(seq=2)"});
  CHECK(c.current_state() == consumer::state::attached);
  CHECK(r.log == strings{"deliver 2"});
}

TEST_CASE("a passive channel consumer skips what the producer cannot retransmit and goes on",
          "[channel]") {
  recorder r;
  auto c = r.make();
  c.accept(handshake{9, 0, 1, 100ms, nullptr}, at(0ms));
  CHECK(render(c.handle(ev(9, 4, 4), at(1ms))) == strings{"nack(seqs=[2, 3])"});
  CHECK(c.handle(retransmit_failed{9, 3}, at(2ms)).empty());
  SECTION("both lost") {
    CHECK(c.handle(retransmit_failed{9, 2}, at(3ms)).empty());
    CHECK(r.log == strings{"lost 2", "lost 3", "deliver 4"});
  }
  SECTION("one found after all") {
    c.handle(ev(9, 3, 3), at(3ms));
    c.handle(ev(9, 2, 2), at(3ms));
    CHECK(r.log == strings{"deliver 2", "deliver 3", "deliver 4"});
  }
  CHECK(c.next_seq() == 5);
  CHECK(c.handle(ev(9, 3, 3), at(4ms)).empty());
}

// -- both -----------------------------------------------------------------------------------

TEST_CASE("channel state machines ignore messages meant for the other side", "[channel]") {
  auto p = snapshot_producer();
  p.handle_message(h(1), attach{}, at(0ms));
  CHECK(p.handle_message(h(1), ev(7, 2, 1), at(1ms)).empty());
  CHECK(p.handle_message(h(1), heartbeat{7, 5}, at(1ms)).empty());
  CHECK(p.handle_message(h(1), hs(1, 1), at(1ms)).empty());
  CHECK(p.handle_message(h(1), retransmit_failed{7, 1}, at(1ms)).empty());
  CHECK(p.last_seq() == 1);
  recorder r;
  auto c = attached(r, 0);
  CHECK(c.handle(attach{9}, at(1ms)).empty());
  CHECK(c.handle(cumulative_ack{4}, at(1ms)).empty());
  CHECK(c.handle(nack{{1}}, at(1ms)).empty());
  CHECK(c.current_state() == consumer::state::attached);
  CHECK(r.log.empty());
}

TEST_CASE("channel state machines saturate instead of wrapping on extreme sequence numbers",
          "[channel]") {
  constexpr auto max = std::numeric_limits<sequence_number>::max();
  auto p = snapshot_producer();
  CHECK(render(p.handle_message(h(5), nack{{max}}, at(0ms)))
        == strings{"5: retransmit_failed(epoch=7, seq=" + std::to_string(max) + ")"});
  p.handle_message(h(1), attach{}, at(0ms));
  p.produce(pl(1));
  CHECK(p.handle_message(h(1), cumulative_ack{max}, at(1ms)).empty());
  CHECK(*p.acked(h(1)) == 1);
  CHECK(p.handle_message(h(1), nack{{max}}, at(1ms)).empty());
  auto cfg = test_consumer_config();
  cfg.max_out_of_order = 4;
  recorder r;
  auto c = attached(r, 0, cfg);
  CHECK(render(c.handle(heartbeat{7, max}, at(1ms))) == strings{"nack(seqs=[1, 2, 3, 4])"});
  CHECK(c.handle(ev(7, max, 1), at(1ms)).empty());
  CHECK(c.buffered() == 0);
  CHECK(render(c.tick(at(100ms))) == strings{"cumulative_ack(seq=0)"});
  CHECK(render(c.tick(at(200ms)))
        == strings{"nack(seqs=[1, 2, 3, 4])", "cumulative_ack(seq=0)"});
  CHECK(render(c.handle(retransmit_failed{7, max}, at(201ms))) == strings{"attach(id=2)"});
  recorder r2;
  auto d = r2.make();
  d.start(at(0ms));
  d.handle(hs(1, max), at(0ms));
  CHECK(d.next_seq() == max);
}
