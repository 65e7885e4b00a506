"""The `switch` stand-in, called the way sai_qos_tests.py calls it, over a Client on the recording fake stub
of test_client.py (the layouts it must produce are sonic-mgmt's, docs/sonic-mgmt-shim.md section 3)."""

import sys
import types

import ptf.testutils as testutils
import pytest

from lossless_sai import client as shim_client
from lossless_sai import layout
from lossless_sai import switch

from test_client import FakeStub

# sai_qos_tests.py's import list from switch: every name must exist.
IMPORTED_BY_SAI_QOS_TESTS = """switch_init sai_thrift_create_scheduler_profile sai_thrift_clear_all_counters
    sai_thrift_read_port_counters port_list sai_thrift_read_port_watermarks sai_thrift_read_pg_counters
    sai_thrift_read_pg_drop_counters sai_thrift_read_pg_shared_watermark sai_thrift_clear_buffer_pool_watermark
    sai_thrift_read_buffer_pool_watermark sai_thrift_read_headroom_pool_watermark sai_thrift_read_queue_occupancy
    sai_thrift_read_pg_occupancy sai_thrift_read_port_voq_counters sai_thrift_get_voq_port_id""".split()
# sai_base_test.py's import list from switch.
IMPORTED_BY_SAI_BASE_TEST = """sai_thrift_port_tx_enable sai_thrift_port_tx_disable sai_thrift_credit_wd_enable
    sai_thrift_credit_wd_disable""".split()


def test_every_name_the_tests_import_exists():
    missing = [n for n in IMPORTED_BY_SAI_QOS_TESTS + IMPORTED_BY_SAI_BASE_TEST if not hasattr(switch, n)]
    assert missing == []


@pytest.fixture
def inited(monkeypatch):
    fake = FakeStub()
    c = shim_client.Client(fake)
    base = types.ModuleType("sai_base_test")
    # ptf port 0 -> Ethernet0, 1 -> Ethernet4, 2 -> Ethernet8 (keys are strings, as sai_base_test builds them)
    base.interface_to_front_mapping = {"src": {"0": "Ethernet0", "1": "Ethernet4", "2": "Ethernet8"}}
    base.interface_to_front_mapping["dst"] = base.interface_to_front_mapping["src"]
    monkeypatch.setitem(sys.modules, "sai_base_test", base)
    monkeypatch.setattr(testutils, "TEST_PARAMS", {"sonic_asic_type": "broadcom"})
    monkeypatch.setattr(switch, "switch_inited", 0)
    for name in ("port_list", "sai_port_list", "front_port_list"):
        monkeypatch.setattr(switch, name, {})
    switch.switch_init({"src": c, "dst": c})
    return fake, c


def test_switch_init_maps_ptf_ports_to_port_ids(inited):
    assert switch.port_list["src"] == {0: layout.port_oid(0), 1: layout.port_oid(1), 2: layout.port_oid(2)}
    assert switch.port_list["dst"] is switch.port_list["src"]
    assert switch.sai_port_list["src"] == [layout.port_oid(i) for i in range(3)]


def test_read_port_counters_shape_and_clear(inited):
    fake, c = inited
    fake.tx_ok["Ethernet4"] = 12
    counters, queues = switch.sai_thrift_read_port_counters(c, "broadcom", switch.port_list["src"][1])
    assert len(counters) == 18 and counters[11] == 12  # TRANSMITTED_PKTS
    assert queues == [120 + q for q in range(8)]
    switch.sai_thrift_clear_all_counters(c, "src")
    fake.tx_ok["Ethernet4"] = 15
    counters, queues = switch.sai_thrift_read_port_counters(c, "mellanox", switch.port_list["src"][1])
    assert counters[11] == 3 and counters[17] == 0
    assert queues == [30] * 8


def test_watermark_helpers(inited):
    _, c = inited
    q, pg_shared, pg_headroom = switch.sai_thrift_read_port_watermarks(c, switch.port_list["src"][2])
    assert q == [3000 + i for i in range(8)]
    assert pg_shared == [1000 + i for i in range(8)]
    assert pg_headroom == [2000 + i for i in range(8)]
    assert switch.sai_thrift_read_pg_shared_watermark(c, "broadcom", switch.port_list["src"][2]) == pg_shared
    assert switch.sai_thrift_read_pg_counters(c, switch.port_list["src"][0]) == [100 + i for i in range(8)]
    assert switch.sai_thrift_read_pg_drop_counters(c, switch.port_list["src"][0]) == [200 + i for i in range(8)]
    pool = layout.pool_oids(["ingress_lossless_pool", "egress_lossy_pool"])["ingress_lossless_pool"]
    assert switch.sai_thrift_read_buffer_pool_watermark(c, pool) == 7
    assert switch.sai_thrift_read_headroom_pool_watermark(c, pool) == 8


def test_tx_disable_takes_ptf_ports(inited):
    fake, c = inited
    switch.sai_thrift_port_tx_disable(c, "broadcom", [2, 0])
    switch.sai_thrift_port_tx_enable(c, "broadcom", [2])
    assert fake.holds == [("Ethernet8", False, True), ("Ethernet0", False, True), ("Ethernet8", False, False)]


def test_unserved_helpers_say_so(inited):
    _, c = inited
    with pytest.raises(switch.ShimConfigError, match="VOQ"):
        switch.sai_thrift_get_voq_port_id(c, 1)


def test_occupancy_helpers_take_what_switch_py_takes(inited):
    _, c = inited
    # read_queue_occupancy takes a ptf port (looked up in port_list), read_pg_occupancy a port id.
    assert switch.sai_thrift_read_queue_occupancy(c, "dst", 1) == [4000 + i for i in range(8)]
    assert switch.sai_thrift_read_pg_occupancy(c, switch.port_list["src"][2]) == [5000 + i for i in range(8)]
