"""Stub generation from the repository's proto/ (build time, or on first import in a source checkout)."""

import os

# ptf-tests/sai-shim/lossless/_protogen.py -> the repository's proto/proto
PROTO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "proto", "proto"))
PROTOS = ["lossless/v1/common.proto", "lossless/v1/switch.proto"]


class StubError(Exception):
    pass


def generate(out_dir, proto_root=PROTO_ROOT):
    """Writes lossless/v1/{common,switch}_pb2{,_grpc}.py under out_dir (which holds the `lossless` package).

    protoc names the modules after the proto package (lossless.v1), so they import each other as
    `from lossless.v1 import common_pb2`: out_dir must be the directory that contains `lossless/`.
    """
    try:
        from grpc_tools import protoc
    except ImportError as e:
        raise StubError("generating the gRPC stubs needs grpcio-tools (pip install grpcio-tools): %s" % e)
    missing = [p for p in PROTOS if not os.path.isfile(os.path.join(proto_root, p))]
    if missing:
        raise StubError("proto files not found under %s: %s" % (proto_root, ", ".join(missing)))
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    os.makedirs(os.path.join(out_dir, "lossless", "v1"), exist_ok=True)
    args = ["grpc_tools.protoc", "-I" + proto_root, "-I" + include, "--python_out=" + out_dir,
            "--pyi_out=" + out_dir, "--grpc_python_out=" + out_dir] + PROTOS
    rc = protoc.main(args)
    if rc != 0:
        raise StubError("protoc failed (%d) on %s" % (rc, ", ".join(PROTOS)))
