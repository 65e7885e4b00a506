//! Switch-wide tables (the table names themselves, `DEVICE_METADATA`, `SWITCH`) and `PORT`.

use super::*;
use crate::model::config::unprintable;
use crate::time::Nanos;

impl<'a> Compiler<'a> {
    /// Tables the model reads or defers are fine; another SONiC table is accepted and reported once as
    /// not modelled; a name that is no SONiC table is an error, with the closest table name.
    pub(super) fn check_tables(&mut self) {
        self.check_characters();
        for table in self.db.tables.keys() {
            let used = [COMPILED_TABLES, DEFERRED_TABLES, IGNORED_TABLES]
                .iter()
                .any(|t| t.contains(&table.as_str()));
            if used {
                continue;
            }
            if names::SONIC_TABLES.contains(&table.as_str()) {
                let message = "SONiC table not modelled by Lossless: accepted, ignored";
                self.warnings.push(ConfigIssue::new(table, "", "", "", message));
                continue;
            }
            let all = COMPILED_TABLES.iter().chain(DEFERRED_TABLES).chain(names::SONIC_TABLES).copied();
            let message = format!("{table} is no SONiC table{}", names::suggestion(table, all));
            self.errors.push(ConfigIssue::new(table, "", "", "", message));
        }
    }

    /// Names and values must print as what they are: no control characters (NUL, escape sequences) and no
    /// invisible or bidirectional formatting characters (U+202E would show `Ethernet0` for another name in
    /// every table the CLI prints). The error shows the offending characters escaped.
    fn check_characters(&mut self) {
        for (table, keys) in &self.db.tables {
            let mut issues = Vec::new();
            if table.chars().any(unprintable) {
                issues.push(ConfigIssue::new(table, "", "", "", UNPRINTABLE));
            }
            for (key, fields) in keys {
                if key.chars().any(unprintable) {
                    issues.push(ConfigIssue::new(table, key, "", "", UNPRINTABLE));
                }
                for (field, value) in fields {
                    if field.chars().any(unprintable) || value.chars().any(unprintable) {
                        issues.push(ConfigIssue::new(table, key, field, value, UNPRINTABLE));
                    }
                }
            }
            self.errors.extend(issues);
        }
    }

    /// `DEVICE_METADATA|localhost|mac`; the other metadata fields do not concern the model.
    pub(super) fn device_mac(&mut self) -> EthernetAddress {
        entries(self.db, "DEVICE_METADATA")
            .find(|e| e.key == "localhost")
            .and_then(|e| self.optional(e, "mac", parse_unicast_mac))
            .unwrap_or(DEFAULT_DEVICE_MAC)
    }

    pub(super) fn switch_settings(&mut self) -> SwitchSettings {
        let mut settings = SwitchSettings::default();
        for e in entries(self.db, "SWITCH") {
            if e.key != "switch" {
                self.warn(e, "", "", "unknown key, ignored (switch settings are read from SWITCH|switch)");
                continue;
            }
            self.check_fields(e, SWITCH_FIELDS);
            if let Some(secs) = self.optional(e, "fdb_aging_time", parse_aging_secs) {
                settings.fdb_aging = Nanos::from_ns(secs * NS_PER_SEC);
            }
            if let Some(secs) = self.optional(e, "neigh_aging_time", parse_aging_secs) {
                settings.neigh_aging = Nanos::from_ns(secs * NS_PER_SEC);
            }
            let actions = [("flood", FdbMissAction::Flood), ("drop", FdbMissAction::Drop)];
            if let Some(action) = self.optional(e, "lossy_fdb_miss_action", |v| parse_keyword(v, &actions)) {
                settings.lossy_fdb_miss_action = action;
            }
            if let Some(action) = self.optional(e, "lossless_fdb_miss_action", |v| parse_keyword(v, &actions))
            {
                settings.lossless_fdb_miss_action = action;
            }
            if let Some(seed) =
                self.optional(e, "ecmp_hash_seed", |v| parse_number(v, "a 32-bit number", 0, u32::MAX))
            {
                settings.ecmp_hash_seed = seed;
            }
        }
        settings
    }

    /// `PORT`, in natural name order (`Ethernet4` before `Ethernet12`); the position is the [`PortId`].
    pub(super) fn ports(&mut self, device_mac: EthernetAddress) -> Vec<PortConfig> {
        let mut ports: Vec<Entry> = entries(self.db, "PORT").collect();
        ports.sort_by(|a, b| natural_cmp(a.key, b.key));
        ports.into_iter().filter_map(|e| self.port(e, device_mac)).collect()
    }

    pub(super) fn port(&mut self, e: Entry<'a>, device_mac: EthernetAddress) -> Option<PortConfig> {
        self.parse_key(e, e.key, check_port_name)?;
        self.check_fields(e, PORT_FIELDS);
        let up_down = [("up", true), ("down", false)];
        Some(PortConfig {
            name: e.key.to_owned(),
            speed_mbps: self
                .required(e, "speed", |v| parse_number(v, "a number of Mb/s", 1, 1_600_000))
                .unwrap_or(0),
            mtu: self
                .optional(e, "mtu", |v| parse_number(v, "a number of bytes", 68, 9216))
                .unwrap_or(DEFAULT_MTU),
            mac: self.optional(e, "mac", parse_unicast_mac).unwrap_or(device_mac),
            admin_up: self.optional(e, "admin_status", |v| parse_keyword(v, &up_down)).unwrap_or(true),
            alias: e.get("alias").map(str::to_owned),
            netdev: e.get("netdev").map(str::to_owned),
            first_lane: self.optional(e, "lanes", parse_lanes).flatten(),
        })
    }
}

const UNPRINTABLE: &str = "holds a control or invisible formatting character (shown escaped): names and \
                           values must print as what they are";
