"""Generated gRPC stubs of lossless.v1 (switch_pb2, switch_pb2_grpc, common_pb2)."""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _stale():
    """No stubs yet, or (in a source checkout, where proto/ is beside) stubs older than a .proto file."""
    from lossless._protogen import PROTO_ROOT, PROTOS

    stub = os.path.join(_HERE, "switch_pb2_grpc.py")
    if not os.path.isfile(stub):
        return True
    protos = [os.path.join(PROTO_ROOT, p) for p in PROTOS]
    built = os.path.getmtime(stub)
    return any(os.path.isfile(p) and os.path.getmtime(p) > built for p in protos)


if _stale():
    # A source checkout (pip builds them into the wheel): generate next to this file, again after a .proto
    # file changed (a new field would otherwise be missing).
    from lossless._protogen import generate

    generate(os.path.dirname(os.path.dirname(_HERE)))
