//! What the port backend tests share: a namespace with a veth pair, frames, and sending and receiving with
//! deadlines.

use crate::netns::{Netns, unique_name};
use lossless_dataplane::io::PortBackend;
use std::time::{Duration, Instant};

/// A fresh namespace, entered by the calling thread, holding the veth pair `sw0` — `h0`.
pub fn lab() -> Netns {
    let ns = Netns::new(&unique_name("llio")).expect("creating a network namespace (run as root)");
    ns.veth_local("sw0", "h0").expect("creating a veth pair");
    ns.enter_on_this_thread().expect("entering the namespace");
    ns
}

/// A fresh namespace, entered, with `sw0` — `h0` left as the kernel makes veths (TX checksum offload,
/// TSO/GSO on), `h0` holding 10.9.0.1/24 and a permanent neighbour 10.9.0.2, so a socket bound to
/// 10.9.0.1 sends through `h0` to `sw0`.
pub fn offload_lab() -> Netns {
    let ns = Netns::new(&unique_name("llof")).expect("creating a network namespace (run as root)");
    // By hand, not `veth_local`: that one turns the offloads off.
    ns.ip(&["link", "add", "sw0", "type", "veth", "peer", "name", "h0"]).unwrap();
    for dev in ["sw0", "h0"] {
        ns.ip(&["link", "set", "dev", dev, "up"]).unwrap();
    }
    let _ = ns.run_in(&["ethtool", "-K", "h0", "tx", "on", "gso", "on", "tx-udp-segmentation", "on"]);
    ns.ip(&["addr", "add", "10.9.0.1/24", "dev", "h0"]).unwrap();
    ns.ip(&["neigh", "add", "10.9.0.2", "lladdr", "02:00:00:00:00:0b", "dev", "h0", "nud", "permanent"])
        .unwrap();
    ns.enter_on_this_thread().expect("entering the namespace");
    ns
}

/// Sends `payload` as one datagram 10.9.0.1:4000 → 10.9.0.2:4791 from the kernel's UDP (see
/// [`offload_lab`]), then checks the frame `port` received carries it with a valid UDP checksum.
pub fn kernel_udp_arrives_with_valid_checksum(port: &mut dyn PortBackend) {
    use lossless_dataplane::wire::{EtherType, EthernetFrame, Ipv4Packet, UdpPacket};
    use std::net::{Ipv4Addr, UdpSocket};
    let socket = UdpSocket::bind("10.9.0.1:4000").unwrap();
    let payload: Vec<u8> = (0..=255u8).cycle().take(301).collect();
    socket.send_to(&payload, "10.9.0.2:4791").unwrap();
    let frames = recv_frames(port, 1);
    assert_eq!(frames.len(), 1, "the UDP frame did not arrive");
    let eth = EthernetFrame::new_checked(&frames[0][..]).unwrap();
    assert_eq!(eth.ethertype(), EtherType::Ipv4);
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert_eq!((ip.src_addr(), ip.dst_addr()), (Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 2)));
    let udp = UdpPacket::new_checked(ip.payload()).unwrap();
    assert_eq!(udp.payload(), &payload[..]);
    assert_ne!(udp.checksum(), 0, "the kernel sent a UDP checksum");
    assert!(
        udp.verify_checksum_v4(ip.src_addr(), ip.dst_addr()),
        "UDP checksum {:#06x} invalid",
        udp.checksum()
    );
}

/// Receives until `n` frames arrived or two seconds passed.
pub fn recv_frames(port: &mut dyn PortBackend, n: usize) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut frames = Vec::new();
    while frames.len() < n && Instant::now() < deadline {
        let want = n - frames.len();
        match port.recv_batch(&mut frames, want) {
            Ok(0) => wait_readable(port.raw_fd(), deadline),
            Ok(_) => {}
            Err(e) => panic!("{}: receive failed: {e}", port.name()),
        }
    }
    frames
}

/// Receives for `wait`, expecting nothing.
pub fn recv_nothing(port: &mut dyn PortBackend, wait: Duration) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + wait;
    let mut frames = Vec::new();
    while Instant::now() < deadline {
        port.recv_batch(&mut frames, 64).expect("receive");
        wait_readable(port.raw_fd(), deadline);
    }
    frames
}

/// Sends every frame, retrying what the kernel did not take yet.
pub fn send_all(port: &mut dyn PortBackend, frames: &[Vec<u8>]) {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut sent = 0;
    while sent < frames.len() {
        assert!(Instant::now() < deadline, "{}: only {sent} of {} frames sent", port.name(), frames.len());
        sent += port.send_batch(&frames[sent..]).expect("send");
    }
}

fn wait_readable(fd: i32, deadline: Instant) {
    let left = deadline.saturating_duration_since(Instant::now()).min(Duration::from_millis(20));
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, exclusively borrowed for the call.
    unsafe { libc::poll(&mut pfd, 1, left.as_millis().max(1) as libc::c_int) };
}

/// A plain frame, a PFC XOFF to 01:80:C2:00:00:01, an 802.1Q-tagged frame (PCP 3, VID 100), a
/// broadcast: the kinds a switch port must pass untouched.
pub fn sample_frames() -> Vec<Vec<u8>> {
    use lossless_dataplane::wire::build::{Dot1q, ethernet};
    use lossless_dataplane::wire::{EtherType, EthernetAddress, MacControlRepr, PfcRepr, mac_control};
    let a = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a]);
    let b = EthernetAddress([0x02, 0, 0, 0, 0, 0x0b]);
    let mut pfc = vec![0u8; mac_control::FRAME_LEN];
    MacControlRepr::Pfc(PfcRepr::xoff(0b0001_1000, 0xffff)).emit_frame(a, &mut pfc);
    let payload: Vec<u8> = (0..100u8).collect();
    vec![
        ethernet(a, b, None, EtherType::from(0x88b5), &payload),
        pfc,
        ethernet(a, b, Some(Dot1q { pcp: 3, dei: false, vid: 100 }), EtherType::from(0x88b5), &payload),
        ethernet(a, EthernetAddress::BROADCAST, None, EtherType::from(0x88b6), &payload[..10]),
    ]
}

/// A frame of `len` bytes with a numbered payload, unicast a → b.
pub fn numbered_frame(len: usize, n: u32) -> Vec<u8> {
    let mut frame = vec![0u8; len];
    frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x0b]);
    frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x0a]);
    frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    frame[14..18].copy_from_slice(&n.to_be_bytes());
    for (i, byte) in frame.iter_mut().enumerate().skip(18) {
        *byte = (i as u32).wrapping_mul(31).wrapping_add(n) as u8;
    }
    frame
}

/// `n` RoCEv2 frames (UDP 4791, ECT(0), source ports 0..n, `payload` bytes of UDP payload) from host `from`
/// to host `to` of the switchd test configurations' VLAN, where host `i` is `02:00:00:00:00:<i>` at
/// `10.0.0.<i>` (`to` may name a host nobody has, for FDB-miss tests).
pub fn star_roce(from: u8, to: u8, dscp: u8, n: u16, payload: usize) -> Vec<Vec<u8>> {
    use lossless_dataplane::wire::EthernetAddress;
    use lossless_dataplane::wire::build::Ipv4Flow;
    use lossless_dataplane::wire::ip::Ecn;
    use std::net::Ipv4Addr;
    let body = vec![0u8; payload];
    (0..n)
        .map(|i| {
            Ipv4Flow {
                src_mac: EthernetAddress([2, 0, 0, 0, 0, from]),
                dst_mac: EthernetAddress([2, 0, 0, 0, 0, to]),
                src_ip: Ipv4Addr::new(10, 0, 0, from),
                dst_ip: Ipv4Addr::new(10, 0, 0, to),
                src_port: i,
                dscp,
                ecn: Ecn::Ect0,
                ttl: 64,
            }
            .udp(4791, &body)
        })
        .collect()
}
