#include "broker/security.hh"

#include "broker/internal/security/credentials.hh"
#include "broker/internal/security/rules_file.hh"

namespace broker::security {

std::string hash_token(std::string_view token) {
  return internal::security::hash_token(token);
}

expected<rules_summary> check_rules_file(const std::string& path) {
  auto rules = internal::security::load_rules_file(path);
  if (!rules)
    return rules.error_value();
  rules_summary result;
  result.identities = (*rules)->identity_count();
  result.rules = (*rules)->configured_rules();
  result.notes = (*rules)->notes();
  return result;
}

} // namespace broker::security
