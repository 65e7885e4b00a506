//! sonic-mgmt's mapping tests (`tests/saitests/py3/sai_qos_tests.py`): DscpMappingPB, DscpToPgMapping,
//! Dot1pToQueueMapping — every expected count computed from the profile's maps.

use lossless_ptf::packet::{Udp, simple_udp_packet};
use lossless_ptf::qos::Qos;
use lossless_ptf::report::Report;
use lossless_ptf::{Ptf, profile};
use std::net::Ipv4Addr;

macro_rules! on_profiles {
    ($test:ident) => {
        mod $test {
            #[test]
            fn th_balanced() {
                super::$test("th_balanced");
            }
            #[test]
            fn sn2700() {
                super::$test("sn2700");
            }
        }
    };
}

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
on_profiles!(dscp_mapping_pb);

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
on_profiles!(dscp_to_pg_mapping);
