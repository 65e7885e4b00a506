"""Python client of the Lossless switch (switchd's gRPC API, proto/proto/lossless/v1/switch.proto).

    import lossless
    sw = lossless.connect("unix:/run/lossless/switch.sock")    # or "tcp:127.0.0.1:50051", or $LOSSLESS_SWITCH
    ports = sw.stub.GetCounters(lossless.pb.GetCountersRequest()).ports

The stubs (`lossless.v1.switch_pb2`, `switch_pb2_grpc`) are generated from proto/ when the package is built;
in a source checkout they are generated on first import (needs grpcio-tools).
"""

from lossless.channel import EndpointError, channel_args, connect, Switch  # noqa: F401
from lossless.v1 import switch_pb2 as pb  # noqa: F401
