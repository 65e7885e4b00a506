//! Conversions between the model's types and the `lossless.v1` messages.
//!
//! Reading the model happens on the model thread, so what is taken there is a plain copy ([`CountersSnapshot`],
//! [`WatermarksSnapshot`]); turning it into protobuf messages (strings, maps) happens on the gRPC side, off
//! the packet path. Events need no such copy: they name their ports themselves.

use crate::clock::WallClock;
use crate::io::runtime::TimedEvent;
use crate::model::config::{ConfigDb, ConfigIssue};
use crate::model::mmu::{PoolWatermarks, PortWatermarks};
use crate::model::{Event, FrameLedger, PortCounters, PortId, Switch};
use lossless_proto::v1 as pb;
use pb::config_issue::Severity;

// ---- configuration ------------------------------------------------------------------------------

/// CONFIG_DB content from the API (maps become ordered maps).
pub fn config_db_from_proto(db: pb::ConfigDb) -> ConfigDb {
    ConfigDb {
        tables: db
            .tables
            .into_iter()
            .map(|(table, keys)| {
                let keys =
                    keys.keys.into_iter().map(|(key, fields)| (key, fields.fields.into_iter().collect()));
                (table, keys.collect())
            })
            .collect(),
    }
}

/// CONFIG_DB content for the API (what `Get` returns; what a client sends to `Apply`).
pub fn config_db_to_proto(db: &ConfigDb) -> pb::ConfigDb {
    pb::ConfigDb {
        tables: db
            .tables
            .iter()
            .map(|(table, keys)| {
                let keys = keys.iter().map(|(key, fields)| {
                    let fields = fields.iter().map(|(f, v)| (f.clone(), v.clone())).collect();
                    (key.clone(), pb::Fields { fields })
                });
                (table.clone(), pb::Table { keys: keys.collect() })
            })
            .collect(),
    }
}

/// Errors first, then warnings, each in the order the validator found them.
pub fn issues_to_proto(errors: &[ConfigIssue], warnings: &[ConfigIssue]) -> Vec<pb::ConfigIssue> {
    let tagged =
        errors.iter().map(|i| (i, Severity::Error)).chain(warnings.iter().map(|i| (i, Severity::Warning)));
    tagged
        .map(|(issue, severity)| pb::ConfigIssue {
            severity: severity as i32,
            location: Some(pb::ConfigLocation {
                table: issue.table.clone(),
                key: issue.key.clone(),
                field: issue.field.clone(),
            }),
            value: issue.value.clone(),
            message: issue.message.clone(),
        })
        .collect()
}

// ---- counters -----------------------------------------------------------------------------------

/// Every counter of the switch at one instant, ports in port order.
#[derive(Clone)]
pub struct CountersSnapshot {
    generation: u64,
    timestamp_ns: u64,
    ledger: FrameLedger,
    ports: Vec<PortSnapshot>,
}

#[derive(Clone)]
pub(super) struct PortSnapshot {
    pub(super) name: String,
    pub(super) admin_up: bool,
    pub(super) oper_up: bool,
    pub(super) speed_mbps: u32,
    pub(super) counters: PortCounters,
    pub(super) queue_depth: [u64; 8],
    pub(super) queue_occupancy_bytes: [u64; 8],
    pub(super) pg_occupancy_bytes: [u64; 8],
    /// Per queue: `None` unmonitored, `Some(stormed)`.
    pub(super) pfc_wd_status: [Option<bool>; 8],
}

impl CountersSnapshot {
    /// Runs on the model thread: copies, nothing more.
    pub fn take(switch: &Switch, now_ns: u64) -> CountersSnapshot {
        let ports = PortId::all(switch.port_count())
            .zip(&switch.config().ports)
            .map(|(p, config)| PortSnapshot {
                name: config.name.clone(),
                admin_up: config.admin_up,
                oper_up: switch.port_oper_up(p),
                speed_mbps: config.speed_mbps,
                counters: switch.port_counters(p).unwrap_or_default(),
                queue_depth: std::array::from_fn(|q| switch.queue_depth(p, q as u8) as u64),
                queue_occupancy_bytes: std::array::from_fn(|q| switch.queue_occupancy_bytes(p, q as u8)),
                pg_occupancy_bytes: std::array::from_fn(|g| {
                    let o = switch.mmu().pg_occupancy(p, g as u8);
                    o.reserved_bytes + o.shared_bytes + o.headroom_bytes
                }),
                pfc_wd_status: std::array::from_fn(|q| switch.pfc_wd_status(p, q as u8)),
            })
            .collect();
        CountersSnapshot {
            generation: switch.generation(),
            timestamp_ns: now_ns,
            ledger: switch.ledger(),
            ports,
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn ledger(&self) -> FrameLedger {
        self.ledger
    }

    pub(super) fn ports(&self) -> &[PortSnapshot] {
        &self.ports
    }

    pub fn to_proto(&self) -> pb::GetCountersResponse {
        let l = self.ledger;
        pb::GetCountersResponse {
            generation: self.generation,
            timestamp_ns: self.timestamp_ns,
            wall_time_unix_ns: crate::clock::WallClock::process().unix_ns(self.timestamp_ns),
            ledger: Some(pb::FrameLedger {
                received: l.received,
                forwarded: l.forwarded,
                copies: l.copies,
                originated: l.originated,
                trapped: l.trapped,
                dropped: l.dropped,
                copies_dropped: l.copies_dropped,
                flushed: l.flushed,
            }),
            ports: self.ports.iter().map(PortSnapshot::to_proto).collect(),
            stalls: None,
        }
    }
}

impl PortSnapshot {
    fn to_proto(&self) -> pb::PortCounters {
        let c = &self.counters;
        let queues = c.queues.iter().map(|q| pb::QueueCounters {
            packets: q.packets,
            bytes: q.bytes,
            dropped_packets: q.dropped_packets,
            dropped_bytes: q.dropped_bytes,
            wred_dropped_packets: q.wred_dropped_packets,
            wred_dropped_bytes: q.wred_dropped_bytes,
            ecn_marked_packets: q.ecn_marked_packets,
            ecn_marked_bytes: q.ecn_marked_bytes,
        });
        let pgs = c.pgs.iter().map(|g| pb::PgCounters {
            packets: g.packets,
            bytes: g.bytes,
            dropped_packets: g.dropped_packets,
        });
        let pfc = c.pfc.iter().map(|p| pb::PfcCounters {
            rx: p.rx,
            rx_xon: p.rx_xon,
            tx: p.tx,
            rx_pause_transitions: p.rx_pause_transitions,
            rx_pause_us: p.rx_pause_ns / 1000,
        });
        let pfc_wd = c.pfc_wd.iter().zip(self.pfc_wd_status).map(|(w, status)| pb::PfcWdCounters {
            status: match status {
                None => String::new(),
                Some(false) => "operational".into(),
                Some(true) => "stormed".into(),
            },
            deadlock_detected: w.deadlock_detected,
            deadlock_restored: w.deadlock_restored,
            tx_packets: w.tx_packets,
            tx_dropped_packets: w.tx_dropped_packets,
            rx_packets: w.rx_packets,
            rx_dropped_packets: w.rx_dropped_packets,
            tx_packets_last: w.tx_packets_last,
            tx_dropped_packets_last: w.tx_dropped_packets_last,
            rx_packets_last: w.rx_packets_last,
            rx_dropped_packets_last: w.rx_dropped_packets_last,
        });
        pb::PortCounters {
            name: self.name.clone(),
            admin_up: self.admin_up,
            speed_mbps: self.speed_mbps,
            rx_ok: c.rx_ok,
            rx_bytes: c.rx_bytes,
            rx_err: c.rx_err,
            rx_drp: c.rx_drp,
            rx_ovr: c.rx_ovr,
            oper_up: self.oper_up,
            tx_ok: c.tx_ok,
            tx_bytes: c.tx_bytes,
            tx_err: c.tx_err,
            tx_drp: c.tx_drp,
            trapped: c.trapped,
            queues: queues.collect(),
            pgs: pgs.collect(),
            pfc: pfc.collect(),
            pfc_wd: pfc_wd.collect(),
            drop_reasons: c.drop_reasons.iter().map(|(r, n)| (r.as_str().to_owned(), *n)).collect(),
            queue_depth: self.queue_depth.to_vec(),
            rx_non_ucast: c.rx_non_ucast,
            tx_non_ucast: c.tx_non_ucast,
            queue_occupancy_bytes: self.queue_occupancy_bytes.to_vec(),
            pg_occupancy_bytes: self.pg_occupancy_bytes.to_vec(),
        }
    }
}

// ---- tables -------------------------------------------------------------------------------------

/// The FDB as `DumpFdb` returns it.
pub fn fdb_to_proto(switch: &Switch) -> Vec<pb::FdbEntry> {
    let ports = &switch.config().ports;
    switch
        .fdb()
        .entries()
        .into_iter()
        .map(|(vid, mac, e)| pb::FdbEntry {
            vlan: vid.into(),
            mac: mac.to_string(),
            port: ports.get(e.port.index()).map(|p| p.name.clone()).unwrap_or_default(),
            is_static: e.is_static,
        })
        .collect()
}

/// The neighbour table as `DumpNeighbors` returns it.
pub fn neighbors_to_proto(switch: &Switch) -> Vec<pb::NeighborEntry> {
    let interfaces = &switch.config().interfaces;
    switch
        .neighbors()
        .entries()
        .into_iter()
        .map(|(ip, n)| pb::NeighborEntry {
            ip: ip.to_string(),
            mac: n.mac.to_string(),
            interface: interfaces.get(n.rif.index()).map(|r| r.name.clone()).unwrap_or_default(),
            is_static: n.is_static,
        })
        .collect()
}

// ---- watermarks ---------------------------------------------------------------------------------

/// Watermarks of every port (in port order) and pool (by name).
#[derive(Clone)]
pub struct WatermarksSnapshot {
    ports: Vec<(String, PortWatermarks)>,
    pools: Vec<(String, PoolWatermarks)>,
}

impl WatermarksSnapshot {
    /// Runs on the model thread.
    pub fn take(switch: &Switch, kind: crate::model::mmu::WatermarkKind) -> WatermarksSnapshot {
        let mut dump = switch.watermarks(kind);
        // The dump is keyed by name (Ethernet12 before Ethernet4); the API lists ports in port order.
        let ports = switch
            .config()
            .ports
            .iter()
            .map(|p| (p.name.clone(), dump.ports.remove(&p.name).unwrap_or_default()))
            .collect();
        WatermarksSnapshot { ports, pools: dump.pools.into_iter().collect() }
    }

    /// Each port's watermarks, in port order.
    pub fn ports(&self) -> impl Iterator<Item = (&str, &PortWatermarks)> {
        self.ports.iter().map(|(name, w)| (name.as_str(), w))
    }

    /// Each pool's watermarks, by name.
    pub fn pools(&self) -> impl Iterator<Item = (&str, &PoolWatermarks)> {
        self.pools.iter().map(|(name, w)| (name.as_str(), w))
    }

    pub fn to_proto(&self) -> pb::GetWatermarksResponse {
        pb::GetWatermarksResponse {
            ports: self
                .ports
                .iter()
                .map(|(name, w)| pb::PortWatermarks {
                    name: name.clone(),
                    pg_shared_bytes: w.pg_shared_bytes.to_vec(),
                    pg_headroom_bytes: w.pg_headroom_bytes.to_vec(),
                    queue_shared_bytes: w.queue_shared_bytes.to_vec(),
                })
                .collect(),
            pools: self
                .pools
                .iter()
                .map(|(name, w)| pb::PoolWatermarks {
                    name: name.clone(),
                    shared_bytes: w.shared_bytes,
                    headroom_bytes: w.headroom_bytes,
                })
                .collect(),
        }
    }
}

// ---- events -------------------------------------------------------------------------------------

/// The event's `kind` in the API.
pub fn event_kind(event: &Event) -> &'static str {
    match event {
        Event::ConfigApplied { .. } => "config_applied",
        Event::FdbLearned { .. } => "fdb_learned",
        Event::FdbAged { .. } => "fdb_aged",
        Event::NeighborLearned { .. } => "neighbor_learned",
        Event::NeighborAged { .. } => "neighbor_aged",
        Event::PfcXoff { .. } => "xoff",
        Event::PfcXon { .. } => "xon",
        Event::EcnFirstMark { .. } => "ecn_first_mark",
        Event::PfcStormDetected { .. } => "pfc_storm_detected",
        Event::PfcStormRestored { .. } => "pfc_storm_restored",
        Event::PortOperStatus { up: true, .. } => "port_oper_up",
        Event::PortOperStatus { up: false, .. } => "port_oper_down",
    }
}

/// The event as the API streams it: `port` is the SONiC name the event carries, `index` its PG or queue.
pub fn event_to_proto(timed: &TimedEvent) -> pb::SwitchEvent {
    let (port, index) = match &timed.event {
        Event::FdbLearned { port, .. } | Event::PortOperStatus { port, .. } => (port.as_str(), 0),
        Event::PfcXoff { port, pg } | Event::PfcXon { port, pg } => (port.as_str(), u32::from(*pg)),
        Event::PfcStormDetected { port, queue, .. }
        | Event::PfcStormRestored { port, queue }
        | Event::EcnFirstMark { port, queue } => (port.as_str(), u32::from(*queue)),
        Event::ConfigApplied { .. }
        | Event::FdbAged { .. }
        | Event::NeighborLearned { .. }
        | Event::NeighborAged { .. } => ("", 0),
    };
    pb::SwitchEvent {
        timestamp_ns: timed.at_ns,
        kind: event_kind(&timed.event).to_owned(),
        message: timed.event.to_string(),
        port: port.to_owned(),
        index,
        wall_time_unix_ns: WallClock::process().unix_ns(timed.at_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_db_round_trips() {
        let mut db = ConfigDb::default();
        db.set("PORT", "Ethernet0", "speed", "100000").set("PORT", "Ethernet0", "mtu", "9100");
        db.touch("INTERFACE", "Ethernet0");
        assert_eq!(config_db_from_proto(config_db_to_proto(&db)), db);
    }

    #[test]
    fn issues_keep_severity_and_location() {
        let e = ConfigIssue::new("PORT", "Ethernet0", "speed", "fast", "speed must be a number");
        let w = ConfigIssue::new("FOO", "bar", "", "", "unknown table");
        let issues = issues_to_proto(&[e], &[w]);
        assert_eq!(issues[0].severity, Severity::Error as i32);
        assert_eq!(issues[0].location.as_ref().unwrap().field, "speed");
        assert_eq!(issues[0].value, "fast");
        assert_eq!(issues[1].severity, Severity::Warning as i32);
        assert_eq!(issues[1].location.as_ref().unwrap().table, "FOO");
    }

    #[test]
    fn storm_events_carry_port_queue_and_sonic_wording() {
        let timed = TimedEvent {
            at_ns: 42,
            event: Event::PfcStormDetected {
                port: "Ethernet4".into(),
                queue: 3,
                action: crate::model::config::PfcWdAction::Drop,
            },
        };
        let e = event_to_proto(&timed);
        assert_eq!(
            (e.kind.as_str(), e.port.as_str(), e.index, e.timestamp_ns),
            ("pfc_storm_detected", "Ethernet4", 3, 42)
        );
        assert_eq!(
            e.message,
            "PFC Watchdog detected PFC storm on port Ethernet4, queue index 3, action drop"
        );
        let xoff = Event::PfcXoff { port: "Ethernet4".into(), pg: 4 };
        let xoff = event_to_proto(&TimedEvent { at_ns: 1, event: xoff });
        assert_eq!((xoff.kind.as_str(), xoff.port.as_str(), xoff.index), ("xoff", "Ethernet4", 4));
        assert_eq!(xoff.message, "XOFF on port Ethernet4 PG 4");
        let mark = Event::EcnFirstMark { port: "Ethernet8".into(), queue: 3 };
        let mark = event_to_proto(&TimedEvent { at_ns: 3, event: mark });
        assert_eq!((mark.kind.as_str(), mark.port.as_str(), mark.index), ("ecn_first_mark", "Ethernet8", 3));
        assert_eq!(mark.message, "first ECN CE mark on port Ethernet8 queue 3");
        let learned = Event::FdbLearned {
            vid: 1000,
            mac: crate::wire::EthernetAddress([2, 0, 0, 0, 0, 1]),
            port: "Ethernet0".into(),
        };
        let learned = event_to_proto(&TimedEvent { at_ns: 2, event: learned });
        assert_eq!(
            (learned.kind.as_str(), learned.port.as_str(), learned.index),
            ("fdb_learned", "Ethernet0", 0)
        );
        assert_eq!(learned.message, "FDB learned Vlan1000 02:00:00:00:00:01 on port Ethernet0");
        // Wall-clock times follow the model time one for one.
        assert_eq!(e.wall_time_unix_ns - xoff.wall_time_unix_ns, 41);
    }

    /// The occupancy the API reports (`queue_occupancy_bytes`, `pg_occupancy_bytes`) is the model's, port by
    /// port and index by index. A consistency check of the copy: the figures themselves are tested against
    /// the cell size in dataplane/core/tests/buffers.rs (`occupancy_bytes_of_a_held_queue_and_its_pg`).
    #[test]
    fn counters_snapshot_reports_the_models_occupancy() {
        use crate::time::Instant;
        use crate::wire::build::{self, Ipv4Flow};
        use crate::wire::ip::Ecn;
        use crate::wire::{ArpOperation, ArpRepr, EtherType, EthernetAddress};
        use std::net::Ipv4Addr;

        let th = include_str!("../../../configs/profiles/th_balanced.yaml");
        let mut sw = Switch::new();
        sw.apply(&ConfigDb::from_yaml_str(th).unwrap(), Instant::ZERO).unwrap();
        let (src, dst) = (sw.port_id("Ethernet0").unwrap(), sw.port_id("Ethernet8").unwrap());
        // Host 192.168.0.2 on Ethernet8 asks for its gateway: the switch learns where to route to it.
        let (host_mac, host_ip) = (EthernetAddress([2, 0xbb, 0, 0, 0, 2]), Ipv4Addr::new(192, 168, 0, 2));
        let arp = ArpRepr {
            operation: ArpOperation::Request,
            source_hardware_addr: host_mac,
            source_protocol_addr: host_ip,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: Ipv4Addr::new(192, 168, 0, 1),
        };
        let arp =
            build::ethernet(host_mac, EthernetAddress::BROADCAST, None, EtherType::Arp, &build::arp(&arp));
        sw.handle_frame(dst, arp, Instant::ZERO);
        while sw.poll_transmit(dst, Instant::ZERO).is_some() {}
        sw.set_port_hold(dst, true);
        for i in 0..40 {
            let flow = Ipv4Flow {
                src_mac: EthernetAddress([2, 0xaa, 0, 0, 0, 1]),
                dst_mac: sw.config().device_mac,
                src_ip: Ipv4Addr::new(172, 16, 0, 5),
                dst_ip: host_ip,
                src_port: 1000 + i,
                dscp: 3,
                ecn: Ecn::Ect0,
                ttl: 64,
            };
            sw.handle_frame(src, flow.udp(4791, &[0; 18]), Instant::from_ns(1_000));
        }
        let c = CountersSnapshot::take(&sw, 0).to_proto();
        let port = |name: &str| c.ports.iter().find(|p| p.name == name).unwrap().clone();
        let queues: Vec<u64> = (0..8).map(|q| sw.queue_occupancy_bytes(dst, q)).collect();
        let pgs: Vec<u64> = (0..8)
            .map(|g| {
                let o = sw.mmu().pg_occupancy(src, g);
                o.reserved_bytes + o.shared_bytes + o.headroom_bytes
            })
            .collect();
        assert!(queues[3] > 0 && pgs[3] > 0, "the held queue 3 and PG 3 hold frames: {queues:?} {pgs:?}");
        assert_eq!(port("Ethernet8").queue_occupancy_bytes, queues);
        assert_eq!(port("Ethernet0").pg_occupancy_bytes, pgs);
    }

    #[test]
    fn a_counters_snapshot_carries_its_instant_on_the_wall_clock_too() {
        // Taken now on the monotonic clock, the snapshot's wall time is the system's time now, to within
        // the time the test takes.
        let sw = Switch::new();
        let before = crate::clock::realtime_ns();
        let c = CountersSnapshot::take(&sw, crate::clock::monotonic_ns()).to_proto();
        let after = crate::clock::realtime_ns();
        let slack = 1_000_000_000;
        assert!(
            (before.saturating_sub(slack)..=after + slack).contains(&c.wall_time_unix_ns),
            "{} not in [{before}, {after}]",
            c.wall_time_unix_ns
        );
    }
}
