//! The port backends (AF_PACKET, pnet, TAP) on veth pairs and TAP devices in throwaway network namespaces:
//! frames cross byte for byte, in order, with the kernel's quirks (offloads, MTU, drops) handled. Each test
//! enters a fresh namespace on its own thread (see `lossless_testkit::frames::lab`). Needs root and iproute2.

mod afpacket {
    use lossless_dataplane::io::afpacket::{AfPacketPort, RxMode, TxMode};
    use lossless_dataplane::io::{PortBackend, PortSpec, open};
    use lossless_testkit::frames::{
        kernel_udp_arrives_with_valid_checksum, lab, numbered_frame, offload_lab, recv_frames, recv_nothing,
        sample_frames, send_all,
    };
    use std::io;
    use std::mem;
    use std::net::UdpSocket;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    fn port(name: &str) -> AfPacketPort {
        AfPacketPort::open(name).unwrap_or_else(|e| panic!("opening {name}: {e}"))
    }

    #[test]
    fn frames_cross_a_veth_both_ways_byte_for_byte() {
        let _ns = lab();
        let mut sw = port("sw0");
        let mut host = port("h0");
        let frames = sample_frames();
        send_all(&mut sw, &frames);
        assert_eq!(recv_frames(&mut host, frames.len()), frames);
        send_all(&mut host, &frames);
        assert_eq!(recv_frames(&mut sw, frames.len()), frames, "PFC and 802.1Q frames must arrive unchanged");
        assert!(recv_nothing(&mut sw, Duration::from_millis(50)).is_empty());
    }

    #[test]
    fn open_dispatches_on_the_spec() {
        let _ns = lab();
        let mut sw = open(&PortSpec::parse("sw0").unwrap()).unwrap();
        let mut host = open(&PortSpec::parse("h0").unwrap()).unwrap();
        assert_eq!(sw.name(), "sw0");
        let frames = sample_frames();
        send_all(&mut *host, &frames);
        assert_eq!(recv_frames(&mut *sw, frames.len()), frames);
    }

    #[test]
    fn own_transmissions_are_not_read_back() {
        let _ns = lab();
        let mut sw = port("sw0");
        let mut host = port("h0");
        send_all(&mut sw, &sample_frames());
        assert_eq!(recv_frames(&mut host, 4).len(), 4);
        assert!(recv_nothing(&mut sw, Duration::from_millis(100)).is_empty());
    }

    #[test]
    fn jumbo_frames_cross_at_mtu_9100() {
        let ns = lab();
        for dev in ["sw0", "h0"] {
            ns.ip(&["link", "set", "dev", dev, "mtu", "9100"]).unwrap();
        }
        let mut sw = port("sw0");
        let mut host = port("h0");
        let jumbo = vec![numbered_frame(9000, 1), numbered_frame(9000 + 14, 2)];
        send_all(&mut sw, &jumbo);
        assert_eq!(recv_frames(&mut host, 2), jumbo);
        send_all(&mut host, &jumbo);
        assert_eq!(recv_frames(&mut sw, 2), jumbo);
    }

    #[test]
    fn mtu_raised_after_open_costs_one_frame_then_fits() {
        let ns = lab();
        let mut sw = port("sw0");
        let mut host = port("h0");
        for dev in ["sw0", "h0"] {
            ns.ip(&["link", "set", "dev", dev, "mtu", "9100"]).unwrap();
        }
        send_all(&mut host, &[numbered_frame(9000, 1)]);
        assert!(recv_nothing(&mut sw, Duration::from_millis(100)).is_empty());
        assert_eq!(sw.rx_truncated(), 1);
        send_all(&mut host, &[numbered_frame(9000, 2)]);
        assert_eq!(recv_frames(&mut sw, 1), vec![numbered_frame(9000, 2)]);
    }

    #[test]
    fn oversized_frame_is_dropped_without_holding_up_the_batch() {
        let _ns = lab();
        let mut sw = port("sw0");
        let mut host = port("h0");
        let frames = vec![numbered_frame(3000, 1), numbered_frame(100, 2)];
        send_all(&mut sw, &frames);
        assert_eq!(sw.tx_dropped(), 1);
        assert_eq!(recv_frames(&mut host, 1), vec![numbered_frame(100, 2)]);
    }

    #[test]
    fn batch_of_200_arrives_in_order() {
        let _ns = lab();
        let mut sw = port("sw0");
        let mut host = port("h0");
        let frames: Vec<Vec<u8>> = (0..200).map(|n| numbered_frame(64 + (n as usize % 7) * 100, n)).collect();
        send_all(&mut host, &frames);
        assert_eq!(recv_frames(&mut sw, 200), frames);
        send_all(&mut sw, &frames);
        assert_eq!(recv_frames(&mut host, 200), frames);
    }

    /// Small batches go by sendmmsg and bursts by the TX ring: alternating them keeps the order, and an
    /// oversized frame heading a burst is dropped and counted without holding the rest up.
    #[test]
    fn tx_ring_and_sendmmsg_interleave_in_order() {
        let _ns = lab();
        let mut sw = AfPacketPort::open_with_modes("sw0", RxMode::Ring, TxMode::Ring).unwrap();
        assert_eq!(sw.tx_mode(), TxMode::Ring);
        let mut host = port("h0");
        let frames: Vec<Vec<u8>> = (0..300).map(|n| numbered_frame(64 + (n as usize % 5) * 300, n)).collect();
        let mut sent = 0;
        for len in [3, 50, 2, 120, 1, 124] {
            send_all(&mut sw, &frames[sent..sent + len]);
            sent += len;
        }
        assert_eq!(recv_frames(&mut host, sent), frames[..sent].to_vec());
        let mut burst = vec![numbered_frame(3000, 900)];
        burst.extend((0..20).map(|n| numbered_frame(100, 1000 + n)));
        send_all(&mut sw, &burst);
        assert_eq!(sw.tx_dropped(), 1);
        assert_eq!(recv_frames(&mut host, 20), burst[1..].to_vec());
        let mut old = AfPacketPort::open_with_modes("sw0", RxMode::Ring, TxMode::Sendmmsg).unwrap();
        assert_eq!(old.tx_mode(), TxMode::Sendmmsg);
        send_all(&mut old, &frames[..40]);
        assert_eq!(recv_frames(&mut host, 40), frames[..40].to_vec());
    }

    /// A long stream through the TX ring (three times as many frames as it has slots, in batches of up to
    /// 512) arrives whole and in order. The sender stays at most `WINDOW` frames ahead of what the receiver
    /// has read: the veth peer's input backlog (`netdev_max_backlog`, 1000 by default) and the receiver's
    /// ring would otherwise drop frames on a loaded machine, which says nothing about the TX ring.
    #[test]
    fn tx_ring_long_burst_arrives_whole() {
        use std::sync::atomic::AtomicUsize;
        const WINDOW: usize = 768;
        let _ns = lab();
        let mut sw = AfPacketPort::open_with_modes("sw0", RxMode::Ring, TxMode::Ring).unwrap();
        let mut host = port("h0");
        let frames: Vec<Vec<u8>> = (0..12_000).map(|n| numbered_frame(64, n)).collect();
        let received = AtomicUsize::new(0);
        let deadline = Instant::now() + Duration::from_secs(20);
        let (got, host_drops) = std::thread::scope(|s| {
            let rx = s.spawn(|| {
                let mut got = Vec::with_capacity(frames.len());
                while got.len() < frames.len() && Instant::now() < deadline {
                    let want = frames.len() - got.len();
                    match host.recv_batch(&mut got, want) {
                        Ok(0) => std::thread::yield_now(),
                        Ok(_) => received.store(got.len(), Ordering::Release),
                        Err(e) => panic!("h0: receive failed: {e}"),
                    }
                }
                (got, host.rx_kernel_drops())
            });
            let mut sent = 0;
            while sent < frames.len() && Instant::now() < deadline {
                let room = (received.load(Ordering::Acquire) + WINDOW).saturating_sub(sent);
                let end = frames.len().min(sent + room.min(512));
                if end == sent {
                    std::thread::yield_now();
                    continue;
                }
                sent += sw.send_batch(&frames[sent..end]).expect("send");
            }
            assert_eq!(sent, frames.len(), "sw0: only {sent} frames sent in 20 s");
            rx.join().unwrap()
        });
        assert_eq!((sw.tx_dropped(), host_drops, got.len()), (0, 0, frames.len()));
        assert!(got == frames, "in order");
    }

    /// The kernel's own UDP, sent from `h0` with TX checksum offload on (veth's default), leaves only the
    /// pseudo-header sum in the checksum field; the backend on `sw0` must complete it.
    #[test]
    fn kernel_udp_with_tx_checksum_offload_arrives_with_a_valid_checksum() {
        let _ns = offload_lab();
        let mut sw = port("sw0");
        kernel_udp_arrives_with_valid_checksum(&mut sw);
        assert_eq!(sw.checksums_completed(), 1, "veth with TX offload should hand over a partial checksum");
    }

    /// UDP GSO (`UDP_SEGMENT`) from `h0`: the 3-segment super-frame crosses the veth unsegmented; the backend
    /// drops and counts it rather than forwarding a 3 KB "frame".
    #[test]
    #[allow(unsafe_code)]
    fn gso_super_frames_are_dropped_and_counted() {
        let _ns = offload_lab();
        let mut sw = port("sw0");
        let socket = UdpSocket::bind("10.9.0.1:4000").unwrap();
        let segment: libc::c_int = 1000;
        // SAFETY: a valid socket, a live c_int and its size.
        let r = unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&socket),
                libc::SOL_UDP,
                libc::UDP_SEGMENT,
                (&segment as *const libc::c_int).cast(),
                mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "UDP_SEGMENT: {}", io::Error::last_os_error());
        socket.send_to(&[7u8; 3000], "10.9.0.2:4791").unwrap();
        let frames = recv_nothing(&mut sw, Duration::from_millis(200));
        let lengths: Vec<usize> = frames.iter().map(Vec::len).collect();
        assert!(frames.is_empty(), "{} frame(s) arrived, lengths {lengths:?}", frames.len());
        assert_eq!((sw.gso_dropped(), sw.rx_truncated()), (1, 0));
        // Single frames still pass.
        socket.send_to(&[7u8; 500], "10.9.0.2:4791").unwrap();
        assert_eq!(recv_frames(&mut sw, 1).len(), 1);
    }

    /// The `recvmmsg` path (`LOSSLESS_AFPACKET_RX=recvmmsg`) still does everything the ring does.
    #[test]
    fn recvmmsg_path_still_fixes_up_frames() {
        let _ns = offload_lab();
        let mut sw = AfPacketPort::open_with("sw0", RxMode::Recvmmsg).unwrap();
        assert_eq!(sw.rx_mode(), RxMode::Recvmmsg);
        kernel_udp_arrives_with_valid_checksum(&mut sw);
        assert_eq!(sw.checksums_completed(), 1);
        let mut host = port("h0");
        let frames: Vec<Vec<u8>> =
            sample_frames().into_iter().chain((0..200).map(|n| numbered_frame(64, n))).collect();
        send_all(&mut host, &frames);
        assert_eq!(recv_frames(&mut sw, frames.len()), frames);
    }

    /// Frames the switch does not take in time are dropped by the kernel and counted.
    #[test]
    fn kernel_drops_are_counted() {
        let _ns = lab();
        // The ring, whatever LOSSLESS_AFPACKET_RX says: 8 MiB of socket buffer may hold all 8000 frames.
        let mut sw = AfPacketPort::open_with("sw0", RxMode::Ring).unwrap();
        let mut host = port("h0");
        assert_eq!(sw.rx_kernel_drops(), 0);
        let frames: Vec<Vec<u8>> = (0..8000).map(|n| numbered_frame(64, n)).collect();
        send_all(&mut host, &frames);
        let drops = sw.rx_kernel_drops();
        let ring_slots = sw.rx_ring_slots() as u64;
        assert!(drops > 0 && drops <= 8000 - ring_slots, "{drops} dropped, {ring_slots} slots");
        assert_eq!(sw.rx_kernel_drops(), drops, "the total keeps what was read before");
        // What the ring held arrives (the veth backlog may drop some too, uncounted here).
        let got = recv_nothing(&mut sw, Duration::from_millis(100)).len() as u64;
        assert!(
            got + drops <= 8000 && got >= ring_slots.min(8000 - drops),
            "{got} received, {drops} dropped"
        );
    }

    #[test]
    fn open_brings_the_interface_up_and_promiscuous_until_closed() {
        let ns = lab();
        ns.ip(&["link", "set", "dev", "sw0", "down"]).unwrap();
        // A packet socket's promiscuity is a counter (`ip -d`), not the PROMISC flag an administrator sets.
        let show = || {
            String::from_utf8_lossy(&ns.ip(&["-d", "-o", "link", "show", "dev", "sw0"]).unwrap().stdout)
                .into_owned()
        };
        let sw = port("sw0");
        let link = show();
        assert!(link.contains(",UP") && link.contains("promiscuity 1"), "{link}");
        drop(sw);
        assert!(show().contains("promiscuity 0"), "{}", show());
    }

    #[test]
    fn missing_interface_fails_fast_with_its_name() {
        let _ns = lab();
        let start = std::time::Instant::now();
        let err = open(&PortSpec::Interface("veth9".into())).err().expect("veth9 does not exist");
        assert_eq!(err.to_string(), r#"interface "veth9" not found"#);
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}

mod pnet {
    use lossless_dataplane::io::afpacket::AfPacketPort;
    use lossless_dataplane::io::pnet_port::PnetPort;
    use lossless_dataplane::io::{PortBackend, PortSpec, open};
    use lossless_testkit::frames::{
        kernel_udp_arrives_with_valid_checksum, lab, numbered_frame, offload_lab, recv_frames, recv_nothing,
        sample_frames, send_all,
    };
    use std::time::{Duration, Instant};

    /// The sample frames pnet can carry: all but the 802.1Q-tagged one (see the module doc).
    fn untagged_samples() -> Vec<Vec<u8>> {
        sample_frames().into_iter().filter(|f| f[12..14] != [0x81, 0x00]).collect()
    }

    #[test]
    fn frames_cross_both_ways_byte_for_byte() {
        let _ns = lab();
        let mut sw = open(&PortSpec::parse("pnet:sw0").unwrap()).unwrap();
        let mut host = AfPacketPort::open("h0").unwrap();
        let frames = untagged_samples();
        assert!(frames.iter().any(|f| f[..6] == [0x01, 0x80, 0xc2, 0, 0, 0x01]), "a PFC frame is among them");
        send_all(&mut *sw, &frames);
        assert_eq!(recv_frames(&mut host, frames.len()), frames);
        send_all(&mut host, &frames);
        assert_eq!(recv_frames(&mut *sw, frames.len()), frames);
        // PACKET_IGNORE_OUTGOING on the socket pnet uses: our own sends are not read back.
        assert!(recv_nothing(&mut *sw, Duration::from_millis(100)).is_empty());
    }

    #[test]
    fn a_received_vlan_tag_is_lost() {
        let _ns = lab();
        let mut sw = PnetPort::open("sw0").unwrap();
        let mut host = AfPacketPort::open("h0").unwrap();
        let tagged: Vec<Vec<u8>> =
            sample_frames().into_iter().filter(|f| f[12..14] == [0x81, 0x00]).collect();
        send_all(&mut host, &tagged);
        let got = recv_frames(&mut sw, 1);
        let mut untagged = tagged[0].clone();
        untagged.drain(12..16);
        assert_eq!(got, vec![untagged], "the kernel strips the tag into metadata pnet does not read");
    }

    #[test]
    fn batch_of_200_arrives_in_order_and_jumbo_frames_fit() {
        let ns = lab();
        for dev in ["sw0", "h0"] {
            ns.ip(&["link", "set", "dev", dev, "mtu", "9100"]).unwrap();
        }
        let mut sw = PnetPort::open("sw0").unwrap();
        let mut host = AfPacketPort::open("h0").unwrap();
        let frames: Vec<Vec<u8>> = (0..200).map(|n| numbered_frame(64 + (n as usize % 7) * 100, n)).collect();
        send_all(&mut host, &frames);
        assert_eq!(recv_frames(&mut sw, 200), frames);
        send_all(&mut sw, &frames);
        assert_eq!(recv_frames(&mut host, 200), frames);
        let jumbo = vec![numbered_frame(9000, 1)];
        send_all(&mut host, &jumbo);
        assert_eq!(recv_frames(&mut sw, 1), jumbo);
        send_all(&mut sw, &jumbo);
        assert_eq!(recv_frames(&mut host, 1), jumbo);
    }

    #[test]
    fn a_partial_batch_leaves_the_descriptor_readable() {
        let _ns = lab();
        let mut sw = PnetPort::open("sw0").unwrap();
        let mut host = AfPacketPort::open("h0").unwrap();
        let frames: Vec<Vec<u8>> = (0..10).map(|n| numbered_frame(100, n)).collect();
        send_all(&mut host, &frames);
        let mut got = recv_frames(&mut sw, 3);
        assert_eq!(got.len(), 3);
        // The rest is announced by the descriptor, not only by polling the channel.
        let mut pfd = libc::pollfd { fd: sw.raw_fd(), events: libc::POLLIN, revents: 0 };
        #[allow(unsafe_code)]
        // SAFETY: one valid pollfd, exclusively borrowed for the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, 1000) };
        assert_eq!(ready, 1);
        got.extend(recv_frames(&mut sw, 7));
        assert_eq!(got, frames);
    }

    #[test]
    fn kernel_udp_with_tx_checksum_offload_arrives_with_a_valid_checksum() {
        let _ns = offload_lab();
        let mut sw = PnetPort::open("sw0").unwrap();
        kernel_udp_arrives_with_valid_checksum(&mut sw);
    }

    #[test]
    fn drop_stops_the_receive_thread_promptly() {
        let _ns = lab();
        let sw = PnetPort::open("sw0").unwrap();
        let start = Instant::now();
        drop(sw);
        assert!(start.elapsed() < Duration::from_secs(1), "drop took {:?}", start.elapsed());
    }

    #[test]
    fn missing_interface_fails_fast_with_its_name() {
        let _ns = lab();
        let err = open(&PortSpec::Pnet("veth9".into())).err().expect("veth9 does not exist");
        assert_eq!(err.to_string(), r#"interface "veth9" not found"#);
    }
}

mod tap {
    use lossless_dataplane::io::afpacket::AfPacketPort;
    use lossless_dataplane::io::tap::TapPort;
    use lossless_dataplane::io::{PortSpec, open};
    use lossless_testkit::frames::{numbered_frame, recv_frames, recv_nothing, sample_frames, send_all};
    use lossless_testkit::netns::{Netns, unique_name};
    use std::time::Duration;

    const TUN: &str = "/dev/net/tun";

    fn netns() -> Netns {
        assert!(
            std::path::Path::new(TUN).exists(),
            "{TUN} is missing: the TAP backend needs the tun driver (modprobe tun)"
        );
        let ns = Netns::new(&unique_name("lltp")).expect("creating a network namespace (run as root)");
        ns.enter_on_this_thread().unwrap();
        ns
    }

    fn link(ns: &Netns, dev: &str) -> Option<String> {
        ns.ip(&["-o", "link", "show", "dev", dev])
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    }

    #[test]
    fn tap_frames_cross_both_ways_byte_for_byte() {
        let ns = netns();
        let mut tap = open(&PortSpec::parse("tap:tp0").unwrap()).unwrap();
        let kernel_side = link(&ns, "tp0").expect("tp0 exists");
        assert!(kernel_side.contains(",UP"), "{kernel_side}");
        // What the tap writes, the kernel receives on tp0: an AF_PACKET socket there sees it, and what that
        // socket sends out of tp0 is what the tap reads.
        let mut kernel = AfPacketPort::open("tp0").unwrap();
        let frames = sample_frames();
        send_all(&mut *tap, &frames);
        assert_eq!(recv_frames(&mut kernel, frames.len()), frames);
        send_all(&mut kernel, &frames);
        assert_eq!(recv_frames(&mut *tap, frames.len()), frames);
        let batch: Vec<Vec<u8>> = (0..200).map(|n| numbered_frame(60 + n as usize, n)).collect();
        send_all(&mut kernel, &batch);
        assert_eq!(recv_frames(&mut *tap, 200), batch);
        assert!(recv_nothing(&mut *tap, Duration::from_millis(100)).is_empty(), "no noise from the kernel");
    }

    #[test]
    fn tap_device_disappears_when_the_port_closes() {
        let ns = netns();
        let tap = TapPort::open("tp1").unwrap();
        assert!(link(&ns, "tp1").is_some());
        drop(tap);
        assert!(link(&ns, "tp1").is_none(), "tp1 still exists after close");
    }

    #[test]
    fn a_name_taken_by_another_kind_of_interface_is_a_clear_error() {
        let ns = netns();
        ns.veth_local("tpv0", "tpv1").unwrap();
        let err = TapPort::open("tpv0").err().expect("tpv0 is a veth");
        assert!(err.to_string().starts_with(r#"tap "tpv0": creating the device"#), "{err}");
    }
}
