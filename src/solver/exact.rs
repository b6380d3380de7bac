//! An exact sum of `f64`s ([`ExactSum`]): every finite term is added without rounding into a
//! fixed-point integer wide enough for any double (a "superaccumulator"), and rounded once at
//! the end. The result is a function of the multiset of terms only, not of their order or of
//! how they were split into partial sums, so an age's figures are the same bits whether one
//! process summed its states in row order or several processes each summed their own share
//! and the shares were merged ([`ExactSum::merge`]).
//!
//! Written here rather than taken from a crate: the partial sums must travel between the
//! processes of a distributed solve and into its work files ([`ExactSum::limbs`],
//! [`ExactSum::from_limbs`]), which the exact-summation crates do not expose, and the whole
//! is about a hundred lines.

/// Bits a limb holds once carried.
const LIMB_BITS: u32 = 32;
/// The bit of the accumulator that weighs 2^0 is this many bits above its lowest: the
/// smallest subnormal's bit (2^-1074) lands at 14.
const OFFSET: i32 = 1088;
/// Limbs: the largest finite double's top bit lands at 1088 + 1023 = 2111 (limb 65), and a
/// few more take the carries of up to 2^64 terms.
pub const LIMBS: usize = 70;
/// Terms added between carries: each adds less than 2^32 to a limb of 63 bits.
const CARRY_EVERY: u32 = 1 << 30;

/// An exact, order-independent sum of `f64` terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExactSum {
    /// Signed limbs of `LIMB_BITS` bits each (before carrying, any `i64`), least
    /// significant first; limb `j` weighs `2^(32 j - OFFSET)`.
    limbs: [i64; LIMBS],
    /// Terms added since the last carry.
    pending: u32,
    /// Non-finite terms: their IEEE sum (infinities and NaN do not depend on the order in
    /// which they are added, unlike finite rounding).
    special: Option<u8>,
}

/// [`ExactSum::special`]: which non-finite terms came.
const POS_INF: u8 = 1;
const NEG_INF: u8 = 2;
const NAN: u8 = 4;

impl Default for ExactSum {
    fn default() -> ExactSum {
        ExactSum::new()
    }
}

impl ExactSum {
    pub const fn new() -> ExactSum {
        ExactSum {
            limbs: [0; LIMBS],
            pending: 0,
            special: None,
        }
    }

    /// Adds `x`.
    #[inline]
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            let bit = if x.is_nan() {
                NAN
            } else if x > 0.0 {
                POS_INF
            } else {
                NEG_INF
            };
            self.special = Some(self.special.unwrap_or(0) | bit);
            return;
        }
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        if exp == 0 && frac == 0 {
            return;
        }
        // x = m · 2^e with m an integer of at most 53 bits.
        let (m, e) = if exp == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), exp - 1075)
        };
        let pos = (e + OFFSET) as u32;
        let (j, shift) = ((pos / LIMB_BITS) as usize, pos % LIMB_BITS);
        let v = u128::from(m) << shift;
        let mask = (1u128 << LIMB_BITS) - 1;
        let parts = [
            (v & mask) as i64,
            ((v >> LIMB_BITS) & mask) as i64,
            (v >> (2 * LIMB_BITS)) as i64,
        ];
        if x < 0.0 {
            for (i, p) in parts.into_iter().enumerate() {
                self.limbs[j + i] -= p;
            }
        } else {
            for (i, p) in parts.into_iter().enumerate() {
                self.limbs[j + i] += p;
            }
        }
        self.pending += 1;
        if self.pending >= CARRY_EVERY {
            self.carry();
        }
    }

    /// Carries each limb's overflow into the next: limbs below the top in `[0, 2^32)`, the
    /// top one signed. The carried form of a sum is unique.
    fn carry(&mut self) {
        for j in 0..LIMBS - 1 {
            let c = self.limbs[j] >> LIMB_BITS;
            self.limbs[j] -= c << LIMB_BITS;
            self.limbs[j + 1] += c;
        }
        self.pending = 0;
    }

    /// Adds every term of `other` (a partial sum of another share of the terms).
    pub fn merge(&mut self, other: &ExactSum) {
        self.carry();
        let mut o = *other;
        o.carry();
        for (a, b) in self.limbs.iter_mut().zip(o.limbs) {
            *a += b;
        }
        self.special = match (self.special, o.special) {
            (Some(a), Some(b)) => Some(a | b),
            (a, b) => a.or(b),
        };
        self.carry();
    }

    /// The carried limbs, to be sent or saved ([`ExactSum::from_limbs`] reads them back).
    pub fn limbs(&self) -> Vec<i64> {
        let mut c = *self;
        c.carry();
        let mut out = c.limbs.to_vec();
        out.push(i64::from(c.special.map_or(-1, i16::from)));
        out
    }

    /// The sum whose [`ExactSum::limbs`] are `limbs`; `None` if they are not such limbs.
    pub fn from_limbs(limbs: &[i64]) -> Option<ExactSum> {
        if limbs.len() != LIMBS + 1 {
            return None;
        }
        let special = match limbs[LIMBS] {
            -1 => None,
            s @ 0..=7 => Some(s as u8),
            _ => return None,
        };
        let mut sum = ExactSum {
            limbs: [0; LIMBS],
            pending: 0,
            special,
        };
        sum.limbs.copy_from_slice(&limbs[..LIMBS]);
        if sum.limbs[..LIMBS - 1]
            .iter()
            .any(|&l| !(0..1i64 << LIMB_BITS).contains(&l))
        {
            return None;
        }
        Some(sum)
    }

    /// The sum rounded to the nearest `f64` (ties to even); +0 for no term or an exact zero.
    pub fn value(&self) -> f64 {
        if let Some(s) = self.special {
            return if s & NAN != 0 || s == POS_INF | NEG_INF {
                f64::NAN
            } else if s == POS_INF {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            };
        }
        let mut c = *self;
        c.carry();
        let negative = c.limbs[LIMBS - 1] < 0;
        if negative {
            for l in c.limbs.iter_mut() {
                *l = -*l;
            }
            c.carry();
        }
        let Some(top) = c.limbs.iter().rposition(|&l| l != 0) else {
            return 0.0;
        };
        // The top four limbs (at least 97 significant bits) exactly, the rest as a sticky
        // bit below them: then one conversion rounds as the whole would.
        let low = top.saturating_sub(3);
        let mut head: u128 = 0;
        for j in (low..=top).rev() {
            head = (head << LIMB_BITS) | c.limbs[j] as u128;
        }
        if c.limbs[..low].iter().any(|&l| l != 0) {
            head |= 1;
        }
        let scale = LIMB_BITS as i32 * low as i32 - OFFSET;
        // 2^scale in two exact steps (2^-1088 alone is below the smallest double).
        let half = scale / 2;
        let x = head as f64 * 2f64.powi(half) * 2f64.powi(scale - half);
        if negative {
            -x
        } else {
            x
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    fn sum_of(xs: &[f64]) -> ExactSum {
        let mut s = ExactSum::new();
        xs.iter().for_each(|&x| s.add(x));
        s
    }

    #[test]
    fn exact_where_plain_sums_round() {
        assert_eq!(sum_of(&[1e100, 1.0, -1e100]).value(), 1.0);
        // 0.1 + 0.2 + 0.3 is 0.6000000000000001 summed left to right; exactly, nearest 0.6.
        assert_eq!(sum_of(&[0.1, 0.2, 0.3]).value(), 0.6);
        assert_eq!(sum_of(&[]).value().to_bits(), 0.0f64.to_bits());
        assert_eq!(sum_of(&[-0.0]).value().to_bits(), 0.0f64.to_bits());
        assert_eq!(sum_of(&[3.0, -5.5]).value(), -2.5);
        assert_eq!(sum_of(&[f64::MAX, f64::MAX, -f64::MAX]).value(), f64::MAX);
        let tiny = f64::from_bits(1);
        assert_eq!(sum_of(&[tiny, tiny, tiny]).value(), 3.0 * tiny);
        assert_eq!(sum_of(&[1.0, f64::INFINITY]).value(), f64::INFINITY);
        assert!(sum_of(&[f64::NEG_INFINITY, f64::INFINITY]).value().is_nan());
        // Ties: 2^53 + 1 is halfway between two doubles and rounds to even; a term far
        // below breaks the tie upwards.
        let big = 2f64.powi(53);
        assert_eq!(sum_of(&[big, 1.0]).value(), big);
        assert_eq!(sum_of(&[big, 1.0, 2f64.powi(-60)]).value(), big + 2.0);
    }

    #[test]
    fn the_same_bits_in_any_order_and_any_shares() {
        let mut next = xorshift(0x9e37_79b9);
        let xs: Vec<f64> = (0..5000)
            .map(|i| {
                let m = (next() % 2_000_000) as f64 / 997.0 - 1000.0;
                m * 2f64.powi((i % 40) - 20)
            })
            .collect();
        let whole = sum_of(&xs);
        let naive: f64 = xs.iter().sum();
        assert!((whole.value() - naive).abs() <= 1e-9 * naive.abs().max(1.0));
        let mut reversed = xs.clone();
        reversed.reverse();
        assert_eq!(sum_of(&reversed).value().to_bits(), whole.value().to_bits());
        for shares in [2usize, 3, 7] {
            let mut merged = ExactSum::new();
            for r in 0..shares {
                let part: Vec<f64> = xs.iter().skip(r).step_by(shares).copied().collect();
                let s = sum_of(&part);
                let back = ExactSum::from_limbs(&s.limbs()).unwrap();
                merged.merge(&back);
            }
            assert_eq!(merged.value().to_bits(), whole.value().to_bits());
            assert_eq!(merged.limbs(), whole.limbs());
        }
        assert!(ExactSum::from_limbs(&[0; 3]).is_none());
        let mut bad = whole.limbs();
        bad[0] = -1;
        assert!(ExactSum::from_limbs(&bad).is_none());
    }
}
