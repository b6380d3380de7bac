//! Words of a little-endian byte slice, and selection inside one word: the position of the
//! k-th one of a `u64` by Vigna's broadword algorithm ("Broadword implementation of rank/select
//! queries", WEA 2008) with a byte look-up table.

pub(crate) type Word = [u8; 8];

/// The whole 8-byte words of `bytes`; a trailing partial word is ignored (readers reject
/// lengths that are not multiples of 8 before getting here).
#[inline]
pub(crate) fn words_of(bytes: &[u8]) -> &[Word] {
    bytes.as_chunks::<8>().0
}

/// Reads word `i`, or 0 past the end: structures are validated on load, so the fallback
/// only exists to make hostile input harmless instead of a panic.
#[inline(always)]
pub(crate) fn rd(words: &[Word], i: usize) -> u64 {
    match words.get(i) {
        Some(w) => u64::from_le_bytes(*w),
        None => 0,
    }
}

/// `SELECT_IN_BYTE[k << 8 | b]` = position of the k-th (0-based) one of byte `b` (8 if
/// there is none).
const SELECT_IN_BYTE: [u8; 2048] = {
    let mut t = [8u8; 2048];
    let mut k = 0;
    while k < 8 {
        let mut b = 0;
        while b < 256 {
            let mut seen = 0;
            let mut p = 0;
            while p < 8 {
                if (b >> p) & 1 == 1 {
                    if seen == k {
                        t[(k << 8) | b] = p as u8;
                        break;
                    }
                    seen += 1;
                }
                p += 1;
            }
            b += 1;
        }
        k += 1;
    }
    t
};

/// Position of the `k`-th (0-based) one of `x`; requires `k < x.count_ones()`.
#[inline]
pub(crate) fn select_in_word(x: u64, k: u32) -> u32 {
    const L8: u64 = 0x0101_0101_0101_0101;
    const H8: u64 = 0x8080_8080_8080_8080;
    debug_assert!(k < x.count_ones());
    let mut s = x - ((x >> 1) & 0x5555_5555_5555_5555);
    s = (s & 0x3333_3333_3333_3333) + ((s >> 2) & 0x3333_3333_3333_3333);
    s = (s + (s >> 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Byte j of `cum` is the number of ones in bytes 0..=j (at most 64, so no carries).
    let cum = s.wrapping_mul(L8);
    // Byte j has its top bit set iff k >= cum_j, i.e. the wanted one lies beyond byte j;
    // bytes are ≤ 0xBF and ≥ 0, so the subtraction never borrows across bytes.
    let beyond = ((((k as u64) * L8) | H8) - cum) & H8;
    let place = beyond.count_ones() * 8;
    let before = ((cum << 8) >> place) & 0xff;
    let byte = (x >> place) & 0xff;
    place + SELECT_IN_BYTE[(byte | ((k as u64 - before) << 8)) as usize] as u32
}
