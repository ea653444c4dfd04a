//! Tests of the Csr·Csr kernels: every emission path, the vector runs, cancellation.

use super::emit::STREAM_EMIT_BYTES;
use super::rows::list_columns;
use super::*;
use crate::error::Error;

/// A Csr with `per_row` entries per row, at columns `cols(i, t) % n`, with small integer
/// values taken from a hash of (i, t, seed).
fn patterned(
    shape: (usize, usize),
    per_row: usize,
    seed: usize,
    cols: impl Fn(usize, usize) -> usize,
) -> Csr {
    let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
    for i in 0..shape.0 {
        for t in 0..per_row {
            let h = (i * 7919 + t * 104_729 + seed * 13) % 221;
            r.push(i);
            c.push(cols(i, t) % shape.1);
            v.push(c64::new((h % 17) as f64 - 8.0, (h % 13) as f64 - 6.0));
        }
    }
    Csr::from_triplets(shape, &r, &c, &v).unwrap()
}

/// Columns spread over the whole width (a multiplicative hash of the row and slot).
fn spread(i: usize, t: usize) -> usize {
    (i * 131 + t * 977).wrapping_mul(2_654_435_761)
}

/// Two rows of 150 words' width for [`list_columns`]: row 0 marks bit 0 of every word, row
/// 1 bits 1–6 of words 3, 77 and 149 and bits 1–3 of word 10.
fn word_bits_rows() -> Csr {
    let (mut r, mut c) = (vec![], vec![]);
    for w in 0..150 {
        r.push(0);
        c.push(64 * w);
    }
    for (w, bits) in [(3, 6), (10, 3), (77, 6), (149, 6)] {
        for bit in 1..=bits {
            r.push(1);
            c.push(64 * w + bit);
        }
    }
    let v: Vec<c64> = (0..r.len())
        .map(|k| c64::new(k as f64 + 1.0, -1.0))
        .collect();
    Csr::from_triplets((2, 150 * 64), &r, &c, &v).unwrap()
}

/// The products of [`every_emission_path_matches_the_definition`], one or more for each way a
/// row is emitted.
fn emission_cases() -> Vec<(Csr, Csr)> {
    // At most 64 columns: `gustavson_narrow` (the four cases from the third, the last a
    // full word, and the last case; 7 × 1 and 3 × 40 results are within SMALL_NARROW and
    // reserve m·n without counting, the others count). Wider: rows whose products fit two
    // aligned words (banded, across a word boundary, and every row of a 100-column
    // product), `span_row` (160 products over the 5 words of 300 columns), the general
    // kernel's listed rows (9 products over 5 words, all distinct, and the last two cases),
    // word walk and sort.
    vec![
        (
            patterned((300, 300), 5, 13, |i, t| i + t),
            patterned((300, 300), 5, 14, |i, t| i + 2 * t),
        ),
        (
            patterned((6, 300), 4, 15, |i, t| i * 11 + t * 70),
            patterned((300, 300), 40, 16, |i, t| i * 7 + t * 5),
        ),
        (
            patterned((60, 60), 3, 1, |i, t| i + t),
            patterned((60, 60), 3, 2, |i, t| i + t),
        ),
        (
            patterned((7, 5), 3, 9, |i, t| i * t),
            patterned((5, 1), 1, 10, |_, _| 0),
        ),
        (
            patterned((9, 64), 64, 11, |_, t| t),
            patterned((64, 64), 30, 12, |i, t| i + 2 * t),
        ),
        (
            patterned((100, 100), 3, 1, |i, t| i + t),
            patterned((100, 100), 3, 2, |i, t| i + t),
        ),
        (
            patterned((3, 40), 40, 3, |_, t| t),
            patterned((40, 40), 40, 4, |_, t| t),
        ),
        (
            patterned((4, 320), 3, 17, |i, t| i + t),
            patterned((320, 320), 3, 18, |i, t| i + t * 128),
        ),
        (
            patterned((4, 300), 10, 5, spread),
            patterned((300, 20_000), 10, 6, spread),
        ),
        (
            patterned((4, 300), 2, 7, spread),
            patterned((300, 20_000), 5, 8, spread),
        ),
        (
            patterned((200, 30), 3, 19, |i, t| i + t),
            patterned((30, 40), 4, 20, |i, t| i * 3 + t),
        ),
        // One row whose 600 products (spread out, word walk) are exactly the bound the
        // pattern list is sized by: the longest row of a times the longest of b, and flops.
        (
            patterned((1, 300), 20, 21, spread),
            patterned((300, 20_000), 30, 22, spread),
        ),
        // Random rows listed in order (`list_columns`): 100 products over 79 words.
        (
            patterned((50, 2000), 10, 23, spread),
            patterned((2000, 5000), 10, 24, spread),
        ),
        // One row listed in order across three 64-word masks: a bit in each of 150 words,
        // words 3, 77 and 149 (the span's last) with 7 bits (past the four written without a
        // branch), word 10 with exactly 4.
        (patterned((1, 2), 2, 25, |_, t| t), word_bits_rows()),
    ]
}

/// Each emission path against a plain triple loop (same summation order, so equal bits):
/// banded rows (narrow span), rows with many products over few words (`span_row`), rows
/// that cover every column (the pattern's bound), rows listed in order from masks of their
/// non-zero words, long spread-out rows (non-zero-word walk), short spread-out rows (sort).
#[test]
fn every_emission_path_matches_the_definition() {
    let cases = emission_cases();
    for (k, (a, b)) in cases.iter().enumerate() {
        let c = matmul_csr(a, b).unwrap();
        assert!(
            c.as_csmat().check_compressed_structure().is_ok(),
            "case {k}"
        );
        let (m, n) = c.shape();
        let mut want = vec![vec![ZERO; n]; m];
        for (i, row) in want.iter_mut().enumerate() {
            for ka in a.indptr()[i]..a.indptr()[i + 1] {
                let r = a.indices()[ka];
                for kb in b.indptr()[r]..b.indptr()[r + 1] {
                    row[b.indices()[kb]] += a.data()[ka] * b.data()[kb];
                }
            }
        }
        let stored = want.iter().flatten().filter(|v| **v != ZERO).count();
        assert_eq!(c.nnz(), stored, "case {k}");
        for (i, row) in want.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                assert_eq!(c.get(i, j), *v, "case {k} ({i}, {j})");
            }
        }
    }
}

/// The vector runs (rows of b at consecutive columns, at least [`RUN`] long) against the
/// one-product-at-a-time baseline instance, to the bit, on values that round: runs of
/// even and odd length, at column 0, ending at column 63 and crossing a word, in the
/// narrow kernel, and the same rows through the general kernel's one- and two-word rows
/// (which add one product at a time), mixed with shorter and scattered rows of b.
#[test]
fn vector_runs_match_the_scalar_accumulation_bit_for_bit() {
    let value = |i: usize, t: usize| {
        let h = ((i * 7919 + t * 104_729) % 1009) as f64;
        c64::new(h.sqrt() - 15.3, (h * 0.37).sin() * 1.7)
    };
    // Row r of b: `len(r)` entries from column `start(r)` on, every other row scattered.
    let make =
        |(m, n): (usize, usize), start: &dyn Fn(usize) -> usize, len: &dyn Fn(usize) -> usize| {
            let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
            for i in 0..m {
                for t in 0..len(i) {
                    let j = if i % 4 == 3 {
                        (start(i) + 7 * t) % n
                    } else {
                        start(i) + t
                    };
                    r.push(i);
                    c.push(j.min(n - 1));
                    v.push(value(i, t));
                }
            }
            Csr::from_triplets((m, n), &r, &c, &v).unwrap()
        };
    for (n, width) in [(64, 64), (40, 40), (200, 120)] {
        let b = make(
            (n, n),
            &|i| match i % 5 {
                0 => 0,
                1 => width - 4 - i % 7,
                _ => (i * 13) % (width - 9),
            },
            &|i| [4, 5, 9, 3, 6, 2][i % 6],
        );
        let a = make((n / 2, n), &|i| (i * 5) % (n - 8), &|i| 3 + i % 5);
        let fast = matmul_csr(&a, &b).unwrap();
        let slow = crate::simd::baseline(|| matmul_csr(&a, &b)).unwrap();
        assert_eq!(fast.indptr(), slow.indptr(), "n = {n}");
        assert_eq!(fast.indices(), slow.indices(), "n = {n}");
        let bits = |c: &Csr| -> Vec<_> {
            c.data()
                .iter()
                .map(|z| (z.re.to_bits(), z.im.to_bits()))
                .collect()
        };
        assert_eq!(bits(&fast), bits(&slow), "n = {n}");
    }
}

/// Exact cancellation is skipped while the row is written, on every emission path: a
/// narrow span, a long spread-out row (non-zero-word walk), a short spread-out row (sort),
/// and a wide product (sorted merge).
#[test]
fn cancelled_entries_are_not_stored() {
    let narrow: Vec<usize> = (0..6).collect();
    let long: Vec<usize> = (0..70).map(|t| t * 13 + 5).collect();
    let short = vec![3, 400, 999];
    for (n, cols) in [
        (64, (0..64).collect()),
        (1000, narrow),
        (1000, long),
        (1000, short),
        (1 << 20, vec![7, 1 << 19]),
    ] {
        // c = [1, 1]·b: b's row 1 is row 0 negated at every third column, so those cancel.
        let (mut br, mut bc, mut bv) = (vec![], vec![], vec![]);
        for (t, &j) in cols.iter().enumerate() {
            let x = c64::new(j as f64 + 0.5, -(t as f64));
            br.extend([0, 1]);
            bc.extend([j, j]);
            bv.extend([x, if t.is_multiple_of(3) { -x } else { x }]);
        }
        let one = c64::new(1.0, 0.0);
        let a = Csr::from_triplets((1, 2), &[0, 0], &[0, 1], &[one, one]).unwrap();
        let b = Csr::from_triplets((2, n), &br, &bc, &bv).unwrap();
        let c = matmul_csr(&a, &b).unwrap();
        assert!(c.as_csmat().check_compressed_structure().is_ok());
        let kept: Vec<usize> = (0..cols.len()).filter(|t| !t.is_multiple_of(3)).collect();
        assert_eq!(c.nnz(), kept.len(), "n = {n}, {} columns", cols.len());
        assert!(c.data().iter().all(|v| *v != ZERO));
        for &t in &kept {
            let j = cols[t];
            assert_eq!(c.get(0, j), c64::new(j as f64 + 0.5, -(t as f64)) * 2.0);
        }
    }
}

/// A product that reserves more than [`STREAM_EMIT_BYTES`] (written with non-temporal stores)
/// against the definition row by row, and one whose every entry cancels exactly (small
/// integers), so that every streamed slot is written and then dropped.
#[test]
fn streamed_products_match_the_definition() {
    let n = 8000;
    let a = patterned((n, n), 10, 23, spread);
    let b = patterned((n, n), 10, 24, |i, t| spread(i + 1, t));
    let flops: usize = a
        .indices()
        .iter()
        .map(|&r| b.indptr()[r + 1] - b.indptr()[r])
        .sum();
    assert!(flops * (16 + 8) >= STREAM_EMIT_BYTES, "{flops} products");
    let c = matmul_csr(&a, &b).unwrap();
    assert!(c.as_csmat().check_compressed_structure().is_ok());
    let mut row = vec![ZERO; n];
    let mut stored = 0;
    for i in 0..n {
        for ka in a.indptr()[i]..a.indptr()[i + 1] {
            let r = a.indices()[ka];
            for kb in b.indptr()[r]..b.indptr()[r + 1] {
                row[b.indices()[kb]] += a.data()[ka] * b.data()[kb];
            }
        }
        for (j, v) in row.iter_mut().enumerate() {
            if *v != ZERO {
                assert_eq!(c.get(i, j), *v, "({i}, {j})");
                stored += 1;
            }
            *v = ZERO;
        }
    }
    assert_eq!(c.nnz(), stored);

    // [a, a]·[b; −b] = 0: each row's products, then the same negated, on small integers.
    let twice = |m: &Csr, neg: bool, side: bool| {
        let (mut r, mut cl, mut v) = (vec![], vec![], vec![]);
        for i in 0..n {
            for k in m.indptr()[i]..m.indptr()[i + 1] {
                let (j, x) = (m.indices()[k], m.data()[k]);
                if side {
                    r.extend([i, i]);
                    cl.extend([j, j + n]);
                } else {
                    r.extend([i, i + n]);
                    cl.extend([j, j]);
                }
                v.extend([x, if neg { -x } else { x }]);
            }
        }
        let shape = if side { (n, 2 * n) } else { (2 * n, n) };
        Csr::from_triplets(shape, &r, &cl, &v).unwrap()
    };
    let zero = matmul_csr(&twice(&a, false, true), &twice(&b, true, false)).unwrap();
    assert_eq!(zero.shape(), (n, n));
    assert_eq!(zero.nnz(), 0);
    assert!(zero.indptr().iter().all(|&p| p == 0));
}

/// `list_columns` against the marked columns in order: words of 0 to 64 bits, spans within
/// one mask and across several, junk past each word's last bit overwritten, words cleared.
#[test]
fn list_columns_lists_the_marked_columns_in_order() {
    let mut next = crate::testing::xorshift(0x2545_f491_4f6c_dd1d_u64);
    for (words, lo, hi) in [
        (1, 0, 0),
        (3, 1, 2),
        (70, 0, 69),
        (200, 5, 190),
        (200, 63, 64),
    ] {
        let mut seen = vec![0u64; words];
        for (w, word) in seen.iter_mut().enumerate().take(hi + 1).skip(lo) {
            *word = match w % 5 {
                0 => 0,
                1 => 1 << (next() % 64),
                2 => next() & next(),
                3 => u64::MAX,
                _ => 0b1111 << (next() % 60),
            };
        }
        let want: Vec<usize> = (lo * 64..(hi + 1) * 64)
            .filter(|&j| seen[j / 64] & (1 << (j % 64)) != 0)
            .collect();
        let mut list = vec![usize::MAX; want.len() + 3];
        let listed = list_columns(&mut seen, (lo, hi), &mut list);
        assert_eq!(
            &list[..listed],
            &want[..],
            "{words} words, span {lo}..={hi}"
        );
        assert!(seen.iter().all(|&w| w == 0));
    }
}

/// a·b by its definition, each row accumulated in a dense row in the kernels' order (a's row,
/// then b's rows), exact zeros not stored.
fn definition(a: &Csr, b: &Csr) -> Csr {
    let (m, n) = (a.shape().0, b.shape().1);
    let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
    let mut row = vec![ZERO; n];
    for i in 0..m {
        for ka in a.indptr()[i]..a.indptr()[i + 1] {
            let k = a.indices()[ka];
            for kb in b.indptr()[k]..b.indptr()[k + 1] {
                row[b.indices()[kb]] += a.data()[ka] * b.data()[kb];
            }
        }
        for (j, x) in row.iter_mut().enumerate() {
            if *x != ZERO {
                r.push(i);
                c.push(j);
                v.push(std::mem::replace(x, ZERO));
            }
        }
    }
    Csr::from_triplets((m, n), &r, &c, &v).unwrap()
}

/// The distinct columns of the rows `rows` of a·b, their multiply-adds and the most in a row,
/// by sets.
fn structure(a: &Csr, b: &Csr, rows: std::ops::Range<usize>) -> parallel::Count {
    let mut count = parallel::Count::default();
    for i in rows {
        let mut cols = std::collections::BTreeSet::<usize>::new();
        let mut products = 0;
        for &k in &a.indices()[a.indptr()[i]..a.indptr()[i + 1]] {
            let row = &b.indices()[b.indptr()[k]..b.indptr()[k + 1]];
            products += row.len();
            cols.extend(row);
        }
        count.columns += cols.len();
        count.products += products;
        count.row_max = count.row_max.max(products);
    }
    count
}

/// Products for the parallel kernel: every emission case (each way a row is written, with
/// fewer rows than workers in some), listed rows over 500 rows, and a product with empty rows
/// of a and of b and one row much longer than the others (the pieces' work differs).
fn parallel_cases() -> Vec<(Csr, Csr)> {
    let mut cases = emission_cases();
    // Listed rows, with more rows to split than the emission case's 50.
    cases.push((
        patterned((500, 2000), 10, 23, spread),
        patterned((2000, 5000), 10, 24, spread),
    ));
    // Every third row of a empty, every fifth row of b empty, one long row of a.
    let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
    for i in (0..400).filter(|i| i % 3 != 0) {
        let per = if i == 200 { 300 } else { 4 };
        for t in 0..per {
            r.push(i);
            c.push(spread(i, t) % 400);
            v.push(c64::new(t as f64 - 1.5, i as f64 % 5.0));
        }
    }
    let a = Csr::from_triplets((400, 400), &r, &c, &v).unwrap();
    let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
    for i in (0..400).filter(|i| i % 5 != 0) {
        for t in 0..6 {
            r.push(i);
            c.push((i + 37 * t) % 1000);
            v.push(c64::new(1.0, t as f64));
        }
    }
    let b = Csr::from_triplets((400, 1000), &r, &c, &v).unwrap();
    cases.push((a, b));
    cases
}

/// The parallel kernel on `workers` workers, given the product's multiply-adds.
fn on_workers(a: &Csr, b: &Csr, workers: usize) -> Result<Csr> {
    let flops = structure(a, b, 0..a.shape().0).products;
    parallel::matmul_rows(a, b, flops, workers)
}

/// An outer product: the column vector of `n` ones times the row vector of `n` ones, `n²`
/// entries from `2n`.
fn outer(n: usize) -> (Csr, Csr) {
    let ones = vec![c64::new(1.0, 0.0); n];
    let all: Vec<usize> = (0..n).collect();
    let zeros = vec![0; n];
    (
        Csr::from_triplets((n, 1), &all, &zeros, &ones).unwrap(),
        Csr::from_triplets((1, n), &zeros, &all, &ones).unwrap(),
    )
}

/// The count adds what it finds to its budget every `step` columns and stops at the row after
/// the total passed the limit; a limit the product reaches exactly does not stop it.
#[test]
fn count_rows_stops_past_its_budget() {
    let (a, b) = outer(300);
    let mut seen = vec![0u64; 300usize.div_ceil(64)];
    let budget = parallel::Budget::new(1000);
    assert!(parallel::count_rows(&a, &b, 0..300, &mut seen, &budget).is_none());
    // Four rows of 300 pass 1000; the fifth is not counted.
    assert_eq!(budget.counted(), 1200);
    assert!(seen.iter().all(|&w| w == 0), "seen left clear");
    let exact = parallel::Budget::new(90_000);
    let got = parallel::count_rows(&a, &b, 0..300, &mut seen, &exact).unwrap();
    assert_eq!(got, structure(&a, &b, 0..300));
    assert_eq!(exact.counted(), 90_000);
}

/// A product whose result cannot fit in the memory available is refused after counting about
/// as many entries as would fit, not all of them: an outer product of two vectors of 10⁶
/// entries (10¹² entries, minutes of counting) with 1 GiB available stops near 4·10⁷. The
/// serial kernel refuses it before any work, by its multiply-adds.
#[test]
fn a_result_past_the_memory_available_stops_the_count() {
    let (a, b) = outer(1_000_000);
    let started = std::time::Instant::now();
    let e = crate::engine::memory::with_available(1 << 30, || {
        parallel::matmul_rows(&a, &b, 1_000_000 * 1_000_000, 2)
    })
    .unwrap_err();
    match &e {
        Error::TooLarge {
            op, shape, reason, ..
        } => {
            assert_eq!((op.as_str(), *shape), ("matmul", (1_000_000, 1_000_000)));
            assert!(reason.contains("counting stopped"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    // 4000 × 4000 (16·10⁶ entries, 384 MB) with 300 MB available stops at the room for
    // about 11.7·10⁶; with the machine's memory it is made.
    let (a, b) = outer(4000);
    let e = crate::engine::memory::with_available(300 << 20, || on_workers(&a, &b, 2));
    assert!(
        matches!(&e, Err(Error::TooLarge { reason, .. }) if reason.contains("counting stopped")),
        "{e:?}"
    );
    if crate::engine::available_memory().is_some_and(|av| av > 4 << 30) {
        assert_eq!(on_workers(&a, &b, 2).unwrap().nnz(), 16_000_000);
    }
}

/// `count_rows` against sets, over all rows, single rows and empty ranges.
#[test]
fn count_rows_counts_the_distinct_columns() {
    for (k, (a, b)) in parallel_cases().iter().enumerate() {
        let m = a.shape().0;
        let mut seen = vec![0u64; b.shape().1.div_ceil(64)];
        for rows in [0..m, 0..0, m / 2..m, 0..1, m - 1..m] {
            let unlimited = parallel::Budget::new(usize::MAX);
            let got = parallel::count_rows(a, b, rows.clone(), &mut seen, &unlimited).unwrap();
            assert_eq!(
                got,
                structure(a, b, rows.clone()),
                "case {k}, rows {rows:?}"
            );
            assert!(seen.iter().all(|&w| w == 0), "case {k}: seen left clear");
        }
    }
}

/// The parallel kernel on 1–9 workers (more than some products' rows) against the definition,
/// array for array (the same summation order, so equal bits).
#[test]
fn workers_write_the_definition_in_place() {
    for (k, (a, b)) in parallel_cases().iter().enumerate() {
        let want = definition(a, b);
        for workers in 1..=9 {
            let got = on_workers(a, b, workers).unwrap();
            assert!(got.as_csmat().check_compressed_structure().is_ok());
            assert_eq!(got.indptr(), want.indptr(), "case {k}, {workers} workers");
            assert_eq!(got.indices(), want.indices(), "case {k}, {workers} workers");
            assert_eq!(got.data(), want.data(), "case {k}, {workers} workers");
        }
    }
}

/// Exact cancellation in some workers' rows and not others: the parts that wrote fewer
/// entries than they counted are closed up, their row pointers moved with them. Rows of
/// `[1, 1]·b` where b's second half negates the first at every third column in the rows
/// i ≡ 1 (mod 4), at every column in the rows i ≡ 2 (mod 4), and nowhere else. And a product
/// that streams its stores (more than `STREAM_EMIT_BYTES`) and cancels in part.
#[test]
fn cancelled_entries_are_closed_up_between_workers() {
    for (m, n, per) in [(64, 500, 7), (2000, 3000, 40)] {
        let (mut ar, mut ac) = (vec![], vec![]);
        let (mut br, mut bc, mut bv) = (vec![], vec![], vec![]);
        for i in 0..m {
            ar.extend([i, i]);
            ac.extend([2 * i, 2 * i + 1]);
            for t in 0..per {
                let j = spread(i, t) % n;
                let x = c64::new(j as f64 + 0.5, t as f64);
                let cancel = match i % 4 {
                    1 => t % 3 == 0,
                    2 => true,
                    _ => false,
                };
                br.extend([2 * i, 2 * i + 1]);
                bc.extend([j, j]);
                bv.extend([x, if cancel { -x } else { x }]);
            }
        }
        let one = vec![c64::new(1.0, 0.0); ar.len()];
        let a = Csr::from_triplets((m, 2 * m), &ar, &ac, &one).unwrap();
        let b = Csr::from_triplets((2 * m, n), &br, &bc, &bv).unwrap();
        let want = definition(&a, &b);
        assert!(
            want.nnz() < structure(&a, &b, 0..m).columns,
            "some entries cancel"
        );
        for workers in [2, 3, 5, 8] {
            let got = on_workers(&a, &b, workers).unwrap();
            assert!(got.as_csmat().check_compressed_structure().is_ok());
            assert_eq!(got.indptr(), want.indptr(), "m = {m}, {workers} workers");
            assert_eq!(got.indices(), want.indices(), "m = {m}, {workers} workers");
            assert_eq!(got.data(), want.data(), "m = {m}, {workers} workers");
        }
    }
    let n = 8000;
    let a = patterned((n, n), 10, 23, spread);
    let b = patterned((n, n), 10, 24, |i, t| spread(i + 1, t));
    let count = structure(&a, &b, 0..n).columns;
    assert!(count * (16 + 8) >= STREAM_EMIT_BYTES, "{count} entries");
    let want = definition(&a, &b);
    for workers in [2, 4] {
        let got = on_workers(&a, &b, workers).unwrap();
        assert_eq!(got, want, "{workers} workers");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]

    /// Any pair of patterns with small integer values (so entries cancel), any number of
    /// workers: the definition, array for array.
    #[test]
    fn workers_match_the_definition_on_any_pattern(
        (m, k, n) in (1usize..60, 1usize..60, 1usize..400),
        entries_a in proptest::collection::vec((0usize..1000, 0usize..1000, -2i8..3), 0..200),
        entries_b in proptest::collection::vec((0usize..1000, 0usize..1000, -2i8..3), 0..400),
        workers in 1usize..9,
    ) {
        let csr = |shape: (usize, usize), e: &[(usize, usize, i8)]| {
            let (r, c): (Vec<usize>, Vec<usize>) =
                e.iter().map(|&(i, j, _)| (i % shape.0, j % shape.1)).unzip();
            let v: Vec<c64> = e.iter().map(|&(_, _, x)| c64::new(f64::from(x), 0.0)).collect();
            Csr::from_triplets(shape, &r, &c, &v).unwrap()
        };
        let (a, b) = (csr((m, k), &entries_a), csr((k, n), &entries_b));
        let got = on_workers(&a, &b, workers).unwrap();
        let want = definition(&a, &b);
        proptest::prop_assert_eq!(got.indptr(), want.indptr());
        proptest::prop_assert_eq!(got.indices(), want.indices());
        proptest::prop_assert_eq!(got.data(), want.data());
    }
}

/// The workers' accumulators together stay within the serial kernel's reservation: one per
/// 24 bytes a multiply-add over 16 bytes a column, at least one.
#[test]
fn accumulators_are_capped_by_the_reservation() {
    assert_eq!(accumulators_allowed(0, 1000), 1);
    assert_eq!(accumulators_allowed(1_000_000, 8_000_000), 1);
    assert_eq!(accumulators_allowed(1_000_000, 10_000), 150);
    assert_eq!(accumulators_allowed(2, 3), 1);
    assert_eq!(accumulators_allowed(4, 3), 2);
    assert_eq!(accumulators_allowed(usize::MAX, usize::MAX), 1);
    assert_eq!(accumulators_allowed(usize::MAX, 0), usize::MAX);
}
