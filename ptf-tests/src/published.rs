//! sonic-mgmt's published figures for the shipped profiles: what the buffer tests expect.
//!
//! The figures live in `ptf-tests/published.json`, shared with the Python suite (`python/published.py`). Per
//! profile there is one block per sonic-mgmt `qos_params` entry (`xoff_1`, `lossy_queue_1`,
//! `wm_pg_shared_lossless`, …) with sonic-mgmt's key names (`pkts_num_trig_pfc`, `pkts_num_margin`, …), the
//! upstream file and keys it comes from (`source`), and a note for every figure that is not a literal copy
//! (`notes`): a figure derived from published ones with sonic-mgmt's arithmetic, or a margin that is the
//! default of the test in `tests/saitests/py3/sai_qos_tests.py`.
//!
//! - th_balanced (Broadcom Tomahawk): `sonic-net/sonic-mgmt tests/qos/files/qos_params.th.yaml`,
//!   `qos_params.th.topo-any`;
//! - sn2700 (NVIDIA Spectrum-1): sonic-mgmt computes these at run time with
//!   `tests/qos/files/mellanox/qos_param_generator.py` from the DUT's buffer profiles; the numbers here are
//!   that generator applied to `configs/profiles/sn2700.yaml` (this module's tests recompute them).
//!
//! Nothing here looks at the switch model: the tests compare what the switch does with these numbers, inside
//! sonic-mgmt's own windows.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The figures file.
pub const JSON: &str = include_str!("../published.json");

/// One profile's figures.
#[derive(Debug, Deserialize)]
pub struct Published {
    /// The ASIC and hwsku the figures are for.
    pub asic: String,
    /// Where the profile's figures come from (upstream repository and file).
    pub source: String,
    /// sonic-mgmt's test ports: the source and destination of the single-flow tests.
    pub src_port: String,
    pub dst_port: String,
    /// The source port's `<speed>_<cable>`.
    pub speed_cable: String,
    /// Bytes per cell: what sonic-mgmt divides watermarks by.
    pub cell_size: u64,
    /// `hdrm_pool_wm_multiplier`, where published.
    #[serde(default)]
    pub hdrm_pool_wm_multiplier: Option<u64>,
    #[serde(default)]
    pub notes: BTreeMap<String, String>,
    blocks: BTreeMap<String, Block>,
}

/// One `qos_params` entry.
#[derive(Debug, Deserialize)]
pub struct Block {
    /// The upstream file and keys.
    pub source: String,
    /// Why a figure is not a literal copy, per key.
    #[serde(default)]
    pub notes: BTreeMap<String, String>,
    #[serde(flatten)]
    values: BTreeMap<String, Value>,
}

fn all() -> &'static BTreeMap<String, Value> {
    static ALL: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    ALL.get_or_init(|| serde_json::from_str(JSON).expect("ptf-tests/published.json parses"))
}

/// The figures of a shipped profile, if sonic-mgmt publishes any for it.
pub fn of(profile: &str) -> Option<&'static Published> {
    static PARSED: OnceLock<BTreeMap<String, Published>> = OnceLock::new();
    PARSED
        .get_or_init(|| {
            all()
                .iter()
                .filter(|(_, v)| v.get("blocks").is_some())
                .map(|(k, v)| {
                    let p: Published = serde_json::from_value(v.clone())
                        .unwrap_or_else(|e| panic!("published.json: {k}: {e}"));
                    (k.clone(), p)
                })
                .collect()
        })
        .get(profile)
}

/// The figures of a shipped profile; panics when there are none.
pub fn figures(profile: &str) -> &'static Published {
    of(profile).unwrap_or_else(|| panic!("published.json has no figures for {profile}"))
}

impl Published {
    /// A block by its `qos_params` name.
    pub fn block(&self, name: &str) -> Option<&Block> {
        self.blocks.get(name)
    }

    /// A block that must exist.
    pub fn get(&self, name: &str) -> &Block {
        self.block(name).unwrap_or_else(|| panic!("published.json: no {name} block for {}", self.asic))
    }

    /// Block names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.blocks.keys().map(String::as_str)
    }
}

impl Block {
    fn value(&self, key: &str) -> &Value {
        self.values.get(key).unwrap_or_else(|| panic!("published.json: {} has no {key}", self.source))
    }

    /// Whether the block has `key`.
    pub fn has(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }

    /// A number.
    pub fn n(&self, key: &str) -> u64 {
        self.value(key)
            .as_u64()
            .unwrap_or_else(|| panic!("published.json: {}: {key} is not a count", self.source))
    }

    /// A small number (DSCP, PG, queue).
    pub fn u8(&self, key: &str) -> u8 {
        u8::try_from(self.n(key)).unwrap_or_else(|_| panic!("published.json: {}: {key} > 255", self.source))
    }

    /// A list of numbers.
    pub fn list(&self, key: &str) -> Vec<u64> {
        self.value(key)
            .as_array()
            .unwrap_or_else(|| panic!("published.json: {}: {key} is not a list", self.source))
            .iter()
            .map(|v| v.as_u64().unwrap_or_else(|| panic!("published.json: {}: {key}", self.source)))
            .collect()
    }

    /// A string, or a list of strings.
    pub fn str(&self, key: &str) -> &str {
        self.value(key).as_str().unwrap_or_else(|| panic!("published.json: {}: {key}", self.source))
    }

    pub fn strs(&self, key: &str) -> Vec<&str> {
        self.value(key)
            .as_array()
            .unwrap_or_else(|| panic!("published.json: {}: {key} is not a list", self.source))
            .iter()
            .map(|v| v.as_str().unwrap_or_else(|| panic!("published.json: {}: {key}", self.source)))
            .collect()
    }

    /// A table of string fields (e.g. a BUFFER_PROFILE entry).
    pub fn fields(&self, key: &str) -> BTreeMap<String, String> {
        self.value(key)
            .as_object()
            .unwrap_or_else(|| panic!("published.json: {}: {key} is not an object", self.source))
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect()
    }

    /// Where `key`'s figure comes from: the block's source, and the note when it is not a literal copy.
    pub fn cite(&self, key: &str) -> String {
        match self.notes.get(key) {
            Some(note) => format!("{}; {key}: {note}", self.source),
            None => self.source.clone(),
        }
    }

    /// `pkts_num_margin` (or `margin`, HdrmPoolSizeTest's name).
    pub fn margin(&self) -> u64 {
        if self.has("pkts_num_margin") { self.n("pkts_num_margin") } else { self.n("margin") }
    }
}

/// A figure with its margin as sonic-mgmt checks it: `figure ± margin`.
pub fn window(figure: u64, margin: u64) -> String {
    if margin == 0 { format!("{figure} (exact)") } else { format!("{figure} ± {margin}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile;
    use crate::qos::Qos;

    const BUFFER_TESTS: [&str; 13] = [
        "xoff_1",
        "xoff_2",
        "xon_1",
        "xon_2",
        "lossy_queue_1",
        "wm_pg_shared_lossless",
        "wm_pg_shared_lossy",
        "wm_pg_headroom",
        "wm_q_shared_lossless",
        "wm_q_shared_lossy",
        "wm_buf_pool_lossless",
        "wm_buf_pool_lossy",
        "pg_drop",
    ];

    #[test]
    fn every_shipped_profile_has_every_block_and_its_notes_name_real_keys() {
        for (name, _) in crate::profiles() {
            let p = figures(name);
            for block in BUFFER_TESTS {
                let b = p.get(block);
                assert!(b.has("dscp"), "{name} {block}: dscp");
                let _ = b.margin();
                for key in b.notes.keys() {
                    assert!(b.has(key), "{name} {block}: a note on {key}, which the block lacks");
                }
            }
            assert!(p.cell_size > 0);
        }
    }

    /// th_balanced's 40 m ingress-drop figure: qos_params.th.yaml's rule on its 300 m rows
    /// (trig_ingr_drp = trig_pfc + xoff cells + 1) with the profile's 40 m xoff.
    #[test]
    fn th_balanced_ingress_drop_follows_the_files_rule() {
        // The rule on the published rows: 100G 7835, 50G 7225, 40G 7063 (xoff 268736, 141856, 108160 B).
        for (xoff, drop) in [(268_736u64, 7835u64), (141_856, 7225), (108_160, 7063)] {
            assert_eq!(6542 + xoff.div_ceil(208) + 1, drop);
        }
        let db = profile("th_balanced");
        let q = Qos::new(&db);
        let p = figures("th_balanced");
        let xoff = q.pg_profile(&p.src_port, 3).expect("PG 3").xoff;
        for block in ["xoff_1", "xoff_2", "wm_pg_headroom", "wm_q_shared_lossless", "pg_drop"] {
            assert_eq!(p.get(block).n("pkts_num_trig_ingr_drp"), 6542 + xoff + 1, "{block}");
        }
        // HdrmPoolSizeTest: (pgs_num − 1) full headrooms and a partial one fill one XPE's shared headroom
        // pool (the ingress pool's xoff over 4 XPEs).
        let h = p.get("hdrm_pool_size");
        let shp = q.pool("ingress_lossless_pool").headroom.div_ceil(4);
        assert_eq!((h.n("pgs_num") - 1) * h.n("pkts_num_hdrm_full") + h.n("pkts_num_hdrm_partial"), shp);
    }

    /// NVIDIA's generator (sonic-mgmt tests/qos/files/mellanox/qos_param_generator.py, spc1: cell 96,
    /// headroom_overhead 95) with qos_sai_base.py's static_th = size + int(alpha/(1+alpha) × pool), on the
    /// shipped sn2700 profile.
    #[test]
    fn sn2700_figures_are_the_generator_on_the_profile() {
        let db = profile("sn2700");
        let table = |t: &str, k: &str, f: &str| -> f64 {
            db.tables[t][k].get(f).map_or(0.0, |v| v.trim().parse().unwrap_or_else(|_| panic!("{t}|{k}|{f}")))
        };
        let cell = 96.0;
        let c = |b: f64| (b / cell).ceil() as u64;
        let static_th = |prof: &str| {
            let pool = db.tables["BUFFER_PROFILE"][prof]["pool"].clone();
            let alpha = 2f64.powf(table("BUFFER_PROFILE", prof, "dynamic_th"));
            table("BUFFER_PROFILE", prof, "size")
                + (alpha / (1.0 + alpha) * table("BUFFER_POOL", &pool, "size")).floor()
        };
        let pg = "pg_lossless_100000_5m_profile";
        let (xon, xoff, size) = (
            c(table("BUFFER_PROFILE", pg, "xon")),
            c(table("BUFFER_PROFILE", pg, "xoff")),
            c(table("BUFFER_PROFILE", pg, "size")),
        );
        assert_eq!(table("BUFFER_POOL", "ingress_lossless_pool", "xoff"), 0.0, "no shared headroom pool");
        let l = c(static_th(pg)) - size;
        let hysteresis = size - (xon + xoff);
        let trig_pfc = l + xon + hysteresis;
        let trig_ingr_drp = l + size - 95;
        let dismiss = l + 1;
        let (eg, ing) = (c(static_th("q_lossy_profile")), c(static_th("ingress_lossy_profile")));
        let trig_egr_drp = if eg <= ing { eg + 1 } else { ing + 1 };
        let p = figures("sn2700");
        assert_eq!(p.cell_size, 96);
        for block in ["xoff_1", "xoff_2", "wm_pg_headroom", "wm_buf_pool_lossless", "pg_drop"] {
            let b = p.get(block);
            assert_eq!((b.n("pkts_num_trig_pfc"), b.n("pkts_num_trig_ingr_drp")), (trig_pfc, trig_ingr_drp));
        }
        for block in ["xon_1", "xon_2"] {
            let b = p.get(block);
            assert_eq!(
                (b.n("pkts_num_trig_pfc"), b.n("pkts_num_dismiss_pfc"), b.n("pkts_num_hysteresis")),
                (trig_pfc, dismiss, hysteresis + 16)
            );
        }
        assert_eq!(p.get("wm_pg_shared_lossless").n("pkts_num_trig_pfc"), dismiss);
        assert_eq!(p.get("wm_q_shared_lossless").n("pkts_num_trig_ingr_drp"), trig_ingr_drp);
        assert_eq!(p.get("lossy_queue_1").n("pkts_num_trig_egr_drp"), trig_egr_drp - 1);
        for block in ["wm_pg_shared_lossy", "wm_q_shared_lossy", "wm_buf_pool_lossy"] {
            assert_eq!(p.get(block).n("pkts_num_trig_egr_drp"), trig_egr_drp, "{block}");
        }
        assert_eq!((trig_pfc, trig_ingr_drp, dismiss, trig_egr_drp), (17406, 17631, 17204, 30584));
        assert!(p.block("hdrm_pool_size").is_none(), "no shared headroom pool: no hdrm_pool_size");
    }
}
