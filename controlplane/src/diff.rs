//! What a configuration push changes: table/key/field differences between two CONFIG_DB contents, shown
//! before `swctl apply` pushes (and instead of pushing, with `--dry-run`).

use lossless_dataplane::model::config::ConfigDb;
use std::fmt;

/// One difference, located as SONiC locates things.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// A whole key appears (with its fields).
    AddedKey {
        table: String,
        key: String,
    },
    RemovedKey {
        table: String,
        key: String,
    },
    AddedField {
        table: String,
        key: String,
        field: String,
        value: String,
    },
    RemovedField {
        table: String,
        key: String,
        field: String,
        value: String,
    },
    ChangedField {
        table: String,
        key: String,
        field: String,
        from: String,
        to: String,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::AddedKey { table, key } => write!(f, "+ {table}|{key}"),
            Change::RemovedKey { table, key } => write!(f, "- {table}|{key}"),
            Change::AddedField { table, key, field, value } => write!(f, "+ {table}|{key}|{field}: {value}"),
            Change::RemovedField { table, key, field, value } => {
                write!(f, "- {table}|{key}|{field}: {value}")
            }
            Change::ChangedField { table, key, field, from, to } => {
                write!(f, "~ {table}|{key}|{field}: {from} -> {to}")
            }
        }
    }
}

/// Every difference from `old` to `new`, in table/key/field order.
pub fn diff(old: &ConfigDb, new: &ConfigDb) -> Vec<Change> {
    let empty = Default::default();
    let mut out = Vec::new();
    let tables: std::collections::BTreeSet<&String> = old.tables.keys().chain(new.tables.keys()).collect();
    for table in tables {
        let (o, n) = (old.tables.get(table).unwrap_or(&empty), new.tables.get(table).unwrap_or(&empty));
        let keys: std::collections::BTreeSet<&String> = o.keys().chain(n.keys()).collect();
        for key in keys {
            let (t, k) = (table.clone(), key.clone());
            match (o.get(key), n.get(key)) {
                (None, Some(fields)) => {
                    out.push(Change::AddedKey { table: t.clone(), key: k.clone() });
                    for (field, value) in fields {
                        out.push(Change::AddedField {
                            table: t.clone(),
                            key: k.clone(),
                            field: field.clone(),
                            value: value.clone(),
                        });
                    }
                }
                (Some(_), None) => out.push(Change::RemovedKey { table: t, key: k }),
                (Some(of), Some(nf)) => {
                    let fields: std::collections::BTreeSet<&String> = of.keys().chain(nf.keys()).collect();
                    for field in fields {
                        let (t, k, f) = (t.clone(), k.clone(), field.clone());
                        match (of.get(field), nf.get(field)) {
                            (None, Some(v)) => {
                                out.push(Change::AddedField { table: t, key: k, field: f, value: v.clone() })
                            }
                            (Some(v), None) => out.push(Change::RemovedField {
                                table: t,
                                key: k,
                                field: f,
                                value: v.clone(),
                            }),
                            (Some(a), Some(b)) if a != b => out.push(Change::ChangedField {
                                table: t,
                                key: k,
                                field: f,
                                from: a.clone(),
                                to: b.clone(),
                            }),
                            _ => {}
                        }
                    }
                }
                (None, None) => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_keys_and_fields_added_removed_and_changed() {
        let mut old = ConfigDb::default();
        old.set("PORT", "Ethernet0", "speed", "100000").set("PORT", "Ethernet0", "mtu", "9100");
        old.set("SCHEDULER", "scheduler.1", "weight", "15");
        let mut new = old.clone();
        new.set("SCHEDULER", "scheduler.1", "weight", "30");
        new.tables.get_mut("PORT").unwrap().get_mut("Ethernet0").unwrap().remove("mtu");
        new.set("PORT", "Ethernet4", "speed", "25000");
        new.tables.remove("SCHEDULER");
        new.set("SCHEDULER", "scheduler.1", "weight", "30");
        let text: Vec<String> = diff(&old, &new).iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            vec![
                "- PORT|Ethernet0|mtu: 9100",
                "+ PORT|Ethernet4",
                "+ PORT|Ethernet4|speed: 25000",
                "~ SCHEDULER|scheduler.1|weight: 15 -> 30",
            ]
        );
        assert!(diff(&old, &old).is_empty());
    }
}
