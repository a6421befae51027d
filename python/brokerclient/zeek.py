"""Zeek's message layout on Broker: events.

Zeek sends an event as a vector `[count 1 (format), count 1 (type: event), [name, args,
metadata?]]` where `name` is a string, `args` a vector, and the optional `metadata` a vector
of `[count key, value]` pairs (key 1: the network timestamp; keys from 200 on are free for
applications). This is what Zeek's own WebSocket clients exchange and what
`broker-throughput -t 1` sends (doc/protocol/websocket.md §10.7).

    ev = Event("ping", [Count(1), "hello"], metadata={NETWORK_TIMESTAMP: datetime.now(utc)})
    client.publish("/zeek/ping", ev)

A client decodes every received message of exactly this shape to an Event.
"""

import collections.abc

from .types import Count, Vector

#: The first two elements of a Zeek message: format version 1, message type 1 (event).
FORMAT_VERSION = 1
EVENT_TYPE = 1

#: Metadata key of the network timestamp.
NETWORK_TIMESTAMP = 1
#: Metadata keys from here on are free for applications.
USER_METADATA_START = 200


def _metadata_pairs(metadata):
    items = metadata.items() if isinstance(metadata, collections.abc.Mapping) else metadata
    result = {}
    for entry in items:
        try:
            key, value = entry
        except (TypeError, ValueError):
            raise TypeError("metadata entries must be (key, value) pairs, got %r"
                            % (entry,)) from None
        if isinstance(key, bool) or not isinstance(key, int) or key < 0:
            raise TypeError("metadata keys must be non-negative ints, got %r" % (key,))
        if key in result:
            raise ValueError("duplicate metadata key %d" % key)
        result[Count(key)] = value
    return result


class Event:
    """A Zeek event: `name`, `args` (a list of Broker values) and `metadata` (a dict from
    int keys to values, or None when the event carries none)."""

    __slots__ = ("name", "args", "metadata")

    def __init__(self, name, args=(), metadata=None):
        if not isinstance(name, str):
            raise TypeError("event name must be a str, got %r" % (name,))
        self.name = name
        self.args = list(args)
        self.metadata = None if metadata is None else _metadata_pairs(metadata)

    @property
    def network_timestamp(self):
        """The network timestamp from the metadata (a datetime), or None."""
        return (self.metadata or {}).get(NETWORK_TIMESTAMP)

    def __broker_value__(self):
        content = [self.name, Vector(self.args)]
        if self.metadata is not None:
            content.append(Vector(Vector((k, v)) for k, v in self.metadata.items()))
        return Vector((Count(FORMAT_VERSION), Count(EVENT_TYPE), Vector(content)))

    @classmethod
    def from_value(cls, value):
        """The Event that the decoded Broker value `value` holds, or None if it does not
        have exactly Zeek's event layout."""
        if not (isinstance(value, tuple) and len(value) == 3
                and _is_count(value[0], FORMAT_VERSION)
                and _is_count(value[1], EVENT_TYPE)):
            return None
        content = value[2]
        if not (isinstance(content, tuple) and len(content) in (2, 3)
                and type(content[0]) is str and isinstance(content[1], tuple)):
            return None
        metadata = None
        if len(content) == 3:
            metadata = {}
            if not isinstance(content[2], tuple):
                return None
            for entry in content[2]:
                if not (isinstance(entry, tuple) and len(entry) == 2
                        and isinstance(entry[0], Count) and entry[0] not in metadata):
                    return None
                metadata[entry[0]] = entry[1]
        event = cls(content[0], content[1])
        event.metadata = metadata
        return event

    def __eq__(self, other):
        if isinstance(other, Event):
            return (self.name, self.args, self.metadata) == (other.name, other.args,
                                                             other.metadata)
        return NotImplemented

    def __repr__(self):
        extra = "" if self.metadata is None else ", metadata=%r" % (self.metadata,)
        return "Event(%r, %r%s)" % (self.name, self.args, extra)


def _is_count(x, value):
    return isinstance(x, Count) and x == value
