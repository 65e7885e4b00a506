//! Lookup structures derived from a configuration, built off the packet path by
//! [`Switch::prepare`](super::Switch::prepare) and read on it: VLANs are found by indexing, not hashing.

use super::super::classify::{Classification, classify};
use super::super::config::{PortId, RifId, RifKind, SwitchConfig};
use super::super::forwarding::RouteTable;

/// VLAN IDs are 12 bits (IEEE 802.1Q).
const VID_COUNT: usize = 4096;
/// A VID with no VLAN in [`Derived::vlan_slot`].
const NO_VLAN: u16 = u16::MAX;

/// A port's place in a VLAN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Membership {
    #[default]
    None,
    Untagged,
    Tagged,
}

/// One VLAN as the packet path reads it.
#[derive(Debug, Default)]
pub(super) struct VlanInfo {
    /// Its router interface (`VLAN_INTERFACE`), if any.
    pub(super) rif: Option<RifId>,
    /// The union of the members' `pfc_enable` (a TC lossless on any member is never flooded).
    pub(super) lossless: u8,
    /// Per port.
    members: Vec<Membership>,
}

/// Lookup structures derived from the configuration.
#[derive(Debug, Default)]
pub(super) struct Derived {
    pub(super) rif_by_port: Vec<Option<RifId>>,
    pub(super) untagged_vlan: Vec<Option<u16>>,
    /// VID → index in `vlans` ([`NO_VLAN`]: none); empty when the configuration has no VLAN.
    vlan_slot: Vec<u16>,
    vlans: Vec<VlanInfo>,
    pub(super) routes: RouteTable,
    /// Per port, the classification of an IP packet by its DSCP, when that is all classification reads
    /// there (no border rules, no `dot1p_to_tc_map`); else `None` and [`classify`] runs per packet.
    pub(super) dscp_classes: Vec<Option<Box<[Classification; 64]>>>,
}

impl Derived {
    pub(super) fn build(config: &SwitchConfig) -> Derived {
        let ports = config.ports.len();
        let mut d = Derived {
            rif_by_port: vec![None; ports],
            untagged_vlan: vec![None; ports],
            ..Derived::default()
        };
        for (vid, vlan) in &config.vlans {
            let mut lossless = 0u8;
            let info = d.vlan_entry(*vid, ports);
            for m in &vlan.members {
                info.members[m.port.index()] =
                    if m.tagged { Membership::Tagged } else { Membership::Untagged };
                lossless |= config.qos[m.port.index()].pfc_enable;
            }
            info.lossless = lossless;
            for m in vlan.members.iter().filter(|m| !m.tagged) {
                d.untagged_vlan[m.port.index()] = Some(*vid);
            }
        }
        d.routes = RouteTable::for_config(config);
        d.dscp_classes = config
            .qos
            .iter()
            .map(|qos| {
                (qos.border_rules.is_empty() && qos.dot1p_to_tc.is_none())
                    .then(|| Box::new(std::array::from_fn(|d| classify(qos, None, Some(d as u8), None))))
            })
            .collect();
        for (i, rif) in config.interfaces.iter().enumerate() {
            match rif.kind {
                RifKind::Port(p) => d.rif_by_port[p.index()] = Some(RifId::new(i)),
                RifKind::Vlan(v) => d.vlan_entry(v, ports).rif = Some(RifId::new(i)),
            }
        }
        d
    }

    fn vlan_entry(&mut self, vid: u16, ports: usize) -> &mut VlanInfo {
        if self.vlan_slot.is_empty() {
            self.vlan_slot = vec![NO_VLAN; VID_COUNT];
        }
        let slot = &mut self.vlan_slot[usize::from(vid) % VID_COUNT];
        if *slot == NO_VLAN {
            *slot = self.vlans.len() as u16;
            self.vlans.push(VlanInfo { members: vec![Membership::None; ports], ..VlanInfo::default() });
        }
        &mut self.vlans[usize::from(*slot)]
    }

    /// The VLAN with this VID, if the configuration has it.
    pub(super) fn vlan(&self, vid: u16) -> Option<&VlanInfo> {
        let slot = *self.vlan_slot.get(usize::from(vid))?;
        self.vlans.get(usize::from(slot))
    }

    /// A port's membership of a VLAN.
    pub(super) fn membership(&self, vid: u16, port: PortId) -> Membership {
        self.vlan(vid).and_then(|v| v.members.get(port.index()).copied()).unwrap_or_default()
    }

    /// The classification of an IP packet with this DSCP on `port`, if the port's table answers it.
    pub(super) fn dscp_class(&self, port: PortId, dscp: u8) -> Option<Classification> {
        Some(self.dscp_classes.get(port.index())?.as_ref()?[usize::from(dscp & 63)])
    }

    /// A port is a tagged member of a VLAN.
    pub(super) fn is_tagged(&self, vid: u16, port: PortId) -> bool {
        self.membership(vid, port) == Membership::Tagged
    }
}
