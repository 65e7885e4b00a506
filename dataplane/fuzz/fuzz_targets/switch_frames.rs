//! The switch model on a shipped profile, driven by an arbitrary sequence of operations: frames (raw bytes,
//! and valid frames built with `wire::build`, optionally mutated) on any port, transmissions, timeouts,
//! time moving on (and stale times), port and queue holds, link state, the watchdog's debug storm,
//! flushes and re-applied configurations. Never a panic, and after every step:
//! - the frame ledger balances: `received == forwarded + trapped + dropped` and
//!   `copies + originated == sent + queued + copies_dropped + flushed`;
//! - no pool holds more than its configured (per-partition) size, shared or headroom, and no PG more
//!   headroom than its profile's `xoff`;
//! - every port that is up asserts exactly the PFC priorities of its lossless PGs in XOFF (less those the
//!   watchdog took over), and every PFC frame it sends carries an XOFF for each priority it asserts (so no
//!   frame postpones another priority's refresh);
//! - after a full drain at the end nothing is queued and every buffer cell is back (PGs, queues, pools: 0).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use lossless_core::model::Switch;
use lossless_core::model::config::ConfigDb;
use lossless_core::model::config::PortId;
use lossless_core::model::config::asic::{cells, pool_shares};
use lossless_core::time::Instant;
use lossless_core::wire::build::{self, Dot1q, Ipv4Flow};
use lossless_core::wire::ip::{Ecn, Protocol};
use lossless_core::wire::{
    self, ArpOperation, ArpRepr, BthOpcode, BthRepr, EtherType, EthernetAddress, Ipv6Repr, MacControlRepr,
    PauseRepr, PfcRepr,
};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

const PROFILES: [&str; 4] = [
    include_str!("../../../configs/profiles/th_balanced.yaml"),
    include_str!("../../../configs/t0.yaml"),
    include_str!("../../../configs/profiles/sn2700.yaml"),
    include_str!("../../../configs/profiles/td3.yaml"),
];

const ROUTER_MAC: EthernetAddress = EthernetAddress([0x02, 0x4c, 0x53, 0x00, 0x00, 0x01]);
/// Addresses of the T0 topology every profile shares (uplink neighbours, VLAN hosts), the router,
/// broadcast and a link-local reserved one.
const MACS: [EthernetAddress; 8] = [
    EthernetAddress([0x02, 0xaa, 0, 0, 0, 0x01]),
    EthernetAddress([0x02, 0xaa, 0, 0, 0, 0x03]),
    EthernetAddress([0x02, 0xbb, 0, 0, 0, 0x02]),
    EthernetAddress([0x02, 0xbb, 0, 0, 0, 0x03]),
    EthernetAddress([0x02, 0xbb, 0, 0, 0, 0x04]),
    ROUTER_MAC,
    EthernetAddress::BROADCAST,
    EthernetAddress([0x01, 0x80, 0xc2, 0, 0, 0x01]),
];
const IPS: [Ipv4Addr; 8] = [
    Ipv4Addr::new(192, 168, 0, 2),
    Ipv4Addr::new(192, 168, 0, 3),
    Ipv4Addr::new(192, 168, 0, 1),
    Ipv4Addr::new(10, 0, 0, 1),
    Ipv4Addr::new(10, 0, 0, 3),
    Ipv4Addr::new(10, 0, 0, 0),
    Ipv4Addr::new(172, 16, 3, 4),
    Ipv4Addr::new(8, 8, 8, 8),
];
const IP6S: [Ipv6Addr; 4] = [
    Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 1),
    Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 3),
    Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 5),
    Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 9),
];

#[derive(Debug, Arbitrary)]
struct Input {
    profile: u8,
    ops: Vec<Op>,
}

#[derive(Debug, Arbitrary)]
enum Op {
    Raw {
        port: u8,
        bytes: Vec<u8>,
    },
    Frame {
        port: u8,
        frame: FrameSpec,
        mutation: Option<(u16, u8)>,
        burst: u8,
    },
    Poll {
        port: u8,
    },
    /// Transmit everything due on every port at the current time.
    PollAll,
    Timeout,
    /// Time moves on by this many nanoseconds (scaled by a power of 4) and due timeouts run.
    Advance {
        ns: u16,
        scale: u8,
    },
    /// A call carrying a time earlier than the latest one (allowed: the model keeps its own "now").
    Stale {
        back_ns: u32,
        port: u8,
    },
    PortHold {
        port: u8,
        hold: bool,
    },
    QueueHold {
        port: u8,
        queue: u8,
        hold: bool,
    },
    PortOper {
        port: u8,
        up: bool,
    },
    DebugStorm {
        port: u8,
        queue: u8,
        on: bool,
    },
    Reapply(Variant),
    FlushFdb {
        vid: Option<u16>,
        port: Option<u8>,
    },
    FlushNeighbors,
    ClearWatermarks(bool),
    PollEvents,
}

#[derive(Debug, Arbitrary)]
enum Variant {
    Same,
    /// Another alpha for every dynamic threshold.
    Alpha(i8),
    PfcEnable(u8),
    AdminDown(u8),
    WatchdogAction(u8),
    /// A configuration the switch must refuse without changing anything.
    Invalid,
}

#[derive(Debug, Arbitrary)]
enum FrameSpec {
    Udp { src: u8, dst: u8, sip: u8, dip: u8, sport: u16, roce: bool, dscp: u8, ecn: u8, ttl: u8, len: u16 },
    Tagged { src: u8, dst: u8, pcp: u8, vid: u8, dscp: u8, len: u16 },
    Arp { reply: bool, src: u8, dst: u8, sip: u8, tip: u8 },
    Ipv6 { src: u8, dst: u8, sip: u8, dip: u8, dscp: u8, hop: u8, len: u16 },
    Pfc { src: u8, class_enable: u8, quanta: [u16; 8] },
    Pause { src: u8, quanta: u16 },
}

fn mac(i: u8) -> EthernetAddress {
    MACS[usize::from(i) % MACS.len()]
}

fn ecn(v: u8) -> Ecn {
    Ecn::from(v & 3)
}

impl FrameSpec {
    fn build(&self) -> Vec<u8> {
        match *self {
            FrameSpec::Udp { src, dst, sip, dip, sport, roce, dscp, ecn: e, ttl, len } => {
                let flow = Ipv4Flow {
                    src_mac: mac(src),
                    dst_mac: if dst & 1 == 0 { ROUTER_MAC } else { mac(dst >> 1) },
                    src_ip: IPS[usize::from(sip) % IPS.len()],
                    dst_ip: IPS[usize::from(dip) % IPS.len()],
                    src_port: sport,
                    dscp: dscp & 63,
                    ecn: ecn(e),
                    ttl,
                };
                let len = usize::from(len % 9200);
                if roce {
                    flow.rocev2(&BthRepr::rc(BthOpcode::from(0x04), 0x11, 0x12_3456, true), len.max(62))
                } else {
                    flow.udp(sport ^ 0x5a5a, &vec![0x5a; len.saturating_sub(42)])
                }
            }
            FrameSpec::Tagged { src, dst, pcp, vid, dscp, len } => {
                let vid = [1000u16, 0, 1, 2000, 4095][usize::from(vid) % 5];
                let flow = Ipv4Flow {
                    src_mac: mac(src),
                    dst_mac: mac(dst),
                    src_ip: IPS[0],
                    dst_ip: IPS[1],
                    src_port: 1000,
                    dscp: dscp & 63,
                    ecn: Ecn::Ect0,
                    ttl: 64,
                };
                let untagged = flow.udp(4791, &vec![0; usize::from(len % 9000)]);
                let tag = Dot1q { pcp: pcp & 7, dei: pcp & 8 != 0, vid };
                build::ethernet(mac(src), mac(dst), Some(tag), EtherType::Ipv4, &untagged[14..])
            }
            FrameSpec::Arp { reply, src, dst, sip, tip } => {
                let repr = ArpRepr {
                    operation: if reply { ArpOperation::Reply } else { ArpOperation::Request },
                    source_hardware_addr: mac(src),
                    source_protocol_addr: IPS[usize::from(sip) % IPS.len()],
                    target_hardware_addr: if reply { ROUTER_MAC } else { EthernetAddress([0; 6]) },
                    target_protocol_addr: IPS[usize::from(tip) % IPS.len()],
                };
                let dst = if dst & 1 == 0 { EthernetAddress::BROADCAST } else { mac(dst >> 1) };
                build::ethernet(mac(src), dst, None, EtherType::Arp, &build::arp(&repr))
            }
            FrameSpec::Ipv6 { src, dst, sip, dip, dscp, hop, len } => {
                let (s, d) = (IP6S[usize::from(sip) % IP6S.len()], IP6S[usize::from(dip) % IP6S.len()]);
                let udp = build::udp_v6(s, d, 49152, 4791, &vec![0; usize::from(len % 9000)]);
                let header = Ipv6Repr {
                    src_addr: s,
                    dst_addr: d,
                    next_header: Protocol::Udp,
                    payload_len: udp.len(),
                    hop_limit: hop,
                    dscp: dscp & 63,
                    ecn: ecn(dscp >> 6),
                    flow_label: 0,
                };
                let dst = if dst & 1 == 0 { ROUTER_MAC } else { mac(dst >> 1) };
                build::ethernet(mac(src), dst, None, EtherType::Ipv6, &build::ipv6(&header, &udp))
            }
            FrameSpec::Pfc { src, class_enable, quanta } => {
                mac_control(mac(src), MacControlRepr::Pfc(PfcRepr { class_enable, time: quanta }))
            }
            FrameSpec::Pause { src, quanta } => {
                mac_control(mac(src), MacControlRepr::Pause(PauseRepr { pause_time: quanta }))
            }
        }
    }
}

fn mac_control(src: EthernetAddress, repr: MacControlRepr) -> Vec<u8> {
    let mut frame = vec![0u8; wire::mac_control::FRAME_LEN];
    repr.emit_frame(src, &mut frame);
    frame
}

fn variant_db(base: &ConfigDb, v: &Variant) -> ConfigDb {
    let mut db = base.clone();
    let ports: Vec<String> = db.tables.get("PORT").map(|t| t.keys().cloned().collect()).unwrap_or_default();
    match *v {
        Variant::Same => {}
        Variant::Alpha(a) => {
            let a = (a % 8).to_string();
            for fields in db.tables.get_mut("BUFFER_PROFILE").into_iter().flat_map(|t| t.values_mut()) {
                if fields.contains_key("dynamic_th") {
                    fields.insert("dynamic_th".into(), a.clone());
                }
            }
        }
        Variant::PfcEnable(mask) => {
            let list: Vec<String> = (3..5).filter(|p| mask & (1 << p) != 0).map(|p| p.to_string()).collect();
            for fields in db.tables.get_mut("PORT_QOS_MAP").into_iter().flat_map(|t| t.values_mut()) {
                fields.insert("pfc_enable".into(), list.join(","));
            }
        }
        Variant::AdminDown(p) => {
            if !ports.is_empty() {
                db.set("PORT", &ports[usize::from(p) % ports.len()], "admin_status", "down");
            }
        }
        Variant::WatchdogAction(a) => {
            let action = ["drop", "forward", "alert"][usize::from(a) % 3];
            for (key, fields) in db.tables.get_mut("PFC_WD").into_iter().flat_map(|t| t.iter_mut()) {
                if key != "GLOBAL" {
                    fields.insert("action".into(), action.into());
                }
            }
        }
        Variant::Invalid => {
            db.set("PORT", "Ethernet0", "speed", "fast");
        }
    }
    db
}

struct Harness {
    sw: Switch,
    base: ConfigDb,
    now: u64,
    /// Data frames the switch transmitted (served from a queue).
    sent: u64,
}

impl Harness {
    fn port(&self, p: u8) -> PortId {
        // One past the last port too: frames for a port the configuration lacks are ignored.
        PortId::new(usize::from(p) % (self.sw.port_count() + 1))
    }

    fn transmit(&mut self, port: PortId, at: u64) {
        while let Some(tx) = self.sw.poll_transmit(port, Instant::from_ns(at)) {
            let decoded = wire::decode(&tx.frame);
            assert!(decoded.is_ok(), "the switch sent an undecodable frame");
            if tx.queue.is_some() {
                self.sent += 1;
            }
            if let Ok(wire::L3::MacControl(MacControlRepr::Pfc(pfc))) = decoded.map(|d| d.l3) {
                let asserted = self.sw.pfc_state(port).map_or(0, |(a, _)| a);
                let xoff = (0..8).filter(|&p| pfc.time[p] != 0).fold(0u8, |m, p| m | 1 << p);
                assert_eq!(asserted & !(pfc.class_enable & xoff), 0, "{port}: {pfc:?} leaves out {asserted:#b}");
            }
        }
    }

    fn step(&mut self, op: &Op) {
        let now = self.now;
        match op {
            Op::Raw { port, bytes } => {
                self.sw.handle_frame(self.port(*port), bytes.clone(), Instant::from_ns(now))
            }
            Op::Frame { port, frame, mutation, burst } => {
                let mut bytes = frame.build();
                if let Some((at, x)) = *mutation {
                    let at = usize::from(at) % bytes.len();
                    bytes[at] ^= x | 1;
                }
                let port = self.port(*port);
                for _ in 0..=(burst % 32) {
                    self.sw.handle_frame(port, bytes.clone(), Instant::from_ns(now));
                }
            }
            Op::Poll { port } => self.transmit(self.port(*port), now),
            Op::PollAll => {
                for p in PortId::all(self.sw.port_count()) {
                    self.transmit(p, now);
                }
            }
            Op::Timeout => self.sw.handle_timeout(Instant::from_ns(now)),
            Op::Advance { ns, scale } => {
                self.now += u64::from(*ns) << (2 * u32::from(scale % 16));
                self.sw.handle_timeout(Instant::from_ns(self.now));
            }
            Op::Stale { back_ns, port } => {
                let then = now.saturating_sub(u64::from(*back_ns));
                let port = self.port(*port);
                self.sw.handle_timeout(Instant::from_ns(then));
                self.transmit(port, then);
            }
            Op::PortHold { port, hold } => self.sw.set_port_hold(self.port(*port), *hold),
            Op::QueueHold { port, queue, hold } => self.sw.set_queue_hold(self.port(*port), *queue, *hold),
            Op::PortOper { port, up } => self.sw.set_port_oper(self.port(*port), *up, Instant::from_ns(now)),
            Op::DebugStorm { port, queue, on } => self.sw.set_debug_storm(self.port(*port), queue & 7, *on),
            Op::Reapply(v) => {
                let db = variant_db(&self.base, v);
                let generation = self.sw.generation();
                match self.sw.apply(&db, Instant::from_ns(now)) {
                    Ok(applied) => assert_eq!(applied.generation, generation + 1),
                    Err(_) => {
                        assert!(matches!(v, Variant::Invalid), "a variant of a shipped profile was refused");
                        assert_eq!(self.sw.generation(), generation);
                    }
                }
            }
            Op::FlushFdb { vid, port } => {
                let port = port.map(|p| self.port(p));
                self.sw.flush_fdb(*vid, port);
            }
            Op::FlushNeighbors => {
                self.sw.flush_neighbors();
            }
            Op::ClearWatermarks(user) => self.sw.clear_watermarks(if *user {
                lossless_core::model::mmu::WatermarkKind::User
            } else {
                lossless_core::model::mmu::WatermarkKind::Persistent
            }),
            Op::PollEvents => while self.sw.poll_event().is_some() {},
        }
    }

    fn queued(&self) -> u64 {
        PortId::all(self.sw.port_count()).map(|p| self.sw.port_backlog(p) as u64).sum()
    }

    fn check(&self) {
        let l = self.sw.ledger();
        assert_eq!(l.received, l.forwarded + l.trapped + l.dropped, "{l:?}");
        assert_eq!(
            l.copies + l.originated,
            self.sent + self.queued() + l.copies_dropped + l.flushed,
            "{l:?}"
        );
        let config = self.sw.config();
        let mmu = self.sw.mmu();
        let cell = mmu.cell_bytes();
        let parts = config.asic.personality.partitions() as u64;
        for (pool, (size, headroom)) in config.pools.iter().zip(pool_shares(config, cell)) {
            let (shared_used, headroom_used) = mmu.pool_cells(&pool.name).expect("a configured pool");
            assert!(shared_used <= size * parts, "{}: {shared_used} > {size} x {parts} cells", pool.name);
            assert!(headroom_used <= headroom * parts, "{}: headroom {headroom_used} cells", pool.name);
        }
        for (p, buffers) in config.port_buffers.iter().enumerate() {
            for (pg, profile) in buffers.pg_profile.iter().enumerate() {
                let Some(profile) = profile else { continue };
                let cap = cells(config.profiles[*profile].xoff_bytes, cell) * cell;
                let occ = mmu.pg_occupancy(PortId::new(p), pg as u8);
                assert!(occ.headroom_bytes <= cap, "port {p} PG {pg}: headroom {occ:?} over {cap}");
            }
        }
        assert_eq!(self.sw.pfc_out_of_step(), None, "(port, asserted, due)");
    }

    /// Releases every hold and storm, brings links up and runs time on until nothing is queued.
    fn drain(&mut self) {
        for p in PortId::all(self.sw.port_count()) {
            self.sw.set_port_hold(p, false);
            self.sw.set_port_oper(p, true, Instant::from_ns(self.now));
            for q in 0..8 {
                self.sw.set_queue_hold(p, q, false);
                self.sw.set_debug_storm(p, q, false);
            }
        }
        for _ in 0..100_000 {
            for p in PortId::all(self.sw.port_count()) {
                self.transmit(p, self.now);
            }
            if self.queued() == 0 {
                break;
            }
            // Admin-down ports hold their queues: nothing leaves them but a re-apply or a flush.
            let next = self
                .sw
                .poll_at()
                .map(Instant::as_ns)
                .filter(|&t| t > self.now)
                .unwrap_or(self.now + 1_000_000);
            self.now = next;
            self.sw.handle_timeout(Instant::from_ns(self.now));
        }
    }
}

fuzz_target!(|input: Input| {
    static DBS: OnceLock<Vec<ConfigDb>> = OnceLock::new();
    let dbs = DBS.get_or_init(|| {
        PROFILES.iter().map(|t| ConfigDb::from_yaml_str(t).expect("a shipped profile parses")).collect()
    });
    let base = dbs[usize::from(input.profile) % dbs.len()].clone();
    let mut sw = Switch::new();
    sw.apply(&base, Instant::ZERO).expect("a shipped profile applies");
    let mut h = Harness { sw, base, now: 0, sent: 0 };
    for op in input.ops.iter().take(256) {
        h.step(op);
        h.check();
    }
    // Bring back the running configuration unchanged but for admin state (a down port keeps its queue).
    let base = h.base.clone();
    h.sw.apply(&base, Instant::from_ns(h.now)).expect("the shipped profile re-applies");
    h.drain();
    h.check();
    assert_eq!(h.queued(), 0, "frames left queued after a drain");
    let mmu = h.sw.mmu();
    assert_eq!(mmu.total_cells(), 0, "buffer cells left after a drain");
    for p in PortId::all(h.sw.port_count()) {
        assert_eq!(mmu.xoff_pgs(p), 0, "port {p} left in XOFF after a drain");
    }
    let l = h.sw.ledger();
    assert_eq!(l.copies + l.originated, h.sent + l.copies_dropped + l.flushed);
});
