//! Rigorous arithmetic (Slizkov, "Computational bounds for the 2048 game", §3 and appendix
//! A.3): a goal variant's values as integers `q` standing for `q·2^-F`, every step rounding
//! down, so that every value is a proved lower bound on the chance (or expected discount) it
//! stands for.
//!
//! - A probability (of a 2, of a 4) and the discount γ are `floor(p·2^F)`, `p` read as the
//!   decimal the variant's name writes (`p4=0.1` is one tenth, not the f64 nearest it), so
//!   the integer is at most the probability of the game meant. `p2 = 1 - p4` exactly.
//! - An afterstate: `Σ over its empty cells of p2·q(cell←2) + p4·q(cell←4)`, summed exactly
//!   in integers, divided by `2^F` times the number of empty cells and rounded down once.
//! - A move under a discount: `floor(γ·q / 2^F)`; the max over moves is exact; a win is
//!   `2^F` (1), a loss 0. The values at the starts are made by the same steps: two spawns on
//!   the empty board (the initial distribution), a floored mean (the distinct starts).
//!
//! Each step's result is at most the exact value of what it computes from values that are at
//! most the exact ones, so by induction over ages every value is a lower bound. Sums are of
//! integers, so neither the order of the cells nor the split of a solve over processes changes
//! a bit.
//!
//! How far below: a spawn step loses less than one unit (`2^-F`) to its floor and less than
//! one to each probability's (a value is at most 1), a discounted move less than two more
//! (γ's floor and the product's). A state whose game can last `s` more spawns (`s ≤ (m − a)/2`
//! at age `a` of a solve whose largest age is `m`) is within [`Grid::loss`]`(s)` of its exact
//! value: `3·s` units, `5·s` discounted.
//!
//! Values are held and stored as the f64 `q·2^-F`, which holds them exactly (`q ≤ 2^53`):
//! tables, Parquet, indexes and every reader work unchanged. Two grids:
//! - `u32`: F = 32, Slizkov's `uint32_t` (a probability times 2^32).
//! - `u53`: F = 53, the finest grid whose every value an f64 holds exactly. It stands where
//!   his `uint64_t` would: 2^-64 steps would not fit the f64 value column every reader reads,
//!   and the 11 bits more would lie below the f64 solve's own rounding (`2^-53` a step), so
//!   the bound would not tell the two apart any better. Its products (≤ 2^106) and sums are
//!   made in u128.

/// The arithmetic a variant's values are made in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arithmetic {
    /// Floating point, rounded to nearest (every variant but a rigorous one).
    #[default]
    F64,
    /// Fixed point at 2^-32, rounded down.
    U32,
    /// Fixed point at 2^-53, rounded down.
    U53,
}

impl Arithmetic {
    /// The rigorous arithmetics, as variant names end with them (`goal-512-u32`).
    pub const RIGOROUS: [Arithmetic; 2] = [Arithmetic::U32, Arithmetic::U53];

    /// `f64`, `u32` or `u53`: a variant name's suffix (after `-`) and the manifest's field.
    pub fn name(self) -> &'static str {
        match self {
            Arithmetic::F64 => "f64",
            Arithmetic::U32 => "u32",
            Arithmetic::U53 => "u53",
        }
    }

    /// [`Arithmetic::name`] read back.
    pub fn from_name(name: &str) -> Option<Arithmetic> {
        [Arithmetic::F64, Arithmetic::U32, Arithmetic::U53]
            .into_iter()
            .find(|a| a.name() == name)
    }

    /// The grid of a rigorous arithmetic (`None` in f64).
    pub fn grid(self) -> Option<Grid> {
        match self {
            Arithmetic::F64 => None,
            Arithmetic::U32 => Some(Grid { bits: 32 }),
            Arithmetic::U53 => Some(Grid { bits: 53 }),
        }
    }

    /// One line saying what the values are, for people.
    pub fn describe(self) -> String {
        match self.grid() {
            None => "f64 (rounded to nearest)".into(),
            Some(g) => format!(
                "{}: integers times 2^-{}, every step rounded down",
                self.name(),
                g.bits
            ),
        }
    }
}

/// Fixed point at `2^-bits`, rounded down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    bits: u32,
}

impl Grid {
    pub fn bits(self) -> u32 {
        self.bits
    }

    /// The integer of 1.
    pub fn one(self) -> u64 {
        1 << self.bits
    }

    /// The integer of `v`, a value on the grid (exact: a power of two scales it).
    #[inline(always)]
    pub fn code(self, v: f64) -> u64 {
        let x = v * self.one() as f64;
        debug_assert!(
            x >= 0.0 && x <= self.one() as f64 && x.fract() == 0.0,
            "{v} is not a value on the grid of 2^-{}",
            self.bits
        );
        x as u64
    }

    /// The value of the integer `q` (exact: `q ≤ 2^53`).
    #[inline(always)]
    pub fn value(self, q: u64) -> f64 {
        q as f64 / self.one() as f64
    }

    /// `floor(d·2^bits)` for the decimal `d` in [0, 1] that `x`'s shortest text writes (the
    /// text a variant's name holds), and the same for `1 − d`.
    pub fn decimal(self, x: f64) -> (u64, u64) {
        debug_assert!((0.0..=1.0).contains(&x), "{x} is no probability");
        let text = x.to_string();
        let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
        let frac = frac.trim_end_matches('0');
        if int != "0" || frac.is_empty() {
            // 1, or 0.
            return if int == "0" {
                (0, self.one())
            } else {
                (self.one(), 0)
            };
        }
        let lead = frac.len() - frac.trim_start_matches('0').len();
        if lead >= 17 {
            // Below 10^-17 < 2^-56: floors to 0, and its complement to one unit below 1.
            return (0, self.one() - 1);
        }
        // d = m / 10^k, k ≤ 33 (at most 17 significant digits after the zeros): 10^k < 2^110.
        let k = frac.len() as u32;
        let m: u128 = frac.parse().expect("decimal digits");
        let den = 10u128.pow(k);
        (self.div_floor(m, den), self.div_floor(den - m, den))
    }

    /// `floor(m·2^bits / den)` for `m ≤ den < 2^120`, by long division.
    fn div_floor(self, m: u128, den: u128) -> u64 {
        if m == den {
            return self.one();
        }
        let (mut r, mut q) = (m, 0u64);
        for _ in 0..self.bits {
            r <<= 1;
            q <<= 1;
            if r >= den {
                r -= den;
                q |= 1;
            }
        }
        q
    }

    /// `floor(sum / (2^bits·n))` as a value: the mean over `n` cells of terms summed at
    /// `2^-2·bits`.
    #[inline(always)]
    pub fn mean(self, sum: u128, n: u64) -> f64 {
        self.value((sum / (u128::from(n) << self.bits)) as u64)
    }

    /// `floor(p·v / 2^bits)` as a value, for the integer `p` of a probability.
    #[inline(always)]
    pub fn times(self, p: u64, v: f64) -> f64 {
        self.value(((u128::from(p) * u128::from(self.code(v))) >> self.bits) as u64)
    }

    /// How far below its exact value a rigorous value may be, at most, when the game can last
    /// `spawns` more spawns: `3·spawns` units, `5·spawns` under a discount (the module doc).
    pub fn loss(self, spawns: u64, discounted: bool) -> f64 {
        let per = if discounted { 5 } else { 3 };
        (per * spawns) as f64 / self.one() as f64
    }

    /// `v` in decimal with `digits` digits after the point, rounded down: a text that is
    /// itself a lower bound. `v` is first rounded down onto the grid (a value read back from
    /// a manifest's JSON may be an ulp off it: serde_json's parser is not correctly rounded).
    pub fn floor_text(self, v: f64, digits: u32) -> String {
        let q = (v.max(0.0) * self.one() as f64).floor() as u128;
        let scale = 10u128.pow(digits);
        let x = (q * scale) >> self.bits;
        format!(
            "{}.{:0width$}",
            x / scale,
            x % scale,
            width = digits as usize
        )
    }

    /// Decimal digits that tell one unit of the grid from the next: 10 for u32, 16 for u53.
    pub fn digits(self) -> u32 {
        (f64::from(self.bits) * std::f64::consts::LOG10_2).ceil() as u32
    }
}

/// The integers a rigorous goal variant's steps use, made once from its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rigor {
    pub grid: Grid,
    /// `floor(p2·2^F)`, `floor(p4·2^F)`, `floor(γ·2^F)`.
    pub p2: u64,
    pub p4: u64,
    pub discount: u64,
}

impl Rigor {
    pub fn new(grid: Grid, p4: f64, discount: f64) -> Rigor {
        let (p4, p2) = grid.decimal(p4);
        Rigor {
            grid,
            p2,
            p4,
            discount: grid.decimal(discount).0,
        }
    }

    /// One empty cell's terms, `p2·q(cell←2) + p4·q(cell←4)` at `2^-2F` (`None` where the
    /// tile never spawns).
    #[inline(always)]
    pub fn terms(&self, v2: Option<f64>, v4: Option<f64>) -> u128 {
        let mut s = 0u128;
        if let Some(v) = v2 {
            s += u128::from(self.p2) * u128::from(self.grid.code(v));
        }
        if let Some(v) = v4 {
            s += u128::from(self.p4) * u128::from(self.grid.code(v));
        }
        s
    }

    /// A move's q-value from its afterstate's value: γ times it, rounded down.
    #[inline(always)]
    pub fn discounted(&self, after: f64) -> f64 {
        self.grid.times(self.discount, after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U32: Grid = Grid { bits: 32 };
    const U53: Grid = Grid { bits: 53 };

    #[test]
    fn probabilities_are_floors_of_the_decimals_named() {
        let two32 = 1u64 << 32;
        assert_eq!(U32.decimal(0.1), (two32 / 10, 9 * two32 / 10));
        assert_eq!(U32.decimal(0.25), (two32 / 4, 3 * two32 / 4));
        assert_eq!(U32.decimal(0.0), (0, two32));
        assert_eq!(U32.decimal(1.0), (two32, 0));
        // 0.9 as an f64 is above 9/10; its floor at 2^-53 must not be.
        let two53 = 1u128 << 53;
        assert_eq!(
            U53.decimal(0.1),
            ((two53 / 10) as u64, (9 * two53 / 10) as u64)
        );
        assert!(((0.9f64 * two53 as f64) as u64) > (9 * two53 / 10) as u64);
        assert_eq!(U53.decimal(0.9).0, (9 * two53 / 10) as u64);
        // A tiny probability floors to 0, many digits read whole.
        assert_eq!(U32.decimal(1e-30).0, 0);
        let (a, b) = U53.decimal(0.123456789012345);
        assert_eq!(a + b, U53.one() - 1, "neither is a multiple of 2^-53");
        assert_eq!(
            u128::from(a),
            (123456789012345u128 << 53) / 1_000_000_000_000_000
        );
    }

    #[test]
    fn steps_round_down() {
        let r = Rigor::new(U32, 0.1, 0.9);
        let one = U32.value(U32.one());
        assert_eq!(one, 1.0);
        // Three empty cells, every child won: (p2 + p4)·3 / 3 = 1 - 2^-32.
        let sum: u128 = (0..3).map(|_| r.terms(Some(1.0), Some(1.0))).sum();
        assert_eq!(U32.code(U32.mean(sum, 3)), U32.one() - 1);
        // 1/3 of a win, floored.
        let third = U32.mean(u128::from(U32.one()) << 32, 3);
        assert_eq!(U32.code(third), U32.one() / 3);
        assert!(third < 1.0 / 3.0);
        assert_eq!(r.discounted(1.0), U32.value(r.discount));
        assert!(r.discounted(third) <= 0.9 * third);
        assert_eq!(U32.floor_text(third, 10), "0.3333333332");
        assert_eq!(U32.floor_text(1.0, 4), "1.0000");
        assert_eq!((U32.digits(), U53.digits()), (10, 16));
        for a in [Arithmetic::F64, Arithmetic::U32, Arithmetic::U53] {
            assert_eq!(Arithmetic::from_name(a.name()), Some(a));
        }
    }
}
