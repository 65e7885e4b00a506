"""The `switch_sai_thrift` names sonic-mgmt's saitests import (ttypes, sai_headers), without Thrift.

Registered as `switch_sai_thrift` (and its submodules under `switch_sai_thrift.*`) by lossless_sai.launcher.
"""

from lossless_sai.switch_sai_thrift import sai_headers, ttypes  # noqa: F401
