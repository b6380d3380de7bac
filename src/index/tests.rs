//! Seeded tests of the index against naive versions, and corruption tests.

use super::compaction::*;
use super::elias_fano::*;
use super::raw::*;
use super::select::*;
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;

fn naive_select(x: u64, k: u32) -> u32 {
    let mut seen = 0;
    for p in 0..64 {
        if (x >> p) & 1 == 1 {
            if seen == k {
                return p;
            }
            seen += 1;
        }
    }
    unreachable!()
}

#[test]
fn select_in_word_matches_naive() {
    let mut rng = StdRng::seed_from_u64(1);
    let mut words = vec![u64::MAX, 1, 1 << 63, 0x8000_0000_0000_0001];
    for _ in 0..2000 {
        let density = rng.gen_range(0..4);
        let mut w = rng.gen::<u64>();
        for _ in 0..density {
            w &= rng.gen::<u64>();
        }
        words.push(w);
    }
    for w in words {
        for k in 0..w.count_ones() {
            assert_eq!(select_in_word(w, k), naive_select(w, k), "w={w:#x} k={k}");
        }
    }
}

/// Checks every operation of `ef` against the sorted vector `v`, including probes
/// around each element and random probes.
fn check_set(v: &[u64], rng: &mut StdRng) {
    let ef = EliasFano::from_sorted(v).unwrap();
    assert_eq!(ef.len(), v.len());
    assert_eq!(ef.is_empty(), v.is_empty());
    assert_eq!(ef.iter().len(), v.len());
    assert!(ef.iter().eq(v.iter().copied()));
    for (i, &x) in v.iter().enumerate() {
        assert_eq!(ef.get(i), Some(x), "get({i})");
        assert_eq!(ef.rank_of(x), Some(i), "rank_of({x})");
    }
    assert_eq!(ef.get(v.len()), None);
    let probe = |x: u64| {
        assert_eq!(ef.rank_of(x), v.binary_search(&x).ok(), "probe {x}");
    };
    for &x in v.iter().take(2000) {
        probe(x.wrapping_add(1));
        probe(x.wrapping_sub(1));
    }
    for x in [0, 1, 2, u64::MAX, u64::MAX - 1, 1 << 40, 1 << 63] {
        probe(x);
    }
    if let Some(&last) = v.last() {
        probe(last.wrapping_add(1));
        for _ in 0..500 {
            probe(rng.gen_range(0..=last));
        }
    }
    // Round trip through a borrowed slice: the same bytes work zero-copy.
    let borrowed = EliasFano::from_bytes(ef.as_bytes()).unwrap();
    assert!(borrowed.iter().eq(v.iter().copied()));
}

fn random_set(rng: &mut StdRng, m: usize, universe: u64) -> Vec<u64> {
    let mut s = BTreeSet::new();
    let m = (m as u64).min(universe) as usize;
    while s.len() < m {
        s.insert(rng.gen_range(0..universe));
    }
    s.into_iter().collect()
}

#[test]
fn elias_fano_matches_sorted_vec() {
    let mut rng = StdRng::seed_from_u64(2);
    check_set(&[], &mut rng);
    for x in [0, 1, 2, 255, 256, 1 << 40, u64::MAX - 1, u64::MAX] {
        check_set(&[x], &mut rng);
    }
    check_set(&[0, u64::MAX], &mut rng);
    check_set(&(0..1000).collect::<Vec<_>>(), &mut rng);
    check_set(
        &(0..700).map(|i| u64::MAX - 699 + i).collect::<Vec<_>>(),
        &mut rng,
    );
    for &m in &[2usize, 3, 10, 100, 257, 1000, 5000] {
        for &universe in &[
            m as u64,
            m as u64 + 1,
            2 * m as u64,
            (m as u64) * 3 + 7,
            1 << 20,
            1 << 40,
            1 << 63,
            u64::MAX,
        ] {
            for _ in 0..3 {
                let mut v = random_set(&mut rng, m, universe);
                // Edge values 0 and U-1 are where off-by-ones live.
                if v.len() >= 2 {
                    v[0] = 0;
                    *v.last_mut().unwrap() = universe - 1;
                    v.dedup();
                }
                check_set(&v, &mut rng);
            }
        }
    }
}

#[test]
fn elias_fano_big_buckets_and_runs() {
    // Clustered sets give long runs of ones (multi-word) and big buckets (binary
    // search path), and long runs of zeros for select0.
    let mut rng = StdRng::seed_from_u64(3);
    let mut v: Vec<u64> = (0..3000).collect();
    v.extend((0..3000).map(|i| (1 << 50) + i * 3));
    v.push(u64::MAX / 2);
    check_set(&v, &mut rng);
    let mut v: Vec<u64> = (0..200).map(|i| i * 1_000_000).collect();
    v.extend((0..5000).map(|i| 300_000_000 + i));
    check_set(&v, &mut rng);
}

#[test]
fn elias_fano_rejects_bad_input() {
    assert!(matches!(
        EliasFano::from_sorted(&[3, 3]),
        Err(IndexError::InvalidInput { .. })
    ));
    assert!(matches!(
        EliasFano::from_sorted(&[4, 3]),
        Err(IndexError::InvalidInput { .. })
    ));
    // A value above the last one (the encoder sizes its bits by the last value before it
    // meets the others): an error, not a write out of bounds.
    assert!(matches!(
        EliasFano::from_sorted(&[5, 1 << 40, 3]),
        Err(IndexError::InvalidInput { .. })
    ));
    let mut out = vec![0u8; 3];
    assert!(encode_elias_fano(&[1], &mut out).is_err());
}

#[test]
fn elias_fano_hostile_bytes_never_panic() {
    let mut rng = StdRng::seed_from_u64(4);
    for trial in 0..300 {
        let m = rng.gen_range(0..600);
        let bits = rng.gen_range(10..64);
        let v = random_set(&mut rng, m, 1 << bits);
        let good = EliasFano::from_sorted(&v).unwrap().into_inner();
        let mut bad = good.clone();
        for _ in 0..rng.gen_range(1..4) {
            let i = rng.gen_range(0..bad.len());
            bad[i] ^= 1 << rng.gen_range(0..8);
        }
        if trial % 5 == 0 {
            bad.truncate(rng.gen_range(0..bad.len()));
        }
        if let Ok(ef) = EliasFano::from_bytes(&bad[..]) {
            // Only low bits can change undetected; exercise everything anyway.
            let n = ef.len();
            let _ = ef.iter().count();
            for i in 0..n + 2 {
                let _ = ef.get(i);
            }
            for &x in &v {
                let _ = ef.rank_of(x);
                let _ = ef.rank_of(x ^ 1);
            }
        }
    }
    for len in 0..200 {
        let junk: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        assert!(EliasFano::from_bytes(junk).is_err());
    }
}

/// A random board with the given tile sum (`age` even, ≥ 2), or None if the draw ran
/// out of cells.
fn random_board(rng: &mut StdRng, n: u32, age: u64, max_e: u64) -> Option<u64> {
    let mut rest = age;
    let mut code = 0u64;
    let mut empty: Vec<u32> = (0..n).collect();
    while rest > 0 {
        if empty.is_empty() {
            return None;
        }
        let cell = empty.swap_remove(rng.gen_range(0..empty.len()));
        let top = (63 - rest.leading_zeros() as u64).min(max_e);
        let e = rng.gen_range(1..=top);
        code |= e << (4 * cell);
        rest -= 1 << e;
    }
    Some(code)
}

fn boards_of_age(rng: &mut StdRng, n: u32, age: u64, count: usize) -> Vec<u64> {
    let mut s = BTreeSet::new();
    for _ in 0..count * 20 {
        if s.len() >= count {
            break;
        }
        if let Some(c) = random_board(rng, n, age, 15) {
            s.insert(c);
        }
    }
    s.into_iter().collect()
}

#[test]
fn compaction_is_monotone_and_invertible_exhaustive() {
    // Every 2x2 board with exponents ≤ 6: per age, compaction must be strictly
    // increasing and expand must invert it.
    let mut by_age: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for code in 0u64..(1 << 16) {
        if (0..4).all(|i| (code >> (4 * i)) & 15 <= 6) {
            by_age.entry(board_age(code)).or_default().push(code);
        }
    }
    for (age, codes) in by_age {
        let base = Compaction::base_for(codes.iter().copied());
        let c = Compaction::new(2, 2, age as u32, base).unwrap();
        let ids: Vec<u64> = codes.iter().map(|&x| c.compact(x).unwrap()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "age {age}");
        for (&code, &id) in codes.iter().zip(&ids) {
            assert_eq!(c.expand(id), Some(code));
            assert!(id < c.universe());
        }
        // Ids that are not images of a board of this age must not expand to one.
        let img: BTreeSet<u64> = ids.iter().copied().collect();
        for id in 0..c.universe() {
            if let Some(code) = c.expand(id) {
                assert!(img.contains(&id) || (code & 15) > 6);
                assert_eq!(c.compact(code), Some(id));
            }
        }
        assert_eq!(c.expand(c.universe()), None);
    }
}

#[test]
fn max_exponent_is_the_largest_nibble_of_all_codes() {
    let naive = |codes: &[u64]| {
        codes
            .iter()
            .flat_map(|&c| (0..16).map(move |i| ((c >> (4 * i)) & 15) as u8))
            .max()
            .unwrap_or(0)
    };
    let mut rng = StdRng::seed_from_u64(12);
    assert_eq!(max_exponent([]), 0);
    for round in 0..2000 {
        // Few codes or many; the largest exponent in any cell, sparse boards or full ones.
        let top = rng.gen_range(1..=16u64);
        let cells = rng.gen_range(0..=16);
        let codes: Vec<u64> = (0..rng.gen_range(0..40))
            .map(|_| {
                (0..cells).fold(0u64, |acc, _| {
                    acc | (rng.gen_range(0..top) << (4 * rng.gen_range(0..16)))
                })
            })
            .collect();
        assert_eq!(
            max_exponent(codes.iter().copied()),
            naive(&codes),
            "round {round}"
        );
    }
    for e in 0..16u64 {
        for i in 0..16 {
            assert_eq!(max_exponent([0x1111, e << (4 * i)]), e.max(1) as u8);
        }
    }
}

#[test]
fn scan_codes_is_the_largest_nibble_and_the_first_pair_out_of_order() {
    // Sets that span several of the scan's tasks (2^16 codes each), sorted or with a pair out
    // of order near a task's edge, inside a task, or at both ends; against naive scans.
    let naive_first = |codes: &[u64]| codes.windows(2).position(|w| w[0] >= w[1]).map(|i| i + 1);
    let mut rng = StdRng::seed_from_u64(14);
    for round in 0..24 {
        let n = match round % 4 {
            0 => rng.gen_range(0..4),
            1 => rng.gen_range(1..1000),
            _ => rng.gen_range((1 << 16) - 2..3 << 16),
        };
        let top = rng.gen_range(1..=16u64);
        let mut codes: Vec<u64> = (0..n)
            .map(|_| (0..16).fold(0u64, |acc, i| acc | (rng.gen_range(0..top) << (4 * i))))
            .collect();
        codes.sort_unstable();
        codes.dedup();
        let sorted = scan_codes(&codes);
        assert_eq!(
            sorted,
            (max_exponent(codes.iter().copied()), None),
            "round {round}"
        );
        if codes.len() < 2 {
            continue;
        }
        // Break the order: a repeat or a swap, at a task's edge or anywhere.
        for _ in 0..3 {
            let mut bad = codes.clone();
            let at = match rng.gen_range(0..4) {
                0 if bad.len() > 1 << 16 => 1 << 16,
                1 => bad.len() - 1,
                2 => 1,
                _ => rng.gen_range(1..bad.len()),
            };
            if rng.gen_bool(0.5) {
                bad[at] = bad[at - 1];
            } else {
                bad.swap(at - 1, at);
            }
            let want = (max_exponent(bad.iter().copied()), naive_first(&bad));
            assert!(want.1.is_some());
            assert_eq!(scan_codes(&bad), want, "round {round}, broken at {at}");
        }
    }
}

#[test]
fn batch_compaction_is_compact_on_good_and_bad_codes() {
    let mut rng = StdRng::seed_from_u64(13);
    for &(rows, cols) in &[
        (1u8, 2u8),
        (2, 2),
        (3, 3),
        (2, 4),
        (3, 4),
        (4, 3),
        (4, 4),
        (1, 16),
    ] {
        let n = u32::from(rows) * u32::from(cols);
        for _ in 0..40 {
            let age = 2 * rng.gen_range(1..=600u64);
            let mut codes = boards_of_age(&mut rng, n, age, 300);
            // Bad ones too: a cell changed (another age, an exponent at or above the base),
            // a cell outside the board.
            for k in 0..codes.len() {
                let c = codes[k];
                let cell = rng.gen_range(0..16);
                codes.push(c ^ (rng.gen_range(1..16u64) << (4 * cell)));
            }
            let most = max_exponent(codes.iter().copied());
            for base in [
                Compaction::base_for(codes.iter().copied()),
                (most + 1).max(2),
                2,
                16,
            ] {
                let Ok(codec) = Compaction::new(rows, cols, age as u32, base) else {
                    continue;
                };
                let batch = Batch::new(&codec);
                for &c in &codes {
                    assert_eq!(
                        batch.compact(c),
                        codec.compact(c),
                        "{rows}x{cols} {c:#x} b={base}"
                    );
                }
            }
        }
    }
}

#[test]
fn code_set_with_real_looking_boards() {
    let mut rng = StdRng::seed_from_u64(5);
    for &(rows, cols, age) in &[
        (1u8, 1u8, 4u32),
        (2, 2, 36),
        (2, 3, 100),
        (3, 3, 500),
        (3, 4, 2048 + 12),
        (4, 4, 1000),
        (4, 4, 65534),
    ] {
        let n = rows as u32 * cols as u32;
        let codes = boards_of_age(&mut rng, n, age as u64, 3000);
        let set = CodeSet::build(rows, cols, age, &codes).unwrap();
        assert_eq!(set.len(), codes.len());
        assert!(set.iter().eq(codes.iter().copied()));
        for (i, &c) in codes.iter().enumerate() {
            assert_eq!(set.rank_of_code(c), Some(i));
            assert_eq!(set.code_at(i), Some(c));
        }
        assert_eq!(set.code_at(codes.len()), None);
        // Absent boards of the same age, other ages, other shapes, big exponents.
        let present: BTreeSet<u64> = codes.iter().copied().collect();
        let others = boards_of_age(&mut rng, n, age as u64, 3000);
        for &c in others.iter().filter(|c| !present.contains(c)) {
            assert_eq!(set.rank_of_code(c), None);
        }
        for &c in &codes {
            assert_eq!(set.rank_of_code(c ^ 1), None, "age differs");
            if n < 16 {
                assert_eq!(set.rank_of_code(c | 1 << (4 * n)), None, "off-board cell");
            }
            let b = set.codec().base() as u64;
            if n > 1 && b < 16 {
                let big = (c & !0xf0) | (b << 4);
                assert_eq!(set.codec().compact(big), None, "exponent >= base");
                assert_eq!(set.rank_of_code(big), None);
            }
        }
        for _ in 0..2000 {
            let c = rng.gen::<u64>();
            assert_eq!(set.rank_of_code(c), codes.binary_search(&c).ok());
        }
    }
}

fn sample_index(
    rng: &mut StdRng,
    rows: u8,
    cols: u8,
    age: u32,
    ns: usize,
    na: usize,
) -> (AgeIndexMeta, Vec<u64>, Vec<u64>, Vec<f64>) {
    let n = rows as u32 * cols as u32;
    let states = boards_of_age(rng, n, age as u64, ns);
    let afters = boards_of_age(rng, n, age as u64, na);
    let values: Vec<f64> = afters.iter().map(|_| rng.gen::<f64>() * 1000.0).collect();
    let meta = AgeIndexMeta {
        rows,
        cols,
        age,
        variant: "classic-0.9/0.1".into(),
    };
    (meta, states, afters, values)
}

fn check_index<B: AsRef<[u8]>>(
    idx: &AgeIndex<B>,
    meta: &AgeIndexMeta,
    states: &[u64],
    afters: &[u64],
    values: &[f64],
    rng: &mut StdRng,
) {
    let h = idx.meta();
    assert_eq!((h.rows, h.cols, h.age), (meta.rows, meta.cols, meta.age));
    assert_eq!(h.variant, meta.variant);
    assert_eq!(h.n_states, states.len() as u64);
    assert_eq!(h.n_afterstates, afters.len() as u64);
    for (i, &c) in states.iter().enumerate() {
        assert_eq!(idx.state_rank(c), Some(i));
        assert_eq!(idx.state_code(i), Some(c));
    }
    for (i, &c) in afters.iter().enumerate() {
        let r = idx.afterstate_rank(c).unwrap();
        assert_eq!(r, i);
        assert_eq!(idx.afterstate_value(r).to_bits(), values[i].to_bits());
        assert_eq!(idx.afterstate_code(i), Some(c));
    }
    assert_eq!(idx.state_code(states.len()), None);
    assert_eq!(idx.afterstate_code(afters.len()), None);
    assert!(idx.state_codes().eq(states.iter().copied()));
    assert!(idx.afterstate_codes().eq(afters.iter().copied()));
    let n = meta.rows as u32 * meta.cols as u32;
    for c in boards_of_age(rng, n, meta.age as u64, 500)
        .into_iter()
        .chain((0..500).map(|_| rng.gen::<u64>()))
    {
        assert_eq!(idx.state_rank(c), states.binary_search(&c).ok());
        assert_eq!(idx.afterstate_rank(c), afters.binary_search(&c).ok());
    }
}

#[test]
fn age_index_round_trip() {
    let mut rng = StdRng::seed_from_u64(6);
    for &(rows, cols, age, ns, na) in &[
        (3u8, 3u8, 200u32, 2000usize, 3000usize),
        (4, 4, 1024, 4000, 6000),
        (2, 2, 8, 0, 0),
        (2, 4, 60, 1, 0),
        (2, 4, 60, 0, 5),
    ] {
        let (meta, s, a, v) = sample_index(&mut rng, rows, cols, age, ns, na);
        let bytes = encode_age_index(&meta, &s, &a, &v).unwrap();
        let idx = AgeIndex::from_bytes(&bytes[..]).unwrap();
        check_index(&idx, &meta, &s, &a, &v, &mut rng);
        let st = idx.stats();
        assert_eq!(st.file_bytes, bytes.len() as u64);
        assert_eq!(
            st.file_bytes,
            HEADER_LEN as u64 + st.state_id_bytes + st.afterstate_id_bytes + st.value_bytes
        );
        assert_eq!(st.base, idx.meta().base);
        let owned = AgeIndex::from_bytes(bytes.clone()).unwrap();
        assert_eq!(owned.stats(), st);
        // The sizes the encoder reports are the ones a reader finds.
        let (again, encoded) =
            encode_age_index_with_stats(&meta, &s, &a, &v, IndexOptions::FULL).unwrap();
        assert_eq!(again, bytes);
        assert_eq!(encoded, st);
    }
}

#[test]
fn codes_out_of_order_are_refused_with_the_first_offender() {
    // The encoder and `CodeSet::build` take their order from one scan: a repeat or a pair out
    // of order is an error naming the set, the index and both codes, and nothing is encoded.
    let mut rng = StdRng::seed_from_u64(15);
    let codes = boards_of_age(&mut rng, 9, 40, 200);
    let meta = AgeIndexMeta {
        rows: 3,
        cols: 3,
        age: 40,
        variant: "expectation".into(),
    };
    let values = vec![0.5; codes.len()];
    assert!(encode_age_index(&meta, &codes, &codes, &values).is_ok());
    let mut bad = codes.clone();
    bad.swap(99, 100);
    let e = encode_age_index(&meta, &codes, &bad, &values).unwrap_err();
    assert!(matches!(e, IndexError::InvalidInput { .. }), "{e}");
    let want = format!(
        "afterstates: codes not strictly increasing at index 100: {:#x} then {:#x}",
        bad[99], bad[100]
    );
    assert!(e.to_string().contains(&want), "{e}");
    let e = encode_age_index(&meta, &bad, &codes, &values).unwrap_err();
    assert!(
        e.to_string()
            .contains("states: codes not strictly increasing at index 100"),
        "{e}"
    );
    let mut repeat = codes.clone();
    repeat[7] = repeat[6];
    let e = CodeSet::build(3, 3, 40, &repeat).unwrap_err();
    assert!(
        e.to_string()
            .contains("codes: codes not strictly increasing at index 7"),
        "{e}"
    );
    assert!(CodeSet::build(3, 3, 40, &codes).is_ok());
}

#[test]
fn expect_names_a_misplaced_file() {
    let meta = AgeIndexMeta {
        rows: 3,
        cols: 3,
        age: 12,
        variant: "expectation".into(),
    };
    let bytes = encode_age_index(&meta, &[], &[], &[]).unwrap();
    let idx = AgeIndex::from_bytes(&bytes[..]).unwrap();
    assert!(idx.expect(3, 3, 12, "expectation").is_ok());
    for (r, c, a, v) in [
        (2, 4, 12, "expectation"),
        (3, 3, 14, "expectation"),
        (3, 3, 12, "optimistic"),
    ] {
        let e = idx.expect(r, c, a, v).unwrap_err();
        assert!(matches!(e, IndexError::Corrupted { .. }), "{e}");
        assert!(e.to_string().contains("expected"), "{e}");
    }
}

fn is_corrupted<B: AsRef<[u8]>>(r: Result<AgeIndex<B>, IndexError>) -> String {
    match r {
        Err(IndexError::Corrupted { what }) => what,
        Err(e) => panic!("wrong error kind: {e}"),
        Ok(_) => panic!("corrupt input accepted"),
    }
}

#[test]
fn corruption_is_always_detected() {
    let mut rng = StdRng::seed_from_u64(8);
    let (meta, s, a, v) = sample_index(&mut rng, 3, 3, 64, 40, 60);
    let good = encode_age_index(&meta, &s, &a, &v).unwrap();
    let mut buf = good.clone();
    for i in 0..good.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            buf[i] ^= flip;
            is_corrupted(AgeIndex::from_bytes(&buf[..]));
            buf[i] ^= flip;
        }
    }
    for len in 0..good.len() {
        let what = is_corrupted(AgeIndex::from_bytes(&good[..len]));
        assert!(what.contains("truncated"), "len {len}: {what}");
    }
    let mut longer = good.clone();
    longer.push(0);
    is_corrupted(AgeIndex::from_bytes(&longer[..]));
    for len in [0usize, 1, 7, 8, 100, 176, 177, 1000, 5000] {
        for _ in 0..20 {
            let junk: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            is_corrupted(AgeIndex::from_bytes(&junk[..]));
            // Junk behind a valid magic and version gets past the first checks.
            let mut j = junk.clone();
            if j.len() >= 12 {
                j[..8].copy_from_slice(MAGIC);
                j[8..12].copy_from_slice(&1u32.to_le_bytes());
                is_corrupted(AgeIndex::from_bytes(&j[..]));
            }
        }
    }
    // The messages say what is wrong.
    let mut b = good.clone();
    b[0] = b'X';
    assert_eq!(is_corrupted(AgeIndex::from_bytes(&b[..])), "bad magic");
    let mut b = good.clone();
    b[8..12].copy_from_slice(&7u32.to_le_bytes());
    assert_eq!(
        is_corrupted(AgeIndex::from_bytes(&b[..])),
        "unsupported format version 7"
    );
    let what = is_corrupted(AgeIndex::from_bytes(&good[..good.len() - 8]));
    assert_eq!(
        what,
        format!(
            "truncated: header says {} bytes, file has {}",
            good.len(),
            good.len() - 8
        )
    );
    let mut b = good.clone();
    *b.last_mut().unwrap() ^= 4;
    assert!(is_corrupted(AgeIndex::from_bytes(&b[..])).starts_with("checksum mismatch"));
}

/// Re-seals a modified file with a fresh checksum, to reach the structural checks.
fn reseal(b: &mut [u8]) {
    let crc = file_crc(b);
    b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn structural_corruption_behind_a_valid_checksum() {
    let mut rng = StdRng::seed_from_u64(9);
    let (meta, s, a, v) = sample_index(&mut rng, 3, 3, 64, 300, 400);
    let good = encode_age_index(&meta, &s, &a, &v).unwrap();
    let mut accepted = 0;
    for _ in 0..3000 {
        let mut b = good.clone();
        let i = rng.gen_range(0..b.len());
        b[i] ^= 1 << rng.gen_range(0..8);
        reseal(&mut b);
        if let Ok(idx) = AgeIndex::from_bytes(&b[..]) {
            // Low bits and values can change undetectably; nothing may panic.
            accepted += 1;
            for &c in s.iter().chain(&a) {
                let _ = idx.state_rank(c);
                if let Some(r) = idx.afterstate_rank(c) {
                    let _ = idx.afterstate_value(r);
                }
            }
            let _ = idx.state_codes().count() + idx.afterstate_codes().count();
        }
    }
    assert!(accepted < 3000);
}

#[test]
fn invalid_input_is_rejected() {
    let mut rng = StdRng::seed_from_u64(10);
    let (meta, s, a, v) = sample_index(&mut rng, 3, 3, 64, 30, 30);
    let inv = |r: Result<Vec<u8>, IndexError>| match r {
        Err(IndexError::InvalidInput { what }) => what,
        other => panic!("expected InvalidInput, got {:?}", other.map(|b| b.len())),
    };
    inv(encode_age_index(&meta, &s, &a, &v[1..]));
    let mut rev = s.clone();
    rev.swap(0, 1);
    inv(encode_age_index(&meta, &rev, &a, &v));
    let mut dup = a.clone();
    dup[1] = dup[0];
    inv(encode_age_index(&meta, &s, &dup, &v));
    let mut wrong_age = s.clone();
    wrong_age.push(*s.last().unwrap() + 1);
    inv(encode_age_index(&meta, &wrong_age, &a, &v));
    let mut off_board = s.clone();
    off_board.push(1 << 40);
    inv(encode_age_index(&meta, &off_board, &a, &v));
    let long = AgeIndexMeta {
        variant: "x".repeat(65),
        ..meta.clone()
    };
    inv(encode_age_index(&long, &s, &a, &v));
    let bad_shape = AgeIndexMeta {
        rows: 5,
        cols: 4,
        ..meta.clone()
    };
    inv(encode_age_index(&bad_shape, &s, &a, &v));
    let max_name = AgeIndexMeta {
        variant: "é".repeat(32),
        ..meta
    };
    let b = encode_age_index(&max_name, &s, &a, &v).unwrap();
    assert_eq!(
        AgeIndex::from_bytes(b).unwrap().meta().variant,
        "é".repeat(32)
    );
}

/// Every combination of what a compact index holds, against the data written: afterstate ids
/// exact; values bit for bit in f64, within `2^-(f+1)` in fixed point (and exactly the naive
/// rounding); state ids only when asked for, their count always.
#[test]
fn index_options_round_trip() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut codings = vec![ValueCoding::F64];
    codings.extend([0u8, 1, 16, 32, 40].map(|f| ValueCoding::Fixed { fraction_bits: f }));
    for &(rows, cols, age, ns, na) in &[
        (3u8, 3u8, 200u32, 500usize, 3000usize),
        (4, 4, 1024, 100, 2000),
        (2, 4, 60, 3, 0),
        (2, 4, 60, 0, 1),
    ] {
        let (meta, s, a, mut v) = sample_index(&mut rng, rows, cols, age, ns, na);
        // Edge values: 0, exact halves, the largest of the age.
        for (i, x) in [0.0, 0.5, 1.0, 2.0f64.powi(-17)].into_iter().enumerate() {
            if i < v.len() {
                v[i] = x;
            }
        }
        for state_ids in [true, false] {
            for &values in &codings {
                let options = IndexOptions { state_ids, values };
                let (bytes, st) = encode_age_index_with_stats(&meta, &s, &a, &v, options).unwrap();
                let idx = AgeIndex::from_bytes(&bytes[..]).unwrap();
                assert_eq!(idx.meta().options, options);
                assert_eq!(idx.has_state_ids(), state_ids);
                assert_eq!(idx.value_coding(), values);
                assert_eq!(idx.stats(), st);
                assert_eq!(
                    st.file_bytes,
                    HEADER_LEN as u64 + st.state_id_bytes + st.afterstate_id_bytes + st.value_bytes
                );
                assert_eq!(idx.meta().n_states, s.len() as u64);
                let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
                assert_eq!(version, if options == IndexOptions::FULL { 1 } else { 2 });
                for (i, &c) in s.iter().enumerate() {
                    let want = state_ids.then_some(i);
                    assert_eq!(idx.state_rank(c), want);
                }
                assert_eq!(
                    idx.state_codes().count(),
                    if state_ids { s.len() } else { 0 }
                );
                for (i, &c) in a.iter().enumerate() {
                    assert_eq!(idx.afterstate_rank(c), Some(i));
                    let got = idx.afterstate_value(i);
                    match values {
                        ValueCoding::F64 => assert_eq!(got.to_bits(), v[i].to_bits()),
                        ValueCoding::Fixed { fraction_bits } => {
                            let scale = 2f64.powi(i32::from(fraction_bits));
                            let naive = (v[i] * scale).round() / scale;
                            assert_eq!(got, naive, "value {} at 2^-{fraction_bits}", v[i]);
                            assert!((got - v[i]).abs() <= values.max_error());
                        }
                    }
                }
                if let ValueCoding::Fixed { fraction_bits } = values {
                    // The values take the fewest bits that hold the largest code, packed.
                    let scale = 2f64.powi(i32::from(fraction_bits));
                    let max = v
                        .iter()
                        .map(|&x| (x * scale).round() as u64)
                        .max()
                        .unwrap_or(0);
                    let width = u64::from(64 - max.leading_zeros());
                    assert_eq!(
                        st.value_bytes,
                        ((a.len() as u64 * width).div_ceil(64) + 1) * 8
                    );
                }
            }
        }
    }
}

#[test]
fn fixed_point_refuses_what_it_cannot_hold() {
    let mut rng = StdRng::seed_from_u64(12);
    let (meta, s, a, v) = sample_index(&mut rng, 3, 3, 64, 10, 10);
    let fixed = |f| IndexOptions {
        state_ids: false,
        values: ValueCoding::Fixed { fraction_bits: f },
    };
    let inv = |values: &[f64], f| match encode_age_index_with_stats(&meta, &s, &a, values, fixed(f))
    {
        Err(IndexError::InvalidInput { what }) => what,
        other => panic!("expected InvalidInput, got {:?}", other.map(|b| b.0.len())),
    };
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let mut w = v.clone();
        w[3] = bad;
        let what = inv(&w, 16);
        assert!(what.contains("afterstate 3"), "{what}");
    }
    assert!(inv(&v, 53).contains("fraction bits"));
    // A value that needs more than 53 bits at the precision asked (2^40 at 2^-16, or 5,469
    // points at 2^-50) is past what fixed point holds exactly: the age's values are then
    // stored as f64, exact and so within the error asked, never refused after a long solve.
    for (big, f) in [(2f64.powi(40), 16u8), (5469.21, 50), (0.75, 43)] {
        let mut w = v.clone();
        w[3] = big;
        let b = encode_age_index_with_stats(&meta, &s, &a, &w, fixed(f))
            .unwrap()
            .0;
        let idx = AgeIndex::from_bytes(&b[..]).unwrap();
        // The sample's values are below 1,000: at 2^-43 they still fit, in 53 bits.
        let most = w.iter().copied().fold(0.0, f64::max);
        let wide = most * f64::from(f).exp2() >= 2f64.powi(53);
        assert_eq!(wide, f != 43);
        let want = if wide {
            ValueCoding::F64
        } else {
            ValueCoding::Fixed { fraction_bits: f }
        };
        assert_eq!(idx.value_coding(), want, "{big} at 2^-{f}");
        for (i, x) in w.iter().enumerate() {
            let got = idx.afterstate_value(i);
            if wide {
                assert_eq!(got.to_bits(), x.to_bits());
            } else {
                assert!((got - x).abs() <= want.max_error());
            }
        }
    }
    // 2^36 at 2^-16 is 53 bits: the widest that reads back exactly.
    let mut w = v.clone();
    w[0] = 2f64.powi(37) - 1.0;
    let b = encode_age_index_with_stats(&meta, &s, &a, &w, fixed(16))
        .unwrap()
        .0;
    let idx = AgeIndex::from_bytes(&b[..]).unwrap();
    assert_eq!(idx.afterstate_value(0), w[0]);
}

#[test]
fn compact_index_corruption_is_detected() {
    let mut rng = StdRng::seed_from_u64(13);
    let (meta, s, a, v) = sample_index(&mut rng, 3, 3, 64, 40, 60);
    let options = IndexOptions {
        state_ids: false,
        values: ValueCoding::Fixed { fraction_bits: 16 },
    };
    let good = encode_age_index_with_stats(&meta, &s, &a, &v, options)
        .unwrap()
        .0;
    let mut buf = good.clone();
    for i in 0..good.len() {
        buf[i] ^= 0x01;
        is_corrupted(AgeIndex::from_bytes(&buf[..]));
        buf[i] ^= 0x01;
    }
    // Behind a valid checksum: unknown flags, too wide values, a width that does not match
    // the section, fixed-point fields on f64 values.
    for (at, x, want) in [
        (15usize, 0x04u8, "unknown header flags"),
        (173, 60, "at most 53 bits"),
        (173, 3, "values section holds"),
        (15, 0x00, "f64 values with a fixed-point width"),
        (174, 1, "reserved bytes not zero"),
    ] {
        let mut b = good.clone();
        b[at] = x;
        reseal(&mut b);
        let what = is_corrupted(AgeIndex::from_bytes(&b[..]));
        assert!(what.contains(want), "byte {at} = {x}: {what}");
    }
    // A version-1 file with any of the new fields set is damaged.
    let full = encode_age_index(&meta, &s, &a, &v).unwrap();
    for at in [15usize, 172, 173, 174] {
        let mut b = full.clone();
        b[at] = 1;
        reseal(&mut b);
        assert!(is_corrupted(AgeIndex::from_bytes(&b[..])).contains("reserved"));
    }
}
