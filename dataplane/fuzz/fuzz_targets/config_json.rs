//! config_db.json text → the CONFIG_DB reader (`ConfigDb::from_yaml_str`, which reads JSON as YAML) →
//! validation and compilation. Never a panic, never slow (deep nesting is refused at once); and a
//! config_db.json that serde_json reads as tables of keys of string fields (SONiC's shape) is read the same
//! by the CONFIG_DB reader.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lossless_core::model::Switch;
use lossless_core::model::config::{ConfigDb, MAX_NESTING_DEPTH};
use lossless_core::time::Instant;
use serde_json::Value;
use std::collections::BTreeMap;

/// What serde_json makes of SONiC-shaped JSON: tables → keys → fields → string values.
type Tables = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let read = ConfigDb::from_yaml_str(text);
    if let Ok(Value::Object(_)) = serde_json::from_str::<Value>(text)
        && let Ok(tables) = serde_json::from_str::<Tables>(text)
    {
        match &read {
            Ok(db) => assert_eq!(db.tables, tables, "JSON and CONFIG_DB readers disagree"),
            // YAML refuses what JSON lets pass: duplicate keys (JSON keeps the last), characters YAML does not
            // allow in a stream (DEL, C1 controls: JSON strings may hold them raw; the compiler refuses them
            // in names and values anyway), and the reader's nesting limit cannot be reached by a 3-level
            // shape. Anything else is a disagreement.
            Err(e) => assert!(
                e.contains("duplicate")
                    || e.contains("control characters are not allowed")
                    || e.contains(&MAX_NESTING_DEPTH.to_string()),
                "serde_json reads it, the CONFIG_DB reader refuses it: {e}"
            ),
        }
    }
    if let Ok(db) = read {
        let _ = Switch::prepare(&db).map(|p| Switch::new().install(p, Instant::ZERO));
    }
});
