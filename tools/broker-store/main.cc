// broker-store: reads and writes a Broker data store from the command line (see
// doc/broker-store.md).
//
//   broker-store --peer 127.0.0.1:9999 users get alice
//   printf 'put alice 1\nincrement alice 2\nget alice\n' | broker-store --peer h:9999 users
//
// Start-up order:
//   1. Block SIGINT/SIGTERM (tools/tool.hh) before the endpoint starts its threads.
//   2. Parse options and the operations given on the command line; exit 1 on bad usage.
//   3. Start the endpoint, listen (--listen), dial --peer.
//   4. Attach the store: the master (--master) or a clone, which waits for its first
//      snapshot (--ready-timeout). Exit 2 if any of this fails.
//   5. Run the command line's operations, or else one per line of stdin until EOF or a
//      signal; one JSON line each, a write's once the master's verdict is in (runner.hh).
//      Exit 3 if any of them failed.

#include "ops.hh"
#include "runner.hh"

#include "address.hh"
#include "option_rows.hh"
#include "store_options.hh"
#include "tool.hh"

#include <broker/configuration.hh>
#include <broker/endpoint.hh>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <unistd.h>

using namespace broker_store;

namespace {

constexpr std::string_view usage =
  "Usage: broker-store [options] STORE [OPERATION [ARGS...] [';' OPERATION ...]]\n"
  "\n"
  "Attaches a clone of STORE (or its master with --master) and runs the operations, or\n"
  "else one operation per line of stdin. Prints one JSON line per operation.\n"
  "Operations: put KEY VALUE [EXPIRY], put_unique KEY VALUE [EXPIRY], get KEY, exists KEY,\n"
  "keys, erase KEY, clear, increment/decrement KEY AMOUNT [EXPIRY], append KEY STRING\n"
  "[EXPIRY], insert_into KEY ELEMENT [EXPIRY], insert_into KEY INDEX VALUE [EXPIRY],\n"
  "remove_from KEY ELEMENT [EXPIRY], push KEY VALUE [EXPIRY], pop KEY [EXPIRY],\n"
  "get_index_from_value KEY INDEX, wait-size N TIMEOUT, wait-get KEY VALUE TIMEOUT.\n"
  "Values (doc/literals.md): 5 is an integer, 5c a count, 1.5 a real, \"a\" and other\n"
  "words a string, [1,2] a vector, {\"a\":1} a table, 10.0.0.1 an address, 80/tcp a port,\n"
  "10s a timespan, a typed {\"@data-type\":...} object anything. EXPIRY and TIMEOUT are\n"
  "durations such as 10s or 500ms. Put -- before words that start with '-'.\n"
  "Exit codes: 0 all operations succeeded, 1 bad usage, 2 cannot reach or attach the\n"
  "store, 3 an operation failed. See doc/broker-store.md.\n";

/// The man page's sections beyond the options (tools/man_page.hh).
constexpr std::string_view exit_status = "0\tall operations succeeded\n"
                                         "1\tbad usage: an option, an operation or a value\n"
                                         "2\tcannot reach or attach the store\n"
                                         "3\tan operation failed";
constexpr std::string_view see_also =
  "broker-node(1), broker-throughput(1); doc/broker-store.md";

broker_tools::tool_info store_info() {
  return {{"broker-store", "read and write a Broker data store from the command line", usage,
           exit_status, {}, see_also, {}}};
}

/// Exit codes (doc/broker-store.md).
enum exit_code : int {
  exit_ok = 0,
  exit_bad_usage = 1,
  exit_no_store = 2,
  exit_op_failed = 3,
};

/// Seconds a clone waits for its first snapshot unless --ready-timeout says otherwise.
constexpr uint64_t default_ready_timeout_seconds = 10;

constexpr uint64_t max_seconds = 3600;

/// The word that separates operations on the command line.
constexpr std::string_view op_separator = ";";

/// Bytes read from stdin at a time.
constexpr size_t read_chunk_size = 64 * 1024;

/// A longer line on stdin is an error (and skipped): input must not grow memory unbounded.
constexpr size_t max_line_size = 16 * 1024 * 1024;

/// How often to look at the peerings while waiting for --peer with --peer-retry.
constexpr auto peer_poll_interval = std::chrono::milliseconds{20};

struct tool_options {
  std::vector<broker_tools::peer_address> peers;
  std::chrono::seconds peer_retry{0};
  bool master = false;
  broker_tools::store_settings backend; ///< Of the master (--master).
  bool listen = false;
  std::string listen_address;
  uint16_t port = 0;
  std::chrono::seconds ready_timeout{default_ready_timeout_seconds};
  bool fire_and_forget = false;
  std::string store;
  std::vector<operation> ops; ///< From the command line; empty: read stdin.
};

broker::error add_tool_options(broker::configuration& cfg) {
  using namespace broker_tools;
  std::vector<broker::option_info> rows;
  rows.push_back(list_row("peer", "nodes to peer with, each host:port or tcp://host:port "
                                  "([::1]:port for IPv6)"));
  rows.push_back(count_row("peer-retry", 0, 0, max_seconds,
                           "seconds between re-dials of a failed or lost peer; 0: dial once"));
  rows.push_back(flag_row("master", "host the store's master here (see --store-backend) "
                                    "instead of a clone"));
  add_store_rows(rows, "--master");
  rows.push_back(flag_row("listen", "accept peerings on -p (0: a free port), printed as "
                                    "{\"listening\":PORT}"));
  rows.push_back(string_row("listen-address", "",
                            "address --listen binds to; empty: all interfaces"));
  rows.push_back(count_row("ready-timeout", default_ready_timeout_seconds, 0, max_seconds,
                           "seconds a clone waits for its master's snapshot; 0: do not wait"));
  rows.push_back(flag_row("fire-and-forget",
                          "print a clone's write as ok once it is handed on, without waiting "
                          "for the master's verdict (a rejection then shows only on the "
                          "master's node)"));
  return add_rows(cfg, std::move(rows));
}

/// Splits the words after STORE at ";" and parses each operation.
broker::error parse_command_line_ops(const std::vector<std::string>& words,
                                     std::vector<operation>& out) {
  std::vector<std::string> current;
  auto flush = [&]() -> broker::error {
    if (current.empty())
      return {};
    auto op = parse_operation(current);
    current.clear();
    if (!op)
      return op.error_value();
    out.push_back(std::move(*op));
    return {};
  };
  for (auto& word : words) {
    if (word == op_separator) {
      if (auto err = flush())
        return err;
    } else {
      current.push_back(word);
    }
  }
  return flush();
}

/// `need_store`: false with --check-config and --dump-config, which check what is given.
broker::expected<tool_options> read_options(const broker::configuration& cfg,
                                            const std::vector<std::string>& rest,
                                            bool need_store) {
  tool_options result;
  for (auto& text : cfg.get_list("peer").value_or(std::vector<std::string>{})) {
    auto addr = broker_tools::parse_address(text);
    if (!addr)
      return broker_tools::option_error("peer", addr.error_value().message());
    result.peers.push_back(std::move(*addr));
  }
  result.peer_retry = std::chrono::seconds{cfg.get_count("peer-retry").value_or(0)};
  result.master = cfg.get_bool("master").value_or(false);
  auto backend = broker_tools::read_store_settings(cfg);
  if (!backend)
    return backend.error_value();
  result.backend = std::move(*backend);
  result.listen = cfg.get_bool("listen").value_or(false);
  result.listen_address = cfg.get_string("listen-address").value_or("");
  result.port = cfg.port();
  result.ready_timeout = std::chrono::seconds{
    cfg.get_count("ready-timeout").value_or(default_ready_timeout_seconds)};
  result.fire_and_forget = cfg.get_bool("fire-and-forget").value_or(false);
  if (rest.empty() && !need_store)
    return result;
  if (rest.empty())
    return broker::error{broker::ec::invalid_config, "missing STORE (see --help)"};
  result.store = rest.front();
  if (result.store.empty() || broker::is_reserved_topic(result.store))
    return broker::error{broker::ec::invalid_config,
                         "invalid store name \"" + result.store + "\""};
  if (result.master)
    if (auto err = broker_tools::check_store_file_name(result.backend, "STORE", result.store))
      return err;
  std::vector<std::string> words{rest.begin() + 1, rest.end()};
  if (auto err = parse_command_line_ops(words, result.ops))
    return err;
  return result;
}

/// Why dialing `peer` failed: the error event the endpoint emitted for it.
broker::error dial_error(broker::endpoint& ep, broker::status_subscriber& events,
                         const broker_tools::peer_address& peer) {
  auto where = peer.host + ":" + std::to_string(peer.port);
  // The event was posted to the core before peer() returned; a synchronous call into the
  // core runs after the core routed it to our subscriber.
  ep.metrics();
  for (auto& event : events.poll())
    if (auto* err = std::get_if<broker::error>(&event);
        err != nullptr && err->message().find(where) != std::string::npos)
      return *err;
  return broker::error{broker::ec::peer_unavailable,
                       "cannot peer with " + where + " (no reason reported)"};
}

/// Dials every --peer. Without --peer-retry each dial is tried once; with it, the dials run
/// in the background and this waits for them, at most --ready-timeout (0: not at all).
broker::error dial_peers(broker::endpoint& ep, const tool_options& opts) {
  if (opts.peer_retry.count() == 0) {
    // peer() says only "no"; the reason arrives as an error event.
    auto events = ep.make_status_subscriber();
    for (auto& peer : opts.peers)
      if (!ep.peer(peer.host, peer.port, std::chrono::seconds{0}))
        return dial_error(ep, events, peer);
    return {};
  }
  for (auto& peer : opts.peers)
    ep.peer_nosync(peer.host, peer.port, opts.peer_retry);
  if (opts.ready_timeout.count() == 0)
    return {};
  auto deadline = std::chrono::steady_clock::now() + opts.ready_timeout;
  while (ep.peers().size() < opts.peers.size()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return broker::error{broker::ec::peer_unavailable,
                           "not every --peer answered within --ready-timeout"};
    std::this_thread::sleep_for(peer_poll_interval);
  }
  return {};
}

broker::expected<broker::store> attach(broker::endpoint& ep, const tool_options& opts) {
  if (opts.master)
    return ep.attach_master(opts.store, opts.backend.backend,
                            broker_tools::backend_options_for(opts.backend, opts.store));
  auto st = ep.attach_clone(opts.store);
  if (!st || opts.ready_timeout.count() == 0)
    return st;
  if (!st->await_ready(opts.ready_timeout))
    return broker::error{broker::ec::no_such_master,
                         "store " + opts.store + ": no snapshot from its master within "
                           + std::to_string(opts.ready_timeout.count())
                           + " s (is a master attached in the network? "
                             "--ready-timeout=0 skips this wait)"};
  return st;
}

/// Reads stdin line by line until EOF or SIGINT/SIGTERM and runs each line.
bool run_stdin(runner& r, broker_tools::signal_watch& signals) {
  bool all_ok = true;
  auto run_line = [&](std::string_view line) {
    auto words = split_words(line);
    if (!words) {
      r.print_error("", words.error_value());
      all_ok = false;
      return;
    }
    if (words->empty() || words->front().front() == '#')
      return; // Blank lines and comments.
    auto op = parse_operation(*words);
    if (!op) {
      r.print_error(words->front(), op.error_value());
      all_ok = false;
      return;
    }
    all_ok = r.run(*op) && all_ok;
  };
  std::string buf;
  bool skipping = false; // Inside a line that was too long, up to its newline.
  std::vector<char> chunk(read_chunk_size);
  while (!r.interrupted()) {
    pollfd fds[] = {{STDIN_FILENO, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if ((fds[1].revents & POLLIN) != 0 && signals.consume())
      return all_ok;
    if (fds[0].revents == 0)
      continue;
    auto n = ::read(STDIN_FILENO, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    buf.append(chunk.data(), static_cast<size_t>(n));
    size_t start = 0;
    for (auto nl = buf.find('\n'); nl != std::string::npos && !r.interrupted();
         nl = buf.find('\n', start)) {
      if (!skipping)
        run_line(std::string_view{buf}.substr(start, nl - start));
      skipping = false;
      start = nl + 1;
    }
    buf.erase(0, start);
    if (buf.size() > max_line_size) {
      if (!skipping) {
        r.print_error("", broker::error{broker::ec::invalid_message,
                                        "a line longer than " + std::to_string(max_line_size)
                                          + " bytes"});
        all_ok = false;
      }
      skipping = true;
      buf.clear();
    }
  }
  if (!buf.empty() && !skipping && !r.interrupted())
    run_line(buf);
  return all_ok;
}

int run(broker_tools::tool& t, const tool_options& opts) {
  auto& signals = t.signals();
  auto timeout = std::chrono::milliseconds{t.config().store_request_timeout()};
  broker::endpoint ep{t.config()};
  if (const auto& err = ep.startup_error())
    return t.fail(exit_no_store, "cannot start: " + err.message());
  if (opts.listen) {
    auto port = ep.listen(opts.listen_address, opts.port);
    if (!port)
      return t.fail(exit_no_store,
                    broker_tools::listen_failure(port.error_value(),
                                                 "-p/--broker.port (env BROKER_PORT), "
                                                 "--listen-address"));
    std::printf("{\"listening\":%u}\n", static_cast<unsigned>(*port));
    std::fflush(stdout);
  }
  if (auto err = dial_peers(ep, opts))
    return t.fail(exit_no_store, err.message());
  auto st = attach(ep, opts);
  if (!st)
    return t.fail(exit_no_store, "cannot attach store \"" + opts.store
                                 + "\": " + to_string(st.error_value()));
  runner r{ep, *st, timeout, [&signals] { return signals.consume(); }, opts.fire_and_forget};
  bool all_ok = true;
  if (opts.ops.empty())
    all_ok = run_stdin(r, signals);
  else
    for (auto& op : opts.ops) {
      if (r.interrupted() || signals.consume())
        break;
      all_ok = r.run(op) && all_ok;
    }
  // The last writes (forwarded ones above all) may still wait in the store's inbox to the
  // core. Let the store drain, then make one synchronous call into the core, which runs
  // after the core routed them to the peers; shutdown then sends them before its BYE (as
  // broker-node does on exit).
  st->await_idle(timeout);
  ep.metrics();
  return all_ok ? exit_ok : exit_op_failed;
}

} // namespace

int main(int argc, char** argv) {
  broker_tools::tool t{store_info()};
  if (auto code = t.start(argc, argv, add_tool_options))
    return *code;
  auto opts = read_options(t.config(), t.args(), !t.checking_only());
  if (auto code = t.validated(opts))
    return *code;
  return run(t, *opts);
}
