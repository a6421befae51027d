#pragma once

// sd_notify: the service manager's readiness protocol (sd_notify(3)) without libsystemd.
//
// Under systemd with Type=notify, $NOTIFY_SOCKET names a Unix datagram socket (a path, or
// "@name" in the abstract namespace); a service sends newline-separated assignments such
// as "READY=1" or "STOPPING=1" to it. Outside systemd the variable is unset and nothing is
// sent. The protocol is one sendto(), so the node does not need libsystemd for it.

#include <string>
#include <string_view>

namespace broker_tools {

/// What became of a notification.
enum class notify_result : unsigned char {
  sent,      ///< The service manager got it.
  no_socket, ///< $NOTIFY_SOCKET is unset or empty: not running under Type=notify.
  failed,    ///< $NOTIFY_SOCKET is set, but the datagram could not be sent.
};

/// Sends `state` (e.g. "READY=1\nSTATUS=listening on 9999") to $NOTIFY_SOCKET. On failure,
/// `error` (if given) says why, naming the socket.
notify_result sd_notify(std::string_view state, std::string* error = nullptr);

} // namespace broker_tools
