//! The columns of the three tables, defined once: the Parquet writers take their Arrow types
//! from here, the SQL catalog its DuckDB types (for the views and their empty stand-ins), and
//! the documentation its descriptions.

use arrow::datatypes::DataType;

/// The type of a column, with its Arrow and DuckDB spellings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    U8,
    U32,
    U64,
    F64,
    Bool,
    Utf8,
}

impl ColumnType {
    pub fn arrow(self) -> DataType {
        match self {
            ColumnType::U8 => DataType::UInt8,
            ColumnType::U32 => DataType::UInt32,
            ColumnType::U64 => DataType::UInt64,
            ColumnType::F64 => DataType::Float64,
            ColumnType::Bool => DataType::Boolean,
            ColumnType::Utf8 => DataType::Utf8,
        }
    }

    pub fn duckdb(self) -> &'static str {
        match self {
            ColumnType::U8 => "UTINYINT",
            ColumnType::U32 => "UINTEGER",
            ColumnType::U64 => "UBIGINT",
            ColumnType::F64 => "DOUBLE",
            ColumnType::Bool => "BOOLEAN",
            ColumnType::Utf8 => "VARCHAR",
        }
    }
}

/// One column of a table.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub name: &'static str,
    pub ty: ColumnType,
    pub nullable: bool,
    pub doc: &'static str,
}

const fn col(name: &'static str, ty: ColumnType, nullable: bool, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable,
        doc,
    }
}

/// A table: its partition keys (folders) and its columns (in the Parquet files).
#[derive(Clone, Copy, Debug)]
pub struct Table {
    pub name: &'static str,
    pub keys: &'static [Column],
    pub columns: &'static [Column],
}

impl Table {
    /// Partition keys then columns, as the SQL views show them.
    pub fn all_columns(&self) -> impl Iterator<Item = &Column> {
        self.keys.iter().chain(self.columns)
    }
}

use ColumnType::*;

const BOARD: Column = col("board", Utf8, false, "board size RxC");
const VARIANT: Column = col("variant", Utf8, false, "variant name");
const AGE: Column = col("age", U32, false, "sum of the tiles");

pub const STATES: Table = Table {
    name: "states",
    keys: &[BOARD, VARIANT, AGE],
    columns: &[
        col(
            "id",
            U64,
            false,
            "board code of the smallest symmetric image (4 bits a cell)",
        ),
        col("value", F64, false, "optimal value"),
        col(
            "terminal",
            Bool,
            false,
            "no move left (or, for goal variants, the goal tile is on the board)",
        ),
        col("moves", U8, false, "number of valid moves"),
        col(
            "best",
            Utf8,
            true,
            "best move L/R/U/D (the first of equal ones), null without a move",
        ),
        col(
            "gap",
            F64,
            true,
            "best q minus second-best q, null with fewer than two moves",
        ),
        col("empty", U8, false, "empty cells"),
    ],
};

pub const AFTERSTATES: Table = Table {
    name: "afterstates",
    keys: &[BOARD, VARIANT, AGE],
    columns: &[
        col(
            "id",
            U64,
            false,
            "board code of the smallest symmetric image",
        ),
        col("value", F64, false, "optimal value before the spawn"),
        col("empty", U8, false, "empty cells"),
    ],
};

pub const AGES: Table = Table {
    name: "ages",
    keys: &[BOARD, VARIANT],
    columns: &[
        col("age", U32, false, "sum of the tiles"),
        col("n_states", U64, false, "states of this age"),
        col("n_afterstates", U64, false, "afterstates of this age"),
        col(
            "n_terminal_states",
            U64,
            false,
            "terminal states of this age",
        ),
        col(
            "mean_empty_cells_afterstates",
            F64,
            true,
            "mean empty cells of the afterstates",
        ),
        col(
            "best_afterstate_value",
            F64,
            true,
            "largest afterstate value",
        ),
        col("mean_state_value", F64, true, "mean state value"),
        col(
            "mean_action_gap",
            F64,
            true,
            "mean gap over states with two moves or more",
        ),
        col(
            "frac_gap_lt_1",
            F64,
            true,
            "share of those states with a gap below 1",
        ),
        col(
            "n_reached",
            U64,
            true,
            "states optimal play reaches (a policy solve kept over them), else null",
        ),
    ],
};

/// The three tables of a data directory.
pub const TABLES: [&Table; 3] = [&STATES, &AFTERSTATES, &AGES];
