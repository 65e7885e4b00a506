"""sonic-mgmt's PFC watchdog drop action (tests/pfcwd/test_pfcwd_function.py::test_pfcwd_actions[drop],
ptf class pfc_wd.PfcWdTest, sonic-net/sonic-mgmt) against a Lossless switch.

A storm on a lossless queue of the destination port -- sonic-mgmt's fake storm (`DEBUG_STORM` in
COUNTERS_DB; here `swctl pfcwd debug_storm`) -- is detected after the port's detection_time; then packets
sent to the stormed queue are dropped and counted exactly (queue drop counter and the watchdog's TX drop /
TX LAST drop grow by the packet count), while the port's other lossless queue still forwards. After the storm stops the queue is restored and forwards again.

Why not PFC frames from the ptf port (sonic-mgmt's pfc_gen.py on the fanout): under the switch's `vs`
detection rule the queue must stay paused with packets waiting for the whole detection time, and a pause
of 65535 quanta lasts 335 us at 100G; a Python sender thread on a shared host leaves gaps of several
milliseconds, the queue drains in a gap and the storm is (rightly) never declared.
"""

import time

import ptf.testutils as testutils
from ptf.packet import Ether, IP

from lossless_switch import LosslessTest, wait_for


class PfcWdTest(LosslessTest):
    def runTest(self):
        prof = self.profile
        src, dst, dst_ip, _ = self.qos_ports()
        count = int(self.params.raw.get("pkt_count", 100))
        qos = prof.qos(dst)
        watched = {qos["pfc_to_queue_map"][p]: p for p in qos["pfcwd_sw_enable"] & qos["pfc_enable"]}
        # The stormed queue and one other lossless queue of dst, each with a DSCP that reaches it from src.
        by_queue = {}
        for dscp in range(64):
            _, _, q = prof.classify(src, dst, dscp)
            if q in prof.lossless_queues(dst):
                by_queue.setdefault(q, dscp)
        stormed = next((q for q in sorted(by_queue) if q in watched), None)
        if stormed is None:
            self.skipTest("no DSCP from %s reaches a watched lossless queue of %s" % (src, dst))
        other = next((q for q in sorted(by_queue) if q != stormed), None)
        priority = watched[stormed]
        wd = prof.pfc_wd(dst)
        if not wd or wd.get("action", "drop") != "drop":
            # pfcwd start --action drop, as the sonic-mgmt test does; put the port's old entry back after.
            old = dict(wd or {})
            self.sw.pfcwd_start(dst, int(old.get("detection_time", 400)), "drop", int(old.get("restoration_time", 400)))
            if old:
                self.addCleanup(self.sw.pfcwd_start, dst, int(old["detection_time"]), old.get("action", "drop"),
                                int(old["restoration_time"]) if "restoration_time" in old else None)
            wd = self.sw.running_config()["PFC_WD"][dst]
        detection_ms = int(wd["detection_time"])
        restoration_ms = int(wd.get("restoration_time", 0))
        poll_ms = int((prof.table("PFC_WD").get("GLOBAL") or {}).get("POLL_INTERVAL", 200))
        key = "%s:%d" % (dst, stormed)
        print("\n  storm (DEBUG_STORM) on %s (PFC priority %d), action drop, detection %d ms, restoration %d ms, "
              "poll %d ms; %d packets per check" % (key, priority, detection_ms, restoration_ms, poll_ms, count))

        base_id = 2000

        def pkt(dscp, i):
            return self.routed_udp(src, dst_ip, dscp, ip_id=base_id + i)

        def send_and_collect(dscp, expect):
            """Sends `count` packets; returns how many of them arrived on dst's ptf port."""
            self.dataplane.flush()
            for i in range(count):
                self.send(src, pkt(dscp, i), 1)
            got = set()
            deadline = time.monotonic() + (5 if expect else 1)  # the negative window is explicit
            while len(got) < count and time.monotonic() < deadline:
                res = testutils.dp_poll(self, port_number=self.ptf_port(dst), timeout=0.2)
                if isinstance(res, self.dataplane.PollSuccess):
                    p = Ether(res.packet)
                    if IP in p and base_id <= p[IP].id < base_id + count and p[IP].tos >> 2 == dscp:
                        got.add(p[IP].id)
            return len(got)

        # ---- storm and detection -------------------------------------------------------------------
        stats0 = self.sw.pfcwd_stats()[key]
        self.assertEqual(stats0["status"], "operational", "%s is not monitored or already stormed" % key)
        t0 = time.monotonic()  # before the storm starts: the measured latency is never below the real one
        stop = self.start_storm(dst, stormed)
        self.addCleanup(stop)
        st = wait_for("%s stormed" % key, lambda: self.sw.pfcwd_stats()[key],
                      lambda s: s["status"] == "stormed", timeout=detection_ms / 1000 + 2 * poll_ms / 1000 + 5, interval=0.02)
        detected_ms = (time.monotonic() - t0) * 1000
        self.assertEqual(st["detected"] - stats0["detected"], 1)
        self.record("%s detection (ms, upper bound of the real time)" % key, "> %d" % detection_ms, round(detected_ms),
                    ok=detected_ms > detection_ms)
        self.assertGreater(detected_ms, detection_ms, "storm declared before detection_time")

        # ---- drop action: traffic to the stormed queue is dropped, exactly counted ------------------
        q0 = self.sw.queue_counters(dst)
        st0 = self.sw.pfcwd_stats()[key]
        arrived = send_and_collect(by_queue[stormed], expect=False)
        st1 = wait_for("%s TX drops to grow by %d" % (key, count), lambda: self.sw.pfcwd_stats()[key],
                       lambda s: s["tx_drop"] - st0["tx_drop"] >= count)
        q1 = self.sw.queue_counters(dst)
        ok = self.record("%s TX DROP delta" % key, count, st1["tx_drop"] - st0["tx_drop"])
        ok &= self.record("%s TX LAST DROP" % key, count + st0["tx_last_drop"], st1["tx_last_drop"])
        ok &= self.record("%s queue %d dropped packets delta" % (dst, stormed), count, q1[stormed][1] - q0[stormed][1])
        ok &= self.record("%s queue %d transmitted delta" % (dst, stormed), 0, q1[stormed][0] - q0[stormed][0])
        ok &= self.record("packets of DSCP %d received on %s during the storm" % (by_queue[stormed], dst), 0, arrived)
        self.assertTrue(ok, "drop action counters")

        # ---- the other lossless queue still forwards --------------------------------------------------
        if other is not None:
            arrived = send_and_collect(by_queue[other], expect=True)
            self.assertTrue(self.record("DSCP %d (queue %d) received on %s during the storm" % (by_queue[other], other, dst),
                                        count, arrived))

        # ---- storm ends: restored, forwarding again -----------------------------------------------------
        stop()
        st2 = wait_for("%s restored" % key, lambda: self.sw.pfcwd_stats()[key], lambda s: s["status"] == "operational",
                       timeout=restoration_ms / 1000 + 2 * poll_ms / 1000 + 5)
        self.assertEqual(st2["restored"] - stats0["restored"], 1)
        arrived = send_and_collect(by_queue[stormed], expect=True)
        self.assertTrue(self.record("DSCP %d received on %s after restoration" % (by_queue[stormed], dst), count, arrived))

    def start_storm(self, port, queue):
        """Starts the fake storm (SONiC's DEBUG_STORM); returns the function that stops it (idempotent)."""
        self.sw.debug_storm(port, queue, True)
        done = []

        def stop():
            if not done:
                done.append(1)
                self.sw.debug_storm(port, queue, False)
        return stop
