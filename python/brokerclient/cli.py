"""python -m brokerclient: subscribe, publish and send Zeek events from a shell.

    python -m brokerclient subscribe ws://127.0.0.1:9997 /demo
    python -m brokerclient publish ws://127.0.0.1:9997 /demo/hi 42
    python -m brokerclient event ws://127.0.0.1:9997 /zeek/ping ping '"hello"' 10.0.0.1

Exit status: 0 on success, 1 when the node cannot be reached, rejects a message or closes
the connection, 2 for bad arguments (including a value that does not parse).
"""

import argparse
import asyncio
import json
import sys

from . import aio, codec, literal
from .errors import BrokerError, DecodeError, EncodeError
from .zeek import Event

EXIT_FAILURE = 1
EXIT_USAGE = 2

VALUE_HELP = ("one word in the literal syntax broker-store shares (doc/literals.md): a JSON "
              "v1 value object such as '{\"@data-type\":\"count\",\"data\":42}', JSON "
              "(42 is an integer, 4.2 a real, \"text\", true, null, [..] a vector, {..} a "
              "table), 7c a count, or a bare address, subnet, port (80/tcp), timespan "
              "(1500ms) or timestamp (2022-04-10T07:00:00); other words are strings, but a "
              "word that starts like a number must be one")


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m brokerclient",
        description="A client for a Broker node's WebSocket API (JSON v1).")
    tls = argparse.ArgumentParser(add_help=False)
    group = tls.add_argument_group("wss:// (TLS)")
    group.add_argument("--cafile", help="CA certificate(s) to trust (default: the system's)")
    group.add_argument("--certfile", help="client certificate, for mutual TLS")
    group.add_argument("--keyfile", help="the client certificate's key")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    sub = commands.add_parser(
        "subscribe", parents=[tls],
        help="print one JSON line per message: {\"topic\": ..., \"value\": ...}")
    sub.add_argument("url", metavar="URL", help="ws://HOST:PORT or wss://HOST:PORT")
    sub.add_argument("topics", metavar="TOPIC", nargs="+", help="topic prefix")
    sub.add_argument("-n", "--count", type=int, metavar="N",
                     help="exit after N messages")
    sub.add_argument("--v1", action="store_true",
                     help="print values in JSON v1 (typed, lossless) instead of plain JSON")
    sub.add_argument("--reconnect", action="store_true",
                     help="re-connect and re-subscribe when the connection is lost")

    pub = commands.add_parser("publish", parents=[tls], help="publish one value")
    pub.add_argument("url", metavar="URL", help="ws://HOST:PORT or wss://HOST:PORT")
    pub.add_argument("topic", metavar="TOPIC")
    pub.add_argument("value", metavar="VALUE", help=VALUE_HELP)

    ev = commands.add_parser("event", parents=[tls], help="publish one Zeek event")
    ev.add_argument("url", metavar="URL", help="ws://HOST:PORT or wss://HOST:PORT")
    ev.add_argument("topic", metavar="TOPIC")
    ev.add_argument("name", metavar="NAME", help="event name, e.g. Intel::seen")
    ev.add_argument("args", metavar="ARG", nargs="*", help="an argument, like VALUE above")
    return parser


def _tls_options(args):
    return {k: getattr(args, k) for k in ("cafile", "certfile", "keyfile")
            if getattr(args, k)}


def _print_error(error):
    print("brokerclient: node error %s: %s" % (error.code, error.context), file=sys.stderr,
          flush=True)


async def _subscribe(args):
    options = _tls_options(args)
    async with aio.connect(args.url, args.topics, reconnect=args.reconnect,
                           on_error=_print_error, **options) as client:
        # Subscriptions are active once the node has acknowledged them: say so, so that a
        # script can start publishing after this line.
        print("brokerclient: subscribed to %s at %s (node %s, version %s)"
              % (json.dumps(client.topics), client.url, client.endpoint, client.version),
              file=sys.stderr, flush=True)
        received = 0
        while args.count is None or received < args.count:
            topic, value = await client.get()
            if args.v1:
                shown = codec.encode(value)
            else:
                shown = literal.to_plain(value)
            print(json.dumps({"topic": topic, "value": shown}, ensure_ascii=False),
                  flush=True)
            received += 1
    return 0


async def _publish(args, value):
    """Publishes, then closes; the node's error frames for the message arrive before its
    close frame, so a rejected message is reported."""
    errors = []
    async with aio.connect(args.url, [], on_error=errors.append,
                           **_tls_options(args)) as client:
        await client.publish(args.topic, value)
    for e in errors:
        _print_error(e)
    return EXIT_FAILURE if errors else 0


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        aio.normalize_url(args.url)
        if args.command == "publish":
            value = literal.parse(args.value)
            codec.encode_message(args.topic, value)  # report a bad value as a usage error
        elif args.command == "event":
            value = Event(args.name, [literal.parse(a) for a in args.args])
            codec.encode_message(args.topic, value)
    except (DecodeError, EncodeError, ValueError, TypeError) as e:
        print("brokerclient: invalid argument: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "subscribe":
            return asyncio.run(_subscribe(args))
        return asyncio.run(_publish(args, value))
    except KeyboardInterrupt:
        return 130
    except (BrokerError, OSError, ValueError) as e:
        print("brokerclient: %s" % e, file=sys.stderr)
        return EXIT_FAILURE
