//! The notification point's CNP pacing (per QP and per port) and the reaction point's hold on the
//! pacing gap, on two NICs back to back (the harness of `nic/tests.rs`).

use super::*;

/// Every data packet from A is CE-marked on the link.
fn mark_everything(h: &mut Harness) {
    h.set_filter(Some(Box::new(|s: &Sent, frame: &mut Vec<u8>| {
        if s.from == A && s.is_data() {
            let l3 = s.decoded.l3_offset;
            assert!(Ipv4Packet::new_checked(&mut frame[l3..]).unwrap().set_ecn_ce());
        }
        true
    })));
}

/// The instants of the CNPs B sent, per destination QP of A.
fn cnps_from_b(h: &Harness) -> Vec<(u64, u32)> {
    h.sent
        .iter()
        .filter(|s| s.from == B)
        .filter_map(|s| s.bth().filter(|b| b.opcode.is_cnp()).map(|b| (s.at, b.dest_qp)))
        .collect()
}

#[test]
fn min_time_between_cnps_paces_the_port_across_qps() {
    let mut b = nic_config(B_MAC, B_IP);
    b.np = NpParams { cnp_interval_ns: 0, min_time_between_cnps_ns: 4_000, ..NpParams::default() };
    let mut h = Harness::new(nic_config(A_MAC, A_IP), b, 1_000);
    let qp1 = h.nic(A).add_flow(FlowConfig { dcqcn: false, ..flow_to_b(1) }).unwrap();
    let qp2 = h.nic(A).add_flow(FlowConfig { dcqcn: false, ..flow_to_b(2) }).unwrap();
    mark_everything(&mut h);
    h.run_until(1_000_000);
    let cnps = cnps_from_b(&h);
    // A marked packet every 354 ns: the port's 4 µs interval alone decides. The first at ~1.35 µs, then
    // one per 4 µs, at the first marked packet after it expires (≤ 354 ns late): 1 ms / 4.0–4.354 µs.
    assert!((230..=250).contains(&cnps.len()), "{}", cnps.len());
    for w in cnps.windows(2) {
        let gap = w[1].0 - w[0].0;
        assert!((4_000..4_400).contains(&gap), "{} → {}", w[0].0, w[1].0);
    }
    // The port's limit is on all QPs together. Which QP a CNP goes to is the one whose marked packet comes
    // first after the interval: here, with packets alternating exactly every 354 ns, always the same one
    // (a lockstep that the jitter of a real incast breaks: dcqcn-100g*.yaml spread them within ±12 %).
    let to_qp1 = cnps.iter().filter(|(_, qp)| *qp == qp1).count();
    let to_qp2 = cnps.iter().filter(|(_, qp)| *qp == qp2).count();
    assert_eq!(to_qp1 + to_qp2, cnps.len());
    let rx = |h: &mut Harness, qp| h.nic(B).rx_stats(A_IP, qp).unwrap().cnps_sent;
    assert_eq!(rx(&mut h, 0x12) + rx(&mut h, 0x13), cnps.len() as u64);
}

#[test]
fn without_an_interval_every_marked_packet_gets_a_cnp() {
    let mut b = nic_config(B_MAC, B_IP);
    b.np = NpParams { cnp_interval_ns: 0, min_time_between_cnps_ns: 0, ..NpParams::default() };
    let mut h = Harness::new(nic_config(A_MAC, A_IP), b, 1_000);
    h.nic(A).add_flow(FlowConfig { dcqcn: false, messages: Some(10), ..flow_to_b(1) }).unwrap();
    mark_everything(&mut h);
    h.run_until(u64::MAX / 2);
    let rx = h.nic(B).rx_stats(A_IP, 0x12).unwrap();
    assert_eq!((rx.ce_packets, rx.cnps_sent), (640, 640));
    assert_eq!(cnps_from_b(&h).len(), 640);
    assert_eq!(h.nic(A).flow_stats(1).unwrap().cnps_received, 640);
}

/// A packet sent at the minimum rate is followed by a gap of its line time at that rate (1106 bytes at
/// 1 Mb/s: 8.8 ms). When DCQCN raises the rate during the gap, the gap is the one at the new rate: the
/// flow must not sit out the old one. (A CNP for every marked packet drove rates to the minimum, and the
/// senders then stalled for milliseconds at full recovered rate.)
#[test]
fn a_rate_increase_shortens_the_gap_the_minimum_rate_left() {
    let mut a = nic_config(A_MAC, A_IP);
    // The first CNP sets 1 Mb/s; the timer's second step (additive, F = 1) adds 25 G to the target.
    a.dcqcn.rate_to_set_on_first_cnp_mbps = 1;
    a.dcqcn.rpg_ai_rate_mbps = 25_000;
    a.dcqcn.rpg_byte_reset_64bytes = 0;
    let mut h = Harness::new(a, nic_config(B_MAC, B_IP), 1_000);
    let qp = h.nic(A).add_flow(flow_to_b(1)).unwrap();
    let t0 = 10_000;
    h.inject(A, t0, cnp_to_a(qp));
    // Decrease check at t0 + 4 001 (stays at the 1 Mb/s floor); timer steps 300 and 600 µs after it.
    let recovered_at = t0 + 4_001 + 600_000;
    h.run_until(recovered_at - 1);
    let rate = h.nic(A).flow_dcqcn(1).unwrap().rate_bps();
    assert_eq!(rate, 1_000_000, "still at the minimum");
    let during = h.data_from(A).filter(|s| s.at > t0 + 1_000).count();
    assert!(during <= 1, "{during} packets at 1 Mb/s in 600 µs");
    h.run_until(recovered_at + 10_000);
    let rate = h.nic(A).flow_dcqcn(1).unwrap().rate_bps();
    assert_eq!(rate, (1_000_000u64 + 25_000_000_000).div_ceil(2));
    let first = h.data_from(A).map(|s| s.at).find(|&t| t >= recovered_at - 1);
    assert_eq!(first, Some(recovered_at), "the flow sends as soon as its rate is back");
    // And then at the new rate: 1106 line bytes at 12.5 Gb/s = 707.7 ns apart.
    let after: Vec<u64> = h.data_from(A).map(|s| s.at).filter(|&t| t >= recovered_at).collect();
    assert!(after.len() >= 14, "{}", after.len());
    assert!(after.windows(2).all(|w| (707..=709).contains(&(w[1] - w[0]))), "{after:?}");
}

#[test]
fn min_time_between_cnps_is_set_by_name_scaled_and_bounded() {
    let mut cfg = nic_config(B_MAC, B_IP);
    assert_eq!(cfg.np.min_time_between_cnps_ns, 0, "off by default: the paper's per-QP interval only");
    cfg.set_dcqcn_param("min_time_between_cnps_ns", "4000").unwrap();
    cfg.set_dcqcn_param("time_scale", "500").unwrap();
    assert_eq!(cfg.min_time_between_cnps(), Nanos::from_ns(2_000_000), "4 µs × 500");
    let e = cfg.set_dcqcn_param("min_time_between_cnps_ns", &(1u64 << 48).to_string()).unwrap_err();
    assert!(e.starts_with("min_time_between_cnps_ns: 281474976710656 is above"), "{e}");
    assert_eq!(cfg.np.min_time_between_cnps_ns, 4_000, "a refused value changes nothing");
}
