#pragma once

// man_page: a tool's manual page in roff (man(7)), rendered from its options table, so that
// the page and --help can never disagree. The build runs `<tool> --man-page` and installs
// the result as <tool>.1 (cmake/BrokerManPages.cmake).
//
// Sections: NAME, SYNOPSIS and DESCRIPTION (from the tool's usage text), OPTIONS (the
// actions and every row of the table, grouped as --help groups them), ENVIRONMENT (rows
// with a variable), EXIT STATUS, FILES, SEE ALSO.

#include <broker/configuration.hh>

#include <string>
#include <string_view>
#include <vector>

namespace broker_tools {

/// One flag that is not an option row (--help, --version, ...), for the OPTIONS section.
struct man_flag {
  std::string_view flag;
  std::string_view help;
};

/// What a page says beyond the options table.
struct man_page_info {
  std::string_view name;    ///< "broker-node"
  std::string_view summary; ///< One line for NAME.
  std::string_view usage;   ///< "Usage: ..." lines, a blank line, then the description.
  std::string_view exit_status; ///< Lines "CODE<TAB>meaning".
  std::string_view files;       ///< Lines "PATH<TAB>meaning"; may be empty.
  std::string_view see_also;    ///< e.g. "broker-store(1), broker-throughput(1)".
  std::vector<man_flag> general; ///< Flags listed before the options table.
};

/// The page for `cfg`'s options (library rows and the tool's rows).
std::string render_man_page(const man_page_info& info, const broker::configuration& cfg);

/// `text` escaped for a roff text line: backslashes, a leading '.' or '\'', and '-'
/// (as `\-`, so that flags can be copied from the rendered page).
std::string roff_escape(std::string_view text);

} // namespace broker_tools
