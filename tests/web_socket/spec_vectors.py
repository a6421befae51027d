"""Test vectors of doc/protocol/websocket.md §10, byte for byte."""

# §10.2, the client's input in Python's spacing (the string holds literal backslashes).
ALL_TYPES_INPUT = (
    '{"type": "data-message", "topic": "/test", "@data-type": "vector", "data": [{"@data-type": "integer", "data": -9223372036854775808}, '
    '{"@data-type": "integer", "data": 9223372036854775807}, '
    '{"@data-type": "count", "data": 0}, '
    '{"@data-type": "count", "data": 18446744073709551615}, '
    '{"@data-type": "string", "data": "Hello \\\\u003cBroker\\\\u003e!"}, '
    '{"@data-type": "none", "data": {}}, {"@data-type": "boolean", "data": true}, '
    '{"@data-type": "real", "data": -7.5}, {"@data-type": "timespan", "data": "15ms"}, '
    '{"@data-type": "enum-value", "data": "foo"}, '
    '{"@data-type": "address", "data": "2001:db8::"}, '
    '{"@data-type": "subnet", "data": "255.255.255.0/24"}, '
    '{"@data-type": "port", "data": "8080/tcp"}, '
    '{"@data-type": "set", "data": [{"@data-type": "string", "data": "bar"}, '
    '{"@data-type": "string", "data": "foo"}]}, '
    '{"@data-type": "table", "data": [{"key": {"@data-type": "string", "data": "first-name"}, '
    '"value": {"@data-type": "string", "data": "John"}}, '
    '{"key": {"@data-type": "string", "data": "last-name"}, '
    '"value": {"@data-type": "string", "data": "Doe"}}]}]}')

ALL_TYPES_FRAME = (
    '{"type":"data-message","topic":"/test","@data-type":"vector","data":[{"@data-type":"integer","data":-9223372036854775808},'
    '{"@data-type":"integer","data":9223372036854775807},{"@data-type":"count","data":0},'
    '{"@data-type":"count","data":18446744073709551615},'
    '{"@data-type":"string","data":"Hello \\\\u003cBroker\\\\u003e!"},'
    '{"@data-type":"none","data":{}},{"@data-type":"boolean","data":true},'
    '{"@data-type":"real","data":-7.5},{"@data-type":"timespan","data":"15ms"},'
    '{"@data-type":"enum-value","data":"foo"},{"@data-type":"address","data":"2001:db8::"},'
    '{"@data-type":"subnet","data":"255.255.255.0/24"},'
    '{"@data-type":"port","data":"8080/tcp"},'
    '{"@data-type":"set","data":[{"@data-type":"string","data":"bar"},'
    '{"@data-type":"string","data":"foo"}]},'
    '{"@data-type":"table","data":[{"key":{"@data-type":"string","data":"first-name"},'
    '"value":{"@data-type":"string","data":"John"}},'
    '{"key":{"@data-type":"string","data":"last-name"},'
    '"value":{"@data-type":"string","data":"Doe"}}]}]}')

# §10.7: event_1(42, "test") on /foo/bar.
ZEEK_EVENT = (
    '{"type":"data-message","topic":"/foo/bar","@data-type":"vector","data":['
    '{"@data-type":"count","data":1},{"@data-type":"count","data":1},'
    '{"@data-type":"vector","data":[{"@data-type":"string","data":"event_1"},'
    '{"@data-type":"vector","data":[{"@data-type":"integer","data":42},'
    '{"@data-type":"string","data":"test"}]}]}]}')
