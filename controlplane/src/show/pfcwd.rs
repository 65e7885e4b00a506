//! The PFC watchdog's CLI (sonic-utilities `pfcwd/main.py`): `pfcwd show config` from CONFIG_DB's
//! `PFC_WD` table, `pfcwd show stats [-e]` and `--check-storm` from the per-queue watchdog counters.

use super::counters::sorted_ports;
use super::table::{Cell, Table, natural_cmp};
use lossless_dataplane::model::config::ConfigDb;
use lossless_proto::v1::{GetCountersResponse, PfcWdCounters};
use serde_json::{Map, Value};

/// (column, `PFC_WD|<port>` field, what pfcwd prints when the field is absent).
const CONFIG_COLUMNS: [(&str, &str, Option<&str>); 4] = [
    ("ACTION", "action", Some("drop")),
    ("DETECTION TIME", "detection_time", None),
    ("RESTORATION TIME", "restoration_time", Some("infinite")),
    ("HISTORY", "pfc_stat_history", Some("disable")),
];

struct PfcWdConfig<'a> {
    poll_interval: Option<&'a str>,
    big_red_switch: Option<&'a str>,
    table: Table,
}

fn config(db: &ConfigDb) -> PfcWdConfig<'_> {
    let mut table = Table::new(std::iter::once("PORT").chain(CONFIG_COLUMNS.iter().map(|c| c.0)));
    let pfc_wd = db.tables.get("PFC_WD");
    let mut ports: Vec<_> = pfc_wd
        .into_iter()
        .flatten()
        .filter(|(key, fields)| key.as_str() != "GLOBAL" && !fields.is_empty())
        .collect();
    ports.sort_by(|a, b| natural_cmp(a.0, b.0));
    for (port, fields) in &ports {
        let mut row = vec![Cell::text(port.as_str())];
        row.extend(CONFIG_COLUMNS.iter().map(|(_, field, default)| match (fields.get(*field), default) {
            (Some(value), _) => Cell::text(value.as_str()),
            (None, Some(default)) => Cell::text(*default),
            (None, None) => Cell::na(),
        }));
        table.push(row);
    }
    // pfcwd prints the global lines only when some port is configured.
    let global = pfc_wd.and_then(|t| t.get("GLOBAL")).filter(|_| !ports.is_empty());
    let field = |name: &str| global.and_then(|g| g.get(name)).map(String::as_str);
    PfcWdConfig { poll_interval: field("POLL_INTERVAL"), big_red_switch: field("BIG_RED_SWITCH"), table }
}

/// `pfcwd show config`: `Changed polling interval to <N>ms` when `PFC_WD|GLOBAL|POLL_INTERVAL` is set,
/// `BIG_RED_SWITCH status is <value>` when `PFC_WD|GLOBAL|BIG_RED_SWITCH` is, then one row per configured
/// port with pfcwd's defaults for absent fields (action `drop`, detection `N/A`, restoration `infinite`,
/// history `disable`).
pub fn pfcwd_config(db: &ConfigDb) -> String {
    let c = config(db);
    let mut out = String::new();
    if let Some(ms) = c.poll_interval {
        out.push_str(&format!("Changed polling interval to {ms}ms\n"));
    }
    if let Some(brs) = c.big_red_switch {
        out.push_str(&format!("BIG_RED_SWITCH status is {brs}\n"));
    }
    out + &c.table.render() + "\n"
}

/// `pfcwd show config --json` (pfcwd has none): `{"POLL_INTERVAL": "600", "BIG_RED_SWITCH": null,
/// "ports": [{"PORT": "Ethernet0", "ACTION": "drop", "DETECTION TIME": "600", ...}]}`; values are CONFIG_DB's
/// strings, `null` where pfcwd prints `N/A`.
pub fn pfcwd_config_json(db: &ConfigDb) -> Value {
    let c = config(db);
    let mut out = Map::new();
    out.insert("POLL_INTERVAL".into(), c.poll_interval.map_or(Value::Null, Value::from));
    out.insert("BIG_RED_SWITCH".into(), c.big_red_switch.map_or(Value::Null, Value::from));
    out.insert("ports".into(), c.table.objects());
    Value::Object(out)
}

const STATS_HEADER: [&str; 7] = [
    "QUEUE",
    "STATUS",
    "STORM DETECTED/RESTORED",
    "TX OK/DROP",
    "RX OK/DROP",
    "TX LAST OK/DROP",
    "RX LAST OK/DROP",
];

fn pairs(w: &PfcWdCounters) -> [(u64, u64); 5] {
    [
        (w.deadlock_detected, w.deadlock_restored),
        (w.tx_packets, w.tx_dropped_packets),
        (w.rx_packets, w.rx_dropped_packets),
        (w.tx_packets_last, w.tx_dropped_packets_last),
        (w.rx_packets_last, w.rx_dropped_packets_last),
    ]
}

fn stats_table(c: &GetCountersResponse, all: bool) -> Table {
    let mut table = Table::new(STATS_HEADER);
    for p in sorted_ports(c) {
        for (queue, w) in p.pfc_wd.iter().enumerate().filter(|(_, w)| !w.status.is_empty()) {
            let cells = pairs(w);
            if !all && cells.iter().all(|&(a, b)| a == 0 && b == 0) {
                continue;
            }
            let mut row = vec![Cell::text(format!("{}:{queue}", p.name)), Cell::text(&w.status)];
            row.extend(cells.map(|(a, b)| Cell::pair(a, b)));
            table.push(row);
        }
    }
    table
}

/// `pfcwd show stats [-e]`: one row per monitored queue (`Ethernet0:3`), its status (`operational` /
/// `stormed`) and five `a/b` pairs as pfcwd prints them (plain integers). Rows whose pairs are all `0/0`
/// are hidden unless `all` (`-e`, "show empty").
pub fn pfcwd_stats(c: &GetCountersResponse, all: bool) -> String {
    stats_table(c, all).render() + "\n"
}

/// `pfcwd show stats --json`: every monitored queue, quiet ones included (a script filters for itself):
/// `[{"QUEUE": "Ethernet0:3", "STATUS": "stormed", "TX OK/DROP": [100, 300], ...}]`, each pair as a
/// two-element array.
pub fn pfcwd_stats_json(c: &GetCountersResponse) -> Value {
    stats_table(c, true).objects()
}

/// `pfcwd show stats --check-storm`: whether any queue is stormed (pfcwd exits 1 then, 0 otherwise).
pub fn pfcwd_any_stormed(c: &GetCountersResponse) -> bool {
    c.ports.iter().flat_map(|p| &p.pfc_wd).any(|w| w.status == "stormed")
}
