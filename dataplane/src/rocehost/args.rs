//! The command line: options, `--flow` specs, `--dcqcn-param`s, and the NIC flows they resolve to.

use super::{DEFAULT_STORM_INTERVAL_US, FIRST_SRC_PORT};
use crate::nic::dcqcn::MAX_TIME_SCALE;
use crate::nic::{DcqcnParams, FlowConfig, NicConfig, NpParams, ProbePeer};
use crate::wire::EthernetAddress;
use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::PathBuf;

const FLOW_HELP: &str = "\
FLOW SPEC (--flow, repeatable): comma-separated KEY=VALUE
  dst=IP          destination host (required)
  dst-mac=MAC     next-hop MAC of the data (default: --gateway-mac)
  dscp=N          DSCP of the data, 0..63 (default 3)
  priority=N      PFC priority, 0..7 (default: the DSCP's, see --dscp-to-priority)
  rate=MBPS       rate cap (default: none; DCQCN and the line rate still apply)
  message=BYTES   message size (default 65536)
  messages=N      number of messages (default: unbounded)
  dcqcn=on|off    react to CNPs (default on; off with --no-dcqcn)
  src-port=N      UDP source port (default 49152 + flow index)
  qp=N            the receiver's QP number, the BTH DestQP (default: the flow's own QPN)
  start-ms=N      start this long after start-up (default 0)
Every run is a new queue pair per flow: its own QPN and initial PSN are random (see the report's src_qp
and initial_psn), so a receiver never takes a new run for an earlier one with the same --ip.";

/// FLOW SPEC and DCQCN PARAMETERS (names and defaults from the NIC model, so they cannot drift).
pub(super) fn after_help() -> String {
    let list = |value: serde_json::Value| -> String {
        let serde_json::Value::Object(map) = value else { return String::new() };
        map.iter().map(|(k, v)| format!("  {k}={v}\n")).collect()
    };
    format!(
        "{FLOW_HELP}\n\nDCQCN PARAMETERS (--dcqcn-param NAME=VALUE, repeatable; the unit is in the name)\n\
         Reaction point (the flows of this host with dcqcn=on), NVIDIA's defaults:\n{}\
         Notification point (CNPs this host sends as a receiver; the interval is the DCQCN paper's 50 µs,\n\
         NVIDIA's min_time_between_cnps is 0 on recent firmware):\n{}\
         time_scale is what --dcqcn-time-scale sets; it also multiplies cnp_interval_ns.",
        list(serde_json::to_value(DcqcnParams::default()).unwrap_or_default()),
        list(serde_json::to_value(NpParams::default()).unwrap_or_default()),
    )
}

#[derive(Parser, Debug)]
#[command(
    name = "rocehost",
    version,
    about = "A RoCEv2 host NIC (PFC, DCQCN, go-back-N/0) on a real interface, for netns labs",
    after_help = after_help()
)]
pub(super) struct Args {
    /// The interface: IFNAME (batched AF_PACKET), pnet:IFNAME or tap:IFNAME, as for switchd.
    #[arg(long, value_name = "IF")]
    pub(super) interface: String,
    /// This host's IPv4 address.
    #[arg(long, value_name = "A.B.C.D")]
    pub(super) ip: Ipv4Addr,
    /// This host's MAC address [default: the interface's].
    #[arg(long, value_name = "MAC")]
    pub(super) mac: Option<EthernetAddress>,
    /// Default next-hop MAC of flows (the first-hop router).
    #[arg(long, value_name = "MAC")]
    pub(super) gateway_mac: Option<EthernetAddress>,
    /// Line rate the NIC paces its transmissions at, Mb/s.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub(super) line_rate_mbps: u32,
    /// Priorities whose received PFC frames are honoured, e.g. 3,4 [default: none (802.3x PAUSE only)].
    #[arg(long, value_name = "PRIORITIES", value_parser = parse_priority_mask)]
    pub(super) pfc_enable: Option<u8>,
    /// IP MTU of data packets (128..=9216; at most the interface's MTU).
    #[arg(long, value_name = "N", default_value_t = 1500)]
    pub(super) mtu: u32,
    /// Loss recovery: go-back-N or go-back-0.
    #[arg(long, value_enum, default_value_t = RetransmitArg::Gbn)]
    pub(super) retransmit: RetransmitArg,
    /// Retransmission timeout in µs: no ACK progress for this long rewinds to the first unacknowledged
    /// packet [default: the NIC's, 4194.304 µs = IBA local ACK timeout exponent 10].
    #[arg(long, value_name = "US", value_parser = parse_rto)]
    pub(super) rto_us: Option<u64>,
    /// Flows do not react to CNPs unless their spec says dcqcn=on (the receiver still sends CNPs).
    #[arg(long)]
    pub(super) no_dcqcn: bool,
    /// Run DCQCN N times slower, for a line N times slower than the one its parameters are tuned for:
    /// every period × N (α update, decrease monitor period, rate-increase timer, and the CNP interval
    /// of this host as a receiver), every rate step ÷ N (additive and hyper increase, minimum rate), byte
    /// counter unchanged. 500 makes NVIDIA's defaults (tuned for 100 Gb/s) do at 200 Mb/s what they do
    /// at 100 Gb/s, 500 times slower; at 1 they hardly react to congestion at lab rates.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_TIME_SCALE)))]
    pub(super) dcqcn_time_scale: u32,
    /// Set a DCQCN parameter by name, e.g. cnp_interval_ns=0 or rpg_time_reset_ns=55000 (repeatable;
    /// names and defaults under DCQCN PARAMETERS below).
    #[arg(long = "dcqcn-param", value_name = "NAME=VALUE")]
    pub(super) dcqcn_params: Vec<String>,
    /// Set a receive pipeline parameter by name (repeatable): buffer_bytes, xoff_bytes, xon_bytes,
    /// per_packet_ns, rate_mbps, page_bytes, page_cache_entries, page_miss_ns, region_bytes, watchdog_ns.
    /// Without buffer_bytes the NIC consumes frames as they arrive (docs/nic.md, "Receive pipeline").
    #[arg(long = "rx-param", value_name = "NAME=VALUE")]
    pub(super) rx_params: Vec<String>,
    /// DSCP → PFC priority of data (flows without priority=) and of the ACK/NAKs answering it; DSCPs not
    /// listed use DSCP >> 3. The default is the lossless classes of SONiC's AZURE DSCP_TO_TC_MAP; "none"
    /// leaves only DSCP >> 3.
    #[arg(long, value_name = "DSCP=PRIO,...", default_value = "3=3,4=4", value_parser = parse_dscp_map)]
    pub(super) dscp_to_priority: DscpMap,
    /// A flow to send (see FLOW SPEC below); repeatable.
    #[arg(long = "flow", value_name = "SPEC")]
    pub(super) flows: Vec<String>,
    /// Stop after this many seconds [default: when every flow finished (+0.5 s), or on a signal].
    #[arg(long, value_name = "SECS", value_parser = parse_duration)]
    pub(super) duration: Option<u64>,
    /// Keep sending PFC XOFF (quanta 0xFFFF) for these priorities every INTERVAL_US (default 100).
    #[arg(long, value_name = "PRIORITIES[@INTERVAL_US]", value_parser = parse_storm)]
    pub(super) storm: Option<Storm>,
    /// Start the --storm this many seconds after start-up (a NIC that breaks later) [default: at once].
    #[arg(long, value_name = "SECS", value_parser = parse_duration, requires = "storm")]
    pub(super) storm_from: Option<u64>,
    /// Stop the --storm this many seconds after start-up [default: never].
    #[arg(long, value_name = "SECS", value_parser = parse_duration, requires = "storm")]
    pub(super) storm_until: Option<u64>,
    /// Stop the NIC's receive pipeline this many seconds after start-up: its buffer fills and it pauses
    /// its peer (needs --rx-param buffer_bytes=...).
    #[arg(long, value_name = "SECS", value_parser = parse_duration)]
    pub(super) rx_stuck_from: Option<u64>,
    /// Restart the receive pipeline this many seconds after start-up [default: never].
    #[arg(long, value_name = "SECS", value_parser = parse_duration, requires = "rx_stuck_from")]
    pub(super) rx_stuck_until: Option<u64>,
    /// Write the JSON report here at exit.
    #[arg(long, value_name = "FILE")]
    pub(super) report: Option<PathBuf>,
    /// Print the JSON report on stdout at exit (else a table).
    #[arg(long)]
    pub(super) json: bool,
    /// Create this file (JSON: pid, interface, mac, ip) once the interface is open and the loop runs.
    #[arg(long, value_name = "FILE")]
    pub(super) ready_file: Option<PathBuf>,
    /// A one-line status on stderr every second.
    #[arg(long)]
    pub(super) progress: bool,
    /// Probe this peer (Pingmesh, docs/pingmesh.md): IP, or IP@MAC with the next hop's MAC [default MAC:
    /// --gateway-mac]; repeatable. Pings are answered whether or not this host probes.
    #[arg(long = "pingmesh-peer", value_name = "IP[@MAC]")]
    pub(super) pingmesh_peers: Vec<String>,
    /// One ping to every peer per interval, µs.
    #[arg(long, value_name = "US", default_value_t = 1000.0, value_parser = parse_interval_us)]
    pub(super) pingmesh_interval_us: f64,
    /// DSCP of the pings: the class they measure [default: 3, the lossless class of SONiC's AZURE map].
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=63))]
    pub(super) pingmesh_dscp: u8,
    /// PFC priority of the pings [default: the DSCP's, see --dscp-to-priority].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=7))]
    pub(super) pingmesh_priority: Option<u8>,
    /// Take only PFC frames and probe answers from the wire, answer nothing (no ARP, pings or data): a
    /// prober beside the host's own rocehost on the same interface (`swctl lab pingmesh`).
    #[arg(long, requires = "pingmesh_peers")]
    pub(super) probe_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum RetransmitArg {
    /// Go-back-N: resume from the first missing packet.
    Gbn,
    /// Go-back-0: restart the message.
    Gb0,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DscpMap(pub(super) BTreeMap<u8, u8>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Storm {
    pub(super) priorities: u8,
    pub(super) interval_ns: u64,
}

/// `3,4`, `3-4`, `none` → a priority bit mask.
fn parse_priority_mask(text: &str) -> Result<u8, String> {
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("none") {
        return Ok(0);
    }
    let mut mask = 0u8;
    for part in text.split(',') {
        let part = part.trim();
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let parse = |s: &str| match s.trim().parse::<u8>() {
            Ok(p) if p <= 7 => Ok(p),
            _ => Err(format!("{part:?}: a priority is 0..7 (e.g. 3,4 or 3-4)")),
        };
        let (lo, hi) = (parse(lo)?, parse(hi)?);
        if lo > hi {
            return Err(format!("{part:?}: empty range"));
        }
        for p in lo..=hi {
            mask |= 1 << p;
        }
    }
    Ok(mask)
}

fn parse_dscp_map(text: &str) -> Result<DscpMap, String> {
    let mut map = BTreeMap::new();
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("none") {
        return Ok(DscpMap(map));
    }
    for part in text.split(',') {
        let bad = || format!("{part:?}: expected DSCP=PRIORITY (DSCP 0..63, priority 0..7)");
        let (d, p) = part.split_once('=').ok_or_else(bad)?;
        let d: u8 = d.trim().parse().map_err(|_| bad())?;
        let p: u8 = p.trim().parse().map_err(|_| bad())?;
        if d > 63 || p > 7 {
            return Err(bad());
        }
        if map.insert(d, p).is_some() {
            return Err(format!("DSCP {d} given twice"));
        }
    }
    Ok(DscpMap(map))
}

/// Seconds (a float) → nanoseconds.
fn parse_duration(text: &str) -> Result<u64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok((s * 1e9).round() as u64),
        _ => Err(format!("{text:?}: a duration in seconds > 0 (e.g. 1 or 0.25)")),
    }
}

fn parse_interval_us(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(us) if us.is_finite() && (1.0..=1e9).contains(&us) => Ok(us),
        _ => Err(format!("{text:?}: microseconds, 1 or more (e.g. 1000)")),
    }
}

/// The `--pingmesh-peer`s as probe peers (next hop: the MAC given, else `gateway_mac`).
pub(super) fn resolve_probe_peers(
    peers: &[String],
    gateway_mac: Option<EthernetAddress>,
) -> Result<Vec<ProbePeer>, String> {
    peers
        .iter()
        .map(|text| {
            let (ip, mac) = match text.split_once('@') {
                Some((ip, mac)) => (ip, Some(mac)),
                None => (text.as_str(), None),
            };
            let ip: Ipv4Addr = ip
                .trim()
                .parse()
                .map_err(|_| format!("--pingmesh-peer {text}: {ip:?} is not an IPv4 address"))?;
            let mac = match mac {
                Some(m) => m.trim().parse().map_err(|e| format!("--pingmesh-peer {text}: {m:?}: {e}"))?,
                None => gateway_mac.ok_or_else(|| {
                    format!("--pingmesh-peer {text}: give the next hop's MAC (IP@MAC) or --gateway-mac")
                })?,
            };
            Ok(ProbePeer { ip, mac })
        })
        .collect()
}

/// Microseconds (a float) → nanoseconds, at least 1.
fn parse_rto(text: &str) -> Result<u64, String> {
    match text.trim().parse::<f64>() {
        Ok(us) if us.is_finite() && us > 0.0 && us < 1e12 => Ok(((us * 1e3).round() as u64).max(1)),
        _ => Err(format!("{text:?}: microseconds > 0 (e.g. 4096 or 65536)")),
    }
}

fn parse_storm(text: &str) -> Result<Storm, String> {
    let (prios, interval) = match text.split_once('@') {
        Some((p, i)) => (p, Some(i)),
        None => (text, None),
    };
    let priorities = parse_priority_mask(prios)?;
    if priorities == 0 {
        return Err(format!("{text:?}: name at least one priority (e.g. 3 or 3,4@100)"));
    }
    let interval_us = match interval {
        None => DEFAULT_STORM_INTERVAL_US,
        Some(i) => match i.trim().parse::<f64>() {
            Ok(us) if us.is_finite() && us > 0.0 && us <= 1e9 => us,
            _ => return Err(format!("{i:?}: the interval is microseconds > 0 (e.g. 3@100)")),
        },
    };
    Ok(Storm { priorities, interval_ns: ((interval_us * 1e3).round() as u64).max(1) })
}

/// One `--flow` as given; what is left out is resolved by [`resolve_flows`].
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct FlowSpec {
    dst: Option<Ipv4Addr>,
    dst_mac: Option<EthernetAddress>,
    dscp: Option<u8>,
    priority: Option<u8>,
    rate_mbps: Option<u32>,
    message_bytes: Option<u64>,
    messages: Option<u64>,
    dcqcn: Option<bool>,
    src_port: Option<u16>,
    qp: Option<u32>,
    start_ns: Option<u64>,
}

const FLOW_KEYS: &str =
    "dst, dst-mac, dscp, priority, rate, message, messages, dcqcn, src-port, qp, start-ms";

impl FlowSpec {
    pub(super) fn parse(text: &str) -> anyhow::Result<FlowSpec> {
        let mut spec = FlowSpec::default();
        let mut seen = BTreeSet::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                bail!("{item:?}: expected KEY=VALUE (keys: {FLOW_KEYS})");
            };
            let (key, value) = (key.trim(), value.trim());
            if !seen.insert(key) {
                bail!("{key}= given twice");
            }
            let number = |max: u64| -> anyhow::Result<u64> {
                let n = parse_number(value).with_context(|| format!("{key}={value}"))?;
                if n > max {
                    bail!("{key}={value}: at most {max}");
                }
                Ok(n)
            };
            match key {
                "dst" => {
                    spec.dst =
                        Some(value.parse().with_context(|| format!("dst={value}: not an IPv4 address"))?)
                }
                "dst-mac" => spec.dst_mac = Some(value.parse().with_context(|| format!("dst-mac={value}"))?),
                "dscp" => spec.dscp = Some(number(63)? as u8),
                "priority" => spec.priority = Some(number(7)? as u8),
                "rate" => match number(u64::from(u32::MAX))? {
                    0 => bail!("rate=0: a rate cap is > 0 Mb/s (leave it out for none)"),
                    r => spec.rate_mbps = Some(r as u32),
                },
                "message" => match number(u64::MAX)? {
                    0 => bail!("message=0: a message has at least one byte"),
                    m => spec.message_bytes = Some(m),
                },
                "messages" => spec.messages = Some(number(u64::MAX)?),
                "dcqcn" => {
                    spec.dcqcn = Some(match value {
                        "on" | "true" | "1" | "yes" => true,
                        "off" | "false" | "0" | "no" => false,
                        _ => bail!("dcqcn={value}: on or off"),
                    })
                }
                "src-port" => spec.src_port = Some(number(u64::from(u16::MAX))? as u16),
                "qp" => match number(0xff_ffff)? {
                    0 => bail!("qp=0: QP numbers are 1..0xffffff"),
                    q => spec.qp = Some(q as u32),
                },
                "start-ms" => match value.parse::<f64>() {
                    Ok(ms) if ms.is_finite() && (0.0..1e12).contains(&ms) => {
                        spec.start_ns = Some((ms * 1e6).round() as u64)
                    }
                    _ => bail!("start-ms={value}: milliseconds ≥ 0"),
                },
                other => bail!("unknown key {other:?} (keys: {FLOW_KEYS})"),
            }
        }
        if spec.dst.is_none() {
            bail!("dst= is required");
        }
        Ok(spec)
    }
}

/// `--dcqcn-time-scale` and then every `--dcqcn-param NAME=VALUE` in order; the error names the option
/// and the parameter.
pub(super) fn apply_dcqcn_options(
    cfg: &mut NicConfig,
    time_scale: u32,
    params: &[String],
) -> Result<(), String> {
    cfg.set_dcqcn_param("time_scale", &time_scale.to_string())
        .map_err(|e| format!("--dcqcn-time-scale: {e}"))?;
    let mut seen = BTreeSet::new();
    for text in params {
        let Some((name, value)) = text.split_once('=') else {
            return Err(format!("--dcqcn-param {text}: expected NAME=VALUE (e.g. cnp_interval_ns=0)"));
        };
        let name = name.trim();
        if !seen.insert(name) {
            return Err(format!("--dcqcn-param {text}: {name} given twice"));
        }
        if name == "time_scale" && time_scale != 1 {
            return Err(format!(
                "--dcqcn-param {text}: the time scale is already --dcqcn-time-scale {time_scale}"
            ));
        }
        cfg.set_dcqcn_param(name, value).map_err(|e| format!("--dcqcn-param {text}: {e}"))?;
    }
    Ok(())
}

/// Every `--rx-param NAME=VALUE` in order, then the whole receive pipeline checked; the error names the
/// option and the parameter.
pub(super) fn apply_rx_options(cfg: &mut NicConfig, params: &[String]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for text in params {
        let Some((name, value)) = text.split_once('=') else {
            return Err(format!("--rx-param {text}: expected NAME=VALUE (e.g. buffer_bytes=262144)"));
        };
        let name = name.trim();
        if !seen.insert(name) {
            return Err(format!("--rx-param {text}: {name} given twice"));
        }
        cfg.rx_pipeline.set(name, value).map_err(|e| format!("--rx-param {text}: {e}"))?;
    }
    cfg.rx_pipeline.validate().map_err(|e| format!("--rx-param: {e}"))
}

/// A decimal or 0x-prefixed hexadecimal number.
fn parse_number(text: &str) -> anyhow::Result<u64> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| anyhow::anyhow!("{text:?} is not a number"))
}

/// The lowest QPN a run draws: QP0 and QP1 are the special QPs of IBA (SMI, GSI).
const FIRST_QPN: u32 = 2;
/// The highest QPN a run draws: 0xffffff is the multicast QPN.
const LAST_QPN: u32 = 0xff_fffe;

/// Draws of splitmix64 from a seed: QPNs and initial PSNs of one run.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A QPN in `FIRST_QPN..=LAST_QPN` not in `used` (and then in it).
    fn qpn(&mut self, used: &mut BTreeSet<u32>) -> u32 {
        loop {
            let q = FIRST_QPN + (self.next() % u64::from(LAST_QPN - FIRST_QPN + 1)) as u32;
            if used.insert(q) {
                return q;
            }
        }
    }

    fn psn(&mut self) -> u32 {
        (self.next() & 0xff_ffff) as u32
    }
}

/// The NIC's flows (ids 1, 2, ... in command-line order). Every run is a new set of queue pairs, as on a
/// real NIC: each flow's own QPN (`src_qp`, where ACKs come back) and its initial PSN are drawn from `seed`
/// (random per run, see `qp_seed`), so a receiver that saw an earlier run with the same `--ip` never takes
/// this one's packets for that run's. The receiving QP (`dst_qp`, the BTH DestQP) is `qp=` when given (the
/// labs name flows by it), else the flow's own QPN. Start times are on the NIC's clock (`epoch` =
/// start-up).
pub(super) fn resolve_flows(
    specs: &[FlowSpec],
    nic: &NicConfig,
    gateway_mac: Option<EthernetAddress>,
    dcqcn_default: bool,
    epoch: u64,
    seed: u64,
) -> Result<Vec<FlowConfig>, String> {
    let mut used: BTreeSet<u32> = specs.iter().filter_map(|s| s.qp).collect();
    if used.len() != specs.iter().filter(|s| s.qp.is_some()).count() {
        return Err("two --flow specs give the same qp=".into());
    }
    let mut draws = Draws(seed);
    let mut flows = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let dst_ip = spec.dst.ok_or("dst= is required")?;
        let dst_mac = spec
            .dst_mac
            .or(gateway_mac)
            .ok_or_else(|| format!("--flow to {dst_ip}: give dst-mac= (or --gateway-mac for every flow)"))?;
        let src_qp = draws.qpn(&mut used);
        let dst_qp = spec.qp.unwrap_or(src_qp);
        let dscp = spec.dscp.unwrap_or(3);
        flows.push(FlowConfig {
            id: i as u32 + 1,
            dst_ip,
            dst_mac,
            src_port: spec.src_port.unwrap_or(FIRST_SRC_PORT.wrapping_add(i as u16)),
            src_qp,
            dst_qp,
            dscp,
            priority: spec.priority.unwrap_or_else(|| nic.priority_of_dscp(dscp)),
            rate_mbps: spec.rate_mbps,
            message_bytes: spec.message_bytes.unwrap_or(65536),
            messages: spec.messages,
            start_ns: epoch + spec.start_ns.unwrap_or(0),
            until_ns: None,
            initial_psn: draws.psn(),
            dcqcn: spec.dcqcn.unwrap_or(dcqcn_default),
        });
    }
    Ok(flows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_lists_and_storms() {
        assert_eq!(parse_priority_mask("3,4"), Ok(0b1_1000));
        assert_eq!(parse_priority_mask("3-5"), Ok(0b11_1000));
        assert_eq!(parse_priority_mask("none"), Ok(0));
        assert!(parse_priority_mask("8").is_err());
        assert_eq!(parse_storm("3"), Ok(Storm { priorities: 0b1000, interval_ns: 100_000 }));
        assert_eq!(parse_storm("3,4@250"), Ok(Storm { priorities: 0b1_1000, interval_ns: 250_000 }));
        assert!(parse_storm("3@0").is_err());
        assert!(parse_storm("none").is_err());
        assert_eq!(parse_duration("0.25"), Ok(250_000_000));
        assert!(parse_duration("-1").is_err());
    }

    #[test]
    fn dscp_map_defaults_and_errors() {
        assert_eq!(parse_dscp_map("3=3,4=4").unwrap().0, BTreeMap::from([(3, 3), (4, 4)]));
        assert!(parse_dscp_map("none").unwrap().0.is_empty());
        assert!(parse_dscp_map("64=1").is_err());
        assert!(parse_dscp_map("3=3,3=4").is_err());
    }

    #[test]
    fn flow_specs_parse_and_resolve() {
        let a = FlowSpec::parse("dst=10.0.0.2,dst-mac=02:00:00:00:00:02,message=65536,messages=50").unwrap();
        let b = FlowSpec::parse("dst=10.0.0.3,dscp=26,rate=100,dcqcn=off,qp=0x100,start-ms=1.5").unwrap();
        let c = FlowSpec::parse("dst=10.0.0.3,priority=5,src-port=4000").unwrap();
        let nic = NicConfig { dscp_to_priority: BTreeMap::from([(3, 3)]), ..NicConfig::default() };
        let gw = EthernetAddress([2, 0, 0, 0, 0, 0xfe]);
        let flows =
            resolve_flows(&[a.clone(), b.clone(), c.clone()], &nic, Some(gw), true, 1_000, 7).unwrap();
        assert_eq!(flows[0].dst_mac, EthernetAddress([2, 0, 0, 0, 0, 2]));
        assert_eq!((flows[0].dscp, flows[0].priority, flows[0].messages), (3, 3, Some(50)));
        assert_eq!(flows[0].src_qp, flows[0].dst_qp, "without qp= the flow's own QPN names both ends");
        assert_eq!((flows[1].priority, flows[1].rate_mbps, flows[1].dcqcn), (3, Some(100), false));
        assert_eq!(
            (flows[1].dst_qp, flows[1].start_ns),
            (0x100, 1_000 + 1_500_000),
            "qp= names the receiver's"
        );
        assert_eq!((flows[2].dst_mac, flows[2].priority, flows[2].src_port), (gw, 5, 4000));
        let qpns: BTreeSet<u32> = flows.iter().map(|f| f.src_qp).chain([0x100]).collect();
        assert_eq!(qpns.len(), 4, "own QPNs are distinct, and distinct from qp=: {flows:?}");
        assert!(
            flows.iter().all(|f| (FIRST_QPN..=LAST_QPN).contains(&f.src_qp) && f.initial_psn <= 0xff_ffff)
        );
        // Another run (seed) is another set of QPs: other QPNs and initial PSNs.
        let again = resolve_flows(&[a, b, c], &nic, Some(gw), true, 1_000, 8).unwrap();
        for (x, y) in flows.iter().zip(&again) {
            assert_ne!((x.src_qp, x.initial_psn), (y.src_qp, y.initial_psn));
        }
        assert_eq!(again[1].dst_qp, 0x100);
        assert_eq!(flows.iter().map(|f| f.id).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(flows[0].src_port + 1, flows[1].src_port);
    }

    #[test]
    fn rx_options_set_the_receive_pipeline_by_name_and_are_checked() {
        let mut cfg = NicConfig::default();
        let params: Vec<String> =
            ["buffer_bytes=262144", "xoff_bytes=131072", "xon_bytes=65536", "page_bytes=2097152"]
                .map(str::to_owned)
                .into();
        apply_rx_options(&mut cfg, &params).unwrap();
        let rx = cfg.rx_pipeline;
        assert_eq!(
            (rx.buffer_bytes, rx.xoff_bytes, rx.xon_bytes, rx.page_bytes),
            (262144, 131072, 65536, 2 << 20)
        );
        let mut sorted = params.clone();
        sorted.sort();
        assert_eq!(rx.params(), sorted, "what lab up passes back is what was set");
        for (param, needle) in [
            ("colour=1", "--rx-param colour=1: unknown receive pipeline parameter \"colour\" (known: "),
            ("buffer_bytes=x", "--rx-param buffer_bytes=x: buffer_bytes=x: expected a whole number"),
            ("buffer_bytes=1000", "--rx-param: xoff_bytes: 0 is outside 1..=1000 (buffer_bytes)"),
        ] {
            let e = apply_rx_options(&mut NicConfig::default(), &[param.to_owned()]).unwrap_err();
            assert!(e.contains(needle), "{param}: {e}");
        }
    }

    #[test]
    fn dcqcn_options_scale_and_set_by_name() {
        let mut cfg = NicConfig::default();
        let params = ["cnp_interval_ns=0".to_owned(), "rpg_ai_rate_mbps=10".to_owned()];
        apply_dcqcn_options(&mut cfg, 500, &params).unwrap();
        assert_eq!((cfg.dcqcn.time_scale, cfg.np.cnp_interval_ns, cfg.dcqcn.rpg_ai_rate_mbps), (500, 0, 10));
        let mut cfg = NicConfig::default();
        apply_dcqcn_options(&mut cfg, 1, &["time_scale=125".to_owned()]).unwrap();
        assert_eq!((cfg.dcqcn.time_scale, cfg.cnp_interval().as_ns()), (125, 50_000 * 125));
        for (scale, param, needle) in [
            (
                1,
                "rpg_bogus=1",
                "--dcqcn-param rpg_bogus=1: unknown DCQCN parameter \"rpg_bogus\" (reaction point: ",
            ),
            (1, "cnp_dscp=64", "--dcqcn-param cnp_dscp=64: cnp_dscp: 64 is above 63"),
            (1, "rpg_min_dec_fac=101", "rpg_min_dec_fac: 101 is above 100 (%)"),
            (1, "rpg_ai_rate_mbps", "--dcqcn-param rpg_ai_rate_mbps: expected NAME=VALUE"),
            (1, "rpg_ai_rate_mbps=fast", "rpg_ai_rate_mbps=fast: expected a whole number"),
            (500, "time_scale=2", "the time scale is already --dcqcn-time-scale 500"),
            (
                1_000_001,
                "cnp_interval_ns=0",
                "--dcqcn-time-scale: time_scale: 1000001 is outside 1..=1000000",
            ),
        ] {
            let e = apply_dcqcn_options(&mut NicConfig::default(), scale, &[param.to_owned()]).unwrap_err();
            assert!(e.contains(needle), "{param}: {e}");
        }
        let twice = ["cnp_interval_ns=0".to_owned(), "cnp_interval_ns=4000".to_owned()];
        let e = apply_dcqcn_options(&mut NicConfig::default(), 1, &twice).unwrap_err();
        assert!(e.contains("cnp_interval_ns given twice"), "{e}");
        let help = after_help();
        assert!(
            help.contains("  rpg_time_reset_ns=300000\n") && help.contains("  cnp_interval_ns=50000\n"),
            "{help}"
        );
        assert!(
            Args::try_parse_from([
                "rocehost",
                "--interface",
                "x",
                "--ip",
                "10.0.0.1",
                "--dcqcn-time-scale",
                "0"
            ])
            .is_err()
        );
    }

    #[test]
    fn flow_spec_errors_name_the_key() {
        for (spec, needle) in [
            ("dscp=3", "dst= is required"),
            ("dst=10.0.0.2,bogus=1", "unknown key \"bogus\""),
            ("dst=10.0.0.2,dscp=64", "dscp=64"),
            ("dst=10.0.0.2,dscp=3,dscp=4", "given twice"),
            ("dst=10.0.0.x", "dst=10.0.0.x"),
            ("dst=10.0.0.2,dcqcn=maybe", "dcqcn=maybe"),
            ("dst=10.0.0.2,qp=0x1000000", "qp=0x1000000"),
            ("dst=10.0.0.2,message=0", "message=0"),
        ] {
            let e = format!("{:#}", FlowSpec::parse(spec).unwrap_err());
            assert!(e.contains(needle), "{spec}: {e}");
        }
        let no_mac = FlowSpec::parse("dst=10.0.0.2").unwrap();
        let e = resolve_flows(&[no_mac], &NicConfig::default(), None, true, 0, 0).unwrap_err();
        assert!(e.contains("dst-mac"), "{e}");
    }
}
