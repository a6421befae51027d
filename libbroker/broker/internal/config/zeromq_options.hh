#pragma once

// The options of the ZeroMQ transport (doc/protocol/zeromq.md, doc/configuration.md): the
// forwarder's two listening sockets, CURVE keys, node mode, the per-connection queue and
// heartbeats. Rows of the one options table (appended by make_options_table()), read here
// into one typed value so that the rest of the library never looks them up by key.
//
// Zeek's counterpart of each (Cluster::Backend::ZeroMQ::...) is named in its help text.

#include "broker/configuration.hh"
#include "broker/overflow_policy.hh"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace broker::internal {

/// Default of broker.zeromq.buffer-size: Zeek's xpub_sndhwm.
inline constexpr size_t default_zeromq_buffer_size = 1000;

/// The typed values of the rows below.
struct zeromq_settings {
  std::string address = "127.0.0.1"; ///< broker.zeromq.address
  uint16_t xsub_port = 0;             ///< broker.zeromq.xsub-port (0: off)
  uint16_t xpub_port = 0;             ///< broker.zeromq.xpub-port (0: off)
  std::string server_secret_key;      ///< Z85, 40 characters; set: CURVE required
  std::string server_public_key;      ///< Z85; derived from the secret if empty
  std::string client_secret_key;      ///< node mode: ours (zeromq/node_client.hh)
  std::string client_public_key;      ///< the admitted client key; node mode: ours
  std::string connect_xpub;           ///< node mode: "tcp://host:port" of a forwarder's XSUB
  std::string connect_xsub;           ///< node mode: "tcp://host:port" of a forwarder's XPUB
  std::string node_id;                ///< our node id (generated if empty)
  size_t buffer_size = default_zeromq_buffer_size;
  overflow_policy policy = overflow_policy::drop_oldest;
  size_t heartbeat_interval_ms = 0; ///< 0: no heartbeats (libzmq's default)
  size_t connect_timeout_ms = 10'000; ///< node mode: one TCP connect attempt at most
};

/// Appends the rows of this file to the options table.
void append_zeromq_options(std::vector<option_info>& table);

/// Reads the rows from a (validated) configuration. `endpoint_name` is used for a
/// generated node id.
zeromq_settings read_zeromq_settings(const configuration& cfg);

} // namespace broker::internal
