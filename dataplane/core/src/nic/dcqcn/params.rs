//! [`DcqcnParams`]: the reaction point's parameters, their defaults, validation and setting by name.

use super::{ALPHA_ONE, MAX_PERIOD_NS, MAX_TIME_SCALE};
use serde::{Deserialize, Serialize};

/// The unit of `rpg_byte_reset`: NVIDIA's "DCQCN Parameters" table (Mellanox community DOC-2790,
/// `https://community.mellanox.com/s/article/dcqcn-parameters`) gives its range as 0…32767 in 64-byte
/// units, and Google's packet simulator, which implements that table, counts
/// `byte_reset * 64` bytes per increase (google/isekai `isekai/host/rdma/rdma_roce_cc_dcqcn.cc`,
/// `SentBytes`). The field is 15 bits wide in the firmware configuration (Mellanox/mstflint
/// `tools_layouts/tools_open_layouts.h`, `tools_open_roce_cc_ecn.rpg_byte_reset`, bits 8.0–8.14),
/// so NVIDIA's default 32767 is its largest value: the byte counter at its slowest, ~2 MB.
pub const BYTE_RESET_UNIT_BYTES: u64 = 64;

/// DCQCN reaction-point parameters, named as MLNX_OFED names them. `Default` is NVIDIA's ConnectX-4+
/// firmware default (`docs/nic.md`, "Reaction point").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DcqcnParams {
    /// `dce_tcp_g`, G in 1/1024: α ← G·α/1024 (+ 1024 − G if a CNP arrived). NVIDIA 1019 (g = 5/1024).
    pub dce_tcp_g: u32,
    /// `dce_tcp_rtt`: the α update period. NVIDIA 1 µs.
    pub dce_tcp_rtt_ns: u64,
    /// `initial_alpha_value`, in 1/1024: α on the first CNP of the flow. NVIDIA 1023.
    pub initial_alpha_value: u32,
    /// `rate_to_set_on_first_cnp`: current and target rate on the first CNP; 0 keeps the current rate.
    /// NVIDIA 0.
    pub rate_to_set_on_first_cnp_mbps: u32,
    /// `rpg_min_dec_fac`: one decrease leaves at least this percentage of the rate. NVIDIA 50.
    pub rpg_min_dec_fac: u32,
    /// `rpg_min_rate`: the rate never goes below this. NVIDIA 1 Mb/s.
    pub rpg_min_rate_mbps: u32,
    /// `rpg_gd`: decrease = rate·α / 2^rpg_gd with α in 1/1024, i.e. 11 ⇒ rate·α/2. NVIDIA 11.
    pub rpg_gd: u32,
    /// `rate_reduce_monitor_period`: at most one decrease per period. NVIDIA 4 µs.
    pub rate_reduce_monitor_period_ns: u64,
    /// `rpg_time_reset`: the rate-increase timer. NVIDIA 300 µs.
    pub rpg_time_reset_ns: u64,
    /// `rpg_byte_reset`: data sent between byte-counter increase events, in the firmware's unit of
    /// [`BYTE_RESET_UNIT_BYTES`] (64) bytes; 0 disables the byte counter. NVIDIA 32767, i.e. 2,097,088
    /// bytes (about 2 MB), not 32 KiB (`docs/nic.md`, "Reaction point", gives the sources).
    pub rpg_byte_reset_64bytes: u32,
    /// `rpg_threshold`: F, the number of fast-recovery steps before additive increase. NVIDIA 1.
    pub rpg_threshold: u32,
    /// `rpg_ai_rate`: additive increase of the target. NVIDIA 5 Mb/s.
    pub rpg_ai_rate_mbps: u32,
    /// `rpg_hai_rate`: hyper increase of the target. NVIDIA 50 Mb/s.
    pub rpg_hai_rate_mbps: u32,
    /// `rpg_max_rate`: cap of the target; 0 = the flow's maximum (line or configured rate). NVIDIA 0.
    pub rpg_max_rate_mbps: u32,
    /// `clamp_tgt_rate`: every decrease first sets target = current. NVIDIA 0.
    pub clamp_tgt_rate: bool,
    /// `clamp_tgt_rate_after_time_inc`: a decrease sets target = current if the rate timer has fired
    /// since the previous decrease. NVIDIA 1.
    pub clamp_tgt_rate_after_time_inc: bool,
    /// N ≥ 1: run the parameters above N times slower (periods × N, rates ÷ N, bytes unchanged; see the
    /// module documentation), for a line N times slower than the one they are tuned for. The NIC applies
    /// it to its notification point's CNP interval too. 1 = as written.
    pub time_scale: u32,
}

impl Default for DcqcnParams {
    fn default() -> Self {
        DcqcnParams {
            dce_tcp_g: 1019,
            dce_tcp_rtt_ns: 1_000,
            initial_alpha_value: 1023,
            rate_to_set_on_first_cnp_mbps: 0,
            rpg_min_dec_fac: 50,
            rpg_min_rate_mbps: 1,
            rpg_gd: 11,
            rate_reduce_monitor_period_ns: 4_000,
            rpg_time_reset_ns: 300_000,
            rpg_byte_reset_64bytes: 32_767,
            rpg_threshold: 1,
            rpg_ai_rate_mbps: 5,
            rpg_hai_rate_mbps: 50,
            rpg_max_rate_mbps: 0,
            clamp_tgt_rate: false,
            clamp_tgt_rate_after_time_inc: true,
            time_scale: 1,
        }
    }
}

impl DcqcnParams {
    /// The HPCC simulator's `dcqcn` variant of `simulation/run.py` (used in the HPCC paper; `docs/nic.md`)
    /// for a NIC of `line_rate_mbps`: g = 1/256 (G = 1020), α starts at 1, α period 1 µs, decrease period
    /// 4 µs, rate timer 300 µs, no byte counter, F = 1, RAI = 5 Mb/s and RHAI = 50 Mb/s per 25 Gb/s of line
    /// rate, minimum rate 1 Gb/s, no minimum decrease factor, target clamped only after a timer increase.
    pub fn hpcc(line_rate_mbps: u32) -> DcqcnParams {
        let per_25g = |mbps: u64| (mbps * u64::from(line_rate_mbps) / 25_000).max(1) as u32;
        DcqcnParams {
            dce_tcp_g: 1020,
            dce_tcp_rtt_ns: 1_000,
            initial_alpha_value: ALPHA_ONE,
            rate_to_set_on_first_cnp_mbps: 0,
            rpg_min_dec_fac: 0,
            rpg_min_rate_mbps: 1_000,
            rpg_gd: 11,
            rate_reduce_monitor_period_ns: 4_000,
            rpg_time_reset_ns: 300_000,
            rpg_byte_reset_64bytes: 0,
            rpg_threshold: 1,
            rpg_ai_rate_mbps: per_25g(5),
            rpg_hai_rate_mbps: per_25g(50),
            rpg_max_rate_mbps: 0,
            clamp_tgt_rate: false,
            clamp_tgt_rate_after_time_inc: true,
            time_scale: 1,
        }
    }

    /// A field that makes the state machine meaningless, by name.
    pub fn validate(&self) -> Result<(), String> {
        if self.dce_tcp_g > ALPHA_ONE {
            return Err(format!("dce_tcp_g: {} is above 1024", self.dce_tcp_g));
        }
        if self.initial_alpha_value > ALPHA_ONE {
            return Err(format!("initial_alpha_value: {} is above 1024", self.initial_alpha_value));
        }
        if self.rpg_min_dec_fac > 100 {
            return Err(format!("rpg_min_dec_fac: {} is above 100 (%)", self.rpg_min_dec_fac));
        }
        if self.rpg_gd > 40 {
            return Err(format!("rpg_gd: {} is above 40", self.rpg_gd));
        }
        if !(1..=MAX_TIME_SCALE).contains(&self.time_scale) {
            return Err(format!("time_scale: {} is outside 1..={MAX_TIME_SCALE}", self.time_scale));
        }
        for (name, v) in [
            ("dce_tcp_rtt_ns", self.dce_tcp_rtt_ns),
            ("rate_reduce_monitor_period_ns", self.rate_reduce_monitor_period_ns),
            ("rpg_time_reset_ns", self.rpg_time_reset_ns),
        ] {
            if v == 0 {
                return Err(format!("{name}: must be > 0"));
            }
            // Periods up to ~1.8 × 10^14 ns (about two days) after scaling: no overflow in the timers.
            if v.checked_mul(u64::from(self.time_scale)).is_none_or(|t| t > MAX_PERIOD_NS) {
                return Err(format!(
                    "{name}: {v} ns × time_scale {} is above {MAX_PERIOD_NS} ns",
                    self.time_scale
                ));
            }
        }
        Ok(())
    }

    /// The parameter names [`DcqcnParams::set`] takes: the field names, units included.
    pub fn names() -> Vec<String> {
        field_names::<DcqcnParams>()
    }

    /// Sets one parameter by its field name from text (a decimal number, or true/false/on/off/1/0 for the
    /// two clamp flags) and validates the result; on error nothing changes and the message names the
    /// parameter.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let updated = set_field(self, name, value).ok_or_else(|| {
            format!("unknown DCQCN parameter {name:?} (known: {})", Self::names().join(", "))
        })??;
        updated.validate()?;
        *self = updated;
        Ok(())
    }
}

/// The field names of a parameter struct (what [`set_field`] takes), read through serde from its default.
pub(crate) fn field_names<T: Serialize + Default>() -> Vec<String> {
    match serde_json::to_value(T::default()) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// `params` with the field `name` set from `value`, through serde (so the names are the field names and
/// the types are the fields'): `None` when there is no such field, `Some(Err)` when the value does not
/// fit it.
pub(crate) fn set_field<T: Serialize + serde::de::DeserializeOwned>(
    params: &T,
    name: &str,
    value: &str,
) -> Option<Result<T, String>> {
    use serde_json::Value;
    let Ok(Value::Object(mut map)) = serde_json::to_value(params) else { return None };
    let old = map.get(name)?;
    let text = value.trim();
    let new = match old {
        Value::Bool(_) => match text {
            "true" | "on" | "1" | "yes" => Value::Bool(true),
            "false" | "off" | "0" | "no" => Value::Bool(false),
            _ => return Some(Err(format!("{name}={value}: expected true or false"))),
        },
        _ => match text.parse::<u64>() {
            Ok(n) => Value::from(n),
            Err(_) => return Some(Err(format!("{name}={value}: expected a whole number ≥ 0"))),
        },
    };
    map.insert(name.to_owned(), new);
    Some(serde_json::from_value(Value::Object(map)).map_err(|e| format!("{name}={value}: {e}")))
}
