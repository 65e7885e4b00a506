//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624, eqn. 3).
//!
//! The incremental form is what the dataplane uses when it rewrites a field of an IPv4 header in place
//! (TTL decrement, DSCP/ECN rewrite): `HC' = ~(~HC + ~m + m')`, which stays correct for the 0x0000/0xFFFF
//! corner case that the older RFC 1141 form gets wrong.

/// One's-complement sum of `data` as big-endian 16-bit words (odd length padded with a zero byte), folded.
pub fn sum(data: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    fold(acc)
}

/// Folds a 32-bit accumulator of 16-bit words into a 16-bit one's-complement sum.
pub fn fold(acc: u32) -> u16 {
    // Two end-around carries always suffice: the first leaves at most 0xffff + 0xffff = 0x1fffe, the
    // second at most 0xfffe + 1. (A fold of a value already below 0x10000 changes nothing.)
    let acc = (acc & 0xffff) + (acc >> 16);
    ((acc & 0xffff) + (acc >> 16)) as u16
}

/// Adds several partial one's-complement sums.
pub fn combine(sums: &[u16]) -> u16 {
    fold(sums.iter().map(|&s| u32::from(s)).sum())
}

/// The checksum field value for `data` (the data must contain the checksum field zeroed).
pub fn checksum(data: &[u8]) -> u16 {
    !sum(data)
}

/// RFC 1624 incremental update: the new checksum after one 16-bit word changed from `old` to `new`.
pub fn update(checksum: u16, old: u16, new: u16) -> u16 {
    !fold(u32::from(!checksum) + u32::from(!old) + u32::from(new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // RFC 1071 §3 example: the words 0001 f203 f4f5 f6f7 sum to ddf2.
    #[test]
    fn rfc1071_example() {
        assert_eq!(sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), 0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(sum(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    // RFC 1624 §4: HC = 0xDD2F, m = 0x5555 -> m' = 0x3285 gives HC' = 0x0000 (the old form gives 0xFFFF).
    #[test]
    fn rfc1624_corner_case() {
        assert_eq!(update(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    proptest! {
        /// The two-step fold equals end-around carries repeated until the sum fits 16 bits.
        #[test]
        fn fold_matches_repeated_carries(acc in any::<u32>()) {
            let mut expected = acc;
            while expected > 0xffff {
                expected = (expected & 0xffff) + (expected >> 16);
            }
            prop_assert_eq!(fold(acc), expected as u16);
        }

        #[test]
        fn incremental_matches_full(mut data in proptest::collection::vec(any::<u8>(), 2..64), word in 0usize..32, new in any::<u16>()) {
            if data.len() % 2 == 1 { data.push(0); }
            let i = (word % (data.len() / 2)) * 2;
            let before = checksum(&data);
            let old = u16::from_be_bytes([data[i], data[i + 1]]);
            data[i..i + 2].copy_from_slice(&new.to_be_bytes());
            let after = checksum(&data);
            let incremental = update(before, old, new);
            // One's complement has two zeros; both verify identically.
            prop_assert!(incremental == after || (incremental ^ after) == 0xffff && (after == 0 || after == 0xffff));
        }
    }
}
