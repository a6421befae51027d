#pragma once

// rule_set: a compiled, immutable set of identities, their credentials and their access
// rules (doc/security.md, "Rules").
//
// Semantics:
//   - No identity at all (no rules file, or one without identities): not enforcing;
//     every check allows, except publishing on reserved "<$>" topics.
//   - Otherwise each identity has, per action (publish, subscribe), allow and deny topic
//     prefixes (raw byte prefixes, as Broker matches topics; "" matches everything). The
//     longest prefix of the topic that has a rule decides; when the same prefix is both
//     allowed and denied, deny wins (the builder records a note). No matching rule: deny
//     (the identity's default rule). An unknown identity is denied everything.
//   - Publishing on a reserved "<$>" topic is always refused (built-in rule): no remote
//     source may inject the node's internal events. Subscribing to them follows the rules.
//   - The anonymous identity (unauthenticated connections, default name "anonymous")
//     always exists when enforcing; without rules of its own it is denied everything.
//
// Cost: check_publish() and check_receive() walk one trie per identity (prefix_trie.hh),
// O(topic length), and allocate nothing. check_subscribe() allocates its answer.
//
// Ownership and threads: built once by rule_set_builder (rules_file.hh does so from a
// file), then shared read-only (shared_ptr<const rule_set>) by every thread; the audit
// counters it points to are atomics in the shared audit_log.

#include "broker/error.hh"
#include "broker/internal/security/audit.hh"
#include "broker/internal/security/credentials.hh"
#include "broker/internal/security/prefix_trie.hh"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace broker::internal::security {

/// What a rule governs.
enum class action : uint8_t { publish, subscribe };

/// What a rule does.
enum class effect : uint8_t { allow, deny };

/// "publish" or "subscribe".
std::string_view to_string(action x) noexcept;

/// One rule, configured or implied.
struct rule {
  enum class origin : uint8_t {
    configured,       ///< A prefix in the rules file.
    default_deny,     ///< No rule of the identity matches: denied.
    reserved,         ///< Publishing on "<$>" topics: always refused.
    unknown_identity, ///< The identity is not (or no longer) in the rule set.
  };
  origin kind = origin::configured;
  action act = action::publish;
  effect eff = effect::deny;
  std::string identity;
  std::string prefix;
  /// Where it was written ("rules.conf:12:3"), or where its identity was defined for a
  /// default rule; empty for built-in rules.
  std::string source;
  /// Its counters in the audit log (never null).
  audit_counters* counters = nullptr;
};

/// The audit log's name of a rule: `allow publish "/zeek/"`, `default subscribe`, ...
std::string rule_key(const rule& x);

/// The rule for humans, e.g. `deny publish "/zeek/control/" for identity "worker"
/// (rules.conf:12:3)`.
std::string describe(const rule& x);

/// The outcome of check_publish() and check_receive().
struct verdict {
  bool allowed = true;
  /// The deciding rule; null only when the rule set is not enforcing.
  const rule* by = nullptr;
};

/// What becomes of one requested subscription prefix.
enum class subscribe_outcome : uint8_t {
  allowed,  ///< Subscribe to it as requested.
  narrowed, ///< Denied as a whole; subscribe to `granted` instead (allowed sub-prefixes).
  refused,  ///< Nothing under it is allowed.
};

/// "allowed", "narrowed" or "refused".
std::string_view to_string(subscribe_outcome x) noexcept;

/// A prefix to subscribe to on behalf of a requested one.
struct granted_prefix {
  std::string prefix;
  /// Some topics under it are denied: check each delivery with check_receive().
  bool filtered = false;
};

/// The answer of check_subscribe() for one requested prefix.
struct subscribe_verdict {
  std::string requested;
  subscribe_outcome outcome = subscribe_outcome::allowed;
  /// allowed: {requested}; narrowed: the allowed sub-prefixes; refused: empty.
  std::vector<granted_prefix> granted;
  /// narrowed, refused: the rule that denies the requested prefix itself. Null if allowed.
  const rule* by = nullptr;
};

/// An index into a rule set's identities; valid only for the rule set that returned it.
using identity_handle = uint32_t;

/// No identity: everything is denied (when enforcing).
inline constexpr identity_handle no_identity = std::numeric_limits<uint32_t>::max();

/// How authenticate() went.
enum class auth_status : uint8_t {
  ok,        ///< `id` is the identity (the anonymous one for mechanism::none).
  unknown,   ///< The credential belongs to no identity.
  ambiguous, ///< A certificate's names belong to more than one identity.
  unusable,  ///< The credential could not be processed (a token OpenSSL could not hash).
};

/// "ok", "unknown", "ambiguous" or "unusable".
std::string_view to_string(auth_status x) noexcept;

struct auth_result {
  auth_status status = auth_status::ok;
  identity_handle id = no_identity;
};

class rule_set_builder;

/// See the file comment.
class rule_set {
public:
  /// The rule set without identities: allows everything (but "<$>" publications).
  static std::shared_ptr<const rule_set> allow_all();

  /// Enforcing without identities: refuses everything. What an endpoint whose rules file
  /// could not be loaded at start-up runs with, so that it fails closed.
  static std::shared_ptr<const rule_set> deny_all();

  /// True if the set enforces rules (it has identities, or is deny_all()).
  bool enforcing() const noexcept { return enforcing_; }

  /// The identity named `name`, or no_identity.
  identity_handle find(std::string_view name) const noexcept;

  /// The identity of unauthenticated connections (no_identity when not enforcing).
  identity_handle anonymous() const noexcept { return anonymous_; }

  /// The name of `id`; empty for no_identity.
  const std::string& name_of(identity_handle id) const noexcept;

  /// Maps a credential to its identity. Not enforcing: always ok (anonymous).
  auth_result authenticate(const credential& cred) const;

  /// May `id` publish on `topic`? O(|topic|), no allocation.
  verdict check_publish(identity_handle id, std::string_view topic) const noexcept;

  /// May a message on `topic` be delivered to `id` (for granted prefixes marked
  /// `filtered`)? O(|topic|), no allocation.
  verdict check_receive(identity_handle id, std::string_view topic) const noexcept;

  /// What `id` may subscribe to of `prefix`.
  subscribe_verdict check_subscribe(identity_handle id, std::string_view prefix) const;

  /// check_subscribe() for every prefix of `filter`, in order.
  std::vector<subscribe_verdict> check_subscribe(identity_handle id,
                                                 const std::vector<std::string>& filter) const;

  /// The counters of `id`'s totals (of the unknown identity's for no_identity).
  audit_counters& identity_counters(identity_handle id) const noexcept;

  /// The audit log this set counts into.
  audit_log& audit() const noexcept { return *audit_; }

  /// Every rule, configured ones first.
  const std::vector<rule>& rules() const noexcept { return rules_; }

  /// Number of identities (the anonymous one included when enforcing).
  size_t identity_count() const noexcept { return identities_.size(); }

  /// Number of configured rules.
  size_t configured_rules() const noexcept { return configured_; }

  /// What the builder wants the operator to know (ties, duplicates), one line each.
  const std::vector<std::string>& notes() const noexcept { return notes_; }

private:
  friend class rule_set_builder;

  struct identity_entry {
    std::string name;
    std::string source;
    prefix_trie trie; ///< Slot 0: publish rules, slot 1: subscribe rules (rule indexes).
    int32_t default_rule[2] = {-1, -1};
    audit_counters* counters = nullptr;
  };

  rule_set() = default;

  const rule& decide(const identity_entry& x, action act, std::string_view topic) const
    noexcept;

  std::shared_ptr<audit_log> audit_;
  bool enforcing_ = false;
  std::vector<rule> rules_;
  size_t configured_ = 0;
  std::vector<identity_entry> identities_;
  std::unordered_map<std::string, identity_handle> by_name_;
  identity_handle anonymous_ = no_identity;
  std::vector<std::pair<digest, identity_handle>> tokens_;
  std::unordered_map<std::string, identity_handle> certificate_names_;
  std::unordered_map<std::string, identity_handle> curve_keys_;
  int32_t reserved_rule_ = -1;
  int32_t unknown_rule_[2] = {-1, -1};
  audit_counters* unknown_counters_ = nullptr;
  std::vector<std::string> notes_;
};

/// Builds a rule_set. Errors (invalid_config) name the offending source position.
class rule_set_builder {
public:
  /// Counters go to `audit` (a fresh log if null).
  explicit rule_set_builder(std::shared_ptr<audit_log> audit = nullptr);

  /// Names the identity of unauthenticated connections (default "anonymous").
  void anonymous_identity(std::string name, std::string source);

  /// Adds identity `name` (defined at `source`) or returns the existing one.
  identity_handle add_identity(const std::string& name, const std::string& source);

  /// A rule for `id`.
  void add_rule(identity_handle id, action act, effect eff, std::string prefix,
                std::string source);

  /// Credentials of `id`. Errors: the credential already belongs to an identity, or `id`
  /// is the anonymous identity.
  error add_token(identity_handle id, const digest& hash, const std::string& source);
  error add_certificate_name(identity_handle id, const std::string& name,
                             const std::string& source);
  error add_curve_key(identity_handle id, const std::string& key, const std::string& source);

  /// The finished set. Errors: a credential given to the anonymous identity.
  expected<std::shared_ptr<const rule_set>> build();

private:
  struct pending_rule {
    action act;
    effect eff;
    std::string prefix;
    std::string source;
  };

  struct pending_identity {
    std::string name;
    std::string source;
    std::vector<pending_rule> rules;
    std::string first_credential; ///< Source of its first credential, if any.
  };

  error claim(std::unordered_map<std::string, std::pair<identity_handle, std::string>>& owners,
              const std::string& key, identity_handle id, const std::string& what,
              const std::string& source);

  std::shared_ptr<audit_log> audit_;
  std::string anonymous_name_ = "anonymous";
  std::string anonymous_source_;
  std::vector<pending_identity> identities_;
  std::unordered_map<std::string, identity_handle> by_name_;
  std::vector<std::pair<digest, identity_handle>> tokens_;
  std::vector<std::string> token_sources_;
  std::unordered_map<std::string, std::pair<identity_handle, std::string>> certificate_names_;
  std::unordered_map<std::string, std::pair<identity_handle, std::string>> curve_keys_;
};

} // namespace broker::internal::security
