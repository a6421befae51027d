#pragma once

// The data stores' wire format as the store_commands and replication_channel targets see it:
// the ONE place that knows how store traffic is encoded. Re-point these functions when the
// format changes (e.g. to Zeek Broker's store commands); the targets' inputs and seeds go
// through here, so they follow.
//
// Today (store/store_logic.hh): a store command is the payload of a peering `command` frame,
// one binary value (codec/bin): a vector starting with a tag string, e.g.
// ["c", clone, msg] to the master. `msg` is a replication-channel message, itself a data
// vector (channel::encode) that travels inside the command's value.

#include "broker/data.hh"
#include "broker/error.hh"
#include "broker/internal/store/replication_channel.hh"

#include <string>
#include <string_view>

namespace broker::fuzz::store_wire {

/// Decodes the payload of one command frame into the value a store's logic handles.
expected<data> decode_command(std::string_view payload);

/// Encodes a command value as a command frame carries it (for seeds and round trips).
/// Pre: `cmd` is encodable (no NaN next to another real in a set).
std::string encode_command(const data& cmd);

/// Decodes one replication-channel message from its wire bytes.
expected<internal::channel::message> decode_channel(std::string_view bytes);

/// Encodes one replication-channel message (for seeds and round trips).
std::string encode_channel(const internal::channel::message& msg);

} // namespace broker::fuzz::store_wire
