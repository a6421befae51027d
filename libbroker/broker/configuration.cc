#include "broker/configuration.hh"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <memory>
#include <sstream>
#include <utility>

#include "broker/internal/config/compat.hh"
#include "broker/internal/config/config_file.hh"
#include "broker/internal/config/read_file.hh"
#include "broker/internal/config/options_table.hh"

namespace broker {

using internal::quote_for_message;

namespace {

constexpr size_t npos = static_cast<size_t>(-1);

// Keys may be given without this prefix on the command line (`--ttl=4`), as CAF's "?broker"
// option group allowed for Zeek Broker.
constexpr std::string_view implicit_prefix = "broker.";

// Real config files are a few kilobytes; the cap keeps `--config-file=/dev/zero` from
// eating memory forever.
constexpr size_t max_config_file_size = size_t{4} << 20;

// -- did-you-mean -----------------------------------------------------------------------------

// A typo suggestion is worth it only for short edits of plausible lengths.
constexpr size_t max_suggestion_distance = 2;
constexpr size_t max_suggestion_input = 64;

size_t edit_distance(std::string_view x, std::string_view y) {
  std::vector<size_t> row(y.size() + 1);
  for (size_t j = 0; j <= y.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= x.size(); ++i) {
    auto diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= y.size(); ++j) {
      auto above = row[j];
      auto substitution = diagonal + (x[i - 1] == y[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[y.size()];
}

std::string_view without_implicit_prefix(std::string_view key) {
  return key.substr(0, implicit_prefix.size()) == implicit_prefix
           ? key.substr(implicit_prefix.size())
           : key;
}

// The key `name` most likely meant, or empty. Compares the name as written, and the name
// with its first section dropped against keys without "broker.", so that a CAF-style
// `caf.scheduler.max-threads` points to `broker.scheduler.max-threads`.
template <class Keys>
std::string closest_key(std::string_view name, const Keys& keys) {
  if (name.size() > max_suggestion_input)
    return {};
  auto dot = name.find('.');
  auto tail = dot == std::string_view::npos ? name : name.substr(dot + 1);
  std::string best;
  auto best_distance = max_suggestion_distance + 1;
  for (const auto& key : keys) {
    auto short_key = without_implicit_prefix(key);
    for (auto distance : {edit_distance(name, key), edit_distance(name, short_key),
                          edit_distance(tail, short_key)}) {
      if (distance < best_distance) {
        best_distance = distance;
        best = key;
      }
    }
  }
  return best;
}

error with_prefix(std::string prefix, const error& err) {
  return error{err.code(), std::move(prefix) + ": " + err.message()};
}

} // namespace

std::string_view to_string(option_source x) noexcept {
  switch (x) {
    case option_source::default_value:
      return "default";
    case option_source::file:
      return "file";
    case option_source::environment:
      return "environment";
    case option_source::command_line:
      return "command line";
    case option_source::program:
      return "program";
  }
  return "invalid";
}

std::string_view to_string(option_type x) noexcept {
  switch (x) {
    case option_type::boolean:
      return "bool";
    case option_type::count:
      return "count";
    case option_type::port:
      return "port";
    case option_type::string:
      return "string";
    case option_type::string_list:
      return "list";
    case option_type::choice:
      return "choice";
  }
  return "invalid";
}

/// What a name means. Foreign names carry the notice to report when they are used.
struct configuration::resolved_name {
  size_t index = npos;  ///< The option it sets, or npos.
  bool ignored = false; ///< A Broker/CAF name with no effect here.
  std::string notice;   ///< Empty for our own keys.
};

// -- construction and the table -----------------------------------------------------------------

configuration::configuration() {
  const auto& table = options();
  values_.reserve(table.size());
  for (const auto& info : table) {
    auto value = internal::parse_option_value(info, info.default_value);
    // A default that fails its own validation is a bug in the table, caught by the tests.
    assert(value.has_value());
    values_.emplace_back(value ? std::move(*value) : option_value{});
  }
  origins_.resize(values_.size());
}

const std::vector<option_info>& configuration::options() {
  static const auto table = internal::make_options_table();
  return table;
}

error configuration::add_option(option_info info) {
  auto fail = [&info](const std::string& why) {
    return error{ec::invalid_config,
                 "cannot add option " + quote_for_message(info.key) + ": " + why};
  };
  if (!internal::is_valid_key(info.key))
    return fail("invalid key");
  // `--ttl` means broker.ttl on the command line, so a program's `ttl` would be ambiguous.
  if (index_of(info.key) != npos || index_of(std::string{implicit_prefix} + info.key) != npos
      || info.key == "help" || info.key == "config-file")
    return fail("the key is already in use");
  if (info.short_flag == 'h' || info.short_flag == '?')
    return fail("-h and -? are reserved for help");
  if (info.short_flag != 0 && !std::isalnum(static_cast<unsigned char>(info.short_flag)))
    return fail("a short flag must be a letter or digit");
  if (info.type == option_type::choice && info.choices.empty())
    return fail("a choice needs choices");
  if (info.min > info.max)
    return fail("min exceeds max");
  auto clashes = [&info](const option_info& other) {
    return (info.short_flag != 0 && other.short_flag == info.short_flag)
           || (!info.env.empty() && other.env == info.env);
  };
  if (std::any_of(options().begin(), options().end(), clashes)
      || std::any_of(program_options_.begin(), program_options_.end(), clashes))
    return fail("the short flag or environment variable is already in use");
  auto value = internal::parse_option_value(info, info.default_value);
  if (!value)
    return fail("invalid default: " + value.error_value().message());
  program_options_.emplace_back(std::move(info));
  values_.emplace_back(std::move(*value));
  origins_.emplace_back();
  return {};
}

error configuration::add_alias(std::string name, std::string key) {
  auto fail = [&name](const std::string& why) {
    return error{ec::invalid_config,
                 "cannot add alias " + quote_for_message(name) + ": " + why};
  };
  if (!internal::is_valid_key(name))
    return fail("invalid name");
  if (index_of(key) == npos)
    return fail("unknown option " + quote_for_message(key));
  if (resolve(name).index != npos || resolve(name).ignored)
    return fail("the name is already in use");
  aliases_.emplace_back(std::move(name), std::move(key));
  return {};
}

size_t configuration::index_of(std::string_view key) const noexcept {
  const auto& table = options();
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i].key == key)
      return i;
  for (size_t i = 0; i < program_options_.size(); ++i)
    if (program_options_[i].key == key)
      return table.size() + i;
  return npos;
}

const option_info& configuration::info_at(size_t index) const noexcept {
  const auto& table = options();
  return index < table.size() ? table[index] : program_options_[index - table.size()];
}

error configuration::assign(size_t index, option_value value, value_origin origin) {
  const auto& info = info_at(index);
  if (auto err = internal::check_option_value(info, value))
    return with_prefix(info.key, info.secret ? internal::secret_value_error(info) : err);
  values_[index] = std::move(value);
  origins_[index] = std::move(origin);
  return {};
}

error configuration::set_from(size_t index, std::string_view value, value_origin origin) {
  const auto& info = info_at(index);
  auto parsed = internal::parse_option_value(info, value);
  if (!parsed)
    return with_prefix(info.key, info.secret ? internal::secret_value_error(info)
                                             : parsed.error_value());
  return assign(index, std::move(*parsed), std::move(origin));
}

configuration::resolved_name configuration::resolve(std::string_view name) const {
  resolved_name result;
  if (result.index = index_of(name); result.index != npos)
    return result;
  for (const auto& [alias, key] : aliases_)
    if (alias == name) {
      result.index = index_of(key);
      result.notice = internal::alias_notice(name, key);
      return result;
    }
  if (auto foreign = internal::lookup_foreign_key(name)) {
    if (foreign->key.empty()) {
      result.ignored = true;
      result.notice = internal::ignored_notice(name, foreign->reason);
    } else {
      result.index = index_of(foreign->key);
      result.notice = internal::alias_notice(name, foreign->key);
    }
  }
  return result;
}

void configuration::add_notice(std::string text) {
  if (!text.empty() && std::find(notices_.begin(), notices_.end(), text) == notices_.end())
    notices_.push_back(std::move(text));
}

std::optional<option_source> configuration::source(std::string_view key) const {
  auto index = index_of(key);
  if (index == npos)
    return std::nullopt;
  return origins_[index].source;
}

// -- generic access -------------------------------------------------------------------------

namespace {

template <class Config>
error unknown_option(const Config& cfg, std::string_view shown, std::string_view name) {
  std::vector<std::string> keys;
  for (const auto& info : Config::options())
    keys.push_back(info.key);
  for (const auto& info : cfg.program_options())
    keys.push_back(info.key);
  auto message = "unknown option " + quote_for_message(shown);
  if (auto guess = closest_key(name, keys); !guess.empty()) {
    auto dashes = shown.substr(0, 2) == "--" ? "--" : "";
    message += " (did you mean \"" + std::string{dashes} + guess + "\"?)";
  }
  return error{ec::invalid_config, std::move(message)};
}

} // namespace

error configuration::set(std::string_view key, std::string_view value) {
  auto name = resolve(key);
  if (name.ignored) {
    add_notice(std::move(name.notice));
    return {};
  }
  if (name.index == npos)
    return unknown_option(*this, key, key);
  if (auto err = set_from(name.index, value, {option_source::program, {}}))
    return err;
  add_notice(std::move(name.notice));
  return {};
}

error configuration::set_bool(std::string_view key, bool value) {
  auto index = index_of(key);
  return index == npos ? unknown_option(*this, key, key)
                       : assign(index, value, {option_source::program, {}});
}

error configuration::set_count(std::string_view key, uint64_t value) {
  auto index = index_of(key);
  return index == npos ? unknown_option(*this, key, key)
                       : assign(index, value, {option_source::program, {}});
}

error configuration::set_list(std::string_view key, std::vector<std::string> value) {
  auto index = index_of(key);
  return index == npos ? unknown_option(*this, key, key)
                       : assign(index, std::move(value), {option_source::program, {}});
}

namespace {

template <class T>
std::optional<T> get_as(const std::vector<option_value>& values, size_t index) {
  if (index == npos)
    return std::nullopt;
  if (auto x = std::get_if<T>(&values[index]))
    return *x;
  return std::nullopt;
}

} // namespace

std::optional<bool> configuration::get_bool(std::string_view key) const {
  return get_as<bool>(values_, index_of(key));
}

std::optional<uint64_t> configuration::get_count(std::string_view key) const {
  return get_as<uint64_t>(values_, index_of(key));
}

std::optional<std::string> configuration::get_string(std::string_view key) const {
  return get_as<std::string>(values_, index_of(key));
}

std::optional<std::vector<std::string>> configuration::get_list(std::string_view key) const {
  return get_as<std::vector<std::string>>(values_, index_of(key));
}

// -- sources ----------------------------------------------------------------------------------

error configuration::load_file(const std::string& path) {
  auto fail = [&path](const char* what) {
    return error{ec::cannot_open_file, std::string{what} + " config file "
                                         + quote_for_message(path) + ": " + std::strerror(errno)};
  };
  std::string text;
  switch (internal::read_file_bounded(path, max_config_file_size, text)) {
    case internal::file_read::cannot_open:
      return fail("cannot open");
    case internal::file_read::cannot_read:
      return fail("cannot read");
    case internal::file_read::too_large:
      return error{ec::invalid_config, "config file " + quote_for_message(path)
                                         + " is larger than "
                                         + std::to_string(max_config_file_size) + " bytes"};
    case internal::file_read::ok:
      break;
  }
  return load_string(text, path);
}

error configuration::load_string(std::string_view text, std::string_view origin) {
  auto entries = internal::parse_config_text(text, origin);
  if (!entries)
    return entries.error_value();
  // Apply to a copy: a file with an error in line 20 must not leave lines 1-19 applied.
  auto copy = *this;
  for (auto& entry : *entries) {
    auto where = std::string{origin} + ":" + std::to_string(entry.line) + ":"
                 + std::to_string(entry.column);
    auto name = copy.resolve(entry.key);
    if (name.ignored) {
      copy.add_notice(where + ": " + name.notice);
      continue;
    }
    auto index = name.index;
    if (index == npos)
      return with_prefix(where, unknown_option(copy, entry.key, entry.key));
    const auto& info = copy.info_at(index);
    value_origin from{option_source::file, where};
    error err;
    if (auto scalar = std::get_if<std::string>(&entry.value)) {
      err = copy.set_from(index, *scalar, std::move(from));
    } else if (info.type == option_type::string_list) {
      err = copy.assign(index, std::move(std::get<std::vector<std::string>>(entry.value)),
                        std::move(from));
    } else {
      err = error{ec::invalid_config, info.key + ": expected a "
                                        + std::string{to_string(info.type)} + ", got a list"};
    }
    if (err)
      return with_prefix(where, err);
    if (!name.notice.empty())
      copy.add_notice(where + ": " + name.notice);
  }
  *this = std::move(copy);
  return {};
}

error configuration::load_env() {
  return load_env([](const char* name) -> const char* { return std::getenv(name); });
}

error configuration::load_env(const getenv_function& getenv) {
  auto copy = *this;
  auto read = [&copy, &getenv](size_t index) -> error {
    const auto& info = copy.info_at(index);
    if (info.env.empty())
      return {};
    auto text = getenv(info.env.c_str());
    if (text == nullptr)
      return {};
    auto value = internal::parse_option_value(info, text);
    if (!value)
      return with_prefix(info.env + " (" + info.key + ")", value.error_value());
    return copy.assign(index, std::move(*value), {option_source::environment, info.env});
  };
  for (size_t index = 0; index < values_.size(); ++index)
    if (auto err = read(index))
      return err;
  if (auto err = copy.read_foreign_variables(getenv))
    return err;
  *this = std::move(copy);
  return {};
}

error configuration::read_foreign_variables(const getenv_function& getenv) {
  for (const auto& var : internal::foreign_variables()) {
    auto text = getenv(var.name.c_str());
    if (text == nullptr)
      continue;
    if (var.meaning.key.empty()) {
      add_notice(internal::ignored_notice(var.name, var.meaning.reason));
      continue;
    }
    auto index = index_of(var.meaning.key);
    if (auto err = set_from(index, text, {option_source::environment, var.name}))
      return with_prefix(var.name, err);
    add_notice(internal::alias_notice(var.name, var.meaning.key));
  }
  return {};
}

error configuration::parse_args(int argc, const char* const* argv,
                                std::vector<std::string>* remainder) {
  if (argv == nullptr)
    argc = 0;
  // By convention argv[argc] is null; an earlier null also ends the list.
  auto arg_at = [argv, argc](int i) -> std::optional<std::string_view> {
    if (i >= argc || argv[i] == nullptr)
      return std::nullopt;
    return std::string_view{argv[i]};
  };
  // Help first, so that `prog --help --typo` still shows the help next to the error.
  help_requested_ = false;
  for (int i = 1; auto arg = arg_at(i); ++i) {
    if (*arg == "--")
      break;
    if (*arg == "-h" || *arg == "-?" || *arg == "--help")
      help_requested_ = true;
  }
  auto copy = *this;
  copy.config_file_.clear();
  std::vector<std::string> positional;
  auto missing_value = [](std::string_view flag) {
    return error{ec::invalid_config, quote_for_message(flag) + " needs a value"};
  };
  bool options_ended = false;
  for (int i = 1; auto arg_opt = arg_at(i); ++i) {
    auto arg = *arg_opt;
    if (options_ended || arg.size() < 2 || arg[0] != '-') {
      positional.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }
    if (arg == "-h" || arg == "-?" || arg == "--help")
      continue;
    size_t index = npos;
    std::string notice;
    std::string_view flag;
    std::optional<std::string_view> value;
    if (arg[1] == '-') {
      auto body = arg.substr(2);
      auto eq = body.find('=');
      auto name = body.substr(0, eq);
      flag = arg.substr(0, eq == std::string_view::npos ? arg.size() : eq + 2);
      if (eq != std::string_view::npos)
        value = body.substr(eq + 1);
      if (name == "config-file") {
        if (!value && !(value = arg_at(++i)))
          return missing_value(flag);
        copy.config_file_ = std::string{*value};
        continue;
      }
      auto resolved = copy.resolve(name);
      if (resolved.index == npos && !resolved.ignored
          && name.substr(0, implicit_prefix.size()) != implicit_prefix)
        resolved = copy.resolve(std::string{implicit_prefix} + std::string{name});
      if (resolved.ignored) {
        // Ignored Broker and CAF settings all take a value.
        if (!value && !(value = arg_at(++i)))
          return missing_value(flag);
        copy.add_notice(std::move(resolved.notice));
        continue;
      }
      if (resolved.index == npos)
        return unknown_option(copy, flag, name);
      index = resolved.index;
      notice = std::move(resolved.notice);
    } else {
      flag = arg.substr(0, 2);
      for (size_t j = 0; j < copy.values_.size() && index == npos; ++j)
        if (copy.info_at(j).short_flag == arg[1])
          index = j;
      if (index == npos)
        return unknown_option(copy, flag, flag);
      auto rest = arg.substr(2);
      if (!rest.empty() && rest.front() == '=')
        value = rest.substr(1);
      else if (!rest.empty())
        value = rest;
    }
    const auto& info = copy.info_at(index);
    if (!value) {
      // A bool never takes the next argument: `--disable-ssl file.txt` keeps file.txt.
      if (info.type == option_type::boolean)
        value = "true";
      else if (!(value = arg_at(++i)))
        return missing_value(flag);
    }
    if (auto err = copy.set_from(index, *value, {option_source::command_line, std::string{flag}}))
      return err;
    copy.add_notice(std::move(notice));
    if (info.secret && !value->empty())
      copy.add_notice(info.key + " is given on the command line, where every local user "
                                 "can read it (ps, /proc/<pid>/cmdline); put it in the "
                                 "config file instead");
  }
  if (!positional.empty() && remainder == nullptr)
    return error{ec::invalid_config,
                 "unexpected argument " + quote_for_message(positional.front())};
  *this = std::move(copy);
  if (remainder != nullptr)
    *remainder = std::move(positional);
  return {};
}

error configuration::load(int argc, const char* const* argv,
                          std::vector<std::string>* remainder) {
  // A first pass finds --config-file exactly as parse_args() reads it (and rejects bad
  // arguments before any file is read); the second pass lets the command line win.
  auto copy = *this;
  std::vector<std::string> ignored;
  auto err = copy.parse_args(argc, argv, remainder != nullptr ? &ignored : nullptr);
  help_requested_ = copy.help_requested_;
  if (err)
    return err;
  auto path = copy.config_file_;
  copy = *this;
  if (!path.empty())
    if (auto err = copy.load_file(path))
      return err;
  if (auto err = copy.load_env())
    return err;
  if (auto err = copy.parse_args(argc, argv, remainder))
    return err;
  *this = std::move(copy);
  return {};
}

bool operator==(const configuration& x, const configuration& y) {
  auto same_key = [](const option_info& a, const option_info& b) { return a.key == b.key; };
  return std::equal(x.program_options_.begin(), x.program_options_.end(),
                    y.program_options_.begin(), y.program_options_.end(), same_key)
         && x.values_ == y.values_;
}

} // namespace broker
