"""Generates the gRPC stubs from the repository's proto/ when the package is built (pip install)."""

import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from lossless._protogen import generate  # noqa: E402  (no grpc import: runs before grpcio is installed)


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        # Into the build tree, so a wheel carries lossless/v1/*_pb2*.py without them living in git.
        generate(os.path.join(self.build_lib))


setup(cmdclass={"build_py": BuildWithStubs})
