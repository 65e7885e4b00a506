//! Cross-check of the wire codecs against an implementation nobody here wrote: Wireshark's dissectors.
//!
//! Frames emitted by our codecs (and edited in place by the dataplane's RFC 1624 edits) are written to a
//! pcap file; `tshark` decodes it and every field must read back as the value we put in. Requires `tshark`
//! on PATH (`.ci/run` installs it).

use lossless_core::sim::{Device, Sim};
use lossless_core::time::{Instant, Nanos};
use lossless_core::wire::{
    self, ArpOperation, ArpRepr, BthOpcode, BthRepr, EtherType, EthernetAddress, Ipv4Packet, Ipv6Repr,
    MacControlRepr, PauseRepr, PfcRepr,
    build::{self, Dot1q, Ipv4Flow},
    ip::{Ecn, Protocol},
    mac_control,
};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::Command;

const SRC: EthernetAddress = EthernetAddress([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
const DST: EthernetAddress = EthernetAddress([0x02, 0x66, 0x77, 0x88, 0x99, 0xaa]);

/// Writes a pcap (the simulator's writer: nanosecond timestamps), frame i at i seconds.
fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut pcap = lossless_core::sim::pcap::Pcap::new();
    for (i, frame) in frames.iter().enumerate() {
        pcap.record(Instant::from_ns(i as u64 * 1_000_000_000), frame);
    }
    std::fs::write(path, pcap.bytes()).unwrap();
}

/// Runs tshark over the pcap and returns, per frame, the values of `fields` (tab-separated in tshark's
/// own formatting).
fn tshark_fields(path: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(path);
    cmd.args(["-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-T", "fields"]);
    cmd.args(["-E", "separator=/t", "-E", "occurrence=f"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark must be installed (apt-get install tshark); see README");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

/// Emits `frames`, decodes them with tshark and compares `(field, expected)` pairs frame by frame.
/// A frame and the `(tshark field, expected value)` pairs it must decode to.
type Expectation = (Vec<u8>, Vec<(&'static str, String)>);

fn check(name: &str, frames: Vec<Expectation>) {
    let dir = std::env::temp_dir().join(format!("lossless-tshark-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("frames.pcap");
    let bytes: Vec<Vec<u8>> = frames.iter().map(|(f, _)| f.clone()).collect();
    write_pcap(&path, &bytes);
    for (i, (_, expected)) in frames.iter().enumerate() {
        let fields: Vec<&str> = expected.iter().map(|(f, _)| *f).collect();
        let rows = tshark_fields(&path, &fields);
        assert_eq!(rows.len(), frames.len(), "tshark returned one row per frame");
        for (col, (field, want)) in expected.iter().enumerate() {
            let got = rows[i].get(col).map(String::as_str).unwrap_or("");
            assert_eq!(
                got, want,
                "frame {i} ({name}): tshark decodes {field} as {got:?}, we emitted {want:?}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn s(v: impl ToString) -> String {
    v.to_string()
}

#[test]
fn pfc_and_pause_frames() {
    let mut pfc = PfcRepr::xoff(0b0001_1000, 0xffff);
    pfc.time[4] = 0x1234;
    let mut pfc_frame = vec![0u8; mac_control::FRAME_LEN];
    MacControlRepr::Pfc(pfc).emit_frame(SRC, &mut pfc_frame);
    let mut pause_frame = vec![0u8; mac_control::FRAME_LEN];
    MacControlRepr::Pause(PauseRepr { pause_time: 0x0200 }).emit_frame(SRC, &mut pause_frame);

    check(
        "mac-control",
        vec![
            (
                pfc_frame,
                vec![
                    ("eth.dst", s("01:80:c2:00:00:01")),
                    ("eth.src", s(SRC)),
                    ("eth.type", s("0x8808")),
                    ("macc.opcode", s("0x0101")),
                    ("macc.cbfc.enbv", s("0x0018")),
                    ("macc.cbfc.pause_time.c0", s(0)),
                    ("macc.cbfc.pause_time.c3", s(0xffff)),
                    ("macc.cbfc.pause_time.c4", s(0x1234)),
                    ("macc.cbfc.pause_time.c7", s(0)),
                ],
            ),
            (pause_frame, vec![("macc.opcode", s("0x0001")), ("macc.pause_time", s(0x0200))]),
        ],
    );
}

#[test]
fn rocev2_with_ce_and_ttl_edited_in_place() {
    let flow = Ipv4Flow {
        src_mac: SRC,
        dst_mac: DST,
        src_ip: Ipv4Addr::new(192, 0, 2, 10),
        dst_ip: Ipv4Addr::new(198, 51, 100, 20),
        src_port: 50000,
        dscp: 26,
        ecn: Ecn::Ect0,
        ttl: 64,
    };
    let bth = BthRepr { dest_qp: 0x00ab_cdef, psn: 0x00fe_dcba, ..build::example_bth() };
    let mut frame = flow.rocev2(&bth, 128);
    {
        // The dataplane's edits: mark CE (WRED/ECN) and route (TTL - 1), both with incremental checksums.
        let mut ip = Ipv4Packet::new_unchecked(&mut frame[wire::ethernet::HEADER_LEN..]);
        assert!(ip.set_ecn_ce());
        assert_eq!(ip.decrement_ttl(), 63);
    }
    let cnp_bth =
        BthRepr { opcode: BthOpcode::Cnp, becn: true, dest_qp: 0x77, psn: 0, ..build::example_bth() };
    let cnp_flow = Ipv4Flow { dscp: 48, ecn: Ecn::NotEct, ..flow };
    let cnp = cnp_flow.rocev2(&cnp_bth, 14 + 20 + 8 + 12 + wire::bth::CNP_PAYLOAD_LEN + 4);

    check(
        "rocev2",
        vec![
            (
                frame,
                vec![
                    ("ip.dsfield.dscp", s(26)),
                    ("ip.dsfield.ecn", s(3)),
                    ("ip.ttl", s(63)),
                    ("ip.checksum.status", s(1)),
                    ("ip.src", s(flow.src_ip)),
                    ("ip.dst", s(flow.dst_ip)),
                    ("udp.dstport", s(4791)),
                    ("udp.srcport", s(50000)),
                    ("infiniband.bth.opcode", s(4)),
                    ("infiniband.bth.m", s(1)),
                    ("infiniband.bth.p_key", s(0xffff)),
                    ("infiniband.bth.destqp", s("0xabcdef")),
                    ("infiniband.bth.a", s(1)),
                    ("infiniband.bth.psn", s(0x00fe_dcba)),
                ],
            ),
            (
                cnp,
                vec![
                    ("ip.dsfield.dscp", s(48)),
                    ("ip.checksum.status", s(1)),
                    ("udp.checksum.status", s(1)),
                    ("infiniband.bth.opcode", s(0x81)),
                    ("infiniband.bth.destqp", s("0x000077")),
                ],
            ),
        ],
    );
}

#[test]
fn arp_reply() {
    let repr = ArpRepr {
        operation: ArpOperation::Reply,
        source_hardware_addr: SRC,
        source_protocol_addr: Ipv4Addr::new(10, 0, 0, 1),
        target_hardware_addr: DST,
        target_protocol_addr: Ipv4Addr::new(10, 0, 0, 2),
    };
    let frame = build::ethernet(SRC, DST, None, EtherType::Arp, &build::arp(&repr));
    check(
        "arp",
        vec![(
            frame,
            vec![
                ("arp.opcode", s(2)),
                ("arp.src.hw_mac", s(SRC)),
                ("arp.src.proto_ipv4", s("10.0.0.1")),
                ("arp.dst.hw_mac", s(DST)),
                ("arp.dst.proto_ipv4", s("10.0.0.2")),
            ],
        )],
    );
}

#[test]
fn vlan_tagged_ipv6_udp() {
    let src_ip: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let dst_ip: Ipv6Addr = "2001:db8:1::2".parse().unwrap();
    let datagram = build::udp_v6(src_ip, dst_ip, 1234, 4791, &[0xab; 40]);
    let header = Ipv6Repr {
        src_addr: src_ip,
        dst_addr: dst_ip,
        next_header: Protocol::Udp,
        payload_len: 0,
        hop_limit: 17,
        dscp: 46,
        ecn: Ecn::Ect1,
        flow_label: 0x5_4321,
    };
    let packet = build::ipv6(&header, &datagram);
    let tag = Dot1q { pcp: 5, dei: true, vid: 100 };
    let frame = build::ethernet(SRC, DST, Some(tag), EtherType::Ipv6, &packet);
    check(
        "vlan-ipv6",
        vec![(
            frame,
            vec![
                ("eth.type", s("0x8100")),
                ("vlan.priority", s(5)),
                ("vlan.dei", s(1)),
                ("vlan.id", s(100)),
                ("vlan.etype", s("0x86dd")),
                ("ipv6.tclass.dscp", s(46)),
                ("ipv6.tclass.ecn", s(1)),
                ("ipv6.hlim", s(17)),
                ("ipv6.flow", format!("0x{:06x}", 0x5_4321)),
                ("ipv6.src", s(src_ip)),
                ("ipv6.dst", s(dst_ip)),
                ("udp.srcport", s(1234)),
                ("udp.dstport", s(4791)),
                ("udp.length", s(48)),
                ("udp.checksum.status", s(1)),
            ],
        )],
    );
}

/// The PFC frames the switch model itself generates (XOFF when PG 3 crosses its limit, XON when it
/// drains) decode in tshark with the right class-enable vector and quanta.
#[test]
fn pfc_frames_generated_by_the_switch() {
    use lossless_core::model::Switch;
    use lossless_core::model::config::ConfigDb;
    let db = ConfigDb::from_yaml_str(include_str!("../../../configs/profiles/th_balanced.yaml")).unwrap();
    let mut sw = Switch::new();
    sw.apply(&db, Instant::ZERO).unwrap();
    let (e0, e8) = (sw.port_id("Ethernet0").unwrap(), sw.port_id("Ethernet8").unwrap());
    let host = EthernetAddress([0x02, 0xbb, 0, 0, 0, 2]);
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: host,
        source_protocol_addr: Ipv4Addr::new(192, 168, 0, 2),
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: Ipv4Addr::new(192, 168, 0, 1),
    };
    sw.handle_frame(
        e8,
        build::ethernet(host, EthernetAddress::BROADCAST, None, EtherType::Arp, &build::arp(&arp)),
        Instant::from_ns(0),
    );
    sw.set_port_hold(e8, true);
    let flow = Ipv4Flow {
        src_mac: DST,
        dst_mac: EthernetAddress([0x02, 0x4c, 0x53, 0, 0, 1]),
        src_ip: Ipv4Addr::new(172, 16, 0, 1),
        dst_ip: Ipv4Addr::new(192, 168, 0, 2),
        src_port: 1,
        dscp: 3,
        ecn: Ecn::Ect0,
        ttl: 64,
    };
    let mut frames = Vec::new();
    let now = Instant::from_ns(1_000);
    for _ in 0..30_000 {
        sw.handle_frame(e0, flow.udp(4791, &[0; 18]), now);
        if let Some(tx) = sw.poll_transmit(e0, now) {
            frames.push(tx.frame);
            break;
        }
    }
    assert_eq!(frames.len(), 1, "XOFF generated");
    // Released, the queue drains on the virtual-time driver (as does the host's ARP request, flooded to the
    // other VLAN members); the next frame out of Ethernet0 is the XON. 10 ms is ample: at Ethernet8's
    // 25 Gb/s the PG's few thousand 64-byte frames (84 bytes on the wire each) leave in a fraction of a ms.
    let mut sim = Sim::new();
    let node = sim.add(Device::Switch(Box::new(sw)));
    sim.keep_log = true;
    sim.switch(node).set_port_hold(e8, false);
    let end = now + Nanos::from_ms(10);
    sim.run_until(end);
    match sim.sent.iter().find(|sent| sent.from == node.port(e0.index())) {
        Some(xon) => frames.push(xon.frame.clone()),
        None => panic!("no XON by {end}, backlog {}", sim.switch(node).port_backlog(e8)),
    }
    let sw = sim.switch(node);
    let port_mac = s(sw.config().ports[e0.index()].mac);
    check(
        "switch-pfc",
        vec![
            (
                frames[0].clone(),
                vec![
                    ("eth.dst", s("01:80:c2:00:00:01")),
                    ("eth.src", port_mac.clone()),
                    ("macc.opcode", s("0x0101")),
                    ("macc.cbfc.enbv", s("0x0008")),
                    ("macc.cbfc.pause_time.c3", s(0xffff)),
                    ("macc.cbfc.pause_time.c4", s(0)),
                ],
            ),
            (
                frames[1].clone(),
                vec![
                    ("macc.cbfc.enbv", s("0x0008")),
                    ("macc.cbfc.pause_time.c3", s(0)),
                    ("eth.src", port_mac),
                ],
            ),
        ],
    );
}

/// Pingmesh probes (`lossless_core::nic::probe`, docs/pingmesh.md): a UD SEND Only to the probe QP with a
/// DETH, as tshark's InfiniBand dissector reads it.
#[test]
fn pingmesh_ping_and_pong() {
    use lossless_core::nic::packet::Envelope;
    use lossless_core::nic::probe::{PROBE_QP, ProbeHeader, ProbeKind, probe_frame};
    use lossless_core::wire::ip::Ecn;
    let env = Envelope {
        src_mac: SRC,
        dst_mac: DST,
        vlan: None,
        priority: 3,
        src_ip: Ipv4Addr::new(10, 0, 0, 1),
        dst_ip: Ipv4Addr::new(10, 0, 0, 2),
        dscp: 3,
        ecn: Ecn::Ect0,
        ident: 1,
        ttl: 64,
        udp_src_port: 0xd000,
    };
    let ping =
        ProbeHeader { kind: ProbeKind::Ping, seq: 0x12_3456, sent_ns: 1_000_000, responder_hold_ns: 0 };
    let pong = ProbeHeader { kind: ProbeKind::Pong, responder_hold_ns: 250, ..ping };
    let expect = |kind: &str| {
        vec![
            ("ip.dsfield.dscp", s(3)),
            ("ip.dsfield.ecn", s(2)),
            ("udp.dstport", s(4791)),
            ("infiniband.bth.opcode", s(0x64)),
            ("infiniband.bth.destqp", s(format!("{PROBE_QP:#08x}"))),
            ("infiniband.bth.psn", s(0x12_3456)),
            // tshark prints the 32-bit Q_Key and 24-bit source QP in wider fields.
            ("infiniband.deth.q_key", s("0x000000004c4c504d")),
            ("infiniband.deth.srcqp", s(format!("{PROBE_QP:#010x}"))),
            ("data.data", s(kind)),
        ]
    };
    let payload = |kind: u8, hold: u64| {
        let mut b = vec![kind, 0, 0, 0, 0, 0, 0, 0];
        b.extend(0x12_3456u64.to_be_bytes());
        b.extend(1_000_000u64.to_be_bytes());
        b.extend(hold.to_be_bytes());
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    };
    check(
        "pingmesh",
        vec![
            (probe_frame(&env, &ping), expect(&payload(1, 0))),
            (probe_frame(&env, &pong), expect(&payload(2, 250))),
        ],
    );
}
