// broker-throughput: Broker's throughput benchmark (broker-benchmark's command line), for
// this implementation. A client publishes Zeek-shaped events to /benchmark/events as fast as
// possible or at a fixed rate; a server counts them and prints the rate every second. Both
// talk native peering, or a node's WebSocket API with --web-socket. See README.md.
//
// Start-up order matters:
//   1. Block SIGINT/SIGTERM (signal_watch) before an endpoint starts its threads.
//   2. Parse and validate options; exit 1 with a message naming the option on error.
//   3. Run the role over its transport; it prints a summary when it ends and returns the
//      exit code. Endpoints shut down gracefully on the way out (BYE to every peer).

#include "options.hh"
#include "peering.hh"
#include "report.hh"
#include "session.hh"
#include "web_socket.hh"

#include <broker/configuration.hh>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

using namespace broker_throughput;

namespace {

constexpr const char* usage =
  "Usage: broker-throughput [options] <host>[:<port>]\n"
  "       broker-throughput --server [options] [<addr>]:<port>\n"
  "       broker-throughput --server --web-socket [options] <host>:<port>\n"
  "\n"
  "The client publishes events to /benchmark/events at <host>:<port> (default port 9999);\n"
  "the server receives them on <addr>:<port> (port 0: any free port) and prints the rate\n"
  "every second. With --web-socket both use a node's WebSocket API at <host>:<port>.\n";

int fail(int code, const std::string& what) {
  print_diagnostic(what);
  return code;
}

} // namespace

int main(int argc, char** argv) {
  // A reader of our stdout that goes away must not kill us; writes just fail.
  std::signal(SIGPIPE, SIG_IGN);
  signal_watch signals;
  if (signals.fd() < 0)
    return fail(exit_runtime_failure, "cannot create a signalfd for SIGINT/SIGTERM");
  broker::configuration cfg;
  if (auto err = add_throughput_options(cfg))
    return fail(exit_runtime_failure, err.message());
  std::vector<std::string> rest;
  auto err = cfg.load(argc, argv, &rest);
  if (cfg.help_requested()) {
    std::printf("%s\n%s", usage, cfg.help_text().c_str());
    return exit_clean;
  }
  if (err)
    return fail(exit_bad_usage, err.message());
  auto opts = read_throughput_options(cfg, rest);
  if (!opts)
    return fail(exit_bad_usage, opts.error_value().message());
  reporter out{*opts};
  session s{*opts, signals, out};
  if (opts->via == transport::web_socket)
    return opts->mode == role::server ? run_web_socket_server(s) : run_web_socket_client(s);
  if (opts->mode == role::server)
    return run_peering_server(std::move(cfg), s);
  return run_peering_client(std::move(cfg), s);
}
