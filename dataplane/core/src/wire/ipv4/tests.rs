//! Tests of the IPv4 view and representation: the worked checksum example, parsing and emitting,
//! malformed headers, the TTL, ECN and DSCP rewrites, and properties.

use super::*;
use proptest::prelude::*;

// The worked example of IPv4 header checksum computation on Wikipedia ("IPv4 header checksum"):
// 192.168.0.1 -> 192.168.0.199, UDP, total length 115, DF, TTL 64, checksum 0xB861.
static HEADER_BYTES: [u8; 20] = [
    0x45, 0x00, 0x00, 0x73, // version 4, IHL 5, DS 0, total length 115
    0x00, 0x00, 0x40, 0x00, // ident 0, DF
    0x40, 0x11, 0xb8, 0x61, // TTL 64, UDP, checksum
    0xc0, 0xa8, 0x00, 0x01, // 192.168.0.1
    0xc0, 0xa8, 0x00, 0xc7, // 192.168.0.199
];

// A RoCEv2-like header: DSCP 0 with ECT(0), 10.0.0.1 -> 10.0.0.2, total length 48, checksum 0x1485.
static ECT_BYTES: [u8; 20] = [
    0x45, 0x02, 0x00, 0x30, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x85, //
    0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
];

/// `header` followed by zeros up to its total length, plus `padding` more bytes.
fn packet_bytes(header: &[u8], padding: usize) -> Vec<u8> {
    let total = usize::from(u16::from_be_bytes([header[2], header[3]]));
    let mut bytes = header.to_vec();
    bytes.resize(total + padding, 0);
    bytes
}

fn full_checksum(bytes: &[u8]) -> u16 {
    let mut copy = bytes.to_vec();
    let mut packet = Packet::new_unchecked(&mut copy[..]);
    packet.fill_checksum();
    packet.checksum()
}

fn header_repr() -> Repr {
    Repr {
        src_addr: Address::new(192, 168, 0, 1),
        dst_addr: Address::new(192, 168, 0, 199),
        protocol: Protocol::Udp,
        payload_len: 95,
        ttl: 64,
        dscp: 0,
        ecn: Ecn::NotEct,
        ident: 0,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    }
}

#[test]
fn deconstruct() {
    let bytes = packet_bytes(&HEADER_BYTES, 0);
    let packet = Packet::new_checked(&bytes[..]).unwrap();
    assert_eq!(packet.version(), 4);
    assert_eq!(packet.header_len(), 20);
    assert_eq!(packet.dscp(), 0);
    assert_eq!(packet.ecn(), Ecn::NotEct);
    assert_eq!(packet.total_len(), 115);
    assert_eq!(packet.ident(), 0);
    assert!(packet.dont_frag());
    assert!(!packet.more_frags());
    assert_eq!(packet.frag_offset(), 0);
    assert_eq!(packet.ttl(), 64);
    assert_eq!(packet.protocol(), Protocol::Udp);
    assert_eq!(packet.checksum(), 0xb861);
    assert_eq!(packet.src_addr(), Address::new(192, 168, 0, 1));
    assert_eq!(packet.dst_addr(), Address::new(192, 168, 0, 199));
    assert!(packet.verify_checksum());
    assert_eq!(packet.payload().len(), 95);
    assert_eq!(Repr::parse(&packet).unwrap(), header_repr());
}

#[test]
fn construct() {
    let mut bytes = vec![0xa5; 115];
    let mut packet = Packet::new_unchecked(&mut bytes);
    packet.set_version(4);
    packet.set_header_len(20);
    packet.set_dscp(0);
    packet.set_ecn(Ecn::NotEct);
    packet.set_total_len(115);
    packet.set_ident(0);
    packet.set_flags_and_offset(0);
    packet.set_dont_frag(true);
    packet.set_more_frags(false);
    packet.set_frag_offset(0);
    packet.set_ttl(64);
    packet.set_protocol(Protocol::Udp);
    packet.set_src_addr(Address::new(192, 168, 0, 1));
    packet.set_dst_addr(Address::new(192, 168, 0, 199));
    packet.fill_checksum();
    packet.payload_mut().fill(0);
    assert_eq!(bytes, packet_bytes(&HEADER_BYTES, 0));
}

#[test]
fn emit() {
    let repr = header_repr();
    let mut bytes = vec![0xa5; repr.buffer_len() + repr.payload_len];
    repr.emit(&mut Packet::new_unchecked(&mut bytes));
    assert_eq!(bytes[..20], HEADER_BYTES);
}

#[test]
fn payload_excludes_padding() {
    // A 48-byte packet in a minimum-size Ethernet frame (46-byte payload) cannot have padding, so
    // use a shorter one: total length 28, padded to 46.
    let mut header = ECT_BYTES;
    header[2..4].copy_from_slice(&28u16.to_be_bytes());
    let mut bytes = packet_bytes(&header, 18);
    bytes[20..28].fill(0x11);
    let packet = Packet::new_checked(&bytes[..]).unwrap();
    assert_eq!(packet.payload(), &[0x11; 8]);
}

#[test]
fn options_are_skipped() {
    // IHL 6 with one 4-byte option (NOP NOP NOP EOL), total length 28.
    let mut bytes = [0u8; 28];
    bytes[..20].copy_from_slice(&HEADER_BYTES);
    bytes[0] = 0x46;
    bytes[2..4].copy_from_slice(&28u16.to_be_bytes());
    bytes[20..24].copy_from_slice(&[1, 1, 1, 0]);
    bytes[24..28].copy_from_slice(&[9, 8, 7, 6]);
    let mut packet = Packet::new_unchecked(&mut bytes[..]);
    packet.fill_checksum();
    let packet = Packet::new_checked(&bytes[..]).unwrap();
    assert_eq!(packet.header_len(), 24);
    assert!(packet.verify_checksum());
    assert_eq!(packet.payload(), &[9, 8, 7, 6]);
    assert_eq!(Repr::parse(&packet).unwrap().payload_len, 4);
}

#[test]
fn fragments_parse() {
    let mut bytes = packet_bytes(&HEADER_BYTES, 0);
    let mut packet = Packet::new_unchecked(&mut bytes[..]);
    packet.set_dont_frag(false);
    packet.set_more_frags(true);
    packet.set_frag_offset(1480);
    packet.fill_checksum();
    assert_eq!(&bytes[6..8], &[0x20, 0xb9]); // MF, offset 185 × 8
    let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
    assert!(!repr.dont_frag && repr.more_frags);
    assert_eq!(repr.frag_offset, 1480);
}

#[test]
fn check_len_errors() {
    let malformed = |field| Error::Malformed { layer: Layer::Ipv4, field };
    let truncated = Error::Truncated { layer: Layer::Ipv4 };
    let bytes = packet_bytes(&HEADER_BYTES, 0);
    assert_eq!(Packet::new_checked(&bytes[..19]).unwrap_err(), truncated);
    // Total length 115 does not fit in 114 bytes.
    assert_eq!(Packet::new_checked(&bytes[..114]).unwrap_err(), truncated);
    let mut b = bytes.clone();
    b[0] = 0x65;
    assert_eq!(Packet::new_checked(&b[..]).unwrap_err(), malformed("version"));
    let mut b = bytes.clone();
    b[0] = 0x44;
    assert_eq!(Packet::new_checked(&b[..]).unwrap_err(), malformed("ihl"));
    let mut b = bytes.clone();
    b[0] = 0x4f; // 60-byte header in a 115-byte packet: fine
    assert!(Packet::new_checked(&b[..]).is_ok());
    assert_eq!(Packet::new_checked(&b[..59]).unwrap_err(), truncated);
    let mut b = bytes.clone();
    b[2..4].copy_from_slice(&19u16.to_be_bytes());
    assert_eq!(Packet::new_checked(&b[..]).unwrap_err(), malformed("total_len"));
}

#[test]
fn bad_checksum() {
    let mut bytes = packet_bytes(&HEADER_BYTES, 0);
    bytes[11] ^= 1;
    let packet = Packet::new_checked(&bytes[..]).unwrap();
    assert!(!packet.verify_checksum());
    assert_eq!(Repr::parse(&packet).unwrap_err(), Error::Checksum { layer: Layer::Ipv4 });
}

#[test]
fn decrement_ttl_updates_checksum() {
    let mut bytes = packet_bytes(&HEADER_BYTES, 0);
    let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
    assert_eq!(packet.decrement_ttl(), 63);
    assert_eq!(packet.ttl(), 63);
    assert!(packet.verify_checksum());
    assert_eq!(packet.checksum(), 0xb961);
    assert_eq!(packet.checksum(), full_checksum(&bytes[..20]));
}

#[test]
fn decrement_ttl_zero_saturates() {
    let mut bytes = packet_bytes(&HEADER_BYTES, 0);
    let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
    packet.set_ttl(1);
    packet.fill_checksum();
    assert_eq!(packet.decrement_ttl(), 0);
    assert_eq!(packet.decrement_ttl(), 0);
    assert_eq!(packet.ttl(), 0);
    assert!(packet.verify_checksum());
    assert_eq!(packet.checksum(), full_checksum(&bytes[..20]));
}

#[test]
fn set_ecn_ce_marks_ect() {
    for (ecn, ds) in [(Ecn::Ect0, 0x02), (Ecn::Ect1, 0x01)] {
        let mut bytes = packet_bytes(&ECT_BYTES, 0);
        let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
        packet.set_ecn(ecn);
        packet.fill_checksum();
        assert_eq!(packet.ds(), ds);
        assert!(packet.set_ecn_ce());
        assert_eq!(packet.ecn(), Ecn::Ce);
        assert_eq!(packet.dscp(), 0);
        assert!(packet.verify_checksum());
        assert_eq!(packet.checksum(), 0x1484);
        assert_eq!(packet.checksum(), full_checksum(&bytes[..20]));
    }
}

#[test]
fn set_ecn_ce_leaves_not_ect_and_ce() {
    let mut bytes = packet_bytes(&HEADER_BYTES, 0);
    let before = bytes.clone();
    let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
    assert!(!packet.set_ecn_ce());
    assert_eq!(bytes, before);

    let mut bytes = packet_bytes(&ECT_BYTES, 0);
    Packet::new_checked(&mut bytes[..]).unwrap().set_ecn_ce();
    let before = bytes.clone();
    assert!(Packet::new_checked(&mut bytes[..]).unwrap().set_ecn_ce());
    assert_eq!(bytes, before);
}

#[test]
fn rewrite_dscp_keeps_ecn() {
    let mut bytes = packet_bytes(&ECT_BYTES, 0);
    let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
    packet.rewrite_dscp(26);
    assert_eq!(packet.ds(), 0x6a);
    assert_eq!((packet.dscp(), packet.ecn()), (26, Ecn::Ect0));
    assert!(packet.verify_checksum());
    assert_eq!(packet.checksum(), 0x141d);
    assert!(packet.set_ecn_ce());
    assert_eq!(packet.checksum(), 0x141c);
    packet.rewrite_dscp(0xc0 | 26); // high bits ignored
    assert_eq!(packet.ds(), 0x6b);
    assert_eq!(packet.checksum(), full_checksum(&bytes[..20]));
}

fn arb_repr() -> impl Strategy<Value = Repr> {
    (
        (any::<[u8; 4]>(), any::<[u8; 4]>(), any::<u8>(), 0usize..=1500, any::<u8>()),
        (0..=ip::DSCP_MAX, 0u8..4, any::<u16>(), any::<bool>(), any::<bool>(), 0u16..=OFFSET_MASK),
    )
        .prop_map(|((src, dst, proto, payload_len, ttl), (dscp, ecn, ident, df, mf, off))| Repr {
            src_addr: Address::from(src),
            dst_addr: Address::from(dst),
            protocol: Protocol::from(proto),
            payload_len,
            ttl,
            dscp,
            ecn: Ecn::from(ecn),
            ident,
            dont_frag: df,
            more_frags: mf,
            frag_offset: off << 3,
        })
}

/// A valid header of any IHL and field values, with a correct checksum, and a few payload bytes.
fn arb_valid_packet() -> impl Strategy<Value = Vec<u8>> {
    (5u8..=15, proptest::collection::vec(any::<u8>(), 60 + 8), 0usize..=8).prop_map(
        |(ihl, mut bytes, payload)| {
            let total = usize::from(ihl) * 4 + payload;
            bytes[0] = 0x40 | ihl;
            bytes[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            bytes.truncate(total);
            Packet::new_unchecked(&mut bytes[..]).fill_checksum();
            bytes
        },
    )
}

#[derive(Debug, Clone, Copy)]
enum Edit {
    DecrementTtl,
    SetEcnCe,
    RewriteDscp(u8),
}

fn arb_edit() -> impl Strategy<Value = Edit> {
    prop_oneof![Just(Edit::DecrementTtl), Just(Edit::SetEcnCe), any::<u8>().prop_map(Edit::RewriteDscp),]
}

/// Makes random bytes more likely to pass `check_len`: version 4 and a total length within the data.
fn nudge_header(data: &mut [u8]) {
    if data.len() >= 4 {
        data[0] = 0x40 | data[0] & 0x0f;
        let total = u16::from_be_bytes([data[2], data[3]]) % (data.len() as u16 + 1);
        data[2..4].copy_from_slice(&total.to_be_bytes());
    }
}

proptest! {
    #[test]
    fn roundtrip(repr in arb_repr()) {
        let mut buf = vec![0xa5; repr.buffer_len() + repr.payload_len];
        repr.emit(&mut Packet::new_unchecked(&mut buf));
        let packet = Packet::new_checked(&buf).unwrap();
        prop_assert!(packet.verify_checksum());
        prop_assert_eq!(Repr::parse(&packet).unwrap(), repr);
    }

    #[test]
    fn incremental_edits_keep_checksum_valid(
        mut bytes in arb_valid_packet(),
        edits in proptest::collection::vec(arb_edit(), 1..16),
    ) {
        let header_len = usize::from(bytes[0] & 0x0f) * 4;
        for edit in edits {
            let mut packet = Packet::new_checked(&mut bytes[..]).unwrap();
            let (ttl, ecn, dscp) = (packet.ttl(), packet.ecn(), packet.dscp());
            match edit {
                Edit::DecrementTtl => {
                    prop_assert_eq!(packet.decrement_ttl(), ttl.saturating_sub(1));
                }
                Edit::SetEcnCe => {
                    prop_assert_eq!(packet.set_ecn_ce(), ecn != Ecn::NotEct);
                    prop_assert_eq!(packet.ecn(), if ecn == Ecn::NotEct { ecn } else { Ecn::Ce });
                    prop_assert_eq!(packet.dscp(), dscp);
                }
                Edit::RewriteDscp(d) => {
                    packet.rewrite_dscp(d);
                    prop_assert_eq!((packet.dscp(), packet.ecn()), (d & ip::DSCP_MAX, ecn));
                }
            }
            prop_assert!(packet.verify_checksum());
            prop_assert_eq!(packet.checksum(), full_checksum(&bytes[..header_len]));
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(mut data in proptest::collection::vec(any::<u8>(), 0..128), nudge in any::<bool>()) {
        if nudge {
            nudge_header(&mut data);
        }
        if let Ok(packet) = Packet::new_checked(&data[..]) {
            let _ = Repr::parse(&packet);
            let _ = (packet.version(), packet.header_len(), packet.dscp(), packet.ecn());
            let _ = (packet.total_len(), packet.ident(), packet.dont_frag(), packet.more_frags());
            let _ = (packet.frag_offset(), packet.ttl(), packet.protocol(), packet.checksum());
            let _ = (packet.src_addr(), packet.dst_addr(), packet.verify_checksum(), packet.payload());
        }
    }

    #[test]
    fn arbitrary_bytes_edits_never_panic(mut data in proptest::collection::vec(any::<u8>(), 0..128), dscp in any::<u8>()) {
        nudge_header(&mut data);
        if let Ok(mut packet) = Packet::new_checked(&mut data[..]) {
            packet.decrement_ttl();
            packet.set_ecn_ce();
            packet.rewrite_dscp(dscp);
            packet.fill_checksum();
            let _ = packet.payload_mut();
        }
    }
}

proptest! {
    /// `decrement_ttl` writes what the general `replace_word` of the TTL/protocol word writes.
    #[test]
    fn decrement_ttl_is_replace_word(mut header in proptest::collection::vec(any::<u8>(), 20..40), ttl in 1u8..) {
        header[8] = ttl;
        let mut general = header.clone();
        let word = u16::from_be_bytes([ttl - 1, general[9]]);
        Packet::new_unchecked(&mut general[..]).replace_word(8, word);
        prop_assert_eq!(Packet::new_unchecked(&mut header[..]).decrement_ttl(), ttl - 1);
        prop_assert_eq!(header, general);
    }
}
