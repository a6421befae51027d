"""A TCP relay in a process of its own, so that SIGSTOP pauses exactly one link.

    link = cleanup.add(Proxy(target_port=a.port, name="A-B"))    # ready: link.port
    b = cleanup.add(Node(node_bin, ["--peers", peer_uri(link.port)], "B"))   # B dials A
    link.pause()      # SIGSTOP: bytes stop in both directions; the TCP connections stay up
    link.resume()     # SIGCONT

Every connection accepted on `port` gets its own connection to 127.0.0.1:`target_port`
(refused at once if the target is down); bytes are copied both ways until either side
closes or fails, then both are closed (what the other side had sent is flushed first). The
relay's sockets have small kernel buffers (`buffer` bytes, which the kernel doubles), so a
paused relay pushes back on its senders after a few dozen kilobytes instead of the
megabytes loopback TCP would otherwise absorb.

With `trace` (a file name), the relay appends every chunk it forwards to that file, stamped
with time.monotonic() (one clock for all processes): read_trace() gives them back, for
finding out afterwards which link carried what when.

The relay itself is this module run as a program (`PYTHONPATH=tests/lib python3 -m
brokertest.proxy --target PORT [--listen PORT] [--buffer BYTES]`): it prints
`listening on N` once and relays until killed. Standard library only.
"""

import argparse
import os
import selectors
import signal
import socket
import struct
import sys
import time

from .procs import Proc

LOCALHOST = "127.0.0.1"
DEFAULT_BUFFER = 16384
SEGMENT = 1024
CONNECT_TIMEOUT = 2.0
FLUSH_TIMEOUT = 1.0
# A trace record: time, connection number, direction (0: from the dialer to the target,
# 1: back), length; then the bytes.
TRACE_HEAD = struct.Struct("!dIBI")


class Proxy(Proc):
    """A relay process (see the module comment); ready when constructed: `port`."""

    def __init__(self, target_port, name="proxy", port=0, buffer=DEFAULT_BUFFER, trace=None,
                 **options):
        lib = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        args = ["-B", "-m", "brokertest.proxy", "--target", target_port, "--listen", port,
                "--buffer", buffer] + (["--trace", trace] if trace else [])
        super().__init__(sys.executable, args, name, env={"PYTHONPATH": lib}, **options)
        self.target_port = target_port
        self.trace = trace
        self.port = self.listening_port()
        self.paused = False

    def pause(self):
        self.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self):
        self.send_signal(signal.SIGCONT)
        self.paused = False


def read_trace(path):
    """The records of a trace file: [(time, connection, direction, bytes)]."""
    records = []
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + TRACE_HEAD.size <= len(data):
        t, conn, direction, n = TRACE_HEAD.unpack_from(data, pos)
        pos += TRACE_HEAD.size
        if pos + n > len(data):
            break  # The relay was killed in the middle of a record.
        records.append((t, conn, direction, data[pos:pos + n]))
        pos += n
    return records


# -- the relay process ----------------------------------------------------------------------

class _Pair:
    """Two sockets copied into each other; `pending[s]` waits to be written to s."""

    def __init__(self, a, b, number):
        self.peer = {a: b, b: a}
        self.pending = {a: b"", b: b""}
        self.closed = False
        self.number = number
        self.direction = {a: 0, b: 1}  # of bytes read from that socket


def _tune(sock, size):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
    # The other side sizes its send buffer by segments (loopback's are 64 KiB): small
    # segments keep it small too.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, SEGMENT)


def _relay(listen_port, target_port, size, trace):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    _tune(server, size)  # Accepted sockets inherit the buffer sizes.
    server.bind((LOCALHOST, listen_port))
    server.listen(64)
    print("listening on %d" % server.getsockname()[1], flush=True)
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ)
    pairs = {}
    accepted = [0]

    def close_pair(pair):
        if pair.closed:
            return
        pair.closed = True
        for s in pair.peer:
            rest = pair.pending[s]
            if rest:
                try:
                    s.settimeout(FLUSH_TIMEOUT)
                    s.sendall(rest)
                except OSError:
                    pass
            sel.unregister(s)
            del pairs[s]
            s.close()

    def update(s):
        """Reads from s while its peer has nothing pending; writes to s while it has."""
        pair = pairs[s]
        events = 0
        if not pair.pending[pair.peer[s]]:
            events |= selectors.EVENT_READ
        if pair.pending[s]:
            events |= selectors.EVENT_WRITE
        sel.modify(s, events or selectors.EVENT_READ)

    def accept():
        client, _ = server.accept()
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        _tune(upstream, size)
        upstream.settimeout(CONNECT_TIMEOUT)
        try:
            upstream.connect((LOCALHOST, target_port))
        except OSError:
            upstream.close()
            client.close()
            return
        pair = _Pair(client, upstream, accepted[0])
        accepted[0] += 1
        for s in (client, upstream):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pairs[s] = pair
            sel.register(s, selectors.EVENT_READ)

    while True:
        for key, mask in sel.select():
            s = key.fileobj
            if s is server:
                accept()
                continue
            pair = pairs.get(s)
            if pair is None or pair.closed:
                continue
            other = pair.peer[s]
            try:
                if mask & selectors.EVENT_WRITE and pair.pending[s]:
                    n = s.send(pair.pending[s])
                    pair.pending[s] = pair.pending[s][n:]
                if mask & selectors.EVENT_READ and not pair.pending[other]:
                    data = s.recv(size)
                    if not data:
                        close_pair(pair)
                        continue
                    if trace:
                        trace.write(TRACE_HEAD.pack(time.monotonic(), pair.number,
                                                    pair.direction[s], len(data)) + data)
                        trace.flush()
                    n = 0
                    try:
                        n = other.send(data)
                    except BlockingIOError:
                        pass
                    pair.pending[other] = data[n:]
            except OSError:
                close_pair(pair)
                continue
            update(s)
            update(other)


def main():
    parser = argparse.ArgumentParser(description="Relays TCP connections to 127.0.0.1:TARGET.")
    parser.add_argument("--target", type=int, required=True)
    parser.add_argument("--listen", type=int, default=0)
    parser.add_argument("--buffer", type=int, default=DEFAULT_BUFFER)
    parser.add_argument("--trace", help="append what is forwarded to this file")
    args = parser.parse_args()
    trace = open(args.trace, "ab") if args.trace else None
    try:
        _relay(args.listen, args.target, args.buffer, trace)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
