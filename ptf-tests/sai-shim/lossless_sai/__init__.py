"""What sonic-mgmt's saitests (tests/saitests/py3) import, served by switchd's gRPC API.

Stand-ins for sonic-mgmt's `sai_base_test`, `switch` and `switch_sai_thrift`, written on `client` (the
RPC-level methods, answered over gRPC) and `layout` (SAI's list layouts and object ids from Lossless
counters); `launcher` pre-registers them in sys.modules so ptf uses them instead of the copies in the test
directory; `sonic_mgmt` computes what sonic-mgmt's tests/qos would hand ptf. See docs/sonic-mgmt-shim.md.
"""
