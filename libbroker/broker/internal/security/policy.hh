#pragma once

// policy: how a rule set reaches the code that enforces it, and how a reload replaces it
// without dropping connections (doc/security.md, "Reload").
//
//   policy_store   owns the current rule set (shared_ptr<const rule_set>) and a generation
//                  counter. publish() swaps in a new set whole; nothing is ever modified
//                  in place.
//   policy_view    one reader's cached snapshot. current() costs one atomic load while the
//                  generation stays the same, and takes the store's mutex only after a
//                  reload. So the routing path reads the rules without a lock.
//   guard          one connection's view: its credential, its identity in the current set,
//                  and the checks (counted in the audit log when they refuse). After a
//                  reload it authenticates the credential again, so a revoked token or
//                  certificate loses its rights (revoked()) and changed rules apply to
//                  live connections at once.
//
// A verdict's rule pointer stays valid until the same guard's next check (a reload may
// release the rule set it points into).
//
// Threads: policy_store is thread-safe. A policy_view or guard belongs to one thread at a
// time (a connection's strand, the core actor); copies are independent.

#include "broker/internal/security/rule_set.hh"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal::security {

/// See the file comment.
class policy_store {
public:
  /// Starts with `initial` (everything allowed if null).
  explicit policy_store(std::shared_ptr<const rule_set> initial = nullptr);

  policy_store(const policy_store&) = delete;
  policy_store& operator=(const policy_store&) = delete;

  /// Replaces the rule set (null: everything allowed); readers see it at their next check.
  void publish(std::shared_ptr<const rule_set> next);

  /// The current rule set (takes the mutex: for control paths and new views).
  std::shared_ptr<const rule_set> current() const;

  /// Incremented by every publish().
  uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }

private:
  friend class policy_view;

  mutable std::mutex mtx_;
  std::shared_ptr<const rule_set> current_;
  std::atomic<uint64_t> generation_{0};
};

/// See the file comment.
class policy_view {
public:
  explicit policy_view(const policy_store& store);

  /// Takes the store's newer rule set if there is one; true if it did.
  bool refresh();

  /// The snapshot as of the last refresh().
  const rule_set& rules() const noexcept { return *cached_; }

  /// refresh(), then rules().
  const rule_set& current() {
    refresh();
    return *cached_;
  }

  uint64_t generation() const noexcept { return seen_; }

  /// True if the store published a rule set after the cached one (one atomic load).
  bool pending() const noexcept { return store_->generation() != seen_; }

private:
  const policy_store* store_;
  std::shared_ptr<const rule_set> cached_;
  uint64_t seen_ = 0;
};

/// See the file comment.
class guard {
public:
  /// Authenticates `cred` against the store's current rule set.
  guard(const policy_store& store, credential cred);

  /// How authentication went against the current rules (after the last check).
  auth_status status() const noexcept { return status_; }

  /// The identity's name; empty while status() is not ok.
  const std::string& identity() const noexcept;

  /// True if the credential authenticated once but no longer does after a reload: the
  /// connection should be closed (everything it asks is refused meanwhile).
  bool revoked() const noexcept { return revoked_; }

  /// May this connection publish `n` messages on `topic`? Counts a refusal as `n` refused
  /// publications. No allocation unless the rule set was just reloaded.
  verdict check_publish(std::string_view topic, uint64_t n = 1);

  /// What this connection may subscribe to of each prefix; counts refused and narrowed
  /// prefixes.
  std::vector<subscribe_verdict> check_subscribe(const std::vector<std::string>& filter);

  /// May a message on `topic` go to this connection (for granted prefixes marked
  /// `filtered`)? Counts a refusal as a refused delivery. No allocation.
  verdict check_receive(std::string_view topic);

  /// Counts one more delivery refused by `by`, a rule of the rules as of generation()
  /// (what check_receive() counts; for callers that cache its verdict).
  void count_refused_delivery(const rule& by) noexcept;

  /// Picks up a reload now: one atomic load when there is none. Returns true once after
  /// any number of reloads (whether this call or a check picked them up), with the
  /// credential authenticated again; the caller then re-runs
  /// check_subscribe() on the connection's requested filter and replaces the effective
  /// subscription (granted prefixes decided under the old rules stay otherwise), and
  /// closes the connection if revoked(). Call it where the connection does work anyway,
  /// e.g. once per batch it sends, so that idle subscribers notice reloads too.
  bool poll_reload();

  /// The rule set the last check used.
  const rule_set& rules() const noexcept { return view_.rules(); }

  /// The store's generation of rules() (changes with every reload picked up).
  uint64_t generation() const noexcept { return view_.generation(); }

  /// How the connection authenticated.
  mechanism how() const noexcept { return cred_.kind; }

  /// What the connection presented (a token only as its digest).
  const credential& presented() const noexcept { return cred_; }

  /// True if the store has rules this guard has not picked up yet (one atomic load).
  bool reload_pending() const noexcept { return view_.pending(); }

  /// True if poll_reload() would return true: a reload not picked up yet, or picked up by
  /// a check and not polled since. Inline, one atomic load: the per-batch fast path.
  bool reload_to_poll() const noexcept { return reloaded_ || view_.pending(); }

private:
  /// Picks up a reload: authenticates the credential again, sets reloaded_. True if there
  /// was one.
  bool refresh();
  void authenticate();

  policy_view view_;
  credential cred_;
  auth_status status_ = auth_status::ok;
  identity_handle id_ = no_identity;
  bool was_ok_ = false;
  bool revoked_ = false;
  bool reloaded_ = false; ///< A reload was picked up since the last poll_reload().
};

} // namespace broker::internal::security
