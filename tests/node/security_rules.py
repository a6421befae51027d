#!/usr/bin/env python3
"""System tests: the rules file of access control, as far as it is wired (doc/security.md).

broker.security.rules-file is loaded at start-up (an invalid or missing file ends the node
with exit code 1 and file:line:column), validated by --check-config, and reloaded on
SIGHUP without dropping connections (a broken file keeps the previous rules);
--hash-token turns a token from stdin into the line a rules file stores. Enforcement in the
message path is not wired yet, so these tests check loading, validation and reload only.

Usage: security_rules.py <path to broker-node>
"""

import hashlib
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup, run_once  # noqa: E402

EXIT_INVALID_CONFIG = 1
TOKEN = "correct horse battery staple"
TOKEN_HASH = "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest()

RULES = """# two identities
identity.dashboard {
  tokens = ["%s"]
  subscribe = ["/zeek/logs/"]
}
identity.anonymous.subscribe = ["/public/"]
""" % TOKEN_HASH

MORE_RULES = RULES + 'identity.worker.publish = ["/zeek/", "/zeek/"]\n'

BROKEN = RULES + 'identity.worker.publsh = ["/zeek/"]\n'


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def test_hash_token(binary):
    """--hash-token prints sha256: and the hex digest of the line read from stdin"""
    code, out, err = run_once(binary, ["--hash-token"], stdin_text=TOKEN + "\n")
    check(code == 0, "exit 0: %s" % err)
    check(out.strip() == TOKEN_HASH, "the hash of the token: %r" % out)
    check(TOKEN not in out + err, "the token itself is not printed")
    code, _, err = run_once(binary, ["--hash-token"], stdin_text="\n")
    check(code == EXIT_INVALID_CONFIG and "empty token" in err, "an empty token: %s" % err)


def test_check_config(binary):
    """--check-config validates the rules file and names file:line:column of an error"""
    with tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "rules.conf")
        write(rules, MORE_RULES)
        code, out, err = run_once(binary, ["--broker.security.rules-file=" + rules,
                                           "--check-config"])
        check(code == 0 and "configuration OK" in out, "valid rules: %s%s" % (out, err))
        check("%s:7:1: identity \"worker\": publish prefix \"/zeek/\" is listed twice" % rules
              in err, "the duplicate is a notice: %s" % err)
        write(rules, BROKEN)
        code, out, err = run_once(binary, ["--broker.security.rules-file=" + rules,
                                           "--check-config"])
        check(code == EXIT_INVALID_CONFIG, "exit 1 for a broken file, got %d" % code)
        check("%s:7:1: identity \"worker\": unknown field \"publsh\" (did you mean "
              "\"publish\"?)" % rules in err, "the error: %s" % err)
        write(rules, 'identity.d.tokens = ["%s"]\n' % TOKEN)
        code, out, err = run_once(binary, ["--broker.security.rules-file=" + rules,
                                           "--check-config"])
        check(code == EXIT_INVALID_CONFIG and "clear text" in err and TOKEN not in out + err,
              "a clear token is refused and not shown: %s" % err)


def test_start_with_invalid_or_missing_rules(binary):
    """a node with an invalid or missing rules file does not start: exit 1, naming it"""
    with tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "rules.conf")
        write(rules, BROKEN)
        code, _, err = run_once(binary, ["--broker.disable-ssl",
                                         "--broker.security.rules-file=" + rules])
        check(code == EXIT_INVALID_CONFIG and "%s:7:1" % rules in err, "broken: %s" % err)
        missing = os.path.join(tmp, "missing.conf")
        code, _, err = run_once(binary, ["--broker.disable-ssl",
                                         "--broker.security.rules-file=" + missing])
        check(code == EXIT_INVALID_CONFIG and missing in err, "missing: %s" % err)


def test_sighup_reloads_without_dropping_peers(binary):
    """SIGHUP reloads the rules; a broken file keeps the old ones; peerings stay up"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "rules.conf")
        write(rules, RULES)
        node = cleanup.add(Node(binary, ["-t", "/t", "-v", "--listen-address=127.0.0.1",
                                         "--broker.security.rules-file=" + rules], "node"))
        node.wait_for(lambda l: "security: rules from %s: 2 identities, 2 rules" % rules in l,
                      what="the loaded rules", stderr=True)
        other = cleanup.add(Node(binary, ["-t", "/t", "-v", "--peers", peer_uri(node.port)],
                                 "other"))
        node.wait_for(is_status("peer_added"), what="the peering")
        write(rules, MORE_RULES)
        node.send_signal(signal.SIGHUP)
        node.wait_for(lambda l: "security: rules from %s: 3 identities, 3 rules" % rules in l,
                      what="the reloaded rules", stderr=True)
        write(rules, BROKEN)
        node.send_signal(signal.SIGHUP)
        node.wait_for(lambda l: "reload failed, the previous rules stay in force: %s:7:1"
                      % rules in l, what="the failed reload", stderr=True)
        time.sleep(0.5)
        check(node.alive() and other.alive(), "both nodes run on")
        check(not node.matching(is_status("peer_lost")) and not node.matching(
            is_status("peer_removed")), "the peering stayed up:\n%s" % node.describe())


def test_sighup_without_rules_file(binary):
    """SIGHUP without a rules file changes nothing and does not end the node"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-t", "/t", "--listen-address=127.0.0.1"], "node"))
        node.send_signal(signal.SIGHUP)
        node.wait_for(lambda l: "no broker.security.rules-file configured" in l,
                      what="the reload notice", stderr=True)
        time.sleep(0.3)
        check(node.alive(), "the node runs on after SIGHUP")
        check(node.stop() == 0, "SIGTERM still ends it cleanly")


if __name__ == "__main__":
    run_tests([test_hash_token, test_check_config, test_start_with_invalid_or_missing_rules,
               test_sighup_reloads_without_dropping_peers, test_sighup_without_rules_file],
              limit=90)
