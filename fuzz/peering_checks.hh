#pragma once

// Invariants of the peering codec (peering/wire), shared by the peering_frames,
// peering_messages and handshake targets. Each function aborts through FUZZ_CHECK when one
// breaks.

#include "broker/internal/peering/wire.hh"

#include <cstddef>
#include <string_view>

namespace broker::fuzz {

/// True if `x` and `y` are the same message, comparing filters in their wire form (sorted,
/// without duplicates).
bool same_message(const internal::wire::handshake_message& x,
                  const internal::wire::handshake_message& y);

/// Checks one handshake payload: a failure carries a code that fits a drop_conn; a decoded
/// message re-encodes to a frame that decodes to the same message.
void check_handshake_payload(std::string_view payload);

/// Checks a filter payload (routing_update): a decoded filter re-encodes no longer than the
/// input and decodes to its sorted, deduplicated self; minimize() keeps its promise.
void check_filter_payload(std::string_view bytes);

/// Checks one phase-3 payload the way the peer manager dispatches it: the header, relaying
/// it unchanged, then by type the filter, the value, the extension header or the
/// pong (byte-identical, except our answer to the origin-v1 probe).
void check_node_payload(std::string_view payload, size_t max_depth);

} // namespace broker::fuzz
