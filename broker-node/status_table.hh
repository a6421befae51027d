#pragma once

// `broker-node --status http://host:port`: fetches GET /v1/status from a node's metrics
// server (doc/operations.md) and prints it as tables: the node, its peerings and dials,
// WebSocket clients, local handlers, stores and drops. With --json it prints the document
// itself, one line. Starts no endpoint.
//
// The HTTP client is a minimal one on a POSIX socket (HTTP/1.1, Connection: close, one GET,
// bounded in time and size): the node answers with a Content-Length and closes.

#include <string>
#include <string_view>

namespace broker_node {

/// Prints the status of the node at `url` and returns the exit code: 0, 1 for a malformed
/// URL, 2 if the node cannot be reached or answers with anything but its status.
int print_status(std::string_view url, bool json);

/// Splits `http://host:port[/...]` (or `host:port`) into host and port; false if malformed.
bool parse_status_url(std::string_view url, std::string& host, std::string& port);

} // namespace broker_node
