//! `show runningconfiguration all|ports [PORT]|interfaces [INTERFACE]` (sonic-utilities `show/main.py`):
//! the running configuration as JSON with four-space indents, as `json.dumps(indent=4)` and
//! `sonic-cfggen -d --var-json TABLE [--key KEY]` print it. `all` is the whole config_db.json (without
//! SONiC's `bgpraw`: the model runs no BGP); `ports` and `interfaces` are the `PORT` and `INTERFACE` tables,
//! or one key's fields.

use lossless_dataplane::model::config::ConfigDb;
use serde::Serialize;

/// JSON with Python's `indent=4`.
fn four_space_json(value: &impl Serialize) -> String {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(
        &mut out,
        serde_json::ser::PrettyFormatter::with_indent(b"    "),
    );
    // Serializing maps of strings into memory cannot fail.
    value.serialize(&mut serializer).expect("string maps serialize");
    String::from_utf8(out).expect("serde_json writes UTF-8") + "\n"
}

/// `show runningconfiguration all`.
pub fn running_all(db: &ConfigDb) -> String {
    four_space_json(&db.tables)
}

/// `show runningconfiguration ports|interfaces [KEY]`: the table (`{}` when the configuration has none),
/// or the fields of `key`; `Err` names a key the table does not have.
pub fn running_table(db: &ConfigDb, table: &str, key: Option<&str>) -> Result<String, String> {
    let rows = db.tables.get(table).cloned().unwrap_or_default();
    match key {
        None => Ok(four_space_json(&rows)),
        Some(k) => rows
            .get(k)
            .map(four_space_json)
            .ok_or_else(|| format!("{table}|{k} is not in the running configuration")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_and_keys_as_sonic_cfggen_prints_them() {
        let mut db = ConfigDb::default();
        db.set("PORT", "Ethernet0", "speed", "100000").set("PORT", "Ethernet0", "mtu", "9100");
        db.set("PORT", "Ethernet4", "speed", "25000");
        db.touch("INTERFACE", "Ethernet0").touch("INTERFACE", "Ethernet0|10.0.0.0/31");
        // json.dumps(..., indent=4) of the PORT entry: keys sorted, four spaces, no trailing spaces.
        assert_eq!(
            running_table(&db, "PORT", Some("Ethernet0")).unwrap(),
            "{\n    \"mtu\": \"9100\",\n    \"speed\": \"100000\"\n}\n"
        );
        let ports: serde_json::Value =
            serde_json::from_str(&running_table(&db, "PORT", None).unwrap()).unwrap();
        assert_eq!(ports["Ethernet4"]["speed"], "25000");
        let interfaces = running_table(&db, "INTERFACE", None).unwrap();
        assert!(interfaces.contains("\n    \"Ethernet0|10.0.0.0/31\": {}"), "{interfaces}");
        assert_eq!(running_table(&db, "ACL_RULE", None).unwrap(), "{}\n");
        let e = running_table(&db, "PORT", Some("Ethernet99")).unwrap_err();
        assert_eq!(e, "PORT|Ethernet99 is not in the running configuration");
        let all: serde_json::Value = serde_json::from_str(&running_all(&db)).unwrap();
        assert_eq!(all["PORT"]["Ethernet0"]["mtu"], "9100");
        assert!(running_all(&db).starts_with("{\n    \"INTERFACE\": {\n        \"Ethernet0\": {},"));
    }
}
