"""Broker's JSON v1 encoding of values and messages, both directions.

A Broker value in JSON is `{"@data-type": <type>, "data": <payload>}`; a data message is
that pair flattened into `{"type": "data-message", "topic": ..., ...}`. encode() and
decode() convert between Python values and that JSON structure (dicts and lists, as the
`json` module reads and writes them); dumps(), loads(), encode_message() and
decode_frame() work on the text.

Python -> Broker (first match wins): None -> none, bool -> boolean, Count -> count, int ->
integer, float -> real, str -> string, Enum -> enum-value, Port -> port, datetime ->
timestamp (naive means UTC), timedelta -> timespan, IPv4Address/IPv6Address -> address,
IPv4Network/IPv6Network -> subnet, list/tuple -> vector, set/frozenset/Set -> set,
dict/Table (any Mapping) -> table, and any object with a `__broker_value__()` method
(e.g. zeek.Event) -> whatever that returns.

Broker -> Python: the natural type (count -> Count, integer -> int, vector -> tuple, set ->
set, table -> dict, ...). Inside a set element or a table key, values must be hashable, so
sets come back as frozenset and tables as Table there. A set or table whose elements
Python would merge (`Count(1)` and `1`) comes back as Set / Table, so nothing is lost.

The encoder writes what the node writes: compact JSON, key order `@data-type`, `data`, sets
and tables sorted by Broker's total order (doc/protocol/binary.md §7 in the broker
repository), timestamps in UTC with 3 (or, for sub-millisecond values, 6) fraction digits,
timespans in the largest exact unit.
"""

import collections.abc
import datetime
import ipaddress
import json
import math

from .errors import DecodeError, EncodeError
from .times import (datetime_ns, format_timespan, format_timestamp, parse_timespan,
                    parse_timestamp, timespan_from_ns, timestamp_from_ns)
from .types import (COUNT_MAX, INTEGER_MAX, INTEGER_MIN, PORT_PROTOCOLS, Count, Enum, Port,
                    Set, Table, Vector, timedelta_ns)

# Broker's type tags (doc/protocol/binary.md §2), which also order values of different types.
NONE, BOOLEAN, COUNT, INTEGER, REAL, STRING, ADDRESS, SUBNET, PORT, TIMESTAMP, TIMESPAN, \
    ENUM, SET, TABLE, VECTOR = range(15)

TYPE_NAMES = ("none", "boolean", "count", "integer", "real", "string", "address", "subnet",
              "port", "timestamp", "timespan", "enum-value", "set", "table", "vector")
_TAG_OF_NAME = {name: tag for tag, name in enumerate(TYPE_NAMES)}

#: JSON nesting (objects and arrays, the message itself being level 1) that the node, like
#: Broker, accepts at most; deeper values are refused in both directions. A vector adds two
#: levels per nesting, so vectors can nest 63 deep.
MAX_DEPTH = 128


_JSON_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


# The common types, by exact type: one dict lookup instead of the isinstance chain in
# _tag() (which handles subclasses and the rest).
_EXACT_TAGS = {
    type(None): NONE, bool: BOOLEAN, Count: COUNT, int: INTEGER, float: REAL, str: STRING,
    Enum: ENUM, Port: PORT, datetime.datetime: TIMESTAMP, datetime.timedelta: TIMESPAN,
    ipaddress.IPv4Address: ADDRESS, ipaddress.IPv6Address: ADDRESS,
    ipaddress.IPv4Network: SUBNET, ipaddress.IPv6Network: SUBNET, list: VECTOR,
    tuple: VECTOR, Vector: VECTOR, set: SET, frozenset: SET, Set: SET, dict: TABLE,
    Table: TABLE,
}


class _Failure(Exception):
    """An encoding or decoding problem, with the path to it collected while unwinding."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason
        self.path = []

    def render(self, root):
        path = list(reversed(self.path))
        if len(path) > 8:  # deep paths: the ends say where
            path = path[:3] + ["..."] + path[-3:]
        return "%s%s: %s" % (root, "".join(path), self.reason)


def _fail(reason):
    raise _Failure(reason)


# -- classification ---------------------------------------------------------------------


def type_of(x):
    """The Broker type tag that `x` encodes as; raises EncodeError if it has none."""
    try:
        return _tag(x)
    except _Failure as e:
        raise EncodeError(e.render("value")) from None


def _tag(x):
    tag = _EXACT_TAGS.get(type(x))
    if tag is not None:
        return tag
    if x is None:
        return NONE
    if isinstance(x, bool):
        return BOOLEAN
    if isinstance(x, Count):
        return COUNT
    if isinstance(x, int):
        return INTEGER
    if isinstance(x, float):
        return REAL
    if isinstance(x, str):
        return STRING
    if isinstance(x, Enum):
        return ENUM
    if isinstance(x, Port):
        return PORT
    if isinstance(x, datetime.datetime):
        return TIMESTAMP
    if isinstance(x, datetime.timedelta):
        return TIMESPAN
    if isinstance(x, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return ADDRESS
    if isinstance(x, (ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return SUBNET
    if isinstance(x, (list, tuple)):
        return VECTOR
    if isinstance(x, (Set, set, frozenset)):
        return SET
    if isinstance(x, collections.abc.Mapping):
        return TABLE
    hook = getattr(type(x), "__broker_value__", None)
    if hook is not None:
        return _tag(hook(x))
    if isinstance(x, datetime.date):
        _fail("a date has no Broker type; use a datetime")
    if isinstance(x, (bytes, bytearray)):
        _fail("bytes have no JSON v1 encoding; decode them to str first")
    _fail("%s has no Broker type" % type(x).__name__)


# -- scalars ----------------------------------------------------------------------------


def _check_int(x, tag):
    if tag == COUNT:
        if not 0 <= x <= COUNT_MAX:
            _fail("count out of range 0..2**64-1: %d" % x)
    elif not INTEGER_MIN <= x <= INTEGER_MAX:
        _fail("int out of the integer range -2**63..2**63-1: %d (wrap a non-negative one "
              "in Count for a count)" % x)
    return int(x)


def _check_str(x):
    if not x.isascii():
        try:
            x.encode("utf-8")
        except UnicodeEncodeError as e:
            _fail("string is not valid Unicode (%s)" % e.reason)
    return str(x)


def _timestamp_ns(x):
    ns = datetime_ns(x)
    if not INTEGER_MIN <= ns <= INTEGER_MAX:
        _fail("timestamp outside Broker's range (years 1677 to 2262): %s" % x.isoformat())
    return ns


def _timespan_ns(x):
    ns = timedelta_ns(x)
    if not INTEGER_MIN <= ns <= INTEGER_MAX:
        _fail("timespan outside Broker's range (about +-292 years): %r" % (x,))
    return ns


def _address_bytes(x):
    if isinstance(x, ipaddress.IPv4Address):
        return b"\0" * 10 + b"\xff\xff" + x.packed
    return x.packed


def _check_address(x):
    if getattr(x, "scope_id", None):
        _fail("IPv6 zone ids have no Broker encoding: %s" % x)
    return x


def _address_text(x):
    """As the node prints it: a v4-mapped IPv6 address is the IPv4 address in Broker."""
    _check_address(x)
    mapped = getattr(x, "ipv4_mapped", None)
    return str(mapped if mapped is not None else x)


def _subnet_text(x):
    address = x.network_address
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None and x.prefixlen >= 96:
        return "%s/%d" % (mapped, x.prefixlen - 96)
    return "%s/%d" % (_address_text(address), x.prefixlen)


# -- encoding ---------------------------------------------------------------------------


def _check_depth(level, tag):
    """Fails if the value object at JSON `level` (or its `data`) nests too deeply."""
    inner = level + 1 if tag in (NONE, SET, TABLE, VECTOR) else level
    if inner > MAX_DEPTH:
        _fail("nested deeper than the %d JSON levels the node accepts" % MAX_DEPTH)


def _encode(x, depth):
    """The {"@data-type", "data"} dict for `x`, whose object is at JSON level `depth`."""
    tag = _EXACT_TAGS.get(type(x))
    if tag is None:
        hook = getattr(type(x), "__broker_value__", None)
        if hook is not None:
            return _encode(hook(x), depth)
        tag = _tag(x)
    _check_depth(depth, tag)
    if tag == NONE:
        data = {}
    elif tag == BOOLEAN:
        data = bool(x)
    elif tag in (COUNT, INTEGER):
        data = _check_int(x, tag)
    elif tag == REAL:
        data = float(x)
    elif tag == STRING:
        data = _check_str(x)
    elif tag == ENUM:
        data = _check_str(x.name)
    elif tag == PORT:
        data = str(x)
    elif tag == TIMESTAMP:
        data = format_timestamp(_timestamp_ns(x))
    elif tag == TIMESPAN:
        data = format_timespan(_timespan_ns(x))
    elif tag == ADDRESS:
        data = _address_text(x)
    elif tag == SUBNET:
        data = _subnet_text(x)
    elif tag == VECTOR:
        data = []
        for i, e in enumerate(x):
            try:
                data.append(_encode(e, depth + 2))
            except _Failure as failure:
                failure.path.append("[%d]" % i)
                raise
    elif tag == SET:
        keyed = sorted(((_at(_label(e), sort_key, e), e) for e in x), key=_first)
        _check_unique(keyed, "set element")
        data = [_at(_label(e), _encode, e, depth + 2) for _, e in keyed]
    else:
        keyed = sorted(((_at(_label(k), sort_key, k), k, v) for k, v in x.items()),
                       key=_first)
        _check_unique(keyed, "table key")
        data = [{"key": _at(_label(k), _encode, k, depth + 3),
                 "value": _at("[%s]" % _short_repr(k), _encode, v, depth + 3)}
                for _, k, v in keyed]
    return {"@data-type": TYPE_NAMES[tag], "data": data}


def _first(item):
    return item[0]


def _short_repr(x, limit=40):
    text = repr(x)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _label(element):
    """The path segment naming a set element or table key in error messages."""
    return "{%s}" % _short_repr(element)


def _at(segment, fn, x, depth=None):
    """Calls fn(x[, depth]); a failure inside gets `segment` prepended to its path."""
    try:
        return fn(x) if depth is None else fn(x, depth)
    except _Failure as e:
        e.path.append(segment)
        raise


def _check_unique(keyed, what):
    """Fails if two neighbours of the sorted (key, element, ...) tuples have equal keys."""
    for previous, current in zip(keyed, keyed[1:]):
        if previous[0] == current[0]:
            _fail("duplicate %s: %s and %s are the same Broker value"
                  % (what, _short_repr(previous[1]), _short_repr(current[1])))


def sort_key(x):
    """A key that orders values as Broker does (type tag first, then value;
    doc/protocol/binary.md §7) and is equal exactly for values Broker considers equal."""
    hook = getattr(type(x), "__broker_value__", None)
    if hook is not None:
        return sort_key(hook(x))
    tag = _tag(x)
    if tag == NONE:
        return (tag,)
    if tag in (BOOLEAN, COUNT, INTEGER):
        return (tag, _check_int(int(x), tag) if tag != BOOLEAN else int(x))
    if tag == REAL:
        # NaN after +inf, all NaNs equal (the node's own order); -0.0 == 0.0 as in Broker.
        return (tag, 1, 0.0) if math.isnan(x) else (tag, 0, float(x))
    if tag == STRING:
        return (tag, _check_str(x))  # code point order is UTF-8 byte order
    if tag == ENUM:
        return (tag, x.name)
    if tag == ADDRESS:
        return (tag, _address_bytes(_check_address(x)))
    if tag == SUBNET:
        extra = 96 if x.version == 4 else 0
        return (tag, _address_bytes(x.network_address), x.prefixlen + extra)
    if tag == PORT:
        return (tag, x.number, PORT_PROTOCOLS.index(x.protocol))
    if tag == TIMESTAMP:
        return (tag, _timestamp_ns(x))
    if tag == TIMESPAN:
        return (tag, _timespan_ns(x))
    if tag == VECTOR:
        return (tag, tuple(sort_key(e) for e in x))
    if tag == SET:
        return (tag, tuple(sorted(sort_key(e) for e in x)))
    return (tag, tuple(sorted((sort_key(k), sort_key(v)) for k, v in x.items())))


def encode(value):
    """The JSON v1 structure `{"@data-type": ..., "data": ...}` of `value`.

    Raises EncodeError naming the offending part, e.g. `value[2]{Count(1)}: ...`."""
    try:
        return _encode(value, 1)
    except _Failure as e:
        raise EncodeError(e.render("value")) from None
    except RecursionError:
        raise EncodeError("value: nested too deeply") from None


def dumps(value):
    """The compact JSON v1 text of `value`, as the node would write it."""
    return _JSON_ENCODER.encode(encode(value))


def check_topic(topic):
    """Raises EncodeError unless `topic` is a str a client may publish to."""
    if not isinstance(topic, str):
        raise EncodeError("topic must be a str, got %r" % (topic,))
    if topic.startswith("<$>"):
        raise EncodeError("topics starting with <$> are reserved for the node: %r" % topic)
    try:
        _check_str(topic)
    except _Failure as e:
        raise EncodeError(e.render("topic")) from None


def encode_message(topic, value):
    """The text of a data-message frame publishing `value` on `topic`."""
    check_topic(topic)
    message = {"type": "data-message", "topic": topic}
    message.update(encode(value))
    return _JSON_ENCODER.encode(message)


# -- decoding ---------------------------------------------------------------------------

def _expect(payload, kinds, what):
    """`payload` if it is one of `kinds` (JSON true/false count only as bool)."""
    if isinstance(payload, bool) != (kinds is bool) or not isinstance(payload, kinds):
        _fail("expected %s, got %s" % (what, json.dumps(payload)[:80]))
    return payload


def _parse(payload, parse, what):
    _expect(payload, str, "a %s string" % what)
    try:
        return parse(payload)
    except ValueError as e:
        _fail(str(e))


def _decode(obj, frozen, depth):
    """The value of the value object `obj` at JSON level `depth`."""
    if not isinstance(obj, dict):
        _fail("expected a {\"@data-type\", \"data\"} object, got %s" % json.dumps(obj)[:80])
    name = obj.get("@data-type")
    tag = _TAG_OF_NAME.get(name) if isinstance(name, str) else None
    if tag is None:
        _fail("unknown @data-type %s" % json.dumps(name))
    _check_depth(depth, tag)
    if tag == NONE:
        return None
    if "data" not in obj:
        _fail("%s without data" % name)
    payload = obj["data"]
    if tag == BOOLEAN:
        return _expect(payload, bool, "true or false")
    if tag == COUNT:
        value = _expect(payload, int, "an integer")
        if not 0 <= value <= COUNT_MAX:
            _fail("count out of range: %d" % value)
        return Count(value)
    if tag == INTEGER:
        value = _expect(payload, int, "an integer")
        if not INTEGER_MIN <= value <= INTEGER_MAX:
            _fail("integer out of range: %d" % value)
        return value
    if tag == REAL:
        value = _expect(payload, (int, float), "a number")
        try:
            return float(value)
        except OverflowError:  # an integer token beyond the double range
            return math.copysign(math.inf, value)
    if tag == STRING:
        return _expect(payload, str, "a string")
    if tag == ENUM:
        return Enum(_expect(payload, str, "a string"))
    if tag == ADDRESS:
        return _parse(payload, ipaddress.ip_address, "address")
    if tag == SUBNET:
        return _parse(payload, lambda s: ipaddress.ip_network(s, strict=False), "subnet")
    if tag == PORT:
        return _parse(payload, Port.parse, "port")
    if tag == TIMESTAMP:
        return timestamp_from_ns(_parse(payload, parse_timestamp, "timestamp"))
    if tag == TIMESPAN:
        return timespan_from_ns(_parse(payload, parse_timespan, "timespan"))
    elements = _expect(payload, list, "an array")
    if tag == VECTOR:
        return tuple(_at("[%d]" % i, lambda e: _decode(e, frozen, depth + 2), e)
                     for i, e in enumerate(elements))
    if tag == SET:
        items = [_at("{#%d}" % i, lambda e: _decode(e, True, depth + 2), e)
                 for i, e in enumerate(elements)]
        natural = frozenset(items) if frozen else set(items)
        return natural if len(natural) == len(items) else Set(items)
    pairs = [_at("{#%d}" % i, lambda e: _decode_pair(e, frozen, depth), e)
             for i, e in enumerate(elements)]
    if not frozen:
        natural = dict(pairs)
        if len(natural) == len(pairs):
            return natural
    return Table(pairs)


def _decode_pair(obj, frozen, depth):
    if not isinstance(obj, dict) or "key" not in obj or "value" not in obj:
        _fail("expected a {\"key\", \"value\"} object, got %s" % json.dumps(obj)[:80])
    key = _at(".key", lambda e: _decode(e, True, depth + 3), obj["key"])
    return key, _at(".value", lambda e: _decode(e, frozen, depth + 3), obj["value"])


def decode(obj):
    """The Python value of a JSON v1 structure `{"@data-type": ..., "data": ...}` (as read
    by json.loads). Raises DecodeError naming the offending part."""
    try:
        return _decode(obj, False, 1)
    except _Failure as e:
        raise DecodeError(e.render("value")) from None
    except RecursionError:
        raise DecodeError("value: nested too deeply") from None


def loads(text):
    """The Python value of a JSON v1 text `{"@data-type": ..., "data": ...}`."""
    return decode(_parse_json(text))


def _parse_json(text):
    try:
        return json.loads(text)
    except ValueError as e:  # JSONDecodeError, or invalid UTF-8 in bytes
        raise DecodeError("not valid JSON: %s" % e) from None
    except RecursionError:
        raise DecodeError("not valid JSON: nested too deeply") from None


def decode_frame(text):
    """Decodes one frame from the node. Returns one of
    ("data", topic, value), ("error", code, context), ("ack", endpoint, version).

    Zeek events are not recognised here (see zeek.Event.from_value)."""
    msg = _parse_json(text)
    if not isinstance(msg, dict):
        raise DecodeError("frame is not a JSON object: %s" % text[:80])
    kind = msg.get("type")
    if kind == "data-message":
        topic = msg.get("topic")
        if not isinstance(topic, str):
            raise DecodeError("data message without a string topic: %s" % text[:80])
        return ("data", topic, decode(msg))
    if kind == "error":
        return ("error", str(msg.get("code", "")), str(msg.get("context", "")))
    if kind == "ack":
        return ("ack", msg.get("endpoint"), msg.get("version"))
    raise DecodeError("unknown frame type %s: %s" % (json.dumps(kind), text[:80]))
