#!/usr/bin/env python3
"""System test: broker-node.service, without systemd as PID 1.

The unit is checked three ways: its settings (Type=notify, restart policy, the dedicated
user, the hardening), `systemd-analyze verify` and `systemd-analyze security --offline`
when systemd-analyze exists, and its ExecStart line run under a harness that plays the
service manager: a Unix datagram socket as $NOTIFY_SOCKET. The node, started exactly as
the unit starts it (the installed default config, with a free port and a scratch state
directory), must say READY=1 once it serves peers, accept a peering, and say STOPPING=1
and exit 0 on SIGTERM. An invalid configuration exits 1 (which the unit does not restart)
without READY=1.

Usage: systemd.py <broker-node> <configured broker-node.service> <default broker.conf>
"""

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

import brokertest.peer as bp  # noqa: E402
from brokertest.checks import check  # noqa: E402
from brokertest.net import free_port  # noqa: E402

NOTIFY_TIMEOUT = 20.0
EXIT_TIMEOUT = 20.0
MAX_EXPOSURE = 2.0


def read_unit(path):
    """{key: [values]} of the unit's [Service] and [Unit] sections."""
    settings = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", "[")):
                continue
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


def test_settings(unit):
    s = read_unit(unit)
    want = {"Type": "notify", "NotifyAccess": "main", "Restart": "always",
            "RestartPreventExitStatus": "1", "User": "broker", "Group": "broker",
            "StateDirectory": "broker", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
            "ProtectHome": "yes", "PrivateTmp": "yes", "CapabilityBoundingSet": "",
            "WantedBy": "multi-user.target", "ExecReload": "/bin/kill -HUP $MAINPID"}
    for key, value in want.items():
        check(s.get(key) == [value], "%s=%s, got %s" % (key, value, s.get(key)))
    exec_start = shlex.split(s["ExecStart"][0])
    check(exec_start[0].endswith("/bin/broker-node") and len(exec_start) == 2
          and re.fullmatch(r"--config-file=/.*/broker/broker\.conf", exec_start[1]),
          "ExecStart: %s" % exec_start)
    return exec_start


def with_binary(unit, binary, tmp):
    """A copy of the unit whose ExecStart runs `binary` (verify checks that it exists)."""
    path = os.path.join(tmp, "broker-node.service")
    with open(unit) as f:
        text = f.read()
    text = re.sub(r"^ExecStart=\S+", "ExecStart=" + binary, text, flags=re.M)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_systemd_analyze(unit, binary, tmp):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        print("skip systemd-analyze: not installed", flush=True)
        return
    copy = with_binary(unit, binary, tmp)
    proc = subprocess.run([tool, "verify", "--man=no", copy], capture_output=True, text=True,
                          timeout=60)
    check(proc.returncode == 0 and not proc.stderr.strip(),
          "systemd-analyze verify: %d %s" % (proc.returncode, proc.stderr))
    proc = subprocess.run([tool, "security", "--offline=true", copy], capture_output=True,
                          text=True, timeout=60)
    found = re.search(r"Overall exposure level for broker-node\.service: ([0-9.]+)",
                      proc.stdout)
    check(found and float(found.group(1)) <= MAX_EXPOSURE,
          "exposure at most %.1f: %s" % (MAX_EXPOSURE, proc.stdout[-300:]))
    print("ok   systemd-analyze: verified, exposure %s" % found.group(1), flush=True)


class Manager:
    """The service manager's end of $NOTIFY_SOCKET."""

    def __init__(self, tmp):
        self.path = os.path.join(tmp, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)

    def expect(self, assignment, timeout=NOTIFY_TIMEOUT):
        """Waits for a datagram holding `assignment`; returns its lines."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            check(left > 0, "no %s from the node within %.0f s" % (assignment, timeout))
            self.sock.settimeout(left)
            lines = self.sock.recv(4096).decode().split("\n")
            if assignment in lines:
                return lines

    def close(self):
        self.sock.close()


def service_config(default_config, tmp, port):
    """The installed default config with a free port and a scratch state directory."""
    with open(default_config) as f:
        text = f.read()
    check("port = 9999" in text and 'store-dir = "/var/lib/broker"' in text,
          "the default config sets the port and the state directory:\n" + text)
    text = text.replace("port = 9999", "port = %d\n  disable-ssl = true" % port)
    text = text.replace('"/var/lib/broker"', '"%s"' % tmp)
    path = os.path.join(tmp, "broker.conf")
    with open(path, "w") as f:
        f.write(text)
    return path


def start(exec_start, binary, config, tmp, manager):
    args = [binary, "--config-file=" + config] + exec_start[2:]
    env = dict(os.environ, NOTIFY_SOCKET=manager.path)
    return subprocess.Popen(args, cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_exec_start(exec_start, binary, default_config, tmp):
    port = free_port()
    config = service_config(default_config, tmp, port)
    manager = Manager(tmp)
    proc = start(exec_start, binary, config, tmp, manager)
    try:
        lines = manager.expect("READY=1")
        check("STATUS=listening on %d, 0 peers to dial" % port in lines, "status: %s" % lines)
        peer = bp.RawPeer.dial("127.0.0.1", port, bp.random_id(), ["/t"])
        check(peer.ping(b"service") is not None, "the service serves peers")
        # ExecReload's SIGHUP reloads the (absent) rules; the node and its peering stay.
        proc.send_signal(signal.SIGHUP)
        check(peer.ping(b"after reload") is not None, "the peering survives a reload")
        check(proc.poll() is None, "the node runs on after SIGHUP")
        peer.close()
        proc.send_signal(signal.SIGTERM)
        manager.expect("STOPPING=1")
        check(proc.wait(EXIT_TIMEOUT) == 0, "exit 0 after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate(timeout=EXIT_TIMEOUT)
        manager.close()
    print("ok   ExecStart under a notify harness: READY=1, a peering, a reload, STOPPING=1, "
          "exit 0",
          flush=True)


def test_bad_config(exec_start, binary, tmp):
    config = os.path.join(tmp, "bad.conf")
    with open(config, "w") as f:
        f.write("broker { port = 99999 }\n")
    os.remove(os.path.join(tmp, "notify"))
    manager = Manager(tmp)
    proc = start(exec_start, binary, config, tmp, manager)
    try:
        code = proc.wait(EXIT_TIMEOUT)
        err = proc.stderr.read().decode()
        check(code == 1 and "broker.port" in err, "exit 1 naming the key: %d %s" % (code, err))
        manager.sock.settimeout(0.0)
        try:
            data = manager.sock.recv(4096)
        except BlockingIOError:
            data = b""
        check(b"READY=1" not in data, "no READY=1 for a bad config: %s" % data)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=EXIT_TIMEOUT)
        manager.close()
    print("ok   an invalid configuration exits 1 without READY=1", flush=True)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    binary, unit, default_config = (os.path.abspath(x) for x in sys.argv[1:])
    exec_start = test_settings(unit)
    print("ok   unit settings: %s" % " ".join(exec_start), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        test_systemd_analyze(unit, binary, tmp)
        test_exec_start(exec_start, binary, default_config, tmp)
        test_bad_config(exec_start, binary, tmp)
    print("PASS")


if __name__ == "__main__":
    main()
