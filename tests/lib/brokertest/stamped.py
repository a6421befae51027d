"""WebSocket clients that publish numbered messages and record every delivery, for exact
accounting under faults (tests/node/chaos.py, bench/soak.py).

    c = StampClient(2, node.ws_port, rate=40)   # publishes on /stamped/2, reads /stamped/
    c.start()              # its own thread: connect, subscribe, publish, read, reconnect
    c.churn(0.5)           # close (with a close frame), reconnect 0.5 s later
    c.burst(300)           # publish 300 messages at once
    c.stop_publishing()    # then c.last_seq() is final
    c.stop()
    c.sent[seq]            # when message `seq` was handed to the socket (time.monotonic())
    c.connections          # [Connection]: opened, closed, why, received [(src, seq, t)]

A client publishes only while connected; its sequence numbers run on across reconnects, so
(index, seq) names one message for the whole run. It never receives its own messages (the
node does not echo them). A connection that fails (the node died, the node closed it) ends
like a deliberate churn: the thread reconnects every RETRY seconds until it succeeds or
the client is stopped. Lists only grow, so other threads may read them while it runs.
Standard library only (rawws).
"""

import json
import threading
import time

from .rawws import CLOSE, TEXT, ProtocolError, RawClient, close_code

PREFIX = "/stamped/"
RETRY = 0.1
CONNECT_TIMEOUT = 5.0
# Longest wait for input before the client looks at its schedule again.
TICK = 0.05


class Connection:
    """One WebSocket connection of a client: a receiver in the accounting sense."""

    def __init__(self, number, opened, node_id):
        self.number = number
        self.opened = opened        # monotonic time of the ack
        self.node_id = node_id      # the node's endpoint id, from the ack
        self.closed = None          # monotonic time it ended
        self.why = None             # "churn", "stop" or the failure
        self.received = []          # [(source index, seq, monotonic time)]
        self.last = {}              # source index -> highest seq received
        self.errors = []            # error frames the server sent


class StampClient(threading.Thread):
    """See the module comment. `pad`: bytes of filler per message, to load the links."""

    def __init__(self, index, port, rate, pad=0, prefix=PREFIX, name=None):
        super().__init__(name=name or "stamped-%d" % index, daemon=True)
        self.index = index
        self.port = port
        self.rate = rate
        self.prefix = prefix
        self.topic = prefix + str(index)
        self.filler = "x" * pad
        self.sent = []
        self.connections = []
        self.failures = 0           # connection attempts that failed
        self._lock = threading.Lock()
        self._churn = None          # seconds to stay away, once asked to churn
        self._burst = 0
        self._publishing = True
        self._idle = threading.Event()  # set once publishing stopped
        self._stopping = threading.Event()

    # -- control (any thread) ----------------------------------------------------------

    def churn(self, away):
        """Closes the current connection and reconnects `away` seconds later."""
        with self._lock:
            self._churn = away

    def burst(self, count):
        with self._lock:
            self._burst += count

    def stop_publishing(self, timeout=30.0):
        """Stops publishing; returns once the thread has published its last message."""
        with self._lock:
            self._publishing = False
        if not self._idle.wait(timeout):
            raise RuntimeError("%s did not stop publishing within %.0f s" % (self.name,
                                                                            timeout))

    def stop(self, timeout=30.0):
        self._stopping.set()
        self.join(timeout)

    def last_seq(self):
        return len(self.sent) - 1

    def current(self):
        """The open connection, or None."""
        c = self.connections[-1] if self.connections else None
        return c if c is not None and c.closed is None else None

    # -- the thread ----------------------------------------------------------------------

    def run(self):
        while not self._stopping.is_set():
            client, node_id = self._connect()
            if client is None:
                self._stopping.wait(RETRY)
                self._mark_idle_if_stopped()
                continue
            conn = Connection(len(self.connections), time.monotonic(), node_id)
            self.connections.append(conn)
            away = None
            try:
                away = self._serve(client, conn)
                conn.why = "churn" if away is not None else "stop"
                client.send_close()
            except (OSError, EOFError, ProtocolError, ValueError) as e:
                conn.why = "%s: %s" % (type(e).__name__, e)
            finally:
                conn.closed = time.monotonic()
                client.close()
            if away:
                self._stopping.wait(away)

    def _connect(self):
        """(a subscribed RawClient, the node's id from the ack), or (None, None)."""
        try:
            client = RawClient(self.port, timeout=CONNECT_TIMEOUT)
        except (OSError, EOFError, ProtocolError):
            self.failures += 1
            return None, None
        try:
            client.send_text(json.dumps([self.prefix]))
            ack = json.loads(client.recv_text())
            if ack.get("type") != "ack":
                raise ProtocolError("expected an ack, got %r" % ack)
            return client, ack.get("endpoint")
        except (OSError, EOFError, ProtocolError, ValueError):
            self.failures += 1
            client.close()
            return None, None

    def _mark_idle_if_stopped(self):
        with self._lock:
            if not self._publishing:
                self._idle.set()

    def _publish(self, client):
        seq = len(self.sent)
        # Stamped before the write: a message counts as sent even if the write fails.
        self.sent.append(time.monotonic())
        client.send_text('{"type":"data-message","topic":"%s","@data-type":"string",'
                         '"data":"%d %s"}' % (self.topic, seq, self.filler))

    def _serve(self, client, conn):
        """Publishes and reads until asked to churn (returns the time to stay away) or to
        stop (returns None); a failing connection raises."""
        period = 1.0 / self.rate if self.rate else None
        next_pub = time.monotonic()
        while not self._stopping.is_set():
            with self._lock:
                away, self._churn = self._churn, None
                burst, self._burst = self._burst, 0
                publishing = self._publishing
            if away is not None:
                return away
            if publishing:
                for _ in range(burst):
                    self._publish(client)
                now = time.monotonic()
                if period is not None and now >= next_pub:
                    self._publish(client)
                    # After a stall, carry on at the rate instead of catching up.
                    next_pub = max(next_pub + period, now - 1.0)
            else:
                self._idle.set()
            wait = TICK
            if publishing and period is not None:
                wait = min(TICK, max(0.0, next_pub - time.monotonic()))
            for _, opcode, payload in client.poll_frames(wait):
                self._take(conn, opcode, payload)
        return None

    def _take(self, conn, opcode, payload):
        if opcode == CLOSE:
            raise EOFError("the node closed the connection (%s %s)" % close_code(payload))
        if opcode != TEXT:
            return
        msg = json.loads(payload)
        if msg.get("type") == "error":
            conn.errors.append(msg)
            return
        topic = msg.get("topic", "")
        if not topic.startswith(self.prefix):
            return
        source = int(topic[len(self.prefix):])
        seq = int(msg["data"].split(" ", 1)[0])
        conn.received.append((source, seq, time.monotonic()))
        if seq > conn.last.get(source, -1):
            conn.last[source] = seq
