//! PTF-style packet tests for Lossless: sonic-mgmt's QoS and PFC-watchdog procedures, with real frames on
//! a real `switchd` in network namespaces.
//!
//! - [`harness`]: the fixture ([`Ptf`]: switch + test ports + gRPC client) and PTF's verbs;
//! - [`packet`]: PTF's frame builders and masks;
//! - [`qos`]: a profile's classification maps, schedulers, WRED and buffer profiles (its CONFIG_DB tables);
//! - [`published`]: sonic-mgmt's published figures for the shipped profiles (`published.json`), what the
//!   buffer tests expect;
//! - [`buffer`]: what the buffer tests share (test flows, counters, PFC frames, holds, watermarks);
//! - [`report`]: the sonic-mgmt-like summary (`cargo run -p lossless-ptf --bin ptf-summary`).
//!
//! The catalog itself is in `tests/`: one file per sonic-mgmt area, each test run on the shipped
//! vendor-like profiles ([`profiles`]).

#![forbid(unsafe_code)]

pub mod buffer;
pub mod harness;
pub mod packet;
pub mod published;
pub mod qos;
pub mod report;

pub use harness::Ptf;
use lossless_dataplane::model::config::ConfigDb;

/// The shipped vendor-like profiles the catalog runs on: (name, CONFIG_DB).
pub fn profiles() -> Vec<(&'static str, ConfigDb)> {
    [
        ("th_balanced", include_str!("../../configs/profiles/th_balanced.yaml")),
        ("sn2700", include_str!("../../configs/profiles/sn2700.yaml")),
    ]
    .into_iter()
    .map(|(name, text)| (name, ConfigDb::from_yaml_str(text).unwrap_or_else(|e| panic!("{name}: {e}"))))
    .collect()
}

/// Profiles some tests run on beside [`profiles`]: `td3` (Arista-7050CX3-32S-C32's t1 buffers on all 32
/// ports, for sonic-mgmt's published Trident 3 trigger points).
pub const TD3: &str = include_str!("../../configs/profiles/td3.yaml");

/// One shipped profile by name.
pub fn profile(name: &str) -> ConfigDb {
    if name == "td3" {
        return ConfigDb::from_yaml_str(TD3).unwrap_or_else(|e| panic!("td3: {e}"));
    }
    profiles()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, db)| db)
        .unwrap_or_else(|| panic!("no profile {name}"))
}

/// A test on each catalog profile: `on_profiles!(module => function(args))` makes `module::th_balanced` and
/// `module::sn2700`, each calling `function(profile, args...)`.
#[macro_export]
macro_rules! on_profiles {
    ($name:ident => $f:ident($($arg:expr),*)) => {
        mod $name {
            #[test]
            fn th_balanced() {
                super::$f("th_balanced" $(, $arg)*);
            }
            #[test]
            fn sn2700() {
                super::$f("sn2700" $(, $arg)*);
            }
        }
    };
}
