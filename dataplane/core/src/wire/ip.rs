//! What IPv4 and IPv6 share: the protocol number space, and the DS field (RFC 2474 DSCP, RFC 3168 ECN).

/// IP protocol / IPv6 next-header numbers this dataplane distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    Icmp,
    Tcp,
    Udp,
    Icmpv6,
    Unknown(u8),
}

impl From<u8> for Protocol {
    fn from(v: u8) -> Self {
        match v {
            1 => Protocol::Icmp,
            6 => Protocol::Tcp,
            17 => Protocol::Udp,
            58 => Protocol::Icmpv6,
            other => Protocol::Unknown(other),
        }
    }
}

impl From<Protocol> for u8 {
    fn from(v: Protocol) -> u8 {
        match v {
            Protocol::Icmp => 1,
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
            Protocol::Icmpv6 => 58,
            Protocol::Unknown(other) => other,
        }
    }
}

/// The two-bit ECN codepoint (RFC 3168 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// 00: the sender does not do ECN; a congested router drops instead of marking.
    NotEct,
    /// 01: ECT(1).
    Ect1,
    /// 10: ECT(0), what RoCEv2 NICs send.
    Ect0,
    /// 11: congestion experienced.
    Ce,
}

impl Ecn {
    /// ECN-capable transport: a congested queue may mark instead of dropping.
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

impl From<u8> for Ecn {
    /// Takes the low two bits.
    fn from(v: u8) -> Self {
        match v & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
}

impl From<Ecn> for u8 {
    fn from(v: Ecn) -> u8 {
        match v {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }
}

/// The highest DSCP value (six bits).
pub const DSCP_MAX: u8 = 63;

/// Splits a DS field / traffic class octet into (DSCP, ECN).
pub fn split_ds(octet: u8) -> (u8, Ecn) {
    (octet >> 2, Ecn::from(octet))
}

/// Joins DSCP (low six bits used) and ECN into a DS field octet.
pub fn join_ds(dscp: u8, ecn: Ecn) -> u8 {
    (dscp & DSCP_MAX) << 2 | u8::from(ecn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ds_field() {
        // DSCP 26 (AF31) with ECT(0): 0b011010_10 = 0x6a.
        assert_eq!(join_ds(26, Ecn::Ect0), 0x6a);
        assert_eq!(split_ds(0x6a), (26, Ecn::Ect0));
        assert_eq!(split_ds(0xff), (63, Ecn::Ce));
        for v in 0..=255u8 {
            let (d, e) = split_ds(v);
            assert_eq!(join_ds(d, e), v);
        }
    }

    #[test]
    fn protocol_numbers_roundtrip() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(Protocol::from(v)), v);
        }
    }
}
