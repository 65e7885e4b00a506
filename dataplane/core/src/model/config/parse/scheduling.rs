//! The egress and watchdog tables: `WRED_PROFILE`, `SCHEDULER`, `QUEUE` and `PFC_WD` (SONiC's CONFIG_DB schema, sonic-net/sonic-swss `doc/swss-schema.md`).

use super::{Compiler, Entry, Named, PortMap, entries, parse_bool, parse_bytes, parse_keyword, parse_number};
use crate::model::config::{
    MeterType, PfcWdAction, PfcWdDetectionRule, PfcWdGlobal, PfcWdPort, PortBuffers, SchedulerKind,
    SchedulerParams, SchedulerProfile, WredColour, WredProfile,
};
use std::collections::HashMap;

const COLOURS: [&str; 3] = ["green", "yellow", "red"];
const WRED_FIELDS: &[&str] = &[
    "ecn",
    "weight",
    "green_min_threshold",
    "green_max_threshold",
    "green_drop_probability",
    "wred_green_enable",
    "yellow_min_threshold",
    "yellow_max_threshold",
    "yellow_drop_probability",
    "wred_yellow_enable",
    "red_min_threshold",
    "red_max_threshold",
    "red_drop_probability",
    "wred_red_enable",
];
/// `ecn` values and the colours each marks: [green, yellow, red].
const ECN_MODES: [(&str, [bool; 3]); 8] = [
    ("ecn_none", [false, false, false]),
    ("ecn_green", [true, false, false]),
    ("ecn_yellow", [false, true, false]),
    ("ecn_red", [false, false, true]),
    ("ecn_green_yellow", [true, true, false]),
    ("ecn_green_red", [true, false, true]),
    ("ecn_yellow_red", [false, true, true]),
    ("ecn_all", [true, true, true]),
];
const SCHEDULER_FIELDS: &[&str] =
    &["type", "weight", "priority", "meter_type", "cir", "cbs", "pir", "pbs", "policer"];
const PFC_WD_FIELDS: &[&str] = &["action", "detection_time", "restoration_time", "pfc_stat_history"];
const PFC_WD_GLOBAL_FIELDS: &[&str] = &["POLL_INTERVAL", "BIG_RED_SWITCH", "detection_rule", "drop_ingress"];

/// `type`, case-insensitive as in SONiC's yang (`DWRR`, `dwrr`).
fn parse_scheduler_kind(text: &str) -> Result<SchedulerKind, String> {
    let kinds =
        [("STRICT", SchedulerKind::Strict), ("DWRR", SchedulerKind::Dwrr), ("WRR", SchedulerKind::Wrr)];
    parse_keyword(&text.to_ascii_uppercase(), &kinds)
        .map_err(|_| format!("{text:?} is not one of STRICT, DWRR, WRR"))
}

fn parse_enable(text: &str) -> Result<bool, String> {
    parse_keyword(text, &[("enable", true), ("disable", false)])
}

/// `action`, with pfcwdorch's wording for a bad one.
fn parse_pfc_wd_action(text: &str) -> Result<PfcWdAction, String> {
    let actions =
        [("drop", PfcWdAction::Drop), ("forward", PfcWdAction::Forward), ("alert", PfcWdAction::Alert)];
    parse_keyword(text, &actions)
        .map_err(|_| format!("Invalid PFC Watchdog action {text} (drop, forward or alert)"))
}

impl<'a> Compiler<'a> {
    pub(super) fn wred_profiles(&mut self) -> Named<'a, WredProfile> {
        Named::compile(self, "WRED_PROFILE", |cx, e| Some(cx.wred_profile(e)))
    }

    /// `WRED_PROFILE|<name>`. The model applies SONiC's semantics: an ECN-capable packet of a colour in `ecn`
    /// is marked between the thresholds; a packet that is not ECN-capable is dropped there only when
    /// `wred_<colour>_enable` is true. Either use needs both thresholds.
    fn wred_profile(&mut self, e: Entry<'a>) -> WredProfile {
        self.check_fields(e, WRED_FIELDS);
        let ecn = self.optional(e, "ecn", |v| parse_keyword(v, &ECN_MODES)).unwrap_or([false; 3]);
        let weight =
            self.optional(e, "weight", |v| parse_number(v, "an averaging weight", 0, 15)).unwrap_or(0);
        let mut colours = [WredColour::default(); 3];
        for ((colour, marked), slot) in COLOURS.into_iter().zip(ecn).zip(&mut colours) {
            let min_field = format!("{colour}_min_threshold");
            let max_field = format!("{colour}_max_threshold");
            let enable_field = format!("wred_{colour}_enable");
            let min = self.optional(e, &min_field, parse_bytes);
            let max = self.optional(e, &max_field, parse_bytes);
            let probability_field = format!("{colour}_drop_probability");
            let probability =
                self.optional(e, &probability_field, |v| parse_number(v, "a percentage", 0, 100));
            let enabled = self.optional(e, &enable_field, parse_bool).unwrap_or(false);
            let needed_by = if enabled {
                Some(format!("{enable_field} is true"))
            } else if marked {
                Some(format!("ecn {} marks {colour}", e.get("ecn").unwrap_or_default()))
            } else {
                None
            };
            if let Some(reason) = needed_by {
                for field in [&min_field, &max_field] {
                    if e.get(field).is_none() {
                        self.error(e, field, "", format!("{field} is required: {reason}"));
                    }
                }
            }
            if let (Some(min), Some(max)) = (min, max)
                && min > max
            {
                self.field_error(e, &min_field, format!("{min_field} {min} is above {max_field} {max}"));
            }
            *slot = WredColour {
                enabled,
                min_bytes: min.unwrap_or(0),
                max_bytes: max.unwrap_or(0),
                drop_probability_percent: probability.unwrap_or(100),
            };
        }
        WredProfile { name: e.key.to_owned(), ecn, colours, weight }
    }

    pub(super) fn schedulers(&mut self) -> Named<'a, SchedulerProfile> {
        Named::compile(self, "SCHEDULER", |cx, e| Some(cx.scheduler(e)))
    }

    /// `SCHEDULER|<name>`.
    fn scheduler(&mut self, e: Entry<'a>) -> SchedulerProfile {
        self.check_fields(e, SCHEDULER_FIELDS);
        let kind = self.optional(e, "type", parse_scheduler_kind).unwrap_or(SchedulerKind::Wrr);
        let weight = self.optional(e, "weight", |v| parse_number(v, "a weight", 1, 100)).unwrap_or(1);
        let priority = self.optional(e, "priority", |v| parse_number(v, "a priority", 0, 9));
        let meters = [("packets", MeterType::Packets), ("bytes", MeterType::Bytes)];
        let meter_type =
            self.optional(e, "meter_type", |v| parse_keyword(v, &meters)).unwrap_or(MeterType::Bytes);
        let rate = |v: &str| parse_number(v, "a rate (bytes or packets per second)", 0, u64::MAX);
        let burst = |v: &str| parse_number(v, "a burst (bytes or packets)", 0, u64::MAX);
        let cir = self.optional(e, "cir", rate);
        let cbs = self.optional(e, "cbs", burst);
        let pir = self.optional(e, "pir", rate);
        let pbs = self.optional(e, "pbs", burst);
        let mut policer = self.optional(e, "policer", parse_bool).unwrap_or(false);
        if let (Some(cir), Some(pir)) = (cir, pir)
            && cir > pir
        {
            self.field_error(
                e,
                "cir",
                format!("cir {cir} is above pir {pir}: the minimum exceeds the maximum"),
            );
        }
        if policer && (kind != SchedulerKind::Strict || pir.is_none()) {
            let message = "ignored: policer applies to a STRICT scheduler with a pir";
            self.warn(e, "policer", e.get("policer").unwrap_or_default(), message);
            policer = false;
        }
        SchedulerProfile {
            name: e.key.to_owned(),
            params: SchedulerParams { kind, weight, priority, meter_type, cir, cbs, pir, pbs, policer },
        }
    }

    /// `QUEUE|<ports>|<q or a-b>`: `scheduler` and `wred_profile` of each queue.
    pub(super) fn queues(
        &mut self,
        ports: &PortMap,
        schedulers: &Named<SchedulerProfile>,
        wred_profiles: &Named<WredProfile>,
        buffers: &mut [PortBuffers],
    ) {
        for (e, slots) in self.indexed_entries("QUEUE", "queue", ports) {
            self.check_fields(e, &["scheduler", "wred_profile"]);
            let scheduler = self.optional(e, "scheduler", |v| schedulers.resolve(v)).flatten();
            let wred = self.optional(e, "wred_profile", |v| wred_profiles.resolve(v)).flatten();
            for (port, queue) in slots {
                buffers[port.index()].queue_scheduler[queue] = scheduler;
                buffers[port.index()].queue_wred[queue] = wred;
            }
        }
    }

    /// `PFC_WD|GLOBAL` and `PFC_WD|<ports>`.
    pub(super) fn pfc_watchdog(
        &mut self,
        ports: &PortMap,
        port_count: usize,
    ) -> (Vec<Option<PfcWdPort>>, PfcWdGlobal) {
        let global = entries(self.db, "PFC_WD")
            .find(|e| e.key == "GLOBAL")
            .map(|e| self.pfc_wd_global(e))
            .unwrap_or_default();
        let mut watched = vec![None; port_count];
        let mut owners = HashMap::new();
        for e in entries(self.db, "PFC_WD").filter(|e| e.key != "GLOBAL") {
            let targets = self.unique_key_ports(e, ports, &mut owners);
            let Some(port) = self.pfc_wd_port(e, global.poll_interval_ms) else { continue };
            for index in targets {
                watched[index.index()] = Some(port);
            }
        }
        (watched, global)
    }

    fn pfc_wd_global(&mut self, e: Entry<'a>) -> PfcWdGlobal {
        self.check_fields(e, PFC_WD_GLOBAL_FIELDS);
        let defaults = PfcWdGlobal::default();
        let rules = [("vs", PfcWdDetectionRule::Vs), ("broadcom", PfcWdDetectionRule::Broadcom)];
        PfcWdGlobal {
            poll_interval_ms: self
                .optional(e, "POLL_INTERVAL", |v| parse_number(v, "a number of ms", 100, 1000))
                .unwrap_or(defaults.poll_interval_ms),
            big_red_switch: self
                .optional(e, "BIG_RED_SWITCH", parse_enable)
                .unwrap_or(defaults.big_red_switch),
            detection_rule: self
                .optional(e, "detection_rule", |v| parse_keyword(v, &rules))
                .unwrap_or(defaults.detection_rule),
            drop_ingress: self.optional(e, "drop_ingress", parse_bool).unwrap_or(defaults.drop_ingress),
        }
    }

    /// `PFC_WD|<ports>`: `detection_time` is required; both times are at least the poll interval (yang).
    fn pfc_wd_port(&mut self, e: Entry<'a>, poll_interval_ms: u32) -> Option<PfcWdPort> {
        self.check_fields(e, PFC_WD_FIELDS);
        let action = self.optional(e, "action", parse_pfc_wd_action).unwrap_or(PfcWdAction::Drop);
        let detection = match e.get("detection_time") {
            None => {
                self.error(e, "detection_time", "", "detection_time missing");
                None
            }
            Some(_) => self.optional(e, "detection_time", |v| parse_number(v, "a number of ms", 100, 5000)),
        };
        let restoration =
            self.optional(e, "restoration_time", |v| parse_number(v, "a number of ms", 100, 60000));
        let history = self.optional(e, "pfc_stat_history", parse_enable).unwrap_or(false);
        for (field, time) in [("detection_time", detection), ("restoration_time", restoration)] {
            if let Some(ms) = time
                && ms < poll_interval_ms
            {
                let message = format!(
                    "{field} {ms} ms is shorter than PFC_WD|GLOBAL POLL_INTERVAL {poll_interval_ms} ms"
                );
                self.field_error(e, field, message);
            }
        }
        Some(PfcWdPort {
            action,
            detection_time_ms: detection?,
            restoration_time_ms: restoration,
            pfc_stat_history: history,
        })
    }
}
