"""Stands where sonic-mgmt's own switch.py stands; like sai_base_test.py here, it must never be loaded."""

raise ImportError("smoke_saitests/switch.py was loaded: the directory's copy won over the shim's")
