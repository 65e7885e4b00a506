//! QoS classification: which traffic class (TC) a packet belongs to, and so which ingress priority group
//! and egress queue it uses.
//!
//! Order, as on a UCloud-style border port: the port's border rules first (first match wins; they may drop,
//! rewrite the DSCP, or pin the egress queue), then the maps. A tagged frame on a port with a
//! `dot1p_to_tc_map` is classified by its PCP; otherwise an IP packet by its DSCP (`dscp_to_tc_map`);
//! anything else is TC 0. The TC selects the PG through the ingress port's `tc_to_pg_map`, and the queue
//! through the egress port's `tc_to_queue_map` (SAI applies that map per egress port).

use super::config::PortQos;

/// The outcome of classifying one packet on its ingress port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classification {
    pub tc: u8,
    /// Ingress priority group (ingress port's `tc_to_pg_map`).
    pub pg: u8,
    /// Egress queue chosen by a border rule, overriding the egress port's `tc_to_queue_map`.
    pub queue_override: Option<u8>,
    /// DSCP a border rule rewrote the packet to (to be written into the frame).
    pub set_dscp: Option<u8>,
    /// A border rule dropped the packet.
    pub drop: bool,
}

/// Classifies a packet given its PCP (tagged frames), DSCP (IP) and UDP destination port.
pub fn classify(qos: &PortQos, pcp: Option<u8>, dscp: Option<u8>, udp_dport: Option<u16>) -> Classification {
    let mut dscp = dscp;
    let mut queue_override = None;
    let mut set_dscp = None;
    let mut drop = false;
    if let Some(rule) = qos.border_rules.iter().find(|r| r.matches(dscp, udp_dport)) {
        drop = rule.drop;
        queue_override = rule.set_queue;
        if let (Some(new), Some(_)) = (rule.set_dscp, dscp) {
            dscp = Some(new);
            set_dscp = Some(new);
        }
    }
    let tc = match (qos.dot1p_to_tc, pcp, qos.dscp_to_tc, dscp) {
        (Some(map), Some(p), _, _) => map[usize::from(p & 7)],
        (_, _, Some(map), Some(d)) => map[usize::from(d & 63)],
        _ => 0,
    } & 7;
    Classification { tc, pg: qos.tc_to_pg[usize::from(tc)] & 7, queue_override, set_dscp, drop }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::BorderRule;

    fn azure() -> PortQos {
        let mut dscp = [1u8; 64];
        for (d, tc) in [(3, 3), (4, 4), (5, 2), (8, 0), (46, 5), (48, 6)] {
            dscp[d] = tc;
        }
        PortQos {
            dscp_to_tc: Some(dscp),
            tc_to_pg: [0, 0, 0, 3, 4, 0, 0, 7],
            pfc_enable: 0b0001_1000,
            ..PortQos::default()
        }
    }

    #[test]
    fn dscp_maps_to_tc_and_pg() {
        let q = azure();
        let c = classify(&q, None, Some(3), None);
        assert_eq!((c.tc, c.pg), (3, 3));
        let c = classify(&q, None, Some(46), None);
        assert_eq!((c.tc, c.pg), (5, 0));
        assert_eq!(classify(&q, None, None, None).tc, 0, "non-IP without dot1p map");
    }

    #[test]
    fn pcp_wins_on_tagged_frames_when_a_dot1p_map_exists() {
        let q = PortQos { dot1p_to_tc: Some([1, 0, 2, 3, 4, 5, 6, 7]), ..azure() };
        assert_eq!(classify(&q, Some(0), Some(3), None).tc, 1);
        assert_eq!(classify(&q, None, Some(3), None).tc, 3, "untagged falls back to DSCP");
    }

    #[test]
    fn border_rule_first_match_rewrites_and_pins_queue() {
        let mut q = azure();
        q.border_rules = vec![
            BorderRule {
                seq: 10,
                udp_dport: Some(4791),
                dscp: Some(48),
                set_dscp: None,
                set_queue: Some(6),
                drop: false,
            },
            BorderRule {
                seq: 20,
                udp_dport: Some(4791),
                dscp: None,
                set_dscp: Some(3),
                set_queue: None,
                drop: false,
            },
            BorderRule {
                seq: 30,
                udp_dport: None,
                dscp: Some(7),
                set_dscp: None,
                set_queue: None,
                drop: true,
            },
        ];
        let cnp = classify(&q, None, Some(48), Some(4791));
        assert_eq!((cnp.tc, cnp.queue_override, cnp.set_dscp), (6, Some(6), None));
        let roce = classify(&q, None, Some(26), Some(4791));
        assert_eq!((roce.tc, roce.pg, roce.set_dscp), (3, 3, Some(3)));
        assert!(classify(&q, None, Some(7), Some(80)).drop);
        assert!(!classify(&q, None, Some(8), Some(80)).drop);
    }
}
