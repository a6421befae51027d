#include "tool.hh"

#include <csignal>
#include <cstdio>

namespace broker_tools {

namespace {

/// Ignores SIGPIPE before the member signal_watch exists: a reader of our stdout that goes
/// away must not kill the tool; writes just fail.
tool_info ignoring_sigpipe(tool_info info) {
  std::signal(SIGPIPE, SIG_IGN);
  return info;
}

} // namespace

tool::tool(tool_info info) : info_(ignoring_sigpipe(info)) {
}

std::optional<int> tool::start(int argc, const char* const* argv, option_adder add_options) {
  if (signals_.fd() < 0)
    return fail(exit_cannot_start, "cannot create a signalfd for SIGINT/SIGTERM");
  if (auto err = add_options(cfg_))
    return fail(exit_cannot_start, err.message());
  auto err = cfg_.load(argc, argv, &args_);
  // --help wins over errors, so that `--help --typo` still shows the help.
  if (cfg_.help_requested()) {
    std::printf("%.*s\n%s", static_cast<int>(info_.usage.size()), info_.usage.data(),
                cfg_.help_text().c_str());
    return 0;
  }
  if (err)
    return fail(exit_bad_usage, err.message());
  return std::nullopt;
}

std::optional<int> tool::validated(const broker::error& err) {
  if (err)
    return fail(exit_bad_usage, err.message());
  return std::nullopt;
}

int tool::fail(int code, const std::string& what) const {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(info_.name.size()), info_.name.data(),
               what.c_str());
  return code;
}

} // namespace broker_tools
