//! ASIC personalities: what a switch's buffer hardware does that SONiC's tables do not say. SONiC writes
//! the same `BUFFER_POOL` sizes for every ASIC, but a Tomahawk splits them over four buffer partitions
//! (XPEs), a Trident3 counts 256-byte cells, a Spectrum 96- or 144-byte ones. The family is chosen from
//! `DEVICE_METADATA|localhost` (`asic`, else `hwsku`, else `platform`); `BUFFER_ASIC|global` overrides the
//! cell size and the total. `docs/asic-personalities.md` gives each family's rules and where every number
//! comes from.

use super::{PoolDirection, SwitchConfig};
use std::fmt;

/// The most buffer partitions a personality has.
pub const MAX_PARTITIONS: usize = 4;

/// Cells `bytes` occupy (whole cells, rounded up).
pub fn cells(bytes: u64, cell: u64) -> u64 {
    bytes.div_ceil(cell.max(1))
}

/// The ASIC families the model knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AsicFamily {
    /// No particular ASIC: one buffer, 208-byte cells (the model before personalities; SONiC's vs).
    Generic,
    /// Broadcom Tomahawk (BCM56960).
    Tomahawk,
    /// Broadcom Tomahawk 2 (BCM56970).
    Tomahawk2,
    /// Broadcom Trident 2 (BCM56850).
    Trident2,
    /// Broadcom Trident 3 (BCM56870).
    Trident3,
    /// NVIDIA Spectrum (SN2700, SN2410, ...).
    Spectrum1,
    /// NVIDIA Spectrum-2 (SN3700, SN3800).
    Spectrum2,
    /// NVIDIA Spectrum-3 (SN4600, SN4700).
    Spectrum3,
}

/// How a family splits its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partitioning {
    /// One shared buffer: a pool's size is the size of its shared space.
    Single,
    /// Tomahawk-style XPEs: four partitions, each holding the packets of two ingress pipes bound for two
    /// egress pipes; every pool (and shared headroom pool) is divided among them, and a PG's or queue's
    /// dynamic limit is computed on the free space of the partition its packets are in.
    TomahawkXpe,
}

/// What a pool's configured size is, in shared cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolShare {
    /// The configured size is the shared space (SONiC's Tomahawk and Spectrum templates compute it so).
    AsWritten,
    /// Broadcom's SAI carves every reservation out of an ingress pool: the shared space is the size less
    /// each PG's reserved cells and private headroom, less the shared headroom pool (`xoff`), and, when
    /// `egress_queues`, less every egress queue's reserved cells (Trident 3: its egress pools are mapped
    /// onto ingress pool 0).
    LessReservations { egress_queues: bool },
}

/// Where a lossless PG's `size` and `xoff` sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PgLayout {
    /// `size` is a reserve filled first, then shared space, then `xoff` of headroom (SAI's reading).
    Reserve,
    /// `size` includes the private headroom: the reserve filled first is `size − xoff` (Trident 2).
    ReserveIncludesXoff,
    /// NVIDIA Spectrum: shared space first, then `size − xoff` (xon plus hysteresis), XOFF, then `xoff`
    /// less `overhead_cells` of headroom (what is in flight that the ASIC cannot count on).
    SharedFirst { overhead_cells: u32 },
}

/// One family's buffer facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Personality {
    pub family: AsicFamily,
    /// What to call it in messages.
    pub name: &'static str,
    /// Bytes per buffer cell.
    pub cell_bytes: u32,
    /// Bytes of packet buffer in all (pools, reservations and headroom must fit in it).
    pub buffer_bytes: Option<u64>,
    pub partitioning: Partitioning,
    /// Packet-processing pipes; a port's pipe comes from its first SerDes lane.
    pub pipes: u8,
    /// SerDes lanes per pipe (lane numbers as in `PORT|lanes`, counted from `first_lane`).
    pub lanes_per_pipe: u32,
    pub first_lane: u32,
    pub pool_share: PoolShare,
    pub pg_layout: PgLayout,
    /// Egress pools are one service pool of the largest egress pool's size (Trident 3).
    pub one_egress_service_pool: bool,
    /// When a lossy frame is refused by both its ingress PG and its egress queue, it is an egress drop
    /// (Spectrum; SAI's generic order, ingress first, otherwise).
    pub egress_drop_first: bool,
}

impl Default for Personality {
    fn default() -> Self {
        AsicFamily::Generic.personality()
    }
}

impl fmt::Display for AsicFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

impl AsicFamily {
    pub const ALL: [AsicFamily; 8] = [
        AsicFamily::Generic,
        AsicFamily::Tomahawk,
        AsicFamily::Tomahawk2,
        AsicFamily::Trident2,
        AsicFamily::Trident3,
        AsicFamily::Spectrum1,
        AsicFamily::Spectrum2,
        AsicFamily::Spectrum3,
    ];

    /// The value of `DEVICE_METADATA|localhost|asic` that names the family.
    pub fn keyword(self) -> &'static str {
        match self {
            AsicFamily::Generic => "generic",
            AsicFamily::Tomahawk => "th",
            AsicFamily::Tomahawk2 => "th2",
            AsicFamily::Trident2 => "td2",
            AsicFamily::Trident3 => "td3",
            AsicFamily::Spectrum1 => "spc1",
            AsicFamily::Spectrum2 => "spc2",
            AsicFamily::Spectrum3 => "spc3",
        }
    }

    pub fn from_keyword(text: &str) -> Option<AsicFamily> {
        AsicFamily::ALL.into_iter().find(|f| f.keyword().eq_ignore_ascii_case(text))
    }

    /// Is it an NVIDIA Spectrum?
    pub fn is_spectrum(self) -> bool {
        matches!(self, AsicFamily::Spectrum1 | AsicFamily::Spectrum2 | AsicFamily::Spectrum3)
    }

    pub fn personality(self) -> Personality {
        const MIB: u64 = 1024 * 1024;
        let single = |name, cell_bytes, buffer_bytes| Personality {
            family: self,
            name,
            cell_bytes,
            buffer_bytes,
            partitioning: Partitioning::Single,
            pipes: 1,
            lanes_per_pipe: u32::MAX,
            first_lane: 0,
            pool_share: PoolShare::AsWritten,
            pg_layout: PgLayout::Reserve,
            one_egress_service_pool: false,
            egress_drop_first: false,
        };
        let spectrum = |name, cell_bytes, buffer_bytes, overhead_cells| Personality {
            pg_layout: PgLayout::SharedFirst { overhead_cells },
            egress_drop_first: true,
            ..single(name, cell_bytes, buffer_bytes)
        };
        match self {
            AsicFamily::Generic => single("generic (one buffer, 208-byte cells)", 208, None),
            // 4 XPEs of 23,040 cells.
            AsicFamily::Tomahawk => Personality {
                partitioning: Partitioning::TomahawkXpe,
                pipes: 4,
                lanes_per_pipe: 32,
                first_lane: 1,
                ..single("Broadcom Tomahawk", 208, Some(4 * 23_040 * 208))
            },
            AsicFamily::Tomahawk2 => Personality {
                partitioning: Partitioning::TomahawkXpe,
                pipes: 4,
                lanes_per_pipe: 64,
                first_lane: 1,
                ..single("Broadcom Tomahawk 2", 208, Some(42 * MIB))
            },
            AsicFamily::Trident2 => Personality {
                pool_share: PoolShare::LessReservations { egress_queues: false },
                pg_layout: PgLayout::ReserveIncludesXoff,
                ..single("Broadcom Trident 2", 208, Some(61_440 * 208))
            },
            AsicFamily::Trident3 => Personality {
                pool_share: PoolShare::LessReservations { egress_queues: true },
                one_egress_service_pool: true,
                ..single("Broadcom Trident 3", 256, Some(32 * MIB))
            },
            // Headroom overhead: NVIDIA's sonic-mgmt parameter generator (95 cells on Spectrum, 64 on 2 and 3).
            AsicFamily::Spectrum1 => spectrum("NVIDIA Spectrum", 96, Some(16 * MIB), 95),
            AsicFamily::Spectrum2 => spectrum("NVIDIA Spectrum-2", 144, Some(42 * MIB), 64),
            AsicFamily::Spectrum3 => spectrum("NVIDIA Spectrum-3", 144, Some(64 * MIB), 64),
        }
    }
}

/// hwsku name fragments (as in sonic-buildimage's `device/<vendor>/<platform>/<hwsku>/`) per family.
const HWSKUS: &[(&str, AsicFamily)] = &[
    ("Arista-7060CX-32S", AsicFamily::Tomahawk),
    ("Celestica-DX010", AsicFamily::Tomahawk),
    ("Force10-S6100", AsicFamily::Tomahawk),
    ("Force10-Z9100", AsicFamily::Tomahawk),
    ("Arista-7260CX3", AsicFamily::Tomahawk2),
    ("Force10-Z9264", AsicFamily::Tomahawk2),
    ("Force10-S6000", AsicFamily::Trident2),
    ("Arista-7050-QX", AsicFamily::Trident2),
    ("Arista-7050QX", AsicFamily::Trident2),
    ("Arista-7050CX3", AsicFamily::Trident3),
    ("Arista-7050SX3", AsicFamily::Trident3),
    ("MSN2700", AsicFamily::Spectrum1),
    ("SN2700", AsicFamily::Spectrum1),
    ("MSN2410", AsicFamily::Spectrum1),
    ("SN2410", AsicFamily::Spectrum1),
    ("MSN2100", AsicFamily::Spectrum1),
    ("SN2100", AsicFamily::Spectrum1),
    ("MSN3700", AsicFamily::Spectrum2),
    ("SN3700", AsicFamily::Spectrum2),
    ("MSN3800", AsicFamily::Spectrum2),
    ("SN3800", AsicFamily::Spectrum2),
    ("MSN4600", AsicFamily::Spectrum3),
    ("SN4600", AsicFamily::Spectrum3),
    ("MSN4700", AsicFamily::Spectrum3),
    ("SN4700", AsicFamily::Spectrum3),
];

/// sonic-buildimage platform names (`device/<vendor>/<platform>`) per family.
const PLATFORMS: &[(&str, AsicFamily)] = &[
    ("x86_64-arista_7060_cx32s", AsicFamily::Tomahawk),
    ("x86_64-cel_seastone", AsicFamily::Tomahawk),
    ("x86_64-dell_s6100", AsicFamily::Tomahawk),
    ("x86_64-dell_z9100", AsicFamily::Tomahawk),
    ("x86_64-arista_7260cx3", AsicFamily::Tomahawk2),
    ("x86_64-dellemc_z9264f", AsicFamily::Tomahawk2),
    ("x86_64-dell_s6000", AsicFamily::Trident2),
    ("x86_64-arista_7050_qx32", AsicFamily::Trident2),
    ("x86_64-arista_7050cx3", AsicFamily::Trident3),
    ("x86_64-arista_7050sx3", AsicFamily::Trident3),
    ("x86_64-mlnx_msn2", AsicFamily::Spectrum1),
    ("x86_64-mlnx_msn37", AsicFamily::Spectrum2),
    ("x86_64-mlnx_msn38", AsicFamily::Spectrum2),
    ("x86_64-mlnx_msn46", AsicFamily::Spectrum3),
    ("x86_64-mlnx_msn47", AsicFamily::Spectrum3),
];

/// How the family was chosen, for `swctl` and the warning about an unknown SKU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    /// `DEVICE_METADATA|localhost|asic`.
    Asic,
    Hwsku(String),
    Platform(String),
    /// Nothing says: the generic personality.
    Default,
    /// A hwsku or platform the model does not know: the generic personality.
    Unknown(String),
}

/// The family of a device from its `DEVICE_METADATA|localhost` fields (`asic` has already been parsed).
pub fn family_of(
    asic: Option<AsicFamily>,
    hwsku: Option<&str>,
    platform: Option<&str>,
) -> (AsicFamily, Chosen) {
    if let Some(family) = asic {
        return (family, Chosen::Asic);
    }
    let lookup = |name: &str, table: &[(&str, AsicFamily)]| {
        let lower = name.to_ascii_lowercase();
        table.iter().find(|(fragment, _)| lower.contains(&fragment.to_ascii_lowercase())).map(|&(_, f)| f)
    };
    if let Some(hwsku) = hwsku
        && let Some(family) = lookup(hwsku, HWSKUS)
    {
        return (family, Chosen::Hwsku(hwsku.to_owned()));
    }
    if let Some(platform) = platform
        && let Some(family) = lookup(platform, PLATFORMS)
    {
        return (family, Chosen::Platform(platform.to_owned()));
    }
    match hwsku.or(platform) {
        Some(name) => (AsicFamily::Generic, Chosen::Unknown(name.to_owned())),
        None => (AsicFamily::Generic, Chosen::Default),
    }
}

impl Personality {
    /// The pipe of a port whose first SerDes lane is `lane` (no lanes: pipe 0).
    pub fn pipe_of_lane(&self, lane: Option<u32>) -> u8 {
        let Some(lane) = lane else { return 0 };
        let pipe = lane.saturating_sub(self.first_lane) / self.lanes_per_pipe.max(1);
        pipe.min(u32::from(self.pipes.max(1) - 1)) as u8
    }

    /// Buffer partitions.
    pub fn partitions(&self) -> usize {
        match self.partitioning {
            Partitioning::Single => 1,
            Partitioning::TomahawkXpe => 4,
        }
    }

    /// The partition holding packets from a port of `ingress_pipe` to one of `egress_pipe`.
    pub fn partition(&self, ingress_pipe: u8, egress_pipe: u8) -> usize {
        match self.partitioning {
            Partitioning::Single => 0,
            // XPE = (ingress pipes {0,3} | {1,2}) × (egress pipes {0,1} | {2,3}).
            Partitioning::TomahawkXpe => {
                let ingress_half = usize::from(matches!(ingress_pipe & 3, 1 | 2));
                let egress_half = usize::from(egress_pipe & 3 >= 2);
                ingress_half * 2 + egress_half
            }
        }
    }
}

/// A profile's reserve and headroom cap in cells under a PG layout.
pub fn layout_cells(layout: PgLayout, size_bytes: u64, xoff_bytes: u64, cell: u64) -> (u64, u64) {
    let (size, xoff) = (cells(size_bytes, cell), cells(xoff_bytes, cell));
    match layout {
        PgLayout::Reserve => (size, xoff),
        PgLayout::ReserveIncludesXoff => (size.saturating_sub(xoff), xoff),
        PgLayout::SharedFirst { overhead_cells } => {
            (size.saturating_sub(xoff), xoff.saturating_sub(u64::from(overhead_cells)))
        }
    }
}

/// Each configured pool's (shared cells, shared headroom cells) per partition under the ASIC's
/// personality (`docs/asic-personalities.md`).
pub fn pool_shares(config: &SwitchConfig, cell: u64) -> Vec<(u64, u64)> {
    let personality = config.asic.personality;
    let parts = personality.partitions().clamp(1, MAX_PARTITIONS) as u64;
    let per_partition = |bytes: u64| bytes.div_ceil(cell * parts);
    let mut shares: Vec<(u64, u64)> = config
        .pools
        .iter()
        .map(|pool| {
            let headroom =
                if pool.direction == PoolDirection::Ingress { per_partition(pool.xoff_bytes) } else { 0 };
            (per_partition(pool.size_bytes), headroom)
        })
        .collect();
    if personality.one_egress_service_pool {
        let egress = |i: &usize| config.pools[*i].direction == PoolDirection::Egress;
        let largest = (0..shares.len()).filter(egress).map(|i| shares[i].0).max().unwrap_or(0);
        for i in (0..shares.len()).filter(egress) {
            shares[i].0 = largest;
        }
    }
    if let PoolShare::LessReservations { egress_queues } = personality.pool_share {
        let mut carved = vec![0u64; shares.len()];
        let mut queues = 0u64;
        for (qos, buffers) in config.qos.iter().zip(&config.port_buffers) {
            let mut lossless = 0u8;
            for p in (0..8).filter(|p| qos.pfc_enable & 1 << p != 0) {
                lossless |= 1 << qos.pfc_to_pg[p];
            }
            for (g, profile) in buffers.pg_profile.iter().enumerate() {
                let Some(profile) = profile.map(|i| &config.profiles[i]) else { continue };
                let (reserved, xoff) =
                    layout_cells(personality.pg_layout, profile.size_bytes, profile.xoff_bytes, cell);
                let private = lossless & 1 << g != 0 && config.pools[profile.pool].xoff_bytes == 0;
                carved[profile.pool] += reserved + if private { xoff } else { 0 };
            }
            queues += buffers
                .queue_profile
                .iter()
                .flatten()
                .map(|&i| cells(config.profiles[i].size_bytes, cell))
                .sum::<u64>();
        }
        for (i, _) in config.pools.iter().enumerate().filter(|(_, p)| p.direction == PoolDirection::Ingress) {
            let queue_part = if egress_queues { queues } else { 0 };
            shares[i].0 = shares[i].0.saturating_sub(carved[i] + shares[i].1 + queue_part);
        }
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_from_metadata() {
        let of = |hwsku, platform| family_of(None, hwsku, platform).0;
        assert_eq!(of(Some("Arista-7060CX-32S-C32"), None), AsicFamily::Tomahawk);
        assert_eq!(of(Some("Arista-7050CX3-32S-C32"), None), AsicFamily::Trident3);
        assert_eq!(of(Some("ACS-MSN2700"), None), AsicFamily::Spectrum1);
        assert_eq!(of(Some("Mellanox-SN3800-D112C8"), None), AsicFamily::Spectrum2);
        assert_eq!(of(Some("Force10-S6000"), None), AsicFamily::Trident2);
        assert_eq!(of(Some("Arista-7260CX3-C64"), None), AsicFamily::Tomahawk2);
        assert_eq!(of(Some("Some-New-SKU"), Some("x86_64-mlnx_msn4700-r0")), AsicFamily::Spectrum3);
        assert_eq!(family_of(None, Some("Some-New-SKU"), None).1, Chosen::Unknown("Some-New-SKU".into()));
        assert_eq!(family_of(None, None, None), (AsicFamily::Generic, Chosen::Default));
        assert_eq!(family_of(Some(AsicFamily::Trident2), Some("ACS-MSN2700"), None).0, AsicFamily::Trident2);
        for family in AsicFamily::ALL {
            assert_eq!(AsicFamily::from_keyword(family.keyword()), Some(family));
        }
    }

    #[test]
    fn tomahawk_xpes() {
        let th = AsicFamily::Tomahawk.personality();
        assert_eq!(th.partitions(), 4);
        assert_eq!(th.pipe_of_lane(None), 0);
        assert_eq!(th.pipe_of_lane(Some(1)), 0);
        assert_eq!(th.pipe_of_lane(Some(33)), 1);
        assert_eq!(th.pipe_of_lane(Some(125)), 3);
        let xpes: Vec<usize> = (0..4).flat_map(|i| (0..4).map(move |e| th.partition(i, e))).collect();
        assert_eq!(xpes, [0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3, 0, 0, 1, 1]);
        assert_eq!(AsicFamily::Trident3.personality().partition(1, 3), 0);
    }
}
