"""py.interop_zeekpy: brokerclient and zeekpy (a third-party client of the same WebSocket
API, from PyPI, written for Zeek's own server) exchange Zeek events with typed arguments
through a node, both ways; zeekpy names itself with X-Application-Name, and /v1/status
shows that name.

zeekpy needs Python >= 3.11 and websockets >= 15 (Debian bookworm has 10.4):
scripts/install-deps pip-installs both into .deps/python, and CMake puts that directory on
this test's PYTHONPATH (only this test's). Without them the test skips (exit 77), except
under CI=true, where it fails. By hand:
    PYTHONPATH=.deps/python:python python3 \\
        tests/python/interop_zeekpy.py build/broker-node/broker-node
"""

import asyncio
import datetime
import ipaddress
import json
import os
import sys
import threading
import urllib.request
import time

import harness  # noqa: F401  (the paths of brokertest and brokerclient)
from brokertest.checks import check, check_eq, run_tests, skip_script
from brokertest.nodes import Node
from brokertest.wsclient import in_thread

try:
    import zeekpy
except ImportError as e:
    if os.environ.get("CI") == "true":
        print("FAIL interop_zeekpy.py: zeekpy is not installed (%s); scripts/install-deps "
              "puts it into .deps/python" % e, flush=True)
        sys.exit(1)
    skip_script("zeekpy is not installed (%s); run scripts/install-deps" % e)

from brokerclient import Count, Enum, Event, Port, aio  # noqa: E402

# zeekpy reads timestamps as naive datetimes and then applies the local time zone; pin it
# to UTC so that its values are comparable (a zeekpy issue, not the node's).
os.environ["TZ"] = "UTC"
time.tzset()

UTC = datetime.timezone.utc
TIMEOUT = 10
WHEN = datetime.datetime(2023, 4, 18, 14, 13, 14, tzinfo=UTC)


def zeekpy_receives(url, started):
    """Runs a zeekpy consumer until its handler saw one `ping`; returns the arguments."""
    received = []
    zeek = zeekpy.Zeek(url, topics=["/interop/to-zeekpy"], app_name="zeekpy-consumer")

    @zeek.on("ping")
    def ping(c: zeekpy.count, s: str, a: zeekpy.addr, p: zeekpy.port, e: zeekpy.enum,
             d: datetime.timedelta, t: datetime.datetime, tags: set[str],
             table: dict[str, zeekpy.count], v: list[int], r: float, b: bool):
        received.append([c, s, a, p, e, d, t, tags, table, v, r, b])
        zeek.stop()

    with zeek:
        started.set()
        zeek.consume(timeout=TIMEOUT)
    return received


def zeekpy_publishes(url):
    with zeekpy.Zeek(url) as zeek:
        zeek.publish("/interop/from-zeekpy", "pong", [
            zeekpy.count(8), "from zeekpy", ipaddress.ip_address("2001:db8::1"),
            zeekpy.port(53, "udp"), zeekpy.enum("Log::WRITER_ASCII"),
            datetime.timedelta(milliseconds=1500), WHEN, {"a", "b"},
            {"k": zeekpy.count(1)}, [1, 2], 0.25, False])


async def test_interop(node_bin):
    """brokerclient and zeekpy exchange Zeek events with typed arguments, both ways"""
    with Node(node_bin, web_socket=True, metrics=True) as node:
        url = node.url()
        async with aio.connect(url, ["/interop/from-zeekpy"]) as client:
            # brokerclient -> zeekpy
            started = threading.Event()
            consumer = in_thread(zeekpy_receives, url, started)
            task = asyncio.ensure_future(consumer)
            check(await in_thread(started.wait, TIMEOUT), "zeekpy did not connect")
            status = "http://127.0.0.1:%d/v1/status" % node.metrics_port
            with urllib.request.urlopen(status, timeout=TIMEOUT) as res:
                apps = [c["app"] for c in json.loads(res.read())["clients"]["items"]]
            check("zeekpy-consumer" in apps, "zeekpy's application name in /v1/status: %r"
                  % apps)
            await client.publish("/interop/to-zeekpy", Event("ping", [
                Count(7), "from brokerclient", ipaddress.ip_address("10.0.0.1"),
                Port(443, "tcp"), Enum("Intel::ADDR"), datetime.timedelta(seconds=2), WHEN,
                {"x", "y"}, {"k": Count(2)}, [3, -4], 1.5, True]))
            received = await asyncio.wait_for(task, TIMEOUT + 5)
            check_eq(len(received), 1, "events zeekpy handled")
            print("zeekpy received: %r" % (received[0],))
            c, s, a, p, e, d, t, tags, table, v, r, b = received[0]
            check_eq((c, type(c)), (7, zeekpy.count), "count at zeekpy")
            check_eq(s, "from brokerclient", "string at zeekpy")
            check_eq(a, ipaddress.ip_address("10.0.0.1"), "address at zeekpy")
            check_eq((p.port, p.proto), (443, "tcp"), "port at zeekpy")
            check_eq((e, type(e)), ("Intel::ADDR", zeekpy.enum), "enum at zeekpy")
            check_eq(d, datetime.timedelta(seconds=2), "timespan at zeekpy")
            check_eq(t, WHEN, "timestamp at zeekpy")
            check_eq((tags, table, v, r, b), ({"x", "y"}, {"k": 2}, [3, -4], 1.5, True),
                     "containers and scalars at zeekpy")

            # zeekpy -> brokerclient
            await in_thread(zeekpy_publishes, url)
            topic, event = await client.get(TIMEOUT)
            check_eq(topic, "/interop/from-zeekpy", "topic from zeekpy")
            check(isinstance(event, Event), "zeekpy's event decodes to an Event: %r" % (event,))
            check_eq(event.name, "pong", "event name")
            print("brokerclient received: %r" % (event,))
            expected = [Count(8), "from zeekpy", ipaddress.ip_address("2001:db8::1"),
                        Port(53, "udp"), Enum("Log::WRITER_ASCII"),
                        datetime.timedelta(milliseconds=1500), WHEN, {"a", "b"},
                        {"k": Count(1)}, (1, 2), 0.25, False]
            check_eq(event.args, expected, "arguments from zeekpy")
            check_eq([type(x) for x in event.args], [type(x) for x in expected],
                     "argument types from zeekpy")
            check_eq(type(event.args[8]["k"]), Count, "count inside a table from zeekpy")


run_tests([test_interop], limit=45)
