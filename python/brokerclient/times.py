"""Broker's text forms of timestamps and timespans (doc/protocol/websocket.md §6.7, §6.8),
as integers of nanoseconds since the epoch (timestamps) or plain nanoseconds (timespans)."""

import datetime
import re
from fractions import Fraction

from .types import INTEGER_MAX, INTEGER_MIN, Timespan, timedelta_ns

UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
_NS_PER_S = 1_000_000_000


def datetime_ns(x):
    """Nanoseconds since the epoch of a datetime; a naive one is taken as UTC."""
    if x.tzinfo is None or x.utcoffset() is None:
        x = x.replace(tzinfo=UTC)
    return timedelta_ns(x - EPOCH)


def format_timestamp(ns):
    """`YYYY-MM-DDThh:mm:ss.sss` in UTC; 6 fraction digits if not whole milliseconds."""
    dt = EPOCH + datetime.timedelta(microseconds=ns // 1000)
    text = "%04d-%02d-%02dT%02d:%02d:%02d" % (dt.year, dt.month, dt.day, dt.hour,
                                             dt.minute, dt.second)
    if dt.microsecond % 1000 == 0:
        return "%s.%03d" % (text, dt.microsecond // 1000)
    return "%s.%06d" % (text, dt.microsecond)


def format_timespan(ns):
    """The node's format: the largest of ns, us, ms, s that represents `ns` exactly."""
    if ns == 0:
        return "0s"
    for unit in ("ns", "us", "ms"):
        if ns % 1000 != 0:
            return "%d%s" % (ns, unit)
        ns //= 1000
    return "%ds" % ns


_TIMESTAMP_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{0,9}))?"
    r"(Z|[+-]\d{2}(?::?\d{2})?)?\Z", re.ASCII)
_TIMESPAN_RE = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(ns|us|ms|s|min|h|d)\Z", re.ASCII)
_TIMESPAN_UNITS = {"ns": 1, "us": 1000, "ms": 10**6, "s": 10**9, "min": 60 * 10**9,
                   "h": 3600 * 10**9, "d": 86400 * 10**9}


def parse_timestamp(text):
    """Nanoseconds since the epoch of a JSON v1 timestamp (any form the node accepts:
    1-9 fraction digits, optional `Z` or numeric offset; no zone means UTC)."""
    m = _TIMESTAMP_RE.match(text)
    if not m:
        raise ValueError("not a timestamp: %r" % (text,))
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    if second > 59:
        raise ValueError("not a timestamp (second %d): %r" % (second, text))
    try:
        dt = datetime.datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        raise ValueError("not a valid date and time: %r" % (text,)) from None
    ns = timedelta_ns(dt - EPOCH) + int((m.group(7) or "").ljust(9, "0"))
    zone = m.group(8)
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        if len(digits) not in (2, 4) or int(digits[:2]) > 23 or int(digits[2:] or 0) > 59:
            raise ValueError("not a valid zone offset: %r" % (text,))
        offset = (int(digits[:2]) * 3600 + int(digits[2:] or 0) * 60) * _NS_PER_S
        ns -= offset if zone[0] == "+" else -offset
    if not INTEGER_MIN <= ns <= INTEGER_MAX:
        raise ValueError("timestamp outside Broker's range: %r" % (text,))
    return ns


def parse_timespan(text):
    """Nanoseconds of a JSON v1 timespan: `<number><unit>`, units ns, us, ms, s, min, h,
    d; a decimal fraction is allowed and truncated toward zero at the nanosecond."""
    m = _TIMESPAN_RE.match(text)
    if not m or not (m.group(2) or m.group(3)):
        raise ValueError("not a timespan: %r" % (text,))
    sign, whole, frac, unit = m.groups()
    magnitude = Fraction(int(whole or "0")) + (Fraction(int(frac), 10**len(frac))
                                               if frac else 0)
    ns = int(magnitude * _TIMESPAN_UNITS[unit])  # int() truncates toward zero
    ns = -ns if sign == "-" else ns
    if not INTEGER_MIN <= ns <= INTEGER_MAX:
        raise ValueError("timespan outside Broker's range: %r" % (text,))
    return ns


def timespan_from_ns(ns):
    """A timedelta, or a Timespan when `ns` is not a whole number of microseconds."""
    if ns % 1000 == 0:
        return datetime.timedelta(microseconds=ns // 1000)
    return Timespan(ns)


def timestamp_from_ns(ns):
    """A UTC datetime; rounded down to the microsecond (datetime's resolution)."""
    return EPOCH + datetime.timedelta(microseconds=ns // 1000)
