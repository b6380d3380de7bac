//! Results made printable: any DuckDB result, whatever its column types, turned into a batch
//! that the table, CSV and JSON writers can print without failing and without lying.
//!
//! DuckDB hands results over as Arrow. With [`LOSSLESS`] set, types Arrow has no exact match
//! for arrive as opaque bytes tagged with their DuckDB type (`HUGEINT`, `UHUGEINT`, `TIMETZ`,
//! `BIT`, `BIGNUM`, `UUID` as `arrow.uuid`, `BOOLEAN` as `arrow.bool8`); [`printable`]
//! decodes them to DuckDB's own text (booleans to booleans), at any depth of nesting (without the setting HUGEINT beyond 38 digits prints wrong
//! digits, UHUGEINT beyond 2^127 prints negative, TIMETZ loses its offset, BIT and BIGNUM
//! print their storage bytes). Then what a writer cannot print becomes text: nested and union
//! columns for CSV, unions and maps with non-text keys for JSON. Time zones are printed with
//! Arrow's `chrono-tz` tables; a zone those do not know prints in UTC with its offset.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, FixedSizeListArray, GenericListArray, MapArray,
    OffsetSizeTrait, RecordBatch, StringArray, StructArray,
};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Int8Type, Schema};
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// The setting that makes DuckDB tag the types Arrow cannot hold exactly (run it on the
/// connection whose results are printed).
pub const LOSSLESS: &str = "SET arrow_lossless_conversion = true";

/// Which writer a batch is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Table,
    Csv,
    Json,
}

/// `batch` with every column printable by `target`'s writer (see the module comment).
pub fn printable(batch: &RecordBatch, target: Target) -> RecordBatch {
    let schema = batch.schema();
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (f, c) in schema.fields().iter().zip(batch.columns()) {
        let (f, c) = decode(f, c);
        let (f, c) = if writable(f.data_type(), target) {
            (f, c)
        } else {
            as_text(&f, &c)
        };
        fields.push(f);
        columns.push(c);
    }
    rebuild(batch, fields, columns)
}

/// `batch` with every column as text: the last resort if a writer still fails.
pub fn all_text(batch: &RecordBatch) -> RecordBatch {
    let schema = batch.schema();
    let (fields, columns) = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, c)| {
            let (f, c) = decode(f, c);
            as_text(&f, &c)
        })
        .unzip();
    rebuild(batch, fields, columns)
}

fn rebuild(batch: &RecordBatch, fields: Vec<FieldRef>, columns: Vec<ArrayRef>) -> RecordBatch {
    let schema = Arc::new(Schema::new_with_metadata(
        fields,
        batch.schema().metadata().clone(),
    ));
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(schema.clone(), columns, &options)
        .unwrap_or_else(|_| RecordBatch::new_empty(schema))
}

/// True if the writer of `target` prints this type.
fn writable(t: &DataType, target: Target) -> bool {
    use DataType::*;
    match target {
        Target::Table => true,
        Target::Csv => match t {
            List(_) | LargeList(_) | FixedSizeList(..) | ListView(_) | LargeListView(_)
            | Struct(_) | Map(..) | Union(..) | RunEndEncoded(..) => false,
            Dictionary(_, v) => writable(v, target),
            _ => true,
        },
        Target::Json => match t {
            Union(..) | RunEndEncoded(..) | ListView(_) | LargeListView(_) => false,
            Map(entries, _) => match entries.data_type() {
                Struct(kv) => {
                    kv.len() == 2
                        && matches!(kv[0].data_type(), Utf8 | LargeUtf8 | Utf8View)
                        && writable(kv[1].data_type(), target)
                }
                _ => false,
            },
            List(f) | LargeList(f) | FixedSizeList(f, _) => writable(f.data_type(), target),
            Struct(fs) => fs.iter().all(|f| writable(f.data_type(), target)),
            Dictionary(_, v) => writable(v, target),
            _ => true,
        },
    }
}

/// A column as text, as Arrow displays it; a value Arrow cannot display (a time zone it does
/// not know) is shown in UTC, or failing that as `<TYPE>`.
fn as_text(f: &FieldRef, c: &ArrayRef) -> (FieldRef, ArrayRef) {
    let opts = FormatOptions::new().with_null("");
    let utc = in_utc(c);
    let text: Vec<Option<String>> = match ArrayFormatter::try_new(c.as_ref(), &opts) {
        Ok(fmt) => (0..c.len())
            .map(|i| {
                (!c.is_null(i)).then(|| {
                    fmt.value(i).try_to_string().unwrap_or_else(|_| {
                        utc.as_ref()
                            .and_then(|u| {
                                ArrayFormatter::try_new(u.as_ref(), &opts)
                                    .ok()
                                    .and_then(|g| g.value(i).try_to_string().ok())
                            })
                            .unwrap_or_else(|| format!("<{}>", c.data_type()))
                    })
                })
            })
            .collect(),
        Err(_) => (0..c.len())
            .map(|i| (!c.is_null(i)).then(|| format!("<{}>", c.data_type())))
            .collect(),
    };
    (
        Arc::new(Field::new(f.name(), DataType::Utf8, true)),
        Arc::new(StringArray::from(text)),
    )
}

/// A timestamp column with a time zone, as the same instants in UTC.
fn in_utc(c: &ArrayRef) -> Option<ArrayRef> {
    match c.data_type() {
        DataType::Timestamp(unit, Some(_)) => {
            let t = DataType::Timestamp(*unit, Some("+00:00".into()));
            let data = c.to_data().into_builder().data_type(t).build().ok()?;
            Some(arrow::array::make_array(data))
        }
        _ => None,
    }
}

/// Decodes DuckDB's tagged types at any depth; other columns are returned as they are.
fn decode(f: &FieldRef, c: &ArrayRef) -> (FieldRef, ArrayRef) {
    // `arrow.bool8`: booleans as one byte each.
    if f.metadata().get("ARROW:extension:name").map(String::as_str) == Some("arrow.bool8") {
        if let Some(v) = c.as_primitive_opt::<Int8Type>() {
            let b: BooleanArray = v.iter().map(|x| x.map(|x| x != 0)).collect();
            return (
                Arc::new(Field::new(f.name(), DataType::Boolean, true)),
                Arc::new(b),
            );
        }
    }
    if let Some(kind) = duckdb_type(f) {
        let text: Vec<Option<String>> = (0..c.len())
            .map(|i| (!c.is_null(i)).then(|| decode_value(kind, bytes_at(c, i))))
            .collect();
        return (
            Arc::new(Field::new(f.name(), DataType::Utf8, true)),
            Arc::new(StringArray::from(text)),
        );
    }
    let keep = (f.clone(), c.clone());
    match c.data_type() {
        DataType::List(child) => decode_list::<i32>(f, c.as_list::<i32>(), child).unwrap_or(keep),
        DataType::LargeList(child) => {
            decode_list::<i64>(f, c.as_list::<i64>(), child).unwrap_or(keep)
        }
        DataType::FixedSizeList(child, size) => {
            let l = c.as_fixed_size_list();
            let (nf, nv) = decode(child, l.values());
            if Arc::ptr_eq(&nv, l.values()) {
                return keep;
            }
            FixedSizeListArray::try_new(nf.clone(), *size, nv, l.nulls().cloned())
                .ok()
                .map(|a| {
                    let t = DataType::FixedSizeList(nf, *size);
                    (
                        Arc::new(Field::new(f.name(), t, f.is_nullable())) as FieldRef,
                        Arc::new(a) as ArrayRef,
                    )
                })
                .unwrap_or(keep)
        }
        DataType::Struct(fields) => {
            let s = c.as_struct();
            decode_struct(fields, s)
                .map(|a| {
                    let t = DataType::Struct(a.fields().clone());
                    (
                        Arc::new(Field::new(f.name(), t, f.is_nullable())) as FieldRef,
                        Arc::new(a) as ArrayRef,
                    )
                })
                .unwrap_or(keep)
        }
        DataType::Map(entries_field, sorted) => {
            let m = c.as_map();
            let DataType::Struct(kv) = entries_field.data_type() else {
                return keep;
            };
            let Some(entries) = decode_struct(kv, m.entries()) else {
                return keep;
            };
            let ef = Arc::new(Field::new(
                entries_field.name(),
                DataType::Struct(entries.fields().clone()),
                entries_field.is_nullable(),
            ));
            MapArray::try_new(
                ef.clone(),
                m.offsets().clone(),
                entries,
                m.nulls().cloned(),
                *sorted,
            )
            .ok()
            .map(|a| {
                let t = DataType::Map(ef, *sorted);
                (
                    Arc::new(Field::new(f.name(), t, f.is_nullable())) as FieldRef,
                    Arc::new(a) as ArrayRef,
                )
            })
            .unwrap_or(keep)
        }
        _ => keep,
    }
}

fn decode_list<O: OffsetSizeTrait>(
    f: &FieldRef,
    l: &GenericListArray<O>,
    child: &FieldRef,
) -> Option<(FieldRef, ArrayRef)> {
    let (nf, nv) = decode(child, l.values());
    if Arc::ptr_eq(&nv, l.values()) {
        return None;
    }
    let a = GenericListArray::<O>::try_new(nf.clone(), l.offsets().clone(), nv, l.nulls().cloned())
        .ok()?;
    let t = if O::IS_LARGE {
        DataType::LargeList(nf)
    } else {
        DataType::List(nf)
    };
    Some((
        Arc::new(Field::new(f.name(), t, f.is_nullable())),
        Arc::new(a),
    ))
}

/// The struct with its children decoded; `None` if nothing changed (or it cannot be rebuilt).
fn decode_struct(fields: &Fields, s: &StructArray) -> Option<StructArray> {
    let mut changed = false;
    let (nf, nc): (Vec<FieldRef>, Vec<ArrayRef>) = fields
        .iter()
        .zip(s.columns())
        .map(|(f, c)| {
            let (nf, nc) = decode(f, c);
            changed |= !Arc::ptr_eq(&nc, c);
            (nf, nc)
        })
        .unzip();
    if !changed {
        return None;
    }
    StructArray::try_new(Fields::from(nf), nc, s.nulls().cloned()).ok()
}

/// DuckDB types that arrive tagged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tagged {
    Hugeint,
    Uhugeint,
    TimeTz,
    Bit,
    Bignum,
    Uuid,
    /// Another DuckDB type without an Arrow match: its bytes in hexadecimal.
    Other,
}

fn duckdb_type(f: &Field) -> Option<Tagged> {
    let md = f.metadata();
    match md.get("ARROW:extension:name").map(String::as_str) {
        Some("arrow.uuid") => Some(Tagged::Uuid),
        Some("arrow.opaque") => {
            let meta: serde_json::Value = md
                .get("ARROW:extension:metadata")
                .and_then(|m| serde_json::from_str(m).ok())
                .unwrap_or_default();
            if meta["vendor_name"] != "DuckDB" {
                return None;
            }
            Some(match meta["type_name"].as_str() {
                Some("hugeint") => Tagged::Hugeint,
                Some("uhugeint") => Tagged::Uhugeint,
                Some("time_tz") => Tagged::TimeTz,
                Some("bit") => Tagged::Bit,
                Some("bignum") | Some("varint") => Tagged::Bignum,
                _ => Tagged::Other,
            })
        }
        _ => None,
    }
    .filter(|_| {
        matches!(
            f.data_type(),
            DataType::FixedSizeBinary(_) | DataType::Binary | DataType::LargeBinary
        )
    })
}

fn bytes_at(c: &ArrayRef, i: usize) -> &[u8] {
    match c.data_type() {
        DataType::FixedSizeBinary(_) => c.as_fixed_size_binary().value(i),
        DataType::Binary => c.as_binary::<i32>().value(i),
        DataType::LargeBinary => c.as_binary::<i64>().value(i),
        _ => &[],
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// DuckDB's text of one tagged value (its bytes in hexadecimal if they are not well formed).
fn decode_value(kind: Tagged, b: &[u8]) -> String {
    let fixed16 = <[u8; 16]>::try_from(b);
    match (kind, fixed16) {
        (Tagged::Hugeint, Ok(x)) => i128::from_le_bytes(x).to_string(),
        (Tagged::Uhugeint, Ok(x)) => u128::from_le_bytes(x).to_string(),
        (Tagged::Uuid, Ok(x)) => {
            let h = hex(&x);
            format!(
                "{}-{}-{}-{}-{}",
                &h[0..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..32]
            )
        }
        (Tagged::TimeTz, _) => <[u8; 8]>::try_from(b)
            .map(|x| time_tz(u64::from_le_bytes(x)))
            .unwrap_or_else(|_| hex(b)),
        (Tagged::Bit, _) => bits(b).unwrap_or_else(|| hex(b)),
        (Tagged::Bignum, _) => bignum(b).unwrap_or_else(|| hex(b)),
        _ => hex(b),
    }
}

/// DuckDB's `TIMETZ`: microseconds since midnight in the high 40 bits, the offset in the low
/// 24 (stored as `MAX - seconds east of UTC`, so that values sort by instant).
fn time_tz(bits: u64) -> String {
    const MAX_OFFSET: i64 = 16 * 60 * 60 - 1;
    let micros = bits >> 24;
    let offset = MAX_OFFSET - (bits & 0xFF_FFFF) as i64;
    let (s, us) = (micros / 1_000_000, micros % 1_000_000);
    let mut out = format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    if us > 0 {
        let frac = format!("{us:06}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    let sign = if offset < 0 { '-' } else { '+' };
    let o = offset.unsigned_abs();
    out.push_str(&format!("{sign}{:02}", o / 3600));
    if !o.is_multiple_of(3600) {
        out.push_str(&format!(":{:02}", o / 60 % 60));
        if !o.is_multiple_of(60) {
            out.push_str(&format!(":{:02}", o % 60));
        }
    }
    out
}

/// DuckDB's `BIT`: a byte counting the padding bits, then the bits (the first byte's padding
/// bits first).
fn bits(b: &[u8]) -> Option<String> {
    let (&pad, data) = b.split_first()?;
    if data.is_empty() || pad > 7 {
        return None;
    }
    let mut s = String::with_capacity(data.len() * 8);
    for (i, byte) in data.iter().enumerate() {
        for k in (0..8).rev() {
            if i == 0 && 7 - k < u32::from(pad) {
                continue;
            }
            s.push(if byte >> k & 1 == 1 { '1' } else { '0' });
        }
    }
    Some(s)
}

/// DuckDB's `BIGNUM`: a 3-byte header (the sign in its top bit, set for ≥ 0; the number of
/// data bytes below) and the magnitude's bytes, big-endian; a negative number has header
/// and data bits inverted.
fn bignum(b: &[u8]) -> Option<String> {
    if b.len() < 4 {
        return None;
    }
    let negative = b[0] & 0x80 == 0;
    let bytes: Vec<u8> = if negative {
        b.iter().map(|x| !x).collect()
    } else {
        b.to_vec()
    };
    let len =
        (usize::from(bytes[0] & 0x7F) << 16) | (usize::from(bytes[1]) << 8) | usize::from(bytes[2]);
    let data = &bytes[3..];
    if len != data.len() {
        return None;
    }
    // Base-256 digits to base 10^9 limbs (least significant first), then to text.
    let mut limbs: Vec<u32> = vec![0];
    for &d in data {
        let mut carry = u64::from(d);
        for l in limbs.iter_mut() {
            let v = u64::from(*l) * 256 + carry;
            *l = (v % 1_000_000_000) as u32;
            carry = v / 1_000_000_000;
        }
        while carry > 0 {
            limbs.push((carry % 1_000_000_000) as u32);
            carry /= 1_000_000_000;
        }
    }
    let mut s = String::new();
    if negative && limbs.iter().any(|&l| l != 0) {
        s.push('-');
    }
    let mut it = limbs.iter().rev();
    s.push_str(&it.next().copied().unwrap_or(0).to_string());
    for l in it {
        s.push_str(&format!("{l:09}"));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duckdb_encodings_decode_to_duckdbs_text() {
        assert_eq!(time_tz(0x0a0e_ebb0_0000_d2ef), "12:00:00+01");
        assert_eq!(bits(&[5, 0xfd]).as_deref(), Some("101"));
        assert_eq!(bits(&[0, 0x80, 0x01]).as_deref(), Some("1000000000000001"));
        let pos = [
            0x80, 0x00, 0x0a, 0x02, 0x9d, 0x42, 0xb6, 0x4e, 0x76, 0x71, 0x42, 0x44, 0xcb,
        ];
        assert_eq!(bignum(&pos).as_deref(), Some("12345678901234567890123"));
        assert_eq!(
            bignum(&[0x7f, 0xff, 0xfd, 0xfe, 0xd3]).as_deref(),
            Some("-300")
        );
        assert_eq!(bignum(&[0x80, 0x00, 0x01, 0x00]).as_deref(), Some("0"));
        assert_eq!(bignum(&[0x80, 0x00, 0x05, 0x00]), None);
        assert_eq!(
            decode_value(Tagged::Uhugeint, &[0xff; 16]),
            u128::MAX.to_string()
        );
        assert_eq!(
            decode_value(Tagged::Hugeint, &i128::MIN.to_le_bytes()),
            i128::MIN.to_string()
        );
        assert_eq!(decode_value(Tagged::Hugeint, &[1, 2]), "0102");
    }
}
