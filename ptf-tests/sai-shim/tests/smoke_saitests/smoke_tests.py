"""A tiny saitests directory for the runner's smoke test (ptf-tests/sai-shim/tests/test_runner_smoke.py): written
the way sonic-mgmt's sai_qos_tests.py is (imports, base class, helpers, list indexes), none of its code.

The switch is reached only through the shim: counters over gRPC, holds, occupancy."""

import time

import sai_base_test
from ptf.testutils import send_packet, simple_arp_packet, simple_udp_packet
from switch import (port_list, sai_thrift_read_pg_occupancy, sai_thrift_read_port_counters,
                    sai_thrift_read_queue_occupancy, switch_init)
from switch_sai_thrift.ttypes import sai_thrift_attribute_value_t  # noqa: F401 (imported as the tests do)

# sai_qos_tests.py's names for sai_thrift_read_port_counters' slots.
TRANSMITTED_PKTS = 11
RECEIVED_PKTS = 14
RECEIVED_NON_UC_PKTS = 15
EGRESS_PORT_QLEN = 17


def wait_for(what, read, done, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s; last value %r" % (what, value))
        time.sleep(0.05)


class SmokeCounters(sai_base_test.ThriftInterfaceDataPlane):
    """ARP in (non-unicast count), 100 bridged frames src -> dst (unicast counts), then a hold: queue length,
    queue and PG occupancy in bytes, TX_OK frozen during the hold, all released after it."""

    def runTest(self):
        switch_init(self.clients)
        p = self.test_params
        asic = p["sonic_asic_type"]
        src, dst = int(p["src_port_id"]), int(p["dst_port_id"])
        src_mac, dst_mac = self.dataplane.get_mac(0, src), self.dataplane.get_mac(0, dst)
        src_oid, dst_oid = port_list["src"][src], port_list["dst"][dst]

        def src_counters():
            return sai_thrift_read_port_counters(self.src_client, asic, src_oid)[0]

        def dst_counters():
            return sai_thrift_read_port_counters(self.dst_client, asic, dst_oid)[0]

        # ARPpopulate's step: an ARP request to the VLAN gateway from each port teaches the switch its MAC.
        base = src_counters()
        for port, mac, ip in ((src, src_mac, p["src_port_ip"]), (dst, dst_mac, p["dst_port_ip"])):
            send_packet(self, port, simple_arp_packet(eth_src=mac, hw_snd=mac, ip_snd=ip, ip_tgt="192.168.0.1"))
        now = wait_for("the ARP broadcast counted", src_counters,
                       lambda c: c[RECEIVED_NON_UC_PKTS] - base[RECEIVED_NON_UC_PKTS] >= 1)
        self.assertEqual(now[RECEIVED_NON_UC_PKTS] - base[RECEIVED_NON_UC_PKTS], 1)
        self.assertEqual(now[RECEIVED_PKTS] - base[RECEIVED_PKTS], 0, "an ARP broadcast is not unicast")

        # DSCP 3: lossless TC 3, queue 3, PG 3 on the AZURE maps the shipped profiles use.
        dscp, queue, pg = 3, 3, 3
        pkt = simple_udp_packet(pktlen=64, eth_dst=dst_mac, eth_src=src_mac, ip_src=p["src_port_ip"],
                                ip_dst=p["dst_port_ip"], ip_tos=dscp << 2 | 1, ip_ttl=64)
        src_base, dst_base = src_counters(), dst_counters()
        send_packet(self, src, pkt, 100)
        out = wait_for("100 frames out of dst", dst_counters,
                       lambda c: c[TRANSMITTED_PKTS] - dst_base[TRANSMITTED_PKTS] >= 100)
        self.assertEqual(out[TRANSMITTED_PKTS] - dst_base[TRANSMITTED_PKTS], 100)
        got = src_counters()
        self.assertEqual(got[RECEIVED_PKTS] - src_base[RECEIVED_PKTS], 100)
        self.assertEqual(got[RECEIVED_NON_UC_PKTS] - src_base[RECEIVED_NON_UC_PKTS], 0)

        # Hold the destination (sai_thrift_port_tx_disable takes ptf port numbers): 10 frames wait there.
        cell = int(p["cell_size"])
        self.sai_thrift_port_tx_disable(self.dst_client, asic, [dst])
        try:
            held_base = dst_counters()
            send_packet(self, src, pkt, 10)
            held = wait_for("10 frames queued", dst_counters, lambda c: c[EGRESS_PORT_QLEN] >= 10)
            self.assertEqual(held[EGRESS_PORT_QLEN], 10)
            self.assertEqual(held[TRANSMITTED_PKTS], held_base[TRANSMITTED_PKTS], "a held port sends nothing")
            # One 64-byte frame is one cell on the profile (cell_size >= 64).
            occupancy = sai_thrift_read_queue_occupancy(self.dst_client, "dst", dst)
            self.assertEqual(occupancy[queue], 10 * cell)
            self.assertEqual(sum(occupancy), 10 * cell)
            self.assertEqual(sai_thrift_read_pg_occupancy(self.src_client, src_oid)[pg], 10 * cell)
        finally:
            self.sai_thrift_port_tx_enable(self.dst_client, asic, [dst])
        done = wait_for("the held frames out", dst_counters, lambda c: c[EGRESS_PORT_QLEN] == 0)
        self.assertEqual(done[TRANSMITTED_PKTS] - dst_base[TRANSMITTED_PKTS], 110)
        self.assertEqual(sai_thrift_read_queue_occupancy(self.dst_client, "dst", dst), [0] * 8)
