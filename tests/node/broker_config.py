#!/usr/bin/env python3
"""System test: a Zeek Broker user's configuration starts our broker-node unchanged.

Broker's own btest config files (tests/data/broker-configs/, copied unchanged) run as
Broker's btests run them: `broker-node --config-file=node.cfg` with BROKER_PORT=<port>/tcp.
CAF's logger settings in them become our log file, with a notice; other Broker spellings,
Broker's environment variables and command-line flags work or fail naming the key.

Usage: broker_config.py <path to broker-node>
"""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

import brokertest.peer as bp  # noqa: E402
from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import free_port  # noqa: E402
from brokertest.nodes import Node, is_status  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                       "broker-configs")
RUN_TIMEOUT = 20.0


def config(name):
    return os.path.join(CONFIGS, name)


def run(binary, args, env=None):
    """Runs the node to completion; returns (exit code, stdout, stderr)."""
    proc = subprocess.run([binary] + args, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=RUN_TIMEOUT, env=env)
    return proc.returncode, proc.stdout.decode(errors="replace"), \
        proc.stderr.decode(errors="replace")


def wait_stderr(node, text, timeout=10.0):
    """Waits until a line of the node's stderr contains `text`; returns all of stderr."""
    deadline = time.monotonic() + timeout
    while True:
        err = "\n".join(node.err_lines)
        if text in err:
            return err
        check(time.monotonic() < deadline, "%s: no %r on stderr\n%s"
              % (node.name, text, node.describe()))
        time.sleep(0.05)


def in_temp_dir(test):
    """Runs `test` in a fresh working directory: the configs log to ./broker.log."""
    def wrapper(binary):
        binary = os.path.abspath(binary)
        old = os.getcwd()
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)
            try:
                test(binary, tmp)
            finally:
                os.chdir(old)
    wrapper.__doc__ = test.__doc__
    return wrapper


@in_temp_dir
def test_btest_configs(binary, tmp):
    """Broker's btest node configs start the node on BROKER_PORT and log to broker.log"""
    # (file, has broker.disable-ssl, has verbose = true)
    for name, plain, verbose in (("handshake-node.cfg", False, True),
                                 ("peers-node.cfg", True, True),
                                 ("put-unique.cfg", True, False)):
        with Cleanup() as cleanup:
            port = free_port()
            env = dict(os.environ, BROKER_PORT="%d/tcp" % port)
            node = cleanup.add(Node(binary, ["--config-file=" + config(name)], name,
                                    plain=plain, env=env))
            check(node.port == port, "%s: listening on BROKER_PORT %d, got %s"
                  % (name, port, node.port))
            peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", port, bp.random_id(),
                                                       ["/test"]))
            check(b"/test" in peer.remote_filter, "%s: topics from the file: %s"
                  % (name, peer.remote_filter))
            peer.ping(b"up")  # The peering works end to end.
            if verbose:
                node.wait_for(is_status("peer_added", bp.id_text(peer.own_id)),
                              what="peer_added")
            err = wait_stderr(node, "listening on")
            for key, ours in (("caf.logger.file.path", "broker.log-file"),
                              ("caf.logger.file.verbosity", "broker.log-file-level")):
                check('notice: %s:' % config(name) in err and
                      'reading "%s" (Zeek Broker\'s name) as "%s"' % (key, ours) in err,
                      "%s: a notice for %s:\n%s" % (name, key, err))
            check(node.matching(lambda l: "error" in l) == [], "%s: no errors" % name)
            node.send_signal(15)
            check(node.wait_exit() == 0, "%s: exit 0\n%s" % (name, node.describe()))
        log = os.path.join(tmp, "broker.log")
        check(os.path.exists(log), "%s: caf.logger.file.path wrote broker.log" % name)
        with open(log) as f:
            text = f.read()
        check("listening on" in text, "%s: broker.log has the node's log:\n%s" % (name, text))
        os.remove(log)


@in_temp_dir
def test_json_config(binary, tmp):
    """the JSON config Broker's peers btest writes dials its peers"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["-t", "/test", "-v"], "A"))
        with open(config("peers-client.cfg")) as f:
            text = f.read().replace("PORT", str(a.port))
        path = os.path.join(tmp, "test.cfg")
        with open(path, "w") as f:
            f.write(text)
        b = cleanup.add(Node(binary, ["--config-file", path, "-v"], "B"))
        a.wait_for(is_status("peer_added"), what="the JSON config's peer")
        b.wait_for(is_status("peer_added"), what="B's peer_added")


def test_environment(binary):
    """Broker's variables: verbosities are read, unknown values fail naming the variable"""
    with Cleanup() as cleanup:
        env = dict(os.environ, BROKER_CONSOLE_VERBOSITY="debug",
                   BROKER_RECORDING_DIRECTORY="/nonexistent")
        node = cleanup.add(Node(binary, ["-t", "/t"], "N", env=env))
        err = wait_stderr(node, "listening on")
        check('reading "BROKER_CONSOLE_VERBOSITY" (Zeek Broker\'s name) as "broker.log-level"'
              in err, "a notice for BROKER_CONSOLE_VERBOSITY:\n" + err)
        check('ignoring "BROKER_RECORDING_DIRECTORY"' in err,
              "a notice for BROKER_RECORDING_DIRECTORY:\n" + err)
    # BROKER_FILE_VERBOSITY takes effect: compare what two runs wrote to their log files.
    with tempfile.TemporaryDirectory() as tmp:
        for level, has_info in (("debug", True), ("warning", False)):
            log = os.path.join(tmp, level + ".log")
            env = dict(os.environ, BROKER_FILE_VERBOSITY=level)
            with Cleanup() as cleanup:
                node = cleanup.add(Node(binary, ["-t", "/t", "--broker.log-file=" + log], "N",
                                        env=env))
                node.send_signal(15)
                check(node.wait_exit() == 0, node.describe())
            with open(log) as f:
                text = f.read()
            check((" info peering: listening on" in text) == has_info,
                  "BROKER_FILE_VERBOSITY=%s wrote:\n%s" % (level, text))
    env = dict(os.environ, BROKER_CONSOLE_VERBOSITY="loud")
    code, _, err = run(binary, ["--broker.disable-ssl"], env)
    check(code == 1 and "BROKER_CONSOLE_VERBOSITY: broker.log-level: expected one of" in err,
          "an invalid verbosity exits 1 naming it: %d %s" % (code, err))


def test_command_line(binary):
    """Broker's flags: -n/--num-messages, -N/--name, --rendezvous-retry, --caf.*, port"""
    with Cleanup() as cleanup:
        pong = cleanup.add(Node(binary, ["-m", "pong", "-t", "/pp", "-v", "-N", "ponger",
                                         "--caf.logger.console.verbosity=warning",
                                         "--caf.middleman.workers", "4"], "pong"))
        ping = cleanup.add(Node(binary, ["-m", "ping", "-t", "/pp", "--num-messages", "3",
                                         "--rendezvous-retry=50ms", "--peers",
                                         "tcp://127.0.0.1:%d" % pong.port, "--no-listen"],
                                "ping", listen=False))
        check(ping.wait_exit() == 0, "ping exits 0\n" + ping.describe())
        check(len(ping.matching(lambda l: l.startswith("rtt "))) == 3, ping.describe())
        pong.wait_for(lambda l: l.startswith("[ponger] received /pp "), what="-N prefix")
        check(any('ignoring "caf.middleman.workers"' in l for l in pong.err_lines),
              "a notice for --caf.middleman.workers\n" + pong.describe())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "node.cfg")
        port = free_port()
        with open(path, "w") as f:
            f.write("port = %d\ntopics = [\"/t\"]\n" % port)
        with Cleanup() as cleanup:
            node = cleanup.add(Node(binary, ["--config-file", path], "N"))
            check(node.port == port, "a top-level port key: %d, got %s" % (port, node.port))


def test_errors_name_the_key(binary):
    """a bad value under a Broker spelling, an unknown key, --endpoint-id: exit 1, named"""
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("broker.web_socket-buffer-size = 0\n", "broker.web-socket-buffer-size"),
                 ("broker { nope = 1 }\n", 'unknown option "broker.nope"'),
                 ("caf.logger.file.verbosity = loud\n", "broker.log-file-level")]
        for text, name in cases:
            path = os.path.join(tmp, "bad.cfg")
            with open(path, "w") as f:
                f.write(text)
            code, _, err = run(binary, ["--config-file", path, "--broker.disable-ssl"])
            check(code == 1 and name in err and path + ":1:" in err,
                  "%r exits 1 naming %s: %d %s" % (text, name, code, err))
    code, _, err = run(binary, ["--endpoint-id", "00000000-0000-4000-8000-000000000000"])
    check(code == 1 and "endpoint-id" in err, "--endpoint-id: %d %s" % (code, err))


def test_check_and_dump(binary):
    """--check-config validates a Broker config; --dump-config shows where values came from"""
    path = config("handshake-node.cfg")
    code, out, err = run(binary, ["--check-config", "--config-file", path])
    check(code == 0 and "broker-node: configuration OK" in out, "%d %s %s" % (code, out, err))
    env = dict(os.environ, BROKER_PORT="4242/tcp")
    code, out, err = run(binary, ["--dump-config", "--config-file", path, "--ttl=3"], env)
    check(code == 0, "--dump-config exits 0: %d %s" % (code, err))
    lines = out.splitlines()

    def line_of(key):
        found = [l for l in lines if l.startswith(key + " = ")]
        check(len(found) == 1, "one line for %s:\n%s" % (key, out))
        return found[0]

    check("# file %s:7:7" % path in line_of("broker.log-file"), out)
    check("# environment BROKER_PORT" in line_of("broker.port"), out)
    check(line_of("broker.port").startswith("broker.port = 4242 "), out)
    check("# command line --ttl" in line_of("broker.ttl"), out)
    check("# default" in line_of("broker.peer-buffer-size"), out)
    check(line_of("topics").startswith('topics = ["/test"]'), out)
    with tempfile.NamedTemporaryFile("w", suffix=".cfg") as f:
        f.write("broker.ssl.cafile = /nonexistent/ca.pem\n")
        f.flush()
        code, _, err = run(binary, ["--check-config", "--config-file", f.name])
        check(code == 1 and "broker.ssl.cafile" in err, "a missing CA file: %d %s" % (code, err))


if __name__ == "__main__":
    run_tests([test_btest_configs, test_json_config, test_environment, test_command_line,
               test_errors_name_the_key, test_check_and_dump], limit=90)
