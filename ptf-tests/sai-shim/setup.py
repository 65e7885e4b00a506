"""Generates the gRPC stubs from the repository's proto/ when the package is built (pip install)."""

import importlib.util
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))

# _protogen by path, not `import lossless`: the package's __init__ imports grpc and the stubs themselves.
_spec = importlib.util.spec_from_file_location("_lossless_protogen", os.path.join(HERE, "lossless", "_protogen.py"))
_protogen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_protogen)


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        # Into the build tree, so a wheel carries lossless/v1/*_pb2*.py without them living in git.
        _protogen.generate(self.build_lib)


setup(cmdclass={"build_py": BuildWithStubs})
