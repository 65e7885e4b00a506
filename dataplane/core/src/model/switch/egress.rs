//! The egress side: buffer admission (MMU), WRED/ECN, the scheduler, PFC generation and honouring, egress
//! holds and the PFC watchdog's actions.

use super::*;
use crate::model::mmu::{Admitted, Allocation, Refusal, WatermarkKind, WredHint};
use crate::model::scheduler::Queued;
use crate::model::watchdog::{QueueObservation, Transition};
use crate::model::wred::{self, Colour, WredAction, WredQueue};
use crate::wire::ip::Ecn;
use crate::wire::{MacControlRepr, mac_control};

/// A frame waiting in an egress queue, with the buffer cells it holds: only what leaving the queue needs
/// (the frame, and the cells to give back), since the scheduler moves it on enqueue and dequeue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedFrame {
    pub frame: Vec<u8>,
    pub alloc: Allocation,
}

impl Queued for QueuedFrame {
    fn wire_len(&self) -> usize {
        self.frame.len()
    }
}

/// WRED's state of a queue, with the length the fast admission left with the MMU folded in first (with
/// weight 0 the average is that length, whatever it was before).
#[inline]
fn wred_state<'a>(mmu: &mut Mmu, ports: &'a mut [PortState], out: PortId, queue: u8) -> &'a mut WredQueue {
    let sample = mmu.take_wred_sample(out, queue);
    let state = &mut ports[out.index()].wred[usize::from(queue)];
    if let Some(ahead_bytes) = sample {
        state.observe(ahead_bytes, 0);
    }
    state
}

/// The earlier of two optional instants (`None` is never).
#[inline]
pub(super) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The IP header of a frame that may carry an 802.1Q tag: (is IPv4, offset).
fn ip_header(frame: &[u8]) -> Option<(bool, usize)> {
    let ethertype = |at: usize| frame.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let (ty, off) = match ethertype(12)? {
        0x8100 => (ethertype(16)?, 18),
        t => (t, 14),
    };
    match ty {
        0x0800 => Some((true, off)),
        0x86dd => Some((false, off)),
        _ => None,
    }
}

#[inline(always)]
fn frame_ecn(frame: &[u8]) -> Option<Ecn> {
    let (v4, off) = ip_header(frame)?;
    let ds = if v4 {
        *frame.get(off + 1)?
    } else {
        (frame.get(off..off + 2)?.iter().fold(0u16, |a, b| a << 8 | u16::from(*b)) >> 4) as u8
    };
    Some(Ecn::from(ds))
}

fn mark_ce(frame: &mut [u8]) -> bool {
    match ip_header(frame) {
        Some((true, off)) => Ipv4Packet::new_checked(&mut frame[off..]).is_ok_and(|mut p| p.set_ecn_ce()),
        Some((false, off)) => Ipv6Packet::new_checked(&mut frame[off..]).is_ok_and(|mut p| p.set_ecn_ce()),
        None => false,
    }
}

impl Switch {
    /// Hands the egress copies of one frame to their queues; the frame counts as forwarded if any copy was
    /// admitted, else as dropped.
    pub(super) fn deliver(
        &mut self,
        copies: impl IntoIterator<Item = (PortId, Option<u16>, Vec<u8>)>,
        meta: Meta,
        now: Instant,
    ) {
        let mut admitted = 0;
        for (out, vid, frame) in copies {
            admitted += usize::from(self.enqueue(out, vid, frame, meta, now));
        }
        if admitted > 0 {
            self.ledger.forwarded += 1;
        } else {
            self.ledger.dropped += 1;
        }
    }

    /// Puts one egress copy on its queue, through buffer admission, WRED/ECN and the queue's policer; tags
    /// it when it leaves through a tagged VLAN member. Returns whether it was admitted.
    pub(super) fn enqueue(
        &mut self,
        out: PortId,
        vid: Option<u16>,
        mut frame: Vec<u8>,
        meta: Meta,
        now: Instant,
    ) -> bool {
        let class = meta.class;
        if let Some(v) = vid
            && self.derived.is_tagged(v, out)
        {
            let pcp = meta.pcp.unwrap_or(class.tc);
            vlan::push_tag(&mut frame, u16::from(EtherType::Vlan), vlan::tci(pcp, v));
        }
        let queue =
            class.queue_override.unwrap_or(self.config.qos[out.index()].tc_to_queue[usize::from(class.tc)])
                & 7;
        if meta.ingress.is_some() {
            self.ledger.copies += 1;
        } else {
            self.ledger.originated += 1;
        }
        let len = frame.len() as u64;
        if self.wd_masks[out.index()].dropping_queues & (1 << queue) != 0 {
            self.count_egress_drop(out, queue, len, "PFC_WD");
            return false;
        }
        let cells = self.mmu.cells_for(frame.len());
        let fast = match meta.ingress {
            Some(port) => self.mmu.admit_fast(cells, port, class.pg, out, queue),
            None => None,
        };
        let Admitted { alloc, xoff, wred } = match fast {
            Some(admitted) => admitted,
            None => match self.mmu.admit_slow(cells, meta.ingress.map(|p| (p, class.pg)), (out, queue)) {
                Ok(admitted) => admitted,
                Err(refusal) => return self.refuse(out, queue, meta.ingress, class.pg, len, refusal),
            },
        };
        // XOFF goes out as soon as the MMU asserts it, before WRED or the policer may still drop the copy:
        // the PG stays in XOFF after that drop (it is above its limit), and `admit` reports the transition
        // only once.
        if xoff && let Some(port) = meta.ingress {
            self.assert_pfc(port, class.pg);
        }
        if self.mmu.has_raised() {
            let mut raised = std::mem::take(&mut self.pg_scratch);
            self.mmu.take_raised(&mut raised);
            for &(port, pg) in &raised {
                self.assert_pfc(port, pg);
            }
            raised.clear();
            self.pg_scratch = raised;
        }
        match wred {
            WredHint::Off => {
                debug_assert!(self.queue_wred(out, queue).is_none(), "WRED off on {out:?} {queue}")
            }
            // Below its minimum WRED passes every frame, whatever its ECN field, without a random number;
            // with weight 0 the average it keeps is the length it saw.
            // The queue's length before the frame, the average that WRED keeps with weight 0, stays with
            // the MMU until WRED's state of this queue is next read (`wred_state`).
            WredHint::Pass => self.debug_check_wred_pass(out, queue, &alloc),
            WredHint::Unknown => {
                if !self.wred(out, queue, &alloc, &mut frame, len) {
                    return false;
                }
            }
        }
        let item = QueuedFrame { frame, alloc };
        self.touch_port(out);
        if let Err(item) = self.ports[out.index()].egress.enqueue(queue, item, now) {
            // The strict queue's policer refused it.
            self.release(&item.alloc);
            self.count_egress_drop(out, queue, len, "POLICER");
            return false;
        }
        true
    }

    /// A copy the MMU refused: counted as the drop of its side.
    #[cold]
    #[inline(never)]
    fn refuse(
        &mut self,
        out: PortId,
        queue: u8,
        ingress: Option<PortId>,
        pg: u8,
        len: u64,
        refusal: Refusal,
    ) -> bool {
        match refusal {
            Refusal::Ingress => {
                let port = ingress.expect("only an ingress PG refuses at ingress");
                self.ledger.copies_dropped += 1;
                self.ports[port.index()].counters.pgs[usize::from(pg)].dropped_packets += 1;
                self.count_ingress_drop(port, DropReason::IngressBuffer);
            }
            Refusal::Egress => self.count_egress_drop(out, queue, len, "EGRESS_BUFFER"),
        }
        false
    }

    /// Folds every queue's length that the fast admission left with the MMU into WRED's state (before a
    /// reconfiguration, which may reset the MMU's ports).
    pub(super) fn fold_wred_samples(&mut self) {
        for port in PortId::all(self.ports.len()) {
            for queue in 0..8 {
                wred_state(&mut self.mmu, &mut self.ports, port, queue);
            }
        }
    }

    /// The WRED profile of a queue, if any.
    fn queue_wred(&self, out: PortId, queue: u8) -> Option<usize> {
        self.config.port_buffers.get(out.index()).and_then(|b| b.queue_wred[usize::from(queue)])
    }

    /// Debug builds: the full WRED computation agrees that WRED passes this frame below its minimum.
    fn debug_check_wred_pass(&self, out: PortId, queue: u8, alloc: &Allocation) {
        if cfg!(debug_assertions) {
            let ahead_bytes =
                self.mmu.peek_wred_sample(out, queue).expect("the MMU keeps the queue's length");
            let profile = &self.config.wred_profiles[self.queue_wred(out, queue).expect("a WRED profile")];
            let ahead = self
                .queue_occupancy_bytes(out, queue)
                .saturating_sub(u64::from(alloc.egress_cells()) * self.mmu.cell_bytes());
            assert_eq!(ahead, ahead_bytes, "queue length before the frame on {out:?} {queue}");
            assert!(profile.weight == 0, "WRED weight {} taken as instantaneous", profile.weight);
            assert!(ahead < profile.colours[Colour::Green as usize].min_bytes, "WRED above its minimum");
        }
    }

    /// WRED/ECN for an admitted copy, in full: returns whether it passes (marked or not); a dropped copy's
    /// cells are released and counted.
    #[inline(always)]
    fn wred(&mut self, out: PortId, queue: u8, alloc: &Allocation, frame: &mut [u8], len: u64) -> bool {
        if let Some(w) = self.queue_wred(out, queue) {
            let profile = &self.config.wred_profiles[w];
            let ahead = self
                .queue_occupancy_bytes(out, queue)
                .saturating_sub(u64::from(alloc.egress_cells()) * self.mmu.cell_bytes());
            let queue_bytes =
                wred_state(&mut self.mmu, &mut self.ports, out, queue).observe(ahead, profile.weight);
            // Below the green minimum WRED passes every packet, ECN-capable or not (and draws no random
            // number): the frame's ECN field is read only when it can matter.
            let action = if queue_bytes < profile.colours[Colour::Green as usize].min_bytes {
                debug_assert!(
                    [false, true].iter().all(|&ect| wred::decide(
                        profile,
                        Colour::Green,
                        ect,
                        queue_bytes,
                        &mut self.rng.clone()
                    ) == WredAction::Pass),
                    "WRED below its minimum"
                );
                WredAction::Pass
            } else {
                let ect = frame_ecn(frame).is_some_and(|e| e != Ecn::NotEct);
                wred::decide(profile, Colour::Green, ect, queue_bytes, &mut self.rng)
            };
            match action {
                WredAction::Drop => {
                    self.release(alloc);
                    let q = &mut self.ports[out.index()].counters.queues[usize::from(queue)];
                    q.wred_dropped_packets += 1;
                    q.wred_dropped_bytes += len;
                    self.count_egress_drop(out, queue, len, "WRED");
                    return false;
                }
                WredAction::MarkCe
                    if self.config.asic.ecn_mark_point == EcnMarkPoint::Enqueue && mark_ce(frame) =>
                {
                    self.count_ecn_mark(out, queue, len);
                }
                _ => {}
            }
        }
        true
    }

    /// The buffer a queue occupies, bytes: its cells × cell size when a profile manages it (what WRED on
    /// an ASIC compares), else the bytes of its frames.
    /// Bytes a queue holds now (`SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES`): its buffer cells times the cell size
    /// when a buffer profile manages it, else the bytes of the frames waiting in it.
    #[inline(always)]
    pub fn queue_occupancy_bytes(&self, port: PortId, queue: u8) -> u64 {
        match self.mmu.managed_queue_cells(port, queue) {
            Some(cells) => cells * self.mmu.cell_bytes(),
            None => self.ports[port.index()].egress.bytes(queue),
        }
    }

    fn count_ingress_drop(&mut self, port: PortId, reason: DropReason) {
        let c = &mut self.ports[port.index()].counters;
        c.rx_drp += 1;
        *c.drop_reasons.entry(reason).or_default() += 1;
        self.log_drop(port, reason.as_str(), None);
    }

    /// A copy refused at `port`'s egress `queue`; `cause` names why for a capture of drops.
    fn count_egress_drop(&mut self, port: PortId, queue: u8, len: u64, cause: &'static str) {
        self.log_drop(port, cause, Some(queue));
        self.ledger.copies_dropped += 1;
        let c = &mut self.ports[port.index()].counters;
        c.tx_drp += 1;
        c.queues[usize::from(queue)].dropped_packets += 1;
        c.queues[usize::from(queue)].dropped_bytes += len;
    }

    /// Gives back an allocation's cells and sends XON for PGs that drained to their XON point.
    #[inline(always)]
    fn release(&mut self, alloc: &Allocation) {
        // The common case inline: no PG in XOFF anywhere (so none to release) and cells in both reserves,
        // or none. Anything else (as under load, where some PG is in XOFF) out of line, as before.
        if !self.mmu.any_xoff() && self.mmu.release_simple(alloc) {
            return;
        }
        self.release_rest(alloc);
    }

    /// [`Switch::release`] in full.
    #[inline(never)]
    fn release_rest(&mut self, alloc: &Allocation) {
        if let Some((port, pg)) = self.mmu.release(alloc) {
            self.release_pfc(port, pg);
        }
        // Other PGs in XOFF may be back at their XON point (a dynamic limit grows as the pool drains); the
        // MMU walks only the PGs in XOFF.
        if self.mmu.any_xoff() {
            let mut released = std::mem::take(&mut self.pg_scratch);
            self.mmu.recheck_xon(&mut released);
            for &(port, pg) in &released {
                self.release_pfc(port, pg);
            }
            released.clear();
            self.pg_scratch = released;
        }
    }

    /// The PFC priorities of a port that map to a PG.
    fn pg_priorities(&self, port: PortId, pg: u8) -> u8 {
        // Computed when the configuration was applied (the MMU reads the same `pfc_to_pg_map`).
        let prios = self.mmu.pg_priorities(port, pg);
        debug_assert_eq!(
            prios,
            (0..8).filter(|&p| self.config.qos[port.index()].pfc_to_pg[p] == pg).fold(0, |m, p| m | 1 << p),
            "priorities of {port:?} PG {pg}"
        );
        prios
    }

    /// The port's `pfc_enable`, less the priorities the watchdog switched off.
    pub(super) fn effective_pfc_enable(&self, port: PortId) -> u8 {
        self.config.qos[port.index()].pfc_enable & !self.wd_masks[port.index()].pfc_disabled
    }

    /// A CE mark on a queue; the queue's first one is an event.
    fn count_ecn_mark(&mut self, port: PortId, queue: u8, len: u64) {
        let q = &mut self.ports[port.index()].counters.queues[usize::from(queue)];
        q.ecn_marked_packets += 1;
        q.ecn_marked_bytes += len;
        if q.ecn_marked_packets == 1 {
            self.push_event(Event::EcnFirstMark { port: self.port_name(port), queue });
        }
    }

    /// A PG reached its XOFF point. "Asserting PFC" has one meaning in the model: a port sends XOFF for
    /// priority p exactly while p's PG is in XOFF in the MMU ([`Mmu::xoff_pgs`](crate::model::mmu::Mmu)),
    /// p is in the port's `pfc_enable` and not taken over by the watchdog, and the port's link is up. The
    /// MMU's flag follows the buffer alone; this and [`Switch::release_pfc`] keep the port's asserted
    /// priorities equal to the part of it the port can send (the watchdog's restoration and a link coming
    /// back up re-assert what the MMU still holds).
    fn assert_pfc(&mut self, port: PortId, pg: u8) {
        let prios = self.pg_priorities(port, pg) & self.effective_pfc_enable(port);
        if prios == 0 || !self.ports[port.index()].oper_up {
            return;
        }
        let before = self.ports[port.index()].pfc.asserted();
        self.ports[port.index()].pfc.assert_xoff(prios);
        self.touch_port(port);
        if before & prios != prios && self.pfc_events != PfcEvents::None {
            if self.pfc_events == PfcEvents::FirstXoff {
                self.pfc_events = PfcEvents::None;
            }
            self.push_event(Event::PfcXoff { port: self.port_name(port), pg });
        }
    }

    fn release_pfc(&mut self, port: PortId, pg: u8) {
        let prios = self.pg_priorities(port, pg);
        if self.ports[port.index()].pfc.asserted() & prios != 0 {
            self.ports[port.index()].pfc.release_xoff(prios);
            self.touch_port(port);
            if self.pfc_events == PfcEvents::All {
                self.push_event(Event::PfcXon { port: self.port_name(port), pg });
            }
        }
    }

    /// The priorities a port should be sending XOFF for: those of its lossless PGs in XOFF, less those the
    /// watchdog took over.
    fn pfc_due(&self, port: PortId) -> u8 {
        let xoff = self.mmu.xoff_pgs(port);
        let prios =
            (0..8u8).filter(|&g| xoff & (1 << g) != 0).fold(0, |m, g| m | self.pg_priorities(port, g));
        prios & self.effective_pfc_enable(port)
    }

    /// Brings a port's PFC generation back in step with its PGs after something changed one of the two
    /// outside the packet path (a configuration, a watchdog restoration, the link coming back up): XOFF
    /// for the priorities of every PG in XOFF, XON for priorities asserted without one.
    pub(super) fn sync_pfc(&mut self, port: PortId) {
        let due = self.pfc_due(port);
        let asserted = self.ports[port.index()].pfc.asserted();
        if asserted == due {
            return;
        }
        let xoff = self.mmu.xoff_pgs(port);
        for pg in (0..8u8).filter(|&g| xoff & (1 << g) != 0) {
            self.assert_pfc(port, pg);
        }
        let stale = asserted & !due;
        let enabled = self.effective_pfc_enable(port);
        let pfc = &mut self.ports[port.index()].pfc;
        pfc.forget(stale & !enabled);
        pfc.release_xoff(stale & enabled);
        self.touch_port(port);
        let qos = &self.config.qos[port.index()];
        let pgs =
            (0..8).filter(|&p| stale & enabled & (1 << p) != 0).fold(0u8, |m, p| m | 1 << qos.pfc_to_pg[p]);
        let report = self.pfc_events == PfcEvents::All;
        for pg in (0..8u8).filter(|&g| report && pgs & (1 << g) != 0) {
            self.push_event(Event::PfcXon { port: self.port_name(port), pg });
        }
    }

    /// A port, if any, whose PFC generation is out of step with its PGs: (port, priorities it asserts,
    /// priorities its PGs in XOFF call for). Ports that are down are skipped (they send nothing, and are
    /// brought back in step when they come up). For tests and fuzzing: it is always `None`.
    pub fn pfc_out_of_step(&self) -> Option<(PortId, u8, u8)> {
        PortId::all(self.ports.len()).filter(|&p| self.ports[p.index()].oper_up).find_map(|p| {
            let (asserted, due) = (self.ports[p.index()].pfc.asserted(), self.pfc_due(p));
            (asserted != due).then_some((p, asserted, due))
        })
    }

    /// A MAC Control frame arrived: PFC pauses the port's egress queues, PAUSE pauses them all on a port
    /// without PFC.
    pub(super) fn receive_mac_control(&mut self, port: PortId, repr: &MacControlRepr, now: Instant) {
        self.note_time(now);
        let speed = self.config.ports[port.index()].speed_mbps;
        let enabled = self.effective_pfc_enable(port);
        let has_pfc = self.config.qos[port.index()].pfc_enable != 0;
        self.touch_port(port);
        let pfc = &mut self.ports[port.index()].pfc;
        match repr {
            MacControlRepr::Pfc(frame) => pfc.receive(frame, enabled, speed, now),
            MacControlRepr::Pause(p) if !has_pfc => pfc.receive_pause(p.pause_time, speed, now),
            MacControlRepr::Pause(_) => {}
        }
    }

    /// Queues of a port that may not send now: paused by PFC, or held.
    fn blocked_queues(&self, port: PortId, now: Instant) -> u8 {
        let state = &self.ports[port.index()];
        let hold = if state.port_hold { 0xff } else { state.queue_hold };
        state.pfc.paused_queues(now, &self.config.qos[port.index()].pfc_to_queue) | hold
    }

    /// The port's line is free: the next frame to send on it, if any. A PFC frame that is due goes first;
    /// then the scheduler's pick among queues that are neither paused nor held. Returns `None` while the
    /// line is still busy with the previous frame (see [`poll_at`](Self::poll_at)).
    #[inline]
    pub fn poll_transmit(&mut self, port: PortId, now: Instant) -> Option<Transmit> {
        // The usual poll right after a frame left (a driver polls until `None`): the line is still busy
        // with it and no port changed since, so there is nothing to send and nothing to refresh. Inline,
        // without the full poll's stack frame.
        if self.readiness.is_fresh()
            && self.ports.get(port.index()).is_some_and(|s| s.egress.line_free_at() > now)
        {
            self.note_time(now);
            return None;
        }
        self.poll_transmit_full(port, now)
    }

    /// [`poll_transmit`](Self::poll_transmit) in full.
    #[inline(never)]
    fn poll_transmit_full(&mut self, port: PortId, now: Instant) -> Option<Transmit> {
        let transmit = self.next_transmit(port, now);
        self.refresh_readiness();
        transmit
    }

    fn next_transmit(&mut self, port: PortId, now: Instant) -> Option<Transmit> {
        self.note_time(now);
        // Most polls find the port busy or idle: answer those before any arithmetic.
        let state = self.ports.get(port.index())?;
        let pfc_due = state.pfc.next_frame_at(now).is_some_and(|t| t <= now);
        if state.egress.line_free_at() > now || !state.oper_up || (!pfc_due && state.egress.is_empty()) {
            return None;
        }
        if pfc_due {
            return self.transmit_pfc_first(port, now);
        }
        self.transmit_queued(port, now)
    }

    /// [`next_transmit`](Self::next_transmit) when a PFC frame is due: it goes first, if the port's state
    /// still calls for one, else a queued frame.
    #[cold]
    #[inline(never)]
    fn transmit_pfc_first(&mut self, port: PortId, now: Instant) -> Option<Transmit> {
        self.touch_port(port);
        // Without a PFC frame due, `poll_frame` would change nothing and return `None`: the refresh
        // interval (a division) is computed only when one is.
        if let Some(transmit) = self.poll_pfc_frame(port, now) {
            return Some(transmit);
        }
        if self.ports[port.index()].egress.is_empty() {
            return None;
        }
        self.transmit_queued(port, now)
    }

    /// The scheduler's pick among the queues of a port (free line, frames queued) that are neither paused
    /// nor held, counted and its cells released.
    #[inline(always)]
    fn transmit_queued(&mut self, port: PortId, now: Instant) -> Option<Transmit> {
        let i = port.index();
        let state = &mut self.ports[i];
        let hold = if state.port_hold { 0xff } else { state.queue_hold };
        // The priority → queue map is read only when some priority is paused.
        let config = &self.config;
        let blocked = state.pfc.paused_queues_with(now, || &config.qos[i].pfc_to_queue) | hold;
        let dequeued = state.egress.dequeue(now, blocked);
        // Whatever the scheduler did (a frame, or none while paused or shaped), the port is computed afresh
        // after this poll.
        self.readiness.mark(port);
        let (queue, QueuedFrame { frame, alloc }) = dequeued?;
        let len = frame.len() as u64;
        // Counted before the cells go back: nothing the release does (XON, events) reads these.
        let c = &mut state.counters;
        c.tx_ok += 1;
        c.tx_bytes += len;
        // The group bit of the destination MAC (the frame's first byte; a frame is at least 14 bytes here).
        if frame.first().is_some_and(|b| b & 1 == 1) {
            c.tx_non_ucast += 1;
        }
        let qc = &mut c.queues[usize::from(queue & 7)];
        qc.packets += 1;
        qc.bytes += len;
        let transmit = Transmit { frame, queue: Some(queue) };
        self.release(&alloc);
        if self.config.asic.ecn_mark_point == EcnMarkPoint::Dequeue {
            return Some(self.mark_at_dequeue(port, transmit, len));
        }
        Some(transmit)
    }

    /// WRED's CE marking at dequeue (`ecn_mark_point: dequeue`) of a frame leaving `queue`.
    #[inline(never)]
    fn mark_at_dequeue(&mut self, port: PortId, transmit: Transmit, len: u64) -> Transmit {
        let Transmit { mut frame, queue } = transmit;
        let queue = queue.expect("a queued frame");
        if let Some(w) = self.config.port_buffers[port.index()].queue_wred[usize::from(queue)] {
            let profile = &self.config.wred_profiles[w];
            let behind = self.queue_occupancy_bytes(port, queue);
            let queue_bytes =
                wred_state(&mut self.mmu, &mut self.ports, port, queue).observe(behind, profile.weight);
            let ect = frame_ecn(&frame).is_some_and(|e| e != Ecn::NotEct);
            if ect
                && wred::decide(profile, Colour::Green, ect, queue_bytes, &mut self.rng) == WredAction::MarkCe
                && mark_ce(&mut frame)
            {
                self.count_ecn_mark(port, queue, len);
            }
        }
        Transmit { frame, queue: Some(queue) }
    }

    /// The PFC frame due on a port, if its state still calls for one: it takes the line.
    fn poll_pfc_frame(&mut self, port: PortId, now: Instant) -> Option<Transmit> {
        let cfg = self.config.ports.get(port.index())?;
        let (speed, mac) = (cfg.speed_mbps, cfg.mac);
        let quanta = self.config.asic.pfc_pause_quanta;
        let refresh_percent = self.config.asic.pfc_refresh_percent;
        let refresh =
            Nanos::from_ns(mac_control::quanta_to_ns(quanta, speed)) * u64::from(refresh_percent) / 100;
        let state = &mut self.ports[port.index()];
        let repr = state.pfc.poll_frame(now, quanta, refresh)?;
        let mut frame = self.control_frames.pop().unwrap_or_default();
        frame.clear();
        frame.resize(mac_control::FRAME_LEN, 0);
        MacControlRepr::Pfc(repr).emit_frame(mac, &mut frame);
        state.egress.occupy_line(now, frame.len());
        Some(Transmit { frame, queue: None })
    }

    /// Keeps a MAC Control frame the switch consumed, to build a PFC frame of its own in: in a fabric of
    /// switches pausing each other, PFC frames then cost no allocation.
    pub(super) fn keep_control_frame(&mut self, frame: Vec<u8>) {
        if self.control_frames.len() < CONTROL_FRAMES && frame.capacity() >= mac_control::FRAME_LEN {
            self.control_frames.push(frame);
        }
    }

    /// The earliest instant at which something is due on a port: a PFC frame, or a queue that becomes
    /// sendable (line free, shaper tokens, pause expiry).
    #[inline]
    pub(super) fn port_ready_at(&self, port: PortId, now: Instant) -> Option<Instant> {
        let state = &self.ports[port.index()];
        if state.egress.is_empty() {
            // Nothing queued (a port that just sent its last frame): only a PFC frame can be due.
            return state.pfc.next_frame_at(now).map(|t| t.max(state.egress.line_free_at()));
        }
        self.queued_port_ready_at(port, now)
    }

    /// [`port_ready_at`](Self::port_ready_at) of a port with frames queued.
    #[inline(never)]
    fn queued_port_ready_at(&self, port: PortId, now: Instant) -> Option<Instant> {
        let state = &self.ports[port.index()];
        let line = state.egress.line_free_at();
        let pfc = state.pfc.next_frame_at(now).map(|t| t.max(line));
        let blocked = self.blocked_queues(port, now);
        let data = state.egress.next_ready_at(now, blocked);
        let paused_with_packets = blocked & state.egress.nonempty_queues() != 0;
        let unpause = if paused_with_packets { state.pfc.next_unpause_at(now) } else { None };
        earliest(earliest(pfc, data), unpause)
    }

    // ---------------------------------------------------------------------------------------------
    // Holds (sai_thrift_port_tx_disable) and the debug storm

    /// Stops (or restarts) all data transmission of a port, with no leak-out. PFC frames still leave.
    pub fn set_port_hold(&mut self, port: PortId, hold: bool) {
        if let Some(s) = self.ports.get_mut(port.index()) {
            s.port_hold = hold;
            self.touch_port(port);
        }
    }

    /// Stops (or restarts) transmission of one egress queue.
    pub fn set_queue_hold(&mut self, port: PortId, queue: u8, hold: bool) {
        if let Some(s) = self.ports.get_mut(port.index()) {
            let bit = 1 << (queue & 7);
            s.queue_hold = if hold { s.queue_hold | bit } else { s.queue_hold & !bit };
            self.touch_port(port);
        }
    }

    /// Forces the watchdog's storm condition on a queue (SONiC's `DEBUG_STORM`).
    pub fn set_debug_storm(&mut self, port: PortId, queue: u8, on: bool) {
        self.watchdog.set_debug_storm(port, queue, on);
    }

    /// The watchdog's view of a queue: `None` when it is not monitored, else whether it is stormed.
    pub fn pfc_wd_status(&self, port: PortId, queue: u8) -> Option<bool> {
        self.watchdog.status(port, queue)
    }

    // ---------------------------------------------------------------------------------------------
    // The watchdog

    pub(super) fn observe_queue(
        &self,
        port: PortId,
        queue: u8,
        priority: u8,
        now: Instant,
    ) -> QueueObservation {
        let s = &self.ports[port.index()];
        let (q, p, g) = (usize::from(queue), usize::from(priority), usize::from(queue));
        QueueObservation {
            occupancy: s.egress.len(queue),
            tx_packets: s.counters.queues[q].packets,
            tx_dropped: s.counters.queues[q].dropped_packets,
            pfc_rx: s.pfc.counters[p].rx,
            pfc_rx_xon: s.pfc.counters[p].rx_xon,
            paused: s.pfc.paused_priorities(now) & (1 << p) != 0,
            paused_total: Nanos::from_ns(s.pfc.paused_ns(p, now)),
            pg_packets: s.counters.pgs[g].packets,
            pg_dropped: s.counters.pgs[g].dropped_packets,
        }
    }

    pub(super) fn poll_watchdog(&mut self, now: Instant) {
        let mut wd = std::mem::take(&mut self.watchdog);
        let transitions = wd.poll(now, |port, queue, prio| self.observe_queue(port, queue, prio, now));
        self.watchdog = wd;
        self.apply_watchdog(transitions, now);
    }

    /// Carries out storms and restorations, and (re)applies the drop and forward actions in force.
    /// Drops the frames queued on `port` in the queues of `queues` (a bit mask): TX_DRP and the queues'
    /// drop counters, their cells released.
    pub(super) fn drop_queued(&mut self, port: PortId, queues: u8) {
        self.touch_port(port);
        for q in (0..8u8).filter(|q| queues & (1 << q) != 0) {
            for item in self.ports[port.index()].egress.flush(q) {
                self.ledger.flushed += 1;
                self.release(&item.alloc);
                let c = &mut self.ports[port.index()].counters;
                c.tx_drp += 1;
                c.queues[usize::from(q)].dropped_packets += 1;
                c.queues[usize::from(q)].dropped_bytes += item.frame.len() as u64;
            }
        }
    }

    pub(super) fn apply_watchdog(&mut self, transitions: Vec<Transition>, now: Instant) {
        // Pauses lifted, PFC forgotten, queues flushed: any port may have changed.
        self.touch_all_ports();
        for t in &transitions {
            let name = self.port_name(t.port);
            self.push_event(if t.stormed {
                Event::PfcStormDetected { port: name, queue: t.queue, action: t.action }
            } else {
                Event::PfcStormRestored { port: name, queue: t.queue }
            });
        }
        let masks: Vec<WatchdogMasks> = PortId::all(self.ports.len())
            .map(|p| WatchdogMasks {
                dropping_queues: self.watchdog.dropping_queues(p),
                pfc_disabled: self.watchdog.pfc_disabled_priorities(p),
                dropping_ingress: self.watchdog.dropping_ingress_priorities(p),
            })
            .collect();
        // The flow entries were made for the ingress drops in force (`nexthop.rs`, the stamp): only a
        // change of those (not every poll, which comes here too) makes them stale.
        if masks.iter().map(|m| m.dropping_ingress).ne(self.wd_masks.iter().map(|m| m.dropping_ingress)) {
            self.link_changes += 1;
        }
        self.wd_masks = masks;
        for port in PortId::all(self.ports.len()) {
            let disabled = self.wd_masks[port.index()].pfc_disabled;
            if disabled != 0 {
                let pfc = &mut self.ports[port.index()].pfc;
                pfc.unpause(disabled, now);
                if pfc.asserted() & disabled != 0 {
                    pfc.forget(disabled);
                }
            }
            let dropping = self.wd_masks[port.index()].dropping_queues;
            if dropping != 0 {
                self.drop_queued(port, dropping);
            }
        }
        // A restored priority whose PG is still above its limit pauses its peer again.
        for t in transitions.iter().filter(|t| !t.stormed) {
            self.sync_pfc(t.port);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Buffer observation

    /// Watermarks of every port and pool, bytes.
    pub fn watermarks(&self, kind: WatermarkKind) -> WatermarksDump {
        WatermarksDump {
            ports: self
                .config
                .ports
                .iter()
                .enumerate()
                .map(|(i, p)| (p.name.clone(), self.mmu.port_watermarks(PortId::new(i), kind)))
                .collect(),
            pools: self.mmu.pool_watermarks(kind).into_iter().collect(),
        }
    }

    /// Clears one kind of watermarks (they restart from the current occupancy).
    pub fn clear_watermarks(&mut self, kind: WatermarkKind) {
        self.mmu.clear_watermarks(kind);
    }

    /// Clears the watermarks of one kind in some tables only (`sonic-clear queue watermark unicast`).
    pub fn clear_watermark_tables(
        &mut self,
        kind: WatermarkKind,
        tables: crate::model::mmu::WatermarkTables,
    ) {
        self.mmu.clear_watermark_tables(kind, tables);
    }

    /// The buffer model (occupancy per PG, queue and pool).
    pub fn mmu(&self) -> &crate::model::mmu::Mmu {
        &self.mmu
    }

    /// PFC state of a port: priorities it is sending XOFF for, and priorities paused by its peer.
    pub fn pfc_state(&self, port: PortId) -> Option<(u8, u8)> {
        let s = self.ports.get(port.index())?;
        Some((s.pfc.asserted(), s.pfc.paused_priorities(self.now)))
    }
}

/// Watermarks of every port and pool, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct WatermarksDump {
    pub ports: BTreeMap<String, crate::model::mmu::PortWatermarks>,
    pub pools: BTreeMap<String, crate::model::mmu::PoolWatermarks>,
}
