//! Variants: the spawn rule as a parameter of one solver.
//!
//! Every variant keeps the player's step (maximise over valid moves) and changes only how the
//! value of an afterstate is made from the values of the states its spawns lead to:
//!
//! | variant | afterstate value |
//! |---|---|
//! | `expectation` | mean over empty cells of `p2·V(cell←2) + p4·V(cell←4)` |
//! | `optimistic` | `p2·max_cell V(cell←2) + p4·max_cell V(cell←4)` |
//! | `pessimistic` | the same with `min` |
//! | `goal-T` | as `expectation`, no rewards, boards holding a tile ≥ T are worth 1 |
//! | `guaranteed-T` | `min` over cells and over tile values of positive probability; 1/0 |
//!
//! `p4` (default 0.1) is the probability of a 4. At `p4 = 0` or `1` one tile value never
//! appears, which changes the set of reachable boards: [`ForwardClass`] captures everything
//! the forward pass depends on, so variants of one class share one forward pass.
//!
//! A goal variant may be discounted (`discount` γ in (0, 1], default 1): every move multiplies
//! the value by γ, so the q-value of a move is γ times its afterstate's value and the value of
//! a board is E[γ^(moves to make T)] (0 if T is never made). The discount changes no reachable
//! board: `goal-T` and its discounted versions share their forward class.
//!
//! A variant may be restricted ([`Limits`], Slizkov's caps and requirement): a move whose
//! result holds a tile above its cell's cap may not be played unless it wins, and a board
//! holding the requirement is absorbing with value 1, as one holding the goal tile is. The
//! restriction changes the reachable boards, so it is part of the forward class.
//!
//! A goal variant may be rigorous ([`Arithmetic`]): its values are made in fixed point,
//! every step rounded down, so each is a proved lower bound ([`super::rigorous`]). The
//! arithmetic changes no reachable board either: a variant and its rigorous twin share their
//! forward class, and are valued side by side in one backward pass.
//!
//! Names: the base name, then `-discount=γ` if γ ≠ 1, then `-p4=x` if `p4` ≠ 0.1, then
//! `-caps=D…` and `-need=D…` if restricted (one hexadecimal digit a cell, [`Limits`]), then
//! `-u32` or `-u53` if rigorous (`goal-32-discount=0.95-p4=0.2`,
//! `goal-512-caps=876666666666-u32`); [`Variant::parse`] reads what [`Variant::name`] writes.

use std::fmt;

use super::error::VariantError;
use super::moves::Rules;
use super::restrict::Limits;
use super::rigorous::{Arithmetic, Rigor};

/// The probability of a 4 in the real game.
pub const DEFAULT_P4: f64 = 0.1;

/// The longest variant name, in bytes: the age indexes store the name in a fixed 64-byte field
/// (`crate::index::raw::MAX_VARIANT_LEN`), so a longer one (a p4 or γ with many digits) is
/// refused when parsed rather than when the first index is written.
pub const MAX_NAME_LEN: usize = 64;

/// No discount: moves cost nothing (every variant but a discounted goal).
pub const NO_DISCOUNT: f64 = 1.0;

/// The name suffixes of the parameters, in the order a name writes them.
const DISCOUNT_KEY: &str = "-discount=";
const P4_KEY: &str = "-p4=";
const CAPS_KEY: &str = "-caps=";
const NEED_KEY: &str = "-need=";

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Expectation,
    Optimistic,
    Pessimistic,
    /// Probability of ever making a tile ≥ 2^exp.
    Goal(u8),
    /// 1 if the player can force a tile ≥ 2^exp whatever the spawns.
    Guaranteed(u8),
}

/// One variant: a spawn rule, the probability of a 4, and (goal variants) the discount.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Variant {
    pub kind: Kind,
    pub p4: f64,
    /// γ: each move multiplies the value by it. [`NO_DISCOUNT`] except for a discounted goal.
    pub discount: f64,
    /// The caps and requirement play is restricted by, if any.
    pub limits: Option<Limits>,
    /// The arithmetic of its values: f64, or (goal variants) a rigorous fixed point.
    pub arith: Arithmetic,
}

/// The parameters given beside a variant's name (`--p4`, `--discount`); a name's own suffix
/// and a different value given here conflict.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Given {
    pub p4: Option<f64>,
    pub discount: Option<f64>,
}

impl Given {
    /// The parameters as given on the command line (`--p4`, `--discount`), checked.
    pub fn from_args(p4: Option<&str>, discount: Option<&str>) -> Result<Given, VariantError> {
        Ok(Given {
            p4: p4.map(parse_p4).transpose()?,
            discount: discount.map(parse_discount).transpose()?,
        })
    }

    pub fn any(&self) -> bool {
        self.p4.is_some() || self.discount.is_some()
    }
}

/// What the forward pass (the set of reachable boards) depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ForwardClass {
    /// A 2 can spawn (p4 < 1).
    pub spawn2: bool,
    /// A 4 can spawn (p4 > 0).
    pub spawn4: bool,
    /// Boards holding a tile with at least this exponent are absorbing (not expanded).
    pub absorb: Option<u8>,
    /// The restriction of play: moves barred by the caps, boards holding the requirement
    /// absorbing.
    pub limits: Option<Limits>,
}

impl ForwardClass {
    /// A short name for the work directory.
    pub fn key(&self) -> String {
        let spawns = match (self.spawn2, self.spawn4) {
            (true, true) => "24",
            (true, false) => "2",
            (false, true) => "4",
            (false, false) => "none",
        };
        let mut key = match self.absorb {
            Some(e) => format!("spawn{spawns}-absorb{}", 1u32 << e),
            None => format!("spawn{spawns}"),
        };
        if let Some(l) = self.limits {
            key.push_str(&format!("-caps{:x}-need{:x}", l.caps, l.need));
        }
        key
    }

    /// True if `code` is absorbing: it holds the goal tile or the requirement. A move into
    /// such a board wins.
    #[inline(always)]
    pub fn absorbs(&self, code: u64) -> bool {
        self.absorb
            .is_some_and(|e| super::board::max_exp(code) >= e)
            || self.limits.is_some_and(|l| l.met(code))
    }

    /// The moves of `code` that may be played: every valid one, but under caps none whose
    /// result holds a tile above its cell's cap unless it wins ([`Self::absorbs`]).
    #[inline(always)]
    pub fn moves(&self, rules: &Rules, code: u64) -> [Option<(u64, u32)>; 4] {
        let mut moves = rules.moves(code);
        if let Some(l) = self.limits {
            for m in &mut moves {
                if m.is_some_and(|(a, _)| l.breaks_caps(a) && !self.absorbs(a)) {
                    *m = None;
                }
            }
        }
        moves
    }
}

impl Variant {
    /// Parses a variant name (`expectation`, `optimistic`, `pessimistic`, `goal-T`,
    /// `guaranteed-T`, optionally followed by `-discount=γ` (goal-T only) and `-p4=x`) and
    /// applies the parameters `given` beside it. A suffix and a different given value conflict.
    pub fn parse(name: &str, given: Given) -> Result<Variant, VariantError> {
        let (rest, arith) = split_arithmetic(name)?;
        let (rest, limits) = split_limits(rest)?;
        let (base, p4_text, discount_text) = split_suffixes(rest)?;
        let p4 = p4_text.map(parse_p4).transpose()?;
        let discount = discount_text.map(parse_discount).transpose()?;
        let conflict = |what: &'static str, given: f64| VariantError::Conflict {
            name: name.to_string(),
            what,
            given: given.to_string(),
        };
        let p4 = match (p4, given.p4) {
            (Some(a), Some(b)) if a != b => return Err(conflict("p4", b)),
            (a, b) => a.or(b).unwrap_or(DEFAULT_P4),
        };
        check_p4(p4)?;
        let discount = match (discount, given.discount) {
            (Some(a), Some(b)) if a != b => return Err(conflict("discount", b)),
            (a, b) => a.or(b).unwrap_or(NO_DISCOUNT),
        };
        check_discount(discount)?;
        let kind = match base {
            "expectation" => Kind::Expectation,
            "optimistic" => Kind::Optimistic,
            "pessimistic" => Kind::Pessimistic,
            _ => {
                if let Some(t) = base.strip_prefix("goal-") {
                    Kind::Goal(parse_goal(name, t)?)
                } else if let Some(t) = base.strip_prefix("guaranteed-") {
                    Kind::Guaranteed(parse_goal(name, t)?)
                } else {
                    return Err(VariantError::Unknown(name.to_string()));
                }
            }
        };
        if discount != NO_DISCOUNT && !matches!(kind, Kind::Goal(_)) {
            return Err(VariantError::NotDiscountable {
                name: base.to_string(),
                discount: discount.to_string(),
            });
        }
        if arith != Arithmetic::F64 && !matches!(kind, Kind::Goal(_)) {
            return Err(VariantError::NotRigorous {
                name: name.to_string(),
                arith: arith.name(),
            });
        }
        Variant {
            kind,
            p4,
            discount,
            limits,
            arith,
        }
        .name_fits()
    }

    /// `self`, or the error of a name longer than a partition folder may be.
    fn name_fits(self) -> Result<Variant, VariantError> {
        let len = self.name().len();
        if len > MAX_NAME_LEN {
            return Err(VariantError::NameTooLong {
                name: self.name(),
                len,
                max: MAX_NAME_LEN,
            });
        }
        Ok(self)
    }

    /// Parses a comma-separated list; names must be distinct.
    pub fn parse_list(list: &str, given: Given) -> Result<Vec<Variant>, VariantError> {
        let mut out: Vec<Variant> = Vec::new();
        for name in list.split(',').map(str::trim) {
            let v = Variant::parse(name, given)?;
            if out.iter().any(|o| o.name() == v.name()) {
                return Err(VariantError::Duplicate(v.name()));
            }
            out.push(v);
        }
        Ok(out)
    }

    pub fn expectation() -> Variant {
        Variant::new(Kind::Expectation, DEFAULT_P4)
    }

    /// An undiscounted variant.
    pub fn new(kind: Kind, p4: f64) -> Variant {
        Variant {
            kind,
            p4,
            discount: NO_DISCOUNT,
            limits: None,
            arith: Arithmetic::F64,
        }
    }

    /// The same variant restricted by `limits` (refused if its name would be too long).
    pub fn restricted(self, limits: Limits) -> Result<Variant, VariantError> {
        Variant {
            limits: Some(limits),
            ..self
        }
        .name_fits()
    }

    /// The name used in the layout (`variant=<name>`).
    pub fn name(&self) -> String {
        let base = match self.kind {
            Kind::Expectation => "expectation".to_string(),
            Kind::Optimistic => "optimistic".to_string(),
            Kind::Pessimistic => "pessimistic".to_string(),
            Kind::Goal(e) => format!("goal-{}", 1u32 << e),
            Kind::Guaranteed(e) => format!("guaranteed-{}", 1u32 << e),
        };
        let mut name = base;
        if self.discount != NO_DISCOUNT {
            name.push_str(&format!("{DISCOUNT_KEY}{}", self.discount));
        }
        if self.p4 != DEFAULT_P4 {
            name.push_str(&format!("{P4_KEY}{}", self.p4));
        }
        if let Some(l) = self.limits {
            let cells = (0..16)
                .take_while(|&i| super::board::cell(l.caps, i) != 0)
                .count();
            name.push_str(&format!("{CAPS_KEY}{}", l.caps_digits(cells)));
            if let Some(need) = l.need_digits(cells) {
                name.push_str(&format!("{NEED_KEY}{need}"));
            }
        }
        if self.arith != Arithmetic::F64 {
            name.push('-');
            name.push_str(self.arith.name());
        }
        name
    }

    /// The integers of a rigorous variant's steps (`None` in f64): made from its parameters
    /// each call, so a loop over values makes them once beforehand.
    pub fn rigor(&self) -> Option<Rigor> {
        self.arith
            .grid()
            .map(|g| Rigor::new(g, self.p4, self.discount))
    }

    /// Moves earn their reward (false for goal and guaranteed variants, valued 0/1).
    pub fn scored(&self) -> bool {
        !matches!(self.kind, Kind::Goal(_) | Kind::Guaranteed(_))
    }

    /// What a value (and a regret) of this variant is measured in, for people.
    pub fn unit(&self) -> &'static str {
        if self.scored() {
            "points"
        } else if self.discounted() {
            "expected discount"
        } else {
            "probability"
        }
    }

    /// A goal variant with a discount below 1.
    pub fn discounted(&self) -> bool {
        self.discount != NO_DISCOUNT
    }

    /// Values are probabilities: undiscounted goal and guaranteed variants (a discounted
    /// goal's values lie in [0, 1] too, but are expected discounts, not probabilities).
    pub fn probability(&self) -> bool {
        !self.scored() && self.discount == NO_DISCOUNT
    }

    /// The q-value of a move earning `reward` into an afterstate worth `after`: reward plus
    /// afterstate value (scored variants), γ times the afterstate value (a discounted goal;
    /// rounded down if rigorous), else the afterstate value. The one definition the solver and
    /// the queries share.
    #[inline(always)]
    pub fn q(&self, reward: u32, after: f64) -> f64 {
        self.q_with(self.rigor().as_ref(), reward, after)
    }

    /// [`Variant::q`] given the variant's [`Variant::rigor`], made once by the caller.
    #[inline(always)]
    pub fn q_with(&self, rigor: Option<&Rigor>, reward: u32, after: f64) -> f64 {
        if self.scored() {
            after + f64::from(reward)
        } else if self.discount != NO_DISCOUNT {
            match rigor {
                Some(r) => r.discounted(after),
                None => self.discount * after,
            }
        } else {
            after
        }
    }

    /// Exponent of the goal tile, if any.
    pub fn goal(&self) -> Option<u8> {
        match self.kind {
            Kind::Goal(e) | Kind::Guaranteed(e) => Some(e),
            _ => None,
        }
    }

    pub fn p2(&self) -> f64 {
        1.0 - self.p4
    }

    pub fn forward_class(&self) -> ForwardClass {
        ForwardClass {
            spawn2: self.p4 < 1.0,
            spawn4: self.p4 > 0.0,
            absorb: self.goal(),
            limits: self.limits,
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

fn parse_p4(text: &str) -> Result<f64, VariantError> {
    let p: f64 = text
        .parse()
        .map_err(|_| VariantError::P4(text.to_string()))?;
    check_p4(p).map(|_| p)
}

fn check_p4(p: f64) -> Result<(), VariantError> {
    if p.is_finite() && (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(VariantError::P4(p.to_string()))
    }
}

fn parse_discount(text: &str) -> Result<f64, VariantError> {
    let g: f64 = text
        .parse()
        .map_err(|_| VariantError::Discount(text.to_string()))?;
    check_discount(g).map(|_| g)
}

fn check_discount(g: f64) -> Result<(), VariantError> {
    if g.is_finite() && g > 0.0 && g <= 1.0 {
        Ok(())
    } else {
        Err(VariantError::Discount(g.to_string()))
    }
}

/// Splits a name's rigorous arithmetic (`-u32`, `-u53`, at its very end) off.
/// `-u64` is refused by name ([`super::rigorous`] says why u53 stands in its place).
fn split_arithmetic(name: &str) -> Result<(&str, Arithmetic), VariantError> {
    if name.ends_with("-u64") {
        return Err(VariantError::NoU64(name.to_string()));
    }
    for a in Arithmetic::RIGOROUS {
        if let Some(rest) = name
            .strip_suffix(a.name())
            .and_then(|r| r.strip_suffix('-'))
        {
            return Ok((rest, a));
        }
    }
    Ok((name, Arithmetic::F64))
}

/// Splits a name's restriction (`-caps=…`, then optionally `-need=…`, at its end) off.
fn split_limits(name: &str) -> Result<(&str, Option<Limits>), VariantError> {
    let Some(at) = name.find(CAPS_KEY) else {
        return Ok((name, None));
    };
    let tail = &name[at + CAPS_KEY.len()..];
    let (caps, need) = match tail.split_once(NEED_KEY) {
        Some((c, n)) => (c, Some(n)),
        None => (tail, None),
    };
    let limits = Limits::from_digits(caps, need).ok_or_else(|| VariantError::Limits {
        name: name.to_string(),
    })?;
    Ok((&name[..at], Some(limits)))
}

/// Splits a name into its base and the texts of its `-p4=` and `-discount=` suffixes (in
/// either order; a value runs to the next suffix, so `1e-5` reads whole).
fn split_suffixes(name: &str) -> Result<(&str, Option<&str>, Option<&str>), VariantError> {
    let keys = [P4_KEY, DISCOUNT_KEY];
    let mut marks: Vec<(usize, usize)> = Vec::new();
    for (k, key) in keys.iter().enumerate() {
        let mut found = name.match_indices(key).map(|(i, _)| i);
        if let Some(i) = found.next() {
            if found.next().is_some() {
                return Err(VariantError::Repeated {
                    name: name.to_string(),
                    what: key.trim_matches(|c| c == '-' || c == '='),
                });
            }
            marks.push((i, k));
        }
    }
    marks.sort_unstable();
    let mut values = [None, None];
    for (j, &(i, k)) in marks.iter().enumerate() {
        let end = marks.get(j + 1).map_or(name.len(), |m| m.0);
        values[k] = Some(&name[i + keys[k].len()..end]);
    }
    let base = &name[..marks.first().map_or(name.len(), |m| m.0)];
    Ok((base, values[0], values[1]))
}

/// Parses the goal tile T (a power of two from 4 to 32768) into its exponent.
fn parse_goal(name: &str, text: &str) -> Result<u8, VariantError> {
    let bad = |reason: &str| VariantError::Goal {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    let t: u64 = text.parse().map_err(|_| bad("T is not a number"))?;
    if !t.is_power_of_two() {
        return Err(bad("T must be a power of two"));
    }
    if !(4..=32768).contains(&t) {
        return Err(bad("T must be between 4 and 32768"));
    }
    Ok(t.trailing_zeros() as u8)
}

/// Parses `--p4` as given on the command line.
pub fn parse_p4_arg(text: &str) -> Result<f64, VariantError> {
    parse_p4(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str) -> Result<Variant, VariantError> {
        Variant::parse(name, Given::default())
    }

    fn given(p4: Option<f64>, discount: Option<f64>) -> Given {
        Given { p4, discount }
    }

    #[test]
    fn restricted_names_round_trip_and_bar_moves() {
        let shape = super::super::Shape::new(2, 2).unwrap();
        let r = super::super::Restriction::parse(shape, "8 4 / 4 4", Some("8 . / . .")).unwrap();
        let v = parse("goal-16-p4=0.25")
            .unwrap()
            .restricted(r.limits())
            .unwrap();
        assert_eq!(v.name(), "goal-16-p4=0.25-caps=3222-need=3000");
        assert_eq!(parse(&v.name()).unwrap(), v);
        assert!(parse("goal-16-caps=3122").is_err(), "a cap below 4");
        let class = v.forward_class();
        assert_ne!(class, parse("goal-16-p4=0.25").unwrap().forward_class());
        assert!(class.key().ends_with("-caps2223-need3"), "{}", class.key());
        // 4 4 / . . : left makes an 8 in cell 0 (cap 8: allowed), right an 8 in cell 1 (cap 4:
        // barred), up and down are no moves.
        let rules = Rules::new(shape);
        let moves = class.moves(&rules, 0x0022);
        assert!(moves[0].is_some() && moves[1].is_none(), "{moves:?}");
        // The requirement is absorbing: 8 in cell 0.
        assert!(class.absorbs(0x0003) && !class.absorbs(0x0030));
    }

    #[test]
    fn names_round_trip() {
        for name in [
            "expectation",
            "optimistic",
            "pessimistic",
            "goal-1024",
            "guaranteed-16",
            "expectation-p4=0.2",
            "goal-8-p4=0",
            "goal-32-discount=0.95",
            "goal-32-discount=0.95-p4=0.2",
            "goal-4-discount=0.000001-p4=1",
            "goal-32-u32",
            "goal-32-discount=0.95-p4=0.2-u53",
            "goal-16-caps=3222-need=3000-u32",
        ] {
            let v = parse(name).unwrap();
            assert_eq!(v.name(), name);
            assert_eq!(parse(&v.name()).unwrap(), v);
        }
        assert_eq!(
            Variant::parse("optimistic", given(Some(0.5), None))
                .unwrap()
                .name(),
            "optimistic-p4=0.5"
        );
        // Every variant reads back from its name, whatever its parameters.
        for kind in [Kind::Expectation, Kind::Goal(5), Kind::Guaranteed(3)] {
            for p4 in [0.0, 0.1, 0.25, 1.0] {
                let gammas: &[f64] = if matches!(kind, Kind::Goal(_)) {
                    &[1.0, 0.5, 0.9, 0.99, 0.999, 1e-3, 0.1 + 0.2]
                } else {
                    &[1.0]
                };
                for &discount in gammas {
                    let v = Variant {
                        kind,
                        p4,
                        discount,
                        limits: None,
                        arith: Arithmetic::F64,
                    };
                    assert_eq!(parse(&v.name()).unwrap(), v, "{}", v.name());
                }
            }
        }
    }

    #[test]
    fn discount_in_the_name_or_given() {
        let named = parse("goal-32-discount=0.95").unwrap();
        assert_eq!((named.kind, named.discount), (Kind::Goal(5), 0.95));
        let flag = Variant::parse("goal-32", given(None, Some(0.95))).unwrap();
        assert_eq!(flag, named);
        // Both, agreeing; with p4 as a flag; the suffixes in the other order.
        assert_eq!(
            Variant::parse("goal-32-discount=0.95", given(None, Some(0.95))).unwrap(),
            named
        );
        let both = Variant::parse("goal-32", given(Some(0.2), Some(0.95))).unwrap();
        assert_eq!(both.name(), "goal-32-discount=0.95-p4=0.2");
        assert_eq!(parse("goal-32-p4=0.2-discount=0.95").unwrap(), both);
        // γ = 1 is the plain goal, and the plain name.
        let one = Variant::parse("goal-32", given(None, Some(1.0))).unwrap();
        assert_eq!(one, parse("goal-32").unwrap());
        assert_eq!(parse("goal-32-discount=1").unwrap().name(), "goal-32");
        // A value with a minus sign of its own reads whole.
        assert_eq!(parse("goal-32-discount=5e-1").unwrap().discount, 0.5);
        // Same forward class as the plain goal.
        assert_eq!(
            named.forward_class(),
            parse("goal-32").unwrap().forward_class()
        );
        assert!(!named.probability() && parse("goal-32").unwrap().probability());
    }

    #[test]
    fn rigorous_variants() {
        let r = parse("goal-32-discount=0.5-p4=0.25-u32").unwrap();
        assert_eq!(r.arith, Arithmetic::U32);
        // The same forward class as the f64 variant: one forward pass for both.
        assert_eq!(
            r.forward_class(),
            parse("goal-32-discount=0.5-p4=0.25")
                .unwrap()
                .forward_class()
        );
        let rig = r.rigor().unwrap();
        assert_eq!((rig.p2, rig.p4, rig.discount), (3 << 30, 1 << 30, 1 << 31));
        // γ·q rounded down at 2^-32: half of 2^-32 is 0.
        assert_eq!(r.q(0, 2f64.powi(-32)), 0.0);
        assert_eq!(r.q(0, 0.75), 0.375);
        assert!(parse("goal-32").unwrap().rigor().is_none());
        let msg = |n: &str| parse(n).unwrap_err().to_string();
        assert!(msg("expectation-u32").contains("goal-T variants only"));
        assert!(msg("guaranteed-8-u53").contains("goal-T variants only"));
        assert!(msg("goal-32-u64").contains("-u53 is the finest"));
    }

    #[test]
    fn q_values() {
        let e = Variant::expectation();
        assert_eq!(e.q(8, 100.5), 108.5);
        let g = parse("goal-32").unwrap();
        assert_eq!(g.q(8, 0.25), 0.25);
        let d = parse("goal-32-discount=0.5").unwrap();
        assert_eq!(d.q(8, 0.25), 0.125);
        assert_eq!(d.q(0, 1.0), 0.5);
    }

    #[test]
    fn units_of_values() {
        // Regression: `evaluate` called a discounted goal's regrets probabilities.
        assert_eq!(parse("expectation").unwrap().unit(), "points");
        assert_eq!(parse("goal-64").unwrap().unit(), "probability");
        assert_eq!(parse("guaranteed-16").unwrap().unit(), "probability");
        assert_eq!(
            parse("goal-64-discount=0.9").unwrap().unit(),
            "expected discount"
        );
    }

    #[test]
    fn names_too_long_for_an_index_are_refused_when_parsed() {
        // Regression: a p4 or γ with many digits made a name longer than the index header
        // holds, and the solve failed only when writing its first index.
        assert_eq!(MAX_NAME_LEN, crate::index::raw::MAX_VARIANT_LEN);
        let long = Variant::parse(
            "goal-2048",
            Given {
                p4: Some(1e-30),
                discount: Some(0.123456789012345),
            },
        );
        assert!(
            matches!(long, Err(VariantError::NameTooLong { .. })),
            "{long:?}"
        );
        let ok = Variant::parse("goal-2048-discount=0.95-p4=0.2", Given::default()).unwrap();
        assert!(ok.name().len() <= MAX_NAME_LEN);
    }

    #[test]
    fn bad_names_are_errors() {
        assert!(parse("goal-1000").is_err());
        assert!(parse("goal-2").is_err());
        assert!(parse("best").is_err());
        assert!(Variant::parse("expectation", given(Some(1.5), None)).is_err());
        assert!(parse_p4_arg("-0.1").is_err());
        assert!(parse_p4_arg("nan").is_err());
        assert!(Variant::parse_list("optimistic,optimistic", Given::default()).is_err());
        let msg = |r: Result<Variant, VariantError>| r.unwrap_err().to_string();
        // The discount: a number in (0, 1], on goal variants only, not given twice.
        for bad in ["0", "-0.5", "1.5", "nan", "inf", "x", ""] {
            let e = Given::from_args(None, Some(bad)).unwrap_err().to_string();
            assert!(e.contains("--discount") && e.contains("(0, 1]"), "{e}");
            assert!(parse(&format!("goal-32-discount={bad}")).is_err(), "{bad}");
        }
        assert_eq!(
            Given::from_args(None, Some("1")).unwrap().discount,
            Some(1.0)
        );
        assert_eq!(
            msg(Variant::parse("expectation", given(None, Some(0.9)))),
            "variant 'expectation' takes no discount (0.9): only goal-T variants are discounted"
        );
        for name in [
            "guaranteed-32-discount=0.9",
            "optimistic-discount=0.9",
            "pessimistic-discount=0.5-p4=0.2",
        ] {
            assert!(msg(parse(name)).contains("takes no discount"), "{name}");
        }
        assert_eq!(
            msg(Variant::parse(
                "goal-32-discount=0.9",
                given(None, Some(0.95))
            )),
            "variant 'goal-32-discount=0.9': its discount differs from --discount 0.95"
        );
        assert_eq!(
            msg(Variant::parse("goal-32-p4=0.2", given(Some(0.3), None))),
            "variant 'goal-32-p4=0.2': its p4 differs from --p4 0.3"
        );
        assert!(msg(parse("goal-32-discount=0.9-discount=0.9")).contains("twice"));
        assert!(msg(parse("goal-32-discount=0.9-p4=0.1-p4=0.1")).contains("twice"));
        assert!(
            Variant::parse_list("goal-32-discount=0.9,goal-32", given(None, Some(0.9))).is_err()
        );
    }

    #[test]
    fn classes() {
        let e = Variant::expectation().forward_class();
        let o = parse("optimistic").unwrap().forward_class();
        assert_eq!(e, o);
        let z = Variant::parse("expectation", given(Some(0.0), None))
            .unwrap()
            .forward_class();
        assert!(z.spawn2 && !z.spawn4);
        assert_eq!(parse("goal-64").unwrap().forward_class().absorb, Some(6));
    }
}
