"""Stands where sonic-mgmt's own sai_base_test.py stands in tests/saitests/py3. The runner must never load it:
the shim's sai_base_test is the one the tests get (ptf-tests/python/sonic-mgmt.sh, docs/sonic-mgmt-shim.md)."""

raise ImportError("smoke_saitests/sai_base_test.py was loaded: the directory's copy won over the shim's")
