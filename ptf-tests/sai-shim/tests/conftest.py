"""Shared fixtures. Tests run against the source tree (no install needed): `python -m pytest ptf-tests/sai-shim`.

switchd_socket starts one switchd with a profile and no ports (no namespaces, no root): set LOSSLESS_SWITCHD to
the binary, or build it (cargo build --bin switchd) so that target/debug/switchd exists; else the tests that
use it are skipped.
"""

import os
import subprocess
import sys
import tempfile
import uuid

import grpc
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests import each other's fakes

from lossless.channel import channel_args  # noqa: E402

# A saitests directory for the runner's smoke test, not pytest's: its sai_base_test.py refuses to be imported.
collect_ignore = ["smoke_saitests"]

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def switchd_binary():
    path = os.environ.get("LOSSLESS_SWITCHD") or os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "debug", "switchd")
    return path if os.access(path, os.X_OK) else None


@pytest.fixture(scope="session")
def switchd_socket():
    binary = switchd_binary()
    if binary is None:
        pytest.skip("no switchd binary (set LOSSLESS_SWITCHD or build target/debug/switchd)")
    with tempfile.TemporaryDirectory(prefix="lossless-shim-") as tmp:
        sock = os.path.join(tmp, "sw.sock")
        log = open(os.path.join(tmp, "switchd.log"), "w")
        proc = subprocess.Popen([binary, "--name", "shim-" + uuid.uuid4().hex[:8],
                                 "--config", os.path.join(REPO, "configs", "profiles", "td3.yaml"),
                                 "--grpc", "unix:" + sock], stdout=log, stderr=subprocess.STDOUT)
        try:
            # Ready when a correctly configured channel connects (grpcio retries until the socket exists).
            target, options = channel_args("unix:" + sock)
            with grpc.insecure_channel(target, options=options) as ch:
                try:
                    grpc.channel_ready_future(ch).result(timeout=30)
                except grpc.FutureTimeoutError:
                    log.flush()
                    pytest.fail("switchd did not serve %s within 30 s: %s" % (sock, open(log.name).read()[-2000:]))
            yield sock
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


