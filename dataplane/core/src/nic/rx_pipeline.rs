//! The receive pipeline of a NIC: a receive buffer drained by a pipeline that takes time per packet, and
//! the PFC the buffer generates (`docs/nic.md`, "Receive pipeline").
//!
//! Without it (the default, `buffer_bytes` 0) the NIC consumes every frame the instant it arrives: an
//! infinitely fast receiver. With it, frames other than MAC Control (PFC and PAUSE act in the MAC, on
//! arrival) wait in a FIFO buffer; the pipeline serves one at a time, and a frame costs
//!
//! ```text
//! per_packet_ns + (frame bytes × 8 at rate_mbps) + page_miss_ns × (pages of the payload not in the cache)
//! ```
//!
//! The page term is the slow receiver of Microsoft's "RDMA over Commodity Ethernet at Scale" (SIGCOMM 2016):
//! the NIC translates the receive buffer's virtual addresses through its Memory Translation Table, of which
//! it caches only a few entries; a miss fetches the entry from host memory over PCIe. Each receiving QP
//! writes into its own registered region of `region_bytes`, packet `seq` of the QP at `seq × (mtu − 44)`
//! (wrapping), so a stream touches `payload / page_bytes` new pages per packet; the cache holds the
//! `page_cache_entries` pages used last (LRU). With small pages and more pages in use than the cache holds,
//! nearly every page touched misses; with large pages almost none does.
//!
//! The buffer asserts XOFF on the NIC's `pfc_enable` priorities when it holds `xoff_bytes` or more (then
//! refreshed), and XON when it has drained to `xon_bytes`; a frame that does not fit is dropped. A stuck
//! pipeline ([`super::Nic::set_rx_stuck`], the stalled receive pipeline of the pause-frame storm in the same
//! paper) serves nothing: the buffer fills and the NIC pauses its peer for as long as it stays stuck. The
//! NIC's own watchdog (`watchdog_ns`, 0 = off) is the paper's NIC-side fix and mlx5's "PFC storm prevention":
//! when the buffer has held frames for `watchdog_ns` without the pipeline finishing one, the NIC stops
//! generating PFC (no XON: the peer resumes when its pause runs out) and drops what does not fit; it pauses
//! again only after the pipeline has made progress.

use crate::time::{Instant, Nanos};
use crate::wire::bth;
use crate::wire::mac_control;
use crate::wire::{L3, L4, udp};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

/// Default page size: the 4 KiB pages of the paper's slow receivers.
pub const DEFAULT_PAGE_BYTES: u64 = 4096;
/// Default registered receive region per QP.
pub const DEFAULT_REGION_BYTES: u64 = 1 << 20;

/// Configuration of the receive pipeline (a [`super::NicConfig`] field). The default has no buffer: frames
/// are consumed as they arrive, as the NIC has always done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RxPipelineConfig {
    /// Receive buffer; 0 = none (every frame consumed on arrival, the other fields unused).
    pub buffer_bytes: u64,
    /// XOFF when the buffer holds this much or more (1..=`buffer_bytes`).
    pub xoff_bytes: u64,
    /// XON when it has drained to this much (below `xoff_bytes`).
    pub xon_bytes: u64,
    /// Fixed cost of every frame.
    pub per_packet_ns: u64,
    /// Rate at which the pipeline moves a frame's bytes into host memory (PCIe); 0 = no limit.
    pub rate_mbps: u32,
    /// Page size of the receive regions' address translation.
    pub page_bytes: u64,
    /// Translation entries the NIC caches (LRU); 0 = every page touched misses.
    pub page_cache_entries: u32,
    /// Cost of a translation-cache miss (an entry fetched from host memory); 0 = translation is free.
    pub page_miss_ns: u64,
    /// Registered receive memory per QP, written as a ring.
    pub region_bytes: u64,
    /// NIC PFC watchdog: stop pausing after the pipeline has finished no frame for this long with frames
    /// waiting; 0 = off.
    pub watchdog_ns: u64,
}

impl Default for RxPipelineConfig {
    fn default() -> Self {
        RxPipelineConfig {
            buffer_bytes: 0,
            xoff_bytes: 0,
            xon_bytes: 0,
            per_packet_ns: 0,
            rate_mbps: 0,
            page_bytes: DEFAULT_PAGE_BYTES,
            page_cache_entries: 0,
            page_miss_ns: 0,
            region_bytes: DEFAULT_REGION_BYTES,
            watchdog_ns: 0,
        }
    }
}

impl RxPipelineConfig {
    pub fn enabled(&self) -> bool {
        self.buffer_bytes > 0
    }

    /// The parameter names [`RxPipelineConfig::set`] takes: the field names.
    pub fn names() -> Vec<String> {
        super::dcqcn::field_names::<RxPipelineConfig>()
    }

    /// Sets one field by name from a decimal number (rocehost's `--rx-param NAME=VALUE`). The result is
    /// validated as a whole by [`RxPipelineConfig::validate`] once every field is set.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        *self = super::dcqcn::set_field(self, name, value).ok_or_else(|| {
            format!("unknown receive pipeline parameter {name:?} (known: {})", Self::names().join(", "))
        })??;
        Ok(())
    }

    /// The fields that differ from the default, as `NAME=VALUE` (what rocehost's `--rx-param` takes).
    pub fn params(&self) -> Vec<String> {
        let (Ok(serde_json::Value::Object(mine)), Ok(serde_json::Value::Object(default))) =
            (serde_json::to_value(self), serde_json::to_value(RxPipelineConfig::default()))
        else {
            return Vec::new();
        };
        mine.iter().filter(|(k, v)| default.get(*k) != Some(v)).map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// A field out of range, by name.
    pub fn validate(&self) -> Result<(), String> {
        if !self.enabled() {
            return Ok(());
        }
        if self.xoff_bytes == 0 || self.xoff_bytes > self.buffer_bytes {
            return Err(format!(
                "xoff_bytes: {} is outside 1..={} (buffer_bytes)",
                self.xoff_bytes, self.buffer_bytes
            ));
        }
        if self.xon_bytes >= self.xoff_bytes {
            return Err(format!("xon_bytes: {} is not below xoff_bytes {}", self.xon_bytes, self.xoff_bytes));
        }
        if self.page_bytes == 0 {
            return Err("page_bytes: must be > 0".into());
        }
        if self.region_bytes == 0 {
            return Err("region_bytes: must be > 0".into());
        }
        Ok(())
    }
}

/// Counters of the receive pipeline (zero without one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxPipelineStats {
    /// Frames dropped because the buffer had no room for them.
    pub dropped_frames: u64,
    /// Frames the pipeline finished.
    pub processed_frames: u64,
    pub page_hits: u64,
    pub page_misses: u64,
    /// Times the buffer crossed its XOFF point (PFC asserted).
    pub xoff_events: u64,
    /// Times the NIC watchdog stopped the NIC's pauses.
    pub watchdog_events: u64,
    /// The most the buffer held.
    pub max_occupancy_bytes: u64,
    /// What it holds now.
    pub occupancy_bytes: u64,
}

/// Where a RoCE data packet lands: its QP's region, the offset in it (before wrapping) and its length.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placement {
    pub qp: (Ipv4Addr, u32, u32),
    pub offset_bytes: u64,
    pub payload_bytes: u64,
}

#[derive(Debug)]
struct Pending {
    frame: Vec<u8>,
    cost: Nanos,
}

/// The buffer and the pipeline. See the module documentation.
#[derive(Debug)]
pub(super) struct RxPipeline {
    pub cfg: RxPipelineConfig,
    /// FIFO; the head is in service.
    queue: VecDeque<Pending>,
    /// When the head finishes; `None` when idle or stuck.
    head_done: Option<Instant>,
    stuck: bool,
    /// The last instant the pipeline finished a frame or started on an empty buffer.
    last_progress: Instant,
    /// The NIC watchdog fired and the pipeline has made no progress since.
    watchdog_fired: bool,
    /// The buffer is asserting XOFF.
    pub xoff: bool,
    /// Cached translations, least recently used first: (region, page).
    pages: VecDeque<(u32, u64)>,
    regions: BTreeMap<(Ipv4Addr, u32, u32), u32>,
    pub stats: RxPipelineStats,
}

impl RxPipeline {
    pub fn new(cfg: RxPipelineConfig) -> RxPipeline {
        RxPipeline {
            cfg,
            queue: VecDeque::new(),
            head_done: None,
            stuck: false,
            last_progress: Instant::ZERO,
            watchdog_fired: false,
            xoff: false,
            pages: VecDeque::new(),
            regions: BTreeMap::new(),
            stats: RxPipelineStats::default(),
        }
    }

    /// The cost of a frame of `len` bytes: per packet, bytes at the pipeline's rate, translation misses
    /// (looked up now: frames are served in arrival order, so the cache sees the same sequence).
    fn cost(&mut self, len: usize, placement: Option<Placement>) -> Nanos {
        let c = self.cfg;
        // The configuration's integers become spans here.
        let mut cost = Nanos::from_ns(c.per_packet_ns);
        if c.rate_mbps > 0 {
            cost += Nanos::from_ns((len as u64 * 8 * 1000).div_ceil(u64::from(c.rate_mbps)));
        }
        if let Some(p) = placement.filter(|p| p.payload_bytes > 0) {
            let next = self.regions.len() as u32;
            let region = *self.regions.entry(p.qp).or_insert(next);
            let start = p.offset_bytes % c.region_bytes;
            let last = (start + p.payload_bytes - 1) % c.region_bytes;
            let (first_page, last_page) = (start / c.page_bytes, last / c.page_bytes);
            let pages_in_region = c.region_bytes.div_ceil(c.page_bytes);
            let mut page = first_page;
            loop {
                if !self.touch(region, page) {
                    cost += Nanos::from_ns(c.page_miss_ns);
                }
                if page == last_page {
                    break;
                }
                page = (page + 1) % pages_in_region;
            }
        }
        cost
    }

    /// Looks a page up in the translation cache (making it the most recently used); true on a hit.
    fn touch(&mut self, region: u32, page: u64) -> bool {
        let key = (region, page);
        if let Some(i) = self.pages.iter().rposition(|&k| k == key) {
            self.pages.remove(i);
            self.pages.push_back(key);
            self.stats.page_hits += 1;
            return true;
        }
        self.stats.page_misses += 1;
        if self.cfg.page_cache_entries > 0 {
            if self.pages.len() >= self.cfg.page_cache_entries as usize {
                self.pages.pop_front();
            }
            self.pages.push_back(key);
        }
        false
    }

    /// A frame arrived; false if it was dropped for want of room.
    pub fn enqueue(&mut self, frame: Vec<u8>, placement: Option<Placement>, now: Instant) -> bool {
        let len = frame.len() as u64;
        if self.stats.occupancy_bytes + len > self.cfg.buffer_bytes {
            self.stats.dropped_frames += 1;
            return false;
        }
        let cost = self.cost(frame.len(), placement);
        if self.queue.is_empty() {
            self.last_progress = now;
            if !self.stuck {
                self.head_done = Some(now + cost);
            }
        }
        self.queue.push_back(Pending { frame, cost });
        self.stats.occupancy_bytes += len;
        self.stats.max_occupancy_bytes = self.stats.max_occupancy_bytes.max(self.stats.occupancy_bytes);
        true
    }

    /// The head frame if it has finished by `now`, with the instant it finished; the next one starts
    /// then.
    pub fn pop_done(&mut self, now: Instant) -> Option<(Vec<u8>, Instant)> {
        let done = self.head_done.filter(|&t| t <= now)?;
        let head = self.queue.pop_front()?;
        self.stats.occupancy_bytes -= head.frame.len() as u64;
        self.stats.processed_frames += 1;
        self.last_progress = done;
        self.watchdog_fired = false;
        self.head_done = self.queue.front().map(|next| done + next.cost);
        Some((head.frame, done))
    }

    /// Stops or restarts the pipeline; a restarted head frame starts over.
    pub fn set_stuck(&mut self, stuck: bool, now: Instant) {
        if stuck == self.stuck {
            return;
        }
        self.stuck = stuck;
        self.head_done = if stuck { None } else { self.queue.front().map(|h| now + h.cost) };
    }

    pub fn stuck(&self) -> bool {
        self.stuck
    }

    /// Whether the buffer wants PFC asserted: above XOFF (and the watchdog has not taken pausing away), or
    /// already asserting and not yet down to XON.
    pub fn wants_xoff(&self) -> bool {
        let occupancy = self.stats.occupancy_bytes;
        !self.watchdog_fired
            && (occupancy >= self.cfg.xoff_bytes || (self.xoff && occupancy > self.cfg.xon_bytes))
    }

    /// When the NIC watchdog fires if nothing changes.
    fn watchdog_at(&self) -> Option<Instant> {
        let armed = self.cfg.watchdog_ns > 0 && !self.watchdog_fired && !self.queue.is_empty();
        armed.then(|| self.last_progress + Nanos::from_ns(self.cfg.watchdog_ns))
    }

    /// Fires the watchdog if it is due at `now`; true if it fired now.
    pub fn check_watchdog(&mut self, now: Instant) -> bool {
        if self.watchdog_at().is_some_and(|t| t <= now) {
            self.watchdog_fired = true;
            self.stats.watchdog_events += 1;
            return true;
        }
        false
    }

    /// The next instant something happens inside: the head finishes or the watchdog fires.
    pub fn poll_at(&self) -> Option<Instant> {
        [self.head_done, self.watchdog_at()].into_iter().flatten().min()
    }
}

impl super::Nic {
    /// Stops (`true`) or restarts the receive pipeline at `now` (a stalled receive pipeline: the
    /// buffer fills and the NIC pauses its peer). No effect on a NIC without a receive buffer.
    pub fn set_rx_stuck(&mut self, stuck: bool, now: Instant) {
        self.observe(now);
        self.run_rx_pipeline(now);
        if let Some(pipe) = &mut self.rx_pipe {
            pipe.set_stuck(stuck, now);
        }
        self.update_rx_pause(now);
    }

    /// Whether the receive pipeline is stuck.
    pub fn rx_stuck(&self) -> bool {
        self.rx_pipe.as_ref().is_some_and(RxPipeline::stuck)
    }

    /// The receive pipeline's counters; `None` without a receive buffer.
    pub fn rx_pipeline_stats(&self) -> Option<RxPipelineStats> {
        self.rx_pipe.as_ref().map(|p| p.stats)
    }

    /// Puts a received frame in the receive buffer (or drops it); false for MAC Control frames, which the
    /// MAC acts on at once.
    pub(super) fn rx_enqueue(&mut self, frame: &[u8], now: Instant) -> bool {
        let decoded = crate::wire::decode(frame).ok();
        if decoded.as_ref().is_some_and(|d| matches!(d.l3, L3::MacControl(_))) {
            return false;
        }
        self.run_rx_pipeline(now);
        let placement = decoded.and_then(|d| self.placement(&d, frame));
        if let Some(pipe) = &mut self.rx_pipe {
            pipe.enqueue(frame.to_vec(), placement, now);
        }
        self.update_rx_pause(now);
        true
    }

    /// Where a RoCE data packet for this NIC lands in its QP's receive region.
    fn placement(&self, d: &crate::wire::Decoded, frame: &[u8]) -> Option<Placement> {
        let L3::Ipv4 { header, l4: L4::Udp { header: udp_header, offset, bth: Some(bth) } } = &d.l3 else {
            return None;
        };
        if header.dst_addr != self.cfg.ip || super::receiver::data_position(bth.opcode).is_none() {
            return None;
        }
        let start = offset + udp::HEADER_LEN + bth::HEADER_LEN;
        let end = (offset + udp::HEADER_LEN + udp_header.payload_len).saturating_sub(bth::ICRC_LEN);
        let data = super::DataHeader::parse(frame.get(start..end.max(start))?)?;
        // Packet `seq` of the QP at seq × a full packet's payload: every packet of a message but the last is
        // full (the receiver's MTU stands for the sender's).
        Some(Placement {
            qp: (header.src_addr, bth.dest_qp, data.src_qp),
            offset_bytes: data.seq.wrapping_mul(self.cfg.payload_per_packet()),
            payload_bytes: end.saturating_sub(start) as u64,
        })
    }

    /// Finishes what the pipeline has finished by `now`, each frame at its own instant, and fires the
    /// watchdog when due.
    pub(super) fn run_rx_pipeline(&mut self, now: Instant) {
        while let Some((frame, done)) = self.rx_pipe.as_mut().and_then(|p| p.pop_done(now)) {
            self.process_frame(&frame, done);
            self.update_rx_pause(done);
        }
        self.update_rx_pause(now);
    }

    /// Asserts, refreshes, releases or (watchdog) abandons the buffer's XOFF, and copies its counters.
    fn update_rx_pause(&mut self, now: Instant) {
        let Some(pipe) = &mut self.rx_pipe else { return };
        let priorities = self.cfg.pfc_enable;
        if pipe.check_watchdog(now) && pipe.xoff {
            // Stop pausing without an XON: the peer resumes when its last pause runs out.
            pipe.xoff = false;
            self.pfc.forget(priorities);
        } else {
            let wants = pipe.wants_xoff();
            if wants && !pipe.xoff {
                pipe.xoff = true;
                pipe.stats.xoff_events += 1;
                // Refreshed at half the pause an XOFF asks for, as long as the buffer stays full.
                let pause =
                    Nanos::from_ns(mac_control::quanta_to_ns(super::STORM_QUANTA, self.cfg.line_rate_mbps));
                self.storm_interval = (pause / 2).max(Nanos::from_ns(1));
                self.pfc.assert_xoff(priorities);
            } else if !wants && pipe.xoff {
                pipe.xoff = false;
                self.pfc.release_xoff(priorities);
            }
        }
        let s = pipe.stats;
        self.counters.rx_buffer_drops = s.dropped_frames;
        self.counters.rx_page_misses = s.page_misses;
        self.counters.rx_pause_watchdog_events = s.watchdog_events;
    }
}
