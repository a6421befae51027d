"""Failing, skipping and running the tests of a system-test script.

    def test_relay(node_bin):
        "a message published at A reaches B once"     # the docstring names the test
        check_eq(got, want, "what B received")

    run_tests([test_relay, test_restart], limit=90)           # argv: <broker-node>
    run_tests([main], limit=150, binaries=("broker-throughput", "broker-node"))
    skip_script("no zeekpy")             # a script that cannot run here at all: exit 77

Every test gets the binaries named on the command line, in the order of `binaries`. A test
is a function or a coroutine function (run with asyncio). The tests run in order; a failure
is reported and the next test runs. `limit` (seconds) bounds the whole script: a coroutine
is cancelled when the time is up, a function that returns later fails, and a watchdog
kills every process and ends the script HANG_GRACE seconds later, whatever hangs. Exit
status: 0 all passed, 1 a test failed, 2 bad usage, 77 (SKIP_CODE, ctest's
SKIP_RETURN_CODE) a test was skipped and none failed.
"""

import asyncio
import inspect
import os
import sys
import threading
import time
import traceback

SKIP_CODE = 77
USAGE_CODE = 2
# How long a hung script gets after its limit before the watchdog ends it.
HANG_GRACE = 10.0


class TestFailure(AssertionError):
    """A behaviour under test did not hold, or a process did not do what it should."""


class Skip(Exception):
    """Raised by a test that cannot run on this machine (the message says why)."""


def skip_script(reason):
    """Ends a script that cannot run on this machine at all (a module it imports is
    missing) as skipped, before any test runs."""
    print("SKIP %s: %s" % (os.path.basename(sys.argv[0]), reason), flush=True)
    sys.exit(SKIP_CODE)


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def check_eq(actual, expected, what):
    if actual != expected:
        raise TestFailure("%s:\n  expected: %r\n  actual:   %r" % (what, expected, actual))


def binaries_from_argv(names):
    """The paths on the command line, one per name in `names`; exits 2 if they are not
    that many executables."""
    paths = sys.argv[1:]
    if len(paths) != len(names) or not all(os.access(p, os.X_OK) for p in paths):
        print("usage: %s %s" % (os.path.basename(sys.argv[0]),
                                " ".join("<path to %s>" % n for n in names)), file=sys.stderr)
        sys.exit(USAGE_CODE)
    return paths


def _title(test):
    doc = (test.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else test.__name__


async def _bounded(coroutine, deadline):
    try:
        return await asyncio.wait_for(coroutine, max(0.0, deadline - time.monotonic()))
    except asyncio.TimeoutError:
        # asyncio.TimeoutError is also what a test's own wait raises: tell them apart by
        # the clock.
        if time.monotonic() >= deadline:
            raise TestFailure("the script's time limit ran out") from None
        raise


def _start_watchdog(script, limit):
    from . import procs

    def fire():
        print("FAIL %s: still running %d s after its limit of %d s; killing it"
              % (script, HANG_GRACE, limit), flush=True)
        procs.kill_all(describe=True)
        os._exit(1)

    watchdog = threading.Timer(limit + HANG_GRACE, fire)
    watchdog.daemon = True
    watchdog.start()


def run_tests(tests, limit, binaries=("broker-node",)):
    """Runs `tests` with the binaries from the command line and exits (see the module
    comment). Processes a test leaves running are killed before the next one starts."""
    from . import procs

    paths = binaries_from_argv(binaries)
    script = os.path.basename(sys.argv[0])
    procs.exit_on_signals()
    start = time.monotonic()
    deadline = start + limit
    _start_watchdog(script, limit)
    failed = skipped = 0
    for test in tests:
        name = _title(test)
        began = time.monotonic()
        try:
            check(began < deadline, "not started: the script's time limit ran out")
            if inspect.iscoroutinefunction(test):
                asyncio.run(_bounded(test(*paths), deadline))
            else:
                test(*paths)
                check(time.monotonic() < deadline, "the script's time limit ran out")
        except Skip as e:
            skipped += 1
            print("SKIP %s: %s" % (name, e), flush=True)
        except Exception as e:  # Report and go on: one failure must not hide the others.
            failed += 1
            traceback.print_exc()
            sys.stderr.flush()
            print("FAIL %s (%.1f s): %s: %s" % (name, time.monotonic() - began,
                                                 type(e).__name__, e), flush=True)
        else:
            print("ok   %s (%.1f s)" % (name, time.monotonic() - began), flush=True)
        finally:
            procs.kill_all()
    tally = "of %d test%s" % (len(tests), "" if len(tests) == 1 else "s")
    took = "(%.1f s)" % (time.monotonic() - start)
    if failed:
        print("FAIL %s: %d %s failed %s" % (script, failed, tally, took))
        sys.exit(1)
    if skipped:
        print("SKIP %s: %d %s skipped %s" % (script, skipped, tally, took))
        sys.exit(SKIP_CODE)
    print("PASS %s: all %s passed %s" % (script, tally, took))
    sys.exit(0)
