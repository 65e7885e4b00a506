//! Lossless PG headroom: the bytes a lossless priority group must still absorb after it decides to send
//! XOFF, by the methods an operator meets, and SONiC's generation of `pg_lossless_*` profiles from them.
//! `docs/headroom.md` explains each method and where its figures come from.
//!
//! - [`LookupTable`]: the traditional buffer model's `pg_profile_lookup.ini`, one row per (speed, cable
//!   length). The tables of many SONiC SKUs ship in `configs/headroom/` ([`skus`]), each naming the
//!   hwskus that use it.
//! - [`sonic_dynamic`]: the dynamic buffer model's formula as sonic-swss
//!   `cfgmgr/buffer_headroom_mellanox.lua` computes it on master, with the ASIC_TABLE of sonic-vs and of NVIDIA Spectrum-1…6 ([`Asic`]), and
//!   the older revisions of that plugin ([`FormulaOptions`]); [`shared_headroom_pool_size`] from
//!   `buffer_pool_mellanox.lua`.
//! - [`ieee_worst_case`]: the IEEE 802.1Qbb / 802.3 worst case, and [`ucloud`], UCloud's cell-counting form
//!   of the same idea.
//! - [`ModelRequest::select`]: which of them applies to a configuration (its DEVICE_METADATA hwsku,
//!   platform and buffer model), and why.
//! - [`generate_lossless_profiles`]: what SONiC's buffer manager does with a `BUFFER_PG` whose profile is
//!   `NULL`; [`check_headroom`]: configured lossless profiles below the calculator.
//!
//! All of this is configuration-time arithmetic: it uses floats where SONiC's Lua does, and every result is
//! whole bytes. "KB" in SONiC's ASIC_TABLE and in its 1 KB rounding is 1024 bytes.

use lossless_dataplane::model::config::ConfigDb;
use serde::Serialize;
use serde::ser::SerializeSeq;
use std::collections::BTreeMap;
use std::fmt;

use crate::show::thousands;

pub(crate) mod check;
mod generate;
mod ieee;
mod lookup;
mod mellanox;
mod select;
pub mod skus;

pub use check::{Shortfall, check_headroom, headroom_shortfalls};
pub use generate::generate_lossless_profiles;
pub use ieee::{IeeeDelays, ieee_worst_case, ucloud};
pub use lookup::{LookupError, LookupRow, LookupTable};
pub use mellanox::{
    Asic, AsicParams, FormulaOptions, PRIVATE_HEADROOM_PER_PORT_BYTES, SHARED_HEADROOM_POOL_FALLBACK_BYTES,
    TrafficPattern, pause_quanta, shared_headroom_pool_size, shp_enabled_in_config, sonic_dynamic,
};
pub use select::{ModelChoice, ModelRequest, Report, Selection};

/// SONiC's default port MTU (`PORT|mtu` when absent); dynamic profiles for other MTUs get `_mtu<mtu>`.
pub const DEFAULT_PORT_MTU: u32 = 9100;
/// Cable length of a port without a `CABLE_LENGTH` entry. SONiC's buffer manager waits for one instead;
/// 5 m is what `buffers_config.j2` writes for internal links and most SKUs' `default_cable`.
pub const DEFAULT_CABLE_LENGTH_M: u32 = 5;
/// The pool every generated lossless profile uses (SONiC's `INGRESS_LOSSLESS_PG_POOL_NAME`).
pub const INGRESS_LOSSLESS_POOL: &str = "ingress_lossless_pool";

/// SONiC's KB (ASIC_TABLE fields, the 1 KB rounding of xon/xoff/size).
const KB: f64 = 1024.0;

// ------------------------------------------------------------------------------------------------------
// Inputs and outputs

/// One port's inputs: `PORT|<port>|speed`, `CABLE_LENGTH|AZURE|<port>`, `PORT|<port>|mtu` and
/// `PORT|<port>|lanes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PortParams {
    /// Mb/s, as in `PORT|speed` (`100000` = 100G).
    pub speed_mbps: u32,
    /// Whole metres: SONiC writes cable lengths as `"<n>m"` and puts the number in profile names
    /// (`pg_lossless_100000_40m_profile`), so a fraction of a metre has nowhere to go.
    pub cable_m: u32,
    /// The port MTU in bytes (`PORT|mtu`, SONiC default 9100): the largest frame that can be in flight.
    pub mtu: u32,
    /// Serdes lanes (the count of `PORT|lanes`); 0 when unknown. Only 8 changes the Mellanox formula.
    pub lanes: u32,
}

impl PortParams {
    pub fn new(speed_mbps: u32, cable_m: u32, mtu: u32) -> PortParams {
        PortParams { speed_mbps, cable_m, mtu, lanes: 0 }
    }

    pub fn with_lanes(self, lanes: u32) -> PortParams {
        PortParams { lanes, ..self }
    }
}

/// A computed headroom, in bytes: the fields of a lossless `BUFFER_PROFILE`, and how they were reached.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Headroom {
    /// `xon`: the PG sends XON again when its usage falls to this.
    pub xon: u64,
    /// `xoff`: what the PG may absorb after XOFF.
    pub xoff: u64,
    /// `size`: the PG's reserved buffer.
    pub size: u64,
    /// A lookup row's `threshold` (the profile's `<pool mode>_th`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<i64>,
    /// A lookup row's `xon_offset`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xon_offset: Option<u64>,
    /// The terms of the calculation, each in bytes (fractions rounded to the nearest byte), for printing;
    /// in JSON a list of `{"term": …, "bytes": …}`.
    #[serde(serialize_with = "serialize_terms")]
    pub terms: Vec<(String, u64)>,
}

fn serialize_terms<S: serde::Serializer>(terms: &[(String, u64)], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Term<'a> {
        term: &'a str,
        bytes: u64,
    }
    let mut seq = s.serialize_seq(Some(terms.len()))?;
    for (term, bytes) in terms {
        seq.serialize_element(&Term { term, bytes: *bytes })?;
    }
    seq.end()
}

impl fmt::Display for Headroom {
    /// `xon`, `xoff`, `size` (and a lookup row's threshold and `xon_offset`), then each term indented, one
    /// per line, in bytes with thousands separators.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = |n: u64| format!("{} bytes", thousands(n));
        let mut lines: Vec<(String, String)> = [("xon", self.xon), ("xoff", self.xoff), ("size", self.size)]
            .into_iter()
            .map(|(label, n)| (label.to_owned(), bytes(n)))
            .collect();
        if let Some(th) = self.threshold {
            lines.push(("threshold".to_owned(), th.to_string()));
        }
        if let Some(offset) = self.xon_offset {
            lines.push(("xon_offset".to_owned(), bytes(offset)));
        }
        lines.extend(self.terms.iter().map(|(label, n)| (format!("  {label}"), bytes(*n))));
        let label_width = lines.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0);
        let value_width = lines.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        for (label, value) in lines {
            writeln!(f, "{label:<label_width$}  {value:>value_width$}")?;
        }
        Ok(())
    }
}

fn round_up_to_kb(bytes: f64) -> u64 {
    (bytes / KB).ceil() as u64 * KB as u64
}

// ------------------------------------------------------------------------------------------------------
// Models

/// How a port's headroom is computed.
#[derive(Debug, Clone, PartialEq)]
pub enum HeadroomModel {
    /// The traditional model: a `pg_profile_lookup.ini` row per (speed, cable).
    Lookup(LookupTable),
    /// The dynamic formula: ASIC, `LOSSLESS_TRAFFIC_PATTERN`, and whether the shared headroom pool is on
    /// (see [`shp_enabled_in_config`]).
    Dynamic(AsicParams, TrafficPattern, bool),
    /// [`ieee_worst_case`] with both ends at the port MTU and [`IeeeDelays::for_speed`].
    Ieee,
}

impl HeadroomModel {
    /// One port's headroom, or why there is none (an unknown speed, a missing lookup row).
    pub fn headroom(&self, port: &PortParams) -> Result<Headroom, String> {
        match self {
            HeadroomModel::Lookup(table) => table.row_for(port).map(|row| row.headroom()),
            HeadroomModel::Dynamic(asic, pattern, shp_enabled) => {
                Ok(sonic_dynamic(asic, port, pattern, *shp_enabled))
            }
            HeadroomModel::Ieee => {
                let delays = IeeeDelays::for_speed(port.speed_mbps).ok_or_else(|| {
                    format!(
                        "no IEEE worst-case interface and response delays are known for speed {} \
                         (known: 10000, 25000, 40000, 100000)",
                        port.speed_mbps
                    )
                })?;
                Ok(ieee_worst_case(port, port.mtu, port.mtu, delays.interface_bits, delays.response_bits))
            }
        }
    }

    /// `lookup`, `dynamic` or `ieee`.
    pub fn kind(&self) -> &'static str {
        match self {
            HeadroomModel::Lookup(_) => "lookup",
            HeadroomModel::Dynamic(..) => "dynamic",
            HeadroomModel::Ieee => "ieee",
        }
    }

    /// Where the model's figures come from, e.g. `sonic-buildimage device/…/pg_profile_lookup.ini` or
    /// `Spectrum-2 parameters (sonic-buildimage platform/mellanox/asic_table.j2), …`.
    pub fn source(&self) -> String {
        match self {
            HeadroomModel::Lookup(table) => table.source().to_owned(),
            HeadroomModel::Dynamic(asic, pattern, shp) => {
                let gearbox = if asic.gearbox_delay_ns > 0 {
                    format!(", gearbox {} ns", asic.gearbox_delay_ns)
                } else {
                    String::new()
                };
                format!(
                    "{} parameters ({} ASIC_TABLE|{}{gearbox}), formula of sonic-swss \
                     cfgmgr/buffer_headroom_mellanox.lua ({}), lossless MTU {}, {} % small packets, shared \
                     headroom pool {}",
                    asic.asic.label(),
                    asic.asic.origin(),
                    asic.asic.table_key(),
                    asic.formula.name(),
                    pattern.lossless_mtu,
                    pattern.small_packet_percentage,
                    if *shp { "on" } else { "off" }
                )
            }
            HeadroomModel::Ieee => {
                "IEEE 802.1Qbb/802.3 worst case, interface and response delays by speed".to_owned()
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------------
// Parsing operator input

/// A port speed as an operator writes it: Mb/s (`100000`, as in `PORT|speed`) or with a unit (`100G`,
/// `25g`, `400G`, `2.5G`, `100M`). Zero is refused: SONiC has no lossless profile for it.
pub fn parse_speed_mbps(text: &str) -> Result<u32, String> {
    let text = text.trim();
    let invalid = || format!("speed {text:?} is not a speed: use Mb/s (100000) or a unit (100G, 25G, 400G)");
    let (number, scale) = match text.char_indices().last() {
        Some((at, 'G' | 'g')) => (&text[..at], 1000.0),
        Some((at, 'M' | 'm')) => (&text[..at], 1.0),
        _ => (text, 1.0),
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(invalid());
    }
    let value: f64 = number.parse().map_err(|_| invalid())?;
    let mbps = value * scale;
    if mbps == 0.0 {
        return Err(format!("speed {text:?}: a speed of 0 has no headroom (the port is down or unset)"));
    }
    if mbps.fract() != 0.0 || mbps > f64::from(u32::MAX) {
        return Err(invalid());
    }
    Ok(mbps as u32)
}

/// A cable length as an operator writes it: `40m` (SONiC's form) or `40`. Zero is refused: SONiC creates
/// no lossless profile for a port with cable length 0m.
pub fn parse_cable_arg(text: &str) -> Result<u32, String> {
    let text = text.trim();
    let metres =
        lookup::parse_cable_m(text).or_else(|_| lookup::parse_cable_m(&format!("{text}m"))).map_err(
            |_| format!("cable length {text:?} is not a length in whole metres such as 5m, 40m or 300m"),
        )?;
    if metres == 0 {
        return Err(
            "cable length 0m: SONiC creates no lossless profile for a port with cable length 0m".into()
        );
    }
    Ok(metres)
}

// ------------------------------------------------------------------------------------------------------
// CONFIG_DB helpers

fn field_map<'a>(db: &'a ConfigDb, table: &str, key: &str) -> Option<&'a BTreeMap<String, String>> {
    db.tables.get(table)?.get(key)
}

fn field<'a>(db: &'a ConfigDb, table: &str, key: &str, name: &str) -> Option<&'a String> {
    field_map(db, table, key)?.get(name)
}

/// `name` or the pre-202111 `[TABLE|name]` (the config compiler's reading; a malformed reference is taken
/// as written, for the compiler to report).
fn strip_reference<'v>(table: &str, value: &'v str) -> &'v str {
    lossless_dataplane::model::config::parse_ref(table, value).unwrap_or(value)
}

/// The number of lanes of a port (`PORT|<port>|lanes`, comma-separated, counted as buffermgrd does); 0
/// when absent.
fn port_lanes(db: &ConfigDb, port: &str) -> u32 {
    field(db, "PORT", port, "lanes")
        .filter(|l| !l.trim().is_empty())
        .map_or(0, |l| l.matches(',').count() as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_in_mbps_or_with_a_unit() {
        for (text, mbps) in [
            ("100G", 100_000),
            ("25G", 25_000),
            ("400G", 400_000),
            ("100000", 100_000),
            ("25g", 25_000),
            ("2.5G", 2_500),
            ("100M", 100),
            (" 800G ", 800_000),
        ] {
            assert_eq!(parse_speed_mbps(text), Ok(mbps), "{text}");
        }
        for text in ["0", "0G", "0.0G"] {
            let error = parse_speed_mbps(text).unwrap_err();
            assert!(error.contains("a speed of 0 has no headroom"), "{text}: {error}");
        }
        for text in ["", "G", "fast", "100T", "-5", "1.5", "1e3", "99999999999"] {
            let error = parse_speed_mbps(text).unwrap_err();
            assert!(error.contains("is not a speed"), "{text}: {error}");
        }
    }

    #[test]
    fn cable_lengths_in_metres() {
        assert_eq!(parse_cable_arg("40m"), Ok(40));
        assert_eq!(parse_cable_arg("300"), Ok(300));
        for text in ["7x", "m", "", "5 m", "-5m", "1.5m"] {
            let error = parse_cable_arg(text).unwrap_err();
            assert!(error.contains("is not a length in whole metres"), "{text}: {error}");
        }
        assert!(parse_cable_arg("0m").unwrap_err().contains("cable length 0m"));
    }

    #[test]
    fn lanes_are_counted_as_buffermgrd_does() {
        let mut db = ConfigDb::default();
        db.set("PORT", "Ethernet0", "lanes", "0,1,2,3,4,5,6,7").set("PORT", "Ethernet8", "lanes", "8");
        assert_eq!(port_lanes(&db, "Ethernet0"), 8);
        assert_eq!(port_lanes(&db, "Ethernet8"), 1);
        assert_eq!(port_lanes(&db, "Ethernet16"), 0);
    }

    #[test]
    fn display_and_json_of_a_lookup_row() {
        let h = LookupTable::th_balanced().lookup(100_000, 40).unwrap().headroom();
        assert_eq!(
            h.to_string(),
            "xon           2,288 bytes\nxoff        177,632 bytes\nsize          1,248 bytes\n\
             threshold               0\nxon_offset    2,288 bytes\n"
        );
        let json = serde_json::to_value(&h).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"xon": 2288, "xoff": 177_632, "size": 1248, "threshold": 0,
                               "xon_offset": 2288, "terms": []})
        );
        let h = Headroom { terms: vec![("a".into(), 1)], ..Headroom::default() };
        assert_eq!(
            serde_json::to_value(&h).unwrap()["terms"],
            serde_json::json!([{"term": "a", "bytes": 1}])
        );
    }
}
