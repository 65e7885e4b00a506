//! Forwarding state: the FDB (MAC learning and aging per VLAN), the neighbour table (ARP), and the route
//! table (longest-prefix match over connected and static routes, ECMP by a 5-tuple hash).
//!
//! FDB and neighbour entries age independently, as on real switches (FDB in minutes, ARP in hours): a host
//! that stays silent loses its FDB entry long before its ARP entry, which is exactly the state in which a
//! routed packet finds a neighbour MAC with no port behind it.

use super::config::{PortId, RifId, SwitchConfig};
use crate::time::{Instant, Nanos};
use crate::wire::EthernetAddress;
use ipnet::IpNet;
use rustc_hash::FxHashMap as HashMap;
use std::net::IpAddr;

/// One FDB entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdbEntry {
    pub port: PortId,
    pub last_seen: Instant,
    /// Configured in the `FDB` table: never ages, never moves.
    pub is_static: bool,
}

/// The MAC table, keyed by (VLAN ID, MAC) packed in one integer (`fdb_key`: one multiply to hash).
#[derive(Debug, Clone, Default)]
pub struct Fdb {
    entries: HashMap<u64, FdbEntry>,
    /// Counts the changes to what the table answers (entries added, moved or removed), not refreshes:
    /// what a cache of lookups compares ([`Fdb::version`]).
    version: u64,
}

/// (VLAN ID, MAC) as one key: the VID above the 48 bits of the MAC, so keys order as the pairs do.
fn fdb_key(vid: u16, mac: EthernetAddress) -> u64 {
    let m = mac.0;
    u64::from(vid) << 48 | u64::from_be_bytes([0, 0, m[0], m[1], m[2], m[3], m[4], m[5]])
}

/// The (VLAN ID, MAC) of a key.
fn fdb_pair(key: u64) -> (u16, EthernetAddress) {
    let b = key.to_be_bytes();
    (u16::from_be_bytes([b[0], b[1]]), EthernetAddress([b[2], b[3], b[4], b[5], b[6], b[7]]))
}

impl Fdb {
    /// Changes with every entry added, moved or removed (not with a refresh of `last_seen_ns`): a lookup
    /// answered while the version was v answers the same while it still is v.
    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn lookup(&self, vid: u16, mac: EthernetAddress) -> Option<&FdbEntry> {
        self.entries.get(&fdb_key(vid, mac))
    }

    /// Learns or refreshes a dynamic entry; a static entry is left alone. Returns true for a new entry or a
    /// station move.
    pub fn learn(&mut self, vid: u16, mac: EthernetAddress, port: PortId, now: Instant) -> bool {
        match self.entries.get_mut(&fdb_key(vid, mac)) {
            Some(e) if e.is_static => false,
            Some(e) => {
                let moved = e.port != port;
                e.port = port;
                e.last_seen = now;
                self.version += u64::from(moved);
                moved
            }
            None => {
                self.entries.insert(fdb_key(vid, mac), FdbEntry { port, last_seen: now, is_static: false });
                self.version += 1;
                true
            }
        }
    }

    /// What [`Fdb::learn`] does when it changes nothing but the entry's age: refreshes a dynamic entry
    /// already on `port` (a static entry is left alone) and returns true; returns false, changing
    /// nothing, when learning would add or move an entry.
    pub fn refresh(&mut self, vid: u16, mac: EthernetAddress, port: PortId, now: Instant) -> bool {
        match self.entries.get_mut(&fdb_key(vid, mac)) {
            Some(e) if e.is_static => true,
            Some(e) if e.port == port => {
                e.last_seen = now;
                true
            }
            _ => false,
        }
    }

    pub fn insert_static(&mut self, vid: u16, mac: EthernetAddress, port: PortId) {
        self.entries.insert(fdb_key(vid, mac), FdbEntry { port, last_seen: Instant::ZERO, is_static: true });
        self.version += 1;
    }

    /// Removes dynamic entries idle for `aging` or longer; returns them.
    pub fn age(&mut self, now: Instant, aging: Nanos) -> Vec<(u16, EthernetAddress)> {
        let mut aged = Vec::new();
        self.entries.retain(|&key, e| {
            let keep = e.is_static || now.saturating_since(e.last_seen) < aging;
            if !keep {
                aged.push(fdb_pair(key));
            }
            keep
        });
        self.version += u64::from(!aged.is_empty());
        aged.sort();
        aged
    }

    /// Removes dynamic entries (all, or those of one VLAN / port); returns how many.
    pub fn flush(&mut self, vid: Option<u16>, port: Option<PortId>) -> usize {
        let before = self.entries.len();
        self.entries.retain(|&key, e| {
            let v = fdb_pair(key).0;
            e.is_static || vid.is_some_and(|x| x != v) || port.is_some_and(|p| p != e.port)
        });
        self.version += 1;
        before - self.entries.len()
    }

    /// Copies `old`'s dynamic entries that `port` maps to a port of the new configuration, unless this
    /// table has an entry for the same key (a static entry wins). Used when a configuration is installed.
    /// The version goes on from `old`'s (past it), so that over a switch's life its FDB's version only
    /// grows: the switch's caches stamp entries with a sum of such counts (`switch/nexthop.rs`).
    pub fn adopt_dynamic(&mut self, old: &Fdb, mut port: impl FnMut(u16, &FdbEntry) -> Option<PortId>) {
        for (&key, e) in old.entries.iter().filter(|(_, e)| !e.is_static) {
            if let Some(port) = port(fdb_pair(key).0, e) {
                self.entries.entry(key).or_insert(FdbEntry { port, ..*e });
            }
        }
        self.version += old.version + 1;
    }

    /// Keeps only the entries for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(u16, EthernetAddress, &mut FdbEntry) -> bool) {
        self.entries.retain(|&key, e| {
            let (v, m) = fdb_pair(key);
            keep(v, m, e)
        });
        self.version += 1;
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All entries, sorted by VLAN then MAC.
    pub fn entries(&self) -> Vec<(u16, EthernetAddress, FdbEntry)> {
        let mut all: Vec<_> = self
            .entries
            .iter()
            .map(|(&key, &e)| {
                let (v, m) = fdb_pair(key);
                (v, m, e)
            })
            .collect();
        all.sort_by_key(|&(v, m, _)| (v, m));
        all
    }
}

/// One neighbour (ARP / static) entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neighbor {
    pub mac: EthernetAddress,
    pub rif: RifId,
    pub last_seen: Instant,
    /// Configured in the `NEIGH` table: never ages.
    pub is_static: bool,
}

/// The neighbour table, keyed by IP address.
#[derive(Debug, Clone, Default)]
pub struct Neighbors {
    entries: HashMap<IpAddr, Neighbor>,
    /// As [`Fdb`]'s: counts entries added, changed or removed, not refreshes.
    version: u64,
}

impl Neighbors {
    /// Changes with every entry added, changed (MAC or interface) or removed, not with a refresh.
    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn lookup(&self, ip: IpAddr) -> Option<&Neighbor> {
        self.entries.get(&ip)
    }

    /// Learns or refreshes a dynamic entry (a static entry wins). Returns true if the entry is new or its
    /// MAC changed.
    pub fn learn(&mut self, ip: IpAddr, mac: EthernetAddress, rif: RifId, now: Instant) -> bool {
        match self.entries.get_mut(&ip) {
            Some(n) if n.is_static => false,
            Some(n) => {
                let changed = n.mac != mac || n.rif != rif;
                *n = Neighbor { mac, rif, last_seen: now, is_static: false };
                self.version += u64::from(changed);
                changed
            }
            None => {
                self.entries.insert(ip, Neighbor { mac, rif, last_seen: now, is_static: false });
                self.version += 1;
                true
            }
        }
    }

    pub fn insert_static(&mut self, ip: IpAddr, mac: EthernetAddress, rif: RifId) {
        self.entries.insert(ip, Neighbor { mac, rif, last_seen: Instant::ZERO, is_static: true });
        self.version += 1;
    }

    /// Removes dynamic entries idle for `aging` or longer; returns their addresses.
    pub fn age(&mut self, now: Instant, aging: Nanos) -> Vec<IpAddr> {
        let mut aged = Vec::new();
        self.entries.retain(|&ip, n| {
            let keep = n.is_static || now.saturating_since(n.last_seen) < aging;
            if !keep {
                aged.push(ip);
            }
            keep
        });
        self.version += u64::from(!aged.is_empty());
        aged.sort();
        aged
    }

    /// Removes all dynamic entries; returns how many.
    pub fn flush(&mut self) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, n| n.is_static);
        self.version += 1;
        before - self.entries.len()
    }

    /// Copies `old`'s dynamic entries that `rif` maps to an interface of the new configuration, unless
    /// this table has an entry for the same address (a static entry wins); the version goes on from
    /// `old`'s, as [`Fdb::adopt_dynamic`]'s.
    pub fn adopt_dynamic(
        &mut self,
        old: &Neighbors,
        mut rif: impl FnMut(IpAddr, &Neighbor) -> Option<RifId>,
    ) {
        for (&ip, n) in old.entries.iter().filter(|(_, n)| !n.is_static) {
            if let Some(rif) = rif(ip, n) {
                self.entries.entry(ip).or_insert(Neighbor { rif, ..*n });
            }
        }
        // As the FDB's: past `old`'s, so that the version only grows over a switch's life.
        self.version += old.version + 1;
    }

    pub fn retain(&mut self, mut keep: impl FnMut(IpAddr, &mut Neighbor) -> bool) {
        self.entries.retain(|&ip, n| keep(ip, n));
        self.version += 1;
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All entries, sorted by address.
    pub fn entries(&self) -> Vec<(IpAddr, Neighbor)> {
        let mut all: Vec<_> = self.entries.iter().map(|(&ip, &n)| (ip, n)).collect();
        all.sort_by_key(|&(ip, _)| ip);
        all
    }
}

/// What a matching route does with a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteAction {
    /// The switch's own address: trap (ARP/ICMP are the only things it answers).
    Local,
    /// A connected subnet: the destination itself is the next hop, on this interface.
    Connected(RifId),
    /// Static route: one or more next hops (ECMP when several).
    NextHops(Vec<(IpAddr, RifId)>),
    Blackhole,
}

/// Longest-prefix match: one hash table per prefix length present, searched longest first; a table of
/// at most [`FLAT_LPM_ROUTES`] routes (a ToR's usual few) is also kept as one list, longest first, which a
/// lookup scans instead (a masked compare per route costs less than one hash probe per length).
#[derive(Debug, Clone, Default)]
pub struct RouteTable {
    v4: Lpm<u32>,
    v6: Lpm<u128>,
}

/// The most routes of one family looked up by a scan rather than by hashing.
pub const FLAT_LPM_ROUTES: usize = 32;

#[derive(Debug, Clone)]
struct Lpm<K> {
    /// (prefix length, table keyed by masked address), longest first.
    levels: Vec<(u8, HashMap<K, RouteAction>)>,
    /// Every route as (mask, masked prefix, action), longest first, while there are at most
    /// [`FLAT_LPM_ROUTES`]; else empty (and `levels` answers).
    flat: Vec<(K, K, RouteAction)>,
}

impl<K> Default for Lpm<K> {
    fn default() -> Self {
        Lpm { levels: Vec::new(), flat: Vec::new() }
    }
}

trait LpmKey: Copy + Eq + std::hash::Hash + std::ops::BitAnd<Output = Self> {
    const BITS: u8;
    fn masked(self, len: u8) -> Self;
    /// The mask of a prefix length.
    fn mask(len: u8) -> Self;
}

impl LpmKey for u32 {
    const BITS: u8 = 32;
    fn masked(self, len: u8) -> u32 {
        self & Self::mask(len)
    }
    fn mask(len: u8) -> u32 {
        if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) }
    }
}

impl LpmKey for u128 {
    const BITS: u8 = 128;
    fn masked(self, len: u8) -> u128 {
        self & Self::mask(len)
    }
    fn mask(len: u8) -> u128 {
        if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len)) }
    }
}

impl<K: LpmKey> Lpm<K> {
    fn insert(&mut self, addr: K, len: u8, action: RouteAction) {
        debug_assert!(len <= K::BITS);
        let pos = match self.levels.binary_search_by(|(l, _)| len.cmp(l)) {
            Ok(pos) => pos,
            Err(pos) => {
                self.levels.insert(pos, (len, HashMap::default()));
                pos
            }
        };
        self.levels[pos].1.insert(addr.masked(len), action);
        // Distinct prefixes of one length never both match an address, so their order in the list does not
        // matter; the lengths' order does.
        self.flat.clear();
        if self.levels.iter().map(|(_, t)| t.len()).sum::<usize>() <= FLAT_LPM_ROUTES {
            for (len, table) in &self.levels {
                let mask = K::mask(*len);
                self.flat.extend(table.iter().map(|(&prefix, action)| (mask, prefix, action.clone())));
            }
        }
    }

    fn lookup(&self, addr: K) -> Option<&RouteAction> {
        if self.flat.is_empty() {
            return self.lookup_levels(addr);
        }
        let found = self.flat.iter().find(|(mask, prefix, _)| addr & *mask == *prefix).map(|(_, _, a)| a);
        debug_assert_eq!(found, self.lookup_levels(addr), "the flat route list disagrees with the levels");
        found
    }

    fn lookup_levels(&self, addr: K) -> Option<&RouteAction> {
        self.levels.iter().find_map(|(len, table)| table.get(&addr.masked(*len)))
    }
}

impl RouteTable {
    /// The table a configuration gives: its static routes (ECMP next hops, blackholes), then each router
    /// interface's connected subnets and its own addresses (local). On the same prefix connected wins, as
    /// its distance 0 does on a router.
    pub fn for_config(config: &SwitchConfig) -> RouteTable {
        let mut table = RouteTable::default();
        for route in &config.routes {
            let action = if route.blackhole {
                RouteAction::Blackhole
            } else {
                RouteAction::NextHops(route.nexthops.iter().map(|n| (n.ip, n.rif)).collect())
            };
            table.insert(route.prefix, action);
        }
        for (i, rif) in config.interfaces.iter().enumerate() {
            for addr in &rif.addrs {
                table.insert(addr.trunc(), RouteAction::Connected(RifId::new(i)));
                let host = IpNet::new(addr.addr(), addr.max_prefix_len()).expect("max prefix is valid");
                table.insert(host, RouteAction::Local);
            }
        }
        table
    }

    /// Installs a route; a later insert of the same prefix replaces the earlier one.
    pub fn insert(&mut self, prefix: IpNet, action: RouteAction) {
        match prefix {
            IpNet::V4(p) => self.v4.insert(u32::from(p.network()), p.prefix_len(), action),
            IpNet::V6(p) => self.v6.insert(u128::from(p.network()), p.prefix_len(), action),
        }
    }

    pub fn lookup(&self, dst: IpAddr) -> Option<&RouteAction> {
        match dst {
            IpAddr::V4(a) => self.v4.lookup(u32::from(a)),
            IpAddr::V6(a) => self.v6.lookup(u128::from(a)),
        }
    }
}

/// The flow fields ECMP hashes, so that a flow stays on one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub protocol: u8,
    pub src_port: u16,
    pub dst_port: u16,
}

impl FlowKey {
    /// FNV-1a over the 5-tuple and a seed, finished with a 64-bit mix so that nearby tuples spread.
    pub fn hash(&self, seed: u32) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ u64::from(seed);
        let mut eat = |bytes: &[u8]| {
            for &b in bytes {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                eat(&s.octets());
                eat(&d.octets());
            }
            (s, d) => {
                eat(&to_v6(s).octets());
                eat(&to_v6(d).octets());
            }
        }
        eat(&[self.protocol]);
        eat(&self.src_port.to_be_bytes());
        eat(&self.dst_port.to_be_bytes());
        // splitmix64 finaliser
        h ^= h >> 30;
        h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 27;
        h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^ (h >> 31)
    }
}

fn to_v6(a: IpAddr) -> std::net::Ipv6Addr {
    match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNet {
        s.parse().unwrap()
    }

    #[test]
    fn longest_prefix_wins() {
        let mut t = RouteTable::default();
        t.insert(net("0.0.0.0/0"), RouteAction::Blackhole);
        t.insert(net("10.0.0.0/8"), RouteAction::Connected(RifId::new(1)));
        t.insert(net("10.1.0.0/16"), RouteAction::Connected(RifId::new(2)));
        t.insert(net("10.1.2.3/32"), RouteAction::Local);
        t.insert(net("2001:db8::/32"), RouteAction::Connected(RifId::new(3)));
        let look = |s: &str| t.lookup(s.parse().unwrap()).cloned();
        assert_eq!(look("10.1.2.3"), Some(RouteAction::Local));
        assert_eq!(look("10.1.2.4"), Some(RouteAction::Connected(RifId::new(2))));
        assert_eq!(look("10.2.0.1"), Some(RouteAction::Connected(RifId::new(1))));
        assert_eq!(look("192.0.2.1"), Some(RouteAction::Blackhole));
        assert_eq!(look("2001:db8:ffff::1"), Some(RouteAction::Connected(RifId::new(3))));
        assert_eq!(look("2001:db9::1"), None);
    }

    #[test]
    fn the_flat_list_and_the_levels_agree_past_its_size() {
        // Routes 10.n.0.0/16 and 10.n.m.0/24: the table goes past FLAT_LPM_ROUTES part way, after which
        // the levels answer; every lookup is checked against a scan of the routes inserted so far.
        let mut t = RouteTable::default();
        let mut routes: Vec<(IpNet, RouteAction)> = Vec::new();
        for n in 0..8u8 {
            for m in 0..6u8 {
                let prefix =
                    if m == 0 { net(&format!("10.{n}.0.0/16")) } else { net(&format!("10.{n}.{m}.0/24")) };
                let action = RouteAction::Connected(RifId::new(usize::from(n) * 8 + usize::from(m)));
                t.insert(prefix, action.clone());
                routes.push((prefix, action));
                for probe in ["10.0.0.1", "10.0.3.9", "10.3.5.5", "10.7.2.1", "10.9.0.1", "11.0.0.1"] {
                    let ip: IpAddr = probe.parse().unwrap();
                    let expected = routes
                        .iter()
                        .filter(|(p, _)| p.contains(&ip))
                        .max_by_key(|(p, _)| p.prefix_len())
                        .map(|(_, a)| a);
                    assert_eq!(t.lookup(ip), expected, "{probe} with {} routes", routes.len());
                }
            }
        }
        assert!(routes.len() > FLAT_LPM_ROUTES);
    }

    #[test]
    fn fdb_learns_moves_and_ages_but_static_stays() {
        let mac = EthernetAddress([2, 0, 0, 0, 0, 9]);
        let mut fdb = Fdb::default();
        let at = Instant::from_ns;
        assert!(fdb.learn(10, mac, PortId::new(1), at(0)));
        assert!(!fdb.learn(10, mac, PortId::new(1), at(5)));
        assert!(fdb.learn(10, mac, PortId::new(2), at(6)), "a station move is reported");
        fdb.insert_static(10, EthernetAddress([2, 0, 0, 0, 0, 7]), PortId::new(3));
        let aging = Nanos::from_ns(100);
        assert!(fdb.age(at(6 + 99), aging).is_empty());
        assert_eq!(fdb.age(at(6 + 100), aging), vec![(10, mac)]);
        assert_eq!(fdb.len(), 1, "the static entry does not age");
    }

    #[test]
    fn flow_hash_is_stable_and_seeded() {
        let k = FlowKey {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.1.1".parse().unwrap(),
            protocol: 17,
            src_port: 1,
            dst_port: 4791,
        };
        assert_eq!(k.hash(0), k.hash(0));
        assert_ne!(k.hash(0), k.hash(1));
        assert_ne!(k.hash(0), FlowKey { src_port: 2, ..k }.hash(0));
    }
}
