#pragma once

// connection_access: the access control of one network connection (a peering, a
// WebSocket client, a ZeroMQ peer) from its admission to its end (doc/security.md,
// "Rules" and "Wiring").
//
// Owner: the connection, on its strand; everything here runs there (the reload watcher
// only posts). It wraps the connection's guard (policy.hh) and adds what a connection
// needs around the checks:
//   - subscribe(): the filter the connection asked for, checked and remembered, answered
//     with the prefixes to subscribe it to and one notice per narrowed or refused prefix
//     (the connection tells its client: an error frame, an error event);
//   - may_publish() (publish_gate.hh): asked by the router once per run of messages with
//     one topic; a refusal is counted per identity and rule (as `n` publications) and
//     becomes one notice per rule, not one per message;
//   - may_receive(): for deliveries; true at once unless a granted prefix is filtered or
//     a reload has not been applied to the subscriptions yet; otherwise the last topic's
//     verdict answers a run of deliveries with one topic (a string compare, not a
//     prefix-table walk) while the rules stay the same;
//   - poll_reload(): once per batch and when the runtime calls the watcher; after a
//     reload it says whether the identity was revoked (close the connection) or the
//     granted subscriptions changed (hand them to the core).
//
// Cost: may_publish() allocates nothing while it allows; the first refusal by a rule
// formats one notice (at most max_told rules are told per reload).

#include "broker/internal/core/publish_gate.hh"
#include "broker/topic.hh"
#include "broker/internal/security/policy.hh"
#include "broker/internal/security/runtime.hh"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal::security {

/// See the file comment.
class connection_access final : public publish_gate {
public:
  /// Rules whose refusals are told per reload; further rules are only counted.
  static constexpr size_t max_told = 64;

  /// `g` comes from rt->admit(). `rt` is kept alive as long as this object.
  connection_access(std::shared_ptr<runtime> rt, guard g);
  ~connection_access();

  connection_access(const connection_access&) = delete;
  connection_access& operator=(const connection_access&) = delete;

  /// The identity (empty once revoked).
  const std::string& identity() const noexcept { return guard_.identity(); }

  /// "identity \"worker\"", or "anonymous identity \"anonymous\"", for notices and logs.
  std::string describe_identity() const;

  /// Calls `f` after every successful reload (on the reloading thread; post to the strand
  /// and call poll_reload() there). Replaces an earlier watcher.
  void watch_reloads(std::function<void()> f);

  /// The answer of subscribe().
  struct subscription {
    /// What to subscribe the connection to: the granted prefixes, sorted, unique.
    std::vector<std::string> granted;
    /// One line per narrowed or refused prefix, naming the deciding rule; only those the
    /// last subscribe() did not report already.
    std::vector<std::string> notices;
    /// `granted` differs from what the last subscribe() granted.
    bool changed = true;
  };

  /// Checks the filter the connection asked for (and remembers it for reloads).
  subscription subscribe(std::vector<std::string> requested);

  /// subscribe() for a filter of topics.
  subscription subscribe(const filter_type& requested) {
    std::vector<std::string> xs;
    xs.reserve(requested.size());
    for (const auto& t : requested)
      xs.push_back(t.string());
    return subscribe(std::move(xs));
  }

  /// For a connection that subscribes one prefix at a time (a ZeroMQ XSUB): adds (`add`)
  /// or removes `prefix` from the requested filter and checks only a newly added prefix,
  /// so that a refusal is counted once, not again with every later subscription. The
  /// answer covers the whole filter. After a reload not yet polled it checks everything
  /// (as subscribe()).
  subscription update(const std::string& prefix, bool add);

  /// The granted prefixes as a filter.
  static filter_type to_filter(const std::vector<std::string>& prefixes) {
    return filter_type{prefixes.begin(), prefixes.end()};
  }

  /// What the connection asked for last.
  const std::vector<std::string>& requested() const noexcept { return requested_; }

  /// publish_gate: may the connection publish `n` messages on `topic`?
  bool may_publish(std::string_view topic, size_t n) override;

  /// True if refusals wait to be told or a reload waits for poll_reload(): what a
  /// connection checks once per batch before doing either (inline, one atomic load).
  bool needs_attention() const noexcept {
    return !notices_.empty() || guard_.reload_to_poll();
  }

  /// True if refusals wait to be told (take_notices()).
  bool has_notices() const noexcept { return !notices_.empty(); }

  /// The refusals of publications not told yet, one line per rule.
  std::vector<std::string> take_notices();

  /// True if every delivery may go unchecked: the granted prefixes have no holes, under
  /// the rules in force (no reload waiting).
  bool delivers_unchecked() const noexcept {
    return !filtered_ && guard_.generation() == subscribed_generation_
           && !guard_.reload_pending();
  }

  /// May a message on `topic` go to this connection? Refusals are counted.
  bool may_receive(std::string_view topic) {
    if (delivers_unchecked())
      return true;
    return check_receive(topic);
  }

  /// What poll_reload() found.
  struct reload_outcome {
    bool reloaded = false; ///< New rules were picked up since the last poll.
    bool revoked = false;  ///< The credential lost its identity: close the connection.
    /// reloaded and not revoked: the subscriptions under the new rules (changed says
    /// whether the core needs them).
    subscription sub;
  };

  /// Picks up a reload (one atomic load when there is none); see reload_outcome.
  reload_outcome poll_reload();

  /// The guard (for tests and the audit).
  const guard& checks() const noexcept { return guard_; }

private:
  bool check_receive(std::string_view topic);
  /// Records `v` in grants_ and returns its notice (empty if allowed).
  std::string record(const subscribe_verdict& v);
  /// Fills `result` from grants_ and updates granted_, filtered_ and the generation.
  void finish(subscription& result);

  /// What each requested prefix was granted, and whether any of it is filtered.
  struct grant {
    std::vector<std::string> prefixes;
    bool filtered = false;
  };

  std::shared_ptr<runtime> rt_;
  guard guard_;
  uint64_t watch_token_ = 0;
  std::vector<std::string> requested_;
  std::vector<std::string> granted_;
  std::map<std::string, grant, std::less<>> grants_;
  bool subscribed_ = false; ///< subscribe() ran.
  bool filtered_ = false;   ///< A granted prefix has denied topics below it.
  uint64_t subscribed_generation_ = 0; ///< Of the rules the last subscribe() used.
  std::vector<std::string> told_subscriptions_; ///< The last subscribe()'s notices, sorted.
  std::vector<const rule*> told_; ///< Rules whose refusals were told (this generation).
  uint64_t told_generation_ = 0;
  std::vector<std::string> notices_;
  // The last check_receive(): its topic and verdict under the rules of its generation.
  bool receive_cached_ = false;
  bool receive_allowed_ = false;
  uint64_t receive_generation_ = 0;
  const rule* receive_by_ = nullptr;
  std::string receive_topic_;
};

} // namespace broker::internal::security
