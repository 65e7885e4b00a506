//! `hdrm_pool_size`, the section sonic-mgmt's HdrmPoolSizeTest reads (`tests/qos/test_qos_sai.py`
//! testQosSaiHeadroomPoolSize, `tests/saitests/py3/sai_qos_tests.py` HdrmPoolSizeTest), measured by the
//! test's own procedure: with egress held on the destination, every (source port, lossless PG) pair is
//! filled with `pkts_num_trig_pfc` packets, then sent one packet at a time until it sends PFC (at most 10),
//! then the headroom is filled, `pkts_num_hdrm_full` packets per pair and `pkts_num_hdrm_partial` for the
//! last, and the next packet must be an ingress drop (with no drop before it).
//!
//! Broadcom's figures are hand-written in `tests/qos/files/qos_params.<asic>.yaml`; their headroom
//! figures split the shared headroom pool as `(pgs_num − 1) × full + partial`, the last PG about half full
//! (td3 100000_300m: 17 × 362 + 182 = 6336 cells = the pool's `xoff` of 1 622 016 B at 256 B a cell).

use super::{Nanos, Probe, Serialize};
use lossless_dataplane::model::PortId;
use lossless_dataplane::model::config::{AsicFamily, ConfigDb, SwitchConfig};

/// sonic-mgmt's `hdrm_pool_size` entry. Ports are switch port names where sonic-mgmt writes ptf port ids
/// (`src_port_ids`, `dst_port_id`): the runner translates them through its port map.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HdrmPoolSize {
    pub dscps: Vec<u8>,
    pub ecn: u8,
    pub pgs: Vec<u8>,
    /// Empty when the profile has too few PFC-enabled ports (sonic-mgmt then skips: "No enough test
    /// ports on this DUT").
    pub src_ports: Vec<String>,
    pub dst_port: String,
    pub pgs_num: usize,
    pub pkts_num_trig_pfc: u64,
    pub pkts_num_hdrm_full: u64,
    pub pkts_num_hdrm_partial: u64,
}

/// Source ports (two lossless PGs each) sonic-mgmt's published figures use: qos_params.td3.yaml
/// (100000_300m: `src_port_ids` 9 ports, `pgs_num` 18) and qos_params.th.yaml (40000_300m: 5, 10). NVIDIA's
/// generator writes the section only with a shared headroom pool, in another shape
/// (`pkts_num_trig_pfc_shp`), and no shipped Spectrum profile has one: not produced.
fn source_ports(family: AsicFamily) -> Option<usize> {
    match family {
        AsicFamily::Trident3 => Some(9),
        AsicFamily::Tomahawk => Some(5),
        _ => None,
    }
}

/// One (source port, DSCP, PFC priority) the test sends on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pair {
    pub src: PortId,
    pub dscp: u8,
    pub prio: usize,
}

/// Sends one packet of `p`, a 64-byte frame time (84 B with preamble and gap at 100 Gb/s, 6.72 ns) after
/// the last: a source port sends one PFC frame at a time, so a second PG's XOFF goes out only once the
/// clock moves past the first.
pub(super) fn send(probe: &mut Probe, p: &Pair) {
    probe.now += Nanos::from_ns(7);
    probe.send_from(p.src, p.dscp);
}

/// Lets a microsecond pass, time for any PFC frame `src` has pending to go out: the test waits (8 s) for
/// the counters before it reads them.
fn settle(probe: &mut Probe, src: PortId) {
    probe.now += Nanos::from_ns(1_000);
    while probe.sw.poll_transmit(src, probe.now).is_some() {}
}

/// A port's PFC frames sent for `prio` so far.
fn pfc_tx(probe: &Probe, src: PortId, prio: usize) -> u64 {
    probe.sw.port_counters(src).map_or(0, |c| c.pfc[prio].tx)
}

/// The test's first two steps: `trig` packets per pair in order, then each pair one packet at a time until
/// it sends PFC. Errors when a pair needs more than the test's 10 packets.
#[cfg(test)]
pub(super) fn fill_and_trigger(probe: &mut Probe, pairs: &[Pair], trig: u64) -> Result<(), String> {
    for p in pairs {
        for _ in 0..trig {
            send(probe, p);
        }
    }
    trigger(probe, pairs, trig)
}

/// Each pair in turn, one packet at a time until it sends PFC.
fn trigger(probe: &mut Probe, pairs: &[Pair], trig: u64) -> Result<(), String> {
    for p in pairs {
        let mut sent = 0;
        settle(probe, p.src);
        while pfc_tx(probe, p.src, p.prio) == 0 {
            if sent == 10 {
                return Err(format!("DSCP {} needs more than 10 packets over {trig} to send PFC", p.dscp));
            }
            send(probe, p);
            settle(probe, p.src);
            sent += 1;
        }
    }
    Ok(())
}

/// The measurement profile (`db`, forwarding replaced) with `extra` sources as routed ports.
pub(super) fn with_sources(mut db: ConfigDb, extra: &[String]) -> ConfigDb {
    for (i, name) in extra.iter().enumerate() {
        db.touch("INTERFACE", name).touch("INTERFACE", &format!("{name}|10.1.{i}.0/31"));
    }
    db
}

/// Measures `hdrm_pool_size` on `db` (the measurement profile) for `lossless`: the first two (DSCP, PG,
/// priority) of the source's lossless PGs. `None` when sonic-mgmt has no such section for the family or
/// the ingress lossless pool has no shared headroom pool (`xoff`).
pub(super) fn measure(
    db: &ConfigDb,
    config: &SwitchConfig,
    ports: &super::Ports,
    lossless: &[(u8, u8, usize)],
    routed: &[String],
) -> Result<Option<HdrmPoolSize>, String> {
    let Some(wanted) = source_ports(config.asic.family()) else { return Ok(None) };
    if !config.pools.iter().any(|p| p.xoff_bytes > 0) || lossless.len() < 2 {
        return Ok(None);
    }
    let lossless = &lossless[..2];
    // The source first, then the other PFC-enabled ports in profile order, routed ones last.
    let mut others: Vec<String> = config
        .ports
        .iter()
        .zip(&config.qos)
        .filter(|(p, q)| q.pfc_enable != 0 && p.name != ports.src && p.name != ports.dst)
        .map(|(p, _)| p.name.clone())
        .collect();
    others.sort_by_key(|name| routed.contains(name));
    let mut sources = vec![ports.src.clone()];
    sources.extend(others);
    let mut section = HdrmPoolSize {
        dscps: lossless.iter().map(|l| l.0).collect(),
        ecn: 1,
        pgs: lossless.iter().map(|l| l.1).collect(),
        src_ports: Vec::new(),
        dst_port: ports.dst.clone(),
        pgs_num: 0,
        pkts_num_trig_pfc: 0,
        pkts_num_hdrm_full: 0,
        pkts_num_hdrm_partial: 0,
    };
    if sources.len() < wanted {
        return Ok(Some(section));
    }
    sources.truncate(wanted);
    let db = with_sources(db.clone(), &sources[1..]);
    let probe = Probe::new(&db, ports)?;
    let pairs = sources
        .iter()
        .flat_map(|name| lossless.iter().map(move |&(dscp, _, prio)| (name, dscp, prio)))
        .map(|(name, dscp, prio)| {
            let src = probe.sw.port_id(name).ok_or_else(|| format!("the profile has no port {name}"))?;
            Ok(Pair { src, dscp, prio })
        })
        .collect::<Result<Vec<_>, String>>()?;
    // pkts_num_trig_pfc: one packet per pair in turn until any sends PFC; one level below that, every
    // pair filled in order stays under XOFF (a PG filled earlier saw an emptier pool, a higher threshold).
    let mut probe = probe;
    let mut level = 0;
    'fill: loop {
        level += 1;
        if level > super::MAX_PACKETS {
            return Err("no source PG ever sent PFC".into());
        }
        for p in &pairs {
            send(&mut probe, p);
            // Any PG: as the pool fills, a PG filled earlier can cross its (shrinking) limit first.
            if probe.sw.mmu().any_xoff() {
                break 'fill;
            }
        }
    }
    let trig = level - 1;
    // The headroom left once every pair is in XOFF: one packet per pair in turn until the first drop. The
    // PGs are a packet or two from where the test's fill leaves them, all in shared space: the headroom,
    // used only after XOFF, is the same.
    trigger(&mut probe, &pairs, trig)?;
    // Only the port just sent to can have dropped.
    let dropped = |probe: &Probe, p: &Pair| probe.sw.port_counters(p.src).is_some_and(|c| c.rx_drp > 0);
    let mut headroom = 0u64;
    'hdrm: loop {
        for p in &pairs {
            send(&mut probe, p);
            if dropped(&probe, p) {
                break 'hdrm;
            }
            headroom += 1;
            if headroom > super::MAX_PACKETS {
                return Err("the headroom never dropped".into());
            }
        }
    }
    let n = pairs.len() as u64;
    // The published split: the last PG about half full.
    let full = 2 * headroom / (2 * n - 1);
    section.src_ports = sources;
    section.pgs_num = pairs.len();
    section.pkts_num_trig_pfc = trig;
    section.pkts_num_hdrm_full = full;
    section.pkts_num_hdrm_partial = headroom - (n - 1) * full;
    Ok(Some(section))
}
