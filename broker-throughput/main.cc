// broker-throughput: Broker's throughput benchmark (broker-benchmark's command line), for
// this implementation. A client publishes Zeek-shaped events to /benchmark/events as fast as
// possible or at a fixed rate; a server counts them and prints the rate every second. Both
// talk native peering, or a node's WebSocket API with --web-socket. See README.md.
//
// Start-up order matters:
//   1. Block SIGINT/SIGTERM (tools/tool.hh) before an endpoint starts its threads.
//   2. Parse and validate options; exit 1 with a message naming the option on error.
//   3. Run the role over its transport; it prints a summary when it ends and returns the
//      exit code. Endpoints shut down gracefully on the way out (BYE to every peer).

#include "options.hh"
#include "peering.hh"
#include "report.hh"
#include "session.hh"
#include "tool.hh"
#include "web_socket.hh"

using namespace broker_throughput;

namespace {

constexpr std::string_view usage =
  "Usage: broker-throughput [options] <host>[:<port>]\n"
  "       broker-throughput --server [options] [<addr>]:<port>\n"
  "       broker-throughput --server --web-socket [options] <host>:<port>\n"
  "\n"
  "The client publishes events to /benchmark/events at <host>:<port> (default port 9999);\n"
  "the server receives them on <addr>:<port> (port 0: any free port) and prints the rate\n"
  "every second. With --web-socket both use a node's WebSocket API at <host>:<port>.\n"
  "Addresses may also be written tcp://host:port, and [::1]:port for IPv6.\n";

/// The man page's sections beyond the options (tools/man_page.hh).
constexpr std::string_view exit_status =
  "0\tdone: --count or --duration reached, or SIGINT/SIGTERM\n"
  "1\tbad usage: the message names the option or argument\n"
  "2\truntime failure: cannot listen or connect, the connection broke";
constexpr std::string_view see_also =
  "broker-node(1), broker-store(1); broker-throughput/README.md";

broker_tools::tool_info throughput_info() {
  return {{"broker-throughput", "measure publish/subscribe throughput and latency of Broker "
                                "nodes",
           usage, exit_status, {}, see_also, {}}};
}

} // namespace

int main(int argc, char** argv) {
  broker_tools::tool t{throughput_info()};
  if (auto code = t.start(argc, argv, add_throughput_options))
    return *code;
  auto opts = read_throughput_options(t.config(), t.args(), !t.checking_only());
  if (auto code = t.validated(opts))
    return *code;
  reporter out{*opts};
  session s{*opts, t.signals(), out};
  if (opts->via == transport::web_socket)
    return opts->mode == role::server ? run_web_socket_server(s) : run_web_socket_client(s);
  if (opts->mode == role::server)
    return run_peering_server(t.config(), s);
  return run_peering_client(t.config(), s);
}
