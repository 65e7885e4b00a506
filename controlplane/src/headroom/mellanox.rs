//! The dynamic buffer model's headroom as SONiC computes it for NVIDIA Spectrum switches and for sonic-vs
//! (whose `buffer_headroom_vs.lua` is a link to the same plugin): sonic-swss
//! `cfgmgr/buffer_headroom_mellanox.lua`, fed with STATE_DB `ASIC_TABLE` (sonic-buildimage
//! `platform/mellanox/asic_table.j2`, `platform/vs/docker-sonic-vs/asic_table.json`), `PERIPHERAL_TABLE`
//! (`platform/mellanox/peripheral_table.j2`) and CONFIG_DB `LOSSLESS_TRAFFIC_PATTERN`
//! (`files/build_templates/buffers_config.j2`). Also the shared headroom pool size of
//! `cfgmgr/buffer_pool_mellanox.lua`.
//!
//! Revisions of the plugin differ; [`FormulaOptions`] names them, [`FormulaOptions::MASTER`] is today's.

use lossless_dataplane::model::config::{ConfigDb, ConfigIssue};
use std::fmt;

use super::{Headroom, INGRESS_LOSSLESS_POOL, KB, PortParams, field, round_up_to_kb};

#[cfg(test)]
mod tables_tests;

/// Private headroom `buffer_pool_mellanox.lua` keeps per lossless port when the shared headroom pool is on.
pub const PRIVATE_HEADROOM_PER_PORT_BYTES: u64 = 10 * 1024;
/// Shared headroom pool size `buffer_pool_mellanox.lua` falls back to when the ratio gives nothing.
pub const SHARED_HEADROOM_POOL_FALLBACK_BYTES: u64 = 655_360;

/// `speed_of_light` of the Lua: the signal speed in fibre, about 2/3 c.
const SPEED_OF_LIGHT_M_PER_S: f64 = 198_000_000.0;
/// `minimal_packet_size`: the smallest packet, the worst case of cell occupancy.
const MINIMAL_PACKET_BYTES: f64 = 64.0;
/// `headroom_compensation` (sonic-swss #4757).
const SMALL_PACKET_COMPENSATION_BYTES: u64 = 2 * 1024;
/// `spectrum6_headroom_compensation` (sonic-swss #4797).
const SPECTRUM6_COMPENSATION_BYTES: u64 = 18 * 1024;

// ------------------------------------------------------------------------------------------------------
// ASICs

/// The ASICs whose `ASIC_TABLE` SONiC ships for the dynamic buffer model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Asic {
    /// sonic-vs, `ASIC_TABLE|VS-ASIC`.
    Vs,
    Spectrum1,
    Spectrum2,
    Spectrum3,
    Spectrum4,
    Spectrum5,
    Spectrum6,
}

/// `platform2asic` of `asic_table.j2`: the platforms SONiC knows the Spectrum generation of.
const PLATFORM_ASIC: &[(&str, Asic)] = &[
    ("x86_64-mlnx_lssn2700-r0", Asic::Spectrum1),
    ("x86_64-mlnx_msn2010-r0", Asic::Spectrum1),
    ("x86_64-mlnx_msn2100-r0", Asic::Spectrum1),
    ("x86_64-mlnx_msn2410-r0", Asic::Spectrum1),
    ("x86_64-mlnx_msn2700-r0", Asic::Spectrum1),
    ("x86_64-mlnx_msn2700a1-r0", Asic::Spectrum1),
    ("x86_64-mlnx_msn2700_simx-r0", Asic::Spectrum1),
    ("x86_64-mlnx_msn2740-r0", Asic::Spectrum1),
    ("x86_64-nvidia_sn2201-r0", Asic::Spectrum1),
    ("x86_64-mlnx_msn3420-r0", Asic::Spectrum2),
    ("x86_64-mlnx_msn3700c-r0", Asic::Spectrum2),
    ("x86_64-mlnx_msn3700-r0", Asic::Spectrum2),
    ("x86_64-mlnx_msn3700_simx-r0", Asic::Spectrum2),
    ("x86_64-mlnx_msn3800-r0", Asic::Spectrum2),
    ("x86_64-mlnx_msn4410-r0", Asic::Spectrum3),
    ("x86_64-mlnx_msn4700_simx-r0", Asic::Spectrum3),
    ("x86_64-mlnx_msn4700-r0", Asic::Spectrum3),
    ("x86_64-mlnx_msn4600c-r0", Asic::Spectrum3),
    ("x86_64-mlnx_msn4600-r0", Asic::Spectrum3),
    ("x86_64-nvidia_sn4280_simx-r0", Asic::Spectrum3),
    ("x86_64-nvidia_sn4280-r0", Asic::Spectrum3),
    ("x86_64-nvidia_sn4800-r0", Asic::Spectrum3),
    ("x86_64-nvidia_sn4800_simx-r0", Asic::Spectrum3),
    ("x86_64-nvidia_sn5400-r0", Asic::Spectrum4),
    ("x86_64-nvidia_sn5600-r0", Asic::Spectrum4),
    ("x86_64-nvidia_sn5610n-r0", Asic::Spectrum4),
    ("x86_64-nvidia_sn5400_simx-r0", Asic::Spectrum4),
    ("x86_64-nvidia_sn5600_simx-r0", Asic::Spectrum4),
    ("x86_64-nvidia_sn5640-r0", Asic::Spectrum5),
    ("x86_64-nvidia_sn5640_simx-r0", Asic::Spectrum5),
    ("x86_64-nvidia_sn6600_simx-r0", Asic::Spectrum6),
    ("x86_64-nvidia_sn6600_ld-r0", Asic::Spectrum6),
    ("x86_64-nvidia_sn6810_ld-r0", Asic::Spectrum6),
    ("x86_64-nvidia_sn6810_ld_simx-r0", Asic::Spectrum6),
];

impl Asic {
    pub const ALL: [Asic; 7] = [
        Asic::Vs,
        Asic::Spectrum1,
        Asic::Spectrum2,
        Asic::Spectrum3,
        Asic::Spectrum4,
        Asic::Spectrum5,
        Asic::Spectrum6,
    ];

    /// The `ASIC_TABLE` key (STATE_DB `ASIC_TABLE|<key>`). The Lua tells Spectrum-4/5 (tile bytes) and
    /// Spectrum-6 (compensation) apart by the key's last character; so does [`sonic_dynamic`].
    pub fn table_key(self) -> &'static str {
        match self {
            Asic::Vs => "VS-ASIC",
            Asic::Spectrum1 => "MELLANOX-SPECTRUM",
            Asic::Spectrum2 => "MELLANOX-SPECTRUM-2",
            Asic::Spectrum3 => "MELLANOX-SPECTRUM-3",
            Asic::Spectrum4 => "MELLANOX-SPECTRUM-4",
            Asic::Spectrum5 => "MELLANOX-SPECTRUM-5",
            Asic::Spectrum6 => "MELLANOX-SPECTRUM-6",
        }
    }

    /// For people: `Spectrum-2`, `sonic-vs`.
    pub fn label(self) -> &'static str {
        match self {
            Asic::Vs => "sonic-vs",
            Asic::Spectrum1 => "Spectrum-1",
            Asic::Spectrum2 => "Spectrum-2",
            Asic::Spectrum3 => "Spectrum-3",
            Asic::Spectrum4 => "Spectrum-4",
            Asic::Spectrum5 => "Spectrum-5",
            Asic::Spectrum6 => "Spectrum-6",
        }
    }

    /// The name `swctl --asic` takes: `vs`, `spectrum1` … `spectrum6`.
    pub fn cli_name(self) -> &'static str {
        match self {
            Asic::Vs => "vs",
            Asic::Spectrum1 => "spectrum1",
            Asic::Spectrum2 => "spectrum2",
            Asic::Spectrum3 => "spectrum3",
            Asic::Spectrum4 => "spectrum4",
            Asic::Spectrum5 => "spectrum5",
            Asic::Spectrum6 => "spectrum6",
        }
    }

    /// [`Asic::cli_name`], `spectrum-2`, `sp2` or the ASIC_TABLE key, in any case.
    pub fn from_name(name: &str) -> Option<Asic> {
        let squashed: String =
            name.chars().filter(|c| !matches!(c, '-' | '_' | ' ')).collect::<String>().to_ascii_lowercase();
        let squashed = squashed.strip_prefix("mellanox").unwrap_or(&squashed);
        Some(match squashed {
            "vs" | "vsasic" | "sonicvs" => Asic::Vs,
            "spectrum" | "spectrum1" | "sp1" => Asic::Spectrum1,
            "spectrum2" | "sp2" => Asic::Spectrum2,
            "spectrum3" | "sp3" => Asic::Spectrum3,
            "spectrum4" | "sp4" => Asic::Spectrum4,
            "spectrum5" | "sp5" => Asic::Spectrum5,
            "spectrum6" | "sp6" => Asic::Spectrum6,
            _ => return None,
        })
    }

    /// Where SONiC keeps this ASIC's `ASIC_TABLE`.
    pub fn origin(self) -> &'static str {
        match self {
            Asic::Vs => "sonic-buildimage platform/vs/docker-sonic-vs/asic_table.json",
            _ => "sonic-buildimage platform/mellanox/asic_table.j2",
        }
    }

    /// The `ASIC_TABLE` fields, with no gearbox and today's formula.
    pub fn params(self) -> AsicParams {
        let (cell_size_bytes, pipeline_latency_kb, port_max_shp_cells) = match self {
            Asic::Vs => (128, 18.0, 0),
            Asic::Spectrum1 => (96, 19.0, 8192),
            Asic::Spectrum2 | Asic::Spectrum3 => (144, 19.0, 8192),
            Asic::Spectrum4 => (192, 19.0, 8192),
            Asic::Spectrum5 => (192, 19.0, 6144),
            Asic::Spectrum6 => (256, 42.0, 6144),
        };
        AsicParams {
            asic: self,
            cell_size_bytes,
            pipeline_latency_kb,
            mac_phy_delay_kb: 0.8,
            peer_response_time_kb: 3.8,
            port_reserved_shp_cells: if self == Asic::Vs { 0 } else { 20 },
            port_max_shp_cells,
            gearbox_delay_ns: 0,
            formula: FormulaOptions::MASTER,
        }
    }

    /// The ASIC of a platform (`DEVICE_METADATA|localhost|platform`), as `asic_table.j2` maps it.
    pub fn for_platform(platform: &str) -> Option<Asic> {
        PLATFORM_ASIC.iter().find(|(p, _)| *p == platform).map(|(_, asic)| *asic)
    }

    /// The ASIC of an NVIDIA hwsku (`ACS-MSN3800`, `Mellanox-SN4600C-D112C8`, `ACS-SN5600`): the model number
    /// after `SN`, looked up among the platforms of `asic_table.j2`.
    pub fn for_hwsku(hwsku: &str) -> Option<Asic> {
        let upper = hwsku.to_ascii_uppercase();
        let at = upper.find("SN")?;
        let digits: String = upper[at + 2..].chars().take_while(char::is_ascii_digit).collect();
        if digits.len() != 4 {
            return None;
        }
        let needle = format!("sn{digits}");
        PLATFORM_ASIC.iter().find(|(p, _)| p.contains(&needle)).map(|(_, asic)| *asic)
    }

    /// `PERIPHERAL_TABLE|<model>|gearbox_delay` of a platform, ns (`platform/mellanox/peripheral_table.j2`:
    /// only the SN3800's gearbox, 400 ns).
    pub fn platform_gearbox_delay_ns(platform: &str) -> u32 {
        if platform == "x86_64-mlnx_msn3800-r0" { 400 } else { 0 }
    }

    /// The speed whose ports always have 8 lanes, so that buffermgrd does not add `_8lane` to their
    /// profile names (`getDynamicProfileName`: 400G on 4xxx models, 800G on 5xxx; here by ASIC).
    pub fn native_8lane_speed(self) -> Option<u32> {
        match self {
            Asic::Spectrum3 => Some(400_000),
            Asic::Spectrum4 | Asic::Spectrum5 => Some(800_000),
            _ => None,
        }
    }
}

impl fmt::Display for Asic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

// ------------------------------------------------------------------------------------------------------
// Formula revisions

/// Where the revisions of `buffer_headroom_mellanox.lua`, and the offline arithmetic behind Mellanox's
/// shipped `pg_profile_lookup.ini` tables, differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormulaOptions {
    /// The peer's response from the IEEE 802.3 31B.3.7 pause quanta of the port speed ([`pause_quanta`]),
    /// else ASIC_TABLE `peer_response_time` (sonic-swss #1930); `false`: always the ASIC value.
    pub peer_response_from_pause_quanta: bool,
    /// `math.ceil(worst_case_factor)` (#3235).
    pub round_up_worst_case_factor: bool,
    /// `small_packet_percentage` converted from packets to bytes (#3235).
    pub small_packets_by_bytes: bool,
    /// Cable bytes divided by 8·1000 (#3235); before, by 8·1024, 2.3 % less.
    pub exact_cable_bytes: bool,
    /// Gearbox bytes divided by 8·1000. The Lua has always divided by 8·1024; Mellanox's SN3800 tables
    /// divide exactly.
    pub exact_gearbox_bytes: bool,
    /// Spectrum-4/5 "kB on tile", `speed / 1000 · 120 / 8` bytes of propagation delay (#3235).
    pub tile_bytes: bool,
    /// 8-lane ports: xon is `2 · pipeline_latency − 1 KB` (#1781 until #3235); `false`:
    /// `2 · pipeline_latency`.
    pub eight_lane_xon_less_1kb: bool,
    /// +2 KB of xoff when small packets are below 100 %, the shared headroom pool is off and xoff stays
    /// more than 2 KB below its 100 %-small-packets value (#4757).
    pub small_packet_compensation: bool,
    /// +18 KB of xoff on Spectrum-6 (#4797).
    pub spectrum6_compensation: bool,
}

impl FormulaOptions {
    /// sonic-swss master (`cfgmgr/buffer_headroom_mellanox.lua` after #4797, 2026).
    pub const MASTER: FormulaOptions = FormulaOptions {
        peer_response_from_pause_quanta: true,
        round_up_worst_case_factor: true,
        small_packets_by_bytes: true,
        exact_cable_bytes: true,
        exact_gearbox_bytes: false,
        tile_bytes: true,
        eight_lane_xon_less_1kb: false,
        small_packet_compensation: true,
        spectrum6_compensation: true,
    };
    /// After #3235 (2024, "Update headroom calculation algorithm"), before the 2026 compensations.
    pub const SWSS_3235: FormulaOptions = FormulaOptions {
        small_packet_compensation: false,
        spectrum6_compensation: false,
        ..FormulaOptions::MASTER
    };
    /// After #1930 (2021, peer response by speed) and #2860 (800G), before #3235.
    pub const SWSS_1930: FormulaOptions = FormulaOptions {
        peer_response_from_pause_quanta: true,
        round_up_worst_case_factor: false,
        small_packets_by_bytes: false,
        exact_cable_bytes: false,
        exact_gearbox_bytes: false,
        tile_bytes: false,
        eight_lane_xon_less_1kb: true,
        small_packet_compensation: false,
        spectrum6_compensation: false,
    };
    /// #1781 (2021, lane count): the ASIC's `peer_response_time` at every speed.
    pub const SWSS_1781: FormulaOptions =
        FormulaOptions { peer_response_from_pause_quanta: false, ..FormulaOptions::SWSS_1930 };
    /// The arithmetic of Mellanox's 2019-2021 `pg_profile_lookup.ini` tables (ACS-MSN2700/3700/3800/4700):
    /// #1781's, with exact cable and gearbox conversions. They were computed at port MTU 9216, a port input.
    pub const MELLANOX_TABLES: FormulaOptions =
        FormulaOptions { exact_cable_bytes: true, exact_gearbox_bytes: true, ..FormulaOptions::SWSS_1781 };

    /// The named revisions, as `swctl --formula` takes them.
    pub const NAMED: [(&'static str, FormulaOptions); 5] = [
        ("master", FormulaOptions::MASTER),
        ("swss-3235", FormulaOptions::SWSS_3235),
        ("swss-1930", FormulaOptions::SWSS_1930),
        ("swss-1781", FormulaOptions::SWSS_1781),
        ("mellanox-tables", FormulaOptions::MELLANOX_TABLES),
    ];

    pub fn from_name(name: &str) -> Option<FormulaOptions> {
        FormulaOptions::NAMED.iter().find(|(n, _)| *n == name).map(|(_, o)| *o)
    }

    /// The name of a named revision, else `custom`.
    pub fn name(&self) -> &'static str {
        FormulaOptions::NAMED.iter().find(|(_, o)| o == self).map_or("custom", |(n, _)| *n)
    }
}

/// ASIC_TABLE (STATE_DB) fields, in SONiC's units, plus the gearbox and the formula revision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AsicParams {
    pub asic: Asic,
    /// `cell_size`, bytes.
    pub cell_size_bytes: u32,
    /// `pipeline_latency`, KB (1024 bytes): becomes `xon` (doubled on 8-lane ports).
    pub pipeline_latency_kb: f64,
    /// `mac_phy_delay`, KB.
    pub mac_phy_delay_kb: f64,
    /// `peer_response_time`, KB: used for speeds without IEEE pause quanta (or always, see
    /// [`FormulaOptions`]).
    pub peer_response_time_kb: f64,
    /// `port_reserved_shp` and `port_max_shp`, cells: the per-port shared headroom limit
    /// `buffer_check_headroom_mellanox.lua` checks, `(max + reserved) · cell_size` (0: not in the table).
    pub port_reserved_shp_cells: u32,
    pub port_max_shp_cells: u32,
    /// PERIPHERAL_TABLE `gearbox_delay` of the ports' gearbox, ns (0: none), one for all ports as with
    /// `PORT_PERIPHERAL_TABLE|global`.
    pub gearbox_delay_ns: u32,
    pub formula: FormulaOptions,
}

impl AsicParams {
    /// sonic-vs `ASIC_TABLE|VS-ASIC`.
    pub fn vs() -> AsicParams {
        Asic::Vs.params()
    }

    /// NVIDIA Spectrum-1 (SN2700 …).
    pub fn spectrum1() -> AsicParams {
        Asic::Spectrum1.params()
    }

    /// The largest shared headroom one port may use, bytes (`buffer_check_headroom_mellanox.lua`).
    pub fn port_max_shared_headroom_bytes(&self) -> u64 {
        u64::from(self.port_max_shp_cells + self.port_reserved_shp_cells) * u64::from(self.cell_size_bytes)
    }
}

/// `LOSSLESS_TRAFFIC_PATTERN|AZURE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrafficPattern {
    /// `mtu`: the largest lossless (RDMA) packet, bytes.
    pub lossless_mtu: u32,
    /// `small_packet_percentage`, 0..=100.
    pub small_packet_percentage: u32,
}

impl TrafficPattern {
    /// What `buffers_config.j2` writes for the dynamic model: mtu 1024, 50 % small packets (100 % until
    /// sonic-buildimage #20632, 2024).
    pub const BUFFERS_CONFIG: TrafficPattern =
        TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 50 };

    /// The first `LOSSLESS_TRAFFIC_PATTERN` entry (the Lua reads the first key, normally `AZURE`); `None`
    /// when the table is empty.
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
/// speed in Mb/s (`pause_quanta_per_speed` of the Lua; 800G as 400G).
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

/// `buffer_headroom_mellanox.lua`, term by term, all in bytes ([`FormulaOptions::MASTER`]; the options
/// switch the older revisions' terms):
///
/// ```text
/// worst_case_factor  = ⌈cell / 64⌉ if cell > 128, else ⌈2·cell / (1 + cell)⌉
/// small %  (bytes)   = 100·64 / ((spp·64 + (100 − spp)·lossless_mtu) / 100)
/// cell_occupancy     = (100 − small% + small% · worst_case_factor) / 100
/// cable              = 2 · cable_m · speed_mbps · 10⁹ / 198,000,000 / (8·1000)    (round trip)
/// gearbox            = speed_mbps · gearbox_delay_ns / (8·1024)                      (one way, as the Lua)
/// peer_response      = pause_quanta(speed) · 512 / 8, else ASIC peer_response_time · 1024
/// tile (Spectrum-4/5)= speed_mbps / 1000 · 120 / 8
/// propagation_delay  = port_mtu + cable + 2 · gearbox + mac_phy_delay · 1024 + peer_response + tile
/// xoff               = ⌈lossless_mtu + propagation_delay · cell_occupancy⌉₁ₖ          (⌈⌉₁ₖ: up to 1024)
///                      + 18 KB on Spectrum-6
///                      + 2 KB if spp ≠ 100, no shared headroom pool, and that xoff + 2 KB is still below
///                        ⌈lossless_mtu + propagation_delay · worst_case_factor⌉₁ₖ
/// xon                = ⌈pipeline_latency · 1024⌉₁ₖ, doubled on 8-lane ports
/// size               = ⌈xon + xoff (+ port_mtu on 8-lane ports)⌉₁ₖ, or xon with a shared headroom pool
/// ```
///
/// 8 lanes: `port.lanes == 8` (the Lua's `ARGV[5]`, buffermgrd's count of `PORT|lanes`).
pub fn sonic_dynamic(
    asic: &AsicParams,
    port: &PortParams,
    pattern: &TrafficPattern,
    shp_enabled: bool,
) -> Headroom {
    let o = asic.formula;
    let key = asic.asic.table_key();
    let speed = f64::from(port.speed_mbps);
    let port_mtu = f64::from(port.mtu);
    let lossless_mtu = f64::from(pattern.lossless_mtu);
    let spp_percent = pattern.small_packet_percentage.min(100);
    let spp = f64::from(spp_percent);
    let eight_lane = port.lanes == 8;

    let mut pipeline = asic.pipeline_latency_kb * KB;
    let speed_overhead = if eight_lane { port_mtu } else { 0.0 };
    if eight_lane {
        pipeline = pipeline * 2.0 - if o.eight_lane_xon_less_1kb { KB } else { 0.0 };
    }

    let cell = f64::from(asic.cell_size_bytes);
    let exact_factor = if cell > 2.0 * MINIMAL_PACKET_BYTES {
        cell / MINIMAL_PACKET_BYTES
    } else {
        2.0 * cell / (1.0 + cell)
    };
    let worst_case_factor = if o.round_up_worst_case_factor { exact_factor.ceil() } else { exact_factor };
    // The Lua's `small_packet_percentage_by_byte`, kept as it is: 100 at 100 %, but not quite the small
    // packets' byte share below that (it lacks a factor spp/100). The Lua has no guard for a zero
    // denominator (0 % small packets and a lossless MTU of 0); this falls back to packets.
    let mean_packet = (spp * MINIMAL_PACKET_BYTES + (100.0 - spp) * lossless_mtu) / 100.0;
    let small_share = if o.small_packets_by_bytes && mean_packet > 0.0 {
        100.0 * MINIMAL_PACKET_BYTES / mean_packet
    } else {
        spp
    };
    let cell_occupancy = (100.0 - small_share + small_share * worst_case_factor) / 100.0;

    let gearbox_divisor = if o.exact_gearbox_bytes { 8.0 * 1000.0 } else { 8.0 * 1024.0 };
    let gearbox = speed * f64::from(asic.gearbox_delay_ns) / gearbox_divisor;
    let quanta = pause_quanta(port.speed_mbps).filter(|_| o.peer_response_from_pause_quanta);
    let (peer_response, peer_label) = match quanta {
        Some(q) => {
            (f64::from(q) * 512.0 / 8.0, format!("peer_response ({q} pause quanta, IEEE 802.3 31B.3.7)"))
        }
        None => (
            asic.peer_response_time_kb * KB,
            format!("peer_response_time (ASIC_TABLE {} KB)", asic.peer_response_time_kb),
        ),
    };
    let cable_divisor = if o.exact_cable_bytes { 8.0 * 1000.0 } else { 8.0 * 1024.0 };
    let cable = 2.0 * f64::from(port.cable_m) * speed * 1e9 / SPEED_OF_LIGHT_M_PER_S / cable_divisor;
    let tile = if o.tile_bytes && (key.ends_with('4') || key.ends_with('5')) {
        speed / 1000.0 * 120.0 / 8.0
    } else {
        0.0
    };
    let mac_phy = asic.mac_phy_delay_kb * KB;
    let propagation = port_mtu + cable + 2.0 * gearbox + mac_phy + peer_response + tile;

    let mut xoff = round_up_to_kb(lossless_mtu + propagation * cell_occupancy);
    let spectrum6 = o.spectrum6_compensation && key.ends_with('6');
    if spectrum6 {
        xoff += SPECTRUM6_COMPENSATION_BYTES;
    }
    let mut compensation = None;
    if o.small_packet_compensation && !shp_enabled && spp_percent != 100 {
        let full = round_up_to_kb(lossless_mtu + propagation * worst_case_factor);
        let applied = xoff + SMALL_PACKET_COMPENSATION_BYTES < full;
        if applied {
            xoff += SMALL_PACKET_COMPENSATION_BYTES;
        }
        compensation = Some((applied, full));
    }
    let xon = round_up_to_kb(pipeline);
    let size = if shp_enabled { xon } else { round_up_to_kb(xoff as f64 + xon as f64 + speed_overhead) };

    let round = |bytes: f64| bytes.round() as u64;
    let divisor = |exact: bool| if exact { "8·1000" } else { "8·1024" };
    let mut terms = vec![
        ("port_mtu".to_owned(), u64::from(port.mtu)),
        (
            format!(
                "cable {} m, round trip at 198,000,000 m/s (÷ {})",
                port.cable_m,
                divisor(o.exact_cable_bytes)
            ),
            round(cable),
        ),
    ];
    if asic.gearbox_delay_ns > 0 {
        terms.push((
            format!("gearbox 2 × {} ns (÷ {})", asic.gearbox_delay_ns, divisor(o.exact_gearbox_bytes)),
            round(2.0 * gearbox),
        ));
    }
    terms.push((format!("mac_phy_delay (ASIC_TABLE {} KB)", asic.mac_phy_delay_kb), round(mac_phy)));
    terms.push((peer_label, round(peer_response)));
    if tile > 0.0 {
        terms.push(("tile bytes, Spectrum-4/5 (speed / 1000 · 120 / 8)".to_owned(), round(tile)));
    }
    let factor = if worst_case_factor != exact_factor {
        format!("{worst_case_factor} = ⌈{exact_factor:.4}⌉")
    } else {
        format!("{worst_case_factor:.4}")
    };
    let share_of = if o.small_packets_by_bytes { "bytes" } else { "packets" };
    terms.extend([
        ("propagation_delay (sum of the above)".to_owned(), round(propagation)),
        (
            format!(
                "× cell_occupancy {cell_occupancy:.4} (factor {factor}, {small_share:.1} % small by {share_of})"
            ),
            round(propagation * cell_occupancy),
        ),
        ("lossless_mtu".to_owned(), u64::from(pattern.lossless_mtu)),
    ]);
    if spectrum6 {
        terms.push(("Spectrum-6 compensation".to_owned(), SPECTRUM6_COMPENSATION_BYTES));
    }
    if let Some((applied, full)) = compensation {
        let (label, bytes) =
            if applied { ("added", SMALL_PACKET_COMPENSATION_BYTES) } else { ("not needed", 0) };
        terms.push((
            format!("small-packet compensation {label} (xoff at 100 % small packets: {full})"),
            bytes,
        ));
    }
    let lanes = if eight_lane { ", doubled for 8 lanes" } else { "" };
    terms.push((format!("pipeline_latency (xon{lanes})"), round(pipeline)));
    if eight_lane && !shp_enabled {
        terms.push(("8-lane overhead in size (port_mtu)".to_owned(), u64::from(port.mtu)));
    }
    Headroom { xon, xoff, size, threshold: None, xon_offset: None, terms }
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

#[cfg(test)]
mod tests;
