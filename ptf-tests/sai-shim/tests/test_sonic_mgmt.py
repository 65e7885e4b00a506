"""lossless_sai.sonic_mgmt: the lab configuration and the test params the runner hands ptf, checked against
the shipped profiles and against what sonic-mgmt's test_qos_sai.py passes (key names and shapes; numbers from
a canned `swctl qos-params --json`)."""

import os

import pytest
import yaml

from lossless_sai import layout, sonic_mgmt as sm

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def profile(name):
    with open(os.path.join(REPO, "configs", "profiles", name + ".yaml")) as f:
        return yaml.safe_load(f)


# The layout swctl qos-params --json prints (a subset of the numbers, made up).
QOS = {"qos_params": {"th": {"topo-any": {
    "100000_40m": {
        "pkts_num_leak_out": 0,
        "xoff_1": {"dscp": 3, "ecn": 1, "pg": 3, "pkts_num_trig_pfc": 6542, "pkts_num_trig_ingr_drp": 7397},
        "wm_pg_headroom": {"dscp": 3, "ecn": 1, "pg": 3, "pkts_num_trig_pfc": 6542, "pkts_num_trig_ingr_drp": 7397},
        "wm_pg_shared_lossless": {"dscp": 3, "ecn": 1, "pg": 3, "pkts_num_fill_min": 18, "pkts_num_trig_pfc": 6542,
                                  "cell_size": 208},
        "wm_q_shared_lossless": {"dscp": 3, "ecn": 1, "queue": 3, "pkts_num_fill_min": 0,
                                 "pkts_num_trig_ingr_drp": 7397, "cell_size": 208},
    },
    "xon_1": {"dscp": 3, "ecn": 1, "pg": 3, "pkts_num_trig_pfc": 6542, "pkts_num_dismiss_pfc": 10},
    "lossy_queue_1": {"dscp": 8, "ecn": 1, "pg": 0, "pkts_num_trig_egr_drp": 9000},
    "cell_size": 208,
}}}}

POOLS = ["ingress_lossless_pool", "egress_lossy_pool", "egress_lossless_pool"]


@pytest.mark.parametrize("name", ["td3", "th_balanced", "sn2700"])
def test_lab_config_puts_every_port_in_the_ipv4_vlan_untagged_and_keeps_buffers(name):
    db = profile(name)
    lab = sm.lab_config(db)
    vlan, gw = sm.ipv4_vlan(lab)
    assert (vlan, str(gw)) == ("Vlan1000", "192.168.0.1/24")
    members = sm.vlan_members(lab, vlan)
    assert len(members) >= sm.MIN_TEST_PORTS
    assert all(lab["VLAN_MEMBER"]["%s|%s" % (vlan, p)]["tagging_mode"] == "untagged" for p in members)
    for table in ("BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE", "PORT", "PORT_QOS_MAP"):
        assert lab[table] == db[table], table
    # No port is both routed and a VLAN member; no static route is left pointing through a removed subnet.
    routed = {k.split("|")[0] for k in lab.get("INTERFACE") or {}}
    assert not routed & set(members)
    assert db == profile(name), "the profile itself is not modified"


def test_five_port_profiles_give_up_their_routed_ports_and_the_routes_through_them():
    lab = sm.lab_config(profile("th_balanced"))
    assert not lab.get("INTERFACE") and not lab.get("NEIGH")
    assert lab.get("STATIC_ROUTE") == {}
    # td3 has free ports: its routed ports stay routed.
    td3 = sm.lab_config(profile("td3"))
    assert "Ethernet0|10.0.0.0/31" in td3["INTERFACE"]


def test_port_map_numbers_ports_in_natural_order():
    lines = sm.port_map_lines(profile("th_balanced"))
    assert lines == ["0@Ethernet0", "1@Ethernet4", "2@Ethernet8", "3@Ethernet12", "4@Ethernet16"]


def test_pfc_params_are_test_qos_sai_py_keys_with_ports_from_the_vlan():
    lab = sm.lab_config(profile("th_balanced"))
    p = sm.test_params("sai_qos_tests.PFCtest", lab, QOS, "/tmp/pm.ini", "unix:/tmp/sw.sock", POOLS)
    for key in ("router_mac", "sonic_asic_type", "sonic_version", "dut_asic", "hwsku", "platform_asic",
                "src_dst_asic_diff", "dscp", "ecn", "pg", "pkts_num_leak_out", "pkts_num_trig_pfc",
                "pkts_num_trig_ingr_drp", "src_port_id", "src_port_ip", "src_port_vlan", "dst_port_id",
                "dst_port_ip", "port_map_file_ini", "test_port_ids"):
        assert key in p, key
    assert (p["sonic_asic_type"], p["dut_asic"], p["router_mac"]) == ("broadcom", "th", "")
    assert (p["src_port_id"], p["src_port_ip"], p["dst_port_id"], p["dst_port_ip"]) == (0, "192.168.0.2", 1, "192.168.0.3")
    assert p["pkts_num_trig_pfc"] == 6542 and p["lossless_switch"] == "unix:/tmp/sw.sock"
    # ptf evaluates each value of the k=v;k=v string as Python.
    import ast
    parsed = {k: ast.literal_eval(v) for k, _, v in (kv.partition("=") for kv in sm.params_string(p).split(";"))}
    assert parsed == p


def test_pool_ids_are_the_shims_and_hex_strings_as_sonic_mgmt_passes_them():
    lab = sm.lab_config(profile("th_balanced"))
    p = sm.test_params("BufferPoolWatermarkTest", lab, QOS, "pm", "unix:s", POOLS)
    assert int(p["buf_pool_roid"], 0) == layout.pool_oids(POOLS)["ingress_lossless_pool"]
    assert p["pkts_num_fill_shared"] == 6542 - 1
    lossy = sm.test_params("LossyQueueTest", lab, QOS, "pm", "unix:s", POOLS)
    assert int(lossy["lossy_buf_pool_roid"], 0) == layout.pool_oids(POOLS)["egress_lossy_pool"]


def test_tests_without_figures_are_skips_naming_the_reason():
    lab = sm.lab_config(profile("th_balanced"))
    with pytest.raises(sm.Skip, match="hdrm_pool_size"):
        sm.test_params("sai_qos_tests.HdrmPoolSizeTest", lab, QOS, "pm", "unix:s", POOLS)
    with pytest.raises(sm.Skip, match="does not know"):
        sm.test_params("sai_qos_tests.WRRtest", lab, QOS, "pm", "unix:s", POOLS)
    # A test of one's own gets the basic params.
    assert sm.test_params("mine.Test", lab, QOS, "pm", "unix:s", POOLS)["src_port_id"] == 0


def test_hdrm_pool_size_ports_become_ptf_ids_and_shared_res_size_skips_as_sonic_mgmt_does():
    lab = sm.lab_config(profile("td3"))
    ports = sm.test_ports(lab)
    names = [n for _, n, _ in ports]
    qos = {"qos_params": {"td3": {"topo-any": {
        "100000_300m": dict(QOS["qos_params"]["th"]["topo-any"]["100000_40m"], hdrm_pool_size={
            "dscps": [3, 4], "ecn": 1, "pgs": [3, 4], "src_ports": [names[0]] + names[2:10],
            "dst_port": names[1], "pgs_num": 18, "pkts_num_trig_pfc": 6290, "pkts_num_hdrm_full": 362,
            "pkts_num_hdrm_partial": 182}),
        "cell_size": 256,
    }}}}
    p = sm.test_params("sai_qos_tests.HdrmPoolSizeTest", lab, qos, "pm", "unix:s", POOLS)
    assert p["src_port_ids"] == [ports[0][0]] + [i for i, _, _ in ports[2:10]]
    assert p["src_port_ips"] == [ports[0][2]] + [ip for _, _, ip in ports[2:10]]
    assert (p["dst_port_id"], p["dst_port_ip"]) == (ports[1][0], ports[1][2])
    assert (p["pgs_num"], p["pkts_num_hdrm_full"], p["pkts_num_hdrm_partial"]) == (18, 362, 182)
    assert p["testbed_type"] == "t0" and p["pkts_num_leak_out"] == 0
    # Too few ports: swctl writes the section without source ports.
    qos["qos_params"]["td3"]["topo-any"]["100000_300m"]["hdrm_pool_size"]["src_ports"] = []
    with pytest.raises(sm.Skip, match="No enough test ports"):
        sm.test_params("sai_qos_tests.HdrmPoolSizeTest", lab, qos, "pm", "unix:s", POOLS)
    with pytest.raises(sm.Skip, match="'shared_res_size_1' is not enabled"):
        sm.test_params("sai_qos_tests.SharedResSizeTest", lab, qos, "pm", "unix:s", POOLS)


def test_a_profile_without_an_ipv4_vlan_is_refused_by_name():
    db = profile("th_balanced")
    db["VLAN_INTERFACE"] = {}
    with pytest.raises(sm.ProfileError, match="IPv4 VLAN_INTERFACE"):
        sm.lab_config(db)
