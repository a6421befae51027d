#pragma once

// The two roles over native peering.
//
// Client: dials <host>:<port> (re-dialing until --connect-timeout), waits until the peer's
// filter covers /benchmark/events (so no event is published into the void), then runs the
// send loop (sender.hh). Peers never push back in this design (a full peer queue drops
// or disconnects: doc/architecture.md, "Core, handlers and overflow policies"), so the
// client paces itself on its own peer send queue: it reads the queue length from the
// endpoint's metrics every few hundred events and waits while the queue is more than a
// quarter full. The peer queue therefore never overflows, and a slow
// receiver slows the client down the way TCP back-pressure would.
//
// Server: listens on <addr>:<port>, counts everything on /benchmark/events, and with
// --latency measures the one-way latency of each event (same machine, same clock) and
// echoes it on /benchmark/echo, where the client measures round trips.

#include "session.hh"

#include <broker/configuration.hh>

namespace broker_throughput {

/// Publishes events to a peer; returns the exit code.
int run_peering_client(broker::configuration cfg, session& s);

/// Receives and counts events from peers; returns the exit code.
int run_peering_server(broker::configuration cfg, session& s);

} // namespace broker_throughput
