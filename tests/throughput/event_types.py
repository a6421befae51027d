"""Each event type (1: Zeek event, 2: conn.log write, 3: table of sets) crosses a peering
complete, in batches and with a last batch cut short by --count."""

from tp_util import Cleanup, Proc, check_eq, expect_exit, run

# Type 3 events are ~9 KB each and costly to build: fewer of them keep the test short.
EVENTS = {1: 3000, 2: 3000, 3: 300}

# 7 does not divide the counts, so the last batch is a partial one.
BATCH_SIZE = 7


def one_type(tp, event_type, events):
    with Cleanup() as c:
        server = c.add(Proc(tp, ["--server", "127.0.0.1:0", "--json", "-n", str(events)],
                            name="server"))
        port = server.listening_port()
        client = c.add(Proc(tp, ["-t", str(event_type), "-s", str(BATCH_SIZE),
                                 "-n", str(events), "--json", "127.0.0.1:%d" % port],
                            name="client -t %d" % event_type))
        expect_exit(client, 0)
        expect_exit(server, 0)
        check_eq(client.summary()["event_type"], event_type, "client event type")
        check_eq(client.summary()["events"], events, "type %d events sent" % event_type)
        check_eq(server.summary()["events"], events, "type %d events received" % event_type)


def main(tp, node):
    for event_type, events in sorted(EVENTS.items()):
        one_type(tp, event_type, events)


run(main)
