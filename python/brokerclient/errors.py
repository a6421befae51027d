"""The exceptions of brokerclient. All derive from BrokerError."""


class BrokerError(Exception):
    """Base of every error this package raises on purpose."""


class EncodeError(BrokerError, ValueError):
    """A Python value has no Broker encoding (unsupported type, out of range, duplicate set
    element, ...). The message names where in the value the problem is."""


class DecodeError(BrokerError, ValueError):
    """A frame or JSON value is not valid Broker JSON v1. The message names where."""


class NodeError(BrokerError):
    """An error frame from the node, e.g. for a message it could not accept.

    `code` is Broker's error-code name (e.g. "deserialization_failed"), `context` the
    node's explanation (e.g. "input #3 contained invalid data"). The connection stays open
    and usable after it."""

    def __init__(self, code, context):
        super().__init__("%s: %s" % (code, context))
        self.code = code
        self.context = context


class ConnectError(BrokerError):
    """Connecting failed: the node is unreachable, the TLS handshake failed, the server
    refused the WebSocket upgrade or the subscriptions, or answered something other than an
    ack in time. The message names the reason; `__cause__` holds the underlying error."""


class ConnectionClosed(BrokerError):
    """The connection is closed: by the node, by the network, or by close(). `code` and
    `reason` are the WebSocket close code and text when the node sent a close frame
    (None otherwise)."""

    def __init__(self, message, code=None, reason=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
