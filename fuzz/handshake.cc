// Fuzz target: the peering handshake state machine (peering/handshake) driven by a hostile
// remote. Input: [control][byte stream from the remote...]. Control bits:
//   0    our role: dialer (0) or acceptor (1)
//   1-2  our id: B, P0, PF or B2 (doc/protocol/peering.md §12), so we end up originator or responder
//   3-5  the owner's decision when the machine commits (proceed, pause, ...; modulo 5)
//   6    a paused handshake is dropped at once (1) or after the remaining frames (0)
//   7    our filter is empty (0) or three topics (1)
// The stream goes through a frame_reader; each frame is fed to the machine, as the peer
// manager does.
//
// Checks: every output is a sequence of valid handshake frames from us (our own decoder
// accepts them, our id as sender); once failed or done, the machine emits nothing more and
// its state never changes; failure output is nothing or one drop_conn; paused emits
// nothing; done reports the committed remote, our role, and follows exactly one accepted
// commit; the owner is asked to commit at most once and never about our own id.

#include "fuzz_common.hh"
#include "peering_checks.hh"
#include "peering_vectors.hh"

#include "broker/internal/peering/handshake.hh"
#include "broker/internal/peering/wire.hh"

#include <map>
#include <type_traits>
#include <variant>

using namespace broker;
using broker::internal::handshake;
namespace wire = broker::internal::wire;

namespace {

endpoint_id id_from_hex(const char* hex) {
  auto bytes = fuzz::from_hex(hex);
  endpoint_id::bytes_type raw{};
  for (size_t i = 0; i < raw.size(); ++i)
    raw[i] = static_cast<uint8_t>(bytes[i]);
  return endpoint_id{raw};
}

const endpoint_id own_ids[] = {id_from_hex(fuzz::id_b_hex), id_from_hex(fuzz::id_p0_hex),
                               id_from_hex(fuzz::id_pf_hex),
                               id_from_hex("0f5c91105b8757d99d80b65568e87a44")};

constexpr handshake::decision decisions[] = {
  handshake::decision::proceed, handshake::decision::pause,
  handshake::decision::no_pending_handshake, handshake::decision::redundant,
  handshake::decision::shutting_down};

bool terminal(handshake::state s) {
  return s == handshake::state::done || s == handshake::state::failed;
}

// Splits `out` into frames; each must be a handshake message we may send.
std::vector<wire::handshake_message> check_output(const std::string& out,
                                                  const endpoint_id& own) {
  std::vector<wire::handshake_message> result;
  wire::frame_reader reader;
  reader.feed(out);
  for (;;) {
    auto res = reader.next();
    FUZZ_CHECK(res.kind != wire::frame_reader::status::failed);
    if (res.kind == wire::frame_reader::status::need_more)
      break;
    auto msg = wire::decode_handshake(res.payload);
    FUZZ_CHECK_MSG(msg, "we sent an undecodable frame: " + fuzz::to_hex(res.payload));
    fuzz::check_handshake_payload(res.payload);
    std::visit(
      [&own](const auto& m) {
        if constexpr (std::is_same_v<std::decay_t<decltype(m)>, wire::hello_msg>
                      || std::is_same_v<std::decay_t<decltype(m)>, wire::version_select_msg>
                      || std::is_same_v<std::decay_t<decltype(m)>, wire::drop_conn_msg>)
          FUZZ_CHECK(m.sender == own);
      },
      *msg);
    result.push_back(std::move(*msg));
  }
  FUZZ_CHECK(reader.buffered() == 0);
  return result;
}

bool is_drop_conn(const std::vector<wire::handshake_message>& msgs) {
  return msgs.size() == 1 && std::holds_alternative<wire::drop_conn_msg>(msgs[0]);
}

struct driver {
  endpoint_id own;
  filter_type own_filter;
  handshake::decision decision;
  int commits = 0;
  bool accepted = false;
  handshake hs;

  driver(endpoint_id own, filter_type filter, handshake::role role, handshake::decision d)
    : own(own),
      own_filter(filter),
      decision(d),
      hs(own, std::move(filter), role, [this](const endpoint_id& remote, bool) {
        FUZZ_CHECK(remote != this->own);
        ++commits;
        accepted = decision == handshake::decision::proceed;
        return decision;
      }) {}

  void check(const handshake::outcome& o, handshake::state before) {
    auto msgs = check_output(o.output, own);
    FUZZ_CHECK(commits <= 1);
    auto now = hs.current_state();
    if (terminal(before)) {
      FUZZ_CHECK(o.kind == handshake::status::failed && o.output.empty());
      FUZZ_CHECK(o.err == ec::invalid_handshake_state);
      FUZZ_CHECK(now == before);
      return;
    }
    switch (o.kind) {
      case handshake::status::failed:
        FUZZ_CHECK(now == handshake::state::failed);
        FUZZ_CHECK(o.err != ec::none);
        FUZZ_CHECK(msgs.empty() || is_drop_conn(msgs));
        if (o.redundant)
          FUZZ_CHECK(o.err == ec::redundant_connection);
        break;
      case handshake::status::done:
        FUZZ_CHECK(now == handshake::state::done);
        FUZZ_CHECK(commits == 1 && accepted);
        FUZZ_CHECK(o.remote == hs.remote_id() && o.remote != own);
        FUZZ_CHECK(o.originator == hs.is_originator());
        if (o.originator)
          FUZZ_CHECK(msgs.size() == 1
                     && std::holds_alternative<wire::originator_ack_msg>(msgs[0]));
        else
          FUZZ_CHECK(msgs.empty());
        break;
      case handshake::status::paused:
        FUZZ_CHECK(now == handshake::state::paused);
        FUZZ_CHECK(msgs.empty());
        break;
      case handshake::status::in_progress:
        FUZZ_CHECK(!terminal(now) && now != handshake::state::paused
                   && now != handshake::state::init);
        for (auto& m : msgs)
          if (auto* syn = std::get_if<wire::originator_syn_msg>(&m))
            FUZZ_CHECK(fuzz::same_message(*syn, wire::originator_syn_msg{own_filter}));
        break;
    }
  }
};

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  std::map<std::string, std::string> frames;
  for (auto& f : handshake_frames())
    frames[f.name] = f.bytes;
  auto transcript = [&frames](std::initializer_list<const char*> names) {
    std::string out;
    for (auto name : names)
      out += frames.at(name);
    return out;
  };
  // control: role | id << 1 | decision << 3 | drop_at_once << 6 | filter << 7
  auto ctl = [](int role, int id, int decision, int drop_at_once = 1, int filter = 1) {
    return std::string(1, static_cast<char>(role | id << 1 | decision << 3 | drop_at_once << 6
                                            | filter << 7));
  };
  return {
    {"dialer-originator",
     ctl(0, 1, 0) + transcript({"probe", "hello-b", "responder-syn-ack-test"})},
    {"dialer-responder", ctl(0, 2, 0) + transcript({"probe", "version-select-b",
                                                   "originator-syn-test", "originator-ack"})},
    {"acceptor-originator", ctl(1, 1, 0) + transcript({"hello-b", "responder-syn-ack-test"})},
    {"acceptor-responder", ctl(1, 2, 0) + transcript({"hello-b", "version-select-b",
                                                     "originator-syn-test", "originator-ack"})},
    {"paused-then-dropped", ctl(1, 1, 1) + transcript({"hello-b", "originator-ack"})},
    {"paused-keeps-reading", ctl(1, 1, 1, 0) + transcript({"hello-b", "probe", "originator-ack"})},
    {"redundant", ctl(0, 1, 3) + transcript({"probe", "hello-b"})},
    {"shutting-down", ctl(1, 2, 4) + transcript({"hello-b", "version-select-b"})},
    {"remote-drop-conn", ctl(0, 0, 0) + transcript({"probe", "drop-conn-39"})},
    {"unknown-drop-code", ctl(0, 0, 0) + transcript({"drop-conn-unknown-code"})},
    {"wrong-magic", ctl(1, 0, 0) + transcript({"wrong-magic"})},
    {"equal-ids", ctl(1, 0, 0, 1, 0) + transcript({"hello-b"})},
    {"after-done", ctl(1, 1, 0) + transcript({"hello-b", "responder-syn-ack-test", "probe",
                                              "originator-ack"})},
  };
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1)
    return 0;
  auto control = data[0];
  auto role = (control & 1) ? handshake::role::acceptor : handshake::role::dialer;
  auto own = own_ids[(control >> 1) & 3];
  auto decision = decisions[((control >> 3) & 7) % std::size(decisions)];
  bool drop_at_once = control & 0x40;
  filter_type filter;
  if (control & 0x80)
    filter = {"/a", "/b/c", "/d/e/f"};
  driver d{own, filter, role, decision};
  auto first = check_output(d.hs.start(), own);
  FUZZ_CHECK(first.size() == 1);
  FUZZ_CHECK(std::holds_alternative<wire::probe_msg>(first[0])
             == (role == handshake::role::acceptor));
  FUZZ_CHECK(d.hs.start().empty());
  wire::frame_reader reader;
  reader.feed(fuzz::as_text(data + 1, size - 1));
  for (;;) {
    auto res = reader.next();
    if (res.kind != wire::frame_reader::status::frame)
      break;
    auto before = d.hs.current_state();
    auto o = d.hs.feed(res.payload);
    d.check(o, before);
    if (o.kind == handshake::status::paused && drop_at_once) {
      auto dropped = d.hs.drop_paused();
      d.check(dropped, handshake::state::paused);
      FUZZ_CHECK(dropped.redundant && !dropped.output.empty());
    }
  }
  if (d.hs.current_state() == handshake::state::paused) {
    auto dropped = d.hs.drop_paused();
    d.check(dropped, handshake::state::paused);
  } else {
    auto before = d.hs.current_state();
    auto misuse = d.hs.drop_paused();
    FUZZ_CHECK(misuse.kind == handshake::status::failed && misuse.output.empty());
    FUZZ_CHECK(d.hs.current_state() == before);
  }
  return 0;
}
