//! What the soak reads from switchd's counters: the frame ledger's conservation, lossless drops apart from
//! the watchdog's, the watchdog's storms, and health.

use lossless_proto::v1 as pb;
use serde::Serialize;
use std::collections::BTreeMap;

pub const LOSSLESS: [usize; 2] = [3, 4];

fn ledger(c: &pb::GetCountersResponse) -> pb::FrameLedger {
    c.ledger.unwrap_or_default()
}

/// Frames waiting in egress queues now.
pub fn queued(c: &pb::GetCountersResponse) -> u64 {
    c.ports.iter().flat_map(|p| p.queue_depth.iter()).sum()
}

/// The ledger's two identities on one snapshot (taken at one instant on switchd's model thread):
/// `received == forwarded + trapped + dropped` and `copies + originated == sent + queued + copies_dropped +
/// flushed`, where `sent` is the ports' TX_OK (data frames dequeued; PFC frames are not copies) and `queued`
/// the queue depths.
pub fn conservation(c: &pb::GetCountersResponse) -> Result<(), String> {
    let l = ledger(c);
    if l.received != l.forwarded + l.trapped + l.dropped {
        return Err(format!(
            "received {} != forwarded {} + trapped {} + dropped {}",
            l.received, l.forwarded, l.trapped, l.dropped
        ));
    }
    let sent: u64 = c.ports.iter().map(|p| p.tx_ok).sum();
    let queued = queued(c);
    if l.copies + l.originated != sent + queued + l.copies_dropped + l.flushed {
        return Err(format!(
            "copies {} + originated {} != sent (TX_OK) {sent} + queued {queued} + copies_dropped {} + flushed {}",
            l.copies, l.originated, l.copies_dropped, l.flushed
        ));
    }
    Ok(())
}

/// The ledger and the totals the identities use, for the summary.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LedgerFigures {
    pub received: u64,
    pub forwarded: u64,
    pub trapped: u64,
    pub dropped: u64,
    pub copies: u64,
    pub originated: u64,
    pub sent: u64,
    pub queued: u64,
    pub copies_dropped: u64,
    pub flushed: u64,
}

impl LedgerFigures {
    pub fn of(c: &pb::GetCountersResponse) -> LedgerFigures {
        let l = ledger(c);
        LedgerFigures {
            received: l.received,
            forwarded: l.forwarded,
            trapped: l.trapped,
            dropped: l.dropped,
            copies: l.copies,
            originated: l.originated,
            sent: c.ports.iter().map(|p| p.tx_ok).sum(),
            queued: queued(c),
            copies_dropped: l.copies_dropped,
            flushed: l.flushed,
        }
    }
}

/// Drops by kind, summed over the ports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Drops {
    /// Lossless PGs 3/4 refused at ingress (buffer), the watchdog's (its RX_DROPPED) taken out. Must be 0.
    pub lossless_ingress: i64,
    /// Lossless queues 3/4 drops (tail, WRED, flush), the watchdog's (its TX_DROPPED) taken out. Must be 0.
    pub lossless_egress: i64,
    /// Of the lossless queues' drops, WRED's (included in `lossless_egress` and the watchdog's).
    pub lossless_wred: u64,
    /// Dropped by the PFC watchdog's drop action on stormed lossless queues: expected during storms.
    pub watchdog_tx_dropped: u64,
    pub watchdog_rx_dropped: u64,
    /// Lossy queues' drops (tail drop under incast: expected).
    pub lossy_egress: u64,
    /// Frames the kernel dropped before switchd read them (RX_OVR; all classes).
    pub rx_overrun: u64,
    /// Ingress drop reasons, summed over ports.
    pub reasons: BTreeMap<String, u64>,
    /// Where lossless PGs and queues dropped (`port pg3 N`, `port q4 N`; the watchdog's included).
    pub lossless_where: Vec<String>,
}

impl Drops {
    pub fn of(c: &pb::GetCountersResponse) -> Drops {
        let mut d = Drops::default();
        let (mut pg, mut q) = (0u64, 0u64);
        for p in &c.ports {
            for &i in &LOSSLESS {
                let pg_drops = p.pgs.get(i).map_or(0, |g| g.dropped_packets);
                pg += pg_drops;
                let queue = p.queues.get(i).cloned().unwrap_or_default();
                if pg_drops > 0 {
                    d.lossless_where.push(format!("{} pg{i} {pg_drops}", p.name));
                }
                if queue.dropped_packets > 0 {
                    d.lossless_where.push(format!("{} q{i} {}", p.name, queue.dropped_packets));
                }
                q += queue.dropped_packets;
                d.lossless_wred += queue.wred_dropped_packets;
                let wd = p.pfc_wd.get(i).cloned().unwrap_or_default();
                d.watchdog_tx_dropped += wd.tx_dropped_packets;
                d.watchdog_rx_dropped += wd.rx_dropped_packets;
            }
            for (i, queue) in p.queues.iter().enumerate() {
                if !LOSSLESS.contains(&i) {
                    d.lossy_egress += queue.dropped_packets;
                }
            }
            d.rx_overrun += p.rx_ovr;
            for (reason, n) in &p.drop_reasons {
                *d.reasons.entry(reason.clone()).or_default() += n;
            }
        }
        // The watchdog's RX_DROPPED is what the stormed queue's PG dropped during the storm: its ingress
        // drops (PFC_WATCHDOG, with drop_ingress) and the buffer drops of a PG that may no longer pause its
        // sender (the drop action stops PFC on the stormed priority of the port).
        d.lossless_ingress = pg as i64 - d.watchdog_rx_dropped as i64;
        d.lossless_egress = q as i64 - d.watchdog_tx_dropped as i64;
        d
    }
}

/// Watchdog detections and restorations of one port's lossless queues: ((q3 detected, q3 restored),
/// (q4 detected, q4 restored)).
pub fn storms_of(c: &pb::GetCountersResponse, port: &str) -> [(u64, u64); 2] {
    let p = c.ports.iter().find(|p| p.name == port);
    LOSSLESS.map(|q| {
        p.and_then(|p| p.pfc_wd.get(q)).map_or((0, 0), |w| (w.deadlock_detected, w.deadlock_restored))
    })
}

/// Switch-wide watchdog figures at the end.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WatchdogFigures {
    pub detected: u64,
    pub restored: u64,
    /// Queues not "operational" (still stormed) at the end.
    pub stormed_at_end: Vec<String>,
}

impl WatchdogFigures {
    pub fn of(c: &pb::GetCountersResponse) -> WatchdogFigures {
        let mut w = WatchdogFigures::default();
        for p in &c.ports {
            for &q in &LOSSLESS {
                let Some(wd) = p.pfc_wd.get(q) else { continue };
                w.detected += wd.deadlock_detected;
                w.restored += wd.deadlock_restored;
                if wd.status != "operational" {
                    w.stormed_at_end.push(format!("{}:{q} {:?}", p.name, wd.status));
                }
            }
        }
        w
    }
}

/// Traffic the switch carried, for the summary (so a run that moved nothing does not pass).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Traffic {
    /// Packets out of the receiver's port, per class.
    pub to_receiver_lossless: u64,
    pub to_receiver_lossy: u64,
    /// PFC frames switchd sent (XOFF/XON refreshes) and received (storms).
    pub pfc_tx: u64,
    pub pfc_rx: u64,
    pub ecn_marked: u64,
}

impl Traffic {
    pub fn of(c: &pb::GetCountersResponse, receiver_port: &str) -> Traffic {
        let mut t = Traffic::default();
        for p in &c.ports {
            t.pfc_tx += p.pfc.iter().map(|x| x.tx).sum::<u64>();
            t.pfc_rx += p.pfc.iter().map(|x| x.rx).sum::<u64>();
            t.ecn_marked += p.queues.iter().map(|x| x.ecn_marked_packets).sum::<u64>();
            if p.name == receiver_port {
                for (i, q) in p.queues.iter().enumerate() {
                    if LOSSLESS.contains(&i) {
                        t.to_receiver_lossless += q.packets;
                    } else {
                        t.to_receiver_lossy += q.packets;
                    }
                }
            }
        }
        t
    }
}

/// Ports that are not up (admin or link).
pub fn ports_down(c: &pb::GetCountersResponse) -> Vec<String> {
    c.ports.iter().filter(|p| !(p.admin_up && p.oper_up)).map(|p| p.name.clone()).collect()
}

/// Per port: PFC frames sent and received on 3/4, depth of queues 3/4, watchdog status; for the line that
/// reports new lossless drops.
pub fn lossless_state(c: &pb::GetCountersResponse) -> String {
    let mut out = Vec::new();
    for p in &c.ports {
        let f = |i: usize| p.pfc.get(i).cloned().unwrap_or_default();
        let depth = |i: usize| p.queue_depth.get(i).copied().unwrap_or(0);
        let wd = |i: usize| p.pfc_wd.get(i).map_or(String::new(), |w| w.status.clone());
        out.push(format!(
            "{}: pfc tx {}/{} rx {}/{}, depth {}/{}, wd {}/{}",
            p.name,
            f(3).tx,
            f(4).tx,
            f(3).rx,
            f(4).rx,
            depth(3),
            depth(4),
            wd(3),
            wd(4)
        ));
    }
    out.join("; ")
}
