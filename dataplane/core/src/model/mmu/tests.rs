//! The bookkeeping that spares the packet path its walks (`xoff.rs`), against the walks themselves: an
//! MMU whose raise bounds gate its walk must take exactly the decisions of one that walks on every
//! admission. These check consistency (the expected answers are the full computation's, not outside
//! figures).

use super::{CellProfile, CellThreshold, Mmu, PgState};
use crate::model::config::{ConfigDb, PortId, SwitchConfig, compile};
use proptest::prelude::*;

const TH: &str = include_str!("../../../../../configs/profiles/th_balanced.yaml");

/// TH BALANCED with a small ingress pool (so that a few dozen frames reach the dynamic limits) and the
/// lossless PGs' alpha `2^alpha`.
fn config(alpha: i8) -> SwitchConfig {
    let mut db = ConfigDb::from_yaml_str(TH).unwrap();
    for p in ["pg_lossless_100000_40m_profile", "pg_lossless_25000_40m_profile"] {
        db.set("BUFFER_PROFILE", p, "dynamic_th", alpha.to_string());
        db.set("BUFFER_PROFILE", p, "size", "0");
        db.set("BUFFER_PROFILE", p, "xoff", (208 * 100).to_string());
    }
    // 600 shared cells and 800 of shared headroom (carved out of the pool's size).
    db.set("BUFFER_POOL", "ingress_lossless_pool", "size", (208 * 1400).to_string());
    db.set("BUFFER_POOL", "ingress_lossless_pool", "xoff", (208 * 800).to_string());
    compile(&db).unwrap().config
}

#[derive(Debug, Clone)]
enum Op {
    /// `cells` from (port, PG) to (port, queue).
    Admit { from: usize, pg: u8, to: usize, queue: u8, cells: u32 },
    /// Release the held allocation at this index (modulo their count).
    Release(usize),
    /// Re-apply the configuration with another alpha, keeping the occupancy.
    Alpha(i8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0usize..5, prop::sample::select(vec![3u8, 4, 0]), 0usize..5, prop::sample::select(vec![3u8, 4, 0]), 1u32..40)
            .prop_map(|(from, pg, to, queue, cells)| Op::Admit { from, pg, to, queue, cells }),
        4 => any::<usize>().prop_map(Op::Release),
        1 => (-8i8..8).prop_map(Op::Alpha),
    ]
}

/// Every PG's XOFF flag, port by port.
fn xoff_state(mmu: &Mmu) -> Vec<u8> {
    (0..mmu.ports.len()).map(|p| mmu.xoff_pgs(PortId::new(p))).collect()
}

/// The reference walks on every admission: its bounds say "always".
fn always_walk(mmu: &mut Mmu) {
    for bound in &mut mmu.raise_bound {
        *bound = [u64::MAX; super::MAX_PARTITIONS];
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The bound-gated walk raises the same PGs, in the same order, as the walk on every admission, and
    /// everything after (admissions, releases, XON) follows the same way.
    #[test]
    fn gated_raise_walk_matches_the_full_walk(alpha in -3i8..3, ops in prop::collection::vec(op(), 1..120)) {
        let mut gated = Mmu::default();
        gated.configure(&config(alpha), false);
        let mut full = gated.clone();
        let mut held = Vec::new();
        let (mut raised_gated, mut raised_full) = (Vec::new(), Vec::new());
        for op in ops {
            always_walk(&mut full);
            match op {
                Op::Admit { from, pg, to, queue, cells } => {
                    let (ingress, egress) = (Some((PortId::new(from), pg)), (PortId::new(to), queue));
                    let a = gated.admit(cells, ingress, egress);
                    let b = full.admit(cells, ingress, egress);
                    prop_assert_eq!(a, b);
                    if let Ok(admitted) = a {
                        held.push(admitted.alloc);
                    }
                }
                Op::Release(i) if !held.is_empty() => {
                    let alloc = held.swap_remove(i % held.len());
                    prop_assert_eq!(gated.release(&alloc), full.release(&alloc));
                }
                Op::Release(_) => {}
                Op::Alpha(a) => {
                    let config = config(a);
                    gated.configure(&config, true);
                    full.configure(&config, true);
                }
            }
            gated.take_raised(&mut raised_gated);
            full.take_raised(&mut raised_full);
            prop_assert_eq!(&raised_gated, &raised_full);
            let (mut xon_gated, mut xon_full) = (Vec::new(), Vec::new());
            gated.recheck_xon(&mut xon_gated);
            full.recheck_xon(&mut xon_full);
            prop_assert_eq!(xon_gated, xon_full);
            prop_assert_eq!(xoff_state(&gated), xoff_state(&full));
        }
    }

    /// `raise_from` is the exact crossing point of the quick test that the walk used: over the limit
    /// (`shared ≥ free × 2^n`) exactly when `free ≤ raise_from`.
    #[test]
    fn raise_from_is_the_crossing_point(n in -8i8..8, size in 0u64..1 << 40, shared in 0u64..1 << 44, free in 0u64..1 << 40) {
        let free = free.min(size);
        let profile = CellProfile {
            pool: 0,
            alloc_pool: super::AllocPool::new(0),
            reserved: 0,
            threshold: CellThreshold::Dynamic(n),
            xon: 0,
            xoff: 0,
            xon_offset: 0,
            fast_reserve_end: 0,
            zero_limit_from: 0,
            raise_shift: CellProfile::raise_shift(CellThreshold::Dynamic(n), size),
        };
        let state = PgState { profile: Some(profile), shared_used: shared, ..PgState::default() };
        let limit = if n >= 0 { free << n } else { free >> -n };
        prop_assert_eq!(free <= Mmu::raise_from(&state), shared >= limit);
        let headroom = PgState { headroom_used: 1, ..state };
        prop_assert_eq!(Mmu::raise_from(&headroom), u64::MAX);
    }
}

/// A sequence that fills one partition until a PG other than the admitted frame's crosses its limit: the
/// gated walk raises it, as the full walk does.
#[test]
fn a_filling_pool_raises_another_pg_through_the_bound() {
    let mut gated = Mmu::default();
    gated.configure(&config(-1), false);
    let (a, out) = (PortId::new(0), PortId::new(0));
    // The other lossless PGs whose frames to `out` land in the partition of `a`'s (the same ingress
    // part): they fill it.
    let others: Vec<(PortId, u8)> = (0..gated.ports.len())
        .filter(|&p| gated.ports[p].in_part == gated.ports[0].in_part)
        .flat_map(|p| [(PortId::new(p), 3), (PortId::new(p), 4)])
        .filter(|&g| g != (a, 3))
        .collect();
    assert!(others.len() >= 3, "PGs sharing a's partition: {others:?}");
    gated.admit(20, Some((a, 3)), (out, 3)).unwrap();
    assert!(!gated.has_raised());
    let mut full = gated.clone();
    let mut raised = Vec::new();
    'fill: for &g in &others {
        // Each PG fills until its own XOFF (then its frames go to headroom, which moves no free space).
        for _ in 0..1000 {
            always_walk(&mut full);
            let x = gated.admit(1, Some(g), (out, 3));
            let y = full.admit(1, Some(g), (out, 3));
            assert_eq!(x, y);
            assert_eq!(gated.has_raised(), full.has_raised());
            if gated.has_raised() {
                gated.take_raised(&mut raised);
                break 'fill;
            }
            if x.is_ok_and(|x| x.xoff) {
                break;
            }
        }
    }
    assert_eq!(raised, vec![(a, 3)], "a's PG raised by the others' frames");
    assert_ne!(gated.xoff_pgs(a) & 1 << 3, 0, "a's PG in XOFF");
}
