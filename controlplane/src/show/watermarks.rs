//! Watermark tables (watermarkstat): `show priority-group watermark shared|headroom`,
//! `show queue watermark unicast|multicast|all`, `show buffer_pool watermark`, `show headroom-pool watermark`. Values are
//! bytes, printed as plain integers as watermarkstat does. Clearing a watermark happens in the switch
//! (`GetWatermarksRequest.clear`), not by snapshot.

use super::table::{Cell, Table, natural_cmp};
use lossless_proto::v1::{GetWatermarksResponse, PortWatermarks};
use serde_json::{Map, Value};

/// Which PG watermark: SAI's `SHARED_WATERMARK_BYTES` or `XOFF_ROOM_WATERMARK_BYTES`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PgWatermarkKind {
    Shared,
    Headroom,
}

const INDICES: usize = 8;

fn per_port_table(w: &GetWatermarksResponse, prefix: &str, values: fn(&PortWatermarks) -> &[u64]) -> Table {
    let mut table =
        Table::new(std::iter::once("Port".to_owned()).chain((0..INDICES).map(|i| format!("{prefix}{i}"))));
    let mut ports: Vec<&PortWatermarks> = w.ports.iter().collect();
    ports.sort_by(|a, b| natural_cmp(&a.name, &b.name));
    for p in ports {
        let mut row = vec![Cell::text(&p.name)];
        row.extend((0..INDICES).map(|i| values(p).get(i).map_or_else(Cell::na, |b| Cell::plain(*b))));
        table.push(row);
    }
    table
}

fn pg_table(w: &GetWatermarksResponse, kind: PgWatermarkKind) -> Table {
    match kind {
        PgWatermarkKind::Shared => per_port_table(w, "PG", |p| &p.pg_shared_bytes),
        PgWatermarkKind::Headroom => per_port_table(w, "PG", |p| &p.pg_headroom_bytes),
    }
}

/// `show priority-group watermark shared|headroom`.
pub fn pg_watermark(w: &GetWatermarksResponse, kind: PgWatermarkKind) -> String {
    let title = match kind {
        PgWatermarkKind::Shared => "Ingress shared pool occupancy per PG:",
        PgWatermarkKind::Headroom => "Ingress headroom per PG:",
    };
    format!("{title}\n{}\n", pg_table(w, kind).render())
}

/// `show priority-group watermark ... --json`: `[{"Port": "Ethernet0", "PG0": 100, ...}]`.
pub fn pg_watermark_json(w: &GetWatermarksResponse, kind: PgWatermarkKind) -> Value {
    pg_table(w, kind).objects()
}

/// Which queue watermark table: watermarkstat's `q_shared_uni`, `q_shared_multi` or `q_shared_all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueWatermarkKind {
    Unicast,
    Multicast,
    All,
}

/// What watermarkstat prints for `q_shared_multi` on a switch without multicast queues (and exits 0).
const NO_MULTICAST_QUEUES: &str = "Object map from the COUNTERS_DB is empty because the multicast queues are not configured in the CONFIG_DB!";

/// `show queue watermark unicast|multicast|all`. Every queue of the model is unicast, so `all` is the
/// unicast table under watermarkstat's `ALL<i>` headers and `multicast` is watermarkstat's message for a
/// switch with no multicast queues.
pub fn queue_watermark(w: &GetWatermarksResponse, kind: QueueWatermarkKind) -> String {
    match kind {
        QueueWatermarkKind::Unicast => queue_watermark_unicast(w),
        QueueWatermarkKind::Multicast => format!("{NO_MULTICAST_QUEUES}\n"),
        QueueWatermarkKind::All => {
            let table = per_port_table(w, "ALL", |p| &p.queue_shared_bytes);
            format!("Egress shared pool occupancy per all queues:\n{}\n", table.render())
        }
    }
}

/// `show queue watermark unicast|multicast|all --json`: watermarkstat's list of rows; `multicast` is an
/// empty list (watermarkstat prints its message even then).
pub fn queue_watermark_json(w: &GetWatermarksResponse, kind: QueueWatermarkKind) -> Value {
    match kind {
        QueueWatermarkKind::Unicast => queue_watermark_unicast_json(w),
        QueueWatermarkKind::Multicast => Value::Array(Vec::new()),
        QueueWatermarkKind::All => per_port_table(w, "ALL", |p| &p.queue_shared_bytes).objects(),
    }
}

/// `show queue watermark unicast`.
pub fn queue_watermark_unicast(w: &GetWatermarksResponse) -> String {
    let table = per_port_table(w, "UC", |p| &p.queue_shared_bytes);
    format!("Egress shared pool occupancy per unicast queue:\n{}\n", table.render())
}

/// `show queue watermark unicast --json`: `[{"Port": "Ethernet0", "UC0": 2057328, ...}]`.
pub fn queue_watermark_unicast_json(w: &GetWatermarksResponse) -> Value {
    per_port_table(w, "UC", |p| &p.queue_shared_bytes).objects()
}

/// Pools in `natsorted` order; the headroom table lists only pools named `*ingress_lossless*`, as
/// watermarkstat does (the shared headroom pool lives in the ingress lossless pool).
fn pool_rows(w: &GetWatermarksResponse, headroom: bool) -> Vec<(String, u64)> {
    let mut pools: Vec<(String, u64)> = w
        .pools
        .iter()
        .filter(|p| !headroom || p.name.contains("ingress_lossless"))
        .map(|p| (p.name.clone(), if headroom { p.headroom_bytes } else { p.shared_bytes }))
        .collect();
    pools.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    pools
}

fn pool_table(w: &GetWatermarksResponse, headroom: bool) -> Table {
    let mut table = Table::new(["Pool", "Bytes"]);
    for (name, bytes) in pool_rows(w, headroom) {
        table.push(vec![Cell::text(name), Cell::plain(bytes)]);
    }
    table
}

/// watermarkstat's pool `--json`: `[{"ingress_lossless_pool": 3000}]`.
fn pool_json(w: &GetWatermarksResponse, headroom: bool) -> Value {
    let rows = pool_rows(w, headroom).into_iter().map(|(name, bytes)| {
        let mut one = Map::new();
        one.insert(name, bytes.into());
        Value::Object(one)
    });
    Value::Array(rows.collect())
}

/// `show buffer_pool watermark`: the shared occupancy high-water mark of each pool.
pub fn buffer_pool_watermark(w: &GetWatermarksResponse) -> String {
    format!("Shared pool maximum occupancy:\n{}\n", pool_table(w, false).render())
}

/// `show buffer_pool watermark --json`.
pub fn buffer_pool_watermark_json(w: &GetWatermarksResponse) -> Value {
    pool_json(w, false)
}

/// `show headroom-pool watermark`: the shared headroom pool's high-water mark.
pub fn headroom_pool_watermark(w: &GetWatermarksResponse) -> String {
    format!("Headroom pool maximum occupancy:\n{}\n", pool_table(w, true).render())
}

/// `show headroom-pool watermark --json`.
pub fn headroom_pool_watermark_json(w: &GetWatermarksResponse) -> Value {
    pool_json(w, true)
}

/// Every watermark table at once, for `--json` of any watermark command: `{"pg_shared": [...],
/// "pg_headroom": [...], "queue_unicast": [...], "buffer_pool": [...], "headroom_pool": [...]}` (watermarkstat's
/// `-t` names, each in that table's `--json` shape).
pub fn watermarks_json(w: &GetWatermarksResponse) -> Value {
    let mut out = Map::new();
    out.insert("pg_shared".into(), pg_watermark_json(w, PgWatermarkKind::Shared));
    out.insert("pg_headroom".into(), pg_watermark_json(w, PgWatermarkKind::Headroom));
    out.insert("queue_unicast".into(), queue_watermark_unicast_json(w));
    out.insert("buffer_pool".into(), buffer_pool_watermark_json(w));
    out.insert("headroom_pool".into(), headroom_pool_watermark_json(w));
    Value::Object(out)
}
