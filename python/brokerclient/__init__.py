"""brokerclient: a Python client for Broker's WebSocket JSON API (v1).

    import brokerclient
    with brokerclient.connect("ws://127.0.0.1:9997", ["/demo"]) as client:
        client.publish("/demo/hi", brokerclient.Count(42))
        topic, value = client.get()

brokerclient.aio has the asyncio client, brokerclient.zeek Zeek's event layout, and
brokerclient.codec the JSON v1 encoding itself. See README.md for the type table.
"""

from .client import Client, connect
from .codec import decode, dumps, encode, loads
from .errors import (BrokerError, ConnectError, ConnectionClosed, DecodeError, EncodeError,
                     NodeError)
from .types import Count, Enum, Integer, Port, Set, Table, Timespan, Vector
from .zeek import Event

__version__ = "0.1.0"

__all__ = [
    "BrokerError", "Client", "ConnectError", "ConnectionClosed", "Count", "DecodeError",
    "EncodeError", "Enum", "Event", "Integer", "NodeError", "Port", "Set", "Table",
    "Timespan", "Vector", "connect", "decode", "dumps", "encode", "loads",
]
