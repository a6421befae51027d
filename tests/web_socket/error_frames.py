"""ws.error_frames: bad input gets an exact error frame and the connection stays open.

- doc/protocol/websocket.md §10.3, rows 1-17 in one session, frame by frame; rows 8
  (real 5), 10 (timespan 1d) and 13 (CRLF between tokens) are accepted by our server
  (doc/web-socket.md "Differences from Broker", items 2, 6, 13) and reach a subscriber
  instead;
- the btest error.py example of §10.3 yields its exact frame;
- the differences that turn Broker's silent misbehaviour into error frames: an invalid
  address (item 9), out-of-range or junk subnet lengths and ports (item 10), publishing on
  a reserved <$> topic (item 12);
- after all that, a valid message on the same connection is still delivered.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.wsclient import (data_message, error_frame, expect_silence, recv,  # noqa: E402
                                 subscribe)

def msg(data_type, data, topic="/t"):
    return '{"type":"data-message","topic":"%s","@data-type":"%s","data":%s}' % (
        topic, data_type, data)


def invalid(n):
    return error_frame("input #%d contained invalid data" % n)


def internal(n):
    return error_frame('input #%d caused an internal error -> '
                       'deserialization_failed("failed to parse data")' % n)


VALID = msg("count", "1")
assert len(VALID) == 66  # row 17's column 68 is the 'x' after one space
DUP_SET = msg("set", '[{"@data-type":"count","data":1},{"@data-type":"count","data":1}]')
DUP_TABLE = msg("table",
                '[{"key":{"@data-type":"count","data":1},"value":{"@data-type":"string","data":"a"}},'
                '{"key":{"@data-type":"count","data":1},"value":{"@data-type":"string","data":"b"}}]')
CRLF = '{"type":"data-message",\r\n"topic":"/t",\r\n"@data-type":"count",\r\n"data":1}'

# (text sent, expected error frame, or None plus the data frame a /t subscriber gets).
ROWS = [
    ("How is it going?",
     error_frame("input #1 contained malformed JSON -> unexpected character at line 1, "
                 "column 1"),
     None),
    ("[1,2]", error_frame("input #2 expected a JSON object"), None),
    (msg("count", "-1"), invalid(3), None),
    (msg("count", "1.0"), invalid(4), None),
    (msg("vector", "[1]"), invalid(5), None),
    (VALID, None, data_message("/t", "count", "1")),
    (DUP_SET, internal(7), None),
    (msg("real", "5"), None, data_message("/t", "real", "5.0")),
    (msg("phone", '"555-0123"'), invalid(9), None),
    (msg("timespan", '"1d"'), None, data_message("/t", "timespan", '"86400s"')),
    (msg("timestamp", '"2022-04-10T07:00:00.1234567890"'), invalid(11), None),
    (DUP_TABLE, internal(12), None),
    (CRLF, None, data_message("/t", "count", "1")),
    ("", error_frame("input #14 contained malformed JSON -> unexpected end of input at line 1, "
                     "column 1"),
     None),
    (msg("integer", "9223372036854775808"), invalid(15), None),
    (msg("count", "18446744073709551616"),
     error_frame("input #16 contained malformed JSON -> integer above 18446744073709551615 at "
                 "line 1, column 84"),
     None),
    (VALID + " x",
     error_frame("input #17 contained malformed JSON -> unexpected text after the JSON value "
                 "at line 1, column 68"),
     None),
    # Beyond §10.3: the differences from Broker that produce error frames.
    (msg("address", '"10.0.0.256"'), invalid(18), None),
    (msg("address", '"not an address"'), invalid(19), None),
    (msg("subnet", '"10.0.0.0/40"'), invalid(20), None),
    (msg("subnet", '"10.0.0.0/8abc"'), invalid(21), None),
    (msg("port", '"70000/tcp"'), invalid(22), None),
    (msg("port", '"80/foo"'), invalid(23), None),
    (msg("count", "7", topic="<$>/local/data/statuses"), invalid(24), None),
    ("null", error_frame("input #25 expected a JSON object"), None),
    (msg("count", "2"), None, data_message("/t", "count", "2")),
]


def broker_words(frame):
    """An error frame with its context cut to Broker's words (before our " -> " cause)."""
    x = json.loads(frame)
    x["context"] = x["context"].split(" -> ")[0] if "malformed" in x["context"] or \
        "invalid data" in x["context"] or "JSON object" in x["context"] else x["context"]
    return json.dumps(x)


async def main(binary):
    with Node(binary, web_socket=True) as node:
        port = node.ws_port
        receiver, _ = await subscribe(port, ["/t"])
        sender, _ = await subscribe(port, [])
        for text, _, _ in ROWS:
            await sender.send(text)
        expected_errors = [(n, e) for n, (_, e, _) in enumerate(ROWS, 1) if e]
        expected_data = [(n, d) for n, (_, _, d) in enumerate(ROWS, 1) if d]
        got = [await recv(sender, what="the error frame for row %d" % n)
               for n, _ in expected_errors]
        for (n, want), actual in zip(expected_errors, got):
            # Broker's words (all a client of Broker can match on), then our cause.
            check_eq(broker_words(actual), broker_words(want),
                     "the error frame for row %d (%r)" % (n, ROWS[n - 1][0]))
            if " -> " in json.loads(want)["context"]:
                check_eq(actual, want, "the cause in row %d (%r)" % (n, ROWS[n - 1][0]))
            else:
                check(" -> " in json.loads(actual)["context"],
                      "row %d names the cause: %r" % (n, actual))
        got = [await recv(receiver, what="the data of row %d" % n) for n, _ in expected_data]
        for (n, want), actual in zip(expected_data, got):
            check_eq(actual, want, "what the subscriber got for row %d (%r)"
                     % (n, ROWS[n - 1][0]))
        await expect_silence(sender, 0.3, "the sender after its error frames")
        await expect_silence(receiver, 0.3, "the subscriber after the accepted rows")

        # §10.3 (btest error.py): the first message after the subscriptions is input #1.
        client, _ = await subscribe(port, ["/test"])
        await client.send('{"topic": "/test", "@data-type": "phone", "data": "555-0123"}')
        check_eq(await recv(client, what="the §12.2 error frame"),
                 '{"type":"error","code":"deserialization_failed",'
                 '"context":"input #1 contained invalid data -> unknown @data-type \\"phone\\" '
                 '(known: none, boolean, count, integer, real, string, address, subnet, port, '
                 'timestamp, timespan, enum-value, set, table, vector)"}',
                 "the §12.2 error frame, with its cause")
        # The connection stays open: its next message is published.
        await client.send(msg("count", "3"))
        check_eq(await recv(receiver, what="the message after the §12.2 error"),
                 data_message("/t", "count", "3"), "the message after the §12.2 error")

        for c in (receiver, sender, client):
            await c.close()


run_tests([main], limit=60)
