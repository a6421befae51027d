#include "tool.hh"

#include <broker/security.hh>
#include <broker/version.hh>

#include <csignal>
#include <cstdio>
#include <filesystem>

#include <unistd.h>

namespace broker_tools {

namespace {

constexpr std::string_view version_flag = "--version";
constexpr std::string_view man_page_flag = "--man-page";
constexpr std::string_view check_config_flag = "--check-config";
constexpr std::string_view dump_config_flag = "--dump-config";

/// Ignores SIGPIPE before the member signal_watch exists: a reader of our stdout that goes
/// away must not kill the tool; writes just fail.
tool_info ignoring_sigpipe(tool_info info) {
  std::signal(SIGPIPE, SIG_IGN);
  return info;
}

void print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

broker::error unreadable(std::string_view key, const std::string& path, const char* what) {
  return broker::error{broker::ec::cannot_open_file,
                       std::string{key} + ": " + what + " \"" + path + "\""};
}

} // namespace

tool::tool(tool_info info) : info_(ignoring_sigpipe(std::move(info))) {
  // The page lists what configuration::help_text() shows under "general" as well.
  info_.man.general = {{"-h, -?, --help", "print the options and exit"},
                       {"--config-file=<path>", "read options from this file first"}};
  for (auto& flag : general_flags())
    info_.man.general.push_back(flag);
}

const std::vector<man_flag>& tool::general_flags() {
  static const std::vector<man_flag> flags{
    {version_flag, "print the version and exit"},
    {man_page_flag, "print the manual page (roff) and exit"},
    {check_config_flag,
     "validate the configuration (file, environment, command line) and exit"},
    {dump_config_flag,
     "print the effective configuration and where each value came from"},
  };
  return flags;
}

std::optional<int> tool::start(int argc, const char* const* argv, option_adder add_options) {
  if (signals_.fd() < 0)
    return fail(exit_cannot_start, "cannot create a signalfd for SIGINT/SIGTERM");
  if (auto err = add_options(cfg_))
    return fail(exit_cannot_start, err.message());
  // The general flags are no options: pick them out up to "--".
  std::vector<const char*> rest;
  bool options_ended = false;
  for (int i = 0; i < argc && argv[i] != nullptr; ++i) {
    std::string_view arg{argv[i]};
    if (i > 0 && !options_ended) {
      if (arg == version_flag) {
        std::printf("%.*s %s\n", static_cast<int>(name().size()), name().data(),
                    broker::version());
        return 0;
      }
      if (arg == man_page_flag) {
        print(render_man_page(info_.man, cfg_));
        return 0;
      }
      if (arg == check_config_flag || arg == dump_config_flag) {
        (arg == check_config_flag ? check_config_ : dump_config_) = true;
        continue;
      }
      options_ended = arg == "--";
    }
    rest.push_back(argv[i]);
  }
  rest.push_back(nullptr);
  auto err = cfg_.load(static_cast<int>(rest.size() - 1), rest.data(), &args_);
  // --help wins over errors, so that `--help --typo` still shows the help.
  if (cfg_.help_requested()) {
    print_help();
    return 0;
  }
  if (err)
    return fail(exit_bad_usage, err.message());
  for (auto& text : cfg_.notices())
    notice(text);
  return std::nullopt;
}

void tool::print_help() const {
  print(info_.man.usage);
  print("\nActions:\n");
  for (auto& flag : general_flags())
    std::printf("  %-22.*s  %.*s\n", static_cast<int>(flag.flag.size()), flag.flag.data(),
                static_cast<int>(flag.help.size()), flag.help.data());
  print("\n");
  print(cfg_.help_text());
}

std::optional<int> tool::validated(const broker::error& err) {
  if (err)
    return fail(exit_bad_usage, err.message());
  if (check_config_) {
    if (auto file_err = check_files())
      return fail(exit_bad_usage, file_err.message());
    if (auto rules_err = check_rules())
      return fail(exit_bad_usage, rules_err.message());
    std::printf("%.*s: configuration OK\n", static_cast<int>(name().size()), name().data());
    return 0;
  }
  if (dump_config_) {
    print(cfg_.dump());
    return 0;
  }
  return std::nullopt;
}

broker::error tool::check_files() const {
  namespace fs = std::filesystem;
  for (auto [key, path] : {std::pair{"broker.ssl.certificate", cfg_.ssl_certificate()},
                           std::pair{"broker.ssl.key", cfg_.ssl_key()},
                           std::pair{"broker.ssl.cafile", cfg_.ssl_cafile()}})
    if (!path.empty() && (!fs::is_regular_file(path) || ::access(path.c_str(), R_OK) != 0))
      return unreadable(key, path, "cannot read the file");
  if (auto& dir = cfg_.ssl_capath(); !dir.empty() && !fs::is_directory(dir))
    return unreadable("broker.ssl.capath", dir, "not a directory:");
  // Readable is not enough: PEM that parses, a key that decrypts and matches.
  if (auto err = cfg_.check_tls())
    return err;
  if (auto& file = cfg_.log_file(); !file.empty()) {
    auto dir = fs::path{file}.parent_path();
    if (dir.empty())
      dir = ".";
    if (::access(dir.c_str(), W_OK) != 0)
      return unreadable("broker.log-file", dir.string(), "cannot write to the directory");
  }
  return {};
}

broker::error tool::check_rules() const {
  auto path = cfg_.get_string("broker.security.rules-file").value_or("");
  if (path.empty())
    return {};
  auto summary = broker::security::check_rules_file(path);
  if (!summary)
    return summary.error_value();
  for (auto& note : summary->notes)
    notice(note);
  return {};
}

std::string listen_failure(const broker::error& err, std::string_view set_by) {
  auto text = err.message();
  if (err == broker::ec::cannot_open_resource)
    text += "; set by " + std::string{set_by};
  return text;
}

int tool::fail(int code, const std::string& what) const {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(name().size()), name().data(),
               what.c_str());
  return code;
}

void tool::notice(const std::string& what) const {
  std::fprintf(stderr, "%.*s: notice: %s\n", static_cast<int>(name().size()), name().data(),
               what.c_str());
}

} // namespace broker_tools
