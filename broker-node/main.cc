// broker-node: a Broker endpoint as a daemon. It listens for peers, dials the peers it is
// given, subscribes to its topics (and so relays them between its peers), and runs one of
// three modes on the main thread: relay, ping or pong. See doc/node.md.
//
// Start-up order matters:
//   1. Block SIGINT/SIGTERM (signal_watch) before the endpoint starts its threads.
//   2. Parse and validate options; exit 1 with a message naming the option on error.
//   3. Start the endpoint, subscribe to events and to the mode's topics, so the first
//      handshake already carries the topics and -v sees the first peer_added.
//   4. Listen (print `listening on <port>`; exit 2 if that fails), dial --peers.
//   5. Attach the data stores (stores.hh; exit 1 if one cannot be attached).
//   6. Run the mode; on return the endpoint shuts down gracefully (BYE to every peer).

#include "modes.hh"
#include "node_options.hh"
#include "node_session.hh"
#include "status_table.hh"
#include "stores.hh"

#include <broker/endpoint.hh>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

using namespace broker_node;

namespace {

constexpr const char* program_name = "broker-node";

/// The library's table says broker.port 0 means "do not listen"; the node reads it otherwise.
constexpr const char* listen_note =
  "The node always accepts peerings unless --no-listen is given: for it, -p 0 (the\n"
  "default) picks a free port, printed as \"listening on <port>\". See doc/node.md.";

int fail(int code, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program_name, what.c_str());
  return code;
}

/// Exit code for a start-up failure: the operator's configuration, or the runtime.
int failure_code(const broker::error& err) {
  return err == broker::ec::invalid_config ? exit_invalid_config : exit_runtime_failure;
}

int run(broker::configuration cfg, const node_options& opts, signal_watch& signals) {
  broker::endpoint ep{std::move(cfg)};
  // The WebSocket and metrics servers start with the endpoint when their ports are set.
  if (const auto& err = ep.startup_error())
    return fail(failure_code(err), "cannot start: " + to_string(err));
  node_session session{ep, opts, signals};
  auto hub = ep.make_hub(mode_filter(opts));
  if (opts.listen) {
    auto port = ep.listen(opts.listen_address, opts.port);
    // A bad TLS setup or listen address is the operator's configuration, not the runtime.
    if (!port)
      return fail(failure_code(port.error_value()),
                  "cannot listen on \"" + opts.listen_address + "\":" + std::to_string(opts.port)
                    + ": " + to_string(port.error_value()));
    print_event("listening", {{"port", *port}}, "listening on " + std::to_string(*port));
  }
  for (auto& peer : opts.peers)
    ep.peer_nosync(peer.host, peer.port, opts.peer_retry);
  // Any store failure (master_exists, a database that cannot be opened) is the operator's
  // configuration: the node must not run without a store it was asked to host.
  auto stores = attach_stores(ep, opts);
  if (!stores)
    return fail(exit_invalid_config, stores.error_value().message());
  int code = exit_clean;
  switch (opts.mode) {
    case node_mode::ping:
      code = run_ping(session, hub);
      break;
    case node_mode::pong:
      code = run_pong(session, hub);
      break;
    case node_mode::relay:
      code = run_relay(session, hub);
      break;
  }
  // Workaround for a library race: the core may wake our hub before it has queued the same
  // message for peers, and a shutdown in that window drops it for them ("stop" would not
  // reach the next node). A synchronous call into the core runs after that routing step, so
  // afterwards the peers' queues hold everything the core accepted, and shutdown() flushes
  // them before its BYE.
  ep.metrics();
  return code;
}

} // namespace

int main(int argc, char** argv) {
  // A reader of our stdout that goes away must not kill the node; writes just fail.
  std::signal(SIGPIPE, SIG_IGN);
  signal_watch signals;
  if (signals.fd() < 0)
    return fail(exit_runtime_failure, "cannot create a signalfd for SIGINT/SIGTERM");
  broker::configuration cfg;
  if (auto err = add_node_options(cfg))
    return fail(exit_runtime_failure, err.message());
  std::vector<std::string> rest;
  auto err = cfg.load(argc, argv, &rest);
  if (cfg.help_requested()) {
    std::printf("Usage: %s [options]\n\n%s\n\n%s", program_name, listen_note,
                cfg.help_text().c_str());
    return exit_clean;
  }
  if (err)
    return fail(exit_invalid_config, err.message());
  if (!rest.empty())
    return fail(exit_invalid_config, "unexpected argument \"" + rest.front() + "\"");
  auto opts = read_node_options(cfg);
  if (!opts)
    return fail(exit_invalid_config, opts.error_value().message());
  set_json_output(opts->json);
  if (!opts->status_url.empty())
    return print_status(opts->status_url, opts->json);
  return run(std::move(cfg), *opts, signals);
}
