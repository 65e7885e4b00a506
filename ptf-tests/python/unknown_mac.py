"""sonic-mgmt's tests/arp/test_unknown_mac.py (T0, sonic-net/sonic-mgmt) against a Lossless
switch: a VLAN neighbour whose ARP entry exists but whose FDB entry was flushed (`sonic-clear fdb all` ->
`swctl fdb flush`); routed lossless packets from each uplink to it must not be flooded to any VLAN port,
and each uplink's RX_DRP grows by at least the number sent.

The neighbour is made the way a host makes itself known: an ARP request from a VLAN port, which gives the
switch both the ARP entry and the FDB entry. Before the flush a routed packet reaches the neighbour's port
(the control); after it, nothing reaches any VLAN port. Lossless DSCPs are the ones whose TC is in a VLAN
member's pfc_enable (the switch's rule for "lossless in this VLAN"); sonic-mgmt's DSCP 8 (lossy) case is
not this test's: a lossy packet is flooded unless SWITCH|switch|lossy_fdb_miss_action is drop.
"""

import time

import ptf.testutils as testutils
from ptf.packet import Ether, IP, ARP

from lossless_switch import LosslessTest, peer_address, wait_for


class UnknownMacTest(LosslessTest):
    def runTest(self):
        prof = self.profile
        count = int(self.params.raw.get("pkt_count", 10))
        if prof.switch_setting("lossless_fdb_miss_action", "drop") != "drop":
            self.skipTest("SWITCH|switch|lossless_fdb_miss_action is not drop in this profile")
        vlans = [v for v in prof.vlans() if any(not tagged for _, tagged in v[3])]
        if not vlans:
            self.skipTest("no VLAN with an IPv4 interface and an untagged member")
        vid, vlan_name, vlan_if, members = vlans[0]
        member_ports = [p for p, _ in members]
        uplinks = [p for p in prof.ports if prof.routed_ipv4(p) is not None]
        if not uplinks:
            self.skipTest("no routed port to send from")
        host_port = next(p for p, tagged in members if not tagged)
        hosts = [h for h in vlan_if.network.hosts() if h != vlan_if.ip]
        neigh_ip = str(hosts[min(9, len(hosts) - 1)])
        neigh_mac = "02:50:54:00:aa:%02x" % self.ptf_port(host_port)
        lossless_tcs = set().union(*(prof.qos(p)["pfc_enable"] for p in member_ports))
        dscps = {}
        for up in uplinks:
            for dscp in range(64):
                tc = prof.qos(up)["dscp_to_tc_map"][dscp]
                if tc in lossless_tcs:
                    dscps.setdefault(tc, dscp)
        dscps = sorted(dscps.values())
        print("\n  %s (%s) members %s; neighbour %s %s on %s; uplinks %s; lossless DSCPs %s"
              % (vlan_name, vlan_if, member_ports, neigh_ip, neigh_mac, host_port, uplinks, dscps))

        # ---- the neighbour announces itself: ARP entry + FDB entry ------------------------------------
        arp = testutils.simple_arp_packet(eth_dst="ff:ff:ff:ff:ff:ff", eth_src=neigh_mac, arp_op=1,
                                          ip_snd=neigh_ip, ip_tgt=str(vlan_if.ip), hw_snd=neigh_mac)
        self.send(host_port, arp, 1)
        reply = Ether(dst=neigh_mac, src=prof.router_mac) / ARP(
            op=2, hwsrc=prof.router_mac, psrc=str(vlan_if.ip), hwdst=neigh_mac, pdst=neigh_ip)
        res = testutils.dp_poll(self, port_number=self.ptf_port(host_port), timeout=5, exp_pkt=bytes(reply))
        self.assertTrue(isinstance(res, self.dataplane.PollSuccess), "no ARP reply from the switch on %s" % host_port)
        fdb = [e for e in self.sw.fdb() if e["MacAddress"].lower() == neigh_mac and e["Vlan"] == vid]
        self.assertEqual([e["Port"] for e in fdb], [host_port], "FDB entry of the neighbour")

        def routed(up, dscp, ip_id):
            return testutils.simple_udp_packet(
                pktlen=64, eth_dst=prof.router_mac, eth_src=self.host_mac(up),
                ip_src=peer_address(prof.routed_ipv4(up)), ip_dst=neigh_ip, ip_tos=(dscp << 2) | 1,
                ip_id=ip_id, ip_ttl=64, udp_dport=80)

        # Control: with the FDB entry, a routed lossless packet reaches the neighbour's port.
        self.send(uplinks[0], routed(uplinks[0], dscps[0], 1), 1)
        res = testutils.dp_poll(self, port_number=self.ptf_port(host_port), timeout=5)
        self.assertTrue(isinstance(res, self.dataplane.PollSuccess), "control packet did not reach %s" % host_port)
        got = Ether(res.packet)
        self.assertEqual((got.dst.lower(), got[IP].dst, got[IP].ttl), (neigh_mac, neigh_ip, 63), "control packet")

        # ---- sonic-clear fdb all -------------------------------------------------------------------------
        flushed = self.sw.fdb_flush()
        self.assertGreaterEqual(flushed, 1)
        self.assertEqual([e for e in self.sw.fdb() if e["MacAddress"].lower() == neigh_mac], [], "FDB after flush")
        self.dataplane.flush()

        ok = True
        for dscp in dscps:
            before = self.sw.interfaces()
            for up in uplinks:
                self.send(up, routed(up, dscp, 100 + dscp), count)
            after = wait_for("RX_DRP of %s to grow by %d" % (uplinks, count), self.sw.interfaces,
                             lambda c: all(c[u]["RX_DRP"] - before[u]["RX_DRP"] >= count for u in uplinks), interval=0)
            for up in uplinks:
                ok &= self.record("%s RX_DRP delta (DSCP %d to %s)" % (up, dscp, neigh_ip), ">= %d" % count,
                                  after[up]["RX_DRP"] - before[up]["RX_DRP"],
                                  ok=after[up]["RX_DRP"] - before[up]["RX_DRP"] >= count)
            # Nothing on any VLAN port: the drops are counted, so a flood would have been sent by now; the
            # window below is the explicit negative wait.
            seen = {}
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                for m in member_ports:
                    res = testutils.dp_poll(self, port_number=self.ptf_port(m), timeout=0.02)
                    if isinstance(res, self.dataplane.PollSuccess):
                        seen[m] = seen.get(m, 0) + 1
            ok &= self.record("packets on %s ports %s (DSCP %d)" % (vlan_name, member_ports, dscp), 0, sum(seen.values()))
            self.assertEqual(seen, {}, "packets received on VLAN ports (port: count) after the FDB flush")
        self.assertTrue(ok)
