#!/usr/bin/env python3
"""System tests: broker-node's command line, exit codes, signals and ping/pong modes.

Usage: cli.py <path to broker-node>
"""

import os
import signal
import socket
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest import peer as bp  # noqa: E402
from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import free_port  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup, run_once  # noqa: E402

EXIT_CLEAN, EXIT_INVALID_CONFIG, EXIT_RUNTIME_FAILURE = 0, 1, 2
PINGS = 5
PAYLOAD_SIZE = 100


def test_help(binary):
    """--help prints the option table, program options included, and exits 0"""
    for flag in ("--help", "-h"):
        code, out, _ = run_once(binary, [flag])
        check(code == EXIT_CLEAN, "%s exits 0, got %d" % (flag, code))
        for text in ("-t, --topics", "--peers", "--peer-retry", "-m, --mode", "-v, --verbose",
                     "-r, --rate", "--listen-address", "-p, --broker.port",
                     "--broker.peer-buffer-size", "--config-file"):
            check(text in out, "%s lists %s:\n%s" % (flag, text, out))


def test_invalid_configuration(binary):
    """invalid options exit 1 with a message that names the option"""
    cases = [
        (["--no-such-option"], "no-such-option"),
        (["--peer-retry=soon"], "peer-retry"),
        (["--peers", "127.0.0.1"], "peers"),
        (["--peers", "tcp://127.0.0.1:0"], "peers"),
        (["-m", "dance"], "mode"),
        (["-m", "ping"], "topics"),
        (["-t", "<$>/local"], "topics"),
        (["--broker.peer-buffer-size=0"], "broker.peer-buffer-size"),
        (["--listen-address=not-an-address"], "not-an-address"),
        (["stray-argument"], "stray-argument"),
    ]
    for args, name in cases:
        code, _, err = run_once(binary, args + ["--broker.disable-ssl"])
        check(code == EXIT_INVALID_CONFIG, "%s exits 1, got %d: %s" % (args, code, err))
        check(name in err, "the error for %s names %s: %s" % (args, name, err))


def test_port_in_use(binary):
    """a peering, WebSocket or metrics port that cannot be bound is a runtime failure: exit 2"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        # Each names the server, the address in the one printed form (*:port: all
        # interfaces; WebSocket and metrics bind 127.0.0.1 by default), and the option and
        # environment variable that set it.
        cases = [
            (["-p", port], {}, ["for peerings on *:" + port, "broker.port", "BROKER_PORT"]),
            ([], {"BROKER_WEB_SOCKET_PORT": port},
             ["for WebSocket clients on 127.0.0.1:" + port, "broker.web-socket.port",
              "BROKER_WEB_SOCKET_PORT"]),
            (["--broker.metrics.port=" + port], {},
             ["for metrics on 127.0.0.1:" + port, "broker.metrics.port",
              "BROKER_METRICS_PORT"]),
        ]
        for args, env, names in cases:
            code, _, err = run_once(binary, args + ["--broker.disable-ssl"], env=env)
            check(code == EXIT_RUNTIME_FAILURE,
                  "%s: exit 2 for a port in use, got %d: %s" % (args, code, err))
            check("in use" in err, "%s: the error says why: %s" % (args, err))
            for name in names:
                check(name in err, "%s %s: the error names %s: %s" % (args, env, name, err))
            check('"":' not in err and " :" + port not in err,
                  "one form for all interfaces: %s" % err)


def test_web_socket_gateway(binary):
    """a node with --no-listen and no --peers is refused unless WebSocket clients reach it"""
    code, _, err = run_once(binary, ["--no-listen", "-t", "/x", "--broker.disable-ssl",
                                     "--check-config"])
    check(code == EXIT_INVALID_CONFIG and "no-listen" in err and "isolated" in err,
          "an isolated node: %d %s" % (code, err))
    code, _, err = run_once(binary, ["--no-listen", "-t", "/x", "--broker.disable-ssl",
                                     "--check-config", "--broker.metrics.port=9100"])
    check(code == EXIT_INVALID_CONFIG, "a metrics port alone connects nothing: %d %s"
          % (code, err))
    code, out, err = run_once(binary, ["--no-listen", "-t", "/x", "--broker.disable-ssl",
                                       "--check-config"], env={"BROKER_WEB_SOCKET_PORT": "9997"})
    check(code == EXIT_CLEAN and "configuration OK" in out,
          "a WebSocket-only gateway is a real deployment: %d %s" % (code, err))
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["--no-listen", "-t", "/x"], "gateway", listen=False,
                                web_socket=True))
        node.send_signal(signal.SIGTERM)
        check(node.wait_exit() == EXIT_CLEAN, "the gateway ran and ends cleanly\n"
              + node.describe())


def test_signals(binary):
    """SIGINT and SIGTERM end the node cleanly with exit code 0"""
    with Cleanup() as cleanup:
        for sig in (signal.SIGINT, signal.SIGTERM):
            node = cleanup.add(Node(binary, ["-t", "/t"], "N"))
            node.send_signal(sig)
            check(node.wait_exit() == EXIT_CLEAN, "exit 0 after %s\n%s" % (sig, node.describe()))


def test_config_file_and_environment(binary):
    """topics from --config-file and the port from BROKER_PORT reach the handshake"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "node.cfg")
        with open(path, "w") as f:
            f.write('topics = ["/from/file"]\nbroker { disable-ssl = true }\n')
        port = free_port()
        node = cleanup.add(Node(binary, ["--config-file", path], "N", plain=False,
                                env={"BROKER_PORT": str(port)}))
        check(node.port == port, "listening on BROKER_PORT %d, got %d" % (port, node.port))
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(), []))
        check(b"/from/file" in peer.remote_filter, "filter %s" % peer.remote_filter)


def test_ping_pong(binary):
    """ping mode times N round trips against a pong node and exits 0"""
    with Cleanup() as cleanup:
        pong = cleanup.add(Node(binary, ["-m", "pong", "-t", "/pp", "-v"], "pong"))
        ping = cleanup.add(Node(binary, ["-m", "ping", "-t", "/pp", "-n", str(PINGS), "-s",
                                         str(PAYLOAD_SIZE), "--peers", peer_uri(pong.port),
                                         "--no-listen"], "ping", listen=False))
        check(ping.wait_exit() == EXIT_CLEAN, "ping exits 0\n" + ping.describe())
        rtts = ping.matching(lambda l: l.startswith("rtt "))
        check([int(l.split()[1]) for l in rtts] == list(range(1, PINGS + 1)),
              "rtt lines: %s" % rtts)
        summary = ping.matching(lambda l: l.startswith("summary "))
        check(len(summary) == 1 and "sent=%d received=%d lost=0" % (PINGS, PINGS) in summary[0],
              "summary: %s" % summary)
        # Ping 0 is the rendezvous (repeated until answered); 1..PINGS are measured.
        # The ponger answers before its -v line reaches us: wait for the lines (bounded).
        pings = pong.wait_count(lambda l: l.startswith('received /pp ("ping", ')
                                and not l.startswith('received /pp ("ping", 0, '), PINGS,
                                what="the ponger's received lines of pings 1..%d" % PINGS)
        check(len(pings) == PINGS, "the ponger saw %d pings: %s" % (len(pings), pings))
        check(("x" * PAYLOAD_SIZE) in pings[0], "the ping carries the payload")


def test_ping_without_ponger(binary):
    """ping mode exits 2 when no pong answers its rendezvous within --ping-timeout"""
    with Cleanup() as cleanup:
        relay = cleanup.add(Node(binary, ["-t", "/other"], "relay"))
        ping = cleanup.add(Node(binary, ["-m", "ping", "-t", "/pp", "--ping-timeout", "1",
                                         "--peers", peer_uri(relay.port)], "ping"))
        check(ping.wait_exit() == EXIT_RUNTIME_FAILURE, "ping exits 2\n" + ping.describe())


def test_rate(binary):
    """-r prints a rate line every second"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-t", "/t", "-r"], "N"))
        node.wait_count(lambda l: l.startswith("rate: ") and l.endswith(" messages/s"), 2,
                        what="two rate lines")
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(), []))
        peer.publish_many("/t", [bp.encode_count(i) for i in range(10)])
        node.wait_for(lambda l: l.startswith("rate: ") and l != "rate: 0 messages/s",
                      what="a non-zero rate")
        check(not node.matching(is_status("peer_added")), "-r alone prints no status lines")


def test_zeromq_node_mode_options(binary):
    """node mode (broker.zeromq.connect-xpub / connect-xsub): malformed endpoints, one of the
    two alone, or node mode together with the forwarder's ports stop the node at start with
    an error that names the option and what is wrong; well-formed ones start it even with
    no forwarder there yet (it retries and says so once)"""
    xpub_ok = "--broker.zeromq.connect-xpub=tcp://127.0.0.1:%d" % free_port()
    xsub_ok = "--broker.zeromq.connect-xsub=tcp://127.0.0.1:%d" % free_port()
    cases = [
        (["--broker.zeromq.connect-xpub=tcp://nohost", xsub_ok],
         ["broker.zeromq.connect-xpub", "tcp://nohost", "no port"]),
        ([xpub_ok, "--broker.zeromq.connect-xsub=udp://127.0.0.1:5555"],
         ["broker.zeromq.connect-xsub", "transport udp is not supported"]),
        ([xpub_ok, "--broker.zeromq.connect-xsub=tcp://127.0.0.1:0"],
         ["broker.zeromq.connect-xsub", "from 1 to 65535"]),
        ([xpub_ok], ["connect-xsub is not set"]),
        ([xsub_ok], ["connect-xpub is not set"]),
        ([xpub_ok, xsub_ok, "--broker.zeromq.xsub-port=%d" % free_port()],
         ["exclude each other", "broker.zeromq.xsub-port"]),
        ([xpub_ok, xsub_ok, "--broker.zeromq.curve-client-secret-key=%s" % ("x" * 40)],
         ["curve-server-public-key"]),
    ]
    for args, wanted in cases:
        code, _, err = run_once(binary, ["-p", "0", "--listen-address=127.0.0.1",
                                         "--broker.disable-ssl"] + args)
        check(code == EXIT_INVALID_CONFIG, "%s exits 1, got %d: %s" % (args, code, err))
        for text in wanted:
            check(text in err, "%s: the error names %r: %s" % (args, text, err))
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, [xpub_ok, xsub_ok], "joining"))
        node.wait_for(lambda l: "joining the forwarder as a node" in l, stderr=True,
                      what="the node-mode start line")
        node.wait_for(lambda l: "xsub connection to" in l and "cannot connect" in l,
                      stderr=True, what="one line for the unreachable forwarder")
        check(node.alive(), "broker-node keeps running without its forwarder")


if __name__ == "__main__":
    run_tests([test_help, test_invalid_configuration, test_port_in_use, test_web_socket_gateway,
               test_signals,
               test_config_file_and_environment, test_ping_pong, test_ping_without_ponger,
               test_rate, test_zeromq_node_mode_options], limit=90)
