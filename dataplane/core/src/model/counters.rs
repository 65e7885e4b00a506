//! Counters with SONiC's meaning (portstat, queuestat, PG counters, drop reasons).
//!
//! Read/clear semantics: every counter in the model only ever grows. Clearing is an observer's affair, as in
//! SONiC, where `sonic-clear counters` stores a snapshot and `show` prints the difference: keep a
//! [`CountersDump`] and subtract. (Watermarks, which are read-and-clear in SAI, live with the buffer model.)
//!
//! Port counters, as `show interfaces counters` reads them:
//! - `RX_OK`/`rx_bytes`: well-formed frames received, whatever happened to them next.
//! - `RX_ERR`: frames that could not be parsed, or were longer than the port's MTU allows.
//! - `RX_DRP`: well-formed frames the ingress pipeline dropped (no route, TTL, VLAN filter, FDB miss of a
//!   lossless packet, ingress buffer full, ...); each such drop also counts under its [`DropReason`].
//! - `TX_OK`/`tx_bytes`: frames transmitted from the egress queues (PFC frames count only in `pfc`).
//! - `TX_ERR`: always 0: the model has no line errors (a routed packet above the egress MTU is an ingress
//!   drop, `EXCEEDS_L3_MTU`).
//! - `TX_DRP`: frames dropped at egress: queue tail drop, WRED, policer, PFC watchdog drop action.
//!
//! Queue counters (`show queue counters`) count transmitted packets/bytes and dropped packets/bytes of each
//! egress queue; PG counters count the packets and bytes classified into each ingress priority group.

use super::pfc::PfcCounters;
use super::watchdog::PfcWdCounters;
use crate::wire::Layer;
use std::collections::BTreeMap;

/// Why the switch dropped a frame. Names follow SAI's `SAI_IN_DROP_REASON_*` where one exists; that name
/// ([`DropReason::as_str`]) is also how a reason serialises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// The frame does not parse (the layer that failed is kept).
    Malformed(Layer),
    /// Longer than the ingress port's MTU + L2 header allows.
    ExceedsL2Mtu,
    /// The ingress port is administratively down.
    PortAdminDown,
    /// Source MAC is a group address.
    SmacMulticast,
    /// Tagged with a VLAN the port is not a member of, or untagged on a port with no untagged VLAN and no
    /// router interface.
    IngressVlanFilter,
    /// Unicast to a MAC that is neither the router's nor bridged in a VLAN (routed port, foreign MAC).
    L2NoForwarding,
    /// Bridged back out of the port it came in on.
    L2LoopbackFilter,
    /// Lossless unknown unicast inside a VLAN: never flooded.
    UnknownUnicastLossless,
    /// Broadcast/unknown unicast with no other VLAN member to flood to.
    FloodNoMembers,
    /// Sent to the router MAC but not IPv4/IPv6 (or ARP).
    NoL3Header,
    /// TTL / hop limit expired.
    Ttl,
    /// No route for an IPv4 destination.
    Lpm4Miss,
    /// No route for an IPv6 destination.
    Lpm6Miss,
    /// Route with `blackhole` set.
    BlackholeRoute,
    /// The next hop has no neighbour (ARP) entry.
    UnresolvedNextHop,
    /// Routed lossless packet whose neighbour MAC is known but has no FDB entry: dropped, never flooded
    /// (the precondition of the flooding deadlock of Microsoft's RoCEv2 deployment).
    FdbMissLossless,
    /// The same for a lossy packet, when `SWITCH|switch|lossy_fdb_miss_action` is `drop`.
    FdbMissLossy,
    /// The egress port is administratively down.
    EgressPortDown,
    /// A routed packet larger than the egress port's MTU (no fragmentation).
    ExceedsL3Mtu,
    /// Dropped by a border classification rule (`packet_action: drop`).
    BorderRule,
    /// No room in the PG's reserved, shared or headroom buffer (ingress buffer drop).
    IngressBuffer,
    /// Ingress traffic of a priority the PFC watchdog's drop action is discarding (`drop_ingress`).
    PfcWatchdog,
    /// Lost before the switch could take it: the receive ring or socket buffer of the port was full
    /// (counted in `RX_OVR` as well).
    RxOverrun,
    /// Arrived with a bad frame check sequence (corrupted on the link); counted in `RX_ERR`.
    FcsError,
}

impl DropReason {
    /// The name an operator sees (SAI style).
    pub fn as_str(&self) -> &'static str {
        match self {
            DropReason::Malformed(l) => match l {
                Layer::Ethernet => "MALFORMED_ETHERNET",
                Layer::Vlan => "MALFORMED_VLAN",
                Layer::Arp => "MALFORMED_ARP",
                Layer::Ipv4 => "IP_HEADER_ERROR",
                Layer::Ipv6 => "IPV6_HEADER_ERROR",
                Layer::Udp => "MALFORMED_UDP",
                Layer::Bth => "MALFORMED_BTH",
                Layer::MacControl => "MALFORMED_MAC_CONTROL",
            },
            DropReason::ExceedsL2Mtu => "EXCEEDS_L2_MTU",
            DropReason::PortAdminDown => "INGRESS_PORT_DOWN",
            DropReason::SmacMulticast => "SMAC_MULTICAST",
            DropReason::IngressVlanFilter => "INGRESS_VLAN_FILTER",
            DropReason::L2NoForwarding => "L2_NO_FORWARDING",
            DropReason::L2LoopbackFilter => "L2_LOOPBACK_FILTER",
            DropReason::UnknownUnicastLossless => "UNKNOWN_UNICAST_LOSSLESS",
            DropReason::FloodNoMembers => "FLOOD_NO_MEMBERS",
            DropReason::NoL3Header => "NO_L3_HEADER",
            DropReason::Ttl => "TTL",
            DropReason::Lpm4Miss => "LPM4_MISS",
            DropReason::Lpm6Miss => "LPM6_MISS",
            DropReason::BlackholeRoute => "BLACKHOLE_ROUTE",
            DropReason::UnresolvedNextHop => "UNRESOLVED_NEXT_HOP",
            DropReason::FdbMissLossless => "FDB_MISS_LOSSLESS",
            DropReason::FdbMissLossy => "FDB_MISS_LOSSY",
            DropReason::EgressPortDown => "L3_EGRESS_LINK_DOWN",
            DropReason::ExceedsL3Mtu => "EXCEEDS_L3_MTU",
            DropReason::BorderRule => "ACL_ANY",
            DropReason::IngressBuffer => "INGRESS_BUFFER",
            DropReason::PfcWatchdog => "PFC_WATCHDOG",
            DropReason::RxOverrun => "RX_OVERRUN",
            DropReason::FcsError => "FCS_ERROR",
        }
    }

    /// Counted as `RX_ERR` (not `RX_OK`/`RX_DRP`): the frame was bad on the wire.
    pub fn is_rx_error(&self) -> bool {
        matches!(self, DropReason::Malformed(_) | DropReason::ExceedsL2Mtu | DropReason::FcsError)
    }
}

impl serde::Serialize for DropReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One egress queue: `SAI_QUEUE_STAT_PACKETS/BYTES` (transmitted), `DROPPED_PACKETS/BYTES` (every drop at
/// the queue: tail, WRED, policer, watchdog), `WRED_DROPPED_PACKETS/BYTES` and
/// `WRED_ECN_MARKED_PACKETS/BYTES`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueueCounters {
    pub packets: u64,
    pub bytes: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub wred_dropped_packets: u64,
    pub wred_dropped_bytes: u64,
    pub ecn_marked_packets: u64,
    pub ecn_marked_bytes: u64,
}

/// `SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS/BYTES/DROPPED_PACKETS` of one ingress PG.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PgCounters {
    pub packets: u64,
    pub bytes: u64,
    pub dropped_packets: u64,
}

/// The counters of one port.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortCounters {
    pub rx_ok: u64,
    pub rx_bytes: u64,
    pub rx_err: u64,
    pub rx_drp: u64,
    /// Frames lost because the port's receive buffer overflowed (the switch did not take them in time).
    pub rx_ovr: u64,
    pub tx_ok: u64,
    pub tx_bytes: u64,
    pub tx_err: u64,
    pub tx_drp: u64,
    /// Of `rx_ok`, frames to a group (multicast or broadcast) destination MAC: `rx_ok - rx_non_ucast` is
    /// `SAI_PORT_STAT_IF_IN_UCAST_PKTS`, this is `SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS`.
    pub rx_non_ucast: u64,
    /// Of `tx_ok`, frames sent to a group destination MAC (`SAI_PORT_STAT_IF_OUT_NON_UCAST_PKTS`).
    pub tx_non_ucast: u64,
    /// Frames the switch itself consumed (ARP for its addresses, PFC/PAUSE, LLDP and other link-local
    /// control frames, packets to its own IP addresses).
    pub trapped: u64,
    /// MAC Control frames (PFC, PAUSE) received. The MAC consumes them: they count here, in `trapped` and
    /// in the PFC counters, never in `rx_ok`/`rx_drp` (sonic-mgmt's test_pfc_counters.py: PFC frames must
    /// not count as RX_OK or RX_DRP).
    pub rx_mac_control: u64,
    pub queues: [QueueCounters; 8],
    pub pgs: [PgCounters; 8],
    /// PFC frames per priority, received and sent, and pause time.
    pub pfc: [PfcCounters; 8],
    /// PFC watchdog counters per queue.
    pub pfc_wd: [PfcWdCounters; 8],
    /// Ingress drops by reason (frames counted in `rx_drp` or `rx_err`).
    pub drop_reasons: BTreeMap<DropReason, u64>,
}

/// Switch-wide accounting of every frame handed to [`Switch::handle_frame`](super::Switch::handle_frame):
/// `received == forwarded + trapped + dropped` at every instant, and every copy is accounted for:
/// `copies + originated == sent + queued + copies_dropped + flushed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FrameLedger {
    pub received: u64,
    /// Frames for which the pipeline produced at least one egress copy.
    pub forwarded: u64,
    /// Egress copies produced (flooding makes several per frame).
    pub copies: u64,
    /// Frames the switch sent of its own accord (ARP replies and requests); not part of `received`.
    pub originated: u64,
    /// Copies refused at the egress queue (buffers, WRED, policer, watchdog).
    pub copies_dropped: u64,
    /// Admitted copies removed from a queue without being sent (watchdog drop, port set change).
    pub flushed: u64,
    pub trapped: u64,
    pub dropped: u64,
}

/// A point-in-time copy of all counters, ports by name; subtract two to get "since clear".
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CountersDump {
    pub ledger: FrameLedger,
    pub ports: BTreeMap<String, PortCounters>,
}
