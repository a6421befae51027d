#pragma once

// The data stores a node hosts (--master-stores, --clone-stores; doc/node.md "Data stores").
//
// main.cc calls attach_stores() after the node listens and has started its dials:
//   1. With masters to attach and --peers given, wait (bounded) until the dialed peerings
//      are up, so that a master elsewhere in the network can object (master_exists).
//   2. Attach every master (SQLite: <store-dir>/<name>.db), then every clone; print
//      `store master <name>` / `store clone <name>` for each.
// The endpoint keeps the stores alive until it shuts down; the handles are returned so the
// program can reach them.

#include "node_options.hh"

#include <broker/endpoint.hh>
#include <broker/store.hh>

#include <vector>

namespace broker_node {

/// See the file comment. Errors name the option and the store, e.g.
/// `master-stores: cannot attach "users": master_exists: ...`.
broker::expected<std::vector<broker::store>> attach_stores(broker::endpoint& ep,
                                                           const node_options& opts);

} // namespace broker_node
