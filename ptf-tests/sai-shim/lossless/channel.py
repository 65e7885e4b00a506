"""Connecting to switchd: its endpoint syntax (as `switchd --grpc` and `swctl --switch` take it) to a grpcio
channel, with the `:authority` switchd's HTTP/2 layer accepts on Unix sockets.

grpcio (gRPC C-core) sends the percent-encoded socket path as `:authority` on `unix:` targets
(`%2Frun%2Flossless%2Fswitch.sock`); switchd's server (tonic on hyperium/h2) refuses that while decoding the
request headers (RST_STREAM PROTOCOL_ERROR, which grpcio reports as INTERNAL). grpc-go and h2's own client
send `localhost` on Unix sockets; so do we (docs/sonic-mgmt-shim.md, section 5).
"""

import os

import grpc

ENV_ENDPOINT = "LOSSLESS_SWITCH"
UNIX_AUTHORITY = "localhost"


class EndpointError(ValueError):
    pass


def channel_args(endpoint):
    """(grpcio target, channel options) for a switchd endpoint.

    Accepted: `unix:PATH`, `unix://ABS_PATH` (grpcio's and grpcurl's form), a bare absolute path,
    `tcp:HOST:PORT` (switchd's form), `HOST:PORT`, `[V6]:PORT`.
    """
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise EndpointError("switch endpoint %r: expected unix:PATH or tcp:HOST:PORT" % (endpoint,))
    ep = endpoint.strip()
    if ep.startswith("unix://"):
        path = ep[len("unix://"):]
        if not path.startswith("/"):
            raise EndpointError("switch endpoint %r: unix:// needs an absolute path (unix:///run/...)" % endpoint)
    elif ep.startswith("unix:"):
        path = ep[len("unix:"):]
    elif ep.startswith("/"):
        path = ep
    else:
        hostport = ep[len("tcp:"):] if ep.startswith("tcp:") else ep
        host, sep, port = hostport.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise EndpointError("switch endpoint %r: expected unix:PATH or tcp:HOST:PORT" % endpoint)
        return hostport, []
    if not path:
        raise EndpointError("switch endpoint %r: the socket path is empty" % endpoint)
    return "unix:" + path, [("grpc.default_authority", UNIX_AUTHORITY)]


class Switch:
    """A channel to one switchd and its `lossless.v1.Switch` stub (`.stub.GetCounters(...)`, ...)."""

    def __init__(self, endpoint):
        from lossless.v1 import switch_pb2_grpc

        self.endpoint = endpoint
        target, options = channel_args(endpoint)
        self.channel = grpc.insecure_channel(target, options=options)
        self.stub = switch_pb2_grpc.SwitchStub(self.channel)

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def connect(endpoint=None):
    """A `Switch` for `endpoint`, or for $LOSSLESS_SWITCH when it is None."""
    if endpoint is None:
        endpoint = os.environ.get(ENV_ENDPOINT)
        if not endpoint:
            raise EndpointError("no switch endpoint given and $%s is not set" % ENV_ENDPOINT)
    return Switch(endpoint)
