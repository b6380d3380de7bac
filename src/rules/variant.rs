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

use std::fmt;

use super::error::VariantError;

/// The probability of a 4 in the real game.
pub const DEFAULT_P4: f64 = 0.1;

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

/// One variant: a spawn rule and the probability of a 4.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Variant {
    pub kind: Kind,
    pub p4: f64,
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
        match self.absorb {
            Some(e) => format!("spawn{spawns}-absorb{}", 1u32 << e),
            None => format!("spawn{spawns}"),
        }
    }
}

impl Variant {
    /// Parses a variant name (`expectation`, `optimistic`, `pessimistic`, `goal-T`,
    /// `guaranteed-T`, optionally followed by `-p4=x`) and applies `p4` if given.
    /// A `-p4=` suffix and a different `p4` argument conflict.
    pub fn parse(name: &str, p4: Option<f64>) -> Result<Variant, VariantError> {
        let (base, suffix_p4) = match name.split_once("-p4=") {
            Some((b, x)) => (b, Some(parse_p4(x)?)),
            None => (name, None),
        };
        let p4 = match (suffix_p4, p4) {
            (Some(a), Some(b)) if a != b => {
                return Err(VariantError::Unknown(format!(
                    "{name} (its p4 differs from --p4 {b})"
                )))
            }
            (Some(a), _) => a,
            (None, Some(b)) => b,
            (None, None) => DEFAULT_P4,
        };
        check_p4(p4)?;
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
        Ok(Variant { kind, p4 })
    }

    /// Parses a comma-separated list; names must be distinct.
    pub fn parse_list(list: &str, p4: Option<f64>) -> Result<Vec<Variant>, VariantError> {
        let mut out: Vec<Variant> = Vec::new();
        for name in list.split(',').map(str::trim) {
            let v = Variant::parse(name, p4)?;
            if out.iter().any(|o| o.name() == v.name()) {
                return Err(VariantError::Duplicate(v.name()));
            }
            out.push(v);
        }
        Ok(out)
    }

    pub fn expectation() -> Variant {
        Variant {
            kind: Kind::Expectation,
            p4: DEFAULT_P4,
        }
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
        if self.p4 == DEFAULT_P4 {
            base
        } else {
            format!("{base}-p4={}", self.p4)
        }
    }

    /// Moves earn their reward (false for goal and guaranteed variants, valued 0/1).
    pub fn scored(&self) -> bool {
        !matches!(self.kind, Kind::Goal(_) | Kind::Guaranteed(_))
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
        ] {
            assert_eq!(Variant::parse(name, None).unwrap().name(), name);
        }
        assert_eq!(
            Variant::parse("optimistic", Some(0.5)).unwrap().name(),
            "optimistic-p4=0.5"
        );
    }

    #[test]
    fn bad_names_are_errors() {
        assert!(Variant::parse("goal-1000", None).is_err());
        assert!(Variant::parse("goal-2", None).is_err());
        assert!(Variant::parse("best", None).is_err());
        assert!(Variant::parse("expectation", Some(1.5)).is_err());
        assert!(parse_p4_arg("-0.1").is_err());
        assert!(parse_p4_arg("nan").is_err());
        assert!(Variant::parse_list("optimistic,optimistic", None).is_err());
    }

    #[test]
    fn classes() {
        let e = Variant::expectation().forward_class();
        let o = Variant::parse("optimistic", None).unwrap().forward_class();
        assert_eq!(e, o);
        let z = Variant::parse("expectation", Some(0.0))
            .unwrap()
            .forward_class();
        assert!(z.spawn2 && !z.spawn4);
        assert_eq!(
            Variant::parse("goal-64", None)
                .unwrap()
                .forward_class()
                .absorb,
            Some(6)
        );
    }
}
