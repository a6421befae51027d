"""ws.round_trip: every data type crosses the node between two clients byte-exactly.

- the all-types message of doc/protocol/websocket.md §10.2, sent with Python's json.dumps
  spacing, arrives as the exact compact frame of §10.2, and the node's local subscriber gets
  it too;
- the ten counts of §10.4 arrive as the exact frames of the baseline, in order;
- the §10.7 Zeek event round-trips unchanged;
- single values of each type come out as §6 specifies for our server (where it differs from
  Broker: §10.6): shortest reals, UTC timestamps with 3 digits, timespan units,
  masked subnets, IPv4-mapped addresses, JSON escapes, sorted sets and tables;
- a missing or non-string topic publishes on "", and the type field is not checked.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import TestFailure, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.wsclient import (data_message, expect_silence, recv, recv_data,  # noqa: E402
                                 subscribe)
from spec_vectors import ALL_TYPES_FRAME, ALL_TYPES_INPUT, ZEEK_EVENT  # noqa: E402

def v(data_type, data):
    return '{"@data-type":"%s","data":%s}' % (data_type, data)


# (@data-type, data as sent, data as our server must write it). §6, §10.1 and §10.6.
VALUES = [
    ("none", "{}", "{}"),
    ("none", "5", "{}"),
    ("boolean", "false", "false"),
    ("count", "0", "0"),
    ("count", "18446744073709551615", "18446744073709551615"),
    ("integer", "-9223372036854775808", "-9223372036854775808"),
    ("integer", "0", "0"),
    ("real", "-7.5", "-7.5"),
    ("real", "-7.500000", "-7.5"),
    ("real", "0.1", "0.1"),
    ("real", "1e-07", "1e-07"),
    ("real", "2.0", "2.0"),
    ("real", "-0.0", "-0.0"),
    ("real", "1e+300", "1e+300"),
    ("real", "5", "5.0"),
    ("real", "NaN", "NaN"),
    ("real", "nan", "NaN"),
    ("real", "Infinity", "Infinity"),
    ("real", "inf", "Infinity"),
    ("real", "-Infinity", "-Infinity"),
    ("real", "-inf", "-Infinity"),
    ("string", '""', '""'),
    ("string", r'"a\tb\u0001\u000b\u007f/ü"', '"a\\tb\\u0001\\u000b\x7f/ü"'),
    ("string", r'"a\/b"', '"a/b"'),
    ("string", r'"\u00fc\ud83d\ude00"', '"ü😀"'),
    ("string", r'"\"q\" \\ \b\f\n\r\u0000"', r'"\"q\" \\ \b\f\n\r\u0000"'),
    ("address", '"2001:db8::"', '"2001:db8::"'),
    ("address", '"127.0.0.1"', '"127.0.0.1"'),
    ("address", '"::ffff:10.0.0.1"', '"10.0.0.1"'),
    ("address", '"fe80::1:0:0:1"', '"fe80::1:0:0:1"'),
    ("address", '"::1.2.3.4"', '"::102:304"'),
    ("address", '"2001:0:0:1:0:0:0:1"', '"2001:0:0:1::1"'),
    ("address", '"::"', '"::"'),
    ("subnet", '"255.255.255.0/24"', '"255.255.255.0/24"'),
    ("subnet", '"10.1.2.3/8"', '"10.0.0.0/8"'),
    ("subnet", '"192.168.99.7/24"', '"192.168.99.0/24"'),
    ("subnet", '"2001:db8::1/32"', '"2001:db8::/32"'),
    ("port", '"8080/tcp"', '"8080/tcp"'),
    ("port", '"53/udp"', '"53/udp"'),
    ("port", '"8/icmp"', '"8/icmp"'),
    ("port", '"0/?"', '"0/?"'),
    ("port", '"80"', '"80/tcp"'),
    ("timestamp", '"2022-04-10T07:00:00.000"', '"2022-04-10T07:00:00.000"'),
    ("timestamp", '"2022-04-10T07:00:00"', '"2022-04-10T07:00:00.000"'),
    ("timestamp", '"2022-04-10T07:00:00.5"', '"2022-04-10T07:00:00.500"'),
    ("timestamp", '"2022-04-10T07:00:00.000Z"', '"2022-04-10T07:00:00.000"'),
    ("timestamp", '"2022-04-10T09:00:00+02:00"', '"2022-04-10T07:00:00.000"'),
    ("timestamp", '"2023-04-18T14:13:14.123456789-0130"', '"2023-04-18T15:43:14.123"'),
    ("timestamp", '"2022-04-10T07:00:00."', '"2022-04-10T07:00:00.000"'),
    ("timestamp", '"1969-12-31T23:59:58.500"', '"1969-12-31T23:59:58.500"'),
    ("timespan", '"15ms"', '"15ms"'),
    ("timespan", '"1.5s"', '"1500ms"'),
    ("timespan", '"1min"', '"60s"'),
    ("timespan", '"2h"', '"7200s"'),
    ("timespan", '"1d"', '"86400s"'),
    ("timespan", '"-3ms"', '"-3ms"'),
    ("timespan", '"2000ns"', '"2us"'),
    ("timespan", '"0ns"', '"0s"'),
    ("timespan", '"-1500ns"', '"-1500ns"'),
    ("enum-value", '"foo"', '"foo"'),
    ("vector", "[]", "[]"),
    ("set", "[]", "[]"),
    ("table", "[]", "[]"),
    ("set", "[%s,%s,%s]" % (v("count", 10), v("count", 2), v("string", '"a"')),
     "[%s,%s,%s]" % (v("count", 2), v("count", 10), v("string", '"a"'))),
    ("table",
     '[{"key":%s,"value":%s},{"key":%s,"value":%s}]'
     % (v("count", 2), v("string", '"two"'), v("count", 1), v("string", '"one"')),
     '[{"key":%s,"value":%s},{"key":%s,"value":%s}]'
     % (v("count", 1), v("string", '"one"'), v("count", 2), v("string", '"two"'))),
    ("vector", "[%s,%s]" % (v("vector", "[%s]" % v("vector", "[]")), v("none", "{}")),
     "[%s,%s]" % (v("vector", "[%s]" % v("vector", "[]")), v("none", "{}"))),
]


async def value_round_trips(sender, receiver):
    """Sends every VALUES row and collects all mismatches into one failure."""
    failures = []
    for data_type, sent, expected in VALUES:
        await sender.send('{"type":"data-message","topic":"/rt","@data-type":"%s","data":%s}'
                          % (data_type, sent))
        got = await recv(receiver, what="%s %s" % (data_type, sent))
        want = data_message("/rt", data_type, expected)
        if got != want:
            failures.append("  %s %s\n    expected: %r\n    actual:   %r"
                            % (data_type, sent, want, got))
    if failures:
        raise TestFailure("%d of %d values did not round-trip as specified:\n%s"
                          % (len(failures), len(VALUES), "\n".join(failures)))


async def main(binary):
    # The node's own subscriber (-t /test -v) prints what it receives from the clients.
    with Node(binary, ["-t", "/test", "-v"], web_socket=True) as node:
        port = node.ws_port
        receiver, _ = await subscribe(port, ["/test"])
        sender, _ = await subscribe(port, [])

        await sender.send(ALL_TYPES_INPUT)
        check_eq(await recv(receiver, what="the §12.1 message"), ALL_TYPES_FRAME,
                 "the §12.1 all-types frame")
        node.wait_for(lambda l: l.startswith("received /test (-9223372036854775808, "),
                      what="the node's local subscriber printing the §12.1 message")

        # §10.4: ten counts sent with json.dumps spacing arrive as the baseline's raw frames.
        for n in range(1, 11):
            await sender.send(json.dumps({"type": "data-message", "topic": "/test",
                                          "@data-type": "count", "data": n}))
        got = [await recv(receiver, what="count %d" % n) for n in range(1, 11)]
        check_eq(got, [data_message("/test", "count", n) for n in range(1, 11)],
                 "the §12.3 frames")

        # §10.7: a Zeek event.
        zeek, _ = await subscribe(port, ["/foo"])
        await sender.send(ZEEK_EVENT)
        check_eq(await recv(zeek, what="the Zeek event"), ZEEK_EVENT, "the §11 Zeek event")

        rt, _ = await subscribe(port, ["/rt"])
        await value_round_trips(sender, rt)

        # §5.2: type is not checked; a missing or non-string topic means "".
        anything, _ = await subscribe(port, [""])
        await sender.send('{"type":"whatever","topic":"/rt","@data-type":"count","data":1}')
        await sender.send('{"topic":"/rt","@data-type":"count","data":2}')
        check_eq([await recv(rt), await recv(rt)],
                 [data_message("/rt", "count", 1), data_message("/rt", "count", 2)],
                 "messages with type \"whatever\" and without type")
        await sender.send('{"type":"data-message","@data-type":"count","data":3}')
        await sender.send('{"type":"data-message","topic":42,"@data-type":"count","data":4}')
        got = []
        while len(got) < 4:
            got.append(await recv_data(anything, what="message %d at the [\"\"] client"
                                       % (len(got) + 1)))
        check_eq(got[2:], [data_message("", "count", 3), data_message("", "count", 4)],
                 "messages without a string topic, at a client subscribed to \"\"")
        # Topics are escaped like strings (§6.3).
        await sender.send(r'{"topic":"/rt/\"q\"\u0001","@data-type":"count","data":5}')
        check_eq(await recv(rt), r'{"type":"data-message","topic":"/rt/\"q\"\u0001",'
                 r'"@data-type":"count","data":5}', "a topic with a quote and a control character")

        await expect_silence(sender, 0.3, "the sender (no error frames)")
        for c in (receiver, sender, zeek, rt, anything):
            await c.close()


run_tests([main], limit=60)
