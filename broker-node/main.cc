// broker-node: a Broker endpoint as a daemon. It listens for peers, dials the peers it is
// given, subscribes to its topics (and so relays them between its peers), and runs one of
// three modes on the main thread: relay, ping or pong. See doc/node.md. Data never ends a
// relay node unless --exit-on-stop asks for it (remote_stop.hh).
//
// Start-up order matters:
//   1. Block SIGINT/SIGTERM/SIGHUP (tools/tool.hh) before the endpoint starts its threads.
//   2. Parse and validate options; exit 1 with a message naming the option on error.
//   3. Start the endpoint, subscribe to events and to the mode's topics, so the first
//      handshake already carries the topics and -v sees the first peer_added.
//   4. Listen (print `listening on <port>`; exit 2 if that fails), dial --peers.
//   5. Attach the data stores (stores.hh; exit 1 if one cannot be attached).
//   6. Tell systemd READY=1 (tools/sd_notify.hh; nothing outside systemd).
//   7. Run the mode (SIGHUP meanwhile reloads broker.security.rules-file); on return tell
//      systemd STOPPING=1, and the endpoint shuts down gracefully (BYE to every peer).

#include "modes.hh"
#include "node_options.hh"
#include "node_session.hh"
#include "sd_notify.hh"
#include "status_table.hh"
#include "stores.hh"
#include "tool.hh"

#include <broker/endpoint.hh>
#include <broker/security.hh>

#include <cstdio>
#include <string>

#include <termios.h>
#include <unistd.h>

using namespace broker_node;

namespace {

/// The library's table says broker.port 0 means "do not listen"; the node reads it otherwise.
constexpr std::string_view usage =
  "Usage: broker-node [options]\n"
  "\n"
  "A Broker endpoint as a daemon: accepts peerings (Zeek Broker's native protocol), dials\n"
  "--peers, subscribes to --topics and relays messages between its peers; optionally\n"
  "serves the WebSocket JSON API and Prometheus metrics, and hosts data stores. Modes:\n"
  "relay (default), ping and pong (Broker's broker-node convention).\n"
  "\n"
  "The node always accepts peerings unless --no-listen is given: for it, -p 0 (the\n"
  "default) picks a free port, printed as \"listening on <port>\". See doc/node.md.\n";

/// The man page's sections beyond the options (tools/man_page.hh).
constexpr std::string_view exit_status =
  "0\tclean end: SIGINT/SIGTERM, \"stop\" in pong mode or with --exit-on-stop, every pong "
  "received in ping mode\n"
  "1\tinvalid configuration: an option, a config file, a variable, a store that cannot be "
  "attached; the message names it\n"
  "2\truntime failure: a port cannot be opened; ping mode found no ponger or lost pongs";
constexpr std::string_view files =
  "/etc/broker/broker.conf\tthe configuration of the broker-node service "
  "(broker-node.service)";
constexpr std::string_view see_also =
  "broker-store(1), broker-throughput(1), systemd.service(5); doc/node.md and "
  "doc/configuration.md";

broker_tools::tool_info node_info() {
  return {{"broker-node", "a Zeek Broker compatible publish/subscribe node", usage,
           exit_status, files, see_also, {}}};
}

/// Tells systemd (Type=notify) about the node's state; a no-op outside systemd. A failure is
/// worth a warning only: the node works, but systemd will time out waiting for it.
void notify_service_manager(const broker_tools::tool& t, const std::string& state) {
  std::string error;
  if (broker_tools::sd_notify(state, &error) == broker_tools::notify_result::failed)
    t.notice(error);
}

/// The STATUS= line systemctl status shows.
std::string status_text(const node_options& opts, uint16_t port) {
  std::string result = port != 0 ? "listening on " + std::to_string(port) : "not listening";
  result += ", " + std::to_string(opts.peers.size()) + " peers to dial";
  return result;
}

/// Exit code for a start-up failure: the operator's configuration, or the runtime.
int failure_code(const broker::error& err) {
  return err == broker::ec::invalid_config ? exit_invalid_config : exit_runtime_failure;
}

/// A token longer than this is no token anyone types or pastes.
constexpr size_t max_token_size = 64 * 1024;

/// --hash-token: reads one token from stdin (without echo on a terminal) and prints the
/// line a rules file stores for it (doc/security.md). Never takes the token as an argument:
/// every local user can read a command line.
int hash_token(const broker_tools::tool& t) {
  bool terminal = ::isatty(STDIN_FILENO) == 1;
  termios saved{};
  if (terminal && ::tcgetattr(STDIN_FILENO, &saved) == 0) {
    auto quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    std::fputs("token: ", stderr);
  }
  std::string token;
  int c;
  while ((c = std::getchar()) != EOF && c != '\n' && token.size() <= max_token_size)
    token += static_cast<char>(c);
  if (terminal) {
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    std::fputs("\n", stderr);
  }
  if (!token.empty() && token.back() == '\r')
    token.pop_back();
  if (token.empty())
    return t.fail(exit_invalid_config, "hash-token: read an empty token from stdin");
  if (token.size() > max_token_size)
    return t.fail(exit_invalid_config, "hash-token: the token is longer than "
                                         + std::to_string(max_token_size) + " bytes");
  auto hash = broker::security::hash_token(token);
  if (hash.empty())
    return t.fail(exit_runtime_failure, "hash-token: OpenSSL cannot compute SHA-256");
  print_line(hash);
  return exit_clean;
}

int run(broker_tools::tool& t, const node_options& opts) {
  broker::endpoint ep{t.config()};
  // The WebSocket and metrics servers start with the endpoint when their ports are set.
  if (const auto& err = ep.startup_error())
    return t.fail(failure_code(err), "cannot start: " + err.message());
  node_session session{ep, opts, t.signals()};
  auto hub = ep.make_hub(mode_filter(opts));
  uint16_t listening = 0;
  if (opts.listen) {
    auto port = ep.listen(opts.listen_address, opts.port);
    // A bad TLS setup or listen address is the operator's configuration, not the runtime.
    if (!port)
      return t.fail(failure_code(port.error_value()),
                    broker_tools::listen_failure(port.error_value(),
                                                 "-p/--broker.port (env BROKER_PORT), "
                                                 "--listen-address"));
    print_event("listening", {{"port", *port}}, "listening on " + std::to_string(*port));
    listening = *port;
  }
  for (auto& peer : opts.peers)
    ep.peer_nosync(peer.host, peer.port, opts.peer_retry);
  // Any store failure (master_exists, a database that cannot be opened) is the operator's
  // configuration: the node must not run without a store it was asked to host.
  auto stores = attach_stores(ep, opts);
  if (!stores)
    return t.fail(exit_invalid_config, stores.error_value().message());
  notify_service_manager(t, "READY=1\nSTATUS=" + status_text(opts, listening));
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
  notify_service_manager(t, "STOPPING=1");
  return code;
}

} // namespace

int main(int argc, char** argv) {
  broker_tools::tool t{node_info()};
  // SIGHUP reloads the access rules: watched, like SIGINT/SIGTERM, before any thread starts.
  if (!t.signals().watch_hangup())
    return t.fail(exit_runtime_failure, "cannot watch SIGHUP");
  if (auto code = t.start(argc, argv, add_node_options))
    return *code;
  if (!t.args().empty())
    return t.fail(exit_invalid_config, "unexpected argument \"" + t.args().front() + "\"");
  auto opts = read_node_options(t.config());
  if (auto code = t.validated(opts))
    return *code;
  set_json_output(opts->json);
  if (opts->hash_token)
    return hash_token(t);
  if (!opts->status_url.empty())
    return print_status(opts->status_url, opts->json);
  // -N names the node everywhere an operator looks (/v1/status, the web view, metric and
  // JSON log labels) unless broker.metrics.endpoint-name names it otherwise.
  if (!opts->name.empty()
      && t.config().get_string("broker.metrics.endpoint-name").value_or("").empty())
    t.config().set("broker.metrics.endpoint-name", opts->name);
  return run(t, *opts);
}
