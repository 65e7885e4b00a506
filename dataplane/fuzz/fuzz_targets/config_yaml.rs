//! Configuration text (YAML, of which JSON is a subset) → `ConfigDb::from_yaml_str` → validation and
//! compilation (`Switch::prepare`) → install on a fresh switch and on one running a shipped profile.
//! Never a panic; deep nesting is refused at once (`check_config_text`), so no input is slow; whatever
//! parses survives a YAML round trip unchanged (what `swctl import` relies on).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lossless_core::model::Switch;
use lossless_core::model::config::ConfigDb;
use lossless_core::time::Instant;
use std::sync::OnceLock;

const TH: &str = include_str!("../../../configs/profiles/th_balanced.yaml");

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(db) = ConfigDb::from_yaml_str(text) else { return };
    // YAML → CONFIG_DB → YAML → CONFIG_DB is stable (unless the serialized text trips the nesting guard:
    // a value such as `a [[[[…` is emitted as a plain scalar whose brackets the guard counts).
    let yaml = serde_yaml::to_string(&db).expect("a ConfigDb serializes");
    match ConfigDb::from_yaml_str(&yaml) {
        Ok(back) => assert_eq!(back, db, "round trip through\n{yaml}"),
        Err(e) => assert!(e.contains("levels"), "re-reading\n{yaml}\nfailed: {e}"),
    }
    let Ok(prepared) = Switch::prepare(&db) else { return };
    let mut fresh = Switch::new();
    let _ = fresh.install(prepared, Instant::ZERO);
    // Reconfiguring a running switch (ports kept, changed or removed) must not panic either.
    let mut running = Switch::new();
    static TH_DB: OnceLock<ConfigDb> = OnceLock::new();
    running.apply(TH_DB.get_or_init(|| ConfigDb::from_yaml_str(TH).unwrap()), Instant::ZERO).unwrap();
    let _ = running.apply(&db, Instant::from_ns(1_000));
});
