#pragma once

// Access control helpers that programs need without an endpoint (doc/security.md): the
// token hash a rules file stores, and the validation of a rules file for --check-config.
// The rules themselves are enforced by the endpoint (broker.security.rules-file,
// endpoint::reload_security()).

#include "broker/error.hh"
#include "broker/export.hh"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace broker::security {

/// "sha256:" and the 64 lower-case hex digits of the SHA-256 of `token`: how a rules file
/// stores a bearer token (the clear token never goes into a file). Empty only if OpenSSL
/// cannot compute a digest.
BROKER_API std::string hash_token(std::string_view token);

/// What a valid rules file holds.
struct BROKER_API rules_summary {
  /// Identities, the anonymous one included; 0: the file enforces nothing.
  size_t identities = 0;
  /// Allow and deny prefixes.
  size_t rules = 0;
  /// Warnings, one per line with file:line:column (a prefix both allowed and denied, ...).
  std::vector<std::string> notes;
};

/// Loads and validates the rules file at `path` without using it. Errors: cannot_open_file,
/// or invalid_config naming "path:line:column" and what was wrong.
BROKER_API expected<rules_summary> check_rules_file(const std::string& path);

} // namespace broker::security
