//! Value parsers (each returns the message naming the value and the rule it breaks) and the lookups
//! of names other tables refer to.

use super::*;

/// A decimal integer in `lo..=hi`, digits only (no sign, no spaces); `what` names it for the message.
pub(super) fn parse_number<T>(text: &str, what: &str, lo: T, hi: T) -> Result<T, String>
where
    T: Copy + Into<u64> + TryFrom<u64>,
{
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not {what}"));
    }
    let (lo, hi) = (lo.into(), hi.into());
    let in_range = text.parse::<u64>().ok().filter(|n| (lo..=hi).contains(n));
    in_range.and_then(|n| T::try_from(n).ok()).ok_or_else(|| format!("{text} is outside {lo}..{hi}"))
}

/// A number of bytes (sizes, thresholds).
pub(super) fn parse_bytes(text: &str) -> Result<u64, String> {
    parse_number(text, "a number of bytes", 0, u64::MAX)
}

/// `dynamic_th`: the alpha exponent n (alpha = 2^n), -8..=7.
pub fn parse_dynamic_th(text: &str) -> Result<i8, String> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not a dynamic_th (an integer -8..7)"));
    }
    let in_range = text.parse::<i64>().ok().filter(|n| (-8..=7).contains(n));
    in_range.and_then(|n| i8::try_from(n).ok()).ok_or_else(|| format!("{text} is outside -8..7"))
}

/// The index part of a `BUFFER_PG`, `BUFFER_QUEUE` or `QUEUE` key: `3` or the inclusive range `3-4`, in 0..7.
pub(super) fn parse_index_range(text: &str, what: &str) -> Result<std::ops::RangeInclusive<usize>, String> {
    let (lo, hi) = text.split_once('-').unwrap_or((text, text));
    let bound = |part: &str| {
        parse_number(part, what, 0u8, 7)
            .map(usize::from)
            .map_err(|_| format!("{text:?} is not a {what} 0..7 or a range of them (3-4)"))
    };
    let (lo, hi) = (bound(lo)?, bound(hi)?);
    if lo > hi {
        return Err(format!("{text:?} is an empty range ({lo} > {hi})"));
    }
    Ok(lo..=hi)
}

/// `lanes`: SerDes lane numbers joined with commas (`"65,66,67,68"`); the first one places the port in a
/// pipe. Empty: none.
pub(super) fn parse_lanes(text: &str) -> Result<Option<u32>, String> {
    let mut first = None;
    for lane in text.split(',').filter(|l| !l.is_empty()) {
        let lane = parse_number(lane.trim(), "a lane number", 0, 65535)
            .map_err(|_| format!("{text:?} is not a list of lane numbers (65,66,67,68)"))?;
        first.get_or_insert(lane);
    }
    Ok(first)
}

pub(super) fn parse_aging_secs(text: &str) -> Result<u64, String> {
    parse_number(text, "a number of seconds", 0, MAX_AGING_SECS)
}

pub(super) fn parse_dscp(text: &str) -> Result<u8, String> {
    parse_number(text, "a DSCP", 0, 63)
}

/// One of a fixed set of words.
pub(super) fn parse_keyword<T: Copy>(text: &str, choices: &[(&str, T)]) -> Result<T, String> {
    choices.iter().find(|(word, _)| *word == text).map(|&(_, value)| value).ok_or_else(|| {
        let words: Vec<&str> = choices.iter().map(|(word, _)| *word).collect();
        format!("{text:?} is not one of {}", words.join(", "))
    })
}

pub(super) fn parse_bool(text: &str) -> Result<bool, String> {
    parse_keyword(text, &[("true", true), ("false", false)])
}

/// A unicast, non-zero MAC address (`aa:bb:cc:dd:ee:ff`).
pub(super) fn parse_unicast_mac(text: &str) -> Result<EthernetAddress, String> {
    let mac: EthernetAddress =
        text.parse().map_err(|_| format!("{text:?} is not a MAC address (aa:bb:cc:dd:ee:ff)"))?;
    if mac.is_multicast() {
        Err(format!("{text} is a multicast MAC address; a unicast one is required"))
    } else if mac == EthernetAddress::default() {
        Err(format!("{text} is the all-zero MAC address"))
    } else {
        Ok(mac)
    }
}

pub(super) fn parse_ip(text: &str) -> Result<IpAddr, String> {
    text.parse().map_err(|_| format!("{text:?} is not an IP address"))
}

/// An interface's own address with its subnet length (`10.0.0.1/31`); host bits are the address.
pub(super) fn parse_interface_addr(text: &str) -> Result<IpNet, String> {
    text.parse().map_err(|_| format!("{text:?} is not an address with a prefix length (10.0.0.1/31)"))
}

pub(super) fn parse_prefix(text: &str) -> Result<IpNet, String> {
    text.parse().map_err(|_| format!("{text:?} is not an IP prefix (10.1.0.0/16)"))
}

/// `Vlan<id>`, id 1..4094 without leading zeros.
pub(super) fn parse_vlan_name(name: &str) -> Result<u16, String> {
    name.strip_prefix("Vlan")
        .filter(|id| !id.starts_with('0'))
        .and_then(|id| parse_number(id, "a VLAN ID", 1, 4094).ok())
        .ok_or_else(|| format!("{name:?} is not a VLAN name (Vlan followed by a VLAN ID 1..4094)"))
}

/// Port names are keys elsewhere, joined with `|` and `,`: they cannot contain either.
pub(super) fn check_port_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains(['|', ',']) {
        Err(format!("{name:?} is not a port name (non-empty, without '|' or ',')"))
    } else {
        Ok(())
    }
}

/// A reference to an entry of `table`, written `name` or (before SONiC 202111) `[TABLE|name]`.
pub fn parse_ref<'v>(table: &str, value: &'v str) -> Result<&'v str, String> {
    let name = match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        None => value,
        Some(inner) => match inner.split_once('|') {
            Some((t, name)) if t == table => name,
            Some((t, _)) => return Err(format!("{value:?} refers to {t}, not to {table}")),
            None => return Err(format!("{value:?} is not a reference ([{table}|name] or name)")),
        },
    };
    if name.is_empty() { Err(format!("{value:?} names no {table} entry")) } else { Ok(name) }
}

/// `pfc_enable` and `pfcwd_sw_enable`: a comma list of priorities 0..7 (or nothing), as a bit mask.
pub(super) fn parse_priority_list(text: &str) -> Result<u8, String> {
    if text.is_empty() {
        return Ok(0);
    }
    text.split(',').try_fold(0u8, |mask, item| {
        let priority: u8 = parse_number(item, "a priority", 0, 7)
            .map_err(|_| format!("{text:?} is not a list of priorities 0..7 ({item:?} is not one)"))?;
        Ok(mask | 1 << priority)
    })
}

/// `Ethernet0` or `Ethernet0|10.0.0.1/31` (also for `Vlan100|...`).
pub(super) fn split_interface_key(key: &str) -> (&str, Option<&str>) {
    match key.split_once('|') {
        Some((name, addr)) => (name, Some(addr)),
        None => (key, None),
    }
}

pub(super) fn overlaps(a: IpNet, b: IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

pub(super) fn find_port(ports: &PortMap, name: &str) -> Result<PortId, String> {
    ports.get(name).copied().ok_or_else(|| format!("{name:?} is not a port (there is no PORT|{name})"))
}

pub(super) fn find_vlan(vlans: &Vlans, name: &str) -> Result<u16, String> {
    let vid = parse_vlan_name(name)?;
    if vlans.by_vid.contains_key(&vid) {
        Ok(vid)
    } else {
        Err(format!("{name:?} is not a VLAN (there is no VLAN|{name})"))
    }
}

pub(super) fn find_rif(rifs: &RifMap, name: &str) -> Result<RifId, String> {
    rifs.get(name).copied().ok_or_else(|| {
        format!("{name:?} is not a router interface (no INTERFACE or VLAN_INTERFACE entry names it)")
    })
}

/// Resolves one next hop to its interface: the one named, else the one whose subnet contains it.
/// The error names the field it is about.
pub(super) fn resolve_next_hop(
    ip_text: &str,
    ifname: Option<&str>,
    prefix: IpNet,
    rifs: &[RouterInterface],
    rif_map: &RifMap,
) -> Result<NextHop, (&'static str, String)> {
    let ip = parse_ip(ip_text).map_err(|message| ("nexthop", message))?;
    if Family::of(ip) != Family::of(prefix.addr()) {
        return Err(("nexthop", format!("next hop {ip} is not of the family of {prefix}")));
    }
    let rif = match ifname {
        Some(name) => find_rif(rif_map, name).map_err(|message| ("ifname", message))?,
        None => rifs
            .iter()
            .position(|rif| rif.addrs.iter().any(|net| net.contains(&ip)))
            .map(RifId::new)
            .ok_or_else(|| ("nexthop", format!("next hop {ip} is on no connected subnet")))?,
    };
    Ok(NextHop { ip, rif })
}
