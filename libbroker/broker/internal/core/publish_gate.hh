#pragma once

// publish_gate: what a network source may publish, asked by the router once per run of
// messages with the same topic (router.hh, doc/security.md "Rules").
//
// The router knows only this interface; access control (security/connection_access.hh)
// implements it, so that core/ stays free of the rules, identities and audit counters.
//
// Who has one: a peering's and a WebSocket client's input (net_input.hh sets it on its
// route_source). Local publishers, hubs, stores and the core's own events have none: they
// are trusted (doc/security.md, "Rules").
//
// Threads: called on the routing thread of its source only (a connection's strand), so an
// implementation needs no lock. It must not allocate on the common path (an allowed run);
// refusing may, the first time a rule refuses.

#include <cstddef>
#include <string_view>

namespace broker::internal {

/// See the file comment.
class publish_gate {
public:
  /// May the source publish `n` messages on `topic`? False: the router drops the run;
  /// the gate has counted the refusal (per identity and rule) and tells the source once.
  virtual bool may_publish(std::string_view topic, size_t n) = 0;

protected:
  ~publish_gate() = default;
};

} // namespace broker::internal
