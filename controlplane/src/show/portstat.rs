//! portstat's other views: `show interfaces counters errors` (`portstat -e`), `... rates` (`portstat -R`)
//! and `... detailed <port>` (`portstat -l -i <port>`).
//!
//! Rates come from two snapshots of the same switch, as `show interfaces counters -p` takes them (SONiC
//! reads them from the RATES table its flex counters keep): bytes/s as `format_brate`, packets/s as
//! `format_prate` (`12.50/s`), utilisation against the port speed. The detailed view prints every line of
//! SONiC's, with `N/A` for the counters the model does not keep (frame-size buckets, unicast/multicast/
//! broadcast splits, jabbers, fragments, undersize, trimming): an operator sees which numbers exist.

use super::counters::{port_state, sorted_ports};
use super::table::{Cell, Table};
use lossless_proto::v1::{GetCountersResponse, PortCounters};
use serde_json::Value;

const ERRORS_HEADER: [&str; 8] =
    ["IFACE", "STATE", "RX_ERR", "RX_DRP", "RX_OVR", "TX_ERR", "TX_DRP", "TX_OVR"];
const RATES_HEADER: [&str; 10] =
    ["IFACE", "STATE", "RX_OK", "RX_BPS", "RX_PPS", "RX_UTIL", "TX_OK", "TX_BPS", "TX_PPS", "TX_UTIL"];

fn errors_table(c: &GetCountersResponse) -> Table {
    let mut table = Table::new(ERRORS_HEADER);
    for p in sorted_ports(c) {
        table.push(vec![
            Cell::text(&p.name),
            Cell::text(port_state(p)),
            Cell::count(p.rx_err),
            Cell::count(p.rx_drp),
            Cell::count(p.rx_ovr),
            Cell::count(p.tx_err),
            Cell::count(p.tx_drp),
            Cell::count(0),
        ]);
    }
    table
}

/// `show interfaces counters errors`: the error and drop columns of portstat.
pub fn interfaces_counters_errors(c: &GetCountersResponse) -> String {
    errors_table(c).render() + "\n"
}

/// `show interfaces counters errors --json`: `{"Ethernet0": {"STATE": "U", "RX_ERR": 10, ...}}`.
pub fn interfaces_counters_errors_json(c: &GetCountersResponse) -> Value {
    errors_table(c).keyed_by_first()
}

/// Per-second change of `value` between `earlier`'s copy of port `p` and `p`; `None` without an earlier
/// snapshot of the port or when time did not advance.
fn per_second(
    now: &GetCountersResponse,
    earlier: Option<&GetCountersResponse>,
    p: &PortCounters,
    value: fn(&PortCounters) -> u64,
) -> Option<f64> {
    let e = earlier.filter(|e| now.timestamp_ns > e.timestamp_ns)?;
    let q = e.ports.iter().find(|q| q.name == p.name)?;
    let seconds = (now.timestamp_ns - e.timestamp_ns) as f64 / 1e9;
    Some(value(p).saturating_sub(value(q)) as f64 / seconds)
}

fn packet_rate(pps: Option<f64>) -> Cell {
    match pps {
        None => Cell::na(),
        Some(r) => Cell {
            text: format!("{r:.2}/s"),
            json: serde_json::Number::from_f64(r).map_or(Value::Null, Value::Number),
        },
    }
}

fn rates_table(now: &GetCountersResponse, earlier: Option<&GetCountersResponse>) -> Table {
    let mut table = Table::new(RATES_HEADER);
    for p in sorted_ports(now) {
        let util = |bps: Option<f64>| {
            bps.filter(|_| p.speed_mbps > 0).map(|r| r / (f64::from(p.speed_mbps) * 1e6 / 8.0) * 100.0)
        };
        let rx_bps = per_second(now, earlier, p, |q| q.rx_bytes);
        let tx_bps = per_second(now, earlier, p, |q| q.tx_bytes);
        table.push(vec![
            Cell::text(&p.name),
            Cell::text(port_state(p)),
            Cell::count(p.rx_ok),
            Cell::byte_rate(rx_bps),
            packet_rate(per_second(now, earlier, p, |q| q.rx_ok)),
            Cell::percent(util(rx_bps)),
            Cell::count(p.tx_ok),
            Cell::byte_rate(tx_bps),
            packet_rate(per_second(now, earlier, p, |q| q.tx_ok)),
            Cell::percent(util(tx_bps)),
        ]);
    }
    table
}

/// `show interfaces counters rates`: totals and byte, packet and utilisation rates since `earlier`.
pub fn interfaces_counters_rates(now: &GetCountersResponse, earlier: Option<&GetCountersResponse>) -> String {
    rates_table(now, earlier).render() + "\n"
}

/// `show interfaces counters rates --json` (bytes/s, packets/s, percent; `null` for `N/A`).
pub fn interfaces_counters_rates_json(
    now: &GetCountersResponse,
    earlier: Option<&GetCountersResponse>,
) -> Value {
    rates_table(now, earlier).keyed_by_first()
}

/// The lines of `portstat -l` in SONiC's order, `None` where the model keeps no such counter; an empty
/// label is an empty line.
fn detailed_lines(p: &PortCounters) -> Vec<(&'static str, Option<u64>)> {
    let wred: u64 = p.queues.iter().map(|q| q.wred_dropped_packets).sum();
    vec![
        ("Packets Received 64 Octets", None),
        ("Packets Received 65-127 Octets", None),
        ("Packets Received 128-255 Octets", None),
        ("Packets Received 256-511 Octets", None),
        ("Packets Received 512-1023 Octets", None),
        ("Packets Received 1024-1518 Octets", None),
        ("Packets Received 1519-2047 Octets", None),
        ("Packets Received 2048-4095 Octets", None),
        ("Packets Received 4096-9216 Octets", None),
        ("Packets Received 9217-16383 Octets", None),
        ("", None),
        ("Total Packets Received Without Errors", Some(p.rx_ok)),
        ("Unicast Packets Received", None),
        ("Multicast Packets Received", None),
        ("Broadcast Packets Received", None),
        ("", None),
        ("Jabbers Received", None),
        ("Fragments Received", None),
        ("Undersize Received", None),
        ("Overruns Received", Some(p.rx_ovr)),
        ("", None),
        ("Packets Transmitted 64 Octets", None),
        ("Packets Transmitted 65-127 Octets", None),
        ("Packets Transmitted 128-255 Octets", None),
        ("Packets Transmitted 256-511 Octets", None),
        ("Packets Transmitted 512-1023 Octets", None),
        ("Packets Transmitted 1024-1518 Octets", None),
        ("Packets Transmitted 1519-2047 Octets", None),
        ("Packets Transmitted 2048-4095 Octets", None),
        ("Packets Transmitted 4096-9216 Octets", None),
        ("Packets Transmitted 9217-16383 Octets", None),
        ("", None),
        ("Total Packets Transmitted Successfully", Some(p.tx_ok)),
        ("Unicast Packets Transmitted", None),
        ("Multicast Packets Transmitted", None),
        ("Broadcast Packets Transmitted", None),
        ("", None),
        ("WRED Total Dropped Packets", Some(wred)),
        ("", None),
        ("Trimmed Packets", None),
        ("Trimmed Sent Packets", None),
        ("Trimmed Dropped Packets", None),
        ("", None),
    ]
}

/// `show interfaces counters detailed <port>`: portstat's dotted list (labels padded with dots to 47
/// columns, then a space and the value), `N/A` for counters the model does not keep; the last line tells when the counters were
/// cleared (`None` if never, as portstat prints it). `None` if there is no such port.
pub fn interfaces_counters_detailed(
    c: &GetCountersResponse,
    port: &str,
    cleared: Option<&str>,
) -> Option<String> {
    let p = c.ports.iter().find(|p| p.name == port)?;
    let mut out = String::new();
    for (label, value) in detailed_lines(p) {
        if label.is_empty() {
            out.push('\n');
            continue;
        }
        let value = value.map_or_else(|| "N/A".to_owned(), super::thousands);
        out.push_str(&format!("{label:.<47} {value}\n"));
    }
    out.push_str(&format!("{:.<47} {}\n", "Time Since Counters Last Cleared", cleared.unwrap_or("None")));
    Some(out)
}

/// `show interfaces counters detailed <port> --json`: `{"Total Packets Received Without Errors": 8, ...}`,
/// `null` for the counters the model does not keep.
pub fn interfaces_counters_detailed_json(c: &GetCountersResponse, port: &str) -> Option<Value> {
    let p = c.ports.iter().find(|p| p.name == port)?;
    let fields = detailed_lines(p)
        .into_iter()
        .filter(|(label, _)| !label.is_empty())
        .map(|(label, v)| (label.to_owned(), v.map_or(Value::Null, Value::from)));
    Some(Value::Object(fields.collect()))
}
