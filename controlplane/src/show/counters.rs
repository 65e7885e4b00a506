//! Counter tables: `show interfaces counters` (portstat), `show queue counters` / `wredcounters` (queuestat),
//! `show pfc counters [--history]` (pfcstat), `show priority-group drop counters` (pg-drop); and clearing by
//! snapshot ([`subtract_counters`]).

use super::table::{Cell, Table, natural_cmp};
use lossless_proto::v1::{
    FrameLedger, GetCountersResponse, PfcCounters, PfcWdCounters, PgCounters, PortCounters, QueueCounters,
};
use serde_json::{Map, Value};

/// Ports in `natsorted` name order, as every SONiC script lists them.
pub(super) fn sorted_ports(c: &GetCountersResponse) -> Vec<&PortCounters> {
    let mut ports: Vec<&PortCounters> = c.ports.iter().collect();
    ports.sort_by(|a, b| natural_cmp(&a.name, &b.name));
    ports
}

// ---- show interfaces counters --------------------------------------------------------------------

const PORTSTAT_HEADER: [&str; 14] = [
    "IFACE", "STATE", "RX_OK", "RX_BPS", "RX_UTIL", "RX_ERR", "RX_DRP", "RX_OVR", "TX_OK", "TX_BPS",
    "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR",
];

/// `show interfaces counters` (portstat's standard columns). `STATE` is `U` (up), `D` (admin up, link
/// down) or `X` (admin down). `*_BPS` and `*_UTIL` are the rates since `earlier` (an older snapshot of the
/// same switch); `N/A` without one, for a port `earlier` lacks, or when the timestamps do not advance.
/// `RX_OVR` counts frames lost because the port's receive buffer overflowed; `TX_OVR` is 0.
pub fn interfaces_counters(now: &GetCountersResponse, earlier: Option<&GetCountersResponse>) -> String {
    interfaces_table(now, earlier).render() + "\n"
}

/// `show interfaces counters --json`: `{"Ethernet0": {"STATE": "U", "RX_OK": 8, "RX_BPS": 2000000000.0,
/// ...}}` (portstat's `table_as_json` shape; rates in bytes/s, utilisation in percent, `null` for `N/A`).
pub fn interfaces_counters_json(now: &GetCountersResponse, earlier: Option<&GetCountersResponse>) -> Value {
    interfaces_table(now, earlier).keyed_by_first()
}

fn interfaces_table(now: &GetCountersResponse, earlier: Option<&GetCountersResponse>) -> Table {
    let mut table = Table::new(PORTSTAT_HEADER);
    let interval_s = earlier
        .filter(|e| now.timestamp_ns > e.timestamp_ns)
        .map(|e| (e, (now.timestamp_ns - e.timestamp_ns) as f64 / 1e9));
    for p in sorted_ports(now) {
        let before = interval_s.and_then(|(e, s)| e.ports.iter().find(|q| q.name == p.name).map(|q| (q, s)));
        let rate = |bytes: fn(&PortCounters) -> u64| {
            before.map(|(q, seconds)| bytes(p).saturating_sub(bytes(q)) as f64 / seconds)
        };
        // format_util: bytes/s against the line rate in bytes/s.
        let util = |bps: Option<f64>| {
            bps.filter(|_| p.speed_mbps > 0).map(|r| r / (f64::from(p.speed_mbps) * 1e6 / 8.0) * 100.0)
        };
        let (rx_bps, tx_bps) = (rate(|q| q.rx_bytes), rate(|q| q.tx_bytes));
        table.push(vec![
            Cell::text(&p.name),
            Cell::text(port_state(p)),
            Cell::count(p.rx_ok),
            Cell::byte_rate(rx_bps),
            Cell::percent(util(rx_bps)),
            Cell::count(p.rx_err),
            Cell::count(p.rx_drp),
            Cell::count(p.rx_ovr),
            Cell::count(p.tx_ok),
            Cell::byte_rate(tx_bps),
            Cell::percent(util(tx_bps)),
            Cell::count(p.tx_err),
            Cell::count(p.tx_drp),
            Cell::count(0),
        ]);
    }
    table
}

/// portstat's STATE: `U` up, `D` admin up but the link down, `X` admin down (disabled).
pub(super) fn port_state(p: &PortCounters) -> &'static str {
    match (p.admin_up, p.oper_up) {
        (false, _) => "X",
        (true, true) => "U",
        (true, false) => "D",
    }
}

// ---- show queue counters / wredcounters ------------------------------------------------------------

const QUEUESTAT_HEADER: [&str; 6] =
    ["Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes"];
const QUEUESTAT_JSON_KEYS: [&str; 4] = ["totalpacket", "totalbytes", "droppacket", "dropbytes"];
const WRED_HEADER: [&str; 6] =
    ["Port", "TxQ", "WredDrp/pkts", "WredDrp/bytes", "EcnMarked/pkts", "EcnMarked/bytes"];
const WRED_JSON_KEYS: [&str; 4] = ["wreddroppacket", "wreddropbytes", "ecnmarkedpacket", "ecnmarkedbytes"];

fn queue_totals(q: &QueueCounters) -> [u64; 4] {
    [q.packets, q.bytes, q.dropped_packets, q.dropped_bytes]
}

fn queue_wred(q: &QueueCounters) -> [u64; 4] {
    [q.wred_dropped_packets, q.wred_dropped_bytes, q.ecn_marked_packets, q.ecn_marked_bytes]
}

/// Which queues `show queue counters|wredcounters` lists: one port's or all, and with queuestat's
/// `--nonzero` only those with a counter above zero (a port with none prints nothing).
#[derive(Debug, Clone, Copy, Default)]
pub struct QueueFilter<'a> {
    pub port: Option<&'a str>,
    pub nonzero: bool,
}

/// One table per port (queuestat prints each port's table followed by an empty line). All queues are
/// unicast: `UC<index>`.
fn queue_tables(
    c: &GetCountersResponse,
    filter: QueueFilter<'_>,
    header: [&str; 6],
    values: fn(&QueueCounters) -> [u64; 4],
) -> Vec<(String, Table)> {
    let mut out = Vec::new();
    for p in sorted_ports(c).into_iter().filter(|p| filter.port.is_none_or(|name| p.name == name)) {
        let mut table = Table::new(header);
        for (i, q) in p.queues.iter().enumerate() {
            let counts = values(q);
            if filter.nonzero && counts.iter().all(|n| *n == 0) {
                continue;
            }
            let mut row = vec![Cell::text(&p.name), Cell::text(format!("UC{i}"))];
            row.extend(counts.map(Cell::count));
            table.push(row);
        }
        if !table.is_empty() {
            out.push((p.name.clone(), table));
        }
    }
    out
}

fn render_per_port(tables: Vec<(String, Table)>) -> String {
    tables.into_iter().map(|(_, t)| t.render() + "\n\n").collect()
}

/// queuestat's `--json`: `{"Ethernet0": {"UC0": {"totalpacket": 1, ...}}}`.
fn per_port_json(tables: Vec<(String, Table)>, keys: [&str; 4]) -> Value {
    let mut out = Map::new();
    for (port, table) in tables {
        let queues = table.rows().map(|row| {
            let fields = keys.iter().zip(&row[2..]).map(|(k, c)| ((*k).to_owned(), c.json.clone()));
            (row[1].text.clone(), Value::Object(fields.collect()))
        });
        out.insert(port, Value::Object(queues.collect()));
    }
    Value::Object(out)
}

/// `show queue counters [port]`: transmitted and dropped packets/bytes of each egress queue. An unknown
/// `port` gives an empty string (queuestat's "Port doesn't exist!" is the caller's to print).
pub fn queue_counters(c: &GetCountersResponse, port: Option<&str>) -> String {
    queue_counters_filtered(c, QueueFilter { port, nonzero: false })
}

/// `show queue counters [port] [--nonzero]`.
pub fn queue_counters_filtered(c: &GetCountersResponse, filter: QueueFilter<'_>) -> String {
    render_per_port(queue_tables(c, filter, QUEUESTAT_HEADER, queue_totals))
}

/// `show queue counters [port] [--nonzero] --json`.
pub fn queue_counters_json(c: &GetCountersResponse, filter: QueueFilter<'_>) -> Value {
    per_port_json(queue_tables(c, filter, QUEUESTAT_HEADER, queue_totals), QUEUESTAT_JSON_KEYS)
}

/// `show queue wredcounters [port]`: WRED-dropped and ECN-marked packets/bytes of each egress queue.
pub fn queue_wredcounters(c: &GetCountersResponse, port: Option<&str>) -> String {
    queue_wredcounters_filtered(c, QueueFilter { port, nonzero: false })
}

/// `show queue wredcounters [port] [--nonzero]`.
pub fn queue_wredcounters_filtered(c: &GetCountersResponse, filter: QueueFilter<'_>) -> String {
    render_per_port(queue_tables(c, filter, WRED_HEADER, queue_wred))
}

/// `show queue wredcounters [port] [--nonzero] --json`.
pub fn queue_wredcounters_json(c: &GetCountersResponse, filter: QueueFilter<'_>) -> Value {
    per_port_json(queue_tables(c, filter, WRED_HEADER, queue_wred), WRED_JSON_KEYS)
}

// ---- show pfc counters ---------------------------------------------------------------------------

const PRIORITIES: usize = 8;

fn pfc_table(c: &GetCountersResponse, first: &str, frames: fn(&PfcCounters) -> u64) -> Table {
    let mut table =
        Table::new(std::iter::once(first.to_owned()).chain((0..PRIORITIES).map(|i| format!("PFC{i}"))));
    for p in sorted_ports(c) {
        let mut row = vec![Cell::text(&p.name)];
        row.extend((0..PRIORITIES).map(|i| p.pfc.get(i).map_or_else(Cell::na, |f| Cell::count(frames(f)))));
        table.push(row);
    }
    table
}

/// `show pfc counters`: PFC frames received (`Port Rx`) then sent (`Port Tx`) per priority, two tables
/// separated by an empty line as pfcstat prints them.
pub fn pfc_counters(c: &GetCountersResponse) -> String {
    let rx = pfc_table(c, "Port Rx", |f| f.rx);
    let tx = pfc_table(c, "Port Tx", |f| f.tx);
    format!("{}\n\n{}\n", rx.render(), tx.render())
}

/// `show pfc counters --json` (pfcstat has none): `{"Port Rx": {"Ethernet0": {"PFC0": 1200, ...}},
/// "Port Tx": {...}}`.
pub fn pfc_counters_json(c: &GetCountersResponse) -> Value {
    let mut out = Map::new();
    out.insert("Port Rx".into(), pfc_table(c, "Port Rx", |f| f.rx).keyed_by_first());
    out.insert("Port Tx".into(), pfc_table(c, "Port Tx", |f| f.tx).keyed_by_first());
    Value::Object(out)
}

const PFC_HISTORY_HEADER: [&str; 6] = [
    "Port",
    "Priority",
    "RX Pause Transitions",
    "Total RX Pause Time US",
    "Recent RX Pause Time US",
    "Recent RX Pause Timestamp",
];

fn pfc_history_table(c: &GetCountersResponse) -> Table {
    let mut table = Table::new(PFC_HISTORY_HEADER);
    for p in sorted_ports(c) {
        for i in 0..PRIORITIES {
            let (transitions, total_us) = match p.pfc.get(i) {
                Some(f) => (Cell::count(f.rx_pause_transitions), Cell::count(f.rx_pause_us)),
                None => (Cell::na(), Cell::na()),
            };
            // The API has no "most recent pause" (duration, start time): N/A, as pfcstat prints a field
            // the switch does not report.
            table.push(vec![
                Cell::text(&p.name),
                Cell::text(format!("PFC{i}")),
                transitions,
                total_us,
                Cell::na(),
                Cell::na(),
            ]);
        }
        table.push_blank();
    }
    table
}

/// `show pfc counters --history`: per port and priority, the XOFF→paused transitions and the total time
/// paused, with an empty line after each port (pfcstat's layout; it ends with one).
pub fn pfc_counters_history(c: &GetCountersResponse) -> String {
    pfc_history_table(c).render() + "\n"
}

/// `show pfc counters --history --json`: `{"Ethernet0": {"PFC0": {"RX Pause Transitions": 12, ...}}}`.
pub fn pfc_counters_history_json(c: &GetCountersResponse) -> Value {
    let mut out = Map::new();
    for row in pfc_history_table(c).rows() {
        let stats =
            PFC_HISTORY_HEADER[2..].iter().zip(&row[2..]).map(|(h, c)| ((*h).to_owned(), c.json.clone()));
        let entry = out.entry(row[0].text.clone()).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(priorities) = entry {
            priorities.insert(row[1].text.clone(), Value::Object(stats.collect()));
        }
    }
    Value::Object(out)
}

// ---- show priority-group drop counters -----------------------------------------------------------

fn pg_drop_table(c: &GetCountersResponse) -> Table {
    let mut table =
        Table::new(std::iter::once("Port".to_owned()).chain((0..PRIORITIES).map(|i| format!("PG{i}"))));
    for p in sorted_ports(c) {
        let mut row = vec![Cell::text(&p.name)];
        row.extend(
            (0..PRIORITIES).map(|i| p.pgs.get(i).map_or_else(Cell::na, |g| Cell::plain(g.dropped_packets))),
        );
        table.push(row);
    }
    table
}

/// `show priority-group drop counters`: packets dropped at ingress per PG (pg-drop prints plain integers).
pub fn pg_drop_counters(c: &GetCountersResponse) -> String {
    format!("Ingress PG dropped packets:\n{}\n", pg_drop_table(c).render())
}

/// `show priority-group drop counters --json`: `[{"Port": "Ethernet0", "PG0": 800, ...}]`.
pub fn pg_drop_counters_json(c: &GetCountersResponse) -> Value {
    pg_drop_table(c).objects()
}

// ---- clearing ------------------------------------------------------------------------------------

/// What `show` prints after `sonic-clear ...`: SONiC stores the counters when clearing and prints the
/// difference later (`ns_diff`: never below zero, so a switch restarted since shows zeros until it catches
/// up). Ports are matched by name; a port the baseline lacks keeps its totals. Gauges and state are
/// `now`'s: admin state, speed, queue depth, watchdog status, timestamp and generation.
///
/// The watchdog's `*_last` counters describe the most recent storm: if a storm was detected after the
/// baseline they are all about it and are kept whole; otherwise they are subtracted like the rest.
pub fn subtract_counters(now: &GetCountersResponse, baseline: &GetCountersResponse) -> GetCountersResponse {
    let ports = now
        .ports
        .iter()
        .map(|p| match baseline.ports.iter().find(|b| b.name == p.name) {
            Some(b) => subtract_port(p, b),
            None => p.clone(),
        })
        .collect();
    let ledger = match (&now.ledger, &baseline.ledger) {
        (Some(n), Some(b)) => Some(FrameLedger {
            received: n.received.saturating_sub(b.received),
            forwarded: n.forwarded.saturating_sub(b.forwarded),
            copies: n.copies.saturating_sub(b.copies),
            originated: n.originated.saturating_sub(b.originated),
            trapped: n.trapped.saturating_sub(b.trapped),
            dropped: n.dropped.saturating_sub(b.dropped),
            copies_dropped: n.copies_dropped.saturating_sub(b.copies_dropped),
            flushed: n.flushed.saturating_sub(b.flushed),
        }),
        (n, _) => *n,
    };
    GetCountersResponse {
        generation: now.generation,
        timestamp_ns: now.timestamp_ns,
        wall_time_unix_ns: now.wall_time_unix_ns,
        ledger,
        ports,
        stalls: now.stalls,
    }
}

/// Element-wise by index; entries the baseline lacks are kept whole.
fn subtract_each<T: Clone>(now: &[T], baseline: &[T], f: fn(&T, &T) -> T) -> Vec<T> {
    now.iter().enumerate().map(|(i, n)| baseline.get(i).map_or_else(|| n.clone(), |b| f(n, b))).collect()
}

fn subtract_port(n: &PortCounters, b: &PortCounters) -> PortCounters {
    let drop_reasons = n
        .drop_reasons
        .iter()
        .map(|(reason, count)| {
            (reason.clone(), count.saturating_sub(b.drop_reasons.get(reason).copied().unwrap_or(0)))
        })
        .collect();
    PortCounters {
        name: n.name.clone(),
        admin_up: n.admin_up,
        speed_mbps: n.speed_mbps,
        rx_ok: n.rx_ok.saturating_sub(b.rx_ok),
        rx_bytes: n.rx_bytes.saturating_sub(b.rx_bytes),
        rx_err: n.rx_err.saturating_sub(b.rx_err),
        rx_drp: n.rx_drp.saturating_sub(b.rx_drp),
        rx_ovr: n.rx_ovr.saturating_sub(b.rx_ovr),
        oper_up: n.oper_up,
        tx_ok: n.tx_ok.saturating_sub(b.tx_ok),
        tx_bytes: n.tx_bytes.saturating_sub(b.tx_bytes),
        tx_err: n.tx_err.saturating_sub(b.tx_err),
        tx_drp: n.tx_drp.saturating_sub(b.tx_drp),
        trapped: n.trapped.saturating_sub(b.trapped),
        queues: subtract_each(&n.queues, &b.queues, |n, b| QueueCounters {
            packets: n.packets.saturating_sub(b.packets),
            bytes: n.bytes.saturating_sub(b.bytes),
            dropped_packets: n.dropped_packets.saturating_sub(b.dropped_packets),
            dropped_bytes: n.dropped_bytes.saturating_sub(b.dropped_bytes),
            wred_dropped_packets: n.wred_dropped_packets.saturating_sub(b.wred_dropped_packets),
            wred_dropped_bytes: n.wred_dropped_bytes.saturating_sub(b.wred_dropped_bytes),
            ecn_marked_packets: n.ecn_marked_packets.saturating_sub(b.ecn_marked_packets),
            ecn_marked_bytes: n.ecn_marked_bytes.saturating_sub(b.ecn_marked_bytes),
        }),
        pgs: subtract_each(&n.pgs, &b.pgs, |n, b| PgCounters {
            packets: n.packets.saturating_sub(b.packets),
            bytes: n.bytes.saturating_sub(b.bytes),
            dropped_packets: n.dropped_packets.saturating_sub(b.dropped_packets),
        }),
        pfc: subtract_each(&n.pfc, &b.pfc, |n, b| PfcCounters {
            rx: n.rx.saturating_sub(b.rx),
            rx_xon: n.rx_xon.saturating_sub(b.rx_xon),
            tx: n.tx.saturating_sub(b.tx),
            rx_pause_transitions: n.rx_pause_transitions.saturating_sub(b.rx_pause_transitions),
            rx_pause_us: n.rx_pause_us.saturating_sub(b.rx_pause_us),
        }),
        pfc_wd: subtract_each(&n.pfc_wd, &b.pfc_wd, subtract_pfc_wd),
        drop_reasons,
        queue_depth: n.queue_depth.clone(),
        rx_non_ucast: n.rx_non_ucast.saturating_sub(b.rx_non_ucast),
        tx_non_ucast: n.tx_non_ucast.saturating_sub(b.tx_non_ucast),
        // Gauges, like queue_depth: what is held now.
        queue_occupancy_bytes: n.queue_occupancy_bytes.clone(),
        pg_occupancy_bytes: n.pg_occupancy_bytes.clone(),
    }
}

fn subtract_pfc_wd(n: &PfcWdCounters, b: &PfcWdCounters) -> PfcWdCounters {
    let new_storm = n.deadlock_detected > b.deadlock_detected;
    let last = |n: u64, b: u64| if new_storm { n } else { n.saturating_sub(b) };
    PfcWdCounters {
        status: n.status.clone(),
        deadlock_detected: n.deadlock_detected.saturating_sub(b.deadlock_detected),
        deadlock_restored: n.deadlock_restored.saturating_sub(b.deadlock_restored),
        tx_packets: n.tx_packets.saturating_sub(b.tx_packets),
        tx_dropped_packets: n.tx_dropped_packets.saturating_sub(b.tx_dropped_packets),
        rx_packets: n.rx_packets.saturating_sub(b.rx_packets),
        rx_dropped_packets: n.rx_dropped_packets.saturating_sub(b.rx_dropped_packets),
        tx_packets_last: last(n.tx_packets_last, b.tx_packets_last),
        tx_dropped_packets_last: last(n.tx_dropped_packets_last, b.tx_dropped_packets_last),
        rx_packets_last: last(n.rx_packets_last, b.rx_packets_last),
        rx_dropped_packets_last: last(n.rx_dropped_packets_last, b.rx_dropped_packets_last),
    }
}
