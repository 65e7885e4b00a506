//! sonic-mgmt's mapping tests (`tests/saitests/py3/sai_qos_tests.py`): DscpMappingPB, DscpToPgMapping,
//! Dot1pToQueueMapping — every expected count computed from the profile's maps.

use lossless_dataplane::model::config::ConfigDb;
use lossless_ptf::on_profiles;
use lossless_ptf::packet::{Udp, simple_udp_packet};
use lossless_ptf::qos::Qos;
use lossless_ptf::report::Report;
use lossless_ptf::{Ptf, profile};
use std::net::Ipv4Addr;

fn queue_packets(ptf: &mut Ptf, port: &str) -> Vec<u64> {
    ptf.port_counters(port).queues.iter().map(|q| q.packets).collect()
}

/// DscpMappingPB: one 64-byte packet per DSCP 0..63 (ECN 1) from a routed port to another; each arrives
/// routed with its DS field intact, and the destination's queue counters grow by exactly the number of
/// DSCPs each queue's TC maps from.
fn dscp_mapping_pb(name: &str) {
    let mut report = Report::new("DscpMappingPB", name);
    let mut ptf = Ptf::start(name, profile(name));
    let (src, dst) = (ptf.port_index("Ethernet0"), ptf.port_index("Ethernet4"));
    let dest = ptf.destination(dst);
    let (src_name, dst_name) = (ptf.port_name(src).to_owned(), ptf.port_name(dst).to_owned());
    let qos = Qos::new(&ptf.db);
    let mut expected = [0u64; 8];
    for dscp in 0..64u8 {
        let tc = qos.dscp_to_tc(&src_name, dscp);
        expected[usize::from(qos.tc_to_queue(&dst_name, tc))] += 1;
    }
    let before = queue_packets(&mut ptf, &dst_name);
    for dscp in 0..64u8 {
        let frame = simple_udp_packet(&Udp {
            pktlen: 64,
            eth_dst: ptf.router_mac(),
            ip_src: Ipv4Addr::new(10, 0, 0, 1),
            ip_dst: dest.ip,
            ip_dscp: dscp,
            ip_ecn: 1,
            ip_id: 100 + u16::from(dscp),
            ..Udp::default()
        });
        ptf.send_packet(src, &frame);
        let want = ptf.expected_routed(&frame, &dest);
        ptf.verify_packet(want, dst);
    }
    ptf.verify_no_other_packets();
    let after = queue_packets(&mut ptf, &dst_name);
    let observed: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    report.number("queue packets q0..q7", format!("{expected:?}"), format!("{observed:?}"));
    assert_eq!(observed, expected, "queue counter deltas on {dst_name}");
}
on_profiles!(dscp_mapping_pb => dscp_mapping_pb());

/// DscpToPgMapping: for each PG, one packet per DSCP mapped to it; the source port's PG packet counters
/// grow by exactly that many (and the others by nothing).
fn dscp_to_pg_mapping(name: &str) {
    let mut report = Report::new("DscpToPgMapping", name);
    let mut ptf = Ptf::start(name, profile(name));
    let (src, dst) = (ptf.port_index("Ethernet0"), ptf.port_index("Ethernet4"));
    let dest = ptf.destination(dst);
    let src_name = ptf.port_name(src).to_owned();
    let qos = Qos::new(&ptf.db);
    let pg_of: Vec<u8> = (0..64).map(|d| qos.tc_to_pg(&src_name, qos.dscp_to_tc(&src_name, d))).collect();
    let mut expected_all = [0u64; 8];
    let mut observed_all = [0u64; 8];
    for pg in 0..8u8 {
        let dscps: Vec<u8> = (0..64).filter(|&d| pg_of[usize::from(d)] == pg).collect();
        if dscps.is_empty() {
            continue;
        }
        let before: Vec<u64> = ptf.port_counters(&src_name).pgs.iter().map(|p| p.packets).collect();
        for &dscp in &dscps {
            let frame = simple_udp_packet(&Udp {
                pktlen: 64,
                eth_dst: ptf.router_mac(),
                ip_dst: dest.ip,
                ip_dscp: dscp,
                ..Udp::default()
            });
            ptf.send_packet(src, &frame);
        }
        let after: Vec<u64> = ptf.port_counters(&src_name).pgs.iter().map(|p| p.packets).collect();
        let delta: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        let mut want = [0u64; 8];
        want[usize::from(pg)] = dscps.len() as u64;
        expected_all[usize::from(pg)] = dscps.len() as u64;
        observed_all[usize::from(pg)] = delta[usize::from(pg)];
        assert_eq!(delta, want, "PG counters on {src_name} after the DSCPs of PG {pg}: {dscps:?}");
    }
    report.number("PG packets pg0..pg7", format!("{expected_all:?}"), format!("{observed_all:?}"));
}
on_profiles!(dscp_to_pg_mapping => dscp_to_pg_mapping());

/// The profile with a dot1p map on every port: SONiC's storage back-end DOT1P_TO_TC_MAP (0→1, 1→0, 2..7
/// identity), which neither shipped profile has, and Ethernet12 a
/// tagged member of the VLAN besides Ethernet16, so a frame crosses the switch tagged and its PCP can be
/// checked on the far side.
fn with_dot1p_map(mut db: ConfigDb) -> ConfigDb {
    let map = [(0, 1), (1, 0), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7)];
    for (pcp, tc) in map {
        db.set("DOT1P_TO_TC_MAP", "AZURE", &pcp.to_string(), tc.to_string());
    }
    let keys: Vec<String> = db.tables["PORT_QOS_MAP"].keys().filter(|k| *k != "global").cloned().collect();
    for key in keys {
        db.set("PORT_QOS_MAP", &key, "dot1p_to_tc_map", "AZURE");
    }
    db.set("VLAN_MEMBER", "Vlan1000|Ethernet12", "tagging_mode", "tagged");
    db
}

/// Dot1pToQueueMapping: tagged frames bridged between two tagged members of a VLAN, `n` per PCP 0..7, each
/// carrying a DSCP whose TC differs from the PCP's (so only PCP classification passes). Each arrives
/// unchanged (same VID and PCP); after each PCP the destination's queue counters grow by exactly `n` on
/// the queue the PCP maps to (dot1p_to_tc_map on ingress, tc_to_queue_map on egress) and by 0 elsewhere.
/// Runs on the profile plus a dot1p map (see [`with_dot1p_map`]).
fn dot1p_to_queue_mapping(name: &str) {
    let mut report = Report::new("Dot1pToQueueMapping", name);
    let mut ptf = Ptf::start(name, with_dot1p_map(profile(name)));
    report.number("config", "profile + DOT1P_TO_TC_MAP AZURE, Ethernet12 tagged", "applied at start");
    let (src, dst) = (ptf.port_index("Ethernet16"), ptf.port_index("Ethernet12"));
    let dest = ptf.destination(dst);
    let vid = dest.vlan.expect("Ethernet12 is a tagged member in this variant");
    let (src_name, dst_name) = (ptf.port_name(src).to_owned(), ptf.port_name(dst).to_owned());
    let db = ptf.db.clone();
    let qos = Qos::new(&db);
    const N: u64 = 4;
    let mut expected_all = [0u64; 8];
    let mut observed_all = [0u64; 8];
    for pcp in 0..8u8 {
        let tc = qos.dot1p_to_tc(&src_name, pcp).expect("the variant has a dot1p map");
        let queue = qos.tc_to_queue(&dst_name, tc);
        let dscp = (0..64).find(|&d| qos.dscp_to_tc(&src_name, d) != tc).expect("a DSCP of another TC");
        let frame = simple_udp_packet(&Udp {
            pktlen: 100,
            eth_dst: dest.mac,
            eth_src: lossless_ptf::packet::mac("02:cc:00:00:00:16"),
            dl_vlan_enable: true,
            vlan_vid: vid,
            vlan_pcp: pcp,
            ip_src: Ipv4Addr::new(192, 168, 0, 216),
            ip_dst: dest.ip,
            ip_dscp: dscp,
            ip_id: 200 + u16::from(pcp),
            ..Udp::default()
        });
        let before = queue_packets(&mut ptf, &dst_name);
        ptf.send_packets(src, &frame, N as usize);
        for _ in 0..N {
            ptf.verify_packet(&frame, dst);
        }
        let after = queue_packets(&mut ptf, &dst_name);
        let delta: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        let mut want = [0u64; 8];
        want[usize::from(queue)] = N;
        expected_all[usize::from(queue)] += N;
        for (o, d) in observed_all.iter_mut().zip(&delta) {
            *o += d;
        }
        assert_eq!(
            delta, want,
            "queue counters on {dst_name} after {N} frames with PCP {pcp} (TC {tc}, DSCP {dscp})"
        );
    }
    ptf.verify_no_other_packets();
    report.number("queue packets q0..q7", format!("{expected_all:?}"), format!("{observed_all:?}"));
}
on_profiles!(dot1p_to_queue_mapping => dot1p_to_queue_mapping());
