//! The QoS maps, `PORT_QOS_MAP` and `BORDER_RULE`.

use super::*;

// QoS maps, PORT_QOS_MAP and border rules.
impl<'a> Compiler<'a> {
    pub(super) fn qos_maps(&mut self) -> QosMaps<'a> {
        let mut maps = QosMaps::new();
        for spec in MAP_SPECS {
            let table = entries(self.db, spec.table).map(|e| (e.key, self.qos_map(e, spec))).collect();
            maps.insert(spec.table, table);
        }
        maps
    }

    /// One map entry: fields `"<from>": "<to>"`, unlisted keys at the map's default.
    fn qos_map(&mut self, e: Entry<'_>, spec: &MapSpec) -> Vec<u8> {
        let mut map: Vec<u8> =
            (0..=spec.from_max).map(|i| if spec.identity_default { i } else { 0 }).collect();
        for (from, to) in e.fields {
            let from_index = parse_number(from, spec.from, 0, spec.from_max);
            let Some(from_index) = self.report(e, from, to, from_index) else { continue };
            if let Some(to) = self.report(e, from, to, parse_number(to, spec.to, 0, 7)) {
                map[usize::from(from_index)] = to;
            }
        }
        map
    }

    /// `PORT_QOS_MAP`, one [`PortQos`] per port; `PORT_QOS_MAP|global|dscp_to_tc_map` for ports without one.
    /// The port shaper (`scheduler`) goes to [`PortBuffers::port_scheduler`].
    pub(super) fn port_qos(
        &mut self,
        ports: &PortMap,
        maps: &QosMaps,
        schedulers: &Named<'a, SchedulerProfile>,
        buffers: &mut [PortBuffers],
    ) -> Vec<PortQos> {
        let port_count = buffers.len();
        let mut qos = vec![PortQos::default(); port_count];
        let mut configured_by: Vec<Option<&str>> = vec![None; port_count];
        let mut global_dscp = None;
        for e in entries(self.db, "PORT_QOS_MAP") {
            if e.key == "global" {
                global_dscp = self.global_qos(e, maps);
                continue;
            }
            let targets = self.qos_ports(e, ports, &mut configured_by);
            let port_qos = self.port_qos_entry(e, maps);
            let shaper = self.optional(e, "scheduler", |v| schedulers.resolve(v)).flatten();
            for port in targets {
                qos[port.index()] = port_qos.clone();
                buffers[port.index()].port_scheduler = shaper;
            }
        }
        if let Some(dscp) = global_dscp {
            for port_qos in &mut qos {
                port_qos.dscp_to_tc.get_or_insert(dscp);
            }
        }
        qos
    }

    /// The ports of a `PORT_QOS_MAP` key (one port or several joined with commas); each port has one entry.
    fn qos_ports(
        &mut self,
        e: Entry<'a>,
        ports: &PortMap,
        configured_by: &mut [Option<&'a str>],
    ) -> Vec<PortId> {
        let mut targets = Vec::new();
        for name in e.key.split(',') {
            let Some(port) = self.parse_key(e, name, |n| find_port(ports, n)) else { continue };
            if let Some(first) = configured_by[port.index()] {
                self.error(e, "", name, format!("{name} already has its QoS maps from PORT_QOS_MAP|{first}"));
                continue;
            }
            configured_by[port.index()] = Some(e.key);
            targets.push(port);
        }
        targets
    }

    fn port_qos_entry(&mut self, e: Entry<'_>, maps: &QosMaps) -> PortQos {
        self.check_fields(e, PORT_QOS_FIELDS);
        let mut qos = PortQos {
            dscp_to_tc: self.map_ref(e, &DSCP_TO_TC, maps).and_then(|m| m.try_into().ok()),
            dot1p_to_tc: self.map_ref(e, &DOT1P_TO_TC, maps).and_then(|m| m.try_into().ok()),
            pfc_enable: self.optional(e, "pfc_enable", parse_priority_list).unwrap_or(0),
            ..PortQos::default()
        };
        // Absent, it is pfc_enable: SONiC's db_migrator fills it so (sonic-net/sonic-utilities
        // scripts/db_migrator.py, version_3_0_4), so no SONiC user meets a port without it.
        qos.pfcwd_sw_enable =
            self.optional(e, "pfcwd_sw_enable", parse_priority_list).unwrap_or(qos.pfc_enable);
        let eight_entry_maps = [
            (&TC_TO_QUEUE, &mut qos.tc_to_queue),
            (&TC_TO_PG, &mut qos.tc_to_pg),
            (&PFC_TO_QUEUE, &mut qos.pfc_to_queue),
            (&PFC_TO_PG, &mut qos.pfc_to_pg),
        ];
        for (spec, slot) in eight_entry_maps {
            if let Some(map) = self.map_ref(e, spec, maps).and_then(|m| m.try_into().ok()) {
                *slot = map;
            }
        }
        qos
    }

    /// `PORT_QOS_MAP|global`: only `dscp_to_tc_map` applies switch-wide.
    fn global_qos(&mut self, e: Entry<'_>, maps: &QosMaps) -> Option<[u8; 64]> {
        for (field, value) in e.fields.iter().filter(|(field, _)| *field != DSCP_TO_TC.field) {
            if PORT_QOS_FIELDS.contains(&field.as_str()) {
                self.error(e, field, value, format!("{field} cannot be set globally, only per port"));
            } else {
                let hint = names::suggestion(field, [DSCP_TO_TC.field]);
                self.error(e, field, value, format!("unknown field {field}{hint}"));
            }
        }
        self.map_ref(e, &DSCP_TO_TC, maps).and_then(|m| m.try_into().ok())
    }

    /// The map a `PORT_QOS_MAP` field refers to, if the field is set.
    fn map_ref<'m>(&mut self, e: Entry<'_>, spec: &MapSpec, maps: &'m QosMaps) -> Option<&'m [u8]> {
        self.optional(e, spec.field, |value| {
            let name = parse_ref(spec.table, value)?;
            let map = maps.get(spec.table).and_then(|table| table.get(name));
            map.map(Vec::as_slice).ok_or_else(|| format!("{value:?} names no {} entry", spec.table))
        })
    }

    /// `BORDER_RULE|<port>|<seq>`, into each port's rules in ascending `seq`.
    pub(super) fn border_rules(&mut self, ports: &PortMap, qos: &mut [PortQos]) {
        let mut rules: BTreeMap<(PortId, u32), (&str, BorderRule)> = BTreeMap::new();
        for e in entries(self.db, "BORDER_RULE") {
            let Some((port, rule)) = self.border_rule(e, ports) else { continue };
            match rules.entry((port, rule.seq)) {
                Slot::Vacant(slot) => {
                    slot.insert((e.key, rule));
                }
                Slot::Occupied(first) => {
                    let message =
                        format!("seq {} is already used by BORDER_RULE|{}", rule.seq, first.get().0);
                    self.error(e, "", e.key, message);
                }
            }
        }
        for ((port, _), (_, rule)) in rules {
            qos[port.index()].border_rules.push(rule);
        }
    }

    fn border_rule(&mut self, e: Entry<'a>, ports: &PortMap) -> Option<(PortId, BorderRule)> {
        let (port_name, seq_text) = self.split_key(e, "<port>|<seq>")?;
        self.check_fields(e, BORDER_RULE_FIELDS);
        let port = self.parse_key(e, port_name, |n| find_port(ports, n));
        let seq = self.parse_key(e, seq_text, |v| parse_number(v, "a sequence number", 0, u32::MAX));
        let actions = [("forward", false), ("drop", true)];
        // Every field is checked before an unusable key makes the rule go.
        let udp_dport = self.optional(e, "udp_dport", |v| parse_number(v, "a UDP port", 0, u16::MAX));
        let dscp = self.optional(e, "dscp", parse_dscp);
        let set_dscp = self.optional(e, "set_dscp", parse_dscp);
        let set_queue = self.optional(e, "set_queue", |v| parse_number(v, "a queue", 0, 7));
        let drop = self.optional(e, "packet_action", |v| parse_keyword(v, &actions)).unwrap_or(false);
        Some((port?, BorderRule { seq: seq?, udp_dport, dscp, set_dscp, set_queue, drop }))
    }
}
