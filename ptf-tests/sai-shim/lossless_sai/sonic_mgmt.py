"""What sonic-mgmt's tests/qos (qos_sai_base.py, test_qos_sai.py) would hand ptf, for a Lossless lab: the lab
configuration (a t0-style VLAN of test ports), the port map, and the --test-params of each saitests case, from
the profile, `swctl qos-params --json` and the running switch (pool ids). Used by
ptf-tests/python/sonic-mgmt.sh; docs/sonic-mgmt-shim.md section 8.

    python -m lossless_sai.sonic_mgmt lab-config PROFILE OUT_YAML
    python -m lossless_sai.sonic_mgmt port-map LAB_YAML OUT_INI
    python -m lossless_sai.sonic_mgmt params TEST LAB_YAML QOS_PARAMS_JSON PORT_MAP_INI SWITCH [K=V ...]

`params` prints a ptf --test-params string, or exits 3 with the reason on stderr when the test cannot run on
this profile (a skip, with the reason).
"""

import ipaddress
import json
import re
import sys

import yaml

from lossless_sai import layout

# ---- the lab configuration ------------------------------------------------------------------------------

MIN_TEST_PORTS = 4  # src, dst, dst_2, dst_3 (PFCXonTest); HdrmPoolSizeTest wants more sources


class ProfileError(Exception):
    pass


def natural_key(name):
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", name)]


def _ports(db):
    return sorted(db.get("PORT") or {}, key=natural_key)


def _key_port(key):
    return key.split("|")[0]


def ipv4_vlan(db):
    """(vlan name, gateway interface) of the first VLAN with an IPv4 VLAN_INTERFACE address."""
    for key in sorted(db.get("VLAN_INTERFACE") or {}):
        name, _, addr = key.partition("|")
        if addr and ":" not in addr:
            return name, ipaddress.ip_interface(addr)
    raise ProfileError("the profile has no VLAN with an IPv4 VLAN_INTERFACE (sonic-mgmt's t0 test ports are "
                       "members of one, e.g. Vlan1000|192.168.0.1/24)")


def vlan_members(db, vlan):
    return sorted((_key_port(k[len(vlan) + 1:]) for k in (db.get("VLAN_MEMBER") or {}) if k.startswith(vlan + "|")),
                  key=natural_key)


def lab_config(db):
    """The profile as a t0 DUT: every port of the profile an untagged member of its IPv4 VLAN, as sonic-mgmt's
    t0 test ports are (traffic between them is bridged; ARPpopulate teaches the switch their MACs and IPs).
    Ports in other VLANs and PortChannel members are left alone; a routed port loses its INTERFACE and NEIGH
    entries (and static routes through it) only when the VLAN would have fewer than MIN_TEST_PORTS members.
    Buffer, QoS and port tables are untouched."""
    db = json.loads(json.dumps(db))  # a deep copy
    vlan, _ = ipv4_vlan(db)
    members = db.setdefault("VLAN_MEMBER", {})
    in_vlan = {_key_port(k.partition("|")[2]) for k in members}
    lag = {k.partition("|")[2] for k in (db.get("PORTCHANNEL_MEMBER") or {})}
    routed = {_key_port(k) for k in (db.get("INTERFACE") or {})}
    free = [p for p in _ports(db) if p not in in_vlan and p not in lag and p not in routed]
    if len(vlan_members(db, vlan)) + len(free) < MIN_TEST_PORTS:
        free += [p for p in _ports(db) if p in routed and p not in in_vlan and p not in lag]
        gone = set(free) & routed
        addrs = set()
        for key in list(db.get("INTERFACE") or {}):
            if _key_port(key) in gone:
                if "|" in key:
                    addrs.add(ipaddress.ip_interface(key.partition("|")[2]).network)
                del db["INTERFACE"][key]
        for key in list(db.get("NEIGH") or {}):
            if _key_port(key) in gone:
                del db["NEIGH"][key]
        for prefix, fields in list((db.get("STATIC_ROUTE") or {}).items()):
            hops = [h for h in str((fields or {}).get("nexthop", "")).split(",") if h]
            if any(any(ipaddress.ip_address(h) in n for n in addrs if n.version == ipaddress.ip_address(h).version)
                   for h in hops):
                del db["STATIC_ROUTE"][prefix]
    for p in free:
        members["%s|%s" % (vlan, p)] = {"tagging_mode": "untagged"}
    for key in members:
        if key.startswith(vlan + "|"):
            members[key] = dict(members[key] or {}, tagging_mode="untagged")
    return db


def port_map_lines(db):
    """ptf port i <-> the i-th port of the profile in natural order (ptf-tests/python/run.sh's numbering)."""
    return ["%d@%s" % (i, p) for i, p in enumerate(_ports(db))]


# ---- test ports and parameters -------------------------------------------------------------------------


def _lossless_ports(db):
    out = set()
    for key, fields in (db.get("PORT_QOS_MAP") or {}).items():
        if (fields or {}).get("pfc_enable"):
            out.update(key.split(","))
    return out


def test_ports(db):
    """[(ptf port id, port name, ip)] of the VLAN members with PFC enabled, in port order: the first is
    src_port, then dst_port, dst_port_2, dst_port_3, ... Their IPs are the VLAN's host addresses from .2 on."""
    vlan, gw = ipv4_vlan(db)
    ids = {p: i for i, p in enumerate(_ports(db))}
    lossless = _lossless_ports(db)
    members = [p for p in vlan_members(db, vlan) if p in lossless]
    hosts = (h for h in gw.network.hosts() if h != gw.ip)
    return [(ids[p], p, str(next(hosts))) for p in members]


def _qos_sections(qos_json):
    """The merged sections of `swctl qos-params --json`: topo-level keys, then the speed_cable ones."""
    asics = qos_json["qos_params"]
    (asic, topos), = asics.items()
    (_, sections), = topos.items()
    merged = {}
    for key, value in sections.items():
        if re.match(r"^\d+_\d+m$", key) and isinstance(value, dict):
            continue
        merged[key] = value
    for key, value in sections.items():
        if re.match(r"^\d+_\d+m$", key) and isinstance(value, dict):
            merged.update(value)
    return asic, merged


# sonic-mgmt's `sonic_asic_type` (the DUT's asic_type fact) of the qos_params key swctl prints.
ASIC_TYPES = {"td2": "broadcom", "td3": "broadcom", "th": "broadcom", "th2": "broadcom", "th3": "broadcom",
              "th4": "broadcom", "th5": "broadcom", "spc1": "mellanox", "spc2": "mellanox", "spc3": "mellanox",
              "spc4": "mellanox", "gb": "cisco-8000", "gr": "cisco-8000"}


class Skip(Exception):
    """The test cannot run on this profile; the message says why."""


def _section(q, name, test):
    if name not in q:
        raise Skip("%s needs qos_params section %s, which `swctl qos-params` does not produce for this profile"
                   % (test, name))
    return dict(q[name])


def test_params(test, db, qos_json, port_map_file, switch, pool_names, extra=None):
    """The --test-params dict test_qos_sai.py builds for saitests case `test` (sai_qos_tests.NAME or NAME)."""
    name = test.rpartition(".")[2]
    asic, q = _qos_sections(qos_json)
    ports = test_ports(db)
    if len(ports) < 2:
        raise Skip("needs two PFC-enabled VLAN ports, the lab has %d" % len(ports))
    meta = (db.get("DEVICE_METADATA") or {}).get("localhost") or {}
    # SAI object ids of the pools; passed as hex strings, as qos_sai_base.py reads them from
    # COUNTERS_BUFFER_POOL_NAME_MAP (the tests parse them with int(x, 0)).
    pools = layout.pool_oids(pool_names)
    ids = [p[0] for p in ports]
    p = {
        # dut_test_params_qos's basicParams (tests/conftest.py) for one single-ASIC t0 DUT.
        "router_mac": "",  # t0: test traffic is bridged inside the VLAN (qos_sai_base.py dutTestParams)
        "src_server": "localhost:9092",
        "port_map_file_ini": port_map_file,
        "sonic_asic_type": ASIC_TYPES.get(asic, "broadcom"),
        "sonic_version": "SONiC.lossless",
        "src_dut_index": 0, "dst_dut_index": 0, "src_asic_index": 0, "dst_asic_index": 0,
        "dut_username": "admin", "dut_password": "",
        "platform_asic": None,
        "hwsku": meta.get("hwsku", ""),
        "testbed_type": "t0", "topo": "t0",
        "dut_asic": asic,
        "src_dst_asic_diff": False,
        "is_dualtor": False, "def_vlan_mac": None,
        "ip_type": "ipv4",
        "test_port_ids": {0: {0: ids}}, "testPortIds": {0: {0: ids}},
        "testPortIps": {0: {0: {i: {"peer_addr": ip} for i, _, ip in ports}}},
        "pkts_num_leak_out": q.get("pkts_num_leak_out", 0),
        "cell_size": q.get("cell_size"),
        # The switch the shim's clients talk to (not a sonic-mgmt parameter).
        "lossless_switch": switch,
    }
    roles = ["src_port", "dst_port", "dst_port_2", "dst_port_3"]
    for role, (pid, _, ip) in zip(roles, ports):
        p[role + "_id"], p[role + "_ip"], p[role + "_vlan"] = pid, ip, None
    ingress_lossless = next((n for n in pool_names if "ingress" in n and "lossless" in n), None)
    egress_lossy = next((n for n in pool_names if "egress" in n and "lossy" in n), None)

    if name in ("ARPpopulate", "ReleaseAllPorts"):
        if len(ports) < 4:
            raise Skip("%s needs 4 VLAN test ports, the lab has %d" % (name, len(ports)))
    elif name == "PFCtest":
        p.update(_section(q, "xoff_1", name))
    elif name == "PFCXonTest":
        if len(ports) < 4:
            raise Skip("PFCXonTest needs 4 PFC-enabled VLAN ports (src, dst, dst_2, dst_3), the lab has %d"
                       % len(ports))
        p.update(_section(q, "xon_1", name))
    elif name == "LossyQueueTest":
        p.update(_section(q, "lossy_queue_1", name))
        p["dst_sys_ports"] = None
        if egress_lossy:
            p["lossy_buf_pool_roid"] = hex(pools[egress_lossy])
    elif name == "PGSharedWatermarkTest":
        s = _section(q, "wm_pg_shared_lossless", name)
        p.update(s)
        p["pkts_num_fill_shared"] = s["pkts_num_trig_pfc"]
    elif name == "PGHeadroomWatermarkTest":
        p.update(_section(q, "wm_pg_headroom", name))
    elif name == "QSharedWatermarkTest":
        s = _section(q, "wm_q_shared_lossless", name)
        p.update(s)
        p["pkts_num_trig_drp"] = s["pkts_num_trig_ingr_drp"]
    elif name == "BufferPoolWatermarkTest":
        # test_qos_sai.py's ingress lossless case from qos_params' wm_buf_pool_lossless; swctl qos-params has
        # no such section, but its numbers are those of wm_pg_shared_lossless on the same PG, with the XOFF
        # trigger of xoff_1 (NVIDIA's generator: wm_buf_pool_lossless gets pkts_num_trig_pfc, while
        # wm_pg_shared_lossless gets the PG's shared space, which on Spectrum fills before xon and XOFF).
        s = _section(q, "wm_pg_shared_lossless", name)
        s["pkts_num_trig_pfc"] = _section(q, "xoff_1", name)["pkts_num_trig_pfc"]
        if not ingress_lossless:
            raise Skip("BufferPoolWatermarkTest: no ingress lossless pool in the profile")
        p.update({"dscp": s["dscp"], "ecn": s["ecn"], "pg": s["pg"], "queue": s["pg"],
                  "pkts_num_fill_min": s["pkts_num_fill_min"], "pkts_num_fill_shared": s["pkts_num_trig_pfc"] - 1,
                  "pkts_num_margin": 0, "cell_size": s["cell_size"], "buf_pool_roid": hex(pools[ingress_lossless])})
    elif name == "HdrmPoolSizeTest":
        # test_qos_sai.py testQosSaiHeadroomPoolSize, with its skips: no section ("Headroom pool size is not
        # enabled on this DUT": NVIDIA's generator drops it without a shared headroom pool; Broadcom's files
        # have it per ASIC) or no source ports ("No enough test ports on this DUT").
        if "hdrm_pool_size" not in q:
            raise Skip("HdrmPoolSizeTest: Headroom pool size is not enabled on this DUT (`swctl qos-params` "
                       "writes hdrm_pool_size where sonic-mgmt publishes it: td3 and th with a shared headroom "
                       "pool)")
        h = dict(q["hdrm_pool_size"])
        if not h.get("src_ports"):
            raise Skip("HdrmPoolSizeTest: No enough test ports on this DUT (sonic-mgmt's %s figures need more "
                       "PFC-enabled ports than the lab's %d)" % (asic, len(ports)))
        # swctl names the ports; sonic-mgmt writes ptf port ids.
        by_name = {name_: (pid, ip) for pid, name_, ip in ports}
        missing = [n for n in h["src_ports"] + [h["dst_port"]] if n not in by_name]
        if missing:
            raise Skip("HdrmPoolSizeTest: ports %s are not test ports of the lab" % ", ".join(missing))
        p.update({
            "dscps": h["dscps"], "ecn": h["ecn"], "pgs": h["pgs"],
            "src_port_ids": [by_name[n][0] for n in h["src_ports"]],
            "src_port_ips": [by_name[n][1] for n in h["src_ports"]],
            "dst_port_id": by_name[h["dst_port"]][0], "dst_port_ip": by_name[h["dst_port"]][1],
            "pgs_num": h["pgs_num"], "pkts_num_trig_pfc": h["pkts_num_trig_pfc"],
            "pkts_num_hdrm_full": h["pkts_num_hdrm_full"], "pkts_num_hdrm_partial": h["pkts_num_hdrm_partial"],
        })
    elif name == "SharedResSizeTest":
        # test_qos_sai.py check_skip_shared_res_test: sonic-mgmt publishes shared_res_size_1/2 only for
        # Cisco 8000 (qos_params.gb/gr/pac.yaml) and Tomahawk 6 (qos_params.th6.yaml), none of them a
        # Lossless family; with its own words:
        if "shared_res_size_1" not in q:
            raise Skip("SharedResSizeTest: Shared reservation size parametrization 'shared_res_size_1' is not "
                       "enabled (sonic-mgmt has no such figures for %s)" % asic)
        p.update(_section(q, "shared_res_size_1", name))
    elif test.partition(".")[0] != "sai_qos_tests":
        pass  # a test of the user's own: the basic params and the port roles above
    else:
        raise Skip("%s: the runner does not know the parameters test_qos_sai.py passes it (known: PFCtest, "
                   "PFCXonTest, LossyQueueTest, PGSharedWatermarkTest, PGHeadroomWatermarkTest, "
                   "QSharedWatermarkTest, BufferPoolWatermarkTest, HdrmPoolSizeTest, SharedResSizeTest)" % name)
    p.update(extra or {})
    return p


def params_string(params):
    """ptf's --test-params syntax: `k=v;k=v` with Python literals (ptf evaluates each value)."""
    return ";".join("%s=%r" % (k, v) for k, v in params.items())


def parse_extra(items):
    """K=V arguments; V a Python literal when it parses as one, else a string."""
    import ast

    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise ProfileError("parameter %r: expected KEY=VALUE" % item)
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


def _pool_names(switch):
    import lossless

    with lossless.connect(switch) as sw:
        return [pool.name for pool in sw.stub.GetWatermarks(lossless.pb.GetWatermarksRequest(), timeout=10).pools]


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    try:
        if cmd == "lab-config" and len(args) == 2:
            with open(args[0]) as f:
                db = yaml.safe_load(f) or {}
            with open(args[1], "w") as f:
                yaml.safe_dump(lab_config(db), f, sort_keys=False)
            return 0
        if cmd == "port-map" and len(args) == 2:
            with open(args[0]) as f:
                db = yaml.safe_load(f) or {}
            with open(args[1], "w") as f:
                f.write("# ptf_port@switch_port, written by lossless_sai.sonic_mgmt\n")
                f.write("\n".join(port_map_lines(db)) + "\n")
            return 0
        if cmd == "params" and len(args) >= 5:
            test, lab, qos, port_map, switch = args[:5]
            with open(lab) as f:
                db = yaml.safe_load(f) or {}
            with open(qos) as f:
                qos_json = json.load(f)
            params = test_params(test, db, qos_json, port_map, switch, _pool_names(switch), parse_extra(args[5:]))
            print(params_string(params))
            return 0
    except Skip as e:
        print("skip: %s" % e, file=sys.stderr)
        return 3
    except (ProfileError, OSError, KeyError, ValueError, yaml.YAMLError) as e:
        print("lossless_sai.sonic_mgmt %s: %s" % (cmd, e), file=sys.stderr)
        return 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
