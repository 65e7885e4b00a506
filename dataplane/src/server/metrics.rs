//! Prometheus metrics (`switchd --metrics 127.0.0.1:9101`): every counter, watermark, PFC and watchdog
//! figure the API serves, in the Prometheus text exposition format (version 0.0.4) at `GET /metrics`.
//!
//! Names follow Prometheus conventions (`lossless_` prefix, base units, `_total` on counters); SONiC's
//! vocabulary is in the labels and the help texts: `port` is the SONiC port name, `queue`, `pg` and
//! `priority` are numbers 0–7, `reason` is the drop reason as `show dropcounters counts` names it. The
//! values come from a fresh snapshot of the model (the one the gRPC reads use), so a scrape never stalls
//! forwarding. The exposition is written by a small typed writer ([`Exposition`]): each family once, with
//! its `# HELP` and `# TYPE`, its samples together, label values escaped.

use super::convert::{CountersSnapshot, PortSnapshot, WatermarksSnapshot};
use super::streams::Streams;
use crate::io::runtime::{Handle, Snapshot};
use crate::model::counters::{PgCounters, PortCounters, QueueCounters};
use crate::model::pfc::PfcCounters;
use crate::model::watchdog::PfcWdCounters;
use std::fmt::Write as _;
use std::sync::Arc;

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
}

/// A Prometheus text exposition under construction.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// Starts a family: its help and type lines. Its samples must follow before the next family.
    fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let help = help.replace('\\', r"\\").replace('\n', r"\n");
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Into<Value>) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{label}=\"{}\"", escape_label(value));
            }
            self.text.push('}');
        }
        let _ = match value.into() {
            Value::Int(v) => writeln!(self.text, " {v}"),
            Value::Float(v) => writeln!(self.text, " {v}"),
        };
    }

    pub fn into_string(self) -> String {
        self.text
    }
}

enum Value {
    Int(u64),
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(u64::from(v))
    }
}

/// A label value as the text format wants it: backslash, double quote and line feed escaped.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str(r"\n"),
            c => out.push(c),
        }
    }
    out
}

/// A counter family read off a `T`: (name, help, the value).
type Field<T> = (&'static str, &'static str, fn(&T) -> u64);
type PortField = Field<PortCounters>;
type QueueField = Field<QueueCounters>;
type PgField = Field<PgCounters>;
type PfcField = Field<PfcCounters>;
type PfcWdField = Field<PfcWdCounters>;

const PORT_COUNTERS: &[PortField] = &[
    ("lossless_port_rx_packets_total", "Frames received and taken in (portstat RX_OK).", |c| c.rx_ok),
    ("lossless_port_rx_bytes_total", "Bytes of the frames received (portstat RX_BPS integrates it).", |c| {
        c.rx_bytes
    }),
    ("lossless_port_rx_errors_total", "Frames received with errors (portstat RX_ERR).", |c| c.rx_err),
    ("lossless_port_rx_drops_total", "Frames received and dropped (portstat RX_DRP).", |c| c.rx_drp),
    ("lossless_port_rx_overruns_total", "Frames lost before the switch read them (portstat RX_OVR).", |c| {
        c.rx_ovr
    }),
    ("lossless_port_tx_packets_total", "Frames sent (portstat TX_OK).", |c| c.tx_ok),
    ("lossless_port_tx_bytes_total", "Bytes of the frames sent.", |c| c.tx_bytes),
    ("lossless_port_tx_errors_total", "Frames that could not be sent (portstat TX_ERR).", |c| c.tx_err),
    ("lossless_port_tx_drops_total", "Frames dropped on egress (portstat TX_DRP).", |c| c.tx_drp),
    ("lossless_port_trapped_total", "Frames the switch consumed itself (ARP, PFC, control, own IP).", |c| {
        c.trapped
    }),
    ("lossless_port_rx_mac_control_total", "MAC Control frames (PFC, PAUSE) received.", |c| c.rx_mac_control),
];

const QUEUE_COUNTERS: &[QueueField] = &[
    ("lossless_queue_packets_total", "Packets sent from the egress queue (queuestat Counter/pkts).", |q| {
        q.packets
    }),
    ("lossless_queue_bytes_total", "Bytes sent from the egress queue (queuestat Counter/bytes).", |q| {
        q.bytes
    }),
    (
        "lossless_queue_dropped_packets_total",
        "Packets dropped at the egress queue (queuestat Drop/pkts).",
        |q| q.dropped_packets,
    ),
    (
        "lossless_queue_dropped_bytes_total",
        "Bytes dropped at the egress queue (queuestat Drop/bytes).",
        |q| q.dropped_bytes,
    ),
    (
        "lossless_queue_wred_dropped_packets_total",
        "Packets WRED dropped (SAI_QUEUE_STAT_WRED_DROPPED_PACKETS).",
        |q| q.wred_dropped_packets,
    ),
    (
        "lossless_queue_ecn_marked_packets_total",
        "Packets WRED marked CE (SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS).",
        |q| q.ecn_marked_packets,
    ),
    ("lossless_queue_ecn_marked_bytes_total", "Bytes of the packets marked CE.", |q| q.ecn_marked_bytes),
];

const PG_COUNTERS: &[PgField] = &[
    ("lossless_pg_packets_total", "Packets admitted to the ingress priority group.", |g| g.packets),
    ("lossless_pg_bytes_total", "Bytes admitted to the ingress priority group.", |g| g.bytes),
    ("lossless_pg_dropped_packets_total", "Packets the ingress priority group dropped (pg_drop).", |g| {
        g.dropped_packets
    }),
];

const PFC_COUNTERS: &[PfcField] = &[
    ("lossless_pfc_rx_frames_total", "PFC frames received for the priority (pfcstat Rx).", |p| p.rx),
    ("lossless_pfc_rx_xon_frames_total", "PFC frames received with quanta 0 (XON).", |p| p.rx_xon),
    ("lossless_pfc_tx_frames_total", "PFC frames sent for the priority (pfcstat Tx).", |p| p.tx),
    ("lossless_pfc_rx_pause_transitions_total", "Times the priority went from running to paused.", |p| {
        p.rx_pause_transitions
    }),
];

const PFC_WD_COUNTERS: &[PfcWdField] = &[
    ("lossless_pfcwd_storms_detected_total", "PFC storms detected (pfcwd show stats STORM DETECTED).", |w| {
        w.deadlock_detected
    }),
    ("lossless_pfcwd_storms_restored_total", "PFC storms restored (pfcwd show stats STORM RESTORED).", |w| {
        w.deadlock_restored
    }),
    ("lossless_pfcwd_tx_packets_total", "Packets sent while the queue was stormed (TX OK).", |w| {
        w.tx_packets
    }),
    ("lossless_pfcwd_tx_dropped_packets_total", "Packets dropped on egress while stormed (TX DROP).", |w| {
        w.tx_dropped_packets
    }),
    ("lossless_pfcwd_rx_packets_total", "Packets received while stormed (RX OK).", |w| w.rx_packets),
    ("lossless_pfcwd_rx_dropped_packets_total", "Packets dropped on ingress while stormed (RX DROP).", |w| {
        w.rx_dropped_packets
    }),
];

const PRIORITIES: [&str; 8] = ["0", "1", "2", "3", "4", "5", "6", "7"];

/// The whole exposition of one snapshot (and the registry of open Subscribe streams).
pub fn render(snapshot: &Snapshot, streams: &Streams) -> String {
    let mut out = Exposition::default();
    switch_wide(&mut out, &snapshot.counters, streams);
    let ports = snapshot.counters.ports();
    ports_state(&mut out, ports);
    for &(name, help, get) in PORT_COUNTERS {
        out.family(name, Kind::Counter, help);
        for p in ports {
            out.sample(name, &[("port", &p.name)], get(&p.counters));
        }
    }
    out.family("lossless_port_drops_total", Kind::Counter, "Ingress drops by reason (show dropcounters).");
    for p in ports {
        for (reason, n) in &p.counters.drop_reasons {
            out.sample("lossless_port_drops_total", &[("port", &p.name), ("reason", reason.as_str())], *n);
        }
    }
    per_index(&mut out, ports, "queue", QUEUE_COUNTERS, |c| &c.queues);
    out.family("lossless_queue_depth_packets", Kind::Gauge, "Packets waiting in the egress queue now.");
    for p in ports {
        for (q, depth) in p.queue_depth.iter().enumerate() {
            out.sample(
                "lossless_queue_depth_packets",
                &[("port", &p.name), ("queue", PRIORITIES[q])],
                *depth,
            );
        }
    }
    per_index(&mut out, ports, "pg", PG_COUNTERS, |c| &c.pgs);
    per_index(&mut out, ports, "priority", PFC_COUNTERS, |c| &c.pfc);
    out.family(
        "lossless_pfc_rx_pause_seconds_total",
        Kind::Counter,
        "Time the priority was paused by the peer's PFC (completed pauses), seconds.",
    );
    for p in ports {
        for (i, pfc) in p.counters.pfc.iter().enumerate() {
            let labels = [("port", p.name.as_str()), ("priority", PRIORITIES[i])];
            out.sample("lossless_pfc_rx_pause_seconds_total", &labels, pfc.rx_pause_ns as f64 / 1e9);
        }
    }
    pfc_watchdog(&mut out, ports);
    watermarks(&mut out, &[("user", &snapshot.watermarks), ("persistent", &snapshot.persistent_watermarks)]);
    out.into_string()
}

fn switch_wide(out: &mut Exposition, counters: &CountersSnapshot, streams: &Streams) {
    out.family("lossless_config_generation", Kind::Gauge, "Generation of the running configuration.");
    out.sample("lossless_config_generation", &[], counters.generation());
    let l = counters.ledger();
    out.family(
        "lossless_frames_total",
        Kind::Counter,
        "The switch's frame ledger: received = forwarded + trapped + dropped; copies + originated = sent + \
         queued + copies_dropped + flushed.",
    );
    for (outcome, n) in [
        ("received", l.received),
        ("forwarded", l.forwarded),
        ("copies", l.copies),
        ("originated", l.originated),
        ("trapped", l.trapped),
        ("dropped", l.dropped),
        ("copies_dropped", l.copies_dropped),
        ("flushed", l.flushed),
    ] {
        out.sample("lossless_frames_total", &[("outcome", outcome)], n);
    }
    out.family("lossless_grpc_subscribe_streams", Kind::Gauge, "Subscribe streams open now.");
    out.sample("lossless_grpc_subscribe_streams", &[], streams.len() as u64);
    out.family("lossless_grpc_subscribe_streams_max", Kind::Gauge, "Subscribe streams allowed at once.");
    out.sample("lossless_grpc_subscribe_streams_max", &[], streams.limits().max_streams as u64);
}

fn ports_state(out: &mut Exposition, ports: &[PortSnapshot]) {
    out.family("lossless_port_admin_up", Kind::Gauge, "1 if the port is admin up (PORT|admin_status).");
    for p in ports {
        out.sample("lossless_port_admin_up", &[("port", &p.name)], p.admin_up);
    }
    out.family("lossless_port_oper_up", Kind::Gauge, "1 if the port's interface is operationally up.");
    for p in ports {
        out.sample("lossless_port_oper_up", &[("port", &p.name)], p.oper_up);
    }
    // Prometheus's base unit is the byte: PORT|speed 100000 (Mb/s) is 12.5e9 bytes per second.
    let speed = "lossless_port_speed_bytes_per_second";
    out.family(speed, Kind::Gauge, "The port's line rate (PORT|speed), bytes per second.");
    for p in ports {
        out.sample(speed, &[("port", &p.name)], u64::from(p.speed_mbps) * 125_000);
    }
}

/// Families of per-queue, per-PG or per-priority counters: `label` is the index's name.
fn per_index<T>(
    out: &mut Exposition,
    ports: &[PortSnapshot],
    label: &str,
    fields: &[Field<T>],
    of: impl Fn(&PortCounters) -> &[T; 8],
) {
    for &(name, help, get) in fields {
        out.family(name, Kind::Counter, help);
        for p in ports {
            for (i, item) in of(&p.counters).iter().enumerate() {
                out.sample(name, &[("port", &p.name), (label, PRIORITIES[i])], get(item));
            }
        }
    }
}

/// Watchdog figures for the queues the watchdog monitors (PFC_WD enabled, lossless).
fn pfc_watchdog(out: &mut Exposition, ports: &[PortSnapshot]) {
    let monitored = || {
        ports
            .iter()
            .flat_map(|p| (0..8).filter_map(move |q| p.pfc_wd_status[q].map(|stormed| (p, q, stormed))))
    };
    out.family("lossless_pfcwd_stormed", Kind::Gauge, "1 while the watchdog holds the queue as stormed.");
    for (p, q, stormed) in monitored() {
        out.sample("lossless_pfcwd_stormed", &[("port", &p.name), ("queue", PRIORITIES[q])], stormed);
    }
    for &(name, help, get) in PFC_WD_COUNTERS {
        out.family(name, Kind::Counter, help);
        for (p, q, _) in monitored() {
            out.sample(name, &[("port", &p.name), ("queue", PRIORITIES[q])], get(&p.counters.pfc_wd[q]));
        }
    }
}

/// Watermarks as gauges, each sample labelled with its `period`: "user" (cleared by `sonic-clear
/// watermarks`, as `show ... watermark` reads them) or "persistent" (`show ... persistent-watermark`).
fn watermarks(out: &mut Exposition, periods: &[(&str, &WatermarksSnapshot)]) {
    type Get = fn(&crate::model::mmu::PortWatermarks) -> &[u64; 8];
    let families: [(&str, &str, &str, Get); 3] = [
        ("lossless_pg_shared_watermark_bytes", "pg", "Peak shared-buffer use of the ingress PG.", |w| {
            &w.pg_shared_bytes
        }),
        ("lossless_pg_headroom_watermark_bytes", "pg", "Peak headroom use of the ingress PG.", |w| {
            &w.pg_headroom_bytes
        }),
        (
            "lossless_queue_shared_watermark_bytes",
            "queue",
            "Peak shared-buffer use of the egress queue.",
            |w| &w.queue_shared_bytes,
        ),
    ];
    for (name, label, help, get) in families {
        out.family(name, Kind::Gauge, help);
        for &(period, w) in periods {
            for (port, marks) in w.ports() {
                for (i, v) in get(marks).iter().enumerate() {
                    out.sample(name, &[("port", port), (label, PRIORITIES[i]), ("period", period)], *v);
                }
            }
        }
    }
    type GetPool = fn(&crate::model::mmu::PoolWatermarks) -> u64;
    let pools: [(&str, &str, GetPool); 2] = [
        ("lossless_buffer_pool_watermark_bytes", "Peak shared use of the buffer pool.", |w| w.shared_bytes),
        ("lossless_buffer_pool_headroom_watermark_bytes", "Peak headroom use of the buffer pool.", |w| {
            w.headroom_bytes
        }),
    ];
    for (name, help, get) in pools {
        out.family(name, Kind::Gauge, help);
        for &(period, w) in periods {
            for (pool, marks) in w.pools() {
                out.sample(name, &[("pool", pool), ("period", period)], get(marks));
            }
        }
    }
}

/// Serves `GET /metrics` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    handle: Handle,
    streams: Arc<Streams>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::http::{StatusCode, header};
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let handle = handle.clone();
            let streams = streams.clone();
            async move {
                match handle.snapshot().await {
                    Ok(snapshot) => {
                        (StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], render(&snapshot, &streams))
                    }
                    Err(gone) => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                        gone.to_string(),
                    ),
                }
            }
        }),
    );
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}
