#pragma once

// rules_file: the rules file (broker.security.rules-file) turned into a rule_set
// (doc/security.md, "The rules file").
//
// The file uses the config-file syntax (config/config_file.hh: sections, lists, comments,
// or JSON):
//
//   anonymous-identity = "anonymous"          # unauthenticated connections (the default)
//   identity.worker {
//     certificates = ["cn:worker-1.zeek.example", "dns:worker-2.zeek.example"]
//     publish = ["/zeek/"]
//     deny-publish = ["/zeek/control/"]
//     subscribe = ["/zeek/"]
//   }
//   identity.dashboard {
//     tokens = ["sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"]
//     subscribe = ["/zeek/logs/notice"]
//   }
//
// Keys: `anonymous-identity`, and per identity `certificates`, `tokens`, `curve-keys`,
// `publish`, `deny-publish`, `subscribe`, `deny-subscribe`, each a list of strings (a
// single string is a list of one; it is never split at commas, which topics may hold).
// Identity names are words of A-Z a-z 0-9 _ - (at most 64 bytes). Every error names
// "file:line:column" (of the key) and what was wrong; a token hash that does not parse is
// never quoted, since it may be a token in clear text.
//
// Pure: parsing and building only; the caller reads the file (load_rules_file does).

#include "broker/error.hh"
#include "broker/internal/security/rule_set.hh"

#include <memory>
#include <string>
#include <string_view>

namespace broker::internal::security {

/// The longest topic prefix a rule may name.
inline constexpr size_t max_rule_prefix = 4096;

/// The most identities one file may define.
inline constexpr size_t max_identities = 100'000;

/// The most list elements (prefixes and credentials) one file may hold.
inline constexpr size_t max_rule_elements = 1'000'000;

/// The largest rules file.
inline constexpr size_t max_rules_file_size = size_t{16} << 20;

/// Builds a rule set from the text of a rules file; `origin` stands for its path in
/// errors and rule sources. Counters go to `audit` (a fresh log if null).
expected<std::shared_ptr<const rule_set>>
load_rules(std::string_view text, std::string_view origin,
           std::shared_ptr<audit_log> audit = nullptr);

/// Reads and builds the rules file at `path`. Errors: cannot_open_file (naming the path),
/// invalid_config (as load_rules, or a file over max_rules_file_size).
expected<std::shared_ptr<const rule_set>>
load_rules_file(const std::string& path, std::shared_ptr<audit_log> audit = nullptr);

/// True if `name` can name an identity.
bool is_identity_name(std::string_view name) noexcept;

} // namespace broker::internal::security
