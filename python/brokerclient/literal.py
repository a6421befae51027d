"""Values typed on a command line, and values shown as plain JSON.

parse() reads what `python -m brokerclient publish` takes:
- a JSON v1 value object, `{"@data-type": "count", "data": 42}`, taken exactly;
- any other JSON: a number without fraction or exponent is an integer, one with is a real;
  strings, true/false, null (none), arrays (vectors) and objects (tables with string keys)
  as you would expect; JSON v1 objects may appear anywhere inside;
- otherwise a bare word in Broker's text forms: an address (`10.0.0.1`, `::1`), a subnet
  (`10.0.0.0/8`), a port (`80/tcp`), a timespan (`1500ms`, `2s`, `1.5min`), a timestamp
  (`2022-04-10T07:00:00`, UTC unless it says otherwise), and anything else is a string.

to_plain() turns a decoded value into plain JSON for reading and for tools like jq
(lossy: a count and an integer both become numbers; use the JSON v1 form to keep types).
"""

import datetime
import ipaddress
import json
import math
import re

from . import codec, times
from .types import Enum, Port
from .zeek import Event

_PORT_RE = re.compile(r"\d+/(tcp|udp|icmp|\?)\Z", re.ASCII)


def parse(text):
    """The Broker value that the command-line literal `text` stands for."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return _parse_word(text)
    return _from_json(parsed)


def _from_json(x):
    if isinstance(x, dict):
        if "@data-type" in x:
            return codec.decode(x)
        return {key: _from_json(value) for key, value in x.items()}
    if isinstance(x, list):
        return [_from_json(e) for e in x]
    return x


def _parse_word(text):
    for parse_one in (ipaddress.ip_address, _subnet, _port, _timespan, _timestamp):
        try:
            return parse_one(text)
        except ValueError:
            pass
    return text


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
