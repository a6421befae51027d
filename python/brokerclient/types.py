"""Wrapper types for the Broker values that Python has no native type for.

Most Broker values map onto Python's own types (see README.md for the table). The classes
here fill the gaps and let a caller force a type where the natural mapping would pick
another one:

- `Count`, `Integer`: ints that encode as `count` / `integer` (a plain int is `integer`);
- `Port`, `Enum`: Broker's port and enum_value;
- `Timespan`: a `timedelta` that keeps nanoseconds, for timespans finer than Python's
  microseconds;
- `Set`, `Table`, `Vector`: containers that force a set, table or vector. `Set` and `Table`
  also hold what Python's `set` and `dict` cannot: unhashable elements, or elements Python
  considers equal but Broker does not (`Count(1)` and `1`, `True` and `1`). The decoder
  returns them only in that case, so that every value survives a round trip unchanged.

`Set`, `Table` and `Vector` compare by Broker's rules (`count 1` differs from `integer 1`)
against any value of the same Broker type, e.g. `Set([1, 2]) == {1, 2}`.
"""

import collections.abc
import datetime

COUNT_MAX = 2**64 - 1
INTEGER_MIN = -(2**63)
INTEGER_MAX = 2**63 - 1
PORT_MAX = 65535

#: Port protocols in Broker's order (the code is the index); "?" is "unknown".
PORT_PROTOCOLS = ("?", "tcp", "udp", "icmp")


class Count(int):
    """An unsigned 64-bit Broker `count`. Arithmetic on it yields plain ints."""

    __slots__ = ()

    def __new__(cls, value=0):
        result = super().__new__(cls, value)
        if not 0 <= result <= COUNT_MAX:
            raise ValueError("count out of range 0..2**64-1: %d" % int(result))
        return result

    def __repr__(self):
        return "Count(%d)" % int(self)

    __str__ = int.__repr__  # str() and format() show the number, not the repr


class Integer(int):
    """A signed 64-bit Broker `integer`; plain ints encode the same way, so this only
    documents intent and checks the range early."""

    __slots__ = ()

    def __new__(cls, value=0):
        result = super().__new__(cls, value)
        if not INTEGER_MIN <= result <= INTEGER_MAX:
            raise ValueError("integer out of range -2**63..2**63-1: %d" % int(result))
        return result

    def __repr__(self):
        return "Integer(%d)" % int(self)

    __str__ = int.__repr__  # str() and format() show the number, not the repr


class Port:
    """A transport-layer port: `Port(80, "tcp")`. Protocols: tcp, udp, icmp, or "?" for
    unknown ("unknown" is accepted as a synonym)."""

    __slots__ = ("number", "protocol")

    def __init__(self, number, protocol="tcp"):
        if isinstance(number, bool) or not isinstance(number, int):
            raise TypeError("port number must be an int, got %r" % (number,))
        if not 0 <= number <= PORT_MAX:
            raise ValueError("port number out of range 0..65535: %d" % number)
        if protocol == "unknown":
            protocol = "?"
        if protocol not in PORT_PROTOCOLS:
            raise ValueError("port protocol must be tcp, udp, icmp or ?, got %r" % (protocol,))
        object.__setattr__(self, "number", int(number))
        object.__setattr__(self, "protocol", protocol)

    def __setattr__(self, name, value):
        raise AttributeError("Port is immutable")

    @classmethod
    def parse(cls, text):
        """Parses `"80/tcp"`; a bare number means tcp, as in Broker. Raises ValueError."""
        number, slash, protocol = text.partition("/")
        if not number.isdigit() or not number.isascii():
            raise ValueError("not a port: %r" % (text,))
        return cls(int(number), protocol if slash else "tcp")

    def _key(self):
        return (self.number, PORT_PROTOCOLS.index(self.protocol))

    def __eq__(self, other):
        if isinstance(other, Port):
            return self._key() == other._key()
        return NotImplemented

    def __lt__(self, other):
        if isinstance(other, Port):
            return self._key() < other._key()
        return NotImplemented

    def __hash__(self):
        return hash((Port, self.number, self.protocol))

    def __str__(self):
        return "%d/%s" % (self.number, self.protocol)

    def __repr__(self):
        return "Port(%d, %r)" % (self.number, self.protocol)


class Enum:
    """A Broker `enum_value`, e.g. `Enum("Conn::LOG")`. Unlike a string of the same text,
    it encodes as `enum-value`; it is never equal to a str."""

    __slots__ = ("name",)

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError("enum name must be a str, got %r" % (name,))
        object.__setattr__(self, "name", name)

    def __setattr__(self, name, value):
        raise AttributeError("Enum is immutable")

    def __eq__(self, other):
        if isinstance(other, Enum):
            return self.name == other.name
        return NotImplemented

    def __lt__(self, other):
        if isinstance(other, Enum):
            return self.name < other.name
        return NotImplemented

    def __hash__(self):
        return hash((Enum, self.name))

    def __str__(self):
        return self.name

    def __repr__(self):
        return "Enum(%r)" % self.name


def timedelta_ns(x):
    """The exact number of nanoseconds in a timedelta (or Timespan)."""
    if isinstance(x, Timespan):
        return x.nanoseconds
    return ((x.days * 86400 + x.seconds) * 1_000_000 + x.microseconds) * 1000


class Timespan(datetime.timedelta):
    """A timedelta that keeps Broker's nanosecond resolution: `Timespan(1500)` is 1.5 µs.

    The decoder returns it only for timespans that are not whole microseconds (others are
    plain timedeltas). As a timedelta it is rounded down to the microsecond; arithmetic
    yields plain timedeltas. It compares by its exact nanoseconds."""

    __slots__ = ("_ns",)

    def __new__(cls, nanoseconds):
        if isinstance(nanoseconds, bool) or not isinstance(nanoseconds, int):
            raise TypeError("Timespan takes an int of nanoseconds, got %r" % (nanoseconds,))
        self = super().__new__(cls, microseconds=nanoseconds // 1000)
        self._ns = nanoseconds
        return self

    @property
    def nanoseconds(self):
        return self._ns

    def __eq__(self, other):
        if isinstance(other, datetime.timedelta):
            return self._ns == timedelta_ns(other)
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        # Equal to a plain timedelta only when whole microseconds: hash like one then.
        if self._ns % 1000 == 0:
            return datetime.timedelta.__hash__(self)
        return hash((Timespan, self._ns))

    def __reduce__(self):
        return (Timespan, (self._ns,))

    def __repr__(self):
        return "Timespan(%d)" % self._ns

    __str__ = __repr__  # timedelta's text would hide the nanoseconds


def _broker_key(x):
    from .codec import sort_key  # the order lives with the codec; imported late (cycle)
    return sort_key(x)


class Vector(tuple):
    """Forces a Broker `vector` (lists and tuples already encode as one)."""

    __slots__ = ()

    def __repr__(self):
        return "Vector(%s)" % tuple.__repr__(self)


class Set(collections.abc.Set):
    """A Broker `set` that keeps every element, also ones Python cannot hash or considers
    equal to another element. Immutable and hashable (if its elements can be keyed)."""

    __slots__ = ("_items",)

    def __init__(self, items=()):
        self._items = tuple(items)

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __contains__(self, x):
        try:
            key = _broker_key(x)
        except (TypeError, ValueError):
            return False
        return any(_broker_key(item) == key for item in self._items)

    def _keys(self):
        return sorted(_broker_key(x) for x in self._items)

    def __eq__(self, other):
        if isinstance(other, (Set, set, frozenset)):
            try:
                return self._keys() == sorted(_broker_key(x) for x in other)
            except (TypeError, ValueError):
                return False
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash((Set, tuple(self._keys())))

    def __repr__(self):
        return "Set(%r)" % (list(self._items),)

    @classmethod
    def _from_iterable(cls, it):
        return cls(it)


class Table(collections.abc.Mapping):
    """A Broker `table` as an ordered list of (key, value) pairs: keeps keys that Python
    cannot hash or considers equal. Immutable; hashable if its contents can be keyed.
    Lookup compares keys by Broker's rules."""

    __slots__ = ("_pairs",)

    def __init__(self, pairs=()):
        if isinstance(pairs, collections.abc.Mapping):
            pairs = pairs.items()
        self._pairs = tuple((k, v) for k, v in pairs)

    def __getitem__(self, key):
        try:
            wanted = _broker_key(key)
        except (TypeError, ValueError):
            raise KeyError(key) from None
        for k, v in self._pairs:
            if _broker_key(k) == wanted:
                return v
        raise KeyError(key)

    def __iter__(self):
        return (k for k, _ in self._pairs)

    def __len__(self):
        return len(self._pairs)

    def items(self):
        """The (key, value) pairs, in order (every pair, even of keys Python deems equal)."""
        return list(self._pairs)

    def values(self):
        return [v for _, v in self._pairs]

    def _keys(self):
        return sorted((_broker_key(k), _broker_key(v)) for k, v in self._pairs)

    def __eq__(self, other):
        if isinstance(other, (Table, dict)):
            try:
                return self._keys() == sorted(
                    (_broker_key(k), _broker_key(v)) for k, v in other.items())
            except (TypeError, ValueError):
                return False
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash((Table, tuple(self._keys())))

    def __repr__(self):
        return "Table(%r)" % (list(self._pairs),)
