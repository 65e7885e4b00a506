//! Lossless PG headroom: the bytes a lossless priority group must still absorb after it decides to send
//! XOFF, by the methods an operator meets, and SONiC's generation of `pg_lossless_*` profiles from them.
//!
//! - [`LookupTable`]: the traditional buffer model's `pg_profile_lookup.ini` (sonic.md §2.4), one row per
//!   (speed, cable length); shipped for Broadcom Tomahawk BALANCED and NVIDIA SN2700 (sonic.md §7).
//! - [`sonic_dynamic`]: the dynamic buffer model's "well-known formula" (SONiC HLD
//!   `doc/qos/dynamically-headroom-calculation.md`, as the Lua plugin `cfgmgr/buffer_headroom_mellanox.lua`
//!   runs it, which sonic-vs uses too), and [`shared_headroom_pool_size`] from `buffer_pool_mellanox.lua`.
//! - [`ieee_worst_case`]: the IEEE 802.1Qbb / 802.3 worst case (models.md §2.5), and [`ucloud`], UCloud's
//!   cell-counting form of the same idea (seed 003, "Headroom").
//! - [`generate_lossless_profiles`]: what SONiC's buffer manager does with a `BUFFER_PG` whose profile is
//!   `NULL`: compute the headroom for the port's speed, cable length and MTU, create
//!   `BUFFER_PROFILE|pg_lossless_<speed>_<cable>[_mtu<mtu>][_th<n>]_profile` and point the PG at it.
//!
//! All of this is configuration-time arithmetic: it uses floats where SONiC's Lua does, and every result is
//! whole bytes. "KB" in SONiC's ASIC_TABLE and in its 1 KB rounding is 1024 bytes; models.md's IEEE table
//! prints KB = 1000 bytes.

use lossless_dataplane::model::config::{ConfigDb, ConfigIssue};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::show::thousands;

/// SONiC's default port MTU (`PORT|mtu` when absent); profiles for other MTUs get an `_mtu<mtu>` suffix.
pub const DEFAULT_PORT_MTU: u32 = 9100;
/// Cable length of a port without a `CABLE_LENGTH` entry. SONiC's buffer manager waits for one instead;
/// 5 m is what `buffers_config.j2` writes for internal links and most SKUs' `default_cable`.
pub const DEFAULT_CABLE_LENGTH_M: u32 = 5;
/// Private headroom `buffer_pool_mellanox.lua` keeps per lossless port when the shared headroom pool is on.
pub const PRIVATE_HEADROOM_PER_PORT_BYTES: u64 = 10 * 1024;
/// Shared headroom pool size `buffer_pool_mellanox.lua` falls back to when the ratio gives nothing.
pub const SHARED_HEADROOM_POOL_FALLBACK_BYTES: u64 = 655_360;
/// The pool every generated lossless profile uses (SONiC's `INGRESS_LOSSLESS_PG_POOL_NAME`).
pub const INGRESS_LOSSLESS_POOL: &str = "ingress_lossless_pool";

/// The Tomahawk BALANCED table (sonic.md §7.1), as shipped in `configs/headroom/`.
pub const TH_BALANCED_LOOKUP_INI: &str =
    include_str!("../../configs/headroom/th_balanced_pg_profile_lookup.ini");
/// The SN2700 table (sonic.md §7.4), as shipped in `configs/headroom/`.
pub const SN2700_LOOKUP_INI: &str = include_str!("../../configs/headroom/sn2700_pg_profile_lookup.ini");

/// SONiC's KB (ASIC_TABLE fields, the 1 KB rounding of xon/xoff/size).
const KB: f64 = 1024.0;
/// Signal speed in fibre used by SONiC's Lua (about 2/3 c).
const SONIC_SPEED_OF_LIGHT_M_PER_S: f64 = 198_000_000.0;
/// The smallest packet, for the worst case of cell occupancy.
const MINIMAL_PACKET_BYTES: f64 = 64.0;
/// Preamble + SFD (8) and inter-frame gap (12): what a frame costs on the wire beyond its own bytes.
const WIRE_OVERHEAD_BYTES: u32 = 20;
/// A PFC frame on the wire: 64 bytes + 20 of overhead.
const PFC_FRAME_BITS: u64 = 672;
/// IEEE worst-case cable delay, both ways (models.md §2.5).
const IEEE_CABLE_NS_PER_M: u64 = 5;
/// Signal speed for UCloud's cable term, which the article does not give: 2×10⁸ m/s = 5 ns/m.
const UCLOUD_SPEED_OF_LIGHT_M_PER_S: f64 = 200_000_000.0;
/// UCloud counts headroom in 64-byte packets, each 672 bits on the wire and one cell in the buffer.
const UCLOUD_SMALL_PACKET_BITS: f64 = 672.0;

// ------------------------------------------------------------------------------------------------------
// Inputs and outputs

/// One port's inputs: `PORT|<port>|speed`, `CABLE_LENGTH|AZURE|<port>`, `PORT|<port>|mtu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortParams {
    /// Mb/s, as in `PORT|speed` (`100000` = 100G).
    pub speed_mbps: u32,
    /// Whole metres: SONiC writes cable lengths as `"<n>m"` and puts the number in profile names
    /// (`pg_lossless_100000_40m_profile`), so a fraction of a metre has nowhere to go.
    pub cable_m: u32,
    /// The port MTU in bytes (`PORT|mtu`, SONiC default 9100): the largest frame that can be in flight.
    pub mtu: u32,
}

impl PortParams {
    pub fn new(speed_mbps: u32, cable_m: u32, mtu: u32) -> PortParams {
        PortParams { speed_mbps, cable_m, mtu }
    }
}

/// A computed headroom, in bytes: the fields of a lossless `BUFFER_PROFILE`, and how they were reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headroom {
    /// `xon`: the PG sends XON again when its usage falls to this.
    pub xon: u64,
    /// `xoff`: what the PG may absorb after XOFF.
    pub xoff: u64,
    /// `size`: the PG's reserved buffer.
    pub size: u64,
    /// The terms of the calculation, each in bytes (fractions rounded to the nearest byte), for printing.
    pub terms: Vec<(String, u64)>,
}

impl fmt::Display for Headroom {
    /// `xon`, `xoff` and `size`, then each term indented, one per line, in bytes with thousands separators.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut lines: Vec<(String, String)> = [("xon", self.xon), ("xoff", self.xoff), ("size", self.size)]
            .into_iter()
            .map(|(label, bytes)| (label.to_owned(), thousands(bytes)))
            .collect();
        lines.extend(self.terms.iter().map(|(label, bytes)| (format!("  {label}"), thousands(*bytes))));
        let label_width = lines.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0);
        let value_width = lines.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        for (label, value) in lines {
            writeln!(f, "{label:<label_width$}  {value:>value_width$} bytes")?;
        }
        Ok(())
    }
}

fn round_up_to_kb(bytes: f64) -> u64 {
    (bytes / KB).ceil() as u64 * KB as u64
}

// ------------------------------------------------------------------------------------------------------
// pg_profile_lookup.ini

/// One row of a `pg_profile_lookup.ini`: `speed cable size xon xoff threshold [xon_offset]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupRow {
    pub speed_mbps: u32,
    pub cable_m: u32,
    pub size: u64,
    pub xon: u64,
    pub xoff: u64,
    /// Written to the profile's `<pool mode>_th`: an alpha exponent for a dynamic pool, bytes for a static one.
    pub threshold: i64,
    pub xon_offset: Option<u64>,
}

impl LookupRow {
    /// The row as a [`Headroom`] (a table has no terms; `xon_offset` is listed when the row has one).
    pub fn headroom(&self) -> Headroom {
        let terms = self.xon_offset.map(|o| ("xon_offset".to_owned(), o)).into_iter().collect();
        Headroom { xon: self.xon, xoff: self.xoff, size: self.size, terms }
    }
}

/// A line of a `pg_profile_lookup.ini` that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupError {
    /// 1-based.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pg_profile_lookup.ini line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for LookupError {}

/// A `pg_profile_lookup.ini`, keyed by (speed, cable length) as buffermgrd's `m_pgProfileLookup`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LookupTable {
    rows: BTreeMap<(u32, u32), LookupRow>,
}

impl LookupTable {
    /// Reads the ini text: whitespace-separated columns, `#` comment lines and blank lines skipped.
    /// Stricter than buffermgrd, which reads whatever `>>` yields: a malformed row or a second row for the
    /// same (speed, cable) is an error naming its line.
    pub fn parse(text: &str) -> Result<LookupTable, LookupError> {
        let mut rows = BTreeMap::new();
        let mut first_line = BTreeMap::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let content = raw.trim();
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            let error = |message: String| LookupError { line, message };
            let columns: Vec<&str> = content.split_whitespace().collect();
            if !(6..=7).contains(&columns.len()) {
                return Err(error(format!(
                    "expected 6 or 7 columns (speed cable size xon xoff threshold [xon_offset]), found {}",
                    columns.len()
                )));
            }
            let bytes = |name: &str, text: &str| {
                text.parse::<u64>().map_err(|_| error(format!("{name} {text:?} is not a number of bytes")))
            };
            let speed_mbps = match columns[0].parse::<u32>() {
                Ok(speed) if speed > 0 => speed,
                _ => return Err(error(format!("speed {:?} is not a speed in Mb/s", columns[0]))),
            };
            let cable_m = parse_cable_m(columns[1]).map_err(error)?;
            let row = LookupRow {
                speed_mbps,
                cable_m,
                size: bytes("size", columns[2])?,
                xon: bytes("xon", columns[3])?,
                xoff: bytes("xoff", columns[4])?,
                threshold: columns[5]
                    .parse()
                    .map_err(|_| error(format!("threshold {:?} is not an integer", columns[5])))?,
                xon_offset: columns.get(6).map(|text| bytes("xon_offset", text)).transpose()?,
            };
            if let Some(first) = first_line.insert((speed_mbps, cable_m), line) {
                return Err(error(format!(
                    "a second row for speed {speed_mbps} and cable length {cable_m}m (the first is on line {first})"
                )));
            }
            rows.insert((speed_mbps, cable_m), row);
        }
        Ok(LookupTable { rows })
    }

    /// Broadcom Tomahawk, generic BALANCED (`configs/headroom/th_balanced_pg_profile_lookup.ini`).
    pub fn th_balanced() -> LookupTable {
        LookupTable::parse(TH_BALANCED_LOOKUP_INI).expect("the embedded TH table parses")
    }

    /// NVIDIA SN2700, Spectrum-1 (`configs/headroom/sn2700_pg_profile_lookup.ini`).
    pub fn sn2700() -> LookupTable {
        LookupTable::parse(SN2700_LOOKUP_INI).expect("the embedded SN2700 table parses")
    }

    pub fn lookup(&self, speed_mbps: u32, cable_m: u32) -> Option<LookupRow> {
        self.rows.get(&(speed_mbps, cable_m)).copied()
    }

    /// The rows, by speed then cable length.
    pub fn rows(&self) -> impl Iterator<Item = &LookupRow> {
        self.rows.values()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

impl FromStr for LookupTable {
    type Err = LookupError;
    fn from_str(text: &str) -> Result<LookupTable, LookupError> {
        LookupTable::parse(text)
    }
}

/// `"40m"` → 40.
fn parse_cable_m(text: &str) -> Result<u32, String> {
    text.strip_suffix('m')
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("cable length {text:?} is not a whole number of metres (\"<n>m\")"))
}

// ------------------------------------------------------------------------------------------------------
// SONiC's dynamic formula

/// Where the revisions of SONiC's headroom arithmetic differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormulaOptions {
    /// The peer's response from the IEEE 802.3 31B.3.7 pause quanta of the port speed ([`pause_quanta`]),
    /// falling back to ASIC_TABLE `peer_response_time` for other speeds; `false`: always the ASIC value.
    pub peer_response_from_pause_quanta: bool,
    /// Round `worst_case_factor` up to a whole number.
    pub round_up_worst_case_factor: bool,
    /// Convert `small_packet_percentage` from packets to bytes before use (sonic-swss#3235), with the
    /// Lua's expression `100·64 / ((spp·64 + (100 − spp)·lossless_mtu) / 100)` (quoted second-hand; the same
    /// as packets at 100 %).
    pub small_packets_by_bytes: bool,
}

impl FormulaOptions {
    /// The HLD formula as SONiC's Lua plugins run it since 2024: peer response from pause quanta, exact
    /// worst-case factor, small packets by bytes. Not modelled: Mellanox's own adjustments of that year
    /// (sonic-swss#3235 part 2), 8-lane ports, Spectrum-4/5 tile bytes, Spectrum-6's +18 KB (#4797) and
    /// the +2 KB for fewer than 100 % small packets without a shared headroom pool (#4757).
    pub const SONIC: FormulaOptions = FormulaOptions {
        peer_response_from_pause_quanta: true,
        round_up_worst_case_factor: false,
        small_packets_by_bytes: true,
    };

    /// The arithmetic behind Mellanox's shipped `pg_profile_lookup.ini` tables: ASIC `peer_response_time`
    /// at every speed and the worst-case factor rounded up. With [`AsicParams::spectrum1`], port MTU 9100,
    /// lossless MTU 1024 and 100 % small packets it gives every row of the SN2700 table.
    pub const MELLANOX_LOOKUP_INI: FormulaOptions = FormulaOptions {
        peer_response_from_pause_quanta: false,
        round_up_worst_case_factor: true,
        small_packets_by_bytes: false,
    };
}

/// ASIC_TABLE (STATE_DB) fields, in SONiC's units, plus the gearbox and formula revision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AsicParams {
    /// `cell_size`, bytes.
    pub cell_size_bytes: u32,
    /// `pipeline_latency`, KB (1024 bytes): becomes `xon`.
    pub pipeline_latency_kb: f64,
    /// `mac_phy_delay`, KB.
    pub mac_phy_delay_kb: f64,
    /// `peer_response_time`, KB: used for speeds without IEEE pause quanta (or always, see [`FormulaOptions`]).
    pub peer_response_time_kb: f64,
    /// PERIPHERAL_TABLE `gearbox_delay` of the ports' gearbox, ns (0: none). One value for all ports, as
    /// with `PORT_PERIPHERAL_TABLE|global`.
    pub gearbox_delay_ns: u32,
    pub formula: FormulaOptions,
}

impl AsicParams {
    /// sonic-vs `ASIC_TABLE|VS-ASIC` (sonic.md §2.5).
    pub fn vs() -> AsicParams {
        AsicParams {
            cell_size_bytes: 128,
            pipeline_latency_kb: 18.0,
            mac_phy_delay_kb: 0.8,
            peer_response_time_kb: 3.8,
            gearbox_delay_ns: 0,
            formula: FormulaOptions::SONIC,
        }
    }

    /// NVIDIA Spectrum-1 (SN2700 …), `platform/mellanox/asic_table.j2` (sonic.md §7.4).
    pub fn spectrum1() -> AsicParams {
        AsicParams {
            cell_size_bytes: 96,
            pipeline_latency_kb: 19.0,
            mac_phy_delay_kb: 0.8,
            peer_response_time_kb: 3.8,
            gearbox_delay_ns: 0,
            formula: FormulaOptions::SONIC,
        }
    }
}

/// `LOSSLESS_TRAFFIC_PATTERN|AZURE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrafficPattern {
    /// `mtu`: the largest lossless (RDMA) packet, bytes (`buffers_config.j2`: 1024).
    pub lossless_mtu: u32,
    /// `small_packet_percentage`, 0..=100 (`buffers_config.j2`: 100, 50 since 2024).
    pub small_packet_percentage: u32,
}

impl TrafficPattern {
    /// The first `LOSSLESS_TRAFFIC_PATTERN` entry (SONiC's Lua reads the first key, normally `AZURE`);
    /// `None` when the table is empty.
    pub fn from_config(db: &ConfigDb) -> Result<Option<TrafficPattern>, ConfigIssue> {
        let Some((key, fields)) = db.tables.get("LOSSLESS_TRAFFIC_PATTERN").and_then(|t| t.iter().next())
        else {
            return Ok(None);
        };
        let number = |field: &str, max: u32| {
            let value = fields.get(field).map(String::as_str).unwrap_or_default();
            match value.parse::<u32>() {
                Ok(n) if n <= max => Ok(n),
                _ => Err(ConfigIssue::new(
                    "LOSSLESS_TRAFFIC_PATTERN",
                    key,
                    field,
                    value,
                    format!("{value:?} is not a number in 0..={max}"),
                )),
            }
        };
        Ok(Some(TrafficPattern {
            lossless_mtu: number("mtu", 65_535)?,
            small_packet_percentage: number("small_packet_percentage", 100)?,
        }))
    }
}

/// Whether a config enables SONiC's shared headroom pool: a non-zero `over_subscribe_ratio` in
/// `DEFAULT_LOSSLESS_BUFFER_PARAMETER`, or a non-zero `xoff` on `BUFFER_POOL|ingress_lossless_pool`.
pub fn shp_enabled_in_config(db: &ConfigDb) -> bool {
    let non_zero = |v: Option<&String>| v.and_then(|v| v.parse::<u64>().ok()).is_some_and(|n| n > 0);
    let ratio = db
        .tables
        .get("DEFAULT_LOSSLESS_BUFFER_PARAMETER")
        .is_some_and(|t| t.values().any(|fields| non_zero(fields.get("over_subscribe_ratio"))));
    ratio || non_zero(field(db, "BUFFER_POOL", INGRESS_LOSSLESS_POOL, "xoff"))
}

/// IEEE 802.3 31B.3.7: pause quanta (512 bit times) a MAC may still transmit after receiving a pause, by
/// speed in Mb/s (the table of SONiC's HLD and Lua; 800G as 400G, as the Mellanox plugin has it).
pub fn pause_quanta(speed_mbps: u32) -> Option<u32> {
    Some(match speed_mbps {
        100 => 1,
        1_000 => 2,
        10_000 => 67,
        25_000 => 80,
        40_000 => 118,
        50_000 => 147,
        100_000 => 394,
        200_000 => 453,
        400_000 | 800_000 => 905,
        _ => return None,
    })
}

/// SONiC's dynamic headroom (sonic.md §2.5), all in bytes:
///
/// ```text
/// worst_case_factor  = cell / 64                 if cell > 128
///                      2·cell / (1 + cell)       otherwise            (rounded up: MELLANOX_LOOKUP_INI)
/// small packets %    = spp, or "by bytes": 100·64 / ((spp·64 + (100 − spp)·lossless_mtu) / 100)
/// cell_occupancy     = (100 − small% + small% · worst_case_factor) / 100
/// cable              = 2 · cable_m / 198,000,000 m/s · speed / 8          (round trip)
/// gearbox            = speed · gearbox_delay_ns / 8                        (one way)
/// peer_response      = pause_quanta(speed) · 512 / 8, else ASIC peer_response_time · 1024
/// propagation_delay  = port_mtu + cable + 2 · gearbox + mac_phy_delay · 1024 + peer_response
/// xon                = ⌈pipeline_latency · 1024⌉₁ₖ
/// xoff               = ⌈lossless_mtu + propagation_delay · cell_occupancy⌉₁ₖ      (⌈⌉₁ₖ: up to 1024)
/// size               = xon + xoff, or xon with a shared headroom pool (xoff then comes from the pool)
/// ```
///
/// The cable and gearbox terms convert with 10⁶ bit/s per Mb/s and 8 bits per byte. Older Lua divided by
/// 8·1024 after multiplying by 10⁹, 2.3 % less; the exact form is what reproduces Mellanox's tables.
pub fn sonic_dynamic(
    asic: &AsicParams,
    port: &PortParams,
    pattern: &TrafficPattern,
    shp_enabled: bool,
) -> Headroom {
    let options = asic.formula;
    let cell = f64::from(asic.cell_size_bytes);
    let mut worst_case_factor = if cell > 2.0 * MINIMAL_PACKET_BYTES {
        cell / MINIMAL_PACKET_BYTES
    } else {
        2.0 * cell / (1.0 + cell)
    };
    if options.round_up_worst_case_factor {
        worst_case_factor = worst_case_factor.ceil();
    }
    let spp = f64::from(pattern.small_packet_percentage.min(100));
    let lossless_mtu = f64::from(pattern.lossless_mtu);
    // The Lua's expression, kept as it is: 100 at 100 %, but not quite the byte share of small packets
    // below that (it lacks a factor spp/100, so 0 % still counts 6,400/lossless_mtu %).
    let mean_packet_bytes = (spp * MINIMAL_PACKET_BYTES + (100.0 - spp) * lossless_mtu) / 100.0;
    let small_share = if options.small_packets_by_bytes && mean_packet_bytes > 0.0 {
        100.0 * MINIMAL_PACKET_BYTES / mean_packet_bytes
    } else {
        spp
    };
    let share_of = if options.small_packets_by_bytes { "bytes" } else { "packets" };
    let cell_occupancy = (100.0 - small_share + small_share * worst_case_factor) / 100.0;

    let speed_bytes_per_s = f64::from(port.speed_mbps) * 1e6 / 8.0;
    let cable = 2.0 * f64::from(port.cable_m) / SONIC_SPEED_OF_LIGHT_M_PER_S * speed_bytes_per_s;
    let gearbox = speed_bytes_per_s * f64::from(asic.gearbox_delay_ns) * 1e-9;
    let mac_phy = asic.mac_phy_delay_kb * KB;
    let quanta = pause_quanta(port.speed_mbps).filter(|_| options.peer_response_from_pause_quanta);
    let (peer_response, peer_label) = match quanta {
        Some(q) => {
            (f64::from(q) * 512.0 / 8.0, format!("peer_response ({q} pause quanta, IEEE 802.3 31B.3.7)"))
        }
        None => (asic.peer_response_time_kb * KB, "peer_response_time (ASIC_TABLE)".to_owned()),
    };
    let port_mtu = f64::from(port.mtu);
    let propagation = port_mtu + cable + 2.0 * gearbox + mac_phy + peer_response;
    let pipeline = asic.pipeline_latency_kb * KB;

    let xoff = round_up_to_kb(lossless_mtu + propagation * cell_occupancy);
    let xon = round_up_to_kb(pipeline);
    let size = if shp_enabled { xon } else { xon + xoff };

    let mut terms = vec![
        ("port_mtu".to_owned(), port.mtu.into()),
        (format!("cable {} m, round trip at 198,000,000 m/s", port.cable_m), cable.round() as u64),
    ];
    if asic.gearbox_delay_ns > 0 {
        terms.push((format!("gearbox 2 × {} ns", asic.gearbox_delay_ns), (2.0 * gearbox).round() as u64));
    }
    terms.extend([
        ("mac_phy_delay".to_owned(), mac_phy.round() as u64),
        (peer_label, peer_response.round() as u64),
        ("propagation_delay (sum of the above)".to_owned(), propagation.round() as u64),
        (
            format!(
                "propagation_delay × cell_occupancy {cell_occupancy:.4} (worst_case_factor {worst_case_factor:.4}, \
                 small packets {small_share:.1} % of {share_of})"
            ),
            (propagation * cell_occupancy).round() as u64,
        ),
        ("lossless_mtu".to_owned(), pattern.lossless_mtu.into()),
        ("pipeline_latency (xon)".to_owned(), pipeline.round() as u64),
    ]);
    Headroom { xon, xoff, size, terms }
}

/// The shared headroom pool `buffer_pool_mellanox.lua` sizes when the config gives none: the headroom
/// the lossless PGs do not reserve privately, `pgs_xoff_sum` = Σ over lossless PGs of (xon + xoff − size),
/// less the private headroom kept per lossless port (`private`, [`PRIVATE_HEADROOM_PER_PORT_BYTES`] each),
/// divided by `over_subscribe_ratio` and rounded up. A ratio of 0, or a result of 0, gives the plugin's
/// fallback [`SHARED_HEADROOM_POOL_FALLBACK_BYTES`]. A configured `BUFFER_POOL|ingress_lossless_pool|xoff`
/// wins over all of this.
pub fn shared_headroom_pool_size(pgs_xoff_sum: u64, private: u64, over_subscribe_ratio: u32) -> u64 {
    let accumulated = pgs_xoff_sum.saturating_sub(private);
    if over_subscribe_ratio == 0 {
        return SHARED_HEADROOM_POOL_FALLBACK_BYTES;
    }
    match accumulated.div_ceil(u64::from(over_subscribe_ratio)) {
        0 => SHARED_HEADROOM_POOL_FALLBACK_BYTES,
        size => size,
    }
}

// ------------------------------------------------------------------------------------------------------
// IEEE worst case and UCloud

/// IEEE upper bounds for one speed, in bit times (models.md §2.5; Cisco Press "Storage Networking
/// Protocol Fundamentals" figure 7-2 as retold in "How to compute headroom for lossless Ethernet links").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IeeeDelays {
    /// PHY/MAC/FEC delay of one interface (counted twice: R's transmit and S's receive side).
    pub interface_bits: u64,
    /// The sender's response time: decode the PFC frame and stop scheduling.
    pub response_bits: u64,
}

impl IeeeDelays {
    /// 10G, 25G, 40G and 100G. 400G has a response bound (463,360 bit times) but no interface bound in
    /// the sources, so it is not offered; pass delays to [`ieee_worst_case`] yourself.
    pub fn for_speed(speed_mbps: u32) -> Option<IeeeDelays> {
        let (interface_bits, response_bits) = match speed_mbps {
            10_000 => (8_192, 30_720),
            25_000 => (6_144, 40_960),
            40_000 => (24_576, 60_416),
            100_000 => (122_880, 201_728),
            _ => return None,
        };
        Some(IeeeDelays { interface_bits, response_bits })
    }
}

/// The IEEE worst case (models.md §2.5), everything that can arrive after the receiver R decides on XOFF:
///
/// ```text
/// bits = (MTU_R + 20)·8          R just started a max-size frame; its PFC frame waits behind it
///      + 672                     the PFC frame itself
///      + 2 · intf_delay_bits     interface delay, R's transmit side and S's receive side
///      + 2 · cable_m · 5 ns/m · speed    cable round trip: the PFC frame out, the data in flight back
///      + resp_delay_bits         S's response time
///      + (MTU_S + 20)·8          S finishes the frame it had started
/// ```
///
/// `port` gives speed and cable (its `mtu` is not used: the two ends' MTUs are `mtu_r` and `mtu_s`).
/// `xoff` = `size` = ⌈bits / 8⌉ bytes of private headroom; `xon` = 0, since the IEEE bound says nothing
/// about where to resume (0: when the PG has drained). No cell rounding: see [`sonic_dynamic`] or
/// [`ucloud`] for a specific ASIC.
pub fn ieee_worst_case(
    port: &PortParams,
    mtu_r: u32,
    mtu_s: u32,
    intf_delay_bits: u64,
    resp_delay_bits: u64,
) -> Headroom {
    let frame_bits = |mtu: u32| u64::from(mtu + WIRE_OVERHEAD_BYTES) * 8;
    // 2 · L m · 5 ns/m · speed Mb/s = L · speed · 10 / 1000 bits, rounded up.
    let cable_bits =
        (2 * u64::from(port.cable_m) * IEEE_CABLE_NS_PER_M * u64::from(port.speed_mbps)).div_ceil(1000);
    let parts = [
        (format!("MTU_R {mtu_r} + 20 (preamble, SFD, IFG)"), frame_bits(mtu_r)),
        ("PFC frame (672 bit times)".to_owned(), PFC_FRAME_BITS),
        (format!("2 × interface delay ({intf_delay_bits} bit times)"), 2 * intf_delay_bits),
        (format!("cable round trip, 2 × {} m at 5 ns/m", port.cable_m), cable_bits),
        (format!("response delay ({resp_delay_bits} bit times)"), resp_delay_bits),
        (format!("MTU_S {mtu_s} + 20 (preamble, SFD, IFG)"), frame_bits(mtu_s)),
    ];
    let bits: u64 = parts.iter().map(|(_, b)| b).sum();
    let bytes = bits.div_ceil(8);
    let terms = parts.into_iter().map(|(label, b)| (label, (b as f64 / 8.0).round() as u64)).collect();
    Headroom { xon: 0, xoff: bytes, size: bytes, terms }
}

/// UCloud's headroom ("UCloud高性能RoCE网络设计", seed 003, section "Headroom"), counted in cells:
///
/// ```text
/// H (cells) = ⌈(Tm1 + Tm2 + 2 · cable_m / v) · speed / 672 bits⌉
/// ```
///
/// Tm1 (XOFF decision to PFC frame sent) + Tm2 (PFC frame received to queue stopped) is measured, not
/// derived: `fixed_delay_ns`. The denominator is the wire size of a 64-byte packet (64 + 20 bytes), the
/// worst case for buffer use because each such packet holds a whole cell. v is 2×10⁸ m/s (5 ns/m, the
/// article gives none). `xoff` = `size` = H · `cell_bytes`; `xon` = 0. The article's examples, 100G/100 m
/// → 408 cells and 25G/15 m → 98 cells, need Tm1 + Tm2 ≈ 1.74 µs and ≈ 2.48 µs: the "constant" is one per
/// speed, like the IEEE response times counted in bit times.
pub fn ucloud(port: &PortParams, fixed_delay_ns: u64, cell_bytes: u32) -> Headroom {
    let bits_per_ns = f64::from(port.speed_mbps) * 1e-3;
    let cable_ns = 2.0 * f64::from(port.cable_m) / UCLOUD_SPEED_OF_LIGHT_M_PER_S * 1e9;
    let fixed_cells = fixed_delay_ns as f64 * bits_per_ns / UCLOUD_SMALL_PACKET_BITS;
    let cable_cells = cable_ns * bits_per_ns / UCLOUD_SMALL_PACKET_BITS;
    let cells = (fixed_cells + cable_cells).ceil() as u64;
    let cell = f64::from(cell_bytes);
    let size = cells * u64::from(cell_bytes);
    let terms = vec![
        (
            format!("Tm1 + Tm2 = {fixed_delay_ns} ns ({fixed_cells:.1} cells)"),
            (fixed_cells * cell).round() as u64,
        ),
        (
            format!(
                "cable round trip 2 × {} m at 2×10⁸ m/s = {cable_ns:.0} ns ({cable_cells:.1} cells)",
                port.cable_m
            ),
            (cable_cells * cell).round() as u64,
        ),
        (format!("{cells} cells of {cell_bytes} bytes, one 64-byte packet each"), size),
    ];
    Headroom { xon: 0, xoff: size, size, terms }
}

// ------------------------------------------------------------------------------------------------------
// NULL PG profiles

/// How [`generate_lossless_profiles`] computes a port's headroom.
#[derive(Debug, Clone, PartialEq)]
pub enum HeadroomModel {
    /// The traditional model: a `pg_profile_lookup.ini` row per (speed, cable).
    Lookup(LookupTable),
    /// SONiC's dynamic formula: ASIC, `LOSSLESS_TRAFFIC_PATTERN`, and whether the shared headroom pool is
    /// on (see [`shp_enabled_in_config`]).
    Dynamic(AsicParams, TrafficPattern, bool),
    /// [`ieee_worst_case`] with both ends at the port MTU and [`IeeeDelays::for_speed`].
    Ieee,
}

impl HeadroomModel {
    /// One port's headroom, or why there is none (an unknown speed or cable length).
    pub fn headroom(&self, port: &PortParams) -> Result<Headroom, String> {
        match self {
            HeadroomModel::Lookup(table) => table
                .lookup(port.speed_mbps, port.cable_m)
                .map(|row| row.headroom())
                .ok_or_else(|| no_lookup_row(port)),
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
}

/// buffermgrd's words (`cfgmgr/buffermgr.cpp`).
fn no_lookup_row(port: &PortParams) -> String {
    format!("No PG profile configured for speed {} and cable length {}m", port.speed_mbps, port.cable_m)
}

/// A `BUFFER_PG` entry whose headroom is to be computed.
struct PgRequest<'a> {
    key: &'a str,
    ports: Vec<&'a str>,
    index: &'a str,
    /// `profile` as written (empty when absent), for messages.
    value: &'a str,
    pool: String,
    /// A `headroom_type: dynamic` profile's own `dynamic_th`; `None`: the default.
    threshold: Option<i64>,
}

/// What SONiC's buffer manager does for lossless PGs left to it (sonic.md §1.3, §2.4, §2.5):
///
/// - Which PGs: every `BUFFER_PG|<ports>|<pgs>` whose `profile` is `NULL` or absent (the dynamic model's
///   "compute it for me"), and every one referring to a profile with `headroom_type: dynamic` (computed
///   headroom, that profile's `dynamic_th`). PGs are not derived from `pfc_enable`: the config lists them,
///   as SONiC's `buffers_config.j2` does in the dynamic model.
/// - Inputs: `PORT|<port>|speed` (required) and `mtu` (default 9100); the port's field in any
///   `CABLE_LENGTH` entry (normally `AZURE`), default [`DEFAULT_CABLE_LENGTH_M`]; a cable of `0m` is an error
///   (SONiC creates no lossless profile for it). Admin state is not considered.
/// - Profile: `pg_lossless_<speed>_<cable>m_profile` with `pool`, `xon`, `xoff`, `size`, and the threshold.
///   Lookup: the row's `threshold` in the `<pool mode>_th` field and its `xon_offset` if any, as
///   buffermgrd. Dynamic and IEEE: `dynamic_th` = `DEFAULT_LOSSLESS_BUFFER_PARAMETER|default_dynamic_th`
///   (default 0), and the name gets `_mtu<mtu>` when the port MTU is not 9100, as buffermgrdyn. Any model
///   appends `_th<n>` when a `headroom_type: dynamic` profile asks for a threshold other than the default.
///   An existing profile of that name is reused, not rewritten.
/// - The PG then refers to the profile; a key naming several ports is split into one key per port, since
///   each port may need its own profile.
///
/// All or nothing: on any error `db` is left as it was and every error is returned, located at the
/// `TABLE|key|field` it is about. On success, the names of the profiles created, in creation order.
pub fn generate_lossless_profiles(
    db: &mut ConfigDb,
    model: &HeadroomModel,
) -> Result<Vec<String>, Vec<ConfigIssue>> {
    let mut errors = Vec::new();
    let requests = pg_requests(db, &mut errors);
    let default_threshold = default_dynamic_th(db, &mut errors);
    let mut out = db.clone();
    let mut created = Vec::new();
    for request in &requests {
        let Some(pool_mode) = pool_mode(db, request, &mut errors) else { continue };
        let split = request.ports.len() > 1;
        if split && let Some(table) = out.tables.get_mut("BUFFER_PG") {
            table.remove(request.key);
        }
        for &port in &request.ports {
            let pg_key = format!("{port}|{}", request.index);
            if split && field_map(db, "BUFFER_PG", &pg_key).is_some() {
                errors.push(ConfigIssue::new(
                    "BUFFER_PG",
                    request.key,
                    "",
                    request.value,
                    format!("cannot give {port} its own profile: BUFFER_PG|{pg_key} already exists"),
                ));
                continue;
            }
            let profile = port_params(db, port, request).and_then(|params| {
                lossless_profile(model, port, &params, request, default_threshold, pool_mode)
            });
            let (name, fields) = match profile {
                Ok(profile) => profile,
                Err(issue) => {
                    errors.push(issue);
                    continue;
                }
            };
            if field_map(&out, "BUFFER_PROFILE", &name).is_none() {
                for (field, value) in fields {
                    out.set("BUFFER_PROFILE", &name, field, value);
                }
                created.push(name.clone());
            }
            out.set("BUFFER_PG", &pg_key, "profile", name);
        }
    }
    if errors.is_empty() {
        *db = out;
        Ok(created)
    } else {
        errors.sort();
        errors.dedup();
        Err(errors)
    }
}

fn field_map<'a>(db: &'a ConfigDb, table: &str, key: &str) -> Option<&'a BTreeMap<String, String>> {
    db.tables.get(table)?.get(key)
}

fn field<'a>(db: &'a ConfigDb, table: &str, key: &str, name: &str) -> Option<&'a String> {
    field_map(db, table, key)?.get(name)
}

/// `name` or the pre-202111 `[TABLE|name]`.
fn strip_reference<'v>(table: &str, value: &'v str) -> &'v str {
    value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .and_then(|v| v.strip_prefix(table))
        .and_then(|v| v.strip_prefix('|'))
        .unwrap_or(value)
}

fn parse_dynamic_th(value: &str) -> Result<i64, String> {
    match value.parse::<i64>() {
        Ok(n) if (-8..=7).contains(&n) => Ok(n),
        _ => Err(format!("{value:?} is not a dynamic_th in -8..7")),
    }
}

fn pg_requests<'a>(db: &'a ConfigDb, errors: &mut Vec<ConfigIssue>) -> Vec<PgRequest<'a>> {
    let Some(pgs) = db.tables.get("BUFFER_PG") else { return Vec::new() };
    let mut requests = Vec::new();
    for (key, fields) in pgs {
        // A key without an index is the config compiler's to report.
        let Some((ports, index)) = key.split_once('|') else { continue };
        let value = fields.get("profile").map(String::as_str).unwrap_or_default();
        let (pool, threshold) = if value.is_empty() || value == "NULL" {
            (INGRESS_LOSSLESS_POOL.to_owned(), None)
        } else {
            let name = strip_reference("BUFFER_PROFILE", value);
            let Some(profile) = field_map(db, "BUFFER_PROFILE", name) else { continue };
            if profile.get("headroom_type").map(String::as_str) != Some("dynamic") {
                continue;
            }
            let pool =
                profile.get("pool").map_or(INGRESS_LOSSLESS_POOL, |p| strip_reference("BUFFER_POOL", p));
            let threshold = match profile.get("dynamic_th").map(|th| parse_dynamic_th(th)) {
                None => None,
                Some(Ok(th)) => Some(th),
                Some(Err(message)) => {
                    let th = &profile["dynamic_th"];
                    errors.push(ConfigIssue::new("BUFFER_PROFILE", name, "dynamic_th", th, message));
                    continue;
                }
            };
            (pool.to_owned(), threshold)
        };
        requests.push(PgRequest { key, ports: ports.split(',').collect(), index, value, pool, threshold });
    }
    requests
}

/// `DEFAULT_LOSSLESS_BUFFER_PARAMETER|<first key>|default_dynamic_th`, default 0.
fn default_dynamic_th(db: &ConfigDb, errors: &mut Vec<ConfigIssue>) -> i64 {
    let entry = db.tables.get("DEFAULT_LOSSLESS_BUFFER_PARAMETER").and_then(|t| t.iter().next());
    let Some((key, Some(value))) = entry.map(|(key, fields)| (key, fields.get("default_dynamic_th"))) else {
        return 0;
    };
    parse_dynamic_th(value).unwrap_or_else(|message| {
        errors.push(ConfigIssue::new(
            "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
            key,
            "default_dynamic_th",
            value,
            message,
        ));
        0
    })
}

/// The `mode` of the pool the generated profile will use (`dynamic` when unset), which must exist.
fn pool_mode(db: &ConfigDb, request: &PgRequest, errors: &mut Vec<ConfigIssue>) -> Option<&'static str> {
    let Some(pool) = field_map(db, "BUFFER_POOL", &request.pool) else {
        errors.push(ConfigIssue::new(
            "BUFFER_PG",
            request.key,
            "profile",
            request.value,
            format!(
                "the computed lossless profile would use BUFFER_POOL|{}, which does not exist",
                request.pool
            ),
        ));
        return None;
    };
    Some(if pool.get("mode").map(String::as_str) == Some("static") { "static" } else { "dynamic" })
}

fn port_params(db: &ConfigDb, port: &str, request: &PgRequest) -> Result<PortParams, ConfigIssue> {
    let Some(fields) = field_map(db, "PORT", port) else {
        return Err(ConfigIssue::new(
            "BUFFER_PG",
            request.key,
            "",
            "",
            format!("{port:?} is not a port (there is no PORT|{port})"),
        ));
    };
    let speed_mbps = match fields.get("speed") {
        None => {
            let message =
                format!("missing: the headroom of BUFFER_PG|{} depends on the port speed", request.key);
            return Err(ConfigIssue::new("PORT", port, "speed", "", message));
        }
        Some(text) => match text.parse::<u32>() {
            Ok(speed) if speed > 0 => speed,
            _ => {
                return Err(ConfigIssue::new(
                    "PORT",
                    port,
                    "speed",
                    text,
                    format!("{text:?} is not a speed in Mb/s"),
                ));
            }
        },
    };
    let mtu = match fields.get("mtu") {
        None => DEFAULT_PORT_MTU,
        Some(text) => text.parse::<u32>().map_err(|_| {
            ConfigIssue::new("PORT", port, "mtu", text, format!("{text:?} is not an MTU in bytes"))
        })?,
    };
    let cable = db
        .tables
        .get("CABLE_LENGTH")
        .and_then(|t| t.iter().find_map(|(key, fields)| fields.get(port).map(|v| (key, v))));
    let cable_m = match cable {
        None => DEFAULT_CABLE_LENGTH_M,
        Some((key, text)) => {
            let issue = |message: String| ConfigIssue::new("CABLE_LENGTH", key, port, text, message);
            match parse_cable_m(text).map_err(issue)? {
                0 => {
                    return Err(issue(
                        "0m: SONiC creates no lossless profile for a port with cable length 0m".into(),
                    ));
                }
                metres => metres,
            }
        }
    };
    Ok(PortParams { speed_mbps, cable_m, mtu })
}

/// A generated profile's name and fields.
type GeneratedProfile = (String, Vec<(&'static str, String)>);

fn lossless_profile(
    model: &HeadroomModel,
    port: &str,
    params: &PortParams,
    request: &PgRequest,
    default_threshold: i64,
    pool_mode: &str,
) -> Result<GeneratedProfile, ConfigIssue> {
    let issue =
        |message: String| ConfigIssue::new("BUFFER_PG", request.key, "profile", request.value, message);
    let mut name = format!("pg_lossless_{}_{}m", params.speed_mbps, params.cable_m);
    let mut fields = vec![("pool", request.pool.clone())];
    let (headroom, default_threshold, threshold_field) = match model {
        HeadroomModel::Lookup(table) => {
            let row = table.lookup(params.speed_mbps, params.cable_m).ok_or_else(|| {
                issue(format!(
                    "Unable to create/update PG profile for port {port}. {}",
                    no_lookup_row(params)
                ))
            })?;
            if let Some(offset) = row.xon_offset {
                fields.push(("xon_offset", offset.to_string()));
            }
            let field = if pool_mode == "static" { "static_th" } else { "dynamic_th" };
            (row.headroom(), row.threshold, field)
        }
        HeadroomModel::Dynamic(..) | HeadroomModel::Ieee => {
            let headroom = model.headroom(params).map_err(|e| issue(format!("{port}: {e}")))?;
            if params.mtu != DEFAULT_PORT_MTU {
                name.push_str(&format!("_mtu{}", params.mtu));
            }
            (headroom, default_threshold, "dynamic_th")
        }
    };
    let threshold = request.threshold.unwrap_or(default_threshold);
    if threshold != default_threshold {
        name.push_str(&format!("_th{threshold}"));
    }
    name.push_str("_profile");
    fields.extend([
        ("xon", headroom.xon.to_string()),
        ("xoff", headroom.xoff.to_string()),
        ("size", headroom.size.to_string()),
        (threshold_field, threshold.to_string()),
    ]);
    Ok((name, fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lossless_dataplane::model::config::compile;

    const KB_DECIMAL: f64 = 1000.0;

    #[test]
    fn tomahawk_rows_are_sonic_md_7_1() {
        let th = LookupTable::th_balanced();
        assert_eq!(th.len(), 15);
        assert_eq!(
            th.lookup(100_000, 40),
            Some(LookupRow {
                speed_mbps: 100_000,
                cable_m: 40,
                size: 1248,
                xon: 2288,
                xoff: 177_632,
                threshold: 0,
                xon_offset: Some(2288),
            })
        );
        // xoff by speed × {5m, 40m, 300m}; size, xon, threshold and xon_offset are the same in every row.
        let xoff = [
            (10_000, [35_776, 37_024, 46_176]),
            (25_000, [53_248, 53_248, 79_040]),
            (40_000, [66_560, 71_552, 108_160]),
            (50_000, [90_272, 96_096, 141_856]),
            (100_000, [165_568, 177_632, 268_736]),
        ];
        for (speed, by_cable) in xoff {
            for (cable, xoff) in [5, 40, 300].into_iter().zip(by_cable) {
                let row = th.lookup(speed, cable).unwrap();
                assert_eq!(
                    (row.size, row.xon, row.xoff, row.threshold),
                    (1248, 2288, xoff, 0),
                    "{speed} {cable}m"
                );
                assert_eq!(row.xon_offset, Some(2288));
            }
        }
    }

    #[test]
    fn sn2700_rows_are_sonic_md_7_4() {
        let sn = LookupTable::sn2700();
        assert_eq!(sn.len(), 15);
        let row = sn.lookup(100_000, 40).unwrap();
        assert_eq!(
            (row.size, row.xon, row.xoff, row.threshold, row.xon_offset),
            (58_368, 19_456, 38_912, 0, None)
        );
        let size_xoff = [
            ((10_000, 5), (49_152, 29_696)),
            ((25_000, 5), (49_152, 29_696)),
            ((40_000, 5), (49_152, 29_696)),
            ((50_000, 5), (49_152, 29_696)),
            ((100_000, 5), (50_176, 30_720)),
            ((10_000, 40), (49_152, 29_696)),
            ((25_000, 40), (51_200, 31_744)),
            ((40_000, 40), (52_224, 32_768)),
            ((50_000, 40), (53_248, 33_792)),
            ((100_000, 40), (58_368, 38_912)),
            ((10_000, 300), (56_320, 36_864)),
            ((25_000, 300), (67_584, 48_128)),
            ((40_000, 300), (78_848, 59_392)),
            ((50_000, 300), (86_016, 66_560)),
            ((100_000, 300), (123_904, 104_448)),
        ];
        for ((speed, cable), (size, xoff)) in size_xoff {
            let row = sn.lookup(speed, cable).unwrap();
            assert_eq!((row.size, row.xon, row.xoff), (size, 19_456, xoff), "{speed} {cable}m");
        }
        assert_eq!(sn.lookup(100_000, 7), None);
        assert_eq!(sn.lookup(200_000, 5), None);
    }

    #[test]
    fn lookup_parse_errors_name_the_line() {
        let cases = [
            ("# speed cable size xon xoff threshold\n\n 10000 5m 1 2 3\n", 3, "expected 6 or 7 columns"),
            ("10000 5m 1 2 3 0\n10000 5 1 2 3 0\n", 2, "cable length \"5\" is not a whole number of metres"),
            ("10000 5m 1 2 3 0 1 9\n", 1, "found 8"),
            ("100G 5m 1 2 3 0\n", 1, "speed \"100G\""),
            ("10000 5m 1 -2 3 0\n", 1, "xon \"-2\" is not a number of bytes"),
            ("10000 5m 1 2 3 x\n", 1, "threshold \"x\""),
            ("10000 5m 1 2 3 0\n  # again\n10000 5m 4 5 6 0\n", 3, "(the first is on line 1)"),
        ];
        for (text, line, message) in cases {
            let error = LookupTable::parse(text).unwrap_err();
            assert_eq!(error.line, line, "{text:?}: {error}");
            assert!(error.to_string().contains(message), "{text:?}: {error}");
        }
        let table: LookupTable = "  # comment\n\n25000 2m 10 20 30 -1 5\n".parse().unwrap();
        assert_eq!(table.lookup(25_000, 2).unwrap().threshold, -1);
    }

    /// models.md §2.5's table, in KB of 1000 bytes (9.9 KB at 25G/3 m/1500 is 9,874 bytes; in KiB it
    /// would read 9.6). The table prints one decimal, so an exact implementation of its formula lands
    /// within half of that digit, ±50 bytes: tighter than a percentage, and it checks every entry.
    #[test]
    fn ieee_matches_the_models_md_table() {
        let table = [
            (25_000, 3, [9.9, 15.3, 25.3]),
            (25_000, 10, [10.1, 15.5, 25.5]),
            (25_000, 100, [12.9, 18.3, 28.3]),
            (25_000, 300, [19.2, 24.6, 34.6]),
            (100_000, 3, [59.4, 64.8, 74.9]),
            (100_000, 10, [60.3, 65.7, 75.7]),
            (100_000, 100, [71.6, 77.0, 87.0]),
            (100_000, 300, [96.6, 102.0, 112.0]),
        ];
        for (speed, cable, by_mtu) in table {
            let delays = IeeeDelays::for_speed(speed).unwrap();
            for (mtu, expected_kb) in [1500, 4200, 9216].into_iter().zip(by_mtu) {
                let port = PortParams::new(speed, cable, mtu);
                let h = ieee_worst_case(&port, mtu, mtu, delays.interface_bits, delays.response_bits);
                let error = (h.size as f64 - expected_kb * KB_DECIMAL).abs();
                assert!(error <= 50.0, "{speed} {cable}m MTU {mtu}: {} bytes vs {expected_kb} KB", h.size);
                assert_eq!((h.xon, h.xoff), (0, h.size));
            }
        }
        // 25G, 3 m, 1500: 12,160 + 672 + 12,288 + 750 + 40,960 + 12,160 = 78,990 bits = 9,873.75 bytes.
        let h = ieee_worst_case(&PortParams::new(25_000, 3, 1500), 1500, 1500, 6_144, 40_960);
        assert_eq!(h.size, 9_874);
        let term_bytes: Vec<u64> = h.terms.iter().map(|(_, b)| *b).collect();
        assert_eq!(term_bytes, [1520, 84, 1536, 94, 5120, 1520]);
        // models.md's components at 100G: cable 12.5 KB per 100 m, 2 × interface 30.7 KB, response 25.2 KB.
        let h = ieee_worst_case(&PortParams::new(100_000, 100, 1500), 1500, 1500, 122_880, 201_728);
        assert_eq!(h.terms[2].1, 30_720);
        assert_eq!(h.terms[3].1, 12_500);
        assert_eq!(h.terms[4].1, 25_216);
        assert_eq!(IeeeDelays::for_speed(400_000), None);
    }

    /// vs ASIC (cell 128, pipeline 18 KB, mac_phy 0.8 KB), 100G, 5 m, port MTU 9100, lossless MTU 1024,
    /// 100 % small packets, by hand:
    ///
    /// ```text
    /// worst_case_factor = 2·128 / 129                                   = 1.984496
    /// cell_occupancy    = (100 − 100 + 100 · 1.984496) / 100           = 1.984496
    /// cable             = 2 · 5 m / 198,000,000 m/s · 100e9 b/s / 8    =    631.31
    /// mac_phy_delay     = 0.8 · 1024                                    =    819.20
    /// peer_response     = 394 quanta · 512 / 8                          = 25,216
    /// propagation_delay = 9,100 + 631.31 + 0 + 819.20 + 25,216          = 35,766.51
    /// xoff              = 1,024 + 35,766.51 · 1.984496 = 72,002.5 → 71 KB = 72,704
    /// xon               = 18 · 1024                                     = 18,432
    /// size              = 18,432 + 72,704                               = 91,136   (SHP: 18,432)
    /// ```
    #[test]
    fn dynamic_formula_on_vs_by_hand() {
        let port = PortParams::new(100_000, 5, 9100);
        let pattern = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 100 };
        let h = sonic_dynamic(&AsicParams::vs(), &port, &pattern, false);
        assert_eq!((h.xon, h.xoff, h.size), (18_432, 72_704, 91_136));
        let terms: Vec<u64> = h.terms.iter().map(|(_, bytes)| *bytes).collect();
        assert_eq!(terms, [9_100, 631, 819, 25_216, 35_767, 70_979, 1_024, 18_432]);
        assert!(h.terms[3].0.contains("394 pause quanta"), "{:?}", h.terms[3]);
        assert!(h.terms[5].0.contains("cell_occupancy 1.9845"), "{:?}", h.terms[5]);

        let shp = sonic_dynamic(&AsicParams::vs(), &port, &pattern, true);
        assert_eq!((shp.xon, shp.xoff, shp.size), (18_432, 72_704, 18_432));
    }

    /// 50 % small packets, lossless MTU 1024: by packets, cell_occupancy = (50 + 50 · 1.984496) / 100 =
    /// 1.492248, xoff = 1,024 + 35,766.51 · 1.492248 = 54,397 → 54 KB... 55,296; by bytes the small packets
    /// are 6,400 / 544 = 11.76 % of the bytes, cell_occupancy = 1.115823, xoff = 40,933 → 40,960.
    #[test]
    fn small_packets_by_bytes_or_by_packets() {
        let port = PortParams::new(100_000, 5, 9100);
        let pattern = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 50 };
        let by_bytes = sonic_dynamic(&AsicParams::vs(), &port, &pattern, false);
        assert_eq!(by_bytes.xoff, 40_960);
        let mut asic = AsicParams::vs();
        asic.formula.small_packets_by_bytes = false;
        assert_eq!(sonic_dynamic(&asic, &port, &pattern, false).xoff, 55_296);
        // 0 %: by packets, the lossless MTU plus the propagation delay, 36,790.5 → 36,864; the Lua's "by
        // bytes" expression still counts 6,400 / 1,024 = 6.25 %: 1,024 + 35,766.51 · 1.061531 = 38,991 → 39,936.
        let none = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 0 };
        assert_eq!(sonic_dynamic(&asic, &port, &none, false).xoff, 36_864);
        assert_eq!(sonic_dynamic(&AsicParams::vs(), &port, &none, false).xoff, 39_936);
    }

    /// Every row of Mellanox's SN2700 table is the dynamic formula with the Spectrum-1 ASIC values, the
    /// ASIC peer response (3.8 KB) and the worst-case factor rounded up (192/97 → 2).
    #[test]
    fn sn2700_lookup_table_is_the_dynamic_formula() {
        let asic = AsicParams { formula: FormulaOptions::MELLANOX_LOOKUP_INI, ..AsicParams::spectrum1() };
        let pattern = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 100 };
        let table = LookupTable::sn2700();
        for row in table.rows() {
            let port = PortParams::new(row.speed_mbps, row.cable_m, 9100);
            let h = sonic_dynamic(&asic, &port, &pattern, false);
            assert_eq!((h.xon, h.xoff, h.size), (row.xon, row.xoff, row.size), "{row:?}");
        }
        // Today's formula asks for more at 100G: the IEEE peer response (25,216 bytes) dwarfs 3.8 KB.
        let today =
            sonic_dynamic(&AsicParams::spectrum1(), &PortParams::new(100_000, 40, 9100), &pattern, false);
        assert!(today.xoff > 2 * 38_912, "{today}");
    }

    #[test]
    fn peer_response_falls_back_to_the_asic_for_unknown_speeds() {
        let pattern = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 100 };
        let h = sonic_dynamic(&AsicParams::vs(), &PortParams::new(5_000, 5, 9100), &pattern, false);
        let (label, bytes) = &h.terms[3];
        assert_eq!((label.as_str(), *bytes), ("peer_response_time (ASIC_TABLE)", 3_891));
        assert_eq!(pause_quanta(800_000), Some(905));
        assert_eq!(pause_quanta(25_000), Some(80));
    }

    #[test]
    fn gearbox_counts_both_ways() {
        let pattern = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 0 };
        let asic = AsicParams { gearbox_delay_ns: 100, ..AsicParams::vs() };
        let h = sonic_dynamic(&asic, &PortParams::new(100_000, 5, 9100), &pattern, false);
        // 100 ns at 100G = 1,250 bytes, twice.
        assert_eq!(h.terms[2], ("gearbox 2 × 100 ns".to_owned(), 2_500));
    }

    #[test]
    fn shared_headroom_pool_from_the_over_subscribe_ratio() {
        // 32 lossless PGs of (19,456 + 38,912 − 19,456) on 16 ports, ratio 2.
        let pgs_xoff_sum = 32 * 38_912;
        let private = 16 * PRIVATE_HEADROOM_PER_PORT_BYTES;
        assert_eq!(shared_headroom_pool_size(pgs_xoff_sum, private, 2), (1_245_184 - 163_840) / 2);
        assert_eq!(shared_headroom_pool_size(10, 0, 3), 4);
        assert_eq!(shared_headroom_pool_size(100, 200, 2), SHARED_HEADROOM_POOL_FALLBACK_BYTES);
        assert_eq!(shared_headroom_pool_size(1_000_000, 0, 0), SHARED_HEADROOM_POOL_FALLBACK_BYTES);
    }

    /// UCloud's examples with Tm1 + Tm2 solved back from them (the article does not publish it):
    /// 100G, 100 m fibre: (1,740 + 1,000 ns) · 100 b/ns / 672 = 407.7 → 408 cells;
    /// 25G, 15 m AOC: (2,480 + 150 ns) · 25 b/ns / 672 = 97.8 → 98 cells.
    #[test]
    fn ucloud_examples() {
        let h = ucloud(&PortParams::new(100_000, 100, 9216), 1_740, 208);
        assert_eq!(h.size, 408 * 208);
        assert!(h.terms[2].0.starts_with("408 cells"), "{h}");
        let h = ucloud(&PortParams::new(25_000, 15, 9216), 2_480, 208);
        assert_eq!((h.xon, h.xoff, h.size), (0, 98 * 208, 98 * 208));
    }

    #[test]
    fn display_lists_every_term_in_bytes() {
        let pattern = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 100 };
        let h = sonic_dynamic(&AsicParams::vs(), &PortParams::new(100_000, 5, 9100), &pattern, false);
        let text = h.to_string();
        let expected = "\
xon                                                                                                     18,432 bytes
xoff                                                                                                    72,704 bytes
size                                                                                                    91,136 bytes
  port_mtu                                                                                               9,100 bytes
  cable 5 m, round trip at 198,000,000 m/s                                                                 631 bytes
  mac_phy_delay                                                                                            819 bytes
  peer_response (394 pause quanta, IEEE 802.3 31B.3.7)                                                  25,216 bytes
  propagation_delay (sum of the above)                                                                  35,767 bytes
  propagation_delay × cell_occupancy 1.9845 (worst_case_factor 1.9845, small packets 100.0 % of bytes)  70,979 bytes
  lossless_mtu                                                                                           1,024 bytes
  pipeline_latency (xon)                                                                                18,432 bytes
";
        assert_eq!(text, expected);
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }

    fn small_db() -> ConfigDb {
        let mut db = ConfigDb::default();
        db.set("PORT", "Ethernet0", "speed", "100000")
            .set("PORT", "Ethernet4", "speed", "25000")
            .set("PORT", "Ethernet8", "speed", "100000")
            .set("PORT", "Ethernet8", "mtu", "4200")
            .set("CABLE_LENGTH", "AZURE", "Ethernet0", "40m")
            .set("CABLE_LENGTH", "AZURE", "Ethernet4", "300m")
            .set("BUFFER_POOL", "ingress_lossless_pool", "type", "ingress")
            .set("BUFFER_POOL", "ingress_lossless_pool", "mode", "dynamic")
            .set("BUFFER_POOL", "ingress_lossless_pool", "size", "10875072")
            .set("BUFFER_PROFILE", "ingress_lossy_profile", "pool", "ingress_lossless_pool")
            .set("BUFFER_PROFILE", "ingress_lossy_profile", "dynamic_th", "3")
            .set("BUFFER_PG", "Ethernet0|0", "profile", "ingress_lossy_profile")
            .set("BUFFER_PG", "Ethernet0,Ethernet4|3-4", "profile", "NULL");
        db
    }

    fn fields(db: &ConfigDb, table: &str, key: &str) -> Vec<(String, String)> {
        let entry = field_map(db, table, key).unwrap_or_else(|| panic!("no {table}|{key}"));
        entry.iter().map(|(f, v)| (f.clone(), v.clone())).collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(f, v)| (f.to_string(), v.to_string())).collect()
    }

    #[test]
    fn null_pgs_get_lookup_profiles() {
        let mut db = small_db();
        let created = generate_lossless_profiles(&mut db, &HeadroomModel::Lookup(LookupTable::th_balanced()));
        assert_eq!(created.unwrap(), ["pg_lossless_100000_40m_profile", "pg_lossless_25000_300m_profile"]);
        assert_eq!(
            fields(&db, "BUFFER_PROFILE", "pg_lossless_100000_40m_profile"),
            pairs(&[
                ("dynamic_th", "0"),
                ("pool", "ingress_lossless_pool"),
                ("size", "1248"),
                ("xoff", "177632"),
                ("xon", "2288"),
                ("xon_offset", "2288"),
            ])
        );
        assert_eq!(field(&db, "BUFFER_PROFILE", "pg_lossless_25000_300m_profile", "xoff").unwrap(), "79040");
        // The two-port key became one key per port; the lossy PG is untouched.
        let pgs: Vec<(&str, &str)> =
            db.tables["BUFFER_PG"].iter().map(|(k, f)| (k.as_str(), f["profile"].as_str())).collect();
        assert_eq!(
            pgs,
            [
                ("Ethernet0|0", "ingress_lossy_profile"),
                ("Ethernet0|3-4", "pg_lossless_100000_40m_profile"),
                ("Ethernet4|3-4", "pg_lossless_25000_300m_profile"),
            ]
        );
        // Nothing left to compute: a second run changes nothing.
        let before = db.clone();
        assert_eq!(
            generate_lossless_profiles(&mut db, &HeadroomModel::Lookup(LookupTable::th_balanced())),
            Ok(vec![])
        );
        assert_eq!(db, before);
    }

    #[test]
    fn unknown_cable_is_sonics_error_and_changes_nothing() {
        let mut db = small_db();
        db.set("CABLE_LENGTH", "AZURE", "Ethernet0", "7m");
        let before = db.clone();
        let errors =
            generate_lossless_profiles(&mut db, &HeadroomModel::Lookup(LookupTable::sn2700())).unwrap_err();
        assert_eq!(db, before);
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "BUFFER_PG|Ethernet0,Ethernet4|3-4|profile: Unable to create/update PG profile for port Ethernet0. \
                 No PG profile configured for speed 100000 and cable length 7m"
            ]
        );
        assert_eq!(errors[0].value, "NULL");
    }

    #[test]
    fn port_inputs_are_checked() {
        let mut db = small_db();
        db.set("BUFFER_PG", "Ethernet12|3", "profile", "NULL")
            .set("PORT", "Ethernet4", "speed", "25G")
            .set("CABLE_LENGTH", "AZURE", "Ethernet0", "0m")
            .set("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "AZURE", "default_dynamic_th", "9");
        let errors = generate_lossless_profiles(&mut db, &HeadroomModel::Ieee).unwrap_err();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "BUFFER_PG|Ethernet12|3: \"Ethernet12\" is not a port (there is no PORT|Ethernet12)",
                "CABLE_LENGTH|AZURE|Ethernet0: 0m: SONiC creates no lossless profile for a port with cable length 0m",
                "DEFAULT_LOSSLESS_BUFFER_PARAMETER|AZURE|default_dynamic_th: \"9\" is not a dynamic_th in -8..7",
                "PORT|Ethernet4|speed: \"25G\" is not a speed in Mb/s",
            ]
        );
    }

    #[test]
    fn dynamic_names_carry_mtu_and_threshold() {
        let mut db = small_db();
        db.set("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "AZURE", "default_dynamic_th", "1")
            .set("BUFFER_PG", "Ethernet8|3", "profile", "NULL")
            .set("BUFFER_PROFILE", "roce_alpha_2", "pool", "[BUFFER_POOL|ingress_lossless_pool]")
            .set("BUFFER_PROFILE", "roce_alpha_2", "dynamic_th", "2")
            .set("BUFFER_PROFILE", "roce_alpha_2", "headroom_type", "dynamic")
            .set("BUFFER_PG", "Ethernet8|4", "profile", "[BUFFER_PROFILE|roce_alpha_2]");
        let pattern = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 100 };
        let model = HeadroomModel::Dynamic(AsicParams::vs(), pattern, false);
        let created = generate_lossless_profiles(&mut db, &model).unwrap();
        assert_eq!(
            created,
            [
                "pg_lossless_100000_40m_profile",
                "pg_lossless_25000_300m_profile",
                "pg_lossless_100000_5m_mtu4200_profile",
                "pg_lossless_100000_5m_mtu4200_th2_profile",
            ]
        );
        let expected = sonic_dynamic(&AsicParams::vs(), &PortParams::new(100_000, 5, 4200), &pattern, false);
        let name = "pg_lossless_100000_5m_mtu4200_th2_profile";
        assert_eq!(field(&db, "BUFFER_PROFILE", name, "xoff").unwrap(), &expected.xoff.to_string());
        assert_eq!(field(&db, "BUFFER_PROFILE", name, "dynamic_th").unwrap(), "2");
        assert_eq!(
            field(&db, "BUFFER_PROFILE", "pg_lossless_100000_40m_profile", "dynamic_th").unwrap(),
            "1"
        );
        assert_eq!(field(&db, "BUFFER_PG", "Ethernet8|4", "profile").unwrap(), name);
        assert_eq!(
            field(&db, "BUFFER_PG", "Ethernet8|3", "profile").unwrap(),
            "pg_lossless_100000_5m_mtu4200_profile"
        );
    }

    #[test]
    fn splitting_a_key_does_not_overwrite_a_port_entry() {
        let mut db = small_db();
        db.set("BUFFER_PG", "Ethernet4|3-4", "profile", "ingress_lossy_profile");
        let errors = generate_lossless_profiles(&mut db, &HeadroomModel::Lookup(LookupTable::th_balanced()))
            .unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.contains("BUFFER_PG|Ethernet4|3-4 already exists"), "{}", errors[0]);
    }

    /// The shipped SONiC-profile configs, with their lossless PGs turned into NULL and their
    /// pg_lossless profiles removed, come back exactly as written and compile: the lookup tables are
    /// what those files were written from, and for SN2700 the dynamic formula gives the same profiles.
    #[test]
    fn shipped_profiles_regenerate_from_null() {
        let th = include_str!("../../configs/profiles/th_balanced.yaml");
        let sn = include_str!("../../configs/profiles/sn2700.yaml");
        let spectrum1_ini = HeadroomModel::Dynamic(
            AsicParams { formula: FormulaOptions::MELLANOX_LOOKUP_INI, ..AsicParams::spectrum1() },
            TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 100 },
            false,
        );
        let cases = [
            (th, HeadroomModel::Lookup(LookupTable::th_balanced())),
            (sn, HeadroomModel::Lookup(LookupTable::sn2700())),
            (sn, spectrum1_ini),
        ];
        for (yaml, model) in cases {
            let original = ConfigDb::from_yaml_str(yaml).unwrap();
            let mut db = original.clone();
            let profiles = db.tables.get_mut("BUFFER_PROFILE").unwrap();
            profiles.retain(|name, _| !name.starts_with("pg_lossless_"));
            let mut lossless_pgs = 0;
            for (key, fields) in db.tables.get_mut("BUFFER_PG").unwrap() {
                if strip_reference("BUFFER_PROFILE", &fields["profile"]).starts_with("pg_lossless_") {
                    fields.insert("profile".into(), "NULL".into());
                    lossless_pgs += 1;
                    assert!(key.ends_with("|3-4"));
                }
            }
            assert!(lossless_pgs >= 4);
            generate_lossless_profiles(&mut db, &model).unwrap();
            for (name, fields) in &original.tables["BUFFER_PROFILE"] {
                assert_eq!(&db.tables["BUFFER_PROFILE"][name], fields, "{name}");
            }
            assert_eq!(db.tables["BUFFER_PROFILE"].len(), original.tables["BUFFER_PROFILE"].len());
            for (key, fields) in &original.tables["BUFFER_PG"] {
                let regenerated = &db.tables["BUFFER_PG"][key]["profile"];
                let written = strip_reference("BUFFER_PROFILE", &fields["profile"]);
                assert_eq!(strip_reference("BUFFER_PROFILE", regenerated), written, "{key}");
            }
            compile(&db).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn config_helpers() {
        let mut db = ConfigDb::default();
        assert_eq!(TrafficPattern::from_config(&db), Ok(None));
        assert!(!shp_enabled_in_config(&db));
        db.set("LOSSLESS_TRAFFIC_PATTERN", "AZURE", "mtu", "1024")
            .set("LOSSLESS_TRAFFIC_PATTERN", "AZURE", "small_packet_percentage", "50")
            .set("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "AZURE", "over_subscribe_ratio", "0")
            .set("BUFFER_POOL", "ingress_lossless_pool", "xoff", "0");
        assert_eq!(
            TrafficPattern::from_config(&db),
            Ok(Some(TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 50 }))
        );
        assert!(!shp_enabled_in_config(&db));
        db.set("BUFFER_POOL", "ingress_lossless_pool", "xoff", "4194112");
        assert!(shp_enabled_in_config(&db));
        db.set("LOSSLESS_TRAFFIC_PATTERN", "AZURE", "small_packet_percentage", "101");
        let issue = TrafficPattern::from_config(&db).unwrap_err();
        assert_eq!(issue.location(), "LOSSLESS_TRAFFIC_PATTERN|AZURE|small_packet_percentage");
    }
}

// ---------------------------------------------------------------------------------------------------
// Checking configured headroom

/// Warnings for lossless PG profiles whose `xoff` is below what `model` computes for a port that uses them
/// (its speed, MTU and CABLE_LENGTH): such a PG can drop after XOFF while the peer is still sending.
/// Each warning names `BUFFER_PROFILE|<profile>|xoff`, the port and both numbers. Profiles are checked once
/// per (speed, cable, MTU). A configuration that does not compile yields no warnings here (its errors are
/// reported by validation).
pub fn check_headroom(db: &ConfigDb, model: &HeadroomModel) -> Vec<ConfigIssue> {
    let Ok(compiled) = lossless_dataplane::model::config::compile(db) else { return Vec::new() };
    let config = &compiled.config;
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for (i, port) in config.ports.iter().enumerate() {
        let qos = &config.qos[i];
        let cable_m = cable_length_m(db, &port.name);
        for pg in 0..8usize {
            let lossless =
                (0..8).any(|p| qos.pfc_enable & (1 << p) != 0 && usize::from(qos.pfc_to_pg[p]) == pg);
            let Some(profile) = config.port_buffers.get(i).and_then(|b| b.pg_profile[pg]) else { continue };
            if !lossless {
                continue;
            }
            let profile = &config.profiles[profile];
            if !seen.insert((profile.name.clone(), port.speed_mbps, cable_m, port.mtu)) {
                continue;
            }
            let params = PortParams::new(port.speed_mbps, cable_m, port.mtu);
            let Ok(needed) = model.headroom(&params) else { continue };
            if profile.xoff_bytes < needed.xoff {
                out.push(ConfigIssue::new(
                    "BUFFER_PROFILE",
                    &profile.name,
                    "xoff",
                    &profile.xoff_bytes.to_string(),
                    format!(
                        "xoff {} is below the {} bytes of headroom the calculator gives {} ({} Mb/s, {} m, MTU {}): \
                         the PG may drop after XOFF",
                        thousands(profile.xoff_bytes),
                        thousands(needed.xoff),
                        port.name,
                        port.speed_mbps,
                        cable_m,
                        port.mtu
                    ),
                ));
            }
        }
    }
    out
}

/// The port's cable length from any CABLE_LENGTH entry (`"40m"`), else the default.
fn cable_length_m(db: &ConfigDb, port: &str) -> u32 {
    db.tables
        .get("CABLE_LENGTH")
        .and_then(|t| t.values().find_map(|fields| fields.get(port)))
        .and_then(|v| v.trim_end_matches('m').parse().ok())
        .unwrap_or(DEFAULT_CABLE_LENGTH_M)
}

#[cfg(test)]
mod check_tests {
    use super::*;

    #[test]
    fn a_profile_below_the_calculator_is_a_warning_with_both_numbers() {
        let mut db =
            ConfigDb::from_yaml_str(include_str!("../../configs/profiles/th_balanced.yaml")).unwrap();
        let model = HeadroomModel::Lookup(LookupTable::th_balanced());
        assert!(check_headroom(&db, &model).is_empty(), "the shipped profile matches its own lookup table");
        db.set("BUFFER_PROFILE", "pg_lossless_100000_40m_profile", "xoff", "100000");
        let warnings = check_headroom(&db, &model);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let w = &warnings[0];
        assert_eq!(w.location(), "BUFFER_PROFILE|pg_lossless_100000_40m_profile|xoff");
        assert!(
            w.message.contains("100,000") && w.message.contains("177,632") && w.message.contains("Ethernet0"),
            "{}",
            w.message
        );
    }
}
