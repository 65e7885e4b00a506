"""The switch side of the Lossless PTF tests: counters over gRPC (the `lossless` package of
ptf-tests/sai-shim), configuration and operations through `swctl --json`, the running configuration resolved
the way the switch resolves it, and waits on counters with deadlines.

Nothing here knows a profile's numbers: classification and addresses come from the configuration that
`swctl get` returns (the applied profile); the buffer tests' expected numbers are sonic-mgmt's published
figures (published.py).

Test parameters (ptf --test-params, Python syntax, `;`-separated):
  swctl      path of the swctl binary                       (default: swctl on PATH)
  switch     the switch's gRPC endpoint, unix:PATH or tcp:H:P (default: $LOSSLESS_SWITCH)
  port_map   {'Ethernet0': 0, ...}: switch port -> ptf port number (required)
  profile    the profile's name, for the summary              (default: the hwsku)
  report     a file to append one JSON line per key number to  (optional)
"""

import ipaddress
import json
import os
import re
import subprocess
import time


import ptf
import ptf.testutils as testutils
from ptf.base_tests import BaseTest


class SwitchError(Exception):
    pass


def natural_key(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


class Swctl:
    """Runs `swctl --switch ENDPOINT --json ...` and parses what it prints."""

    def __init__(self, binary, endpoint):
        self.binary = binary
        self.endpoint = endpoint
        self._switch = None

    def run(self, *args, json_out=True):
        cmd = [self.binary, "--switch", self.endpoint]
        if json_out:
            cmd.append("--json")
        cmd += [str(a) for a in args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise SwitchError("%s failed (%d): %s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
        if not json_out:
            return r.stdout
        return json.loads(r.stdout) if r.stdout.strip() else None

    # ---- configuration ----------------------------------------------------------------------------

    def running_config(self):
        """`swctl --json get`: the running CONFIG_DB as config_db.json tables."""
        return self.run("get") or {}

    # ---- counters (each a fresh read over gRPC, one GetCounters; deltas are the tests' business) -----

    def _ports(self):
        """{port name: lossless.v1.PortCounters}: one GetCounters on a channel kept open (the `lossless`
        package of ptf-tests/sai-shim), not a swctl process per read."""
        if self._switch is None:
            import lossless

            self._switch = lossless.connect(self.endpoint)
            self._pb = lossless.pb
        reply = self._switch.stub.GetCounters(self._pb.GetCountersRequest(), timeout=30)
        return {p.name: p for p in reply.ports}

    def queue_counters(self, port):
        """{queue: (packets, dropped packets)} of one port (`show queue counters PORT`'s totals)."""
        return {i: (q.packets, q.dropped_packets) for i, q in enumerate(self._ports()[port].queues)}

    def pfc_counters(self):
        """{'rx'|'tx': {port: [frames per priority 0..7]}} (`show pfc counters`)."""
        ports = self._ports()
        return {"rx": {n: [c.rx for c in p.pfc] for n, p in ports.items()},
                "tx": {n: [c.tx for c in p.pfc] for n, p in ports.items()}}

    def pg_drops(self):
        """{port: [ingress drops per PG 0..7]} (`show priority-group drop counters`)."""
        return {n: [g.dropped_packets for g in p.pgs] for n, p in self._ports().items()}

    def interfaces(self):
        """{port: {RX_OK, RX_DRP, RX_ERR, RX_OVR, TX_OK, TX_DRP, TX_ERR}} (`show interfaces counters`'
        columns, one sample, no rates)."""
        return {n: {"RX_OK": p.rx_ok, "RX_DRP": p.rx_drp, "RX_ERR": p.rx_err, "RX_OVR": p.rx_ovr,
                    "TX_OK": p.tx_ok, "TX_DRP": p.tx_drp, "TX_ERR": p.tx_err} for n, p in self._ports().items()}

    def pfcwd_stats(self):
        """{'Ethernet4:3': {status, detected, restored, tx_ok, tx_drop, rx_ok, rx_drop, *_last}}."""
        out = {}
        for row in self.run("pfcwd", "show", "stats", "-e"):
            out[row["QUEUE"]] = {
                "status": row["STATUS"],
                "detected": row["STORM DETECTED/RESTORED"][0],
                "restored": row["STORM DETECTED/RESTORED"][1],
                "tx_ok": row["TX OK/DROP"][0],
                "tx_drop": row["TX OK/DROP"][1],
                "rx_ok": row["RX OK/DROP"][0],
                "rx_drop": row["RX OK/DROP"][1],
                "tx_last_ok": row["TX LAST OK/DROP"][0],
                "tx_last_drop": row["TX LAST OK/DROP"][1],
                "rx_last_ok": row["RX LAST OK/DROP"][0],
                "rx_last_drop": row["RX LAST OK/DROP"][1],
            }
        return out

    def fdb(self):
        return self.run("fdb", "show")

    # ---- operations ---------------------------------------------------------------------------------

    def hold(self, port, queue=None, release=False):
        """`swctl hold PORT [QUEUE] [--release]`: sai_thrift_port_tx_disable / _enable."""
        args = ["hold", port] + ([queue] if queue is not None else []) + (["--release"] if release else [])
        self.run(*args, json_out=False)

    def fdb_flush(self, vlan=None, port=None):
        args = ["fdb", "flush"] + (["--vlan", vlan] if vlan is not None else []) + (["--port", port] if port else [])
        return self.run(*args)["flushed"]

    def debug_storm(self, port, queue, enabled):
        self.run("pfcwd", "debug_storm", port, queue, "enable" if enabled else "disable", json_out=False)

    def pfcwd_start(self, ports, detection_ms, action="drop", restoration_ms=None):
        args = ["pfcwd", "start", "--action", action]
        if restoration_ms is not None:
            args += ["--restoration-time", restoration_ms]
        self.run(*(args + [ports, detection_ms]), json_out=False)


def wait_for(what, read, done, timeout=10.0, interval=0.05):
    """Polls `read()` until `done(value)`; returns the value. Fails with the last value at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s; last value: %r" % (timeout, what, value))
        time.sleep(interval)


# ---- the running configuration, resolved as the switch resolves it ------------------------------------


def parse_ref(table, value):
    """`name` or `[TABLE|name]`."""
    value = str(value)
    if value.startswith("[") and value.endswith("]"):
        t, _, name = value[1:-1].partition("|")
        if t != table:
            raise SwitchError("%r refers to %s, not %s" % (value, t, table))
        return name
    return value


def parse_index_range(text):
    lo, _, hi = str(text).partition("-")
    return range(int(lo), int(hi or lo) + 1)


def port_index_entries(table):
    """Yields (port, index, fields) for the `<ports>|<index or a-b>` keys of BUFFER_PG / BUFFER_QUEUE / QUEUE."""
    for key, fields in (table or {}).items():
        ports, _, idx = key.rpartition("|")
        for port in ports.split(","):
            for i in parse_index_range(idx):
                yield port, i, fields or {}


def port_entries(table):
    """Yields (port, fields) for keys that are one port or several joined with commas."""
    for key, fields in (table or {}).items():
        for port in key.split(","):
            yield port, fields or {}


def priority_list(text):
    text = str(text or "").strip()
    return {int(p) for p in text.split(",") if p.strip() != ""}


class Profile:
    """The applied profile: CONFIG_DB tables as `swctl get` returns them."""

    def __init__(self, db):
        self.db = db

    def table(self, name):
        return self.db.get(name) or {}

    @property
    def ports(self):
        return sorted(self.table("PORT"), key=natural_key)

    @property
    def hwsku(self):
        return self.table("DEVICE_METADATA").get("localhost", {}).get("hwsku", "")

    @property
    def router_mac(self):
        return self.table("DEVICE_METADATA")["localhost"]["mac"]

    # ---- QoS maps -------------------------------------------------------------------------------------

    MAPS = {
        # field: (table, size, unlisted keys map to themselves?)
        "dscp_to_tc_map": ("DSCP_TO_TC_MAP", 64, False),
        "tc_to_queue_map": ("TC_TO_QUEUE_MAP", 8, True),
        "tc_to_pg_map": ("TC_TO_PRIORITY_GROUP_MAP", 8, False),
        "pfc_to_queue_map": ("MAP_PFC_PRIORITY_TO_QUEUE", 8, True),
        "pfc_to_pg_map": ("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", 8, True),
    }

    def _map(self, field, ref):
        table, size, identity = self.MAPS[field]
        entries = self.table(table)[parse_ref(table, ref)] or {}
        out = [i if identity else 0 for i in range(size)]
        for k, v in entries.items():
            out[int(k)] = int(v)
        return out

    def qos(self, port):
        """The port's QoS maps as the switch applies them (PORT_QOS_MAP; SONiC's defaults for what is
        unset: DSCP from `PORT_QOS_MAP|global`, else TC 0; TC->queue identity; TC->PG all 0)."""
        fields = {}
        for p, f in port_entries({k: v for k, v in self.table("PORT_QOS_MAP").items() if k != "global"}):
            if p == port:
                fields = f
        glob = self.table("PORT_QOS_MAP").get("global") or {}
        q = {}
        for field, (_, size, identity) in self.MAPS.items():
            ref = fields.get(field) or (glob.get(field) if field == "dscp_to_tc_map" else None)
            if ref:
                q[field] = self._map(field, ref)
            elif field == "dscp_to_tc_map":
                q[field] = [0] * 64
            else:
                q[field] = [i if identity else 0 for i in range(size)]
        q["pfc_enable"] = priority_list(fields.get("pfc_enable"))
        q["pfcwd_sw_enable"] = priority_list(fields.get("pfcwd_sw_enable"))
        q["border_rules"] = any(k.split("|")[0] == port for k in self.table("BORDER_RULE"))
        return q

    def lossless_pgs(self, port):
        q = self.qos(port)
        return {q["pfc_to_pg_map"][p] for p in q["pfc_enable"]}

    def lossless_queues(self, port):
        q = self.qos(port)
        return {q["pfc_to_queue_map"][p] for p in q["pfc_enable"]}

    def classify(self, src, dst, dscp):
        """(tc, ingress PG on src, egress queue on dst) of an IP packet with this DSCP."""
        s = self.qos(src)
        tc = s["dscp_to_tc_map"][dscp] & 7
        return tc, s["tc_to_pg_map"][tc] & 7, self.qos(dst)["tc_to_queue_map"][tc] & 7

    # ---- queues -------------------------------------------------------------------------------------

    def queue_wred(self, port, queue):
        for p, i, fields in port_index_entries(self.table("QUEUE")):
            if p == port and i == queue and fields.get("wred_profile"):
                return self.table("WRED_PROFILE")[parse_ref("WRED_PROFILE", fields["wred_profile"])]
        return None

    # ---- forwarding -----------------------------------------------------------------------------------

    def routed_ipv4(self, port):
        """The IPv4 interface address of a routed port (INTERFACE|port|a.b.c.d/len), or None."""
        for key in self.table("INTERFACE"):
            name, _, addr = key.partition("|")
            if name == port and addr and ":" not in addr:
                return ipaddress.ip_interface(addr)
        return None

    def ipv4_neighbor(self, port):
        """(ip, mac) of a static IPv4 neighbour on a routed port (NEIGH|port|ip), or None."""
        for key, fields in self.table("NEIGH").items():
            name, _, ip = key.partition("|")
            if name == port and ":" not in ip:
                return ip, fields["neigh"]
        return None

    def vlans(self):
        """[(vid, vlan name, IPv4 interface, [(member, tagged)])] for VLANs with an IPv4 VLAN_INTERFACE."""
        out = []
        for name, fields in self.table("VLAN").items():
            vid = int((fields or {}).get("vlanid", name[4:]))
            addr = None
            for key in self.table("VLAN_INTERFACE"):
                n, _, a = key.partition("|")
                if n == name and a and ":" not in a:
                    addr = ipaddress.ip_interface(a)
            members = []
            for key, f in self.table("VLAN_MEMBER").items():
                n, _, port = key.partition("|")
                if n == name:
                    members.append((port, (f or {}).get("tagging_mode", "untagged") == "tagged"))
            members.sort(key=lambda m: natural_key(m[0]))
            if addr is not None:
                out.append((vid, name, addr, members))
        return out

    def switch_setting(self, field, default):
        return (self.table("SWITCH").get("switch") or {}).get(field, default)

    def pfc_wd(self, port):
        return self.table("PFC_WD").get(port)


def peer_address(iface):
    """An address in the interface's subnet that is not the switch's own (the neighbour's side of a /31)."""
    for host in iface.network.hosts() if iface.network.prefixlen < 31 else iface.network:
        if host != iface.ip:
            return str(host)
    raise SwitchError("no peer address in %s" % iface)


# ---- common test scaffolding -----------------------------------------------------------------------------


class Params:
    """The ptf --test-params this suite reads (see the module's docstring; also `pps`, the sending rate)."""

    def __init__(self):
        p = testutils.test_params_get() or {}
        self.swctl = p.get("swctl", "swctl")
        self.endpoint = p.get("switch") or os.environ.get("LOSSLESS_SWITCH", "unix:/run/lossless/switch.sock")
        self.port_map = p.get("port_map")
        if not self.port_map:
            raise SwitchError("test param port_map={'Ethernet0': 0, ...} is required")
        self.profile_name = p.get("profile")
        self.report = p.get("report")
        # Frames per second the tests send at: bursts of thousands stay within what the switch's receive ring
        # absorbs while it is descheduled on a busy machine (every burst is checked against RX_OK anyway).
        self.pps = float(p.get("pps", 50000))
        self.raw = p


def record(params, profile_name, test, key, expected, observed, ok, source=None):
    """One key number of the summary: printed, and appended to the report file when there is one. `source`:
    where a published expected figure comes from."""
    line = {"test": test, "profile": profile_name, "key": key, "expected": expected, "observed": observed,
            "result": "PASS" if ok else "FAIL"}
    if source:
        line["source"] = source
    print("  [%s] %s %s: expected %s, observed %s%s" % (line["result"], test, key, expected, observed,
                                                        " (%s)" % source if source else ""))
    if params.report:
        with open(params.report, "a") as f:
            f.write(json.dumps(line) + "\n")


class LosslessTest(BaseTest):
    """Base of the tests: the dataplane, swctl, the applied profile, paced sending and counter barriers."""

    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.params = Params()
        self.sw = Swctl(self.params.swctl, self.params.endpoint)
        self.profile = Profile(self.sw.running_config())
        self.profile_name = self.params.profile_name or self.profile.hwsku
        unknown = [p for p in self.profile.ports if p not in self.params.port_map]
        if unknown:
            raise SwitchError("ports %s of the profile have no ptf port in port_map" % unknown)
        self.dataplane.flush()

    # ---- ports and addresses ------------------------------------------------------------------------

    def ptf_port(self, name):
        return self.params.port_map[name]

    def host_mac(self, name):
        """The MAC the ptf side of a switch port sends from (locally administered, one per port)."""
        return "02:50:54:00:00:%02x" % self.ptf_port(name)

    def qos_ports(self):
        """(src, dst, dst neighbour ip, dst neighbour mac) for the routed QoS tests: test params src_port /
        dst_port, else the first routed port with a static IPv4 neighbour as dst and another routed port as
        src (sonic-mgmt's src_port_id / dst_port_id)."""
        prof = self.profile
        routed = [p for p in prof.ports if prof.routed_ipv4(p) is not None]
        dst = self.params.raw.get("dst_port") or next((p for p in routed if prof.ipv4_neighbor(p)), None)
        src = self.params.raw.get("src_port") or next((p for p in routed if p != dst), None)
        if dst is None or src is None or prof.ipv4_neighbor(dst) is None or prof.routed_ipv4(src) is None:
            raise SwitchError("need two routed ports, the destination with a static IPv4 NEIGH (got src=%s dst=%s)" % (src, dst))
        ip, mac = prof.ipv4_neighbor(dst)
        return src, dst, ip, mac

    def routed_udp(self, src, dst_ip, dscp, ip_id=1, ecn=1, length=64, udp_sport=1234):
        """sonic-mgmt's packet: a 64-byte UDP/IPv4 frame routed by the switch (to its router MAC), ECN 1."""
        return testutils.simple_udp_packet(
            pktlen=length,
            eth_dst=self.profile.router_mac,
            eth_src=self.host_mac(src),
            ip_src=peer_address(self.profile.routed_ipv4(src)),
            ip_dst=dst_ip,
            ip_tos=(dscp << 2) | ecn,
            ip_id=ip_id,
            ip_ttl=64,
            udp_sport=udp_sport,
            udp_dport=80,
        )

    # ---- sending and barriers ---------------------------------------------------------------------------

    def send(self, port_name, pkt, count):
        """Sends `count` copies of `pkt` out of the ptf port facing `port_name`, paced at params.pps."""
        port = self.ptf_port(port_name)
        data = bytes(pkt)
        burst = 32
        start = time.monotonic()
        sent = 0
        while sent < count:
            n = min(burst, count - sent)
            testutils.send_packet(self, port, data, count=n)
            sent += n
            ahead = sent / self.params.pps - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)  # pacing the sender, not waiting for an event
        return count

    def wait_received(self, port_name, total, timeout=20.0):
        """Waits until the switch counted `total` frames in on `port_name` (RX_OK): everything sent has been
        through the pipeline, so counters read afterwards are complete. Returns the interface counters."""
        def read():
            return self.sw.interfaces()
        try:
            c = wait_for("RX_OK of %s to reach %d" % (port_name, total), read,
                         lambda c: c[port_name]["RX_OK"] >= total, timeout=timeout, interval=0)
        except AssertionError as e:
            raise AssertionError("%s -- frames lost before the switch counted them (its receive ring?), not a "
                                 "buffer threshold" % e)
        self.assertEqual(c[port_name]["RX_OK"], total, "RX_OK of %s: more frames than the test sent" % port_name)
        return c

    def wait_ptf_quiet(self, port_name, quiet_s=0.2, timeout=30.0):
        """Waits until ptf has taken in what the switch already sent to `port_name` (its receive counter
        stops growing; after a held queue is released that is tens of thousands of frames still in the
        socket buffer), then drops them from ptf's queues, so that the next check starts clean."""
        port = self.ptf_port(port_name)
        deadline = time.monotonic() + timeout
        last, since = self.dataplane.get_counters(0, port)[0], time.monotonic()
        while time.monotonic() - since < quiet_s:
            if time.monotonic() > deadline:
                raise AssertionError("ptf kept receiving on %s for %.0f s" % (port_name, timeout))
            time.sleep(0.02)
            now = self.dataplane.get_counters(0, port)[0]
            if now != last:
                last, since = now, time.monotonic()
        self.dataplane.flush()

    def record(self, key, expected, observed, ok=None, source=None):
        ok = (expected == observed) if ok is None else ok
        record(self.params, self.profile_name, type(self).__name__, key, expected, observed, ok, source)
        return ok
