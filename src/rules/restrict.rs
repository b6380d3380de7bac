//! A restriction of play (Slizkov, "Computational bounds for the 2048 game", §3 and appendix A):
//! a largest tile for every cell (the *caps*) and, optionally, a configuration of tiles whose
//! reaching wins (the *requirement*).
//!
//! - A move whose result holds a tile above its cell's cap may not be played, unless it wins.
//!   A state whose every move is barred is lost.
//! - Reaching the requirement (exactly its tiles in its cells, any tiles elsewhere) is a win,
//!   absorbing as making the goal tile is.
//!
//! Grids are written row-major, rows split by `/` (or as one row-major list, as the paper's
//! tables give them), cells by spaces; in a requirement `.` marks a cell it leaves free.
//! Every cap is at least 4, so no spawn breaks a cap.

use super::board::{cell, MAX_EXP};
use super::shape::Shape;
use super::symmetry::{Group, Symmetry};

/// A grid given by the user that cannot be used (one line each).
#[derive(Debug, thiserror::Error)]
pub enum RestrictError {
    #[error("bad --{flag} '{text}': {reason}")]
    Grid {
        flag: &'static str,
        text: String,
        reason: String,
    },
    #[error(
        "bad --require: the tile {tile} in row {row}, column {col} is above that cell's cap {cap}"
    )]
    AboveCap {
        tile: u32,
        cap: u32,
        row: usize,
        col: usize,
    },
}

/// Caps and an optional requirement as the rules apply them, without the shape: what a
/// variant and its forward class carry ([`super::Variant::limits`]). Named in a variant's name
/// as one hexadecimal digit a cell, cell 0 first: the exponent of its cap (`caps=8766…`), or
/// of its required tile, `0` in a free cell (`need=8700…`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Limits {
    /// The cap of each cell as an exponent, in a board code.
    pub caps: u64,
    /// The required tiles (exponents) and the mask of the nibbles they occupy (`0` = none).
    pub need: u64,
    pub need_mask: u64,
}

impl Limits {
    /// True when some tile of `code` is above its cell's cap.
    #[inline]
    pub fn breaks_caps(&self, code: u64) -> bool {
        // Every cell at once, without a branch (it runs for every move of a restricted
        // solve): the even cells' nibbles and the odd cells' each spread to a byte, where
        // `(cap | 16) - tile` is `16 + cap - tile`, from 1 to 31, so no byte borrows from the
        // next and its bit 4 is clear exactly where the tile is above the cap.
        const LOW: u64 = 0x0F0F_0F0F_0F0F_0F0F;
        const BIT4: u64 = 0x1010_1010_1010_1010;
        let even = ((self.caps & LOW) | BIT4) - (code & LOW);
        let odd = (((self.caps >> 4) & LOW) | BIT4) - ((code >> 4) & LOW);
        even & odd & BIT4 != BIT4
    }

    /// True when `code` holds the requirement (always false without one).
    #[inline]
    pub fn met(&self, code: u64) -> bool {
        self.need_mask != 0 && code & self.need_mask == self.need
    }

    /// The caps' digits, one a cell (`cells` of them), as a variant's name writes them.
    pub fn caps_digits(&self, cells: usize) -> String {
        digits(self.caps, cells)
    }

    /// The requirement's digits (`0` in a free cell), if there is one.
    pub fn need_digits(&self, cells: usize) -> Option<String> {
        (self.need_mask != 0).then(|| digits(self.need, cells))
    }

    /// Reads the digits a variant's name writes: `None` if any is not a hexadecimal digit, a
    /// cap is below 4 (`2`), or a required tile is above its cell's cap.
    pub fn from_digits(caps: &str, need: Option<&str>) -> Option<Limits> {
        let code = |text: &str| -> Option<(u64, u64)> {
            if text.is_empty() || text.len() > 16 {
                return None;
            }
            let mut code = 0u64;
            let mut mask = 0u64;
            for (i, ch) in text.chars().enumerate() {
                let e = u64::from(ch.to_digit(16)?);
                code |= e << (4 * i);
                if e != 0 {
                    mask |= 0xF << (4 * i);
                }
            }
            Some((code, mask))
        };
        let (caps, _) = code(caps)?;
        let cells = caps_len(caps);
        if (0..cells).any(|i| cell(caps, i) < 2) {
            return None;
        }
        let (need, need_mask) = match need {
            Some(t) => {
                if t.len() != cells {
                    return None;
                }
                let (n, m) = code(t)?;
                if m == 0 || (0..cells).any(|i| cell(n, i) > cell(caps, i)) {
                    return None;
                }
                (n, m)
            }
            None => (0, 0),
        };
        Some(Limits {
            caps,
            need,
            need_mask,
        })
    }
}

/// The number of cells a caps code covers (every cap is at least 4, so none is `0`).
fn caps_len(caps: u64) -> usize {
    (0..16).take_while(|&i| cell(caps, i) != 0).count()
}

fn digits(code: u64, cells: usize) -> String {
    (0..cells)
        .map(|i| char::from_digit(u32::from(cell(code, i)), 16).expect("a nibble"))
        .collect()
}

/// Caps and an optional requirement on one board shape, checked once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restriction {
    shape: Shape,
    /// The cap of each cell as an exponent, in a board code (cell `i` in nibble `i`).
    caps: u64,
    /// The required tiles (exponents) and the mask of the nibbles they occupy (`0` = none).
    need: u64,
    need_mask: u64,
}

impl Restriction {
    /// Parses and checks `--caps` and `--require` for `shape`.
    pub fn parse(
        shape: Shape,
        caps: &str,
        require: Option<&str>,
    ) -> Result<Restriction, RestrictError> {
        let cap_exps = parse_grid("caps", caps, shape, false)?;
        let bad = |reason: String| RestrictError::Grid {
            flag: "caps",
            text: caps.to_string(),
            reason,
        };
        let mut code = 0u64;
        for (i, e) in cap_exps.iter().enumerate() {
            let e = e.expect("caps have no free cell");
            if e < 2 {
                return Err(bad(format!(
                    "the cap in row {}, column {} is {}, below 4 (a spawned 4 would break it)",
                    i / shape.cols() + 1,
                    i % shape.cols() + 1,
                    1u32 << e
                )));
            }
            code |= u64::from(e) << (4 * i);
        }
        let mut r = Restriction {
            shape,
            caps: code,
            need: 0,
            need_mask: 0,
        };
        if let Some(text) = require {
            let need = parse_grid("require", text, shape, true)?;
            if need.iter().all(Option::is_none) {
                return Err(RestrictError::Grid {
                    flag: "require",
                    text: text.to_string(),
                    reason: "it requires no tile (every cell is '.')".into(),
                });
            }
            for (i, e) in need.iter().enumerate() {
                if let Some(e) = *e {
                    let cap = r.cap_exp(i);
                    if e > cap {
                        return Err(RestrictError::AboveCap {
                            tile: 1 << e,
                            cap: 1 << cap,
                            row: i / shape.cols() + 1,
                            col: i % shape.cols() + 1,
                        });
                    }
                    r.need |= u64::from(e) << (4 * i);
                    r.need_mask |= 0xF << (4 * i);
                }
            }
        }
        Ok(r)
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The cap of cell `i`, as an exponent.
    #[inline]
    pub fn cap_exp(&self, i: usize) -> u8 {
        cell(self.caps, i)
    }

    /// The caps as a board code (each cell holding its cap).
    pub fn caps_code(&self) -> u64 {
        self.caps
    }

    /// The required tiles as a board code (`0` in a free cell), if there is a requirement.
    pub fn require_code(&self) -> Option<u64> {
        (self.need_mask != 0).then_some(self.need)
    }

    /// The same restriction with cell `i`'s cap set to exponent `e` (at least 2); `None` when
    /// a required tile would be above it.
    pub fn with_cap(&self, i: usize, e: u8) -> Option<Restriction> {
        assert!(
            (2..=MAX_EXP).contains(&e),
            "a cap is a tile from 4 to 32768"
        );
        if cell(self.need, i) > e {
            return None;
        }
        let mut r = self.clone();
        r.caps = (r.caps & !(0xF << (4 * i))) | (u64::from(e) << (4 * i));
        Some(r)
    }

    /// What the rules apply, without the shape.
    pub fn limits(&self) -> Limits {
        Limits {
            caps: self.caps,
            need: self.need,
            need_mask: self.need_mask,
        }
    }

    /// The restriction `limits` names on `shape` (`None` if its cells are not the shape's).
    pub fn from_limits(shape: Shape, limits: Limits) -> Option<Restriction> {
        (caps_len(limits.caps) == shape.cells()).then_some(Restriction {
            shape,
            caps: limits.caps,
            need: limits.need,
            need_mask: limits.need_mask,
        })
    }

    /// True when some tile of `code` is above its cell's cap.
    #[inline]
    pub fn breaks_caps(&self, code: u64) -> bool {
        self.limits().breaks_caps(code)
    }

    /// True when `code` holds the requirement (always false without one).
    #[inline]
    pub fn met(&self, code: u64) -> bool {
        self.limits().met(code)
    }

    /// The group of the symmetries that keep the caps and the requirement, within `within`
    /// (the group asked for): the group a restricted solve identifies boards by.
    pub fn group(&self, within: Group) -> Group {
        let full = Symmetry::new(self.shape, Group::Full).order();
        let allowed: u8 = match within {
            Group::Full => 0xFF,
            Group::Flips => 0x0F,
            Group::None => 0x01,
            Group::Kept(m) => m,
        };
        let mask = self.symmetries().into_iter().fold(0u8, |m, k| m | (1 << k)) & allowed;
        Group::from_mask(mask, full)
    }

    /// The symmetries of the board (indices into [`Symmetry::images`] of the shape's full
    /// group, the identity first) that map the caps and the requirement to themselves: the
    /// only ones a restricted solve may identify boards by. Often the identity alone.
    pub fn symmetries(&self) -> Vec<usize> {
        let sym = Symmetry::new(self.shape, Group::Full);
        let caps = sym.images(self.caps);
        let need = sym.images(self.need);
        let mask = sym.images(self.need_mask);
        (0..caps.len())
            .filter(|&k| caps[k] == self.caps && need[k] == self.need && mask[k] == self.need_mask)
            .collect()
    }

    /// The caps as grid text, rows split by `/`.
    pub fn caps_text(&self) -> String {
        grid_text(self.shape, |i| Some(self.cap_exp(i)))
    }

    /// The requirement as grid text (`.` in a free cell), if there is one.
    pub fn require_text(&self) -> Option<String> {
        (self.need_mask != 0).then(|| {
            grid_text(self.shape, |i| {
                (cell(self.need_mask, i) != 0).then(|| cell(self.need, i))
            })
        })
    }
}

fn grid_text(shape: Shape, f: impl Fn(usize) -> Option<u8>) -> String {
    let rows: Vec<String> = (0..shape.rows())
        .map(|r| {
            (0..shape.cols())
                .map(|c| match f(r * shape.cols() + c) {
                    Some(e) => (1u32 << e).to_string(),
                    None => ".".into(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    rows.join(" / ")
}

/// Parses a grid of tiles (exponents), row-major; `.` (a free cell) only when `free` allows it.
fn parse_grid(
    flag: &'static str,
    text: &str,
    shape: Shape,
    free: bool,
) -> Result<Vec<Option<u8>>, RestrictError> {
    let bad = |reason: String| RestrictError::Grid {
        flag,
        text: text.to_string(),
        reason,
    };
    if text.len() > super::board::MAX_TEXT_LEN {
        return Err(bad(format!(
            "{} bytes, more than a grid can take",
            text.len()
        )));
    }
    let rows: Vec<Vec<&str>> = text
        .split('/')
        .map(|r| r.split_whitespace().collect())
        .collect();
    let n = shape.cells();
    let tokens: Vec<&str> = if rows.len() == 1 {
        // One row-major list (the paper's form), or a one-row board.
        if rows[0].len() != n {
            return Err(bad(format!(
                "{} cells, a {shape} board has {n}",
                rows[0].len()
            )));
        }
        rows[0].clone()
    } else {
        if rows.len() != shape.rows() {
            return Err(bad(format!(
                "{} rows split by '/', a {shape} board has {}",
                rows.len(),
                shape.rows()
            )));
        }
        if let Some((r, row)) = rows
            .iter()
            .enumerate()
            .find(|(_, row)| row.len() != shape.cols())
        {
            return Err(bad(format!(
                "row {} has {} cells, a {shape} board has {} a row",
                r + 1,
                row.len(),
                shape.cols()
            )));
        }
        rows.concat()
    };
    tokens
        .iter()
        .enumerate()
        .map(|(i, tok)| {
            let at = format!(
                "row {}, column {}",
                i / shape.cols() + 1,
                i % shape.cols() + 1
            );
            if *tok == "." {
                return if free {
                    Ok(None)
                } else {
                    Err(bad(format!("{at} is '.', but every cell needs a cap")))
                };
            }
            let v: u64 = tok.parse().map_err(|_| {
                bad(format!(
                    "{at}: '{tok}' is not a tile{}",
                    if free { " or '.'" } else { "" }
                ))
            })?;
            if v < 2 || !v.is_power_of_two() {
                return Err(bad(format!("{at}: {v} is not a power of two ≥ 2")));
            }
            let e = v.trailing_zeros();
            if e > u32::from(MAX_EXP) {
                return Err(bad(format!("{at}: {v} is above the largest tile, 32768")));
            }
            Ok(Some(e as u8))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(r: usize, c: usize) -> Shape {
        Shape::new(r, c).unwrap()
    }

    #[test]
    fn parses_rows_and_flat_lists_alike() {
        let a = Restriction::parse(shape(2, 3), "16 16 8 / 4 32 8", None).unwrap();
        let b = Restriction::parse(shape(2, 3), "16 16 8 4 32 8", None).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.cap_exp(0), 4);
        assert_eq!(a.cap_exp(3), 2);
        assert_eq!(a.cap_exp(4), 5);
        assert_eq!(a.caps_text(), "16 16 8 / 4 32 8");
        assert_eq!(a.require_code(), None);
    }

    /// [`Limits::breaks_caps`] against the comparison of every cell on its own, on seeded
    /// random boards and caps (tiles and caps of every exponent, equal ones often).
    #[test]
    fn caps_are_broken_exactly_where_a_cell_is_above_its_cap() {
        use rand::{Rng, SeedableRng};
        let naive = |code: u64, caps: u64| {
            (0..16).any(|i| (code >> (4 * i)) & 0xF > (caps >> (4 * i)) & 0xF)
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(64);
        let (mut broken, mut kept) = (0, 0);
        for _ in 0..200_000 {
            let caps: u64 = rng.gen();
            // A board near the caps: each cell its cap or one below it, now and then one
            // above it or anything (about half the boards break a cap).
            let code = (0..16).fold(0u64, |code, i| {
                let cap = (caps >> (4 * i)) & 0xF;
                let tile = match rng.gen_range(0..32) {
                    0 => (cap + 1).min(15),
                    1 => rng.gen_range(0..16),
                    2..=16 => cap,
                    _ => cap.saturating_sub(1),
                };
                code | tile << (4 * i)
            });
            let limits = Limits {
                caps,
                need: 0,
                need_mask: 0,
            };
            assert_eq!(
                limits.breaks_caps(code),
                naive(code, caps),
                "{code:#x} under {caps:#x}"
            );
            if naive(code, caps) {
                broken += 1
            } else {
                kept += 1
            }
        }
        assert!(broken > 1000 && kept > 1000, "{broken} broken, {kept} kept");
    }

    #[test]
    fn caps_and_requirement_decide_boards() {
        let r = Restriction::parse(shape(2, 2), "16 8 / 4 4", Some("16 . / . .")).unwrap();
        // 16 in cell 0 is within its cap; 16 in cell 1 is not.
        assert!(!r.breaks_caps(0x0004));
        assert!(r.breaks_caps(0x0040));
        assert!(r.breaks_caps(0x3000)); // an 8 in cell 3 (cap 4)
        assert!(r.met(0x1234));
        assert!(!r.met(0x1233)); // exactly 16, not 8
        assert_eq!(r.require_text().unwrap(), "16 . / . .");
    }

    #[test]
    fn bad_grids_are_refused() {
        let s = shape(2, 2);
        let err = |caps: &str, req: Option<&str>| {
            Restriction::parse(s, caps, req).unwrap_err().to_string()
        };
        assert!(err("16 16 16", None).contains("3 cells"));
        assert!(err("16 16 / 16 16 / 16 16", None).contains("3 rows"));
        assert!(err("16 16 / 16", None).contains("row 2 has 1 cells"));
        assert!(err("16 12 / 16 16", None).contains("12 is not a power of two"));
        assert!(err("16 2 / 16 16", None).contains("below 4"));
        assert!(err("16 . / 16 16", None).contains("needs a cap"));
        assert!(err("16 8 / 16 16", Some("16 16 / . .")).contains("above that cell's cap 8"));
        assert!(err("16 8 / 16 16", Some(". . / . .")).contains("requires no tile"));
        assert!(err("16 8 / 16 16", Some("3 . / . .")).contains("3 is not a power of two"));
    }

    #[test]
    fn symmetries_keep_the_caps_and_the_requirement() {
        // Uniform caps: the whole group (8 on a square board, 4 on a rectangle).
        let all = |r, c, caps: &str| Restriction::parse(shape(r, c), caps, None).unwrap();
        assert_eq!(
            all(3, 3, "16 16 16 16 16 16 16 16 16").symmetries().len(),
            8
        );
        assert_eq!(all(2, 4, "16 16 16 16 16 16 16 16").symmetries().len(), 4);
        // A bottom row of 8s: only the left-right mirror (index 1 in Symmetry::images) keeps it.
        assert_eq!(
            all(3, 3, "16 16 16 16 16 16 8 8 8").symmetries(),
            vec![0, 1]
        );
        // Slizkov's 2x4 minimal caps: a column of 8s on the right is kept by up-down only.
        assert_eq!(all(2, 4, "16 16 16 8 16 16 16 8").symmetries(), vec![0, 2]);
        // No symmetry at all.
        assert_eq!(all(3, 3, "16 8 16 16 16 16 16 16 4").symmetries(), vec![0]);
        // 8s on the main diagonal: kept by the identity, the 180° turn and both diagonal
        // mirrors; each image is checked.
        let diag = all(3, 3, "8 16 16 16 8 16 16 16 8");
        let sym = Symmetry::new(shape(3, 3), Group::Full);
        let keep = diag.symmetries();
        assert_eq!(
            keep.len(),
            4,
            "identity, 180°, and the two diagonal mirrors"
        );
        for (k, img) in sym.images(diag.caps_code()).into_iter().enumerate() {
            assert_eq!(keep.contains(&k), img == diag.caps_code());
        }
        // A requirement breaks a symmetry the caps keep.
        let req = Restriction::parse(
            shape(2, 4),
            "16 16 16 16 16 16 16 16",
            Some("16 . . . / . . . ."),
        )
        .unwrap();
        assert_eq!(req.symmetries(), vec![0]);
        let req2 = Restriction::parse(
            shape(2, 4),
            "16 16 16 16 16 16 16 16",
            Some("16 . . 16 / . . . ."),
        )
        .unwrap();
        assert_eq!(req2.symmetries(), vec![0, 1]);
    }

    #[test]
    fn with_cap_changes_one_cell() {
        let r = Restriction::parse(shape(2, 2), "16 8 / 4 4", Some("16 . / . .")).unwrap();
        assert_eq!(r.with_cap(1, 4).unwrap().caps_text(), "16 16 / 4 4");
        assert!(
            r.with_cap(0, 3).is_none(),
            "the required 16 would be above the cap"
        );
    }

    #[test]
    fn limits_read_back_from_their_digits_and_choose_the_group() {
        let r = Restriction::parse(
            shape(3, 4),
            "256 128 64 64 / 64 64 64 64 / 64 64 64 64",
            Some("256 128 . . / . . . . / . . . ."),
        )
        .unwrap();
        let l = r.limits();
        assert_eq!(l.caps_digits(12), "876666666666");
        assert_eq!(l.need_digits(12).unwrap(), "870000000000");
        assert_eq!(
            Limits::from_digits("876666666666", Some("870000000000")),
            Some(l)
        );
        assert_eq!(Restriction::from_limits(shape(3, 4), l).unwrap(), r);
        assert!(Restriction::from_limits(shape(3, 3), l).is_none());
        // A cap below 4, a required tile above its cap, a stray character, a short need.
        assert!(Limits::from_digits("816666666666", None).is_none());
        assert!(Limits::from_digits("876666666666", Some("890000000000")).is_none());
        assert!(Limits::from_digits("87666666666x", None).is_none());
        assert!(Limits::from_digits("876666666666", Some("87")).is_none());
        // The group: none here; the left-right mirror for a bottom row of 8s on 3x3, within
        // the group asked for.
        assert_eq!(r.group(Group::Full), Group::None);
        let lr = Restriction::parse(shape(3, 3), "16 16 16 / 16 16 16 / 8 8 8", None).unwrap();
        assert_eq!(lr.group(Group::Full), Group::Kept(0b11));
        assert_eq!(lr.group(Group::None), Group::None);
        let all = Restriction::parse(shape(3, 3), "16 16 16 / 16 16 16 / 16 16 16", None).unwrap();
        assert_eq!(all.group(Group::Full), Group::Full);
        assert_eq!(all.group(Group::Flips), Group::Flips);
    }
}
