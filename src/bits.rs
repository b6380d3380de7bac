//! Branch-free tricks over the bytes of a word, for the rooms that read board codes (`rules`
//! and `index`, which import no other room): a code's nibbles spread into bytes, bytes
//! compared pairwise, a word's bytes folded to the largest. Imports nothing.

/// The low nibble of every byte: `code & LOW` holds a code's even cells, one a byte, and
/// `(code >> 4) & LOW` its odd cells.
pub const LOW: u64 = 0x0F0F_0F0F_0F0F_0F0F;

/// The larger of each pair of bytes of `a` and `b`, every byte of both under 128: a byte of
/// `(a | 0x80…) − b` is `128 + a − b`, which keeps its top bit exactly when `a ≥ b` and never
/// borrows from the next byte.
#[inline(always)]
pub fn byte_max(a: u64, b: u64) -> u64 {
    const TOP: u64 = 0x8080_8080_8080_8080;
    debug_assert!((a | b) & TOP == 0, "bytes under 128");
    let a_ge = (((a | TOP) - b) & TOP) >> 7;
    let mask = a_ge * 0xFF;
    (a & mask) | (b & !mask)
}

/// The largest byte of `m` (every byte under 128): its halves folded by [`byte_max`], then
/// their halves, then theirs.
#[inline(always)]
pub fn max_byte(m: u64) -> u8 {
    let m = byte_max(m, m >> 32);
    let m = byte_max(m, m >> 16);
    (byte_max(m, m >> 8) & 0xFF) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_max_and_max_byte_are_the_bytewise_and_the_whole_maximum() {
        // Seeded words of bytes under 128, against a byte-by-byte loop.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x & 0x7F7F_7F7F_7F7F_7F7F
        };
        for _ in 0..10_000 {
            let (a, b) = (next(), next());
            let (ab, bb, mb) = (
                a.to_le_bytes(),
                b.to_le_bytes(),
                byte_max(a, b).to_le_bytes(),
            );
            for j in 0..8 {
                assert_eq!(mb[j], ab[j].max(bb[j]), "{a:#x} {b:#x} byte {j}");
            }
            assert_eq!(max_byte(a), *ab.iter().max().unwrap(), "{a:#x}");
        }
    }
}
