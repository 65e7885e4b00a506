"""What sonic-mgmt's saitests (tests/saitests/py3) import, served by switchd's gRPC API.

Work in progress (issue 19). So far: `layout`, SAI's list layouts and object ids computed from Lossless
counters. The plan (docs/sonic-mgmt-shim.md): `sai_base_test`, `switch` and `switch_sai_thrift` modules,
pre-registered in sys.modules by a ptf launcher so ptf uses them instead of the copies in the test directory.
"""
