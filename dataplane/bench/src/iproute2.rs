//! What iproute2 says about links (addresses, kernel counters), and the counters a run reads along the path.

use anyhow::{Context, ensure};
use lossless_dataplane::wire::EthernetAddress;
use lossless_testkit::Netns;
use serde_json::Value;

/// `ip -j [-s] link show dev DEV` in `ns`, the one object.
pub fn link_json(ns: &Netns, dev: &str, stats: bool) -> anyhow::Result<Value> {
    let mut args = vec!["-j"];
    if stats {
        args.push("-s");
    }
    args.extend(["link", "show", "dev", dev]);
    let out = ns.ip(&args)?;
    let v: Value = serde_json::from_slice(&out.stdout).context("parsing `ip -j link` output")?;
    v.get(0).cloned().with_context(|| format!("`ip -j link show dev {dev}`: no object"))
}

pub fn link_mac(ns: &Netns, dev: &str) -> anyhow::Result<EthernetAddress> {
    let v = link_json(ns, dev, false)?;
    let text = v.get("address").and_then(Value::as_str).with_context(|| format!("{dev}: no address"))?;
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = text.split(':').collect();
    ensure!(parts.len() == 6, "{dev}: bad MAC {text}");
    for (b, p) in mac.iter_mut().zip(parts) {
        *b = u8::from_str_radix(p, 16).with_context(|| format!("{dev}: bad MAC {text}"))?;
    }
    Ok(EthernetAddress(mac))
}

#[derive(Debug, Clone, Copy, Default)]
pub struct LinkStats {
    pub rx_packets: u64,
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_dropped: u64,
}

pub fn link_stats(ns: &Netns, dev: &str) -> anyhow::Result<LinkStats> {
    let v = link_json(ns, dev, true)?;
    let get = |dir: &str, field: &str| {
        v.get("stats64")
            .and_then(|s| s.get(dir))
            .and_then(|d| d.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(LinkStats {
        rx_packets: get("rx", "packets"),
        rx_dropped: get("rx", "dropped"),
        tx_packets: get("tx", "packets"),
        tx_dropped: get("tx", "dropped"),
    })
}

#[derive(Debug, Clone, Copy, Default)]
pub struct PathStats {
    pub m0: LinkStats,
    pub m1: LinkStats,
    pub h2: LinkStats,
}

#[derive(Debug, Clone, Default)]
pub struct SwitchdStats {
    pub rx_ok: u64,
    pub rx_drp: u64,
    pub pg3_packets: u64,
    pub pfc_tx: u64,
    pub tx_ok: u64,
    pub tx_drp: u64,
    pub q3_packets: u64,
    pub q3_dropped: u64,
    pub q3_ecn_marked: u64,
    /// PFC frames received on the egress port (from h2: none expected) and frames it trapped.
    pub e4_pfc_rx: u64,
    pub e4_trapped: u64,
    /// Ethernet0's ingress drops by reason.
    pub drop_reasons: std::collections::BTreeMap<String, u64>,
}

impl SwitchdStats {
    pub fn since(&self, before: &SwitchdStats) -> SwitchdStats {
        SwitchdStats {
            rx_ok: self.rx_ok - before.rx_ok,
            rx_drp: self.rx_drp - before.rx_drp,
            pg3_packets: self.pg3_packets - before.pg3_packets,
            pfc_tx: self.pfc_tx - before.pfc_tx,
            tx_ok: self.tx_ok - before.tx_ok,
            tx_drp: self.tx_drp - before.tx_drp,
            q3_packets: self.q3_packets - before.q3_packets,
            q3_dropped: self.q3_dropped - before.q3_dropped,
            q3_ecn_marked: self.q3_ecn_marked - before.q3_ecn_marked,
            e4_pfc_rx: self.e4_pfc_rx - before.e4_pfc_rx,
            e4_trapped: self.e4_trapped - before.e4_trapped,
            drop_reasons: self
                .drop_reasons
                .iter()
                .map(|(r, n)| (r.clone(), n - before.drop_reasons.get(r).copied().unwrap_or(0)))
                .filter(|(_, n)| *n > 0)
                .collect(),
        }
    }
}
