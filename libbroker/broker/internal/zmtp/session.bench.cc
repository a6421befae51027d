// broker-zmtp-bench: the cost of one Zeek event (4 frames) through zmtp::session, encoded
// for one receiver and decoded by one, under NULL and under CURVE, for a few payload sizes.
// Prints ns per event (best of 5 rounds) and the bytes the sink copied per event (NULL
// copies frame headers only; the frames are referenced). Compare rows of one run only.

#include "broker/internal/zmtp/session.hh"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace broker::internal::zmtp;

namespace {

// Counts what a gathered write would carry, without copying referenced bytes.
struct counting_sink {
  std::string copied;
  size_t referenced = 0;
  void copy(std::string_view bytes) { copied.append(bytes); }
  void ref(std::string_view bytes) { referenced += bytes.size(); }
};

struct pair_of_sessions {
  session server;
  session client;
  pair_of_sessions(session_config s, session_config c) : server(std::move(s)), client(std::move(c)) {
    for (int i = 0; i < 10 && (server.has_output() || client.has_output()); ++i) {
      client.feed(server.take_output());
      server.feed(client.take_output());
    }
  }
};

session_config config(bool server, bool curve, const keypair& skeys, const keypair& ckeys) {
  session_config cfg;
  cfg.type = server ? socket_type::xpub : socket_type::xsub;
  cfg.server = server;
  if (curve) {
    cfg.mech = mechanism::curve;
    cfg.curve_keys = server ? skeys : ckeys;
    cfg.curve_server_key = skeys.public_key;
  }
  return cfg;
}

template <class F>
double best_ns_per_op(size_t ops, F&& f) {
  double best = 1e300;
  for (int round = 0; round < 5; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < ops; ++i)
      f();
    std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / static_cast<double>(ops));
  }
  return best;
}

} // namespace

int main() {
  auto skeys = generate_keypair();
  auto ckeys = generate_keypair();
  std::printf("%-6s %8s %14s %14s %16s\n", "mech", "payload", "encode ns/ev", "decode ns/ev",
              "copied B/ev");
  for (bool curve : {false, true}) {
    for (size_t payload_size : {64, 1024, 16384}) {
      pair_of_sessions p{config(true, curve, skeys, ckeys), config(false, curve, skeys, ckeys)};
      std::string payload(payload_size, 'p');
      const std::string_view frames[] = {"zeek/cluster/nodeid/w1/", "w1-0123456789abcdef",
                                         "broker-bin-v1", payload};
      const size_t ops = payload_size > 4096 ? 2000 : 20000;
      counting_sink sink;
      auto encode = best_ns_per_op(ops, [&] {
        sink.copied.clear();
        p.server.write_message(frames, 4, sink);
      });
      auto copied = sink.copied.size();
      // A stream of events as one connection reads it, decoded in 64 KiB reads; a fresh
      // pair of sessions per round, since CURVE nonces cannot be replayed.
      double decode = 1e300;
      for (int round = 0; round < 5; ++round) {
        pair_of_sessions q{config(true, curve, skeys, ckeys), config(false, curve, skeys, ckeys)};
        std::string stream;
        for (size_t i = 0; i < ops; ++i) {
          string_sink whole;
          q.server.write_message(frames, 4, whole);
          stream += whole.out;
        }
        std::vector<event> events;
        auto start = std::chrono::steady_clock::now();
        for (size_t pos = 0; pos < stream.size(); pos += 65536) {
          events.clear();
          q.client.feed(std::string_view{stream}.substr(pos, 65536), events);
        }
        std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
        decode = std::min(decode, took.count() / static_cast<double>(ops));
        if (q.client.failed())
          std::printf("decode failed: %s\n", q.client.failure().reason.c_str());
      }
      std::printf("%-6s %8zu %14.0f %14.0f %16zu\n", curve ? "CURVE" : "NULL", payload_size,
                  encode, decode, copied);
    }
  }
  return 0;
}
