#pragma once

// tool: the start-up every command-line tool shares (broker-node, broker-throughput,
// broker-store): signals, the options table, the general flags, and exit codes.
//
//   int main(int argc, char** argv) {
//     broker_tools::tool t{info};                          // 1. SIGPIPE, SIGINT/SIGTERM
//     if (auto code = t.start(argc, argv, add_my_options)) // 2. rows, file, env, CLI
//       return *code;                                      //    --help, --version, errors
//     auto opts = read_my_options(t.config(), t.args());   // 3. the tool's own checks
//     if (auto code = t.validated(opts))                   // 4. bad usage, --check-config,
//       return *code;                                      //    --dump-config
//     return run(t, *opts);
//   }
//
// General flags (not rows of the options table, so no config file can set them):
//   --version       prints "<name> <version>" and exits 0
//   --man-page      prints the manual page in roff (man_page.hh) and exits 0
//   --check-config  loads and validates everything (the rules file too), prints
//                   "configuration OK", exits 0
//   --dump-config   prints the effective configuration with each value's source, exits 0
// Notices about Broker spellings (configuration::notices()) go to stderr at start-up.
//
// Threads: construct the tool first thing in main(), before anything starts a thread: it
// blocks SIGINT and SIGTERM in the calling thread so that every later thread inherits the
// mask (signal_watch.hh). Everything else runs on the main thread too.

#include "man_page.hh"
#include "signal_watch.hh"

#include <broker/configuration.hh>
#include <broker/error.hh>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace broker_tools {

/// Exit code of every tool for a bad command line, config file, environment or value.
inline constexpr int exit_bad_usage = 1;

/// Exit code of every tool when it cannot start (signals, a port, a peer, a store).
inline constexpr int exit_cannot_start = 2;

/// What a tool tells the shared start-up about itself. `man.usage` doubles as the text
/// above the options in --help.
struct tool_info {
  man_page_info man;
};

/// Adds a tool's rows (and aliases) to the options table (option_rows.hh).
using option_adder = broker::error (*)(broker::configuration&);

/// The message of a failed listen (`err` from endpoint::listen), naming where the address
/// came from when it was the address itself that failed ("in use", "cannot assign"):
/// "cannot listen for peerings on *:9999: Address already in use; set by -p/--broker.port
/// (env BROKER_PORT)".
std::string listen_failure(const broker::error& err, std::string_view set_by);

/// See the file comment.
class tool {
public:
  /// Ignores SIGPIPE and blocks SIGINT/SIGTERM (signal_watch).
  explicit tool(tool_info info);

  tool(const tool&) = delete;
  tool& operator=(const tool&) = delete;

  /// Adds the tool's rows and loads file, environment and command line. Returns an exit
  /// code when the program must end now: 0 after --help, --version or --man-page,
  /// exit_bad_usage for bad input, exit_cannot_start if the signals or the table cannot be
  /// set up. Prints the configuration's notices to stderr.
  std::optional<int> start(int argc, const char* const* argv, option_adder add_options);

  /// Ends the tool's own validation: exit_bad_usage with the error's message; 0 after
  /// --check-config or --dump-config; nullopt to go on.
  std::optional<int> validated(const broker::error& err);

  /// Like validated(error) for the result of reading the tool's options.
  template <class T>
  std::optional<int> validated(const broker::expected<T>& opts) {
    return validated(opts ? broker::error{} : opts.error_value());
  }

  /// Prints `<name>: <what>` to stderr and returns `code`.
  int fail(int code, const std::string& what) const;

  /// Prints `<name>: notice: <what>` to stderr.
  void notice(const std::string& what) const;

  broker::configuration& config() noexcept { return cfg_; }
  const broker::configuration& config() const noexcept { return cfg_; }

  /// True with --check-config or --dump-config: the tool only checks or prints its
  /// configuration, so arguments it needs to run (a STORE, an address) may be left out.
  bool checking_only() const noexcept { return check_config_ || dump_config_; }

  /// The positional arguments (everything that is not an option).
  const std::vector<std::string>& args() const noexcept { return args_; }

  signal_watch& signals() noexcept { return signals_; }

  std::string_view name() const noexcept { return info_.man.name; }

  /// The general flags (--version, --man-page, --check-config, --dump-config).
  static const std::vector<man_flag>& general_flags();

private:
  /// Usage, the general flags and the options table.
  void print_help() const;

  /// Files the configuration names that the tool will need (TLS, log file).
  broker::error check_files() const;

  /// The rules file (broker.security.rules-file), loaded and validated; its notes are
  /// printed as notices.
  broker::error check_rules() const;

  tool_info info_;
  signal_watch signals_;
  broker::configuration cfg_;
  std::vector<std::string> args_;
  bool check_config_ = false;
  bool dump_config_ = false;
};

} // namespace broker_tools
