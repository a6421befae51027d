"""Values typed on a command line, and values shown as plain JSON.

parse() reads what `python -m brokerclient publish` takes, in the one literal syntax that
broker-store shares (doc/literals.md; both test the table in tests/data/literals.json):
- digits with the suffix `c` (`5c`) are a count;
- a word starting with `"`, `[` or `{`, and true/false/null, is JSON: strings, vectors
  (arrays), tables with string keys (objects), and JSON v1 value objects
  (`{"@data-type": "count", "data": 42}`) wherever a value may stand;
- a JSON number is an integer without fraction or exponent, a real with one;
- a bare word in Broker's text forms is that type: an address (`10.0.0.1`, `::1`), a subnet
  (`10.0.0.0/8`), a port (`80/tcp`), a timespan (`1500ms`, `2s`, `1.5min`), a timestamp
  (`2022-04-10T07:00:00`, UTC unless it says otherwise);
- any other word is a string, unless it starts like a number (a ValueError: a typo, or a
  string to quote).

to_plain() turns a decoded value into plain JSON for reading and for tools like jq
(lossy: a count and an integer both become numbers; use the JSON v1 form to keep types).
"""

import datetime
import ipaddress
import json
import math
import re

from . import codec, times
from .types import Count, Enum, Port
from .zeek import Event

_PORT_RE = re.compile(r"\d+/(tcp|udp|icmp|\?)\Z", re.ASCII)
_COUNT_RE = re.compile(r"\d+c\Z", re.ASCII)
_NUMBER_START_RE = re.compile(r"-?\d", re.ASCII)
_JSON_NUMBER_RE = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?\Z", re.ASCII)
_INTEGER_MIN, _INTEGER_MAX = -2**63, 2**63 - 1
_COUNT_MAX = 2**64 - 1


def parse(text):
    """The Broker value that the command-line literal `text` stands for (ValueError, or
    DecodeError for a bad JSON v1 object, if it stands for none)."""
    if _COUNT_RE.match(text):
        n = int(text[:-1])
        if n > _COUNT_MAX:
            raise ValueError("%s: a count must be below 2^64" % text)
        return Count(n)
    if text[:1] in ('"', "[", "{") or text in ("true", "false", "null") \
            or _JSON_NUMBER_RE.match(text):
        try:
            parsed = json.loads(text, parse_constant=_no_constant)
        except ValueError as e:
            raise ValueError("%s: not valid JSON (%s); a word that starts with '\"', '[' or "
                             "'{' must be JSON" % (text, e)) from None
        return _from_json(parsed)
    value = _parse_word(text)
    if value is not None:
        return value
    if _NUMBER_START_RE.match(text):
        raise ValueError("%s: starts like a number but is no integer, real, count (5c), "
                         "address, subnet, port (80/tcp), timespan (10s) or timestamp; "
                         "quote it for a string: '\"%s\"'" % (text, text))
    return text


def _no_constant(name):
    raise ValueError("%s is not JSON" % name)


def _from_json(x):
    if isinstance(x, dict):
        if "@data-type" in x:
            return codec.decode(x)
        return {key: _from_json(value) for key, value in x.items()}
    if isinstance(x, list):
        return [_from_json(e) for e in x]
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, int):
        if not _INTEGER_MIN <= x <= _INTEGER_MAX:
            raise ValueError("%d: out of the integer range (beyond 64 bits)" % x)
        return x
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError("%r: a real beyond the range of a double" % x)
    return x


def _parse_word(text):
    """`text` in one of Broker's text forms, or None."""
    for parse_one in (ipaddress.ip_address, _subnet, _port, _timespan, _timestamp):
        try:
            return parse_one(text)
        except ValueError:
            pass
    return None


def _subnet(text):
    if "/" not in text:
        raise ValueError(text)
    return ipaddress.ip_network(text, strict=False)


def _port(text):
    if not _PORT_RE.match(text):
        raise ValueError(text)
    return Port.parse(text)


def _timespan(text):
    return times.timespan_from_ns(times.parse_timespan(text))


def _timestamp(text):
    return times.timestamp_from_ns(times.parse_timestamp(text))


def to_plain(x):
    """`x` as plain JSON data (dicts, lists, strs, numbers, bools, None)."""
    if isinstance(x, Event):
        result = {"event": x.name, "args": [to_plain(a) for a in x.args]}
        if x.metadata is not None:
            result["metadata"] = {str(k): to_plain(v) for k, v in x.metadata.items()}
        return result
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        if math.isfinite(x):
            return x
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if isinstance(x, (Enum, Port, ipaddress.IPv4Address, ipaddress.IPv6Address,
                      ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return str(x)
    if isinstance(x, (datetime.datetime, datetime.timedelta)):
        return codec.encode(x)["data"]
    if isinstance(x, (list, tuple)):
        return [to_plain(e) for e in x]
    if codec.type_of(x) == codec.SET:
        return [to_plain(e) for e in sorted(x, key=codec.sort_key)]
    pairs = sorted(x.items(), key=lambda kv: codec.sort_key(kv[0]))
    keys = [to_plain(k) for k, _ in pairs]
    if all(isinstance(k, (str, int, float, bool)) for k in keys):
        names = [k if isinstance(k, str) else json.dumps(k) for k in keys]
        if len(set(names)) == len(names):
            return {name: to_plain(v) for name, (_, v) in zip(names, pairs)}
    return [[k, to_plain(v)] for k, (_, v) in zip(keys, pairs)]
