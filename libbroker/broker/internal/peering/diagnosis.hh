#pragma once

// diagnosis: what a failed peering says about its cause (doc/peering.md, "When a peering
// fails"). TLS on one side and plain TCP on the other is the most likely first mistake, and
// a peering dialed at an HTTP port, or a browser at the peering port, the next ones; the
// node recognises them from what it saw and names the setting that decides.
//
// Pure functions of what a connection observed; used by connection.cc on its strand.

#include "broker/error.hh"
#include "broker/internal/peering/wire.hh"

#include <boost/system/error_code.hpp>

#include <string>

namespace broker::internal {

/// A framing error in the handshake: TLS or HTTP when the stream's first bytes are theirs
/// (wire::recognize_foreign), else the error and the first bytes in hex. `tls`: this
/// connection runs over TLS (then TLS bytes cannot be the peer's fault of settings).
std::string framing_failure(const wire::frame_reader& reader, const error& err, bool tls);

/// A failed TLS handshake: OpenSSL's reason, explained where it means that the peer does
/// not speak TLS or is an HTTP client. `dialer`: we dialed (so the port may be no peering
/// port at all).
std::string tls_failure(const boost::system::error_code& ec, bool dialer);

/// The peer closed the connection. `silent_plain_dial`: we dialed over plain TCP and the
/// peer closed in the handshake without sending a byte, which a plain acceptor never does
/// (it sends its probe at once) and a TLS server does.
std::string closed_failure(bool silent_plain_dial);

} // namespace broker::internal
