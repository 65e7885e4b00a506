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

/// Whether a 20-byte IPv4 header (no options) has a valid checksum: its one's-complement sum folds to
/// 0xffff. The per-packet check of the switch's fast paths, in about fifteen instructions.
///
/// Why this equals folding the sum of its 16-bit big-endian words: 2^16 ≡ 1 (mod 0xffff), so a 32- or
/// 64-bit word is congruent to the sum of its 16-bit words, and so is the sum S of the header's words
/// of any width. Folding with end-around carries gives the representative of S mod 0xffff in 1..=0xffff
/// when S > 0 (0 only when S = 0), so it is 0xffff exactly when S is a non-zero multiple of 0xffff.
/// Byte order does not matter (RFC 1071 §2(B)): a byte-swapped 16-bit word is 256 times the word mod
/// 0xffff, 256 is invertible mod 0xffff, so the words are read in native order (no byte swaps); a
/// header is all zeros in either order or in neither.
#[inline]
pub fn ipv4_header_ok(header: &[u8; 20]) -> bool {
    // Two 64-bit words and a 32-bit one, added with end-around carries: 2^64 ≡ 1 (mod 0xffff) too, and
    // the sum is 0 only when every word is.
    let (a, b) = header.split_first_chunk::<8>().expect("20 bytes");
    let (b, c) = b.split_first_chunk::<8>().expect("12 bytes");
    let c: &[u8; 4] = c.try_into().expect("4 bytes");
    let (sum, carry) = u64::from_ne_bytes(*a).overflowing_add(u64::from_ne_bytes(*b));
    let (sum, carry2) = (sum + u64::from(carry)).overflowing_add(u64::from(u32::from_ne_bytes(*c)));
    let sum = sum + u64::from(carry2);
    // A non-zero multiple of 0xffff: 0xffff is odd, so multiplying by its inverse modulo 2^64 maps the
    // multiples 0, 1·0xffff, 2·0xffff, ... onto 0, 1, 2, ... (their quotients) and every other value
    // above u64::MAX / 0xffff (Granlund and Montgomery's divisibility test): one multiplication and one
    // comparison, the zero sum excluded by the subtraction.
    const INVERSE: u64 = 0xfffe_fffe_fffe_ffff;
    const _: () = assert!(INVERSE.wrapping_mul(0xffff) == 1);
    let ok = sum.wrapping_mul(INVERSE).wrapping_sub(1) < u64::MAX / 0xffff;
    debug_assert_eq!(
        ok,
        self::sum(header) == 0xffff,
        "the fixed-size checksum check disagrees with the fold"
    );
    ok
}

/// The checksum field, in native byte order (as `u16::from_ne_bytes` of its two bytes), after the TTL of
/// an IPv4 header drops by one: RFC 1624 eqn. 3 with the TTL/protocol word m' = m − 0x0100, so that
/// ~m + m' is the constant 0xfeff and one end-around carry suffices (~HC + 0xfeff ≤ 0x1fefe). The same
/// result as [`update`] (the one's-complement sum commutes with swapping the bytes of every operand),
/// without byte swaps. The TTL must be positive.
#[inline]
pub fn ttl_decremented_ne(checksum_ne: u16) -> u16 {
    // 0xfeff as it lies in memory, read in native order (0xfffe on a little-endian machine).
    let acc = u32::from(!checksum_ne) + u32::from(u16::from_ne_bytes([0xfe, 0xff]));
    !(((acc & 0xffff) + (acc >> 16)) as u16)
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

        /// The fixed-size check agrees with folding the header's 16-bit words (the definition), on
        /// headers of which a third are given a valid checksum and some are all zeros.
        #[test]
        fn ipv4_header_ok_matches_the_fold(mut header in proptest::array::uniform20(any::<u8>()), fix in 0u8..3) {
            match fix {
                0 => {}
                1 => {
                    header[10..12].fill(0);
                    let sum = checksum(&header);
                    header[10..12].copy_from_slice(&sum.to_be_bytes());
                }
                _ => header = [0; 20],
            }
            prop_assert_eq!(ipv4_header_ok(&header), sum(&header) == 0xffff);
        }

        /// The TTL's one-carry update is RFC 1624's `update` for every checksum and TTL/protocol word
        /// with a positive TTL, in memory order.
        #[test]
        fn ttl_update_matches_rfc1624(hc in any::<u16>(), ttl in 1u8..=255, protocol in any::<u8>()) {
            let old = u16::from_be_bytes([ttl, protocol]);
            let expected = update(hc, old, old - 0x0100);
            let got = ttl_decremented_ne(u16::from_ne_bytes(hc.to_be_bytes()));
            prop_assert_eq!(got.to_ne_bytes(), expected.to_be_bytes());
        }
    }
}
