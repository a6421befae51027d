// Fuzz target: one peering payload (peering/wire), as a frame_reader hands it on. The input
// goes to both decoders: decode_handshake (phases 1 and 2) and decode_node_message with the
// phase-3 decoders behind it (filter, value, extension header, pong). Checks
// (peering_checks.hh): decoded messages re-encode to frames that decode to the same message,
// relaying reproduces the frame, handshake errors fit a drop_conn.

#include "fuzz_common.hh"
#include "peering_checks.hh"
#include "peering_vectors.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/peering/wire.hh"

using namespace broker;

std::vector<fuzz::seed> fuzz::seeds() {
  std::vector<seed> result;
  auto add = [&result](const std::vector<named_frame>& frames) {
    for (auto& f : frames)
      if (f.bytes.size() > internal::wire::length_prefix_size)
        result.push_back({f.name, f.bytes.substr(internal::wire::length_prefix_size)});
  };
  add(handshake_frames());
  add(node_frames());
  return result;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto payload = fuzz::as_text(data, size);
  fuzz::check_handshake_payload(payload);
  fuzz::check_node_payload(payload, internal::bin::default_max_depth);
  return 0;
}
