//! What sonic-mgmt's buffer tests (`tests/saitests/py3/sai_qos_tests.py`) share, on the fixture: a test
//! flow of 64-byte frames, the counters a test watches, barriers on switchd's model loop, PFC frames seen
//! on a test port, holding and releasing a destination, and watermark readings.
//!
//! Every buffer test holds the destination's egress (sai_thrift_port_tx_disable; switchd holds exactly, so
//! nothing leaks out: sonic-mgmt's `pkts_num_leak_out` is 0), fills, reads counters and watermarks and
//! releases. Drop counters are exact as soon as switchd has counted a burst's frames (admission happens on
//! receipt); PFC frames leave in the model loop's transmit phase, so PFC readings use [`settled`], and "no
//! PFC" is an explicit negative wait ([`Ptf::negative_timeout`]).

use crate::Ptf;
use crate::packet::{Udp, pfc_of, simple_udp_packet};
use crate::published::{self, Block};
use crate::qos::Qos;
use lossless_dataplane::wire::EthernetAddress;
use lossless_proto::v1 as pb;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// The test frames' length, as sonic-mgmt's `packet_length` default.
pub const PKTLEN: usize = 64;

/// One stream of test frames: from a source port, routed to a destination, in one class.
pub struct Flow {
    pub src: usize,
    pub src_name: String,
    pub dst_name: String,
    pub dscp: u8,
    pub tc: u8,
    pub pg: u8,
    pub queue: u8,
    pub frame: Vec<u8>,
    /// The routed copy's length (a tagged destination adds 4 bytes).
    pub egress_len: usize,
}

impl Flow {
    /// A flow of `dscp` from `src_name` to `dst_name`, classified by the profile's maps. sonic-mgmt counts
    /// packets of `cell_occupancy` cells; every frame here must take one cell of the profile's published
    /// cell size on both sides, so that frame counts and cell counts are the same.
    pub fn new(ptf: &mut Ptf, src_name: &str, dst_name: &str, dscp: u8) -> Flow {
        let (src, dst) = (ptf.port_index(src_name), ptf.port_index(dst_name));
        let dest = ptf.destination(dst);
        let qos = Qos::new(&ptf.db);
        let tc = qos.dscp_to_tc(src_name, dscp);
        let (pg, queue) = (qos.tc_to_pg(src_name, tc), qos.tc_to_queue(dst_name, tc));
        let frame = simple_udp_packet(&Udp {
            pktlen: PKTLEN,
            eth_dst: ptf.router_mac(),
            eth_src: EthernetAddress([0x02, 0xcc, 0, 0, 0, src as u8]),
            ip_src: Ipv4Addr::new(10, 1, 0, src as u8),
            ip_dst: dest.ip,
            ip_dscp: dscp,
            // ECT(1), as sonic-mgmt sends (`ecn: 1`): the lossless queues' WRED profile marks, not drops.
            ip_ecn: 1,
            ..Udp::default()
        });
        let egress_len = frame.len() + if dest.vlan.is_some() { 4 } else { 0 };
        let cell = published::figures(&ptf.profile).cell_size;
        assert!(
            frame.len().max(egress_len) as u64 <= cell,
            "{}: a {egress_len}-byte frame takes more than one {cell}-byte cell",
            ptf.profile
        );
        Flow {
            src,
            src_name: src_name.to_owned(),
            dst_name: dst_name.to_owned(),
            dscp,
            tc,
            pg,
            queue,
            frame,
            egress_len,
        }
    }

    /// The flow of a published block (its `dscp`) between the profile's published test ports; the
    /// profile's maps must send it to the block's `pg` and `queue` where the block names them.
    pub fn of_block(ptf: &mut Ptf, block: &Block) -> Flow {
        let p = published::figures(&ptf.profile);
        let f = Flow::new(ptf, &p.src_port, &p.dst_port, block.u8("dscp"));
        f.check(block);
        f
    }

    /// Asserts the block's `pg` / `queue` are this flow's.
    pub fn check(&self, block: &Block) {
        if block.has("pg") {
            assert_eq!(
                self.pg,
                block.u8("pg"),
                "DSCP {} reaches PG {} ({})",
                self.dscp,
                self.pg,
                block.source
            );
        }
        if block.has("queue") {
            assert_eq!(
                self.queue,
                block.u8("queue"),
                "DSCP {} reaches queue {} ({})",
                self.dscp,
                self.queue,
                block.source
            );
        }
    }

    /// Whether the flow's TC is lossless on the source (PORT_QOS_MAP pfc_enable).
    pub fn lossless(&self, qos: &Qos<'_>) -> bool {
        qos.pfc_enabled(&self.src_name).contains(&self.tc)
    }

    /// The PFC priority of a lossless flow: its TC, which must be in the source's `pfc_enable`; the
    /// shipped profiles' PFC priority → PG maps are the identity, so it must also be the flow's PG.
    pub fn prio(&self, qos: &Qos<'_>) -> u8 {
        assert!(self.lossless(qos), "TC {} is not lossless on {}", self.tc, self.src_name);
        assert_eq!(self.tc, self.pg, "TC {} maps to PG {} on {}", self.tc, self.pg, self.src_name);
        self.tc
    }

    pub fn send(&self, ptf: &mut Ptf, n: u64) {
        ptf.send_packets(self.src, &self.frame, usize::try_from(n).expect("a frame count"));
    }
}

pub fn port<'a>(c: &'a pb::GetCountersResponse, name: &str) -> &'a pb::PortCounters {
    c.ports.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("switchd has no port {name}"))
}

/// The counters a buffer test watches for one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Obs {
    /// PFC frames the source port sent, per priority (XON frames included).
    pub pfc_tx: [u64; 8],
    /// Ingress drops on the source port (RX_DRP) and on the flow's PG.
    pub rx_drp: u64,
    pub pg_drop: u64,
    /// Egress drops on the destination port (TX_DRP) and on the flow's queue.
    pub tx_drp: u64,
    pub queue_drop: u64,
    /// Frames waiting in the flow's queue.
    pub depth: u64,
}

impl Obs {
    pub fn of(c: &pb::GetCountersResponse, f: &Flow) -> Obs {
        let (s, d) = (port(c, &f.src_name), port(c, &f.dst_name));
        Obs {
            pfc_tx: std::array::from_fn(|p| s.pfc.get(p).map_or(0, |x| x.tx)),
            rx_drp: s.rx_drp,
            pg_drop: s.pgs[usize::from(f.pg)].dropped_packets,
            tx_drp: d.tx_drp,
            queue_drop: d.queues[usize::from(f.queue)].dropped_packets,
            depth: d.queue_depth.get(usize::from(f.queue)).copied().unwrap_or(0),
        }
    }

    pub fn pfc(&self, prio: u8) -> u64 {
        self.pfc_tx[usize::from(prio)]
    }

    pub fn pfc_all(&self) -> u64 {
        self.pfc_tx.iter().sum()
    }
}

/// switchd's counters taken at least two model-loop iterations after this call began. Each GetCounters
/// runs between two iterations and is stamped with its iteration's time; an iteration ends with the
/// transmit phase, where PFC frames leave. Two stamps later than the first reading, every PFC frame due
/// because of frames received before the call has been sent and counted (including one a drain on a
/// later-numbered port made due). A barrier on the model loop, not a timed wait.
pub fn settled(ptf: &mut Ptf) -> pb::GetCountersResponse {
    let mut stamp = ptf.counters().timestamp_ns;
    let deadline = Instant::now() + ptf.timeout;
    let mut advanced = 0;
    loop {
        let c = ptf.counters();
        if c.timestamp_ns > stamp {
            advanced += 1;
            if advanced == 2 {
                return c;
            }
            stamp = c.timestamp_ns;
        }
        assert!(Instant::now() < deadline, "switchd's counter stamps did not advance");
    }
}

pub fn observe(ptf: &mut Ptf, f: &Flow) -> Obs {
    Obs::of(&settled(ptf), f)
}

/// Sends `count` frames of `f` one at a time, reading the counters (settled) after each; returns the
/// 1-based index of the first frame after which `happened` held, if any. All `count` frames are sent.
pub fn step(ptf: &mut Ptf, f: &Flow, count: u64, mut happened: impl FnMut(&Obs) -> bool) -> Option<u64> {
    let mut first = None;
    for k in 1..=count {
        f.send(ptf, 1);
        if first.is_none() && happened(&observe(ptf, f)) {
            first = Some(k);
        }
    }
    first
}

/// PFC frames (class-enable vector, quanta) that arrived on test port `port` during a watch of
/// [`Ptf::negative_timeout`] (and whatever was queued before).
pub fn watch_pfc(ptf: &mut Ptf, port: usize) -> Vec<(u8, [u16; 8])> {
    let wait = ptf.negative_timeout;
    ptf.receive_all(port, wait, wait).iter().filter_map(|f| pfc_of(f)).collect()
}

/// Whether a PFC frame is an XON (quanta 0) for `prio`.
pub fn is_xon(frame: &(u8, [u16; 8]), prio: u8) -> bool {
    frame.0 & (1 << prio) != 0 && frame.1[usize::from(prio)] == 0
}

/// Waits for a PFC frame on test port `port` for priority `prio`: an XOFF (quanta > 0) or, with `xon`,
/// an XON (quanta 0). Other frames are skipped. Returns it.
pub fn await_pfc(ptf: &mut Ptf, port: usize, prio: u8, xon: bool) -> (u8, [u16; 8]) {
    let deadline = Instant::now() + ptf.timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "no PFC {} for priority {prio} arrived on test port {port}",
            if xon { "XON" } else { "XOFF" }
        );
        for f in ptf.receive_all(port, Duration::from_millis(1), left.min(Duration::from_millis(20))) {
            if let Some((ce, time)) = pfc_of(&f)
                && ce & (1 << prio) != 0
                && (time[usize::from(prio)] == 0) == xon
            {
                return (ce, time);
            }
        }
    }
}

/// How a PFC frame reads in a report: its class-enable vector, XOFF or XON.
pub fn pfc_kind(class_enable: u8, xoff: bool) -> String {
    format!("class-enable {class_enable:#04x} {}", if xoff { "XOFF" } else { "XON" })
}

/// Releases the held ports and waits until the flows' queues are empty. What arrived on the test ports
/// stays queued (an XON frame among it).
pub fn release(ptf: &mut Ptf, ports: &[&str], flows: &[&Flow]) {
    for p in ports {
        ptf.hold(p, None, false);
    }
    ptf.wait_until("the held queues to drain", |c| flows.iter().all(|f| Obs::of(c, f).depth == 0));
}

pub fn port_wm<'a>(w: &'a pb::GetWatermarksResponse, name: &str) -> &'a pb::PortWatermarks {
    w.ports.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no watermarks for {name}"))
}

pub fn pool_wm<'a>(w: &'a pb::GetWatermarksResponse, name: &str) -> &'a pb::PoolWatermarks {
    w.pools.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no watermarks for pool {name}"))
}

/// A watermark in cells of `cell` bytes, as sonic-mgmt compares them (`cell_size` multiples).
pub fn cells(bytes: u64, cell: u64) -> u64 {
    assert_eq!(bytes % cell, 0, "a watermark of {bytes} bytes is not whole {cell}-byte cells");
    bytes / cell
}

/// Where a first event fell against a published figure and sonic-mgmt's margin: the exact frame, or what
/// the procedure can say when it did not happen in the window.
pub fn first_frame(first: Option<u64>, last_sent: u64) -> String {
    first.map_or_else(|| format!("none by frame {last_sent}"), |n| n.to_string())
}
