#pragma once

// The endpoint's answer to the HTTP server's questions beyond the core (ops/snapshot.hh):
// its identity, its peerings and dials, its data stores.
//
// Ownership: the endpoint creates one probe and hands it to its metrics server. The probe
// holds the endpoint's context only weakly (the context owns the server, which owns the
// probe), so after shutdown it answers with empty reports.

#include "broker/internal/ops/snapshot.hh"

#include <memory>
#include <string>

namespace broker::internal {

class endpoint_context;

/// Creates the probe of the endpoint behind `ctx`, started now.
std::shared_ptr<const node_probe> make_node_probe(const std::shared_ptr<endpoint_context>& ctx,
                                                  std::string name, std::string version);

} // namespace broker::internal
