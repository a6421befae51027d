#pragma once

// The peering test vectors (doc/protocol/peering.md §12, as in peering/wire.test.cc), shared by
// the seeds of the peering_frames, peering_messages and handshake targets.

#include <string>
#include <vector>

namespace broker::fuzz {

/// A named complete frame: 4-byte length prefix, then the payload.
struct named_frame {
  std::string name;
  std::string bytes;
};

/// Phase-1/2 frames of §12: probe, hellos, version_selects, syn/syn_ack/ack, drop_conns.
std::vector<named_frame> handshake_frames();

/// Phase-3 frames of §12 and the unit tests: data, routing updates, ping, pong, BYE,
/// a command, an extended data frame, an empty frame.
std::vector<named_frame> node_frames();

/// Hex of the endpoint ids of doc/protocol/peering.md §12: B (925c...), P0 (all zero but the version bits) and
/// PF (all ones but the version bits).
inline constexpr const char* id_b_hex = "925c91105b8757d99d80b65568e87a44";
inline constexpr const char* id_p0_hex = "00000000000040008000000000000000";
inline constexpr const char* id_pf_hex = "ffffffffffff4fffbfffffffffffffff";

} // namespace broker::fuzz
