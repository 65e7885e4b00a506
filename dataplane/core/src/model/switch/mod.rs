//! The switch facade: one state machine that owns forwarding state, queues and counters, and is driven
//! entirely by method calls that carry the current time. See the module docs of [`crate::model`].

use super::classify::{Classification, classify};
use super::config::{
    Compiled, ConfigDb, ConfigErrors, ConfigIssue, EcnMarkPoint, FdbMissAction, PfcWdAction, RifId, RifKind,
    SwitchConfig, compile,
};
use super::counters::{CountersDump, DropReason, FrameLedger, PortCounters};
use super::forwarding::{Fdb, FlowKey, Neighbors, RouteAction};
use super::mmu::Mmu;
use super::pfc::PfcPort;
use super::scheduler::{PortSettings, QueueSettings, Scheduler};
use super::watchdog::Watchdog;
use super::wred::{Rng, WredQueue};
use crate::time::{Instant, Nanos};
use crate::wire::{
    self, ArpOperation, ArpRepr, Decoded, EtherType, EthernetAddress, EthernetFrame, IpFields, Ipv4Packet,
    Ipv6Packet, L3, Transit, build, ethernet, vlan,
};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;

mod derived;
mod egress;
mod flow;
mod ingress;
mod nexthop;
mod ready;
#[cfg(test)]
mod tests;

use derived::{Derived, Membership};
use nexthop::NextHop;

pub use super::config::PortId;
pub use egress::{QueuedFrame, WatermarksDump};

/// The queue switch-originated control frames (ARP) use, as SONiC's CPU port traffic does.
pub const CONTROL_QUEUE: u8 = 7;
/// How often an unresolved next hop is ARPed for.
pub const ARP_RETRY: Nanos = Nanos::from_ms(1_000);
/// Events kept for [`Switch::poll_event`] before the oldest are discarded.
pub const EVENT_QUEUE_LIMIT: usize = 4096;

/// What a successful [`Switch::apply`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub generation: u64,
    pub warnings: Vec<ConfigIssue>,
}

/// A configuration validated and compiled by [`Switch::prepare`], with its lookup tables built: what
/// [`Switch::install`] swaps in.
#[derive(Debug)]
pub struct Prepared {
    config: SwitchConfig,
    derived: Derived,
    fdb: Fdb,
    neighbors: Neighbors,
    pub warnings: Vec<ConfigIssue>,
}

/// The state an install replaced (the old configuration and its tables). Dropping a large one takes
/// time: a daemon drops it away from the thread that forwards frames.
#[derive(Debug)]
pub struct Retired {
    _config: SwitchConfig,
    _derived: Derived,
    _fdb: Fdb,
    _neighbors: Neighbors,
    _ports: Vec<PortState>,
}

/// A frame leaving a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub frame: Vec<u8>,
    /// The egress queue it was served from; `None` for a PFC frame the port generated.
    pub queue: Option<u8>,
}

/// Something that happened inside the switch that an operator may want to see. Ports are named by their
/// SONiC name (`Ethernet0`): an event outlives the configuration whose port positions were current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    ConfigApplied {
        generation: u64,
    },
    FdbLearned {
        vid: u16,
        mac: EthernetAddress,
        /// The port's SONiC name (`Ethernet0`), as in every event.
        port: String,
    },
    FdbAged {
        vid: u16,
        mac: EthernetAddress,
    },
    NeighborLearned {
        ip: IpAddr,
        mac: EthernetAddress,
    },
    NeighborAged {
        ip: IpAddr,
    },
    /// A lossless PG crossed its limit: the port started sending XOFF.
    PfcXoff {
        port: String,
        pg: u8,
    },
    /// The PG drained to its XON point.
    PfcXon {
        port: String,
        pg: u8,
    },
    /// A queue marked CE for the first time since its ECN counter was zero (the switch started or its
    /// counters were cleared): when ECN began to act there. One event per queue, not one per mark.
    EcnFirstMark {
        port: String,
        queue: u8,
    },
    PfcStormDetected {
        port: String,
        queue: u8,
        action: PfcWdAction,
    },
    PfcStormRestored {
        port: String,
        queue: u8,
    },
    /// A port's link went down or came back ([`Switch::set_port_oper`]).
    PortOperStatus {
        port: String,
        up: bool,
    },
}

impl std::fmt::Display for Event {
    /// Storm events use SONiC's syslog wording.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::ConfigApplied { generation } => {
                write!(f, "configuration applied, generation {generation}")
            }
            Event::FdbLearned { vid, mac, port } => write!(f, "FDB learned Vlan{vid} {mac} on port {port}"),
            Event::FdbAged { vid, mac } => write!(f, "FDB aged Vlan{vid} {mac}"),
            Event::NeighborLearned { ip, mac } => write!(f, "neighbour learned {ip} is-at {mac}"),
            Event::NeighborAged { ip } => write!(f, "neighbour aged {ip}"),
            Event::PfcXoff { port, pg } => write!(f, "XOFF on port {port} PG {pg}"),
            Event::PfcXon { port, pg } => write!(f, "XON on port {port} PG {pg}"),
            Event::EcnFirstMark { port, queue } => {
                write!(f, "first ECN CE mark on port {port} queue {queue}")
            }
            Event::PfcStormDetected { port, queue, action } => write!(
                f,
                "PFC Watchdog detected PFC storm on port {port}, queue index {queue}, action {}",
                match action {
                    PfcWdAction::Drop => "drop",
                    PfcWdAction::Forward => "forward",
                    PfcWdAction::Alert => "alert",
                }
            ),
            Event::PfcStormRestored { port, queue } => {
                write!(f, "PFC Watchdog storm restored on port {port}, queue index {queue}")
            }
            Event::PortOperStatus { port, up } => {
                write!(f, "Port {port} oper state set from {} to {}", updown(!up), updown(*up))
            }
        }
    }
}

fn updown(up: bool) -> &'static str {
    if up { "up" } else { "down" }
}

/// Per-packet metadata decided at ingress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta {
    ingress: Option<PortId>,
    class: Classification,
    /// PCP of the frame as received, kept when it leaves tagged.
    pcp: Option<u8>,
}

#[derive(Debug)]
struct PortState {
    counters: PortCounters,
    egress: Scheduler<QueuedFrame>,
    pfc: PfcPort,
    wred: [WredQueue; 8],
    /// Egress hold (`sai_thrift_port_tx_disable`): the whole port, or these queues.
    port_hold: bool,
    queue_hold: u8,
    /// The link (the interface behind the port) is up: see [`Switch::set_port_oper`].
    oper_up: bool,
}

impl PortState {
    fn new(settings: PortSettings) -> PortState {
        PortState {
            counters: PortCounters::default(),
            egress: Scheduler::new(settings),
            pfc: PfcPort::default(),
            wred: [WredQueue::default(); 8],
            port_hold: false,
            queue_hold: 0,
            oper_up: true,
        }
    }
}

/// The scheduler settings of a port from its speed, `QUEUE|..|scheduler` and port shaper.
fn port_settings(config: &SwitchConfig, port: PortId) -> PortSettings {
    let buffers = config.port_buffers.get(port.index()).cloned().unwrap_or_default();
    let profile = |i: Option<usize>| i.map(|i| &config.schedulers[i]);
    PortSettings {
        speed_mbps: config.ports[port.index()].speed_mbps,
        queues: std::array::from_fn(|q| QueueSettings::from_profile(profile(buffers.queue_scheduler[q]))),
        shaper: profile(buffers.port_scheduler)
            .and_then(|s| s.params.pir.map(|pir| (s.params.meter_type, pir, s.params.pbs.unwrap_or(0)))),
    }
}

/// The switch.
#[derive(Debug)]
pub struct Switch {
    generation: u64,
    config: SwitchConfig,
    derived: Derived,
    ports: Vec<PortState>,
    fdb: Fdb,
    neighbors: Neighbors,
    /// Next hops ARPed for, with the time of the last request.
    arp_pending: FxHashMap<IpAddr, Instant>,
    next_fdb_sweep: Option<Instant>,
    next_neigh_sweep: Option<Instant>,
    ledger: FrameLedger,
    events: VecDeque<Event>,
    events_lost: u64,
    mmu: Mmu,
    watchdog: Watchdog,
    rng: Rng,
    /// The latest time any call carried (the model's notion of "now" for `poll_at`).
    now: Instant,
    /// Reused for the PGs an admission raised to XOFF and those a release brought back to XON (no
    /// allocation per frame while PFC is asserted).
    pg_scratch: Vec<(PortId, u8)>,
    /// Each port's next transmit instant, kept between calls (`ready.rs`).
    readiness: ready::Readiness,
    /// Routed destinations' next hops, kept while the tables they come from are unchanged (`nexthop.rs`).
    next_hops: nexthop::NextHopCache,
    /// The routed fast path's entries per (ingress port, destination, DSCP) (`flow.rs`).
    flows: flow::FlowTable,
    /// Per port, the watchdog's actions in force, cached from [`Watchdog`] whenever they can change.
    wd_masks: Vec<WatchdogMasks>,
    /// Counts the changes of ports' links and of the watchdog's ingress drops: part of the fast paths'
    /// stamp (`nexthop.rs`), so that a flow entry holds only for links and ingress drops as they were.
    link_changes: u64,
    /// Drops recorded for a capture (`None`: not recording; see [`Switch::record_drops`]).
    drop_log: Option<Vec<DropRecord>>,
    /// Which PFC transitions become events ([`Switch::set_pfc_events`]).
    pfc_events: PfcEvents,
    /// MAC Control frames received, kept to send PFC frames in (at most [`CONTROL_FRAMES`]).
    control_frames: Vec<Vec<u8>>,
}

/// How many received MAC Control frames a switch keeps for its own PFC frames: one per port of a 16-port
/// switch pausing and resuming at once is plenty; more would only hold memory.
const CONTROL_FRAMES: usize = 16;

/// Which PFC transitions a switch reports as [`Event`]s ([`Switch::set_pfc_events`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PfcEvents {
    /// Every XOFF and XON (what a lab's event stream carries).
    #[default]
    All,
    /// The next XOFF only, then none, and no XON: when PFC began on the switch, which is all a simulation's
    /// report reads. A congested fabric raises and clears XOFF at every pause (some 170,000 times per
    /// virtual ms in a 128-host Clos shuffle), and each event carries its port's name.
    FirstXoff,
    /// No PFC events.
    None,
}

/// One frame (or egress copy) the switch dropped, for a capture of drops: where it was counted and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropRecord {
    /// The ingress port for an ingress drop; the egress port for a copy refused at an egress queue.
    pub port: PortId,
    /// `show dropcounters`' name of an ingress drop ([`DropReason::as_str`]), or the egress cause:
    /// `EGRESS_BUFFER`, `WRED`, `PFC_WD`, `POLICER`.
    pub reason: &'static str,
    /// The egress queue, for an egress drop.
    pub queue: Option<u8>,
}

/// What the PFC watchdog's actions mean for one port's packet path (bit masks).
#[derive(Debug, Clone, Copy, Default)]
struct WatchdogMasks {
    /// Queues whose traffic the drop action discards.
    dropping_queues: u8,
    /// Priorities whose PFC is off (drop and forward actions, big red switch).
    pfc_disabled: u8,
    /// Priorities whose ingress traffic is dropped (`drop_ingress`).
    dropping_ingress: u8,
}

impl Default for Switch {
    fn default() -> Self {
        Switch::new()
    }
}

impl Switch {
    /// A switch with no ports and generation 0; [`apply`](Self::apply) a configuration to bring it up.
    pub fn new() -> Switch {
        Switch {
            generation: 0,
            config: SwitchConfig {
                device_mac: EthernetAddress([0x02, 0x4c, 0x53, 0, 0, 1]),
                ..SwitchConfig::default()
            },
            derived: Derived::default(),
            ports: Vec::new(),
            fdb: Fdb::default(),
            neighbors: Neighbors::default(),
            arp_pending: FxHashMap::default(),
            next_fdb_sweep: None,
            next_neigh_sweep: None,
            ledger: FrameLedger::default(),
            events: VecDeque::new(),
            events_lost: 0,
            mmu: Mmu::default(),
            watchdog: Watchdog::default(),
            rng: Rng::new(1),
            now: Instant::ZERO,
            pg_scratch: Vec::new(),
            readiness: ready::Readiness::default(),
            next_hops: nexthop::NextHopCache::default(),
            flows: flow::FlowTable::default(),
            wd_masks: Vec::new(),
            link_changes: 0,
            drop_log: None,
            pfc_events: PfcEvents::All,
            control_frames: Vec::new(),
        }
    }

    /// Chooses which PFC transitions become events from now on (all by default). It outlasts
    /// configurations; the counters and the PFC frames themselves are the same in every choice.
    pub fn set_pfc_events(&mut self, report: PfcEvents) {
        self.pfc_events = report;
    }

    /// Starts (or stops) recording every drop with its reason, for a capture of dropped frames: a driver
    /// that keeps a copy of the frame it hands to [`Switch::handle_frame`] takes the drops it caused with
    /// [`Switch::take_drops`] right after. Off by default: it costs nothing then.
    pub fn record_drops(&mut self, on: bool) {
        self.drop_log = on.then(Vec::new);
    }

    /// The drops recorded since the last call (see [`Switch::record_drops`]), appended to `out`.
    pub fn take_drops(&mut self, out: &mut Vec<DropRecord>) {
        if let Some(log) = &mut self.drop_log {
            out.append(log);
        }
    }

    fn log_drop(&mut self, port: PortId, reason: &'static str, queue: Option<u8>) {
        if let Some(log) = &mut self.drop_log {
            log.push(DropRecord { port, reason, queue });
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Configuration

    /// Validates a whole configuration without applying it.
    pub fn validate(&self, db: &ConfigDb) -> Result<Vec<ConfigIssue>, ConfigErrors> {
        compile(db).map(|c| c.warnings)
    }

    /// Validates and installs a whole configuration, atomically: on any error nothing changes. Dynamic
    /// FDB and neighbour entries, queued frames and counters of ports that still exist are kept.
    pub fn apply(&mut self, db: &ConfigDb, now: Instant) -> Result<Applied, ConfigErrors> {
        let prepared = Switch::prepare(db)?;
        Ok(self.install(prepared, now).0)
    }

    /// Everything of an apply that does not need the running switch: validation, compilation, the route
    /// table and the static FDB and neighbour tables. It takes no `&self`, so a daemon runs it off the
    /// thread that forwards frames and only [`Switch::install`] runs there.
    pub fn prepare(db: &ConfigDb) -> Result<Prepared, ConfigErrors> {
        let Compiled { config, warnings } = compile(db)?;
        let derived = Derived::build(&config);
        let mut fdb = Fdb::default();
        for f in &config.fdb {
            fdb.insert_static(f.vid, f.mac, f.port);
        }
        let mut neighbors = Neighbors::default();
        for n in &config.neighbors {
            neighbors.insert_static(n.ip, n.mac, n.rif);
        }
        Ok(Prepared { config, derived, fdb, neighbors, warnings })
    }

    /// Swaps in a prepared configuration: the cost is in the number of ports and of dynamic entries, not
    /// in the size of the configuration. What it replaced comes back as [`Retired`], to be dropped where
    /// the time it takes does not matter.
    pub fn install(&mut self, prepared: Prepared, now: Instant) -> (Applied, Retired) {
        let Prepared { config, derived, fdb, neighbors, warnings } = prepared;
        let retired = self.install_parts(config, derived, fdb, neighbors, now);
        self.generation += 1;
        self.push_event(Event::ConfigApplied { generation: self.generation });
        (Applied { generation: self.generation, warnings }, retired)
    }

    fn install_parts(
        &mut self,
        config: SwitchConfig,
        derived: Derived,
        mut fdb: Fdb,
        mut neighbors: Neighbors,
        now: Instant,
    ) -> Retired {
        self.note_time(now);
        self.fold_wred_samples();
        let old_port_names: Vec<String> = self.config.ports.iter().map(|p| p.name.clone()).collect();
        let old_rif_names: Vec<String> = self.config.interfaces.iter().map(|r| r.name.clone()).collect();
        let same_ports = old_port_names.iter().eq(config.ports.iter().map(|p| &p.name));
        let mut old_ports: HashMap<String, PortState> =
            old_port_names.iter().cloned().zip(std::mem::take(&mut self.ports)).collect();
        self.ports = PortId::all(config.ports.len())
            .map(|i| match old_ports.remove(&config.ports[i.index()].name) {
                Some(mut state) => {
                    state.egress.reconfigure(port_settings(&config, i), now);
                    state
                }
                None => PortState::new(port_settings(&config, i)),
            })
            .collect();
        if !same_ports {
            // Queued frames hold buffer cells of the old port layout: they are discarded with it.
            for state in &mut self.ports {
                for q in 0..8 {
                    self.ledger.flushed += state.egress.flush(q).len() as u64;
                }
                state.pfc.forget(0xff);
            }
            self.ledger.flushed += old_ports
                .values_mut()
                .map(|s| (0..8).map(|q| s.egress.flush(q).len() as u64).sum::<u64>())
                .sum::<u64>();
        }
        for (state, qos) in self.ports.iter_mut().zip(&config.qos) {
            if state.pfc.asserted() & !qos.pfc_enable != 0 {
                state.pfc.forget(!qos.pfc_enable);
            }
        }
        self.mmu.configure(&config, same_ports);
        if self.generation == 0 || config.asic.random_seed != self.config.asic.random_seed {
            self.rng = Rng::new(config.asic.random_seed);
        }

        // Dynamic entries carry over to the prepared tables (which hold the static ones, and win).
        let new_port = |old: PortId| {
            config.ports.iter().position(|p| p.name == old_port_names[old.index()]).map(PortId::new)
        };
        fdb.adopt_dynamic(&self.fdb, |vid, e| match new_port(e.port) {
            Some(port) if derived.membership(vid, port) != Membership::None => Some(port),
            _ => None,
        });
        neighbors.adopt_dynamic(&self.neighbors, |ip, n| {
            let rif = config.interfaces.iter().position(|r| r.name == old_rif_names[n.rif.index()])?;
            config.interfaces[rif].addrs.iter().any(|a| a.contains(&ip)).then_some(RifId::new(rif))
        });
        self.arp_pending.clear();
        self.next_fdb_sweep = sweep_interval(config.switch.fdb_aging).map(|i| now + i);
        self.next_neigh_sweep = sweep_interval(config.switch.neigh_aging).map(|i| now + i);
        let restored = self.watchdog.configure(&config, same_ports, now);
        let retired = Retired {
            _config: std::mem::replace(&mut self.config, config),
            _derived: std::mem::replace(&mut self.derived, derived),
            _fdb: std::mem::replace(&mut self.fdb, fdb),
            _neighbors: std::mem::replace(&mut self.neighbors, neighbors),
            _ports: old_ports.into_values().collect(),
        };
        self.readiness.reset(self.ports.len());
        self.apply_watchdog(restored, now);
        // PGs kept their XOFF state, but the priorities mapped to them or enabled may have changed.
        for port in PortId::all(self.ports.len()) {
            self.sync_pfc(port);
        }
        self.refresh_readiness();
        retired
    }

    /// Time only moves forward for the model, whatever order calls arrive in.
    fn note_time(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    /// Marks a port's link down or up (its interface vanished, lost carrier, or came back). While it is
    /// down nothing leaves it: frames queued to it are dropped (TX_DRP, per queue), it sends no PFC, pauses
    /// it received are forgotten, and frames forwarded to it are dropped (`L3_EGRESS_LINK_DOWN`). A port
    /// starts up; the state survives configuration changes.
    pub fn set_port_oper(&mut self, port: PortId, up: bool, now: Instant) {
        self.note_time(now);
        let Some(state) = self.ports.get_mut(port.index()) else { return };
        if state.oper_up == up {
            return;
        }
        state.oper_up = up;
        self.link_changes += 1;
        self.touch_port(port);
        if !up {
            self.drop_queued(port, 0xff);
            let pfc = &mut self.ports[port.index()].pfc;
            pfc.unpause(0xff, now);
            pfc.forget(0xff);
        } else {
            // The PGs kept their state while the link was down: one still in XOFF pauses the peer again.
            self.sync_pfc(port);
        }
        let name = self.config.ports[port.index()].name.clone();
        self.push_event(Event::PortOperStatus { port: name, up });
    }

    /// Counts `n` frames that reached a port but never the switch (its receive buffer overflowed, or the
    /// interface delivered something no port could take, such as a GSO super-frame): they are received
    /// and dropped with `reason`, so `received == forwarded + trapped + dropped` still holds for everything
    /// the interface saw. An overrun counts in `RX_OVR`, a bad frame in `RX_ERR`, anything else in `RX_DRP`.
    pub fn count_rx_lost(&mut self, port: PortId, reason: DropReason, n: u64) {
        let Some(state) = self.ports.get_mut(port.index()) else { return };
        if n == 0 {
            return;
        }
        self.ledger.received += n;
        self.ledger.dropped += n;
        let c = &mut state.counters;
        match reason {
            DropReason::RxOverrun => c.rx_ovr += n,
            r if r.is_rx_error() => c.rx_err += n,
            _ => c.rx_drp += n,
        }
        *c.drop_reasons.entry(reason).or_default() += n;
    }

    /// Whether a port's link is up (see [`Switch::set_port_oper`]).
    pub fn port_oper_up(&self, port: PortId) -> bool {
        self.ports.get(port.index()).is_some_and(|s| s.oper_up)
    }

    /// Admin and oper up: frames may be sent to it.
    fn port_up(&self, port: PortId) -> bool {
        self.config.ports[port.index()].admin_up && self.ports[port.index()].oper_up
    }

    /// The running configuration's generation (0 before the first apply).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The running configuration.
    pub fn config(&self) -> &SwitchConfig {
        &self.config
    }

    /// The port with this SONiC name (`Ethernet0`).
    pub fn port_id(&self, name: &str) -> Option<PortId> {
        self.config.ports.iter().position(|p| p.name == name).map(PortId::new)
    }

    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    // ---------------------------------------------------------------------------------------------
    // Time

    /// The next instant the switch needs attention: [`handle_timeout`](Self::handle_timeout) for aging
    /// sweeps and watchdog polls, or [`poll_transmit`](Self::poll_transmit) on some port (a PFC frame is due,
    /// a line frees up, a pause expires, a shaper refills). Relative to the latest time the switch was given.
    #[inline]
    pub fn poll_at(&self) -> Option<Instant> {
        egress::earliest(self.timeout_at(), self.earliest_ready_at(self.now))
    }

    /// The next instant [`handle_timeout`](Self::handle_timeout) has work (aging sweeps, watchdog polls),
    /// leaving out transmissions: a driver that transmits on its own schedule calls `handle_timeout` only then.
    #[inline]
    pub fn timeout_at(&self) -> Option<Instant> {
        egress::earliest(
            egress::earliest(self.next_fdb_sweep, self.next_neigh_sweep),
            self.watchdog.next_poll_at(),
        )
    }

    /// When [`poll_transmit`](Self::poll_transmit) on this port will next have something to send (a PFC frame
    /// or an eligible queue with the line free): at or after the latest time the switch was given.
    pub fn next_transmit_at(&self, port: PortId) -> Option<Instant> {
        (port.index() < self.ports.len()).then(|| self.port_ready_at(port, self.now)).flatten()
    }

    /// When the port's line finished (or will finish) carrying its last frame: a driver that woke up late
    /// may call [`poll_transmit`](Self::poll_transmit) with any time from here on to keep the port's rate.
    pub fn line_free_at(&self, port: PortId) -> Instant {
        self.ports.get(port.index()).map_or(Instant::ZERO, |p| p.egress.line_free_at())
    }

    /// Ports with something to send at `now` (a PFC frame or an eligible queue, line free).
    pub fn ports_ready(&self, now: Instant) -> Vec<PortId> {
        PortId::all(self.ports.len())
            .filter(|&p| self.port_ready_at(p, now).is_some_and(|t| t <= now))
            .collect()
    }

    /// Runs whatever is due at `now`.
    #[inline]
    pub fn handle_timeout(&mut self, now: Instant) {
        self.note_time(now);
        // A driver calls this at every visit, most often with nothing due: no timer, no pause to settle, no
        // port to refresh. That answer inline, without the full call.
        if self.readiness.is_fresh()
            && self.readiness.none_pausing()
            && self.timeout_at().is_none_or(|t| t > now)
        {
            debug_assert!(
                self.ports.iter().all(|s| !s.pfc.has_expired_pause(now)),
                "a port with an expired pause left unsettled"
            );
            return;
        }
        self.handle_timeout_full(now);
    }

    #[inline(never)]
    fn handle_timeout_full(&mut self, now: Instant) {
        self.settle_pauses(now);
        if self.watchdog.next_poll_at().is_some_and(|t| t <= now) {
            self.poll_watchdog(now);
        }
        if self.next_fdb_sweep.is_some_and(|t| t <= now) {
            for (vid, mac) in self.fdb.age(now, self.config.switch.fdb_aging) {
                self.push_event(Event::FdbAged { vid, mac });
            }
            self.next_fdb_sweep = sweep_interval(self.config.switch.fdb_aging).map(|i| now + i);
        }
        if self.next_neigh_sweep.is_some_and(|t| t <= now) {
            for ip in self.neighbors.age(now, self.config.switch.neigh_aging) {
                self.push_event(Event::NeighborAged { ip });
            }
            self.arp_pending.retain(|_, sent| now.saturating_since(*sent) < ARP_RETRY);
            self.next_neigh_sweep = sweep_interval(self.config.switch.neigh_aging).map(|i| now + i);
        }
        self.refresh_readiness();
    }

    // ---------------------------------------------------------------------------------------------
    // Egress

    /// Frames waiting on one egress queue of a port.
    pub fn queue_depth(&self, port: PortId, queue: u8) -> usize {
        self.ports.get(port.index()).map_or(0, |p| p.egress.len(queue))
    }

    /// Frames waiting on all queues of a port.
    pub fn port_backlog(&self, port: PortId) -> usize {
        self.ports.get(port.index()).map_or(0, |p| p.egress.total_len())
    }

    // ---------------------------------------------------------------------------------------------
    // Observation

    /// The counters of a port, PFC and watchdog counters included (pause time up to the latest time).
    pub fn port_counters(&self, port: PortId) -> Option<PortCounters> {
        let state = self.ports.get(port.index())?;
        let mut c = state.counters.clone();
        c.pfc = state.pfc.counters;
        for (p, pfc) in c.pfc.iter_mut().enumerate() {
            pfc.rx_pause_ns = state.pfc.paused_ns(p, self.now);
        }
        c.pfc_wd = std::array::from_fn(|q| {
            let q = q as u8;
            self.watchdog.counters_now(port, q, &self.observe_queue(port, q, q, self.now))
        });
        Some(c)
    }

    pub fn ledger(&self) -> FrameLedger {
        self.ledger
    }

    /// A copy of every counter, ports by name.
    pub fn counters(&self) -> CountersDump {
        CountersDump {
            ledger: self.ledger,
            ports: PortId::all(self.ports.len())
                .filter_map(|p| Some((self.port_name(p), self.port_counters(p)?)))
                .collect(),
        }
    }

    pub fn fdb(&self) -> &Fdb {
        &self.fdb
    }

    pub fn neighbors(&self) -> &Neighbors {
        &self.neighbors
    }

    /// Removes dynamic FDB entries (all, or of one VLAN / port); returns how many.
    pub fn flush_fdb(&mut self, vid: Option<u16>, port: Option<PortId>) -> usize {
        self.fdb.flush(vid, port)
    }

    /// Removes dynamic neighbour entries; returns how many.
    pub fn flush_neighbors(&mut self) -> usize {
        self.neighbors.flush()
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Events discarded because nobody polled them in time.
    pub fn events_lost(&self) -> u64 {
        self.events_lost
    }

    /// A port's SONiC name, for an event: the lookup (and the copy) happen only when one is emitted.
    fn port_name(&self, port: PortId) -> String {
        self.config.ports[port.index()].name.clone()
    }

    fn push_event(&mut self, event: Event) {
        if self.events.len() >= EVENT_QUEUE_LIMIT {
            self.events.pop_front();
            self.events_lost += 1;
        }
        self.events.push_back(event);
    }
}

/// How often an aging sweep runs: an eighth of the aging time, at least a second; `None` when disabled.
fn sweep_interval(aging: Nanos) -> Option<Nanos> {
    (!aging.is_zero()).then(|| (aging / 8).max(Nanos::from_ms(1_000)).min(aging))
}
