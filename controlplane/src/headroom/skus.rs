//! The `pg_profile_lookup.ini` tables of SONiC SKUs, shipped in `configs/headroom/` and compiled in.
//!
//! Each file holds one upstream table (sonic-buildimage `device/common/profiles/<asic>/<variant>/…` or
//! `device/<vendor>/<platform>/<hwsku>/…`) and, in its comments, a `# upstream: <path>` line and one
//! `# hwsku: <hwsku> <platform> <path>` line per SKU whose `pg_profile_lookup.ini` is that table (a file
//! or a link to it in sonic-buildimage), which is how a configuration's `DEVICE_METADATA|localhost|hwsku`
//! finds its table. The rows are sonic-buildimage's as of [`BUILDIMAGE_COMMIT`].

use std::sync::OnceLock;

use super::LookupTable;

/// The sonic-buildimage commit the shipped tables were read at.
pub const BUILDIMAGE_COMMIT: &str = "086b03bd70f9e211aaaf5f6aefe0790b508d2a94";

macro_rules! shipped {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../../configs/headroom/", $name, ".ini")))),*]
    };
}

/// `configs/headroom/<name>.ini`, by name.
const FILES: &[(&str, &str)] = shipped!(
    "th-gen-BALANCED",
    "th-6100-BALANCED",
    "td2-gen-BALANCED",
    "td2-6000-BALANCED",
    "th2-7260-BALANCED",
    "Arista-7050CX3-32S-C32",
    "Arista-7050CX3-32S-C28S4",
    "Arista-7260CX3-D96C16",
    "Force10-Z9100-C32",
    "DellEMC-S5232f-C32",
    "DellEMC-Z9264f-C64",
    "DellEMC-Z9332f-O32",
    "ACS-MSN2700",
    "Mellanox-SN2700-D48C8",
    "Mellanox-SN2700-D40C8S8",
    "ACS-SN2201",
    "ACS-MSN3700",
    "ACS-MSN3800",
    "Mellanox-SN3800-D112C8",
    "ACS-MSN4700",
    "Mellanox-SN4700-C128",
    "Mellanox-SN4700-O8C48",
    "Mellanox-SN4600C-D112C8",
    "Mellanox-SN4600C-D24C52",
    "Mellanox-SN4280-C48",
    "Mellanox-SN4280-O28",
    "ACS-SN5600",
    "Mellanox-SN5600-C224O8",
    "Mellanox-SN5600-C256S1",
    "Mellanox-SN5600-V256",
    "Mellanox-SN5610N-C224O8",
    "Mellanox-SN5610N-C256S2",
    "Mellanox-SN5640-C512S2",
    "Mellanox-SN5640-C512X2",
    "ACS-SN6600_LD",
    "ACS-SN6810_LD",
);

/// Aliases `swctl --lookup` has always taken.
const ALIASES: &[(&str, &str)] = &[("th", "th-gen-BALANCED"), ("sn2700", "ACS-MSN2700")];

/// One shipped table.
#[derive(Debug, PartialEq, Eq)]
pub struct ShippedTable {
    /// The file stem: `configs/headroom/<name>.ini`.
    pub name: &'static str,
    /// The table's path in sonic-buildimage.
    pub upstream: &'static str,
    /// The file's text.
    pub ini: &'static str,
}

impl ShippedTable {
    /// The table, described by its upstream path.
    pub fn table(&self) -> LookupTable {
        LookupTable::parse(self.ini)
            .unwrap_or_else(|e| panic!("configs/headroom/{}.ini: {e}", self.name))
            .with_source(format!("sonic-buildimage {} (configs/headroom/{}.ini)", self.upstream, self.name))
    }

    /// The SKUs that use this table.
    pub fn skus(&self) -> impl Iterator<Item = &'static SkuEntry> {
        index().skus.iter().filter(move |s| s.table == self.name)
    }
}

/// A SKU whose `pg_profile_lookup.ini` is a shipped table.
#[derive(Debug, PartialEq, Eq)]
pub struct SkuEntry {
    pub hwsku: &'static str,
    /// The platform directory the SKU is under (`DEVICE_METADATA|localhost|platform`).
    pub platform: &'static str,
    /// `device/<vendor>/<platform>/<hwsku>/pg_profile_lookup.ini`.
    pub path: &'static str,
    /// The [`ShippedTable::name`].
    pub table: &'static str,
}

impl SkuEntry {
    pub fn shipped(&self) -> &'static ShippedTable {
        shipped_table(self.table).expect("every SKU entry comes from a shipped table")
    }

    /// The table, described by the SKU's own path and, when that is a link, where it leads.
    pub fn table(&self) -> LookupTable {
        let shipped = self.shipped();
        let target =
            if shipped.upstream == self.path { String::new() } else { format!(" → {}", shipped.upstream) };
        shipped.table().with_source(format!(
            "sonic-buildimage {}{target} (configs/headroom/{}.ini)",
            self.path, shipped.name
        ))
    }
}

struct Index {
    tables: Vec<ShippedTable>,
    skus: Vec<SkuEntry>,
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut tables = Vec::new();
        let mut skus = Vec::new();
        for &(name, ini) in FILES {
            let mut upstream = "";
            for line in ini.lines() {
                if let Some(path) = line.strip_prefix("# upstream:") {
                    upstream = path.trim();
                } else if let Some(rest) = line.strip_prefix("# hwsku:") {
                    let mut words = rest.split_whitespace();
                    if let (Some(hwsku), Some(platform), Some(path)) =
                        (words.next(), words.next(), words.next())
                    {
                        skus.push(SkuEntry { hwsku, platform, path, table: name });
                    }
                }
            }
            tables.push(ShippedTable { name, upstream, ini });
        }
        Index { tables, skus }
    })
}

/// Every shipped table, in the order above (Broadcom, then NVIDIA by generation).
pub fn shipped_tables() -> &'static [ShippedTable] {
    &index().tables
}

/// A shipped table by file name (`th-6100-BALANCED`) or alias (`th`, `sn2700`).
pub fn shipped_table(name: &str) -> Option<&'static ShippedTable> {
    let name = ALIASES.iter().find(|(alias, _)| *alias == name).map_or(name, |(_, to)| to);
    index().tables.iter().find(|t| t.name == name)
}

/// The SKU entry of a hwsku with a shipped table.
pub fn sku(hwsku: &str) -> Option<&'static SkuEntry> {
    index().skus.iter().find(|s| s.hwsku == hwsku)
}

/// Every SKU with a shipped table.
pub fn skus() -> &'static [SkuEntry] {
    &index().skus
}

/// The names `--lookup` takes, for messages.
pub fn table_names() -> String {
    let mut names: Vec<&str> = ALIASES.iter().map(|(alias, _)| *alias).collect();
    names.extend(index().tables.iter().map(|t| t.name));
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headroom::PortParams;
    use std::collections::BTreeSet;

    #[test]
    fn every_shipped_table_parses_and_names_its_upstream_and_skus() {
        assert_eq!(shipped_tables().len(), FILES.len());
        let mut names = BTreeSet::new();
        for t in shipped_tables() {
            assert!(names.insert(t.name), "{} twice", t.name);
            assert!(
                t.upstream.starts_with("device/") && t.upstream.ends_with("/pg_profile_lookup.ini"),
                "{t:?}"
            );
            assert!(t.ini.contains(&BUILDIMAGE_COMMIT[..12]), "{}: no commit", t.name);
            let table = t.table();
            assert!(table.len() >= 6, "{}: {} rows", t.name, table.len());
            assert!(t.skus().count() >= 1, "{}: no hwsku", t.name);
            assert!(table.source().contains(t.upstream));
        }
        let mut hwskus = BTreeSet::new();
        for s in skus() {
            assert!(hwskus.insert(s.hwsku), "{} twice", s.hwsku);
            assert!(
                s.path.starts_with("device/") && s.path.contains(&format!("/{}/{}/", s.platform, s.hwsku))
            );
            assert_eq!(s.shipped().name, s.table);
        }
        assert!(skus().len() > 100, "{}", skus().len());
    }

    /// The SKUs the project promises, each with its table and upstream path.
    #[test]
    fn the_promised_skus_have_their_tables() {
        let cases = [
            ("Arista-7060CX-32S-C32", "th-gen-BALANCED"),
            ("Celestica-DX010-C32", "th-gen-BALANCED"),
            ("Force10-S6100", "th-6100-BALANCED"),
            ("Arista-7050-QX32", "td2-gen-BALANCED"),
            ("Force10-S6000", "td2-6000-BALANCED"),
            ("Arista-7050CX3-32S-C32", "Arista-7050CX3-32S-C32"),
            ("Arista-7260CX3-C64", "th2-7260-BALANCED"),
            ("Arista-7260CX3-D108C8", "th2-7260-BALANCED"),
            ("ACS-MSN2700", "ACS-MSN2700"),
            ("Mellanox-SN2700", "Mellanox-SN2700-D48C8"),
            ("ACS-MSN3800", "ACS-MSN3800"),
            ("Mellanox-SN3800-C64", "Mellanox-SN3800-D112C8"),
            ("ACS-MSN4700", "ACS-MSN4700"),
            ("Mellanox-SN4700-O28", "Mellanox-SN4700-C128"),
            ("ACS-SN5600", "ACS-SN5600"),
        ];
        for (hwsku, table) in cases {
            let entry = sku(hwsku).unwrap_or_else(|| panic!("{hwsku}"));
            assert_eq!(entry.table, table, "{hwsku}");
        }
        let s6100 = sku("Force10-S6100").unwrap();
        assert_eq!(s6100.platform, "x86_64-dell_s6100_c2538-r0");
        assert_eq!(
            s6100.table().source(),
            "sonic-buildimage device/dell/x86_64-dell_s6100_c2538-r0/Force10-S6100/pg_profile_lookup.ini → \
             device/common/profiles/th/6100/BALANCED/pg_profile_lookup.ini (configs/headroom/th-6100-BALANCED.ini)"
        );
        assert!(sku("Arista-VM").is_none());
        assert_eq!(shipped_table("th").unwrap().name, "th-gen-BALANCED");
        assert_eq!(shipped_table("sn2700").unwrap().name, "ACS-MSN2700");
        assert!(table_names().starts_with("th, sn2700, th-gen-BALANCED, "));
    }

    /// S6100's table is TH's generic BALANCED but for 50G and 25G/40m; 100G/40m is SONiC's 177,632.
    #[test]
    fn s6100_rows() {
        let s6100 = sku("Force10-S6100").unwrap().table();
        let row = s6100.row_for(&PortParams::new(100_000, 40, 9100)).unwrap();
        assert_eq!(
            (row.xon, row.xoff, row.size, row.threshold, row.xon_offset),
            (2288, 177_632, 1248, 0, Some(2288))
        );
        let th = LookupTable::th_balanced();
        let differ: Vec<(u32, u32, u64, u64)> = th
            .rows()
            .filter_map(|r| {
                let other = s6100.lookup(r.speed_mbps, r.cable_m).unwrap();
                (other != *r).then_some((r.speed_mbps, r.cable_m, r.xoff, other.xoff))
            })
            .collect();
        assert_eq!(
            differ,
            [(25_000, 40, 53_248, 56_160), (50_000, 5, 90_272, 79_872), (50_000, 40, 96_096, 85_696)]
        );
        // Force10-S6000: TD2, one row for every speed and cable, threshold -3.
        let s6000 = sku("Force10-S6000").unwrap().table();
        assert!(s6000.rows().all(|r| (r.xon, r.xoff, r.size, r.threshold) == (18_432, 55_120, 56_368, -3)));
        // TH2 7260: 40/50/100G only.
        let th2 = sku("Arista-7260CX3-C64").unwrap().table();
        assert_eq!(th2.lookup(100_000, 300).unwrap().xoff, 101_088);
        assert!(th2.lookup(25_000, 5).is_none());
    }
}
