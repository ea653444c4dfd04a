//! The execution engine: `set_threads` / `POLYMAT_NUM_THREADS`, and parity of every kernel's
//! serial and parallel paths.
//!
//! The thread setting is process-wide, so this file is its own test binary and its tests take
//! a lock: no other test observes a changed setting.

use std::sync::{Mutex, MutexGuard};

use polymat::engine::set_force_parallel;
use polymat::{Csr, Data, Dense, Kind, Out, c64};

static SETTING: Mutex<()> = Mutex::new(());

/// Takes the lock on the settings. The first call makes rayon's global pool at least two
/// threads wide, so that the parallel paths run on two workers even on a one-CPU machine (a
/// kernel splits among at most as many workers as its pool has threads).
fn setting() -> MutexGuard<'static, ()> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    // Err only if the pool already exists: the first test to get here made it.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global();
    SETTING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn value(i: usize, salt: usize) -> c64 {
    let h = (i.wrapping_mul(2_654_435_761) ^ salt.wrapping_mul(40_503)) % 1000;
    c64::new(
        h as f64 / 100.0 - 5.0,
        ((h * 7) % 1000) as f64 / 250.0 - 2.0,
    )
}

fn dense(m: usize, n: usize, salt: usize) -> Data {
    Dense::from_fn(m, n, |i, j| value(i * n + j, salt)).into()
}

/// About `k` entries per row, some rows empty, columns unsorted in the input.
fn csr(m: usize, n: usize, k: usize, salt: usize) -> Data {
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..m {
        if (i + salt) % 7 == 3 {
            continue;
        }
        for t in 0..k {
            rows.push(i);
            cols.push((i * 31 + t * 17 + salt) % n.max(1));
            vals.push(value(i * k + t, salt));
        }
    }
    if n == 0 {
        return Csr::zeros(m, n).into();
    }
    Csr::from_triplets((m, n), &rows, &cols, &vals)
        .unwrap()
        .into()
}

/// Runs `f` serially, then on 2 threads with every parallel path forced, and returns both.
fn both<T>(f: impl Fn() -> T) -> (T, T) {
    polymat::set_threads(1);
    set_force_parallel(false);
    let serial = f();
    polymat::set_threads(2);
    set_force_parallel(true);
    let parallel = f();
    set_force_parallel(false);
    polymat::set_threads(0);
    (serial, parallel)
}

/// Kind, shape, and the stored arrays (indptr, indices, values; Dense: values column by column).
type Entries = (Kind, (usize, usize), Vec<usize>, Vec<usize>, Vec<c64>);

fn entries(d: &Data) -> Entries {
    if let Some(c) = d.downcast_ref::<Csr>() {
        return (
            d.kind(),
            d.shape(),
            c.indptr().to_vec(),
            c.indices().to_vec(),
            c.data().to_vec(),
        );
    }
    let x = d.downcast_ref::<Dense>().unwrap();
    let vals = (0..x.shape().1).flat_map(|j| x.col(j).to_vec()).collect();
    (d.kind(), d.shape(), vec![], vec![], vals)
}

/// Matrix results must agree exactly: the parallel paths split the same per-entry arithmetic.
fn assert_same(what: &str, (s, p): (polymat::Result<Data>, polymat::Result<Data>)) {
    let (s, p) = (s.unwrap(), p.unwrap());
    assert_eq!(
        entries(&s),
        entries(&p),
        "{what}: serial and parallel differ"
    );
}

/// Reductions may sum in a different order: agree to 1e-12 relative.
fn assert_close(what: &str, (s, p): (c64, c64)) {
    let tol = 1e-12 * s.norm().max(1.0);
    assert!((s - p).norm() <= tol, "{what}: serial {s} vs parallel {p}");
}

const SHAPES: [(usize, usize); 6] = [(0, 0), (1, 1), (1, 9), (9, 1), (37, 23), (130, 130)];

#[test]
fn elementwise_and_transposes_match() {
    let _g = setting();
    let s = c64::new(0.5, -2.0);
    for (m, n) in SHAPES {
        let (a, b) = (dense(m, n, 1), dense(m, n, 2));
        let sh = format!("{m}×{n}");
        assert_same(
            &format!("add {sh}"),
            both(|| polymat::add(&a, &b, Out::Auto)),
        );
        assert_same(
            &format!("add_scaled {sh}"),
            both(|| polymat::add_scaled(&a, &b, s, Out::Auto)),
        );
        assert_same(
            &format!("mul {sh}"),
            both(|| polymat::mul(&a, s, Out::Auto)),
        );
        assert_same(
            &format!("multiply {sh}"),
            both(|| polymat::multiply(&a, &b, Out::Auto)),
        );
        assert_same(&format!("conj {sh}"), both(|| polymat::conj(&a, Out::Auto)));
        assert_same(
            &format!("adjoint {sh}"),
            both(|| polymat::adjoint(&a, Out::Auto)),
        );
        assert_same(
            &format!("transpose {sh}"),
            both(|| polymat::transpose(&a, Out::Auto)),
        );
        // Row-major operands: the mixed-layout zip and both Dense → Csr walks.
        let r: Data = a
            .downcast_ref::<polymat::Dense>()
            .unwrap()
            .clone()
            .into_layout(polymat::Layout::RowMajor)
            .unwrap()
            .into();
        assert_same(
            &format!("add mixed layouts {sh}"),
            both(|| polymat::add(&r, &b, Out::Auto)),
        );
        for (what, d) in [("column-major", &a), ("row-major", &r)] {
            let sparse = polymat::mul(d, c64::new(0.0, 0.0), Out::Auto).unwrap();
            let sparse = polymat::add(&sparse, &csr(m, n, 3, 7), Out::Dense).unwrap();
            assert_same(
                &format!("Dense→Csr {what} {sh}"),
                both(|| polymat::to(Kind::CSR, d)),
            );
            assert_same(
                &format!("sparse Dense→Csr {what} {sh}"),
                both(|| polymat::to(Kind::CSR, &sparse)),
            );
        }
        let c = csr(m, n, 3, 4);
        assert_same(
            &format!("Csr→Dense {sh}"),
            both(|| polymat::to(Kind::DENSE, &c)),
        );
        assert_same(
            &format!("Csr+Csr {sh}"),
            both(|| polymat::add(&c, &csr(m, n, 2, 5), Out::Auto)),
        );
        assert_same(
            &format!("Csr−Csr {sh}"),
            both(|| polymat::sub(&c, &csr(m, n, 4, 6), Out::Auto)),
        );
        // Same pattern, other values: the value-by-value path.
        let twin = polymat::mul(&c, c64::new(-0.5, 2.0), Out::Auto).unwrap();
        assert_same(
            &format!("Csr+Csr one pattern {sh}"),
            both(|| polymat::add_scaled(&c, &twin, c64::new(0.25, 1.0), Out::Auto)),
        );
        // One pattern, every other sum cancelling: the compacting pass of that path.
        let half = {
            let x = c.downcast_ref::<Csr>().unwrap();
            let vals = x.data().iter().enumerate();
            let vals = vals
                .map(|(k, &v)| if k % 2 == 0 { v } else { -v })
                .collect();
            Data::from(
                Csr::from_raw(x.shape(), x.indptr().to_vec(), x.indices().to_vec(), vals).unwrap(),
            )
        };
        let (s, p) = both(|| polymat::add(&c, &half, Out::Auto));
        assert_same(
            &format!("Csr+Csr one pattern, cancelling {sh}"),
            (s, p.clone()),
        );
        let (p, x) = (p.unwrap(), c.downcast_ref::<Csr>().unwrap());
        let p = p.downcast_ref::<Csr>().unwrap();
        let kept: Vec<c64> = x.data().iter().step_by(2).map(|v| v + v).collect();
        let kept: Vec<c64> = kept.into_iter().filter(|v| v.norm() > 0.0).collect();
        assert_eq!(p.data(), kept.as_slice());
        // Zeros in the sum: cancellations where both store an entry (the parallel count sees
        // them), and zeros it cannot see, which send it back to the serial merge: an explicit
        // zero stored by one operand, and entries of b alone that the scale underflows.
        let d = csr(m, n, 2, 5);
        let cd = polymat::add(&c, &d, Out::Auto).unwrap();
        assert_same(
            &format!("Csr−Csr cancelling {sh}"),
            both(|| polymat::sub(&cd, &d, Out::Auto)),
        );
        let stored_zero = {
            let x = c.downcast_ref::<Csr>().unwrap();
            let mut vals = x.data().to_vec();
            if let Some(v) = vals.last_mut() {
                *v = c64::new(0.0, 0.0);
            }
            let (p, i) = (x.indptr().to_vec(), x.indices().to_vec());
            Data::from(Csr::from_raw(x.shape(), p, i, vals).unwrap())
        };
        let (s, p) = both(|| polymat::add(&stored_zero, &d, Out::Auto));
        assert_same(&format!("Csr+Csr stored zero {sh}"), (s, p.clone()));
        let p = p.unwrap();
        assert!(
            p.downcast_ref::<Csr>()
                .unwrap()
                .data()
                .iter()
                .all(|v| v.norm() > 0.0)
        );
        let tiny = polymat::mul(&d, c64::new(1e-300, 0.0), Out::Auto).unwrap();
        assert_same(
            &format!("Csr+Csr underflowing scale {sh}"),
            both(|| polymat::add_scaled(&c, &tiny, c64::new(1e-300, 0.0), Out::Auto)),
        );
    }
    let (x, y) = (dense(7, 5, 3), dense(4, 9, 4));
    assert_same("kron Dense", both(|| polymat::kron(&x, &y, Out::Auto)));
    // Csr kron split over a's rows: general factors with empty rows, identities and a factor
    // with one entry a row on either side (the long-run paths), a stored zero (the scan for
    // exact zeros after the pieces), and factors with fewer rows than pieces.
    let perm: Data = Csr::from_triplets(
        (5, 5),
        &[0, 1, 2, 3, 4],
        &[3, 0, 4, 1, 2],
        &(0..5).map(|k| value(k, 9)).collect::<Vec<_>>(),
    )
    .unwrap()
    .into();
    let with_zero: Data = Csr::from_triplets(
        (3, 3),
        &[0, 1, 2],
        &[1, 1, 0],
        &[value(1, 2), c64::new(0.0, 0.0), value(3, 2)],
    )
    .unwrap()
    .into();
    let eye = |n| polymat::identity(n, Out::Csr).unwrap();
    let factors = [
        ("random 37×23", csr(37, 23, 4, 5)),
        ("random 9×1", csr(9, 1, 2, 6)),
        // Rows of 2 and of 3 entries: banded factors, whose block rows are held in registers.
        ("random 11×13, 2 a row", csr(11, 13, 2, 7)),
        ("random 8×9, 3 a row", csr(8, 9, 3, 8)),
        ("identity 6", eye(6)),
        ("identity 1", eye(1)),
        ("permutation 5", perm),
        ("stored zero 3", with_zero),
        ("empty 4×3", Csr::zeros(4, 3).into()),
    ];
    for (wa, fa) in &factors {
        for (wb, fb) in &factors {
            assert_same(
                &format!("kron Csr {wa} ⊗ {wb}"),
                both(|| polymat::kron(fa, fb, Out::Auto)),
            );
        }
    }
}

#[test]
fn products_match() {
    let _g = setting();
    for (m, n) in SHAPES {
        let a = csr(m, n, 4, 7);
        for k in [1, 3, 40] {
            let b = dense(n, k, 8);
            assert_same(
                &format!("Csr({m}×{n})·Dense({n}×{k})"),
                both(|| polymat::matmul(&a, &b, Out::Auto)),
            );
        }
        let d = dense(m, n, 9);
        let e = dense(n, m, 10);
        let (s, p) = both(|| polymat::matmul(&d, &e, Out::Auto));
        let (s, p) = (entries(&s.unwrap()).4, entries(&p.unwrap()).4);
        for (x, y) in s.iter().zip(&p) {
            assert!(
                (x - y).norm() <= 1e-12 * x.norm().max(1.0),
                "matmul Dense {m}×{n}"
            );
        }
    }
}

/// Dense·ket, `matmul_dag` with a bra and a Dense `expect` on a ket split the rows of the
/// matrix–vector product between workers; every row is computed alike, so the bits are the
/// same as on one thread, in both layouts, with row counts that do and do not fill the split.
/// (From 13 rows: up to 12, one thread computes a column-major product in registers, another
/// kernel, which `products_match` and the unit tests check.)
#[test]
fn dense_matrix_vector_products_have_the_same_bits_on_any_split() {
    let _g = setting();
    for m in [13, 16, 37, 130, 257] {
        for k in [1, 5, 33, 40] {
            let col = dense(m, k, 21);
            let row = Dense::from_fn(k, m, |i, j| value(j * k + i, 21)).into_transpose();
            let ket = dense(k, 1, 22);
            let bra = Dense::from_fn(1, k, |_, j| value(j, 22).conj()).into();
            for (layout, a) in [("column-major", col), ("row-major", row.into())] {
                assert_same(
                    &format!("Dense({m}×{k}, {layout})·ket"),
                    both(|| polymat::matmul(&a, &ket, Out::Auto)),
                );
                assert_same(
                    &format!("Dense({m}×{k}, {layout})·bra†"),
                    both(|| polymat::matmul_dag(&a, &bra, Out::Auto)),
                );
            }
        }
        let (op, row_op) = (
            dense(m, m, 23),
            Dense::from_fn(m, m, |i, j| value(j * m + i, 23)),
        );
        let ket = dense(m, 1, 24);
        for (layout, op) in [
            ("column-major", op),
            ("row-major", row_op.into_transpose().into()),
        ] {
            let (s, p) = both(|| polymat::expect(&op, &ket).unwrap());
            assert_eq!(
                (s.re.to_bits(), s.im.to_bits()),
                (p.re.to_bits(), p.im.to_bits()),
                "expect Dense {m} {layout}: {s} vs {p}"
            );
        }
    }
}

#[test]
fn reductions_match() {
    let _g = setting();
    for n in [0, 1, 2, 3, 64, 257] {
        let (op, ket) = (csr(n, n, 5, 11), dense(n, 1, 12));
        assert_close(
            &format!("expect Csr {n}"),
            both(|| polymat::expect(&op, &ket).unwrap()),
        );
        let dop = dense(n, n, 13);
        assert_close(
            &format!("expect Dense {n}"),
            both(|| polymat::expect(&dop, &ket).unwrap()),
        );
        assert_close(
            &format!("trace Csr {n}"),
            both(|| polymat::trace(&op).unwrap()),
        );
        assert_close(
            &format!("trace Dense {n}"),
            both(|| polymat::trace(&dop).unwrap()),
        );
        for a in [&op, &dop] {
            let (s, p) = both(|| polymat::ops::norm::frobenius(a).unwrap());
            assert!(
                (s - p).abs() <= 1e-12 * s.max(1.0),
                "frobenius {n}: {s} vs {p}"
            );
        }
    }
}

/// `expm_multiply`'s fused Taylor terms split long vectors over workers (pieces of 2¹⁴
/// entries): serial and forced parallel runs agree (the shift, `tr(a)/n`, is a reduction and
/// may round differently), as do the max-norms of long vectors.
#[test]
fn expm_multiply_on_long_vectors_matches() {
    let _g = setting();
    let n = 40_000;
    let a = csr(n, n, 3, 21);
    for cols in [1, 2] {
        let v = dense(n, cols, 22);
        let (s, p) = both(|| {
            polymat::expm_multiply(&a, &v, c64::new(0.0, -0.05), polymat::Out::Auto).unwrap()
        });
        let (s, p) = (entries(&s).4, entries(&p).4);
        let scale = s.iter().map(|z| z.norm()).fold(0.0, f64::max);
        for (k, (x, y)) in s.iter().zip(&p).enumerate() {
            assert!(
                (x - y).norm() <= 1e-12 * scale,
                "{cols} column(s), entry {k}: {x} {y}"
            );
        }
        let (s, p) = both(|| polymat::ops::norm::max(&v).unwrap());
        assert_eq!(s.to_bits(), p.to_bits(), "max-norm, {cols} column(s)");
    }
}

/// A parallel result must also be right, not just equal to the serial one: check against the
/// definition on one case above every threshold, without forcing.
#[test]
fn parallel_results_above_thresholds_are_correct() {
    let _g = setting();
    polymat::set_threads(2);
    let n = 1100; // 1 210 000 entries, above the elementwise, transpose and row thresholds
    let (a, b) = (dense(n, n, 21), dense(n, n, 22));
    let sum = polymat::add(&a, &b, Out::Auto).unwrap();
    let adj = polymat::adjoint(&a, Out::Auto).unwrap();
    let (a_, b_) = (
        a.downcast_ref::<Dense>().unwrap(),
        b.downcast_ref::<Dense>().unwrap(),
    );
    let (sum, adj) = (
        sum.downcast_ref::<Dense>().unwrap(),
        adj.downcast_ref::<Dense>().unwrap(),
    );
    for (i, j) in [
        (0, 0),
        (n - 1, 0),
        (17, n - 1),
        (n / 2, n / 3),
        (n - 1, n - 1),
    ] {
        assert_eq!(sum.get(i, j), a_.get(i, j) + b_.get(i, j));
        assert_eq!(adj.get(j, i), a_.get(i, j).conj());
    }
    let big = csr(60_000, 60_000, 10, 23);
    let ket = dense(60_000, 1, 24);
    let y = polymat::matmul(&big, &ket, Out::Auto).unwrap();
    let (c, x, y) = (
        big.downcast_ref::<Csr>().unwrap(),
        ket.downcast_ref::<Dense>().unwrap().col(0),
        y.downcast_ref::<Dense>().unwrap().col(0),
    );
    for i in [0, 1, 29_999, 59_999] {
        let want: c64 = (c.indptr()[i]..c.indptr()[i + 1])
            .map(|k| c.data()[k] * x[c.indices()[k]])
            .sum();
        assert!((y[i] - want).norm() <= 1e-12 * want.norm().max(1.0));
    }
    // Csr krons of over a million entries (above the threshold: 2²⁰ entries with the default
    // CSR_ROWS) on two workers, against the same products on one thread.
    let (eye, sparse) = (
        polymat::identity(5000, Out::Csr).unwrap(),
        csr(100, 100, 3, 25),
    );
    let wide = csr(420, 420, 3, 26);
    let banded = csr(700, 700, 3, 27);
    for (x, y) in [
        (&eye, &sparse),
        (&sparse, &eye),
        (&wide, &wide),
        (&banded, &banded),
    ] {
        let nnz = |d: &Data| d.downcast_ref::<Csr>().unwrap().nnz();
        assert!(nnz(x) * nnz(y) > 1 << 20);
        let parallel = polymat::kron(x, y, Out::Auto).unwrap();
        polymat::set_threads(1);
        let serial = polymat::kron(x, y, Out::Auto).unwrap();
        polymat::set_threads(2);
        assert_eq!(entries(&parallel), entries(&serial));
    }
    polymat::set_threads(0);
}

/// Csr·Csr above the products' floor (2¹⁵ multiply-adds) splits its rows between workers,
/// each writing in place after a count of its entries: the same arrays as on one thread, for
/// scattered and banded patterns, a product with empty rows, and on two threads at the
/// default thresholds (2¹⁶ multiply-adds and more).
#[test]
fn csr_products_on_workers_match() {
    let _g = setting();
    let cases = [
        (csr(3000, 2500, 10, 31), csr(2500, 4000, 10, 32)),
        (csr(20_000, 20_000, 3, 33), csr(20_000, 20_000, 3, 34)),
        (csr(9000, 300, 5, 35), csr(300, 9000, 7, 36)),
    ];
    for (a, b) in &cases {
        let (s, p) = both(|| polymat::matmul(a, b, Out::Auto));
        assert_eq!(s.as_ref().unwrap().kind(), Kind::CSR);
        assert_same("Csr·Csr", (s, p));
        polymat::set_threads(2);
        let default = polymat::matmul(a, b, Out::Auto).unwrap();
        polymat::set_threads(1);
        let serial = polymat::matmul(a, b, Out::Auto).unwrap();
        polymat::set_threads(0);
        assert_eq!(entries(&default), entries(&serial));
    }
}

/// The Csr transpose of a large scattered pattern (more than 2¹⁹ entries, many columns) goes
/// by column blocks: the same arrays serially, on two workers, and on one thread with every
/// parallel path forced off; and the counting sort's result where the pattern is sliced below
/// the blocks' threshold (its first rows), row for row.
#[test]
fn csr_transposes_by_blocks_match() {
    let _g = setting();
    // 70 000 rows, a seventh of them empty, 10 entries in the others: 600 000 entries.
    let a = csr(70_000, 65_000, 10, 28);
    assert!(a.downcast_ref::<Csr>().unwrap().nnz() > 1 << 19);
    for conj in [false, true] {
        let op = |x: &Data| {
            if conj {
                polymat::adjoint(x, Out::Auto)
            } else {
                polymat::transpose(x, Out::Auto)
            }
        };
        assert_same(&format!("blocked transpose, conj {conj}"), both(|| op(&a)));
        // Against the counting sort: the first 20 000 rows alone (200 000 entries) take it.
        let t = op(&a).unwrap();
        // `csr` builds each row from its index alone: the same first rows.
        let head = csr(20_000, 65_000, 10, 28);
        let th = op(&head).unwrap();
        let (t, th) = (
            t.downcast_ref::<Csr>().unwrap(),
            th.downcast_ref::<Csr>().unwrap(),
        );
        for c in [0, 1, 777, 32_767, 32_768, 64_999] {
            let (p, q) = (t.indptr(), th.indptr());
            let kept: Vec<(usize, c64)> = (p[c]..p[c + 1])
                .map(|k| (t.indices()[k], t.data()[k]))
                .filter(|&(i, _)| i < 20_000)
                .collect();
            let want: Vec<(usize, c64)> = (q[c]..q[c + 1])
                .map(|k| (th.indices()[k], th.data()[k]))
                .collect();
            assert_eq!(kept, want, "column {c}, conj {conj}");
        }
    }
}

/// Large results are written with non-temporal stores (`simd::stream`, where the engine decides
/// so): every entry of every streamed map and zip (and of a Csr → Dense, whose zero fill is
/// streamed) must still be the definition's, serial and
/// parallel, for both layouts of the input (a transposed Dense is row-major). Run with every
/// pass streamed (`set_stream_bytes(1)`: odd shapes, so each column ends with an entry stored
/// alone) and at the default (n = 1030, 17 MB a matrix: streamed where the last-level cache
/// is below 45 MB).
#[test]
fn streamed_results_match_the_definition() {
    let _g = setting();
    for ((m, n), bytes) in [((67, 53), 1), ((1030, 1030), 0)] {
        polymat::set_stream_bytes(bytes);
        streamed_case(m, n);
    }
    polymat::set_stream_bytes(0);
}

fn streamed_case(m: usize, n: usize) {
    let s = c64::new(0.5, -2.0);
    let a = dense(m, n, 31);
    let b = dense(m, n, 32);
    // Row-major operands of the transposed shape.
    let (ar, br) = (
        polymat::transpose(&a, Out::Auto).unwrap(),
        polymat::transpose(&dense(m, n, 33), Out::Auto).unwrap(),
    );
    for (a, b) in [(a, b), (ar, br)] {
        let at = a.downcast_ref::<Dense>().unwrap().clone();
        let bt = b.downcast_ref::<Dense>().unwrap().clone();
        let (m, n) = at.shape();
        type Call<'a> = Box<dyn Fn() -> polymat::Result<Data> + 'a>;
        type Def = Box<dyn Fn(usize, usize) -> c64>;
        let cases: Vec<(&str, (usize, usize), Call<'_>, Def)> = vec![
            (
                "add",
                (m, n),
                Box::new(|| polymat::add(&a, &b, Out::Auto)),
                {
                    let (x, y) = (at.clone(), bt.clone());
                    Box::new(move |i, j| x.get(i, j) + y.get(i, j))
                },
            ),
            (
                "sub",
                (m, n),
                Box::new(|| polymat::sub(&a, &b, Out::Auto)),
                {
                    let (x, y) = (at.clone(), bt.clone());
                    Box::new(move |i, j| x.get(i, j) + c64::new(-1.0, 0.0) * y.get(i, j))
                },
            ),
            (
                "multiply",
                (m, n),
                Box::new(|| polymat::multiply(&a, &b, Out::Auto)),
                {
                    let (x, y) = (at.clone(), bt.clone());
                    Box::new(move |i, j| x.get(i, j) * y.get(i, j))
                },
            ),
            ("neg", (m, n), Box::new(|| polymat::neg(&a, Out::Auto)), {
                let x = at.clone();
                Box::new(move |i, j| -x.get(i, j))
            }),
            ("conj", (m, n), Box::new(|| polymat::conj(&a, Out::Auto)), {
                let x = at.clone();
                Box::new(move |i, j| x.get(i, j).conj())
            }),
            (
                "adjoint",
                (n, m),
                Box::new(|| polymat::adjoint(&a, Out::Auto)),
                {
                    let x = at.clone();
                    Box::new(move |i, j| x.get(j, i).conj())
                },
            ),
            (
                "transpose",
                (n, m),
                Box::new(|| polymat::transpose(&a, Out::Auto)),
                {
                    let x = at.clone();
                    Box::new(move |i, j| x.get(j, i))
                },
            ),
            (
                "mul",
                (m, n),
                Box::new(|| polymat::mul(&a, s, Out::Auto)),
                {
                    let x = at.clone();
                    Box::new(move |i, j| s * x.get(i, j))
                },
            ),
        ];
        // Csr → Dense: zeroed in pieces (streamed where the engine says so), then scattered;
        // the buffers freed by the cases above hold non-zeros to be overwritten.
        // The entries of `at` where `kept` holds, as a Csr.
        let csr_of = |kept: fn(usize, usize) -> bool| -> Data {
            let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
            for i in 0..m {
                for j in (0..n).filter(|&j| kept(i, j)) {
                    r.push(i);
                    c.push(j);
                    v.push(at.get(i, j));
                }
            }
            Csr::from_triplets((m, n), &r, &c, &v).unwrap().into()
        };
        let kept = |i: usize, j: usize| (i * 7 + j * 3).is_multiple_of(5);
        let sparse = csr_of(kept);
        // A sparser one (one entry in 29, none in some rows and columns): written column by
        // column from its column pattern, zeros and entries in one streaming pass.
        let rare = |i: usize, j: usize| (i * 7 + j * 3).is_multiple_of(29) && i % 4 != 1;
        let sparser = csr_of(rare);
        let mut cases = cases;
        for (what, data, pattern) in [
            ("Csr to Dense", &sparse, kept as fn(usize, usize) -> bool),
            ("sparser Csr to Dense", &sparser, rare),
        ] {
            let x = at.clone();
            cases.push((
                what,
                (m, n),
                // A dirty buffer of the result's size freed just before: the allocator tends to
                // hand it back, so an entry the zero fill missed would show its 7 − 7i.
                Box::new(move || {
                    drop(Dense::from_fn(m, n, |_, _| c64::new(7.0, -7.0)));
                    polymat::to(Kind::DENSE, data)
                }),
                Box::new(move |i, j| {
                    if pattern(i, j) {
                        x.get(i, j)
                    } else {
                        c64::new(0.0, 0.0)
                    }
                }),
            ));
        }
        for (what, shape, call, def) in &cases {
            let (serial, parallel) = both(call);
            for r in [serial.unwrap(), parallel.unwrap()] {
                let r = r.downcast_ref::<Dense>().unwrap();
                assert_eq!(r.shape(), *shape, "{what}");
                for j in 0..shape.1 {
                    for i in 0..shape.0 {
                        assert_eq!(r.get(i, j), def(i, j), "{what} at ({i}, {j})");
                    }
                }
            }
        }
    }
}

#[test]
fn thread_setting_and_environment() {
    let _g = setting();
    // faer's decompositions follow the same count, at most the pool's size.
    let pool = rayon::current_num_threads();
    let faer_par = |n: usize| match n.min(pool) {
        1 => faer::Par::Seq,
        n => faer::Par::rayon(n),
    };
    polymat::set_threads(3);
    assert_eq!(polymat::threads(), 3);
    assert_eq!(faer::get_global_parallelism(), faer_par(3));
    // Inside a pool of five, the whole count.
    let five = rayon::ThreadPoolBuilder::new()
        .num_threads(5)
        .build()
        .unwrap();
    five.install(|| polymat::set_threads(4));
    assert_eq!(faer::get_global_parallelism(), faer::Par::rayon(4));
    // SAFETY (edition 2024 marks set_var unsafe): the lock keeps this file's other tests out,
    // and nothing else in this test binary reads the environment concurrently.
    unsafe { std::env::set_var(polymat::THREADS_ENV, "5") };
    polymat::set_threads(0);
    assert_eq!(
        polymat::threads(),
        5,
        "the variable is read when no explicit setting exists"
    );
    assert_eq!(faer::get_global_parallelism(), faer_par(5));
    unsafe { std::env::set_var(polymat::THREADS_ENV, "not a number") };
    polymat::set_threads(0);
    assert_eq!(polymat::threads(), rayon::current_num_threads().max(1));
    unsafe { std::env::set_var(polymat::THREADS_ENV, "0") };
    polymat::set_threads(0);
    assert_eq!(polymat::threads(), rayon::current_num_threads().max(1));
    unsafe { std::env::remove_var(polymat::THREADS_ENV) };
    polymat::set_threads(1);
    assert_eq!(polymat::threads(), 1);
    assert_eq!(faer::get_global_parallelism(), faer::Par::Seq);
    polymat::set_threads(0);
    assert_eq!(faer::get_global_parallelism(), faer::Par::rayon(0));
}

/// `POLYMAT_THRESHOLDS` names a calibration file read on first use (checked in a child process,
/// since the environment is read once per process); a bad file leaves the defaults in force.
#[test]
fn thresholds_file_from_the_environment() {
    use polymat::engine::{Thresholds, thresholds};
    match std::env::var("POLYMAT_THRESHOLDS_CHILD").as_deref() {
        Ok("good") => {
            let t = Thresholds::current();
            assert_eq!((t.csr_rows, t.matmul), (8192, 1 << 25));
            assert_eq!(t.elementwise, thresholds::ELEMENTWISE);
            return;
        }
        Ok("bad") => {
            assert_eq!(Thresholds::current(), Thresholds::default());
            assert!(Thresholds::from_env().is_err());
            return;
        }
        _ => {}
    }
    let dir = std::env::temp_dir().join(format!("polymat-thresholds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (mode, text) in [
        ("good", "# 16 threads\nCSR_ROWS = 8192\nMATMUL = 33554432\n"),
        ("bad", "CSR_ROWS = lots\n"),
    ] {
        let file = dir.join(format!("{mode}.txt"));
        std::fs::write(&file, text).unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["thresholds_file_from_the_environment", "--exact"])
            .env("POLYMAT_THRESHOLDS", &file)
            .env("POLYMAT_THRESHOLDS_CHILD", mode)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{mode}: {stdout}");
        assert!(
            stdout.contains("1 passed"),
            "{mode}: the child ran no test: {stdout}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A thread count far beyond the pool splits work among the pool's threads only. With one of
/// a million (`usize::MAX` alike), faer once split a 4 × 4 product (the partial trace of a ket)
/// into a million tasks, and the call ran for minutes.
#[test]
fn a_thread_count_beyond_the_pool_is_capped_by_it() {
    let _g = setting();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let ket = dense(4, 1, 41);
        let a = dense(40, 40, 42);
        let s = csr(300, 300, 5, 43);
        for n in [1_000_000, usize::MAX] {
            polymat::set_threads(n);
            assert_eq!(polymat::threads(), n);
            for force in [true, false] {
                set_force_parallel(force);
                let p = polymat::ptrace(
                    &ket,
                    &polymat::ops::Ptrace {
                        dims: vec![2, 2],
                        keep: vec![0],
                    },
                    Out::Auto,
                )
                .unwrap();
                assert_eq!(p.shape(), (2, 2));
                polymat::matmul(&a, &a, Out::Auto).unwrap();
                polymat::expm(&a, Out::Auto).unwrap();
                polymat::matmul(&s, &s, Out::Auto).unwrap();
                polymat::transpose(&s, Out::Auto).unwrap();
                polymat::ops::norm::frobenius(&a).unwrap();
            }
        }
        set_force_parallel(false);
        polymat::set_threads(0);
        tx.send(()).unwrap();
    });
    rx.recv_timeout(std::time::Duration::from_secs(120))
        .expect("done within two minutes (a second, unloaded)");
}
