#pragma once

// What the store targets (store_commands, replication_channel) share: the invariants of Zeek
// Broker's store commands (store/store_wire, doc/protocol/stores.md), the wire form of every
// store command a target puts on its simulated bus, and the entities of the two stores.
// Each check aborts through FUZZ_CHECK when an invariant breaks.

#include "broker/internal/store/store_wire.hh"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace broker::fuzz::stores {

namespace store_wire = internal::store_wire;

/// An endpoint id whose 16 bytes are all `b`.
endpoint_id endpoint(uint8_t b);

/// Decodes `bytes` as one command, as a store does with every command frame it receives, and
/// checks the decoder: a failure is invalid_message and names an offset inside the input; a
/// decoded command encodes to no more bytes than it came from, and that encoding decodes to
/// the same command and is a fixed point of decode and encode.
std::optional<store_wire::command> check_decode(std::string_view bytes);

/// Checks the bytes a store sent: they decode, and the decoded command encodes to exactly
/// these bytes (what we send is canonical). Returns the command.
store_wire::command check_sent(std::string_view bytes);

/// The encoding of `cmd` (for seeds and replays). Pre: its values are encodable.
std::string encode(const store_wire::command& cmd);

/// Checks that a store event (store_logic.hh) survives the binary value codec, as it must to
/// reach Broker's and our subscribers.
void check_event(const data& ev);

} // namespace broker::fuzz::stores
