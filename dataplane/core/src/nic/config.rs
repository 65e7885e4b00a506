//! Configuration of a NIC: [`NicConfig`] with its notification-point ([`NpParams`]) and loss-recovery
//! ([`Retransmit`]) settings, validation, and the MAC address (de)serialisers of configuration files.

use super::dcqcn::{self, DcqcnParams};
use super::packet;
use super::rx_pipeline::RxPipelineConfig;
use crate::time::Nanos;
use crate::wire::{EthernetAddress, vlan};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// Loss recovery of the requester (and the matching behaviour of the responder).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Retransmit {
    /// Resume from the first missing packet (what ConnectX firmware does since the SIGCOMM'16 fix).
    #[default]
    #[serde(rename = "go_back_n")]
    GoBackN,
    /// Restart the whole message; the responder discards a partial message (the original behaviour that
    /// livelocks under 1/256 drop with large messages; `docs/nic.md`, "Loss recovery").
    #[serde(rename = "go_back_0")]
    GoBack0,
}

/// DCQCN notification point (the receiver's CNP generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NpParams {
    /// At most one CNP per QP per interval (DCQCN paper N = 50 µs; NVIDIA `min_time_between_cnps`, whose
    /// default differs between firmware generations; `docs/nic.md`, "Notification point"). 0 = a CNP for
    /// every CE packet.
    /// The NIC multiplies it by `DcqcnParams::time_scale` ([`NicConfig::cnp_interval`]).
    pub cnp_interval_ns: u64,
    /// At most one CNP from the port per interval, whichever QP it is for: NVIDIA's
    /// `min_time_between_cnps` ("minimum time between sending CNPs from the port", Mellanox/mstflint
    /// `tools_open_roce_cc_ecn`; debugfs `np_min_time_between_cnps` of the Linux mlx5 driver), in µs
    /// there. The firmware's NVConfig default is 4 µs (`MIN_TIME_BETWEEN_CNPS_P1`); 0 = no port limit.
    /// A mark inside the interval is absorbed. Multiplied by `DcqcnParams::time_scale` like
    /// `cnp_interval_ns` ([`NicConfig::min_time_between_cnps`]).
    pub min_time_between_cnps_ns: u64,
    /// DSCP of CNPs (NVIDIA `cnp_dscp`, common default 48).
    pub cnp_dscp: u8,
    /// Priority CNPs travel on (NVIDIA `cnp_802p_prio`, common default 6).
    pub cnp_priority: u8,
}

impl Default for NpParams {
    fn default() -> Self {
        NpParams { cnp_interval_ns: 50_000, min_time_between_cnps_ns: 0, cnp_dscp: 48, cnp_priority: 6 }
    }
}

impl NpParams {
    /// A field out of range, by name.
    pub fn validate(&self) -> Result<(), String> {
        if self.cnp_dscp > 63 {
            return Err(format!("cnp_dscp: {} is above 63", self.cnp_dscp));
        }
        if self.cnp_priority > 7 {
            return Err(format!("cnp_priority: {} is above 7", self.cnp_priority));
        }
        for (name, v) in [
            ("cnp_interval_ns", self.cnp_interval_ns),
            ("min_time_between_cnps_ns", self.min_time_between_cnps_ns),
        ] {
            if v > dcqcn::MAX_PERIOD_NS {
                return Err(format!("{name}: {v} is above {}", dcqcn::MAX_PERIOD_NS));
            }
        }
        Ok(())
    }

    /// The parameter names [`NpParams::set`] takes: the field names.
    pub fn names() -> Vec<String> {
        dcqcn::field_names::<NpParams>()
    }

    /// Sets one parameter by its field name from a decimal number and validates the result; on error
    /// nothing changes and the message names the parameter.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let updated = dcqcn::set_field(self, name, value).ok_or_else(|| {
            format!("unknown notification point parameter {name:?} (known: {})", Self::names().join(", "))
        })??;
        updated.validate()?;
        *self = updated;
        Ok(())
    }
}

/// Configuration of one NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NicConfig {
    #[serde(with = "mac_serde")]
    pub mac: EthernetAddress,
    pub ip: Ipv4Addr,
    pub line_rate_mbps: u32,
    /// IP MTU: a data packet carries at most `mtu − 44` payload bytes (IPv4 20, UDP 8, BTH 12, ICRC 4).
    /// 128..=9216.
    pub mtu: u32,
    /// Priorities (bit n = priority n) whose PFC frames are honoured.
    pub pfc_enable: u8,
    /// When set, every frame goes to this MAC (the first-hop router); otherwise to the flow's `dst_mac`
    /// (and replies to the MAC the data came from).
    #[serde(with = "opt_mac_serde")]
    pub gateway_mac: Option<EthernetAddress>,
    /// Tag frames with this VID (PCP = priority); `None` = untagged (DSCP-based fabrics).
    pub vlan_id: Option<u16>,
    /// Reaction point parameters of flows with `dcqcn: true`.
    pub dcqcn: DcqcnParams,
    pub np: NpParams,
    pub retransmit: Retransmit,
    /// Retransmission timeout: no ACK progress for this long rewinds to the first unacknowledged packet.
    /// Default 4 194 304 ns = the IBA local ACK timeout 4.096 µs × 2^10 (exponent 10). Real stacks use
    /// larger exponents (perftest 14 ≈ 67 ms); 10 keeps watchdog-drop labs short. Retries are unlimited
    /// (a real QP errors out after `retry_cnt` = 7).
    pub rto_ns: u64,
    /// ACK after this many in-order packets (and always on a packet with AckReq, the last of a message).
    /// 1 = every packet, as in the HPCC simulator.
    pub ack_every: u32,
    /// A NAK for the same expected PSN is repeated only after this long without progress (HPCC 500 µs).
    pub nak_interval_ns: u64,
    /// At most this many unacknowledged packets per flow; 0 = no window (rate-based only, like the HPCC
    /// simulator's default), bounded only by half the PSN space.
    pub window_packets: u32,
    /// Priority of ACK/NAKs by the DSCP of the data they answer; DSCPs not listed use DSCP >> 3.
    pub dscp_to_priority: BTreeMap<u8, u8>,
    /// IPv4 TTL of every packet.
    pub ttl: u8,
    /// A receiving QP that got no data for this long is closed (default 10 s; 0 = never): it leaves the
    /// table of live QPs, its statistics stay in the report (the last [`super::RETIRED_RX_QPS`] closed QPs),
    /// and a requester that comes back with the same QP (QPN and initial PSN, e.g. after a long PFC pause)
    /// resumes where it left off. See `receiver.rs`.
    pub rx_idle_timeout_ns: u64,
    /// The receive buffer and pipeline (`rx_pipeline.rs`); the default has none: frames are consumed as
    /// they arrive.
    pub rx_pipeline: RxPipelineConfig,
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            mac: EthernetAddress([0x02, 0, 0, 0, 0, 0x01]),
            ip: Ipv4Addr::new(10, 0, 0, 1),
            line_rate_mbps: 100_000,
            mtu: 1500,
            pfc_enable: 0b0001_1000,
            gateway_mac: None,
            vlan_id: None,
            dcqcn: DcqcnParams::default(),
            np: NpParams::default(),
            retransmit: Retransmit::GoBackN,
            rto_ns: 4_194_304,
            ack_every: 1,
            nak_interval_ns: 500_000,
            window_packets: 0,
            dscp_to_priority: BTreeMap::new(),
            ttl: 64,
            rx_idle_timeout_ns: 10_000_000_000,
            rx_pipeline: RxPipelineConfig::default(),
        }
    }
}

impl NicConfig {
    /// Payload bytes per data packet.
    pub fn payload_per_packet(&self) -> u64 {
        u64::from(self.mtu).saturating_sub(packet::IP_OVERHEAD as u64)
    }

    /// The priority of a DSCP: `dscp_to_priority`, else DSCP >> 3.
    pub fn priority_of_dscp(&self, dscp: u8) -> u8 {
        self.dscp_to_priority.get(&dscp).copied().unwrap_or(dscp >> 3) & 7
    }

    pub fn validate(&self) -> Result<(), NicError> {
        let bad = |field: &str, reason: String| Err(NicError::Config(format!("NicConfig.{field}: {reason}")));
        if self.line_rate_mbps == 0 {
            return bad("line_rate_mbps", "must be > 0".into());
        }
        if !(128..=9216).contains(&self.mtu) {
            return bad("mtu", format!("{} is outside 128..=9216", self.mtu));
        }
        if self.vlan_id.is_some_and(|v| v == 0 || v > vlan::VID_MAX - 1) {
            return bad("vlan_id", format!("{} is outside 1..=4094", self.vlan_id.unwrap_or_default()));
        }
        if let Err(e) = self.np.validate() {
            return bad("np", e);
        }
        if self.rto_ns == 0 {
            return bad("rto_ns", "must be > 0".into());
        }
        if self.ack_every == 0 {
            return bad("ack_every", "must be > 0".into());
        }
        if let Some((d, p)) = self.dscp_to_priority.iter().find(|(d, p)| **d > 63 || **p > 7) {
            return bad("dscp_to_priority", format!("{d} → {p}: DSCP ≤ 63 and priority ≤ 7"));
        }
        if let Err(e) = self.rx_pipeline.validate() {
            return bad("rx_pipeline", e);
        }
        self.dcqcn.validate().or_else(|e| bad("dcqcn", e))
    }

    /// The notification point's CNP interval in effect: `np.cnp_interval_ns × dcqcn.time_scale`.
    pub fn cnp_interval(&self) -> Nanos {
        Nanos::from_ns(self.np.cnp_interval_ns) * u64::from(self.dcqcn.time_scale.max(1))
    }

    /// The notification point's port-wide CNP interval in effect: `np.min_time_between_cnps_ns ×
    /// dcqcn.time_scale`.
    pub fn min_time_between_cnps(&self) -> Nanos {
        Nanos::from_ns(self.np.min_time_between_cnps_ns) * u64::from(self.dcqcn.time_scale.max(1))
    }

    /// The names [`NicConfig::set_dcqcn_param`] takes: the reaction point's ([`DcqcnParams`]) and the
    /// notification point's ([`NpParams`]) field names.
    pub fn dcqcn_param_names() -> Vec<String> {
        let mut names = DcqcnParams::names();
        names.extend(NpParams::names());
        names
    }

    /// Sets a DCQCN parameter by name (`rpg_time_reset_ns=300000`, `time_scale=500`, `cnp_interval_ns=0`,
    /// ...): a [`DcqcnParams`] or [`NpParams`] field. The error names the parameter and, for an unknown
    /// one, lists the known names.
    pub fn set_dcqcn_param(&mut self, name: &str, value: &str) -> Result<(), String> {
        if DcqcnParams::names().iter().any(|n| n == name) {
            self.dcqcn.set(name, value)
        } else if NpParams::names().iter().any(|n| n == name) {
            self.np.set(name, value)
        } else {
            Err(format!(
                "unknown DCQCN parameter {name:?} (reaction point: {}; notification point: {})",
                DcqcnParams::names().join(", "),
                NpParams::names().join(", ")
            ))
        }
    }
}

/// A configuration the NIC refuses, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NicError {
    #[error("{0}")]
    Config(String),
    #[error("flow {id}: {reason}")]
    Flow { id: u32, reason: String },
}

/// MAC addresses as `aa:bb:cc:dd:ee:ff` strings in configuration files.
pub(crate) mod mac_serde {
    use crate::wire::EthernetAddress;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(mac: &EthernetAddress, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(mac)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<EthernetAddress, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(|e| serde::de::Error::custom(format!("{text}: {e}")))
    }
}

pub(crate) mod opt_mac_serde {
    use crate::wire::EthernetAddress;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(mac: &Option<EthernetAddress>, s: S) -> Result<S::Ok, S::Error> {
        match mac {
            Some(m) => s.collect_str(m),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<EthernetAddress>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) => {
                text.parse().map(Some).map_err(|e| serde::de::Error::custom(format!("{text}: {e}")))
            }
            None => Ok(None),
        }
    }
}
