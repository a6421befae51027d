#pragma once

// runtime: one endpoint's access control as a whole: the rules file it was configured
// with, the policy store that publishes the rules (policy.hh), the audit log
// (audit.hh) and the rate-limited log of failed authentications.
//
// Flow:
//   1. The endpoint creates it from broker.security.rules-file and calls load(); an
//      invalid file is a start-up error (invalid_config, naming file:line:column).
//   2. Connections make a guard from policy() with their credential (the lead's wiring:
//      peering, WebSocket, the core's routing path; doc/security.md, "Wiring").
//   3. reload() (SIGHUP in broker-node, endpoint::reload_security()) builds a new rule set
//      from the file and publishes it whole; on error the old one stays and the error is
//      logged and returned. Connections stay up and see the new rules at their next check.
//
// Threads: every member is thread-safe.

#include "broker/error.hh"
#include "broker/internal/config/logger.hh"
#include "broker/internal/security/audit.hh"
#include "broker/internal/security/policy.hh"

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace broker::internal::security {

class runtime {
public:
  /// `rules_file` may be empty (no rules: everything allowed). Logs through `log` (the
  /// default logger if null).
  runtime(std::string rules_file, std::shared_ptr<const logger> log);

  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  /// Builds the rules from the file and publishes them; logs what it loaded, and the
  /// file's notes as warnings. Without a file: nothing to do. On error the rules in force
  /// stay, except before the first successful load: then everything is refused
  /// (rule_set::deny_all), so that a broken file fails closed.
  error load();

  /// load(), logging a failure as an error line that says the old rules stay.
  error reload();

  /// The rules as published.
  const policy_store& policy() const noexcept { return policy_; }

  /// The counters, shared by every rule set this runtime built.
  audit_log& audit() const noexcept { return *audit_; }

  /// Counts a failed authentication (`mechanism`, what authenticate() said) and logs it,
  /// rate-limited, with the remote `address`.
  void authentication_failed(mechanism how, auth_status why, std::string_view address);

  const std::string& rules_file() const noexcept { return rules_file_; }

private:
  const logger& log() const noexcept;

  std::string rules_file_;
  std::shared_ptr<const logger> log_;
  std::shared_ptr<audit_log> audit_;
  policy_store policy_;
  auth_failure_log failures_;
  std::mutex load_mtx_; ///< One load at a time (two SIGHUPs in a row).
  bool loaded_ = false; ///< A load succeeded; before, a failure publishes deny_all().
};

} // namespace broker::internal::security
