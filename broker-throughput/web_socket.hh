#pragma once

// The two roles over a node's WebSocket JSON API v1 instead of peering.
//
// Client: connects to ws://<host>:<port>/v1/messages/json with the filter `[]` (publish
// only) and sends each event as one data-message frame. The JSON text comes from the
// message itself (data_message's cached JSON encoding, the library's one JSON encoder), so
// the client pays exactly one encoding per event, as the server would for its clients.
// The server applies TCP back-pressure to fast publishers (doc/protocol/websocket.md §7), which
// paces the client.
//
// Server ("receive"): connects with the filter `["/benchmark/events"]` and counts the
// data-message frames it receives. It does not decode them: the server's output is compact
// with a fixed key order, so the frame's prefix identifies it, and the benchmark measures
// the node's delivery rather than this client's JSON parser.
//
// Both retry connecting until --connect-timeout, so they can start before the node.

#include "session.hh"

namespace broker_throughput {

/// Publishes events through a node's WebSocket API; returns the exit code.
int run_web_socket_client(session& s);

/// Receives and counts events through a node's WebSocket API; returns the exit code.
int run_web_socket_server(session& s);

} // namespace broker_throughput
