"""Endpoints to grpcio channels, and (when a switchd binary is at hand) grpcio against switchd's Unix socket.

The live tests use conftest.py's switchd_socket (one switchd, td3.yaml, no ports; skipped without a binary).
"""

import grpc
import pytest

import lossless
from lossless.channel import EndpointError, channel_args

UNIX_OPTS = [("grpc.default_authority", "localhost")]


@pytest.mark.parametrize("endpoint, target", [
    ("unix:/run/lossless/sw.sock", "unix:/run/lossless/sw.sock"),
    ("unix:///run/lossless/sw.sock", "unix:/run/lossless/sw.sock"),
    ("/run/lossless/sw.sock", "unix:/run/lossless/sw.sock"),
    ("unix:relative.sock", "unix:relative.sock"),
])
def test_unix_endpoints_get_a_localhost_authority(endpoint, target):
    assert channel_args(endpoint) == (target, UNIX_OPTS)


@pytest.mark.parametrize("endpoint, target", [
    ("tcp:127.0.0.1:50051", "127.0.0.1:50051"),
    ("10.0.0.1:9092", "10.0.0.1:9092"),
    ("tcp:[::1]:50051", "[::1]:50051"),
])
def test_tcp_endpoints_keep_grpcio_defaults(endpoint, target):
    assert channel_args(endpoint) == (target, [])


@pytest.mark.parametrize("endpoint", ["", "   ", None, "unix:", "unix://relative.sock", "tcp:host", "host:http",
                                      "tcp::50051", "h:70000"])
def test_bad_endpoints_are_refused_naming_them(endpoint):
    with pytest.raises(EndpointError, match="switch endpoint"):
        channel_args(endpoint)


def test_connect_without_endpoint_needs_the_environment(monkeypatch):
    monkeypatch.delenv("LOSSLESS_SWITCH", raising=False)
    with pytest.raises(EndpointError, match="LOSSLESS_SWITCH"):
        lossless.connect()


def test_connect_reads_counters_over_the_unix_socket(switchd_socket):
    with lossless.connect("unix:" + switchd_socket) as sw:
        reply = sw.stub.GetCounters(lossless.pb.GetCountersRequest(), timeout=10)
    # configs/profiles/td3.yaml: 32 ports Ethernet0..Ethernet124, 8 queues and 8 PGs each.
    assert [p.name for p in reply.ports][:2] == ["Ethernet0", "Ethernet4"]
    assert len(reply.ports) == 32
    assert all(len(p.queues) == 8 and len(p.pgs) == 8 for p in reply.ports)


@pytest.mark.parametrize("target", ["unix:{}", "unix://{}"])
def test_grpcio_with_default_options_is_accepted_by_switchd(switchd_socket, target):
    # grpcio sends the percent-encoded socket path as :authority (`%2Ftmp%2F...sock`), which hyperium/h2
    # refuses; switchd rewrites it below h2 (dataplane/src/server/authority). No channel options here.
    with grpc.insecure_channel(target.format(switchd_socket)) as ch:
        from lossless.v1 import switch_pb2_grpc

        reply = switch_pb2_grpc.SwitchStub(ch).GetCounters(lossless.pb.GetCountersRequest(), timeout=10)
    assert len(reply.ports) == 32
