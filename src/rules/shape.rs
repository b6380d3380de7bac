//! Board shapes: R rows × C columns with R·C ≤ 16 (a board code has 16 nibbles).

use std::fmt;

use super::error::BoardError;

/// Largest number of cells a code can hold (4 bits × 16 = 64).
pub const MAX_CELLS: usize = 16;

/// A board shape, R rows × C columns with R·C ≤ 16.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shape {
    rows: u8,
    cols: u8,
}

impl Shape {
    /// A shape with `rows` × `cols` cells; both at least 1, the product at most 16.
    pub fn new(rows: usize, cols: usize) -> Result<Shape, BoardError> {
        if rows == 0 || cols == 0 || rows * cols > MAX_CELLS {
            return Err(BoardError::Shape {
                text: format!("{rows}x{cols}"),
                reason: "rows and columns must be at least 1 and rows×cols at most 16".into(),
            });
        }
        Ok(Shape {
            rows: rows as u8,
            cols: cols as u8,
        })
    }

    /// Parses `RxC`, e.g. `3x3` or `2x4`.
    pub fn parse(text: &str) -> Result<Shape, BoardError> {
        let bad = |reason: &str| BoardError::Shape {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let (r, c) = text
            .trim()
            .split_once(['x', 'X'])
            .ok_or_else(|| bad("expected RxC, e.g. 3x3"))?;
        let r: usize = r.parse().map_err(|_| bad("rows is not a number"))?;
        let c: usize = c.parse().map_err(|_| bad("columns is not a number"))?;
        Shape::new(r, c)
            .map_err(|_| bad("rows and columns must be at least 1 and rows×cols at most 16"))
    }

    pub fn rows(self) -> usize {
        self.rows as usize
    }
    pub fn cols(self) -> usize {
        self.cols as usize
    }
    pub fn cells(self) -> usize {
        self.rows() * self.cols()
    }
    pub fn is_square(self) -> bool {
        self.rows == self.cols
    }
    /// The transposed shape (C×R).
    pub fn transposed(self) -> Shape {
        Shape {
            rows: self.cols,
            cols: self.rows,
        }
    }
    /// Mask of the bits a code of this shape may use.
    pub fn mask(self) -> u64 {
        if self.cells() == MAX_CELLS {
            u64::MAX
        } else {
            (1u64 << (4 * self.cells())) - 1
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}
