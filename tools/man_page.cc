#include "man_page.hh"

#include <broker/version.hh>

#include <algorithm>
#include <cctype>

namespace broker_tools {

namespace {

constexpr std::string_view usage_prefix = "Usage: ";

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> result;
  while (!text.empty()) {
    auto nl = text.find('\n');
    result.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos)
      break;
    text.remove_prefix(nl + 1);
  }
  return result;
}

std::string trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  return std::string{text};
}

std::string upper(std::string_view text) {
  std::string result{text};
  for (auto& c : result)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return result;
}

std::string group_of(const std::string& key) {
  auto dot = key.rfind('.');
  return dot == std::string::npos ? std::string{} : key.substr(0, dot);
}

/// `.TP` paragraphs: a bold first column and an indented text.
void tagged(std::string& out, std::string_view tag, std::string_view text) {
  out += ".TP\n\\fB";
  out += roff_escape(tag);
  out += "\\fR\n";
  out += roff_escape(text);
  out += '\n';
}

/// Lines "TAG<TAB>text" as tagged paragraphs.
void tab_table(std::string& out, std::string_view lines) {
  for (auto line : split_lines(lines)) {
    auto tab = line.find('\t');
    if (tab == std::string_view::npos)
      tagged(out, line, "");
    else
      tagged(out, line.substr(0, tab), line.substr(tab + 1));
  }
}

void synopsis_and_description(std::string& out, const man_page_info& info) {
  std::vector<std::string> synopsis;
  std::string description;
  bool in_synopsis = true;
  for (auto line : split_lines(info.usage)) {
    if (in_synopsis && line.empty()) {
      in_synopsis = false;
      continue;
    }
    if (in_synopsis) {
      if (line.substr(0, usage_prefix.size()) == usage_prefix)
        line.remove_prefix(usage_prefix.size());
      synopsis.push_back(trim(line));
    } else {
      description += line;
      description += '\n';
    }
  }
  out += ".SH SYNOPSIS\n";
  for (auto& line : synopsis)
    out += roff_escape(line) + "\n.br\n";
  out += ".SH DESCRIPTION\n";
  for (auto line : split_lines(description))
    out += (line.empty() ? std::string{".PP"} : roff_escape(line)) + "\n";
}

} // namespace

std::string roff_escape(std::string_view text) {
  std::string result;
  result.reserve(text.size() + 8);
  if (!text.empty() && (text.front() == '.' || text.front() == '\''))
    result += "\\&";
  for (auto c : text) {
    if (c == '\\')
      result += "\\e";
    else if (c == '-')
      result += "\\-";
    else
      result += c;
  }
  return result;
}

std::string render_man_page(const man_page_info& info, const broker::configuration& cfg) {
  std::string out;
  out += ".TH " + upper(info.name) + " 1 \"\" \"broker " BROKER_VERSION_STRING
         "\" \"User Commands\"\n";
  out += ".SH NAME\n" + roff_escape(info.name) + " \\- " + roff_escape(info.summary) + "\n";
  synopsis_and_description(out, info);
  out += ".SH OPTIONS\n";
  out += "Every option is also a config\\-file key (\\fB\\-\\-config\\-file\\fR) and, where "
         "listed, an environment variable. Precedence: defaults < config file < "
         "environment < command line.\n";
  out += ".SS general\n";
  for (auto& flag : info.general)
    tagged(out, flag.flag, flag.help);
  auto rows = cfg.all_options();
  std::vector<std::string> groups;
  for (auto row : rows)
    if (auto group = group_of(row->key);
        std::find(groups.begin(), groups.end(), group) == groups.end())
      groups.push_back(group);
  for (auto& group : groups) {
    out += ".SS " + roff_escape(group.empty() ? std::string{"program"} : group) + "\n";
    for (auto row : rows)
      if (group_of(row->key) == group)
        tagged(out, broker::configuration::flag_text(*row),
               broker::configuration::description_text(*row));
  }
  out += ".SH ENVIRONMENT\n";
  for (auto row : rows)
    if (!row->env.empty())
      tagged(out, row->env, "sets " + row->key + ": " + row->help);
  out += ".SH EXIT STATUS\n";
  tab_table(out, info.exit_status);
  if (!info.files.empty()) {
    out += ".SH FILES\n";
    tab_table(out, info.files);
  }
  out += ".SH SEE ALSO\n" + roff_escape(info.see_also) + "\n";
  return out;
}

} // namespace broker_tools
