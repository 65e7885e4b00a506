"""sonic-mgmt's SAI QoS PTF tests (tests/saitests/py3/sai_qos_tests.py) against a Lossless switch:
DscpMappingPB, PFCtest (xoff limit) and LossyQueueTest, with sonic-mgmt's procedure (../shared/reference/
sonic.md §5.0-5.1): hold the destination's egress (sai_thrift_port_tx_disable -> `swctl hold`), fill, read
counters, release. The expected numbers come from the applied profile (mmu_model.py), never from a table.

Differences from sonic-mgmt, on purpose: no leak-out compensation (the switch holds egress exactly);
pkts_num_margin defaults to 0, so each threshold is checked to the packet (test param pkts_num_margin to
loosen it); instead of sleeping 8 s for counters, each burst ends when the switch has counted every frame
in (RX_OK), and positive checks poll their counter with a deadline.
"""

import time

import ptf.testutils as testutils
from ptf.packet import Ether, IP

from lossless_switch import LosslessTest, wait_for
from mmu_model import fill, wred_may_drop

PACKET_LEN = 64


class DscpMappingPB(LosslessTest):
    """testQosSaiDscpQueueMapping: one 64 B packet per DSCP 0..63 from src to dst; each arrives with its
    TOS intact (TTL decremented, MACs rewritten), and the dst port's queue counters grow by the number of
    DSCPs that DSCP_TO_TC_MAP (src) + TC_TO_QUEUE_MAP (dst) send to each queue -- exactly, every queue."""

    def runTest(self):
        src, dst, dst_ip, dst_mac = self.qos_ports()
        expected = [0] * 8
        for dscp in range(64):
            expected[self.profile.classify(src, dst, dscp)[2]] += 1
        base_id = 101
        print("\n  %s -> %s (%s %s): one %d B packet per DSCP 0..63" % (src, dst, dst_ip, dst_mac, PACKET_LEN))
        before = self.sw.queue_counters(dst)
        rx_before = self.sw.interfaces()[src]["RX_OK"]
        for dscp in range(64):
            self.send(src, self.routed_udp(src, dst_ip, dscp, ip_id=base_id + dscp), 1)
        self.wait_received(src, rx_before + 64)
        after = wait_for(
            "64 packets out of %s's queues" % dst,
            lambda: self.sw.queue_counters(dst),
            lambda c: sum(c[q][0] - before[q][0] for q in range(8)) >= 64,
        )
        observed = [after[q][0] - before[q][0] for q in range(8)]
        ok = True
        for q in range(8):
            ok &= self.record("%s UC%d packets" % (dst, q), expected[q], observed[q])

        # Every packet arrives on the destination port, its DSCP/ECN unchanged.
        seen = {}
        other = 0
        deadline = time.monotonic() + 5
        while len(seen) < 64 and time.monotonic() < deadline:
            res = testutils.dp_poll(self, port_number=self.ptf_port(dst), timeout=1)
            if not isinstance(res, self.dataplane.PollSuccess):
                continue
            pkt = Ether(res.packet)
            if IP not in pkt or not base_id <= pkt[IP].id < base_id + 64:
                other += 1
                continue
            dscp = pkt[IP].id - base_id
            seen[dscp] = pkt
        wrong = []
        for dscp, pkt in sorted(seen.items()):
            if (pkt[IP].tos, pkt[IP].ttl, pkt.dst.lower(), pkt.src.lower()) != (
                (dscp << 2) | 1, 63, dst_mac.lower(), self.profile.router_mac.lower()):
                wrong.append((dscp, pkt[IP].tos, pkt[IP].ttl, pkt.dst, pkt.src))
        ok &= self.record("packets received on %s with TOS intact" % dst, 64, len(seen) - len(wrong))
        self.assertEqual(wrong, [], "received with a changed header: (dscp, tos, ttl, dst, src)")
        self.assertEqual(other, 0, "unexpected other packets on %s" % dst)
        self.assertTrue(ok, "queue counters differ from the profile's DSCP->TC->queue maps")


class BufferFillTest(LosslessTest):
    """What PFCtest and LossyQueueTest share: the flow, the held destination, the counters read at a step."""

    def flow(self, dscp):
        src, dst, dst_ip, _ = self.qos_ports()
        tc, pg, queue = self.profile.classify(src, dst, dscp)
        if self.profile.qos(src)["border_rules"]:
            self.skipTest("%s has BORDER_RULEs: classification is not the maps' alone" % src)
        return src, dst, dst_ip, tc, pg, queue

    def snapshot(self, src, dst, pg, queue, interfaces=None):
        pfc = self.sw.pfc_counters()["tx"][src]
        intf = interfaces or self.sw.interfaces()
        return {
            "pfc_tx": pfc,
            "pg_drop": self.sw.pg_drops()[src][pg],
            "q": self.sw.queue_counters(dst)[queue],
            "rx_ok": intf[src]["RX_OK"],
            "rx_drp": intf[src]["RX_DRP"],
            "tx_drp": intf[dst]["TX_DRP"],
        }

    def hold(self, dst, queue, admitted_before):
        """Holds dst's egress; on cleanup releases it and waits until the queue has sent what it took."""
        self.sw.hold(dst)
        state = {"admitted": 0}

        def release():
            self.sw.hold(dst, release=True)
            target = admitted_before + state["admitted"]
            wait_for("%s queue %d to drain" % (dst, queue), lambda: self.sw.queue_counters(dst)[queue][0],
                     lambda n: n >= target, timeout=30)
            self.wait_ptf_quiet(dst)

        self.addCleanup(release)
        return state

    def burst(self, src, pkt, count, base, sent_so_far):
        """Sends `count` packets and returns the counters once the switch has counted them all in."""
        self.send(src, pkt, count)
        intf = self.wait_received(src, base["rx_ok"] + sent_so_far + count)
        return intf


class PFCtest(BufferFillTest):
    """testQosSaiPfcXoffLimit[xoff_1, xoff_2, ...]: for each lossless DSCP of the source port, with the
    destination held: (1) trig_pfc - 1 - margin packets -> no PFC on the source, no drops; (2) 1 + 2 margin
    -> PFC sent for the PG's priority, no drops; (3) trig_ingr_drp - trig_pfc - 1 - 2 margin -> no drops;
    (4) 1 + 2 margin -> ingress drops (PG drop counter and RX_DRP), no egress drop."""

    def runTest(self):
        src, dst, _, _ = self.qos_ports()
        lossless_pgs = self.profile.lossless_pgs(src)
        dscps, pgs_done = [], set()
        for dscp in self.params.raw.get("xoff_dscps") or range(64):
            _, pg, _ = self.profile.classify(src, dst, dscp)
            if pg in lossless_pgs and pg not in pgs_done:
                dscps.append(dscp)
                pgs_done.add(pg)
        if not dscps:
            self.skipTest("%s has no lossless PG reachable by DSCP" % src)
        for i, dscp in enumerate(dscps, 1):
            with self.subTest(xoff="xoff_%d" % i, dscp=dscp):
                try:
                    self.xoff_limit("xoff_%d" % i, dscp)
                finally:
                    self.doCleanups()  # release and drain before the next DSCP

    def xoff_limit(self, name, dscp):
        src, dst, dst_ip, tc, pg, queue = self.flow(dscp)
        q = self.profile.qos(src)
        priorities = [p for p in sorted(q["pfc_enable"]) if q["pfc_to_pg_map"][p] == pg]
        if wred_may_drop(self.profile.queue_wred(dst, queue), ect=True):
            self.skipTest("WRED on %s queue %d may drop ECT packets" % (dst, queue))
        r = fill(self.profile, src, pg, dst, queue, PACKET_LEN)
        self.assertIsNotNone(r.trig_pfc, "%s: the profile never sends XOFF for PG %d (%r)" % (name, pg, r))
        self.assertIsNotNone(r.trig_ingr_drp, "%s: no ingress drop point (%r)" % (name, r))
        trig_pfc, trig_drp = r.trig_pfc, r.trig_ingr_drp
        margin = int(self.params.raw.get("pkts_num_margin", 0))
        print("\n  %s: DSCP %d -> TC %d, %s PG %d (PFC priority %s) -> %s queue %d; %d cell(s)/packet; "
              "expect PFC at packet %d, ingress drop at packet %d"
              % (name, dscp, tc, src, pg, priorities, dst, queue, r.cells_per_packet, trig_pfc, trig_drp))
        pkt = self.routed_udp(src, dst_ip, dscp)
        base = self.snapshot(src, dst, pg, queue)
        held = self.hold(dst, queue, base["q"][0])

        def pfc_delta(s):
            return sum(s["pfc_tx"][p] - base["pfc_tx"][p] for p in priorities)

        def check_no_drops(s, step):
            self.assertEqual(s["pg_drop"] - base["pg_drop"], 0, "%s step %s: ingress (PG) drops" % (name, step))
            self.assertEqual(s["rx_drp"] - base["rx_drp"], 0, "%s step %s: RX_DRP" % (name, step))
            self.assertEqual(s["q"][1] - base["q"][1], 0, "%s step %s: egress drops" % (name, step))
            self.assertEqual(s["tx_drp"] - base["tx_drp"], 0, "%s step %s: TX_DRP" % (name, step))

        # (1) up to just below the trigger: no PFC, nothing dropped.
        sent = 0
        n1 = trig_pfc - 1 - margin
        intf = self.burst(src, pkt, n1, base, sent)
        sent += n1
        held["admitted"] = sent
        s1 = self.snapshot(src, dst, pg, queue, intf)
        self.assertEqual(pfc_delta(s1), 0, "%s: PFC sent after %d packets, before the trigger point %d" % (name, sent, trig_pfc))
        check_no_drops(s1, 1)

        # (2) the trigger: PFC for the PG's priority, still nothing dropped.
        n2 = 1 + 2 * margin
        intf = self.burst(src, pkt, n2, base, sent)
        sent += n2
        held["admitted"] = sent
        wait_for("PFC frames from %s for priority %s" % (src, priorities),
                 lambda: {"pfc_tx": self.sw.pfc_counters()["tx"][src]}, lambda s: pfc_delta(s) > 0)
        s2 = self.snapshot(src, dst, pg, queue, intf)
        check_no_drops(s2, 2)
        observed_pfc = trig_pfc if margin == 0 else "%d..%d" % (n1 + 1, sent)
        self.record("%s pkts_num_trig_pfc (DSCP %d, %s PG %d)" % (name, dscp, src, pg), trig_pfc, observed_pfc)

        # (3) into the headroom, up to just below the drop point: no drops, PFC keeps going.
        n3 = (trig_drp - trig_pfc) - 1 - 2 * margin
        intf = self.burst(src, pkt, n3, base, sent)
        sent += n3
        held["admitted"] = sent
        s3 = self.snapshot(src, dst, pg, queue, intf)
        check_no_drops(s3, 3)
        self.assertGreater(pfc_delta(s3), 0)

        # (4) past the headroom: ingress drops, no egress drop.
        n4 = 1 + 2 * margin
        intf = self.burst(src, pkt, n4, base, sent)
        sent += n4
        s4 = self.snapshot(src, dst, pg, queue, intf)
        drops = s4["pg_drop"] - base["pg_drop"]
        held["admitted"] = sent - drops
        self.assertGreater(drops, 0, "%s: no ingress drop after %d packets (drop point %d)" % (name, sent, trig_drp))
        self.assertEqual(s4["rx_drp"] - base["rx_drp"], drops, "%s: RX_DRP and the PG drop counter disagree" % name)
        self.assertEqual(s4["q"][1] - base["q"][1], 0, "%s step 4: egress drops" % name)
        observed_drp = sent - drops + 1
        self.record("%s pkts_num_trig_ingr_drp (DSCP %d, %s PG %d)" % (name, dscp, src, pg), trig_drp, observed_drp,
                    ok=(observed_drp == trig_drp) if margin == 0 else (sent - n4 < observed_drp <= sent))
        if margin == 0:
            self.assertEqual(observed_drp, trig_drp, "%s: first ingress drop at packet %d, expected %d" % (name, observed_drp, trig_drp))


class LossyQueueTest(BufferFillTest):
    """testQosSaiLossyQueue: a lossy DSCP (test param lossy_dscp, else 8 as sonic-mgmt's lossy_queue_1 on
    Broadcom, else the first lossy one), destination held: trig_egr_drp - 1 - margin packets -> no PFC, no
    ingress drop, no egress drop; 1 + 2 margin more -> egress drops, still no PFC and no ingress drop."""

    def runTest(self):
        src, dst, _, _ = self.qos_ports()
        lossless_pgs = self.profile.lossless_pgs(src)
        lossless_queues = self.profile.lossless_queues(dst)
        candidates = [self.params.raw["lossy_dscp"]] if "lossy_dscp" in self.params.raw else [8] + list(range(64))
        dscp = next(d for d in candidates
                    if self.profile.classify(src, dst, d)[1] not in lossless_pgs
                    and self.profile.classify(src, dst, d)[2] not in lossless_queues)
        src, dst, dst_ip, tc, pg, queue = self.flow(dscp)
        if wred_may_drop(self.profile.queue_wred(dst, queue), ect=True):
            self.skipTest("WRED on %s queue %d may drop ECT packets" % (dst, queue))
        r = fill(self.profile, src, pg, dst, queue, PACKET_LEN)
        if r.trig_egr_drp is None:
            self.skipTest("the profile drops DSCP %d at ingress (%s PG %d) at packet %s, before %s queue %d's egress "
                          "limit: no lossy egress drop point to test (%r)" % (dscp, src, pg, r.trig_ingr_drp, dst, queue, r))
        trig = r.trig_egr_drp
        margin = int(self.params.raw.get("pkts_num_margin", 0))
        print("\n  lossy_queue_1: DSCP %d -> TC %d, %s PG %d -> %s queue %d; %d cell(s)/packet; expect the first egress "
              "drop at packet %d" % (dscp, tc, src, pg, dst, queue, r.cells_per_packet, trig))
        pkt = self.routed_udp(src, dst_ip, dscp)
        base = self.snapshot(src, dst, pg, queue)
        held = self.hold(dst, queue, base["q"][0])

        def check(s, step):
            self.assertEqual(s["pfc_tx"], base["pfc_tx"], "step %d: PFC sent for a lossy flow" % step)
            self.assertEqual(s["pg_drop"] - base["pg_drop"], 0, "step %d: ingress (PG) drops" % step)
            self.assertEqual(s["rx_drp"] - base["rx_drp"], 0, "step %d: RX_DRP" % step)

        n1 = trig - 1 - margin
        intf = self.burst(src, pkt, n1, base, 0)
        held["admitted"] = n1
        s1 = self.snapshot(src, dst, pg, queue, intf)
        check(s1, 1)
        self.assertEqual(s1["q"][1] - base["q"][1], 0, "egress drops after %d packets, before the drop point %d" % (n1, trig))

        n2 = 1 + 2 * margin
        intf = self.burst(src, pkt, n2, base, n1)
        sent = n1 + n2
        s2 = self.snapshot(src, dst, pg, queue, intf)
        check(s2, 2)
        drops = s2["q"][1] - base["q"][1]
        held["admitted"] = sent - drops
        self.assertGreater(drops, 0, "no egress drop after %d packets (drop point %d)" % (sent, trig))
        self.assertEqual(s2["tx_drp"] - base["tx_drp"], drops, "TX_DRP and the queue drop counter disagree")
        observed = sent - drops + 1
        self.record("lossy_queue_1 pkts_num_trig_egr_drp (DSCP %d, %s queue %d)" % (dscp, dst, queue), trig, observed,
                    ok=(observed == trig) if margin == 0 else (n1 < observed <= sent))
        if margin == 0:
            self.assertEqual(observed, trig, "first egress drop at packet %d, expected %d" % (observed, trig))
