// The configuration rendered as text: --help, the columns man pages reuse, and dump().

#include "broker/configuration.hh"

#include <algorithm>
#include <sstream>

#include "broker/internal/config/options_table.hh"

namespace broker {

using internal::hidden_value;
using internal::quote_for_message;

namespace {

std::string render_default(const option_info& info) {
  switch (info.type) {
    case option_type::string:
      return quote_for_message(info.default_value);
    case option_type::string_list:
      return info.default_value.empty() ? std::string{"[]"} : info.default_value;
    default:
      return info.default_value;
  }
}

std::string render_flag(const option_info& info) {
  std::string result;
  if (info.short_flag != 0) {
    result += '-';
    result += info.short_flag;
    result += ", ";
  }
  result += "--";
  result += info.key;
  if (info.type == option_type::boolean)
    result += "[=<bool>]";
  else
    result += "=<" + std::string{to_string(info.type)} + ">";
  return result;
}

std::string render_description(const option_info& info) {
  auto result = info.help + " (default: " + render_default(info);
  if (info.type == option_type::count)
    result += "; " + std::to_string(info.min) + "-" + std::to_string(info.max);
  if (info.type == option_type::choice) {
    result += "; one of";
    for (size_t i = 0; i < info.choices.size(); ++i)
      result += (i == 0 ? " " : ", ") + info.choices[i];
  }
  if (!info.env.empty())
    result += "; env " + info.env;
  if (info.secret)
    result += "; secret: never printed";
  result += ")";
  return result;
}

std::string group_of(const std::string& key) {
  auto dot = key.rfind('.');
  return dot == std::string::npos ? std::string{} : key.substr(0, dot);
}

// -- dump -------------------------------------------------------------------------------------

/// A string as the config-file syntax reads it back (doc/configuration.md).
std::string config_quoted(const std::string& text) {
  std::string result = "\"";
  for (auto c : text) {
    switch (c) {
      case '"':
        result += "\\\"";
        break;
      case '\\':
        result += "\\\\";
        break;
      case '\n':
        result += "\\n";
        break;
      case '\t':
        result += "\\t";
        break;
      case '\r':
        result += "\\r";
        break;
      default:
        result += c;
    }
  }
  result += '"';
  return result;
}

struct value_text {
  const option_info& info;

  std::string operator()(bool x) const { return x ? "true" : "false"; }

  std::string operator()(uint64_t x) const { return std::to_string(x); }

  std::string operator()(const std::string& x) const {
    return info.type == option_type::choice ? x : config_quoted(x);
  }

  std::string operator()(const std::vector<std::string>& xs) const {
    std::string result = "[";
    for (size_t i = 0; i < xs.size(); ++i) {
      if (i > 0)
        result += ", ";
      result += config_quoted(xs[i]);
    }
    return result + "]";
  }
};

} // namespace

std::vector<const option_info*> configuration::all_options() const {
  std::vector<const option_info*> rows;
  for (const auto& info : options())
    rows.push_back(&info);
  for (const auto& info : program_options_)
    rows.push_back(&info);
  return rows;
}

std::string configuration::flag_text(const option_info& info) {
  return render_flag(info);
}

std::string configuration::description_text(const option_info& info) {
  return render_description(info);
}

std::string configuration::help_text() const {
  // Flags longer than this get their description on the next line.
  constexpr size_t max_flag_column = 44;
  auto rows = all_options();
  std::vector<std::string> groups; // in order of first appearance
  for (auto row : rows)
    if (auto group = group_of(row->key);
        std::find(groups.begin(), groups.end(), group) == groups.end())
      groups.push_back(group);
  size_t width = 0;
  for (auto row : rows)
    width = std::max(width, std::min(render_flag(*row).size(), max_flag_column));
  std::ostringstream out;
  auto line = [&out, width](const std::string& flag, const std::string& description) {
    out << "  " << flag;
    if (flag.size() > width)
      out << "\n  " << std::string(width, ' ');
    else
      out << std::string(width - flag.size(), ' ');
    out << "  " << description << '\n';
  };
  out << "Options (precedence: defaults < config file < environment < command line).\n"
      << "Keys may omit \"broker.\" on the command line, e.g. --ttl=4.\n\n"
      << "general:\n";
  line("-h, -?, --help", "print this help and exit");
  line("--config-file=<path>", "read options from this file first (see doc/configuration.md)");
  for (const auto& group : groups) {
    out << '\n' << (group.empty() ? std::string{"program"} : group) << ":\n";
    for (auto row : rows)
      if (group_of(row->key) == group)
        line(render_flag(*row), render_description(*row));
  }
  return out.str();
}

std::string configuration::dump() const {
  // Comments start in this column unless the assignment is longer.
  constexpr size_t comment_column = 48;
  std::string out = "# Effective configuration: defaults < config file < environment < "
                    "command line.\n";
  auto rows = all_options();
  for (size_t i = 0; i < rows.size(); ++i) {
    // A secret that is set shows up as a comment: set, but never its value.
    auto hidden = rows[i]->secret && values_[i] != option_value{std::string{}};
    auto line = hidden ? "# " + rows[i]->key + " = " + std::string{hidden_value}
                       : rows[i]->key + " = " + std::visit(value_text{*rows[i]}, values_[i]);
    line.resize(std::max(line.size() + 2, comment_column), ' ');
    const auto& origin = origins_[i];
    line += "# ";
    line += to_string(origin.source);
    if (!origin.where.empty())
      line += " " + origin.where;
    out += line;
    out += '\n';
  }
  return out;
}

} // namespace broker
