"""Generated gRPC stubs of lossless.v1 (switch_pb2, switch_pb2_grpc, common_pb2)."""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))
if not os.path.isfile(os.path.join(_HERE, "switch_pb2_grpc.py")):
    # A source checkout (pip builds them into the wheel): generate next to this file, once.
    from lossless._protogen import generate

    generate(os.path.dirname(os.path.dirname(_HERE)))
