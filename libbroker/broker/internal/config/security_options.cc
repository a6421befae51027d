#include "broker/internal/config/security_options.hh"

namespace broker::internal {

void append_security_options(std::vector<option_info>& table) {
  option_info rules;
  rules.key = rules_file_key;
  rules.type = option_type::string;
  rules.help = "file of identities and the topics each may publish and subscribe to; empty: "
               "no rules, everybody may do everything (SIGHUP reloads it)";
  table.push_back(std::move(rules));
}

std::string read_rules_file(const configuration& cfg) {
  return cfg.get_string(rules_file_key).value_or("");
}

} // namespace broker::internal
