#!/usr/bin/env python3
"""System test: what broker-node, broker-store and broker-throughput share.

--version and --man-page (generated from the options table: every flag of --help is on
the page), --check-config and --dump-config, one address syntax (host:port, tcp://host:port,
[::1]:port) with errors that quote the bad value, and the SQLite rows of the two tools
that host masters.

Usage: cli.py <version> <man dir> <broker-node> <broker-store> <broker-throughput>
"""

import os
import re
import sqlite3
import subprocess
import sys
import tempfile

RUN_TIMEOUT = 30.0


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def run(args, stdin=subprocess.DEVNULL, cwd=None):
    proc = subprocess.run(args, stdin=stdin, capture_output=True, timeout=RUN_TIMEOUT, cwd=cwd)
    return proc.returncode, proc.stdout.decode(errors="replace"), \
        proc.stderr.decode(errors="replace")


def test_version(version, tools):
    for path in tools:
        name = os.path.basename(path)
        code, out, _ = run([path, "--version"])
        check(code == 0 and out == "%s %s\n" % (name, version), "%s --version: %r" % (name, out))


def test_man_pages(man_dir, tools):
    for path in tools:
        name = os.path.basename(path)
        code, page, _ = run([path, "--man-page"])
        check(code == 0 and page.startswith(".TH %s 1 " % name.upper()),
              "%s --man-page: %s" % (name, page[:200]))
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS",
                        "SEE ALSO"):
            check(".SH %s\n" % section in page, "%s.1 has %s" % (name, section))
        _, help_text, _ = run([path, "--help"])
        flags = re.findall(r"^  (?:-., )*(--[a-z][a-z0-9._-]*)", help_text, re.M)
        check(len(flags) > 20, "%s --help lists its flags: %s" % (name, flags))
        for flag in flags:
            check(flag.replace("-", "\\-") in page, "%s.1 lists %s" % (name, flag))
        with open(os.path.join(man_dir, name + ".1")) as f:
            check(f.read() == page, "the built %s.1 is the tool's page" % name)


def test_addresses(node, store, throughput):
    good = ["127.0.0.1:9999", "tcp://127.0.0.1:9999", "<tcp://127.0.0.1:9999>", "[::1]:9999",
            "tcp://[::1]:9999", "localhost:9999"]
    for addr in good:
        for args in ([node, "--peers", addr], [store, "--peer", addr, "s"], [throughput, addr]):
            code, out, err = run(args + ["--check-config"])
            check(code == 0 and "configuration OK" in out, "%s: %d %s" % (args, code, err))
    bad = [("127.0.0.1", "missing port"), ("tcp://h:0", "port 0"),
           ("http://h:1", 'unsupported scheme "http"'), ("::1:9999", "needs brackets"),
           ("h:70000", "1-65535")]
    for addr, why in bad:
        for args, key in (([node, "--peers", addr], "peers: "), ([store, "--peer", addr, "s"],
                                                                  "peer: ")):
            code, _, err = run(args + ["--check-config"])
            want = '%sexpected host:port or tcp://host:port, got "%s" (' % (key, addr)
            check(code == 1 and want in err and why in err, "%s: %d %s" % (args, code, err))
    code, _, err = run([throughput, "http://h:1"])
    check(code == 1 and 'got "http://h:1"' in err, "broker-throughput http://h:1: %s" % err)


def test_check_and_dump(tools):
    node, store, throughput = tools
    # Every tool answers both without its positional arguments (README), and checks them
    # when they are given.
    for args in ([node], [store], [store, "s"], [throughput], [throughput, "127.0.0.1"]):
        code, out, err = run(args + ["--dump-config", "--ttl=5"])
        check(code == 0 and re.search(r"^broker\.ttl = 5 +# command line --ttl$", out, re.M),
              "%s --dump-config: %d %s %s" % (args, code, out[:300], err))
        code, out, err = run(args + ["--check-config"])
        check(code == 0 and "configuration OK" in out, "%s --check-config: %d %s"
              % (args, code, err))
        code, out, err = run(args + ["--check-config", "--broker.ssl.certificate=/nope.pem"])
        check(code == 1 and 'broker.ssl.certificate: cannot read the file "/nope.pem"' in err,
              "%s --check-config with a missing certificate: %d %s" % (args[0], code, err))
    code, _, err = run([store, "--check-config", "--", "<$>/x"])
    check(code == 1 and "invalid store name" in err, "the tool's own checks run too: %s" % err)
    code, _, err = run([throughput, "--check-config", "http://h:1"])
    check(code == 1 and 'got "http://h:1"' in err, "and the address is checked: %s" % err)


def test_check_tls(tools):
    """--check-config loads the TLS files as the node would at start-up."""
    certs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "web_socket", "certs")

    def cert(name):
        return os.path.join(certs, name)

    good = ["--broker.ssl.certificate=" + cert("server.pem"),
            "--broker.ssl.key=" + cert("server.enc.key"), "--broker.ssl.passphrase=12345",
            "--broker.ssl.cafile=" + cert("ca.pem")]
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "text.pem")
        with open(text, "w") as f:
            f.write("not a certificate\n")
        cases = [
            (["--broker.ssl.certificate=" + text], "not a readable PEM certificate"),
            (["--broker.ssl.key="], "broker.ssl.certificate is set without broker.ssl.key"),
            (["--broker.ssl.certificate="], "broker.ssl.key is set without"),
            (["--broker.ssl.key=" + cert("client.key")], "does not belong to"),
            (["--broker.ssl.passphrase=wrong"], "does not decrypt with broker.ssl.passphrase"),
            (["--broker.ssl.passphrase="], "broker.ssl.passphrase is not set"),
            (["--broker.ssl.cafile=" + text], "broker.ssl.cafile"),
            (["--broker.ssl.cafile="], "neither broker.ssl.cafile nor broker.ssl.capath"),
        ]
        for tool in tools:
            code, out, err = run([tool, "--check-config"] + good)
            check(code == 0 and "configuration OK" in out, "%s: the test PKI passes: %d %s"
                  % (tool, code, err))
            for extra, want in cases:
                code, _, err = run([tool, "--check-config"] + good + extra)
                check(code == 1 and want in err, "%s %s: exit 1 naming %r, got %d: %s"
                      % (os.path.basename(tool), extra, want, code, err))


def journal_mode(path):
    with sqlite3.connect(path) as db:
        return db.execute("PRAGMA journal_mode").fetchone()[0]


def test_sqlite_rows(node, store):
    with tempfile.TemporaryDirectory() as tmp:
        code, out, err = run([store, "--master", "--broker.disable-ssl", "--store-backend",
                              "sqlite", "--store-dir", tmp, "--sqlite-journal-mode",
                              "Broker::SQLITE_JOURNAL_MODE_WAL", "--sqlite-synchronous",
                              "normal", "s", "put", "k", "1"])
        check(code == 0, "broker-store with SQLite: %d %s %s" % (code, out, err))
        check(journal_mode(os.path.join(tmp, "s.db")) == "wal", "broker-store set WAL")
        code, _, err = run([node, "--check-config", "--master-stores", "m", "--store-backend",
                            "sqlite", "--sqlite-journal-mode", "wal", "--sqlite-synchronous",
                            "Broker::SQLITE_SYNCHRONOUS_FULL"])
        check(code == 0, "broker-node accepts the SQLite rows: %s" % err)
        # The node hands them to its masters' backend.
        proc = subprocess.Popen([node, "--broker.disable-ssl", "--master-stores", "m",
                                 "--store-backend", "sqlite", "--store-dir", tmp,
                                 "--sqlite-journal-mode", "WAL"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            for line in proc.stdout:
                if line.decode().strip() == "store master m":
                    break
            check(journal_mode(os.path.join(tmp, "m.db")) == "wal", "broker-node set WAL")
        finally:
            proc.terminate()
            proc.communicate(timeout=RUN_TIMEOUT)
        for args, key in ((["--sqlite-synchronous", "sometimes", "--store-backend", "sqlite"],
                           "sqlite-synchronous: expected one of OFF, NORMAL, FULL, EXTRA, "
                           'got "sometimes"'),
                          (["--sqlite-journal-mode", "wal"],
                           "sqlite-journal-mode: applies only to --store-backend=sqlite")):
            for tool in ([node], [store, "s"]):
                code, _, err = run(tool + args + ["--check-config"])
                check(code == 1 and key in err, "%s %s: %d %s" % (tool, args, code, err))


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    version, man_dir = sys.argv[1], sys.argv[2]
    tools = sys.argv[3:]
    node, store, throughput = tools
    for name, test in (("--version", lambda: test_version(version, tools)),
                       ("--man-page", lambda: test_man_pages(man_dir, tools)),
                       ("addresses", lambda: test_addresses(node, store, throughput)),
                       ("--check-config/--dump-config", lambda: test_check_and_dump(tools)),
                       ("--check-config loads TLS files", lambda: test_check_tls(tools)),
                       ("SQLite rows", lambda: test_sqlite_rows(node, store))):
        test()
        print("ok   " + name, flush=True)
    print("PASS")


if __name__ == "__main__":
    main()
