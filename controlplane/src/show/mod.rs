//! SONiC's `show` tables for `swctl`: the operator's view of counters, watermarks and the PFC watchdog,
//! laid out as sonic-utilities prints them so that an engineer reads them as on a SONiC switch (and a
//! script written against SONiC's output parses them).
//!
//! Every function is pure: API data in, text out, the text exactly as SONiC prints it including the final
//! newline (print it with `print!`). Columns, titles and number formats follow the sonic-utilities scripts
//! and their unit-test vectors: `portstat` (`show interfaces counters`), `queuestat` (`show queue counters`,
//! `wredcounters`), `pfcstat` (`show pfc counters [--history]`), `pg-drop`, `watermarkstat` and
//! `pfcwd/main.py`. Counters carry thousands separators where SONiC's scripts add them (portstat, queuestat
//! after a clear, pfcstat); watermarks, PG drops and the watchdog's `a/b` cells are plain integers, as there.
//! Ports are in `natsorted` order.
//!
//! Each table also has a `*_json` form for `--json`: SONiC's JSON shape where the script has one
//! (portstat's `{iface: {column: value}}`, queuestat's `{port: {queue: {totalpacket, ...}}}`,
//! watermarkstat's `[{"Port": ..., "PG0": ...}]`), with typed values: numbers as JSON numbers, rates in
//! bytes/s and utilisation in percent, `null` where the table prints `N/A`. (SONiC's JSON carries the
//! formatted strings; objects' keys come out sorted.) `watermarks_json` gives every watermark table at
//! once, and `pfcwd_stats_json` every monitored queue, quiet ones included.
//!
//! Clearing follows SONiC: `sonic-clear ...` stores a snapshot and `show` subtracts it
//! ([`subtract_counters`]); watermarks are cleared in the switch.
//!
//! Intentional differences from SONiC's output: no `For namespace :` / `Last cached time was ...` lines
//! (single ASIC; the snapshot is the caller's); every queue is unicast (`UC<i>`), as in the model; the
//! `--history` columns are microseconds (`... Time US`, the field the API carries; sonic-utilities has shipped
//! both `US` and `MS`), and its `Recent ...` columns are `N/A` (the API has no most-recent pause);
//! `RX_OVR` counts receive-buffer overruns (frames the kernel dropped before the switch took them) and
//! `TX_OVR` is 0 (an oversize frame is an `RX_ERR`).

mod buffers;
mod counters;
mod drops;
mod l2l3;
mod pfc_config;
mod pfcwd;
mod portstat;
mod running;
mod status;
mod table;

pub use table::thousands;
mod watermarks;

pub use buffers::{
    buffer_configuration, buffer_configuration_json, buffer_information, buffer_information_json,
};
pub use counters::{
    QueueFilter, interfaces_counters, interfaces_counters_json, pfc_counters, pfc_counters_history,
    pfc_counters_history_json, pfc_counters_json, pg_drop_counters, pg_drop_counters_json, queue_counters,
    queue_counters_filtered, queue_counters_json, queue_wredcounters, queue_wredcounters_filtered,
    queue_wredcounters_json, subtract_counters,
};
pub use drops::{dropcounters_counts, dropcounters_counts_json};
pub use l2l3::{
    MacQuery, Route, RouteNextHop, arp, arp_json, filter_fdb, filter_neighbors, ip_route, ip_route_json, mac,
    mac_json, ndp, ndp_json, vlan_brief, vlan_brief_json,
};
pub use pfc_config::{pfc_asymmetric, pfc_asymmetric_json, pfc_priority, pfc_priority_json};
pub use pfcwd::{pfcwd_any_stormed, pfcwd_config, pfcwd_config_json, pfcwd_stats, pfcwd_stats_json};
pub use portstat::{
    interfaces_counters_detailed, interfaces_counters_detailed_json, interfaces_counters_errors,
    interfaces_counters_errors_json, interfaces_counters_rates, interfaces_counters_rates_json,
};
pub use running::{running_all, running_table};
pub use status::{interfaces_status, interfaces_status_json, parse_interface_filter};
pub use watermarks::{
    PgWatermarkKind, QueueWatermarkKind, buffer_pool_watermark, buffer_pool_watermark_json,
    headroom_pool_watermark, headroom_pool_watermark_json, pg_watermark, pg_watermark_json, queue_watermark,
    queue_watermark_json, queue_watermark_unicast, queue_watermark_unicast_json, watermarks_json,
};

#[cfg(test)]
mod tests;
