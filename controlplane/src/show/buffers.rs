//! `show buffer configuration` (= `mmuconfig -l`, `show mmu`) and `show buffer information`
//! (`buffershow -l`), sonic-utilities `scripts/mmuconfig`: each pool and profile as a small two-column
//! table under `Pool: <name>` / `Profile: <name>`, preceded by the lossless traffic pattern
//! (`DEFAULT_LOSSLESS_BUFFER_PARAMETER`) when the configuration has one.
//!
//! `configuration` prints the running configuration's fields as written (in field-name order; SONiC
//! prints them in Redis's order). `information` prints what the switch model runs with, from the compiled
//! configuration (SONiC reads STATE_DB, where the buffer manager has filled in computed pool sizes):
//! a pool's `mode`, `size`, `type` (and `xoff`, the shared headroom pool, when set), a profile's
//! threshold, `pool`, `xon`/`xoff` for a headroom profile, and `size`. `--json` is
//! `{"pools": {name: {field: value}}, "profiles": {...}}` (mmuconfig has no JSON).

use super::table::{Cell, Table};
use lossless_dataplane::model::config::{ConfigDb, PoolDirection, SwitchConfig, Threshold, ThresholdMode};
use serde_json::{Map, Value};

type Fields = Vec<(String, String)>;
/// Named entries (pools or profiles), each with its fields.
type Entries = Vec<(String, Fields)>;

fn section(out: &mut String, title: &str, fields: &Fields) {
    let mut table = Table::new(["field", "value"]);
    for (f, v) in fields {
        table.push(vec![Cell::text(f), Cell::text(v)]);
    }
    out.push_str(&format!("{title}\n{}\n\n", table.render_headerless()));
}

fn render(pattern: Option<Fields>, pools: &[(String, Fields)], profiles: &[(String, Fields)]) -> String {
    let mut out = String::new();
    if let Some(p) = pattern {
        section(&mut out, "Lossless traffic pattern:", &p);
    }
    if pools.is_empty() {
        out.push_str("No buffer pool information available\n");
    }
    for (name, fields) in pools {
        section(&mut out, &format!("Pool: {name}"), fields);
    }
    if profiles.is_empty() {
        out.push_str("No buffer profile information available\n");
    }
    for (name, fields) in profiles {
        section(&mut out, &format!("Profile: {name}"), fields);
    }
    out
}

fn json(pools: &[(String, Fields)], profiles: &[(String, Fields)]) -> Value {
    let object = |items: &[(String, Fields)]| -> Value {
        let entries = items.iter().map(|(name, fields)| {
            let fields: Map<String, Value> =
                fields.iter().map(|(f, v)| (f.clone(), Value::String(v.clone()))).collect();
            (name.clone(), Value::Object(fields))
        });
        Value::Object(entries.collect())
    };
    let mut out = Map::new();
    out.insert("pools".into(), object(pools));
    out.insert("profiles".into(), object(profiles));
    Value::Object(out)
}

fn table_entries(db: &ConfigDb, table: &str) -> Vec<(String, Fields)> {
    db.tables
        .get(table)
        .into_iter()
        .flatten()
        .map(|(k, f)| (k.clone(), f.iter().map(|(a, b)| (a.clone(), b.clone())).collect()))
        .collect()
}

/// `show buffer configuration` / `mmuconfig -l`: the buffer tables of the running configuration.
pub fn buffer_configuration(db: &ConfigDb) -> String {
    let pattern = table_entries(db, "DEFAULT_LOSSLESS_BUFFER_PARAMETER").into_iter().next().map(|(_, f)| f);
    render(pattern, &table_entries(db, "BUFFER_POOL"), &table_entries(db, "BUFFER_PROFILE"))
}

/// `show buffer configuration --json`.
pub fn buffer_configuration_json(db: &ConfigDb) -> Value {
    json(&table_entries(db, "BUFFER_POOL"), &table_entries(db, "BUFFER_PROFILE"))
}

fn effective(config: &SwitchConfig) -> (Entries, Entries) {
    let pools = config
        .pools
        .iter()
        .map(|p| {
            let mode = match p.mode {
                ThresholdMode::Dynamic => "dynamic",
                ThresholdMode::Static => "static",
            };
            let kind = match p.direction {
                PoolDirection::Ingress => "ingress",
                PoolDirection::Egress => "egress",
            };
            let mut fields: Fields = vec![
                ("mode".into(), mode.into()),
                ("size".into(), p.size_bytes.to_string()),
                ("type".into(), kind.into()),
            ];
            if p.xoff_bytes > 0 {
                fields.push(("xoff".into(), p.xoff_bytes.to_string()));
            }
            (p.name.clone(), fields)
        })
        .collect();
    let profiles = config
        .profiles
        .iter()
        .map(|p| {
            let mut fields: Fields = vec![match p.threshold {
                Threshold::Dynamic(n) => ("dynamic_th".into(), n.to_string()),
                Threshold::Static(bytes) => ("static_th".into(), bytes.to_string()),
            }];
            let pool = config.pools.get(p.pool).map_or_else(String::new, |pool| pool.name.clone());
            fields.push(("pool".into(), pool));
            if p.xon_bytes > 0 || p.xoff_bytes > 0 {
                fields.push(("xon".into(), p.xon_bytes.to_string()));
                fields.push(("xoff".into(), p.xoff_bytes.to_string()));
            }
            fields.push(("size".into(), p.size_bytes.to_string()));
            (p.name.clone(), fields)
        })
        .collect();
    (pools, profiles)
}

/// `show buffer information`: the pools and profiles the switch model runs with.
pub fn buffer_information(config: &SwitchConfig) -> String {
    let (pools, profiles) = effective(config);
    render(None, &pools, &profiles)
}

/// `show buffer information --json`.
pub fn buffer_information_json(config: &SwitchConfig) -> Value {
    let (pools, profiles) = effective(config);
    json(&pools, &profiles)
}
