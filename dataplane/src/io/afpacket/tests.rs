//! Tests of the receive fix-ups. The tests on veth pairs are in `dataplane/tests/port_backends.rs`.

use super::rx::{complete_checksum, with_vlan};
use super::*;
use crate::wire::EtherType;
use crate::wire::checksum;
use std::net::Ipv4Addr;

// A UDP/IPv4 frame as a sender with TX offload leaves it: the checksum field holds the folded
// pseudo-header sum (not complemented); completing it must give what a full computation gives.
#[test]
fn partial_checksum_is_completed_like_a_nic() {
    use crate::wire::build;
    use crate::wire::{EthernetAddress, Ipv4Repr, ip::Protocol};
    let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let datagram = build::udp_v4(src, dst, 1234, 4791, b"hello, lossless");
    let header = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        protocol: Protocol::Udp,
        payload_len: datagram.len(),
        ttl: 64,
        dscp: 0,
        ecn: crate::wire::ip::Ecn::NotEct,
        ident: 1,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    };
    let packet = build::ipv4(&header, &datagram);
    let full = build::ethernet(
        EthernetAddress([2, 0, 0, 0, 0, 1]),
        EthernetAddress([2, 0, 0, 0, 0, 2]),
        None,
        EtherType::Ipv4,
        &packet,
    );
    let csum_start = 14 + 20;
    let mut partial = full.clone();
    let udp_len = datagram.len() as u16;
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&udp_len.to_be_bytes());
    partial[csum_start + 6..csum_start + 8].copy_from_slice(&checksum::sum(&pseudo).to_be_bytes());
    let mut buf = vec![0u8; VNET_HDR_LEN];
    buf[0] = VIRTIO_NET_HDR_F_NEEDS_CSUM;
    buf[6..8].copy_from_slice(&(csum_start as u16).to_ne_bytes());
    buf[8..10].copy_from_slice(&6u16.to_ne_bytes());
    buf.extend_from_slice(&partial[..full.len()]);
    let mut stats = RxStats::default();
    let frame = take_vnet_frame("test", &mut buf, None, &mut stats).unwrap();
    assert_eq!(frame, full);
    assert_eq!(stats.checksums_completed, 1);
    // Offsets outside the frame leave it alone.
    let mut short = vec![0u8; 20];
    assert!(!complete_checksum(&mut short, 18, 6));
}

#[test]
fn stripped_vlan_tag_is_put_back_after_the_addresses() {
    let untagged: Vec<u8> = (0..20).collect();
    let tagged = with_vlan(&untagged, Some((0x8100, 0x6064)));
    assert_eq!(&tagged[..12], &untagged[..12]);
    assert_eq!(&tagged[12..16], &[0x81, 0x00, 0x60, 0x64]);
    assert_eq!(&tagged[16..], &untagged[12..]);
    assert_eq!(with_vlan(&untagged, None), untagged);
}
