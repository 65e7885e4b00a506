"""sonic-mgmt's SAI QoS PTF tests (tests/saitests/py3/sai_qos_tests.py in sonic-net/sonic-mgmt) against a
Lossless switch: DscpMappingPB, PFCtest (xoff limit) and LossyQueueTest, with sonic-mgmt's procedure: hold
the destination's egress (sai_thrift_port_tx_disable -> `swctl hold`), fill, read counters, release.

The buffer tests expect sonic-mgmt's published figures for the profile (published.json, see published.py:
qos_params.th.yaml for th_balanced, NVIDIA's qos_param_generator.py applied to sn2700), with sonic-mgmt's
arithmetic and margins: PFC at pkts_num_trig_pfc +- margin, the first ingress drop at pkts_num_trig_ingr_drp
+- margin, the first egress drop of lossy_queue_1 at pkts_num_trig_egr_drp +- margin (test param
pkts_num_margin overrides the margin). Inside each window the packets go one at a time, so the summary shows
the exact packet; pass/fail is the window. A profile without published figures is skipped.

Differences from sonic-mgmt, on purpose: no leak-out compensation (the switch holds egress exactly, as
pkts_num_leak_out 0); 64-byte packets, one cell on both profiles (sonic-mgmt sends 300-byte packets on
Mellanox and divides the generator's cell counts by 4; here counts are cells); instead of sleeping 8 s for
counters, each burst ends when the switch has counted every frame in (RX_OK), and positive checks poll
their counter with a deadline.
"""

import time

import ptf.testutils as testutils
from ptf.packet import Ether, IP

import published
from lossless_switch import LosslessTest, wait_for

PACKET_LEN = 64


def wred_may_drop(wred, ect):
    """Whether a queue's WRED profile may drop green packets (ECT ones are marked instead when green is in
    its `ecn` set)."""
    if wred is None or str(wred.get("wred_green_enable", "false")).lower() != "true":
        return False
    ecn = str(wred.get("ecn", "ecn_none"))
    marks_green = ecn in ("ecn_all", "ecn_green", "ecn_green_yellow", "ecn_green_red")
    return not (ect and marks_green)


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
    """What PFCtest and LossyQueueTest share: the published block, the flow, the held destination, the
    counters read at a step."""

    def block(self, name):
        """The profile's published block `name`, and its margin (test param pkts_num_margin overrides it)."""
        figures = published.figures(self.profile_name)
        if figures is None:
            self.skipTest("no published sonic-mgmt figures for profile %s (published.json)" % self.profile_name)
        src, dst, _, _ = self.qos_ports()
        if (src, dst) != (figures["src_port"], figures["dst_port"]):
            self.skipTest("the figures are for %s -> %s, the test ports are %s -> %s"
                          % (figures["src_port"], figures["dst_port"], src, dst))
        if PACKET_LEN > figures["cell_size"]:
            self.skipTest("a %d-byte packet takes more than one %d-byte cell" % (PACKET_LEN, figures["cell_size"]))
        b = figures["blocks"][name]
        return b, int(self.params.raw.get("pkts_num_margin", published.margin(b)))

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

    def step(self, src, dst, pg, queue, pkt, count, base, sent_so_far, happened, settle=0.0):
        """Sends `count` packets one at a time; returns (the 1-based packet after which happened(snapshot)
        first held or None, the last snapshot). `settle`: how long to keep polling after each packet for
        an event the switch reports after admission (PFC frames leave in its transmit phase)."""
        first, snap = None, None
        for k in range(1, count + 1):
            intf = self.burst(src, pkt, 1, base, sent_so_far + k - 1)
            snap = self.snapshot(src, dst, pg, queue, intf)
            if first is None and not happened(snap) and settle > 0:
                deadline = time.monotonic() + settle
                while not happened(snap) and time.monotonic() < deadline:
                    time.sleep(0.01)
                    snap = self.snapshot(src, dst, pg, queue, intf)
            if first is None and happened(snap):
                first = sent_so_far + k
        return first, snap


class PFCtest(BufferFillTest):
    """testQosSaiPfcXoffLimit[xoff_1, xoff_2]: each published xoff block's DSCP, destination held. With T =
    pkts_num_trig_pfc, D = pkts_num_trig_ingr_drp, m = margin: (1) T - 1 - m packets -> no PFC on the source,
    no drops; (2) 1 + 2m, one at a time -> PFC for the PG's priority, no drops; (3) D - T - 1 - 2m -> no
    drops; (4) 1 + 2m, one at a time -> ingress drops (PG drop counter and RX_DRP), no egress drop."""

    def runTest(self):
        figures = published.figures(self.profile_name)
        names = sorted(n for n in (figures or {}).get("blocks", {}) if n.startswith("xoff_"))
        if not names:
            self.skipTest("no published xoff figures for profile %s" % self.profile_name)
        for name in names:
            with self.subTest(xoff=name):
                try:
                    self.xoff_limit(name)
                finally:
                    self.doCleanups()  # release and drain before the next DSCP

    def xoff_limit(self, name):
        b, margin = self.block(name)
        dscp = b["dscp"]
        src, dst, dst_ip, tc, pg, queue = self.flow(dscp)
        self.assertEqual(pg, b["pg"], "%s: DSCP %d reaches PG %d, the figures are for PG %d" % (name, dscp, pg, b["pg"]))
        q = self.profile.qos(src)
        priorities = [p for p in sorted(q["pfc_enable"]) if q["pfc_to_pg_map"][p] == pg]
        self.assertTrue(priorities, "%s: PG %d of %s is not lossless" % (name, pg, src))
        if wred_may_drop(self.profile.queue_wred(dst, queue), ect=True):
            self.skipTest("WRED on %s queue %d may drop ECT packets" % (dst, queue))
        trig_pfc, trig_drp = b["pkts_num_trig_pfc"], b["pkts_num_trig_ingr_drp"]
        print("\n  %s: DSCP %d -> TC %d, %s PG %d (PFC priority %s) -> %s queue %d; published: PFC at %s, ingress "
              "drop at %s (%s)" % (name, dscp, tc, src, pg, priorities, dst, queue, published.window(trig_pfc, margin),
                                   published.window(trig_drp, margin), b["source"]))
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

        # (1) up to just below the window: no PFC, nothing dropped.
        sent = n1 = trig_pfc - 1 - margin
        intf = self.burst(src, pkt, n1, base, 0)
        held["admitted"] = sent
        s1 = self.snapshot(src, dst, pg, queue, intf)
        early = pfc_delta(s1) > 0

        # (2) the window, one packet at a time: PFC for the PG's priority, still nothing dropped.
        first_pfc, s2 = self.step(src, dst, pg, queue, pkt, 1 + 2 * margin, base, sent,
                                  lambda s: pfc_delta(s) > 0, settle=0.5)
        sent += 1 + 2 * margin
        held["admitted"] = sent
        observed = "PFC within the first %d" % n1 if early else (first_pfc or "none by %d" % sent)
        self.record("%s pkts_num_trig_pfc (DSCP %d, %s PG %d)" % (name, dscp, src, pg),
                    published.window(trig_pfc, margin), observed, ok=not early and first_pfc is not None,
                    source=published.cite(b, "pkts_num_trig_pfc"))
        self.assertFalse(early, "%s: PFC sent after %d packets, before the window %s"
                         % (name, n1, published.window(trig_pfc, margin)))
        self.assertIsNotNone(first_pfc, "%s: no PFC after %d packets (%s)" % (name, sent, published.window(trig_pfc, margin)))
        check_no_drops(s1, 1)
        check_no_drops(s2, 2)

        # (3) into the headroom, up to just below the drop window: no drops, PFC keeps going.
        n3 = (trig_drp - trig_pfc) - 1 - 2 * margin
        intf = self.burst(src, pkt, n3, base, sent)
        sent += n3
        held["admitted"] = sent
        s3 = self.snapshot(src, dst, pg, queue, intf)
        early = s3["pg_drop"] - base["pg_drop"] > 0 or s3["rx_drp"] - base["rx_drp"] > 0

        # (4) the drop window, one packet at a time: ingress drops, no egress drop.
        first_drp, s4 = self.step(src, dst, pg, queue, pkt, 1 + 2 * margin, base, sent,
                                  lambda s: s["pg_drop"] - base["pg_drop"] > 0)
        sent += 1 + 2 * margin
        drops = s4["pg_drop"] - base["pg_drop"]
        held["admitted"] = sent - drops
        observed = "drops within the first %d" % (sent - 1 - 2 * margin) if early else (first_drp or "none by %d" % sent)
        self.record("%s pkts_num_trig_ingr_drp (DSCP %d, %s PG %d)" % (name, dscp, src, pg),
                    published.window(trig_drp, margin), observed, ok=not early and first_drp is not None,
                    source=published.cite(b, "pkts_num_trig_ingr_drp"))
        self.assertFalse(early, "%s: ingress drops before the window %s" % (name, published.window(trig_drp, margin)))
        self.assertGreater(pfc_delta(s3), 0)
        self.assertIsNotNone(first_drp, "%s: no ingress drop after %d packets (%s)"
                             % (name, sent, published.window(trig_drp, margin)))
        self.assertEqual(drops, sent - first_drp + 1, "%s: PG drops against the first drop at %d" % (name, first_drp))
        self.assertEqual(s4["rx_drp"] - base["rx_drp"], drops, "%s: RX_DRP and the PG drop counter disagree" % name)
        self.assertEqual(s4["q"][1] - base["q"][1], 0, "%s step 4: egress drops" % name)
        self.assertEqual(s4["tx_drp"] - base["tx_drp"], 0, "%s step 4: TX_DRP" % name)


class LossyQueueTest(BufferFillTest):
    """testQosSaiLossyQueue[lossy_queue_1]: the block's lossy DSCP, destination held. With E =
    pkts_num_trig_egr_drp and m = margin: E - 1 - m packets -> no PFC, no ingress drop, no egress drop; 1 + 2m
    more, one at a time -> egress drops, still no PFC and no ingress drop."""

    def runTest(self):
        b, margin = self.block("lossy_queue_1")
        dscp = b["dscp"]
        src, dst, dst_ip, tc, pg, queue = self.flow(dscp)
        self.assertEqual(pg, b["pg"], "DSCP %d reaches PG %d, the figures are for PG %d" % (dscp, pg, b["pg"]))
        self.assertNotIn(pg, self.profile.lossless_pgs(src), "DSCP %d is lossless on %s" % (dscp, src))
        self.assertNotIn(queue, self.profile.lossless_queues(dst), "DSCP %d is lossless on %s" % (dscp, dst))
        if wred_may_drop(self.profile.queue_wred(dst, queue), ect=True):
            self.skipTest("WRED on %s queue %d may drop ECT packets" % (dst, queue))
        trig = b["pkts_num_trig_egr_drp"]
        print("\n  lossy_queue_1: DSCP %d -> TC %d, %s PG %d -> %s queue %d; published: first egress drop at %s (%s)"
              % (dscp, tc, src, pg, dst, queue, published.window(trig, margin), b["source"]))
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
        early = s1["q"][1] - base["q"][1] > 0

        first, s2 = self.step(src, dst, pg, queue, pkt, 1 + 2 * margin, base, n1,
                              lambda s: s["q"][1] - base["q"][1] > 0 or s["pg_drop"] - base["pg_drop"] > 0)
        sent = n1 + 1 + 2 * margin
        drops = s2["q"][1] - base["q"][1]
        held["admitted"] = sent - drops - (s2["pg_drop"] - base["pg_drop"])
        observed = "drops within the first %d" % n1 if early else (first or "none by %d" % sent)
        self.record("lossy_queue_1 pkts_num_trig_egr_drp (DSCP %d, %s queue %d)" % (dscp, dst, queue),
                    published.window(trig, margin), observed, ok=not early and first is not None and drops > 0,
                    source=published.cite(b, "pkts_num_trig_egr_drp"))
        self.assertFalse(early, "egress drops after %d packets, before the window %s" % (n1, published.window(trig, margin)))
        check(s1, 1)
        check(s2, 2)
        self.assertIsNotNone(first, "no drop after %d packets (%s)" % (sent, published.window(trig, margin)))
        self.assertEqual(drops, sent - first + 1, "egress drops against the first drop at %d" % first)
        self.assertEqual(s2["tx_drp"] - base["tx_drp"], drops, "TX_DRP and the queue drop counter disagree")
