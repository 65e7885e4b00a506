//! Which names a configuration may use: the CONFIG_DB tables SONiC defines (so that a table the model does
//! not use is accepted and reported once, while a misspelled one is refused), and "did you mean" for table
//! and field names.
//!
//! The table list is the set of top-level containers of sonic-buildimage's YANG models
//! (`src/sonic-yang-models/yang-models/*.yang`), plus the few tables SONiC writes without a YANG model and
//! the Lossless extensions. See `docs/configuration.md`.

/// CONFIG_DB tables of SONiC (YANG-modelled or written by SONiC's own templates and daemons).
pub(super) const SONIC_TABLES: &[&str] = &[
    "AAA",
    "ACL_RULE",
    "ACL_TABLE",
    "ACL_TABLE_TYPE",
    "ALARM",
    "ASIC_SENSORS",
    "AS_PATH_SET",
    "AUTO_TECHSUPPORT",
    "AUTO_TECHSUPPORT_FEATURE",
    "BANNER_MESSAGE",
    "BGP_AGGREGATE_ADDRESS",
    "BGP_ALLOWED_PREFIXES",
    "BGP_BBR",
    "BGP_DEVICE_GLOBAL",
    "BGP_GLOBALS",
    "BGP_GLOBALS_AF",
    "BGP_GLOBALS_AF_AGGREGATE_ADDR",
    "BGP_GLOBALS_AF_NETWORK",
    "BGP_GLOBALS_LISTEN_PREFIX",
    "BGP_INTERNAL_NEIGHBOR",
    "BGP_MONITORS",
    "BGP_NEIGHBOR",
    "BGP_NEIGHBOR_AF",
    "BGP_PEER_GROUP",
    "BGP_PEER_GROUP_AF",
    "BGP_PEER_RANGE",
    "BGP_SENTINELS",
    "BGP_VOQ_CHASSIS_NEIGHBOR",
    "BMP",
    "BREAKOUT_CFG",
    "BUFFER_PG",
    "BUFFER_POOL",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PROFILE",
    "BUFFER_QUEUE",
    "CABLE_LENGTH",
    "CHASSIS_MODULE",
    "COMMUNITY_SET",
    "CONSOLE_PORT",
    "CONSOLE_SWITCH",
    "COPP_GROUP",
    "COPP_TRAP",
    "CRM",
    "DEBUG_COUNTER",
    "DEBUG_COUNTER_DROP_REASON",
    "DEBUG_DROP_MONITOR",
    "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
    "DEVICE_METADATA",
    "DEVICE_NEIGHBOR",
    "DEVICE_NEIGHBOR_METADATA",
    "DHCPV4_RELAY",
    "DHCP_RELAY",
    "DHCP_SERVER",
    "DHCP_SERVER_IPV4",
    "DHCP_SERVER_IPV4_PORT",
    "DHCP_SERVER_IPV4_RANGE",
    "DNS_NAMESERVER",
    "DNS_OPTIONS",
    "DOT1P_TO_TC_MAP",
    "DSCP_TO_FC_MAP",
    "DSCP_TO_TC_MAP",
    "EVENT",
    "EXP_TO_FC_MAP",
    "FABRIC_MONITOR",
    "FABRIC_PORT",
    "FDB",
    "FEATURE",
    "FG_NHG",
    "FG_NHG_MEMBER",
    "FG_NHG_PREFIX",
    "FIPS",
    "FLEX_COUNTER_TABLE",
    "FLOW_COUNTER_ROUTE_PATTERN",
    "GNMI",
    "GNMI_CLIENT_CERT",
    "GRPCCLIENT",
    "HIGH_FREQUENCY_TELEMETRY_GROUP",
    "HIGH_FREQUENCY_TELEMETRY_PROFILE",
    "INTERFACE",
    "KDUMP",
    "KUBERNETES_MASTER",
    "LDAP",
    "LDAP_SERVER",
    "LLDP",
    "LLDP_PORT",
    "LOGGER",
    "LOOPBACK_INTERFACE",
    "LOSSLESS_TRAFFIC_PATTERN",
    "MACSEC_PROFILE",
    "MAP_PFC_PRIORITY_TO_QUEUE",
    "MCLAG_DOMAIN",
    "MCLAG_INTERFACE",
    "MCLAG_UNIQUE_IP",
    "MGMT_INTERFACE",
    "MGMT_PORT",
    "MGMT_VRF_CONFIG",
    "MIRROR_SESSION",
    "MPLS_TC_TO_TC_MAP",
    "MUX_CABLE",
    "MUX_LINKMGR",
    "NAT_BINDINGS",
    "NAT_GLOBAL",
    "NAT_POOL",
    "NEIGH",
    "NTP",
    "NTP_KEY",
    "NTP_SERVER",
    "NVGRE_TUNNEL",
    "NVGRE_TUNNEL_MAP",
    "PASSW_HARDENING",
    "PBH_HASH",
    "PBH_HASH_FIELD",
    "PBH_RULE",
    "PBH_TABLE",
    "PEER_SWITCH",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    "PFC_WD",
    "PORT",
    "PORTCHANNEL",
    "PORTCHANNEL_INTERFACE",
    "PORTCHANNEL_MEMBER",
    "PORT_QOS_MAP",
    "PORT_STORM_CONTROL",
    "PREFIX_LIST",
    "PREFIX_SET",
    "QUEUE",
    "RADIUS",
    "RADIUS_SERVER",
    "RESTAPI",
    "ROUTE_MAP",
    "ROUTE_MAP_SET",
    "ROUTE_REDISTRIBUTE",
    "SAG",
    "SCHEDULER",
    "SERIAL_CONSOLE",
    "SFLOW",
    "SFLOW_COLLECTOR",
    "SFLOW_SESSION",
    "SNMP",
    "SNMP_AGENT_ADDRESS_CONFIG",
    "SNMP_COMMUNITY",
    "SNMP_USER",
    "SRV6_MY_LOCATORS",
    "SRV6_MY_SIDS",
    "SSH_SERVER",
    "STATIC_NAPT",
    "STATIC_NAT",
    "STATIC_ROUTE",
    "STP",
    "STP_MST",
    "STP_MST_INST",
    "STP_MST_PORT",
    "STP_PORT",
    "STP_VLAN",
    "STP_VLAN_PORT",
    "SUBNET_DECAP",
    "SUPPRESS_ASIC_SDK_HEALTH_EVENT",
    "SWITCH",
    "SWITCH_HASH",
    "SWITCH_TRIMMING",
    "SYSLOG_CONFIG",
    "SYSLOG_CONFIG_FEATURE",
    "SYSLOG_SERVER",
    "SYSTEM_DEFAULTS",
    "SYSTEM_PORT",
    "TACPLUS",
    "TACPLUS_SERVER",
    "TC_TO_DSCP_MAP",
    "TC_TO_PRIORITY_GROUP_MAP",
    "TC_TO_QUEUE_MAP",
    "TELEMETRY",
    "TELEMETRY_CLIENT",
    "TUNNEL",
    "VERSIONS",
    "VLAN",
    "VLAN_INTERFACE",
    "VLAN_MEMBER",
    "VLAN_SUB_INTERFACE",
    "VNET",
    "VNET_ROUTE",
    "VNET_ROUTE_TUNNEL",
    "VOQ_INBAND_INTERFACE",
    "VRF",
    "VXLAN_EVPN_NVO",
    "VXLAN_TUNNEL",
    "VXLAN_TUNNEL_MAP",
    "WARM_RESTART",
    "WRED_ECN_PORT",
    "WRED_ECN_QUEUE",
    "WRED_PROFILE",
    "XCVRD_LOG",
    "ZTP",
];

/// Edit distance (insertions, deletions, substitutions, and swaps of two neighbours), ASCII case folded.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<u8> = a.bytes().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<u8> = b.bytes().map(|c| c.to_ascii_lowercase()).collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, slot) in rows[0].iter_mut().enumerate() {
        *slot = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// The candidate closest to `word`, if it is close enough to be a likely misspelling (about one edit per
/// four characters, at least one; a case-only difference always qualifies).
pub(super) fn closest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let budget = (word.len() / 4).max(1);
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|&(d, c)| d <= budget || c.eq_ignore_ascii_case(word))
        .min_by_key(|&(d, c)| (d, c.len().abs_diff(word.len()), c))
        .map(|(_, c)| c)
}

/// `; did you mean X?` or nothing.
pub(super) fn suggestion<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> String {
    closest(word, candidates).map(|c| format!("; did you mean {c}?")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonic_tables_are_sorted_and_unique() {
        assert!(SONIC_TABLES.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn distance_counts_edits_and_swaps() {
        assert_eq!(distance("BUFER_QUEUE", "BUFFER_QUEUE"), 1);
        assert_eq!(distance("dynamic_tj", "dynamic_th"), 1);
        assert_eq!(distance("xof", "xoff"), 1);
        assert_eq!(distance("xoff", "xofo"), 1);
        assert_eq!(distance("buffer_pool", "BUFFER_POOL"), 0);
        assert_eq!(distance("size", "mode"), 3);
    }

    #[test]
    fn closest_finds_likely_misspellings_only() {
        assert_eq!(closest("BUFER_QUEUE", SONIC_TABLES.iter().copied()), Some("BUFFER_QUEUE"));
        assert_eq!(closest("buffer_pg", SONIC_TABLES.iter().copied()), Some("BUFFER_PG"));
        assert_eq!(closest("dynamic_tj", ["dynamic_th", "static_th", "size"]), Some("dynamic_th"));
        assert_eq!(closest("colour", ["speed", "mtu", "alias"]), None);
        assert_eq!(closest("NOT_A_TABLE_AT_ALL", SONIC_TABLES.iter().copied()), None);
        assert_eq!(suggestion("sise", ["size", "pool"]), "; did you mean size?");
        assert_eq!(suggestion("zzz", ["size"]), "");
    }
}
