#pragma once

// runtime: one endpoint's access control as a whole: the rules file it was configured
// with, the policy store that publishes the rules (policy.hh), the audit log
// (audit.hh) and the rate-limited log of failed authentications.
//
// Flow:
//   1. The endpoint creates it from broker.security.rules-file and calls load(); an
//      invalid file is a start-up error (invalid_config, naming file:line:column).
//   2. A new connection calls admit() with its credential and remote address: it gets a
//      guard, or a refusal with its reason (unknown credential, or an address throttled
//      after too many failures, throttle.hh); failures are counted and logged
//      (rate-limited). The connection wraps the guard in a connection_access
//      (connection_access.hh; doc/security.md, "Wiring").
//   3. reload() (SIGHUP in broker-node, endpoint::reload_security()) builds a new rule set
//      from the file and publishes it whole; on error the old one stays and the error is
//      logged and returned. Connections stay up and see the new rules at their next check;
//      after a successful reload every watcher (watch()) is called, so that idle
//      connections re-check their subscriptions and close if their identity was revoked.
//
// Threads: every member is thread-safe.

#include "broker/error.hh"
#include "broker/internal/config/logger.hh"
#include "broker/internal/security/audit.hh"
#include "broker/internal/security/policy.hh"

#include "broker/internal/security/throttle.hh"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace broker::internal::security {

/// What runtime::admit() decided about a new connection.
struct admission {
  /// Engaged if the connection may proceed (as guard->identity()).
  std::optional<guard> admitted;
  /// How authentication went; ok if admitted or throttled.
  auth_status status = auth_status::ok;
  /// Refused unchecked: the address failed too often lately.
  bool throttled = false;
  /// Throttled: seconds until the address may try again.
  uint64_t retry_after = 0;
  /// Why it was refused, for the client and the log; never shows a token.
  std::string reason;
};

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

  /// Authenticates a new connection from `address` (an IP address; `port` only for the
  /// log): throttled addresses are refused unchecked, failures are counted, logged
  /// (rate-limited) and charged to the address. Any thread.
  admission admit(credential cred, const std::string& address, uint16_t port);

  /// For the ZeroMQ transport (broker.zeromq.*, doc/security.md "Identities"): the name
  /// of the identity whose `curve-keys` list holds `z85`, a client's long-term CURVE public
  /// key as 40 characters of Z85, under the rules in force. Empty if the key is malformed,
  /// belongs to no identity, or no rules are configured (then nothing is checked). Pure
  /// lookup: nothing is counted or logged. Any thread.
  std::string identity_of_curve_key(std::string_view z85) const;

  /// admit() for a ZeroMQ client that authenticated with CURVE (the transport's ZAP or
  /// `authorize` hook, before any traffic): a malformed key is refused as `unusable`
  /// (counted and logged as a failed curve-key authentication, without showing the bytes);
  /// otherwise admit(credential::from_curve_key(z85), ...). Any thread.
  admission admit_curve_key(std::string_view z85, const std::string& address, uint16_t port);

  /// Calls `f` on the reloading thread after every successful reload, until unwatch() is
  /// called with the returned token. `f` must be quick (post to a strand) and must not
  /// call watch() or unwatch().
  uint64_t watch(std::function<void()> f);
  void unwatch(uint64_t token);

  const std::string& rules_file() const noexcept { return rules_file_; }

private:
  const logger& log() const noexcept;
  void notify_watchers();

  std::string rules_file_;
  std::shared_ptr<const logger> log_;
  std::shared_ptr<audit_log> audit_;
  policy_store policy_;
  auth_failure_log failures_;
  auth_throttle throttle_;
  std::mutex watch_mtx_;
  uint64_t next_watch_ = 1;
  std::map<uint64_t, std::function<void()>> watchers_;
  std::mutex load_mtx_; ///< One load at a time (two SIGHUPs in a row).
  bool loaded_ = false; ///< A load succeeded; before, a failure publishes deny_all().
};

} // namespace broker::internal::security
