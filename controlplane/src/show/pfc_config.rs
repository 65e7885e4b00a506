//! `show pfc priority [PORT]` and `show pfc asymmetric [PORT]` (sonic-utilities `pfc/main.py`): the
//! lossless priorities of each port (`PORT_QOS_MAP|<port>|pfc_enable`) and its asymmetric-PFC setting
//! (`PORT|<port>|pfc_asym`), from the running configuration. Both print an empty line first (where a
//! multi-ASIC switch names its namespace), tabulate's default layout, and an empty line after.
//! A `PORT_QOS_MAP` key that joins several ports with commas (`Ethernet0,Ethernet4`) counts for each.

use super::table::{Cell, Table, natural_cmp};
use lossless_dataplane::model::config::ConfigDb;
use serde_json::Value;

fn sorted(mut rows: Vec<(String, String)>) -> Vec<(String, String)> {
    rows.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    rows
}

/// (port, pfc_enable) for every port `PORT_QOS_MAP` names.
fn priorities(db: &ConfigDb) -> Vec<(String, String)> {
    let rows = db.tables.get("PORT_QOS_MAP").into_iter().flatten().flat_map(|(key, fields)| {
        let enable = fields.get("pfc_enable").cloned().unwrap_or_else(|| "N/A".into());
        key.split(',').map(move |port| (port.trim().to_owned(), enable.clone()))
    });
    sorted(rows.collect())
}

fn two_columns(headers: [&str; 2], rows: &[(String, String)]) -> Table {
    let mut table = Table::new(headers);
    for (port, value) in rows {
        table.push(vec![Cell::text(port), Cell::text(value)]);
    }
    table
}

/// `show pfc priority [PORT]`; for a port `PORT_QOS_MAP` does not name, SONiC's one line
/// `Cannot find interface <port>`.
pub fn pfc_priority(db: &ConfigDb, port: Option<&str>) -> String {
    let rows: Vec<(String, String)> =
        priorities(db).into_iter().filter(|r| port.is_none_or(|p| r.0 == p)).collect();
    match port {
        Some(p) if rows.is_empty() => format!("Cannot find interface {p}\n"),
        _ => format!(
            "\n{}\n\n",
            two_columns(["Interface", "Lossless priorities"], &rows).render_default_align()
        ),
    }
}

/// `show pfc priority --json`: `{"Ethernet0": "3,4"}`.
pub fn pfc_priority_json(db: &ConfigDb, port: Option<&str>) -> Value {
    let rows = priorities(db).into_iter().filter(|r| port.is_none_or(|p| r.0 == p));
    Value::Object(rows.map(|(k, v)| (k, Value::String(v))).collect())
}

/// (port, pfc_asym) for every `Ethernet` port, `N/A` where unset (pfc/main.py).
fn asymmetric(db: &ConfigDb, port: Option<&str>) -> Vec<(String, String)> {
    let rows = db.tables.get("PORT").into_iter().flatten().filter(|(k, _)| k.starts_with("Ethernet"));
    let rows = rows.filter(|(k, _)| port.is_none_or(|p| k.as_str() == p));
    sorted(
        rows.map(|(k, f)| (k.clone(), f.get("pfc_asym").cloned().unwrap_or_else(|| "N/A".into()))).collect(),
    )
}

/// `show pfc asymmetric [PORT]` (an unknown port gives the header alone, as in SONiC).
pub fn pfc_asymmetric(db: &ConfigDb, port: Option<&str>) -> String {
    format!(
        "\n{}\n\n",
        two_columns(["Interface", "Asymmetric"], &asymmetric(db, port)).render_default_align()
    )
}

/// `show pfc asymmetric --json`: `{"Ethernet0": "off"}`.
pub fn pfc_asymmetric_json(db: &ConfigDb, port: Option<&str>) -> Value {
    Value::Object(asymmetric(db, port).into_iter().map(|(k, v)| (k, Value::String(v))).collect())
}
