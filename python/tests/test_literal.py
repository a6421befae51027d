"""Unit tests of the command line's literals and plain-JSON output."""

import datetime
import ipaddress
import unittest

from brokerclient import Count, EncodeError, Enum, Event, Port, Table, Timespan, literal
from brokerclient.errors import DecodeError

UTC = datetime.timezone.utc


class Literals(unittest.TestCase):

    def test_json_v1_objects_are_taken_exactly(self):
        self.assertIs(type(literal.parse('{"@data-type":"count","data":42}')), Count)
        self.assertEqual(literal.parse('{"@data-type":"enum-value","data":"x"}'), Enum("x"))
        self.assertEqual(literal.parse('[{"@data-type":"count","data":1}, "a"]'),
                         [Count(1), "a"])

    def test_plain_json(self):
        self.assertIs(type(literal.parse("42")), int)
        self.assertEqual(literal.parse("4.5"), 4.5)
        self.assertEqual(literal.parse('"10.0.0.1"'), "10.0.0.1")  # quoted: a string
        self.assertEqual(literal.parse("true"), True)
        self.assertIsNone(literal.parse("null"))
        self.assertEqual(literal.parse('{"a": [1, 2]}'), {"a": [1, 2]})

    def test_bare_words_in_brokers_text_forms(self):
        self.assertEqual(literal.parse("10.0.0.1"), ipaddress.ip_address("10.0.0.1"))
        self.assertEqual(literal.parse("::1"), ipaddress.ip_address("::1"))
        self.assertEqual(literal.parse("10.0.0.0/8"), ipaddress.ip_network("10.0.0.0/8"))
        self.assertEqual(literal.parse("80/tcp"), Port(80, "tcp"))
        self.assertEqual(literal.parse("1500ms"), datetime.timedelta(milliseconds=1500))
        self.assertEqual(literal.parse("1500ns"), Timespan(1500))
        self.assertEqual(literal.parse("2022-04-10T07:00:00"),
                         datetime.datetime(2022, 4, 10, 7, tzinfo=UTC))
        self.assertEqual(literal.parse("hello world"), "hello world")
        self.assertEqual(literal.parse("80/sctp"), "80/sctp")

    def test_an_invalid_json_v1_object_is_an_error(self):
        self.assertRaises(DecodeError, literal.parse, '{"@data-type":"count","data":-1}')


class PlainOutput(unittest.TestCase):

    def test_scalars(self):
        self.assertEqual(literal.to_plain(Count(3)), 3)
        self.assertEqual(literal.to_plain(Enum("x")), "x")
        self.assertEqual(literal.to_plain(Port(80, "tcp")), "80/tcp")
        self.assertEqual(literal.to_plain(datetime.timedelta(seconds=2)), "2s")
        self.assertEqual(literal.to_plain(datetime.datetime(2022, 4, 10, 7, tzinfo=UTC)),
                         "2022-04-10T07:00:00.000")
        self.assertEqual(literal.to_plain(float("nan")), "NaN")

    def test_containers(self):
        self.assertEqual(literal.to_plain({"b", "a"}), ["a", "b"])
        self.assertEqual(literal.to_plain({"k": (1, Count(2))}), {"k": [1, 2]})
        self.assertEqual(literal.to_plain({Count(1): "x"}), {"1": "x"})
        self.assertEqual(literal.to_plain({(1, 2): "x"}), [[[1, 2], "x"]])
        self.assertEqual(literal.to_plain(Table([(Count(1), "a"), (1, "b")])),
                         [[1, "a"], [1, "b"]])

    def test_events(self):
        self.assertEqual(literal.to_plain(Event("ping", [Count(1)], {1: "x"})),
                         {"event": "ping", "args": [1], "metadata": {"1": "x"}})

    def test_values_without_broker_type_are_refused(self):
        self.assertRaises(EncodeError, literal.to_plain, object())


if __name__ == "__main__":
    unittest.main()
