//! What a received frame is, read at fixed offsets for the two kinds a NIC of a fabric receives by the
//! hundred thousand: an untagged IPv4 RoCEv2 packet with a 20-byte IP header, and a MAC Control frame
//! (PFC, in a congested fabric nearly half of what a host receives). Anything else, or anything unusual
//! about these, is left to the general parsers ([`crate::wire::roce_v4`], [`crate::wire::decode`]).
//!
//! The general parsers read each field through a checked accessor (a bounds check and a call each): about
//! 380 instructions per RoCE frame and a full decode per PFC frame in the 128-host Clos shuffle. The
//! answers here are the same (debug builds check every frame against them, and so do the tests below).

use crate::time::Instant;
use crate::wire::ip::{self, Protocol};
use crate::wire::{
    BthHeader, BthRepr, EthernetAddress, Ipv4Repr, MacControlRepr, RoceV4, UdpRepr, checksum, mac_control,
};

/// Offsets in an untagged frame.
const IP: usize = 14;
const UDP: usize = IP + 20;
const BTH: usize = UDP + 8;
/// Ethernet, IPv4 without options, UDP and a BTH.
const HEAD: usize = BTH + 12;
/// IPv4 flags and fragment offset: More Fragments and the offset (a fragment is not parsed as RoCE).
const MF_AND_OFFSET: u16 = 0x3fff;

/// A received frame, as far as the fixed-offset reading could tell.
#[derive(Debug)]
pub(super) enum Fast {
    /// What [`crate::wire::roce_v4`] returns for it.
    Roce(RoceV4),
    /// A MAC Control frame: what [`crate::wire::decode`] makes of its payload (`Err` when it does not
    /// decode).
    MacControl(Result<MacControlRepr, crate::wire::Error>),
    /// Anything else: for the general parsers.
    Other,
}

/// Classifies `frame` (see the module documentation).
pub(super) fn classify(frame: &[u8]) -> Fast {
    let Some(&[hi, lo]) = frame.get(12..14) else { return Fast::Other };
    match u16::from_be_bytes([hi, lo]) {
        0x0800 => roce(frame).map_or(Fast::Other, Fast::Roce),
        0x8808 => Fast::MacControl(
            mac_control::Packet::new_checked(&frame[IP..]).and_then(|p| MacControlRepr::parse(&p)),
        ),
        _ => Fast::Other,
    }
}

/// An untagged IPv4 frame: the RoCEv2 view [`crate::wire::roce_v4`] gives when it has no IP options and
/// decodes as RoCEv2; `None` for anything else (which the general parser then reads).
fn roce(frame: &[u8]) -> Option<RoceV4> {
    let h: &[u8; HEAD] = frame.get(..HEAD)?.try_into().ok()?;
    let be16 = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
    // Version 4, IHL 5; the total length within the frame and covering the header.
    let total_len = usize::from(be16(IP + 2));
    if h[IP] != 0x45 || total_len < 20 || total_len > frame.len() - IP {
        return None;
    }
    if checksum::sum(&h[IP..UDP]) != 0xffff {
        return None;
    }
    let flags = be16(IP + 6);
    if flags & MF_AND_OFFSET != 0 || Protocol::from(h[IP + 9]) != Protocol::Udp {
        return None;
    }
    // UDP within the IP payload, to port 4791, with room for a BTH.
    let udp_len = usize::from(be16(UDP + 4));
    if udp_len < 8 + 12 || udp_len > total_len - 20 || be16(UDP + 2) != crate::wire::udp::ROCEV2_PORT {
        return None;
    }
    let (dscp, ecn) = ip::split_ds(h[IP + 1]);
    let ip = Ipv4Repr {
        src_addr: [h[IP + 12], h[IP + 13], h[IP + 14], h[IP + 15]].into(),
        dst_addr: [h[IP + 16], h[IP + 17], h[IP + 18], h[IP + 19]].into(),
        protocol: Protocol::Udp,
        payload_len: total_len - 20,
        ttl: h[IP + 8],
        dscp,
        ecn,
        ident: be16(IP + 4),
        dont_frag: flags & 0x4000 != 0,
        more_frags: false,
        frag_offset: 0,
    };
    let udp =
        UdpRepr { src_port: be16(UDP), dst_port: crate::wire::udp::ROCEV2_PORT, payload_len: udp_len - 8 };
    let bth = BthRepr::parse(&BthHeader::new_unchecked(&h[BTH..HEAD])).ok()?;
    let mac = |i: usize| EthernetAddress([h[i], h[i + 1], h[i + 2], h[i + 3], h[i + 4], h[i + 5]]);
    Some(RoceV4 { src_mac: mac(6), dst_mac: mac(0), ip, udp, udp_offset: UDP, bth })
}

impl super::Nic {
    /// A PFC or PAUSE frame arrived.
    pub(super) fn receive_mac_control(&mut self, repr: MacControlRepr, now: Instant) {
        match repr {
            MacControlRepr::Pfc(pfc) => {
                self.counters.rx_pfc_frames += 1;
                self.pfc.receive(&pfc, self.cfg.pfc_enable, self.cfg.line_rate_mbps, now);
            }
            MacControlRepr::Pause(pause) => {
                self.counters.rx_pause_frames += 1;
                if self.cfg.pfc_enable == 0 {
                    self.pfc.receive_pause(pause.pause_time, self.cfg.line_rate_mbps, now);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::packet::{self, Envelope};
    use crate::wire::bth::Opcode;
    use crate::wire::ip::Ecn;
    use crate::wire::{L3, decode, roce_v4};
    use proptest::prelude::*;

    /// What the general parsers make of `frame`, in the terms of [`Fast`].
    fn general(frame: &[u8]) -> (Option<RoceV4>, Option<Result<MacControlRepr, crate::wire::Error>>) {
        let mac_control = match decode(frame) {
            Ok(d) => match d.l3 {
                L3::MacControl(m) if d.vlan.is_none() => Some(Ok(m)),
                _ => None,
            },
            Err(e) => Some(Err(e)),
        };
        (roce_v4(frame), mac_control)
    }

    /// The fast reading never contradicts the general parsers: a RoCE view is theirs, a MAC Control
    /// payload is what decode finds (or the error it stops at), and only these two are claimed.
    fn agrees(frame: &[u8]) -> Result<(), TestCaseError> {
        let (roce, decoded) = general(frame);
        match classify(frame) {
            Fast::Roce(r) => prop_assert_eq!(Some(r), roce),
            Fast::MacControl(m) => {
                prop_assert!(frame.len() >= 14 && frame[12..14] == [0x88, 0x08]);
                prop_assert_eq!(Some(m), decoded);
            }
            Fast::Other => {}
        }
        Ok(())
    }

    fn data_frame(vlan: Option<u16>, payload_len: usize) -> Vec<u8> {
        // A CE-marked packet, so that the fast read's ECN is checked too.
        let env = Envelope { ecn: Ecn::Ce, ..packet::tests::envelope(vlan) };
        let bth = packet::bth(Opcode::RcSendLast, 0x11, 0xab_cdef, true);
        packet::rocev2_frame(&env, &bth, payload_len, |p| p.iter_mut().for_each(|b| *b = 0x5a))
    }

    #[test]
    fn reads_a_rocev2_frame_and_pfc_as_the_general_parsers() {
        let frame = data_frame(None, 100);
        match classify(&frame) {
            Fast::Roce(r) => assert_eq!(Some(r), roce_v4(&frame)),
            other => panic!("a RoCEv2 frame read as {other:?}"),
        }
        // Tagged: left to the general parser.
        assert!(matches!(classify(&data_frame(Some(5), 100)), Fast::Other));
        let mut pfc = vec![0u8; mac_control::FRAME_LEN];
        let repr =
            MacControlRepr::Pfc(crate::wire::PfcRepr { class_enable: 0x08, time: [0, 0, 0, 7, 0, 0, 0, 0] });
        repr.emit_frame(EthernetAddress([2, 0, 0, 0, 0, 9]), &mut pfc);
        match classify(&pfc) {
            Fast::MacControl(Ok(m)) => assert_eq!(m, repr),
            other => panic!("a PFC frame read as {other:?}"),
        }
    }

    proptest! {
        /// Any byte of a RoCEv2 or PFC frame changed, the frame cut short or padded: the same answers.
        #[test]
        fn agrees_with_the_general_parsers(
            pfc in any::<bool>(),
            payload_len in 0usize..200,
            edits in prop::collection::vec((0usize..80, any::<u8>()), 0..4),
            cut in prop::option::of(0usize..120),
            pad in 0usize..8,
            refill in any::<bool>(),
        ) {
            let mut frame = if pfc {
                let mut f = vec![0u8; mac_control::FRAME_LEN];
                MacControlRepr::Pfc(crate::wire::PfcRepr { class_enable: 0x28, time: [0, 0, 0, 9, 0, 0xffff, 0, 0] })
                    .emit_frame(EthernetAddress([2, 0, 0, 0, 0, 9]), &mut f);
                f
            } else {
                data_frame(None, payload_len)
            };
            frame.extend(std::iter::repeat_n(0, pad));
            for (i, b) in edits {
                if let Some(x) = frame.get_mut(i) {
                    *x = b;
                }
            }
            // A valid IP checksum over the edited header, so that edits there reach the other checks.
            if refill && !pfc && frame.len() >= UDP {
                frame[IP + 10..IP + 12].fill(0);
                let sum = !checksum::sum(&frame[IP..UDP]);
                frame[IP + 10..IP + 12].copy_from_slice(&sum.to_be_bytes());
            }
            if let Some(cut) = cut {
                frame.truncate(cut);
            }
            agrees(&frame)?;
        }
    }
}
