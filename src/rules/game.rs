//! A game: the rules of one shape with its symmetry group, shared by every pass.

use super::board;
use super::moves::Rules;
use super::shape::Shape;
use super::symmetry::{Group, Symmetry};

/// Rules plus normaliser for one board shape and symmetry group.
pub struct Game {
    pub rules: Rules,
    pub sym: Symmetry,
}

impl Game {
    pub fn new(shape: Shape, group: Group) -> Game {
        Game {
            rules: Rules::new(shape),
            sym: Symmetry::new(shape, group),
        }
    }

    pub fn shape(&self) -> Shape {
        self.rules.shape()
    }

    pub fn cells(&self) -> usize {
        self.shape().cells()
    }

    /// Canonical id of a board.
    #[inline(always)]
    pub fn canon(&self, code: u64) -> u64 {
        self.sym.canon(code)
    }

    /// The two-tile starting boards with their probabilities under spawn probabilities
    /// (p2, p4): two distinct uniformly random cells, each tile drawn independently. Boards
    /// are raw (not normalised); a board appears once per ordered placement.
    pub fn starts(&self, p4: f64) -> Vec<(u64, f64)> {
        let n = self.cells();
        let mut out = Vec::new();
        if n < 2 {
            return out;
        }
        let tiles = [(1u8, 1.0 - p4), (2u8, p4)];
        let pair = 1.0 / (n * (n - 1)) as f64;
        for i in 0..n {
            for j in 0..n {
                if i == j {
                    continue;
                }
                for &(ei, pi) in &tiles {
                    for &(ej, pj) in &tiles {
                        let p = pair * pi * pj;
                        if p > 0.0 {
                            out.push((board::place(board::place(0, i, ei), j, ej), p));
                        }
                    }
                }
            }
        }
        out
    }
}
