"""The sai_base_test stand-in: a QoS-test-shaped class set up against a live switchd, as ptf would run it
(setUp, switch_init, a counter read, a hold, tearDown), and the port map formats sonic-mgmt passes."""

import json

import ptf
import ptf.testutils as testutils
import pytest

from lossless_sai import layout
from lossless_sai import sai_base_test as sbt
from lossless_sai import switch


class Probe(sbt.ThriftInterface):
    __test__ = False  # a ptf test shape, run by hand below, not collected by pytest

    def runTest(self):
        switch.switch_init(self.clients)
        counters, queues = switch.sai_thrift_read_port_counters(self.dst_client, "broadcom", switch.port_list["dst"][1])
        self.sai_thrift_port_tx_disable(self.dst_client, "broadcom", [1])
        self.sai_thrift_port_tx_enable(self.dst_client, "broadcom", [1])
        self.result = (counters, queues, self.get_dut_port(1))


@pytest.fixture(autouse=True)
def ptf_config(monkeypatch, tmp_path):
    # What ptf's command line would have set: BaseTest.setUp opens the log file named here.
    monkeypatch.setitem(ptf.config, "log_dir", None)
    monkeypatch.setitem(ptf.config, "log_file", str(tmp_path / "ptf.log"))


@pytest.fixture
def fresh_switch_module(monkeypatch):
    monkeypatch.setattr(switch, "switch_inited", 0)
    for name in ("port_list", "sai_port_list", "front_port_list"):
        monkeypatch.setattr(switch, name, {})


def test_probe_runs_against_switchd(switchd_socket, tmp_path, monkeypatch, fresh_switch_module):
    ini = tmp_path / "ports.ini"
    ini.write_text("# ptf_port@dut_port\n0@Ethernet0\n1@Ethernet4\n")
    monkeypatch.setattr(testutils, "TEST_PARAMS", {"port_map_file_ini": str(ini), "sonic_asic_type": "broadcom",
                                                   "lossless_switch": "unix:" + switchd_socket})
    probe = Probe()
    probe.setUp()
    try:
        assert probe.clients["src"] is probe.clients["dst"] is probe.client
        probe.runTest()
    finally:
        probe.tearDown()
    counters, queues, dut_port = probe.result
    assert switch.port_list["dst"] == {0: layout.port_oid(0), 1: layout.port_oid(1)}
    assert len(counters) == 18 and len(queues) == 8
    assert dut_port == "Ethernet4"
    out, err, rc = probe.exec_cmd_on_dut("localhost", "admin", "pw", ["sonic-clear", "queue", "wredcounters"])
    assert (out, rc) == ([], 1) and "sonic-clear queue wredcounters" in err[0]


def test_json_port_map_selects_the_src_dut(tmp_path):
    pm = tmp_path / "map.json"
    pm.write_text(json.dumps({
        "0": {"target_dut": [0], "asic_idx": None, "dut_port": "Ethernet0"},
        "1": {"target_dut": [0], "asic_idx": None, "dut_port": "Ethernet4"},
        "2": {"target_dut": [1], "asic_idx": None, "dut_port": "Ethernet8"},
    }))
    sbt._read_port_map({"port_map_file": str(pm), "src_dut_index": 0, "dst_dut_index": 0})
    assert sbt.interface_to_front_mapping["src"] == {"0": "Ethernet0", "1": "Ethernet4"}
    assert sbt.interface_to_front_mapping["dst"] is sbt.interface_to_front_mapping["src"]


@pytest.mark.parametrize("params, message", [
    ({}, "no ptf interface <-> switch port mapping"),
    ({"port_map_file_ini": "BAD"}, "line 1: 'eth0=Ethernet0' is not ptf_port@EthernetN"),
])
def test_bad_port_maps_are_named(params, message, tmp_path):
    if params.get("port_map_file_ini") == "BAD":
        bad = tmp_path / "bad.ini"
        bad.write_text("eth0=Ethernet0\n")
        params = {"port_map_file_ini": str(bad)}
    with pytest.raises(sbt.ShimSetupError, match=message):
        sbt._read_port_map(params)


def test_missing_switch_endpoint_is_named(tmp_path, monkeypatch):
    ini = tmp_path / "ports.ini"
    ini.write_text("0@Ethernet0\n")
    monkeypatch.delenv("LOSSLESS_SWITCH", raising=False)
    monkeypatch.setattr(testutils, "TEST_PARAMS", {"port_map_file_ini": str(ini)})
    probe = Probe()
    with pytest.raises(sbt.ShimSetupError, match="lossless_switch=unix:PATH"):
        probe.setUp()
