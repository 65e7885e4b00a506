//! The soak switch: four 1 Gb/s ports in one VLAN with static FDB entries (after
//! `configs/scenarios/storm-switch.yaml`), lossless priorities 3 and 4 with PFC and the PFC watchdog (drop,
//! 200/400 ms, polled every 100 ms), a lossy queue 0 with a small tail-drop threshold, and a lossless WRED
//! profile that only ECN-marks (ECT data is marked; the non-ECT ACKs of the lossless queues pass: a lossless
//! queue must never drop).
//!
//! [`Variant`] is what the periodic applies change, within values that keep the switch lossless: the DWRR
//! weight of the lossless scheduler, the WRED marking thresholds, the lossless PGs' XOFF point
//! (`static_th`) and the lossy queues' tail-drop threshold.
//!
//! The watchdog's drop action also drops the stormed priority's ingress traffic on the port (`drop_ingress`,
//! Broadcom's ACL handler): otherwise the PG, which may not pause its sender while the storm lasts, fills
//! its headroom to the brim, and after the restoration the frames in flight toward it are dropped, outside
//! the storm's counters.
//!
//! The lossless PGs' headroom (`xoff`, 16 MiB) is far beyond a real switch's, and beyond the 4 MiB of the
//! demo switch: it covers a full kernel receive ring of switchd's (8 MiB of 9.1 KB slots, some 870 frames
//! of 4 KB) plus what a sender sends when its pause runs out (33 ms at 1 Gb/s) while switchd is not
//! scheduled to refresh it on a busy machine. What arrives beyond that is dropped by the kernel (RX_OVR,
//! reported) before switchd sees it; so a lossless PG drop inside switchd is switchd's fault, not the
//! machine's. The lossless egress queues' limit (200 MB) is above anything the ingress side can admit (the
//! shared pool plus every lossless PG's headroom): a lossless queue is never the one that drops.

use std::fmt::Write as _;

/// Switch ports: name, interface in the switch namespace (`Star`'s `p{i}`).
pub const PORTS: [&str; 4] = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"];
pub const DETECTION_MS: u32 = 200;
pub const RESTORATION_MS: u32 = 400;
pub const POLL_MS: u32 = 100;

/// The MAC of host `i` (rocehost's `--mac`; the switch's static FDB entry).
pub fn host_mac(i: usize) -> String {
    format!("02:00:00:00:00:{:02x}", i + 1)
}

/// The IPv4 address of host `i`.
pub fn host_ip(i: usize) -> String {
    format!("10.0.0.{}", i + 1)
}

/// The values an apply changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Variant {
    pub lossless_weight: u32,
    pub wred_min: u32,
    pub wred_max: u32,
    pub pg_static_th: u32,
    pub lossy_static_th: u32,
}

impl Variant {
    pub const BASE: Variant = Variant {
        lossless_weight: 15,
        wred_min: 20_000,
        wred_max: 100_000,
        pg_static_th: 25_600,
        lossy_static_th: 12_800,
    };

    /// A variant picked from the safe values by `pick` (a seeded choice: `pick(n)` is in `0..n`).
    pub fn pick(mut pick: impl FnMut(usize) -> usize) -> Variant {
        const WEIGHTS: [u32; 4] = [15, 10, 20, 12];
        const WRED: [(u32, u32); 3] = [(20_000, 100_000), (40_000, 200_000), (10_000, 80_000)];
        const PG_TH: [u32; 3] = [25_600, 38_400, 51_200];
        const LOSSY_TH: [u32; 2] = [12_800, 25_600];
        let (wred_min, wred_max) = WRED[pick(WRED.len())];
        Variant {
            lossless_weight: WEIGHTS[pick(WEIGHTS.len())],
            wred_min,
            wred_max,
            pg_static_th: PG_TH[pick(PG_TH.len())],
            lossy_static_th: LOSSY_TH[pick(LOSSY_TH.len())],
        }
    }
}

/// The whole configuration (CONFIG_DB as YAML) with `v`'s values.
pub fn switch_yaml(v: &Variant) -> String {
    let all = PORTS.join(",");
    let mut y = String::new();
    y.push_str("DEVICE_METADATA:\n  localhost: { mac: \"02:4c:53:00:00:01\" }\nPORT:\n");
    for p in PORTS {
        let _ = writeln!(y, "  {p}: {{ speed: 1000, mtu: 9100 }}");
    }
    y.push_str("VLAN:\n  Vlan1000: { vlanid: 1000 }\nVLAN_MEMBER:\n");
    for p in PORTS {
        let _ = writeln!(y, "  Vlan1000|{p}: {{ tagging_mode: untagged }}");
    }
    y.push_str("FDB:\n");
    for (i, p) in PORTS.iter().enumerate() {
        let _ = writeln!(y, "  Vlan1000|{}: {{ port: {p} }}", host_mac(i));
    }
    let _ = write!(
        y,
        r#"DSCP_TO_TC_MAP:
  AZURE: {{ "0": "1", "3": "3", "4": "4", "8": "0", "46": "5", "48": "6" }}
TC_TO_PRIORITY_GROUP_MAP:
  AZURE: {{ "0": "0", "1": "0", "2": "0", "3": "3", "4": "4", "5": "0", "6": "0", "7": "7" }}
PORT_QOS_MAP:
  {all}:
    dscp_to_tc_map: AZURE
    tc_to_pg_map: AZURE
    pfc_enable: "3,4"
    pfcwd_sw_enable: "3,4"
BUFFER_ASIC:
  global: {{ cell_size: 256 }}
BUFFER_POOL:
  ingress_lossless_pool: {{ type: ingress, mode: static, size: 40000000 }}
  egress_lossless_pool: {{ type: egress, mode: static, size: 200000000 }}
  egress_lossy_pool: {{ type: egress, mode: static, size: 20000000 }}
BUFFER_PROFILE:
  ingress_lossy_profile: {{ pool: ingress_lossless_pool, size: 0, static_th: 5000000 }}
  pg_lossless: {{ pool: ingress_lossless_pool, size: 2560, static_th: {pg}, xoff: 16777216, xon: 0, xon_offset: 2560 }}
  egress_lossless_profile: {{ pool: egress_lossless_pool, size: 0, static_th: 200000000 }}
  egress_lossy_profile: {{ pool: egress_lossy_pool, size: 2048, static_th: {lossy} }}
BUFFER_PG:
  {all}|0: {{ profile: ingress_lossy_profile }}
  {all}|3-4: {{ profile: pg_lossless }}
BUFFER_QUEUE:
  {all}|0-2: {{ profile: egress_lossy_profile }}
  {all}|3-4: {{ profile: egress_lossless_profile }}
  {all}|5-6: {{ profile: egress_lossy_profile }}
WRED_PROFILE:
  AZURE_LOSSLESS:
    ecn: ecn_all
    wred_green_enable: "false"
    wred_yellow_enable: "false"
    wred_red_enable: "false"
    green_min_threshold: {min}
    green_max_threshold: {max}
    green_drop_probability: 10
    yellow_min_threshold: {min}
    yellow_max_threshold: {max}
    yellow_drop_probability: 10
    red_min_threshold: {min}
    red_max_threshold: {max}
    red_drop_probability: 10
SCHEDULER:
  scheduler.0: {{ type: DWRR, weight: 14 }}
  scheduler.1: {{ type: DWRR, weight: {weight} }}
QUEUE:
  {all}|0-2: {{ scheduler: scheduler.0 }}
  {all}|3-4: {{ scheduler: scheduler.1, wred_profile: AZURE_LOSSLESS }}
  {all}|5-6: {{ scheduler: scheduler.0 }}
PFC_WD:
  GLOBAL: {{ POLL_INTERVAL: "{POLL_MS}", drop_ingress: "true" }}
"#,
        pg = v.pg_static_th,
        lossy = v.lossy_static_th,
        min = v.wred_min,
        max = v.wred_max,
        weight = v.lossless_weight,
    );
    for p in PORTS {
        let _ = writeln!(
            y,
            "  {p}: {{ action: drop, detection_time: \"{DETECTION_MS}\", restoration_time: \"{RESTORATION_MS}\" }}"
        );
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use lossless_dataplane::model::config::ConfigDb;

    #[test]
    fn every_variant_parses() {
        let mut n = 0usize;
        for _ in 0..20 {
            let v = Variant::pick(|len| {
                n += 1;
                n % len
            });
            let db = ConfigDb::from_yaml_str(&switch_yaml(&v)).unwrap();
            assert_eq!(db.tables.get("PORT").map(|t| t.len()), Some(4), "{v:?}");
        }
    }
}
