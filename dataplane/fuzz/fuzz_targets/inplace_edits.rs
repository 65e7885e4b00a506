//! The dataplane's in-place edits (TTL decrement, ECN CE, DSCP rewrite, MAC rewrite) on any frame that
//! decodes: they must never panic, and an IPv4 header checksum that verified before must verify after.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lossless_core::wire::{self, EthernetAddress, EthernetFrame, Ipv4Packet, Ipv6Packet, L3};

fuzz_target!(|data: &[u8]| {
    let Ok(decoded) = wire::decode(data) else { return };
    let mut frame = data.to_vec();
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_src_addr(EthernetAddress([2, 0, 0, 0, 0, 1]));
    eth.set_dst_addr(EthernetAddress([2, 0, 0, 0, 0, 2]));
    let l3 = &mut frame[decoded.l3_offset..];
    match decoded.l3 {
        L3::Ipv4 { header, .. } => {
            let mut ip = Ipv4Packet::new_unchecked(l3);
            if header.ttl > 0 {
                ip.decrement_ttl();
            }
            ip.set_ecn_ce();
            ip.rewrite_dscp(header.dscp ^ 0x2a);
            assert!(ip.verify_checksum());
        }
        L3::Ipv6 { header, .. } => {
            let mut ip = Ipv6Packet::new_unchecked(l3);
            if header.hop_limit > 0 {
                ip.decrement_hop_limit();
            }
            ip.set_ecn_ce();
            ip.rewrite_dscp(header.dscp ^ 0x2a);
        }
        _ => {}
    }
    let _ = wire::decode(&frame);
});
