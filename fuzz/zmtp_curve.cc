// Fuzz target: the CURVE mechanism (zmtp/curve through zmtp/session) on the server side,
// with a real client in the loop so that hostile bytes arrive in every handshake state and
// after it. libsodium's random source is replaced by a generator reset for every input, so
// keys, cookies and nonces are the same on every run of an input.
// Input: [control][records...] (fuzz_common.hh record framing). Control bits:
//   0    the server allows the client's key (1) or refuses every key (0)
//   1    small limits (message 300 bytes, 4 frames, commands 512 bytes)
// Records (op % 6), after each of which the server's output goes to the client:
//   0  deliver the client's pending output to the server
//   1  feed the record body to the server as raw bytes
//   2  flip the bits body[2] | 1 of the client's pending byte at offset u16(body) % size,
//      then deliver it
//   3  client action (arg % 3): subscribe(body), send body split at NULs (<= 8 frames; one
//      frame starting with 01 or 00 is a subscription in message form), ping(arg,
//      body[0:16])
//   4  server action (arg % 2): send body as one frame to the client, ping
//   5  deliver the first body.size() bytes of the client's pending output; drop the rest
//      when arg is odd
//
// Checks: the server becomes ready only when allowed and then knows exactly the client's
// long-term key; messages and subscriptions the server reports are, in order, ones the
// client sent (a subsequence: nothing forged, reordered or replayed gets through), and so
// are messages the client reports from the server; failure is the last event and sticky.

#include "fuzz_common.hh"

#include "broker/internal/zmtp/session.hh"

#include <sodium.h>

#include <cstring>
#include <deque>

using namespace broker;
namespace zmtp = broker::internal::zmtp;
using kind = zmtp::event::kind;

namespace {

// -- deterministic randomness -----------------------------------------------------------------

uint64_t rng_state = 0;

uint64_t next_random() {
  // splitmix64: fine for reproducible fuzzing, never for real keys.
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

const char* rng_name() {
  return "fuzz-splitmix64";
}

uint32_t rng_random() {
  return static_cast<uint32_t>(next_random());
}

void rng_buf(void* buf, size_t size) {
  auto* p = static_cast<uint8_t*>(buf);
  for (size_t i = 0; i < size; ++i)
    p[i] = static_cast<uint8_t>(next_random());
}

randombytes_implementation rng = {rng_name, rng_random, nullptr, nullptr, rng_buf, nullptr};

// Installed before the first sodium_init() (zmtp calls it lazily).
const bool rng_installed = [] {
  randombytes_set_implementation(&rng);
  return true;
}();

zmtp::keypair fixed_pair(uint8_t fill) {
  zmtp::keypair k;
  k.secret_key.fill(fill);
  k.public_key = zmtp::public_key_of(k.secret_key);
  return k;
}

// -- the conversation -------------------------------------------------------------------------

struct side {
  zmtp::session s;
  std::vector<zmtp::event> events;
  explicit side(zmtp::session_config cfg) : s(std::move(cfg)) {}
};

// Checks that `got` (messages or subscriptions the receiver reported) are, in order, a
// subsequence of what the sender sent; `next` remembers how far the match got.
void check_subsequence(const std::deque<std::string>& sent, size_t& next,
                       const std::string& got, const char* what) {
  while (next < sent.size() && sent[next] != got)
    ++next;
  FUZZ_CHECK_MSG(next < sent.size(), std::string{what} + " never sent: " + fuzz::to_hex(got));
  ++next;
}

std::string flatten(const zmtp::multipart& msg) {
  std::string out;
  for (size_t i = 0; i < msg.size(); ++i) {
    out += std::to_string(msg.frame(i).size()) + ":";
    out += msg.frame(i);
  }
  return out;
}

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  auto rec = [](uint8_t op, uint8_t arg, std::string_view body = {}) {
    std::string out;
    fuzz::append_record(out, op, arg, body);
    return out;
  };
  std::string handshake = rec(0, 0) + rec(0, 0) + rec(0, 0);
  std::string traffic = rec(3, 0, "zeek/") + rec(3, 1, std::string{"zeek/x\0node\0fmt\0pay", 19})
                        + rec(3, 2, "hb") + rec(0, 0) + rec(4, 0, "to-client") + rec(4, 1)
                        + rec(0, 0);
  std::string hello_only = rec(5, 1, std::string(64, 'g')); // just the greeting
  return {
    {"allowed-conversation", "\x01" + handshake + traffic},
    {"refused", std::string{"\x00", 1} + handshake + traffic},
    {"small-limits", "\x03" + handshake + traffic + rec(3, 1, std::string(400, 'x'))},
    {"raw-after-greeting", "\x01" + hello_only + rec(1, 0, std::string(200, '\0'))},
    {"tampered-hello", "\x01" + rec(2, 0, std::string{"\x00\xa0\x04", 3}) + handshake},
    {"tampered-initiate", "\x01" + rec(0, 0) + rec(0, 0) + rec(2, 0, "\x00\x80\x01")
                            + traffic},
    {"replayed-traffic", "\x01" + handshake + rec(3, 1, "m") + rec(5, 0, std::string(10, 'x'))
                           + rec(0, 0)},
  };
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || !rng_installed)
    return 0;
  rng_state = 0x5eed;
  auto control = data[0];
  bool allow = control & 0x01;
  static const auto server_keys = fixed_pair(0x11);
  static const auto client_keys = fixed_pair(0x22);
  zmtp::session_config scfg;
  scfg.type = zmtp::socket_type::xpub;
  scfg.server = true;
  scfg.mech = zmtp::mechanism::curve;
  scfg.curve_keys = server_keys;
  int asked = 0;
  scfg.authorize = [&](const zmtp::key& k) {
    ++asked;
    return allow;
  };
  zmtp::session_config ccfg;
  ccfg.type = zmtp::socket_type::xsub;
  ccfg.server = false;
  ccfg.mech = zmtp::mechanism::curve;
  ccfg.curve_keys = client_keys;
  ccfg.curve_server_key = server_keys.public_key;
  if (control & 0x02) {
    for (auto* cfg : {&scfg, &ccfg}) {
      cfg->lim.max_message_size = 300;
      cfg->lim.max_frames = 4;
      cfg->lim.max_command_size = 512;
    }
  }
  side server{scfg};
  side client{ccfg};
  std::string pending = client.s.take_output(); // client -> server, not yet delivered
  client.s.feed(server.s.take_output(), client.events);
  std::deque<std::string> client_sent_msgs, client_sent_subs, client_sent_unsubs,
    server_sent_msgs;
  size_t next_msg = 0, next_sub = 0, next_unsub = 0, next_back = 0;
  size_t server_seen = 0, client_seen = 0;
  bool server_failed = false;
  auto to_server = [&](std::string_view bytes) {
    auto before = server.events.size();
    auto ok = server.s.feed(bytes, server.events);
    if (server_failed)
      FUZZ_CHECK(!ok && server.events.size() == before);
    server_failed = !ok;
  };
  fuzz::record_reader reader{fuzz::as_text(data + 1, size - 1)};
  fuzz::record r;
  while (reader.next(r)) {
    pending += client.s.take_output();
    switch (r.op % 6) {
      case 0:
        to_server(pending);
        pending.clear();
        break;
      case 1:
        to_server(r.body);
        break;
      case 2:
        if (!pending.empty() && r.body.size() >= 3) {
          auto offset = ((static_cast<uint8_t>(r.body[0]) << 8) | static_cast<uint8_t>(r.body[1]))
                        % pending.size();
          pending[offset] ^= static_cast<char>(r.body[2] | 1);
        }
        to_server(pending);
        pending.clear();
        break;
      case 3:
        if (r.arg % 3 == 0) {
          if (client.s.subscribe(r.body))
            client_sent_subs.emplace_back(r.body);
        } else if (r.arg % 3 == 1) {
          std::vector<std::string_view> frames;
          std::string_view body = r.body;
          while (frames.size() < 7) {
            auto nul = body.find('\0');
            if (nul == body.npos)
              break;
            frames.push_back(body.substr(0, nul));
            body.remove_prefix(nul + 1);
          }
          frames.push_back(body);
          zmtp::string_sink sink;
          if (client.s.write_message(frames.data(), frames.size(), sink)) {
            // A one-frame message starting with 01 or 00 is a subscription to an XPUB.
            auto first = frames[0];
            if (frames.size() == 1 && !first.empty() && (first[0] == 1 || first[0] == 0)) {
              (first[0] == 1 ? client_sent_subs : client_sent_unsubs)
                .emplace_back(first.substr(1));
            } else {
              zmtp::multipart m;
              for (auto f : frames) {
                m.bytes.append(f);
                m.ends.push_back(m.bytes.size());
              }
              client_sent_msgs.push_back(flatten(m));
            }
            pending += sink.out;
          }
        } else {
          client.s.ping(r.arg, r.body.substr(0, zmtp::max_ping_context));
        }
        pending += client.s.take_output();
        break;
      case 4: {
        zmtp::string_sink sink;
        if (r.arg % 2 == 0) {
          std::string_view frame = r.body;
          if (server.s.write_message(&frame, 1, sink))
            server_sent_msgs.push_back(std::to_string(frame.size()) + ":" + std::string{frame});
        } else {
          server.s.ping(10, "s");
        }
        server.s.flush(sink);
        client.s.feed(sink.out, client.events);
        break;
      }
      case 5: {
        auto n = std::min(r.body.size(), pending.size());
        to_server(std::string_view{pending}.substr(0, n));
        pending.erase(0, r.arg % 2 == 1 ? pending.size() : n);
        break;
      }
    }
    client.s.feed(server.s.take_output(), client.events);
    // What the server reported since the last record.
    for (; server_seen < server.events.size(); ++server_seen) {
      auto& ev = server.events[server_seen];
      switch (ev.what) {
        case kind::ready:
          FUZZ_CHECK(allow && asked == 1);
          FUZZ_CHECK(server.s.peer().has_client_key);
          FUZZ_CHECK(server.s.peer().client_key == client_keys.public_key);
          break;
        case kind::message:
          check_subsequence(client_sent_msgs, next_msg, flatten(ev.msg), "message");
          break;
        case kind::subscribe:
          check_subsequence(client_sent_subs, next_sub, ev.data, "subscription");
          break;
        case kind::unsubscribe:
          check_subsequence(client_sent_unsubs, next_unsub, ev.data, "unsubscription");
          break;
        case kind::pong:
          FUZZ_CHECK(ev.data == "s");
          break;
        case kind::failed:
          FUZZ_CHECK(server_seen + 1 == server.events.size());
          FUZZ_CHECK(!ev.err.reason.empty());
          break;
      }
    }
    for (; client_seen < client.events.size(); ++client_seen) {
      auto& ev = client.events[client_seen];
      if (ev.what == kind::message)
        check_subsequence(server_sent_msgs, next_back, flatten(ev.msg), "server message");
      if (ev.what == kind::failed)
        FUZZ_CHECK(client_seen + 1 == client.events.size());
    }
    FUZZ_CHECK(!server.s.ready() || allow);
  }
  return 0;
}
