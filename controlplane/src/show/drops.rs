//! `show dropcounters counts` (sonic-utilities `scripts/dropstat`): per port the four standard columns
//! (`RX_ERR`, `RX_DROPS`, `TX_ERR`, `TX_DROPS`) and then one column per drop reason.
//!
//! SONiC shows a reason only once an operator has configured a debug counter for it
//! (`config dropcounters install`), and names the column after that counter. The model counts every reason
//! always, so each reason that any port has counted gets its own column, named by the reason (SAI's
//! `SAI_IN_DROP_REASON_*` suffix, or Lossless's own such as `FDB_MISS_LOSSLESS`), in name order. dropstat
//! prints plain integers and ends with an empty line (where the switch-level table would follow; the
//! model has no switch-level drop counters). dropstat has no `--json`: ours is portstat's shape,
//! `{"Ethernet0": {"STATE": "U", "RX_ERR": 0, ..., "FDB_MISS_LOSSLESS": 1000}}`.

use super::counters::{port_state, sorted_ports};
use super::table::{Cell, Table};
use lossless_proto::v1::GetCountersResponse;
use serde_json::Value;
use std::collections::BTreeSet;

const DROPSTAT_HEADER: [&str; 6] = ["IFACE", "STATE", "RX_ERR", "RX_DROPS", "TX_ERR", "TX_DROPS"];

fn drops_table(c: &GetCountersResponse) -> Table {
    let reasons: BTreeSet<&str> =
        c.ports.iter().flat_map(|p| p.drop_reasons.keys().map(String::as_str)).collect();
    let mut table = Table::new(DROPSTAT_HEADER.iter().copied().chain(reasons.iter().copied()));
    for p in sorted_ports(c) {
        let mut row = vec![
            Cell::text(&p.name),
            Cell::text(port_state(p)),
            Cell::plain(p.rx_err),
            Cell::plain(p.rx_drp),
            Cell::plain(p.tx_err),
            Cell::plain(p.tx_drp),
        ];
        row.extend(reasons.iter().map(|r| Cell::plain(p.drop_reasons.get(*r).copied().unwrap_or(0))));
        table.push(row);
    }
    table
}

/// `show dropcounters counts`.
pub fn dropcounters_counts(c: &GetCountersResponse) -> String {
    drops_table(c).render() + "\n\n"
}

/// `show dropcounters counts --json`.
pub fn dropcounters_counts_json(c: &GetCountersResponse) -> Value {
    drops_table(c).keyed_by_first()
}
