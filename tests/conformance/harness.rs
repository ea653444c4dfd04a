//! The suite's machinery: the seven input cases, the shapes, one operation under test ([`Op`])
//! and the runner that checks it against the naive reference in every case and output, plus
//! the helpers of the every-kind tests on small irregular shapes.

use super::common::{self, *};
use polymat::{Csr, Data, Dense, Dia, Error, Out, c64};

pub(crate) const N: usize = 100;

pub(crate) const N_KRON: usize = 5;

pub(crate) const CASES: [&str; 7] = [
    "csr_0.001",
    "csr_0.8_sorted",
    "csr_0.8_unsorted",
    "csr_zero",
    "dense",
    "dense_rowmajor",
    "dia_band",
];

/// The diagonals of the banded case `dia_band` (those that fit the shape are kept).
pub(crate) const DIA_OFFSETS: [isize; 4] = [-2, 0, 1, 5];

/// The five shapes of the suite for size `n`.
pub(crate) fn shapes(n: usize) -> [(usize, usize); 5] {
    [(1, 1), (1, n), (n, 1), (n, n), (2, n)]
}

/// An input of the given case and shape: the reference values and the data.
pub(crate) fn input(case: &str, s: (usize, usize), seed: u64) -> (Ref, Data) {
    let mut rng = Rng::new(seed);
    let density = match case {
        "csr_0.001" => 0.001,
        "csr_zero" => 0.0,
        "dense" | "dense_rowmajor" => 1.0,
        _ => 0.8,
    };
    let mut r = common::random_ref(&mut rng, s.0, s.1, density);
    if case == "dia_band" {
        // Keep the band: entries off the chosen diagonals are zero.
        for (i, row) in r.iter_mut().enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                if !DIA_OFFSETS.contains(&(j as isize - i as isize)) {
                    *x = c64::new(0.0, 0.0);
                }
            }
        }
    }
    if case == "csr_0.001" && r.iter().flatten().all(|x| *x == c64::new(0.0, 0.0)) {
        // keep at least one entry so the case differs from the all-zero one
        r[s.0 / 2][s.1 / 2] = rng.c();
    }
    let data = build(case, &r, &mut rng);
    (r, data)
}

pub(crate) fn build(case: &str, r: &Ref, rng: &mut Rng) -> Data {
    let (m, n) = shape(r);
    match case {
        "dense" => Dense::from_fn(m, n, |i, j| r[i][j]).into(),
        "dense_rowmajor" => {
            let flat: Vec<c64> = r.iter().flatten().copied().collect();
            let d = Dense::from_row_major(m, n, &flat).unwrap();
            assert_eq!(d.layout(), polymat::Layout::RowMajor);
            d.into()
        }
        "dia_band" => {
            // Built from its diagonals (QuTiP's layout: indexed by column), padding zero: the
            // band's, plus any other diagonal an operation's `prep` filled (a Hermitian part).
            let offsets: Vec<isize> = (-(m as isize) + 1..n as isize)
                .filter(|&o| {
                    DIA_OFFSETS.contains(&o)
                        || r.iter().enumerate().any(|(i, row)| {
                            let j = i as isize + o;
                            (0..n as isize).contains(&j) && row[j as usize] != c64::new(0.0, 0.0)
                        })
                })
                .collect();
            let mut data = vec![c64::new(0.0, 0.0); offsets.len() * n];
            for (k, &o) in offsets.iter().enumerate() {
                for j in 0..n {
                    let i = j as isize - o;
                    if (0..m as isize).contains(&i) {
                        data[k * n + j] = r[i as usize][j];
                    }
                }
            }
            Dia::new((m, n), offsets, data).unwrap().into()
        }
        "csr_0.8_unsorted" => {
            // Raw CSR arrays with each row's columns in a shuffled order.
            let (mut indptr, mut indices, mut data) = (vec![0], vec![], vec![]);
            for row in r {
                let mut cols: Vec<usize> =
                    (0..n).filter(|&j| row[j] != c64::new(0.0, 0.0)).collect();
                for k in (1..cols.len()).rev() {
                    cols.swap(k, (rng.next_u64() % (k as u64 + 1)) as usize);
                }
                for j in cols {
                    indices.push(j);
                    data.push(row[j]);
                }
                indptr.push(indices.len());
            }
            Csr::from_raw((m, n), indptr, indices, data).unwrap().into()
        }
        _ => Csr::from_rows(r).unwrap().into(),
    }
}

/// What an operation returns, normalised for comparison.
#[derive(Debug)]
pub(crate) enum Val {
    M(Ref),
    S(c64),
    B(bool),
    List(Vec<Ref>),
}

pub(crate) fn assert_val(got: &Val, want: &Val, what: &str) {
    match (got, want) {
        (Val::M(g), Val::M(w)) => common::assert_ref_close(g, w, what),
        (Val::S(g), Val::S(w)) => assert!(close(*g, *w), "{what}: got {g}, expected {w}"),
        (Val::B(g), Val::B(w)) => assert_eq!(g, w, "{what}"),
        (Val::List(g), Val::List(w)) => {
            assert_eq!(g.len(), w.len(), "{what}: list length");
            for (k, (x, y)) in g.iter().zip(w).enumerate() {
                common::assert_ref_close(x, y, &format!("{what}[{k}]"));
            }
        }
        _ => panic!("{what}: got {got:?}, expected {want:?}"),
    }
}

/// A matrix result: checks the output kind when one was requested.
pub(crate) fn mat(d: polymat::Result<Data>, out: Out) -> polymat::Result<Val> {
    let d = d?;
    if let Some(k) = out.kind() {
        assert_eq!(d.kind(), k, "output kind");
    }
    Ok(Val::M(common::to_ref(&d)))
}

pub(crate) type Expect<'a> = dyn Fn(&[&Ref]) -> Option<Val> + 'a;

pub(crate) type Call<'a> = dyn Fn(&[&Data], Out) -> polymat::Result<Val> + 'a;

/// One operation under test.
pub(crate) struct Op<'a> {
    name: &'a str,
    arity: usize,
    n: usize,
    /// Output kinds to request (matrix results) or just `Auto` (plain values).
    outs: &'a [Out],
    /// Transforms each generated reference input before use (argument index, input).
    prep: &'a (dyn Fn(usize, Ref) -> Ref + 'a),
    /// The reference result, or `None` if the shapes are invalid.
    expect: &'a Expect<'a>,
    call: &'a Call<'a>,
}

pub(crate) const MATRIX_OUTS: [Out; 4] = [Out::Auto, Out::Dense, Out::Csr, Out::Dia];

pub(crate) const VALUE_OUTS: [Out; 1] = [Out::Auto];

pub(crate) fn no_prep(_: usize, r: Ref) -> Ref {
    r
}

/// Runs every shape tuple and case tuple; returns the number of checked cases.
pub(crate) fn run(op: &Op<'_>) -> usize {
    let sh = shapes(op.n);
    let mut tuples: Vec<Vec<(usize, usize)>> = vec![vec![]];
    for _ in 0..op.arity {
        tuples = tuples
            .into_iter()
            .flat_map(|t| {
                sh.iter().map(move |s| {
                    let mut t = t.clone();
                    t.push(*s);
                    t
                })
            })
            .collect();
    }
    let mut count = 0;
    let mut seed = 1u64;
    for t in &tuples {
        // Case tuples: the full product for arity ≤ 2, rotations of the seven cases for 3.
        let case_tuples: Vec<Vec<&str>> = match op.arity {
            1 => CASES.iter().map(|c| vec![*c]).collect(),
            2 => CASES
                .iter()
                .flat_map(|a| CASES.iter().map(move |b| vec![*a, *b]))
                .collect(),
            _ => (0..CASES.len())
                .map(|k| {
                    (0..op.arity)
                        .map(|i| CASES[(k + i) % CASES.len()])
                        .collect()
                })
                .collect(),
        };
        let mut valid = None;
        for cases in &case_tuples {
            seed += 1;
            let (refs, data): (Vec<Ref>, Vec<Data>) = cases
                .iter()
                .zip(t)
                .enumerate()
                .map(|(i, (c, s))| {
                    let (r, _) = input(c, *s, seed * 31 + i as u64);
                    let r = (op.prep)(i, r);
                    let mut rng = Rng::new(seed ^ 0xabcdef);
                    let d = build(c, &r, &mut rng);
                    (r, d)
                })
                .unzip();
            let rr: Vec<&Ref> = refs.iter().collect();
            let dd: Vec<&Data> = data.iter().collect();
            let want = (op.expect)(&rr);
            let what = format!("{} {:?} {:?}", op.name, t, cases);
            match want {
                None => {
                    let got = (op.call)(&dd, Out::Auto);
                    assert!(
                        matches!(got, Err(Error::Shape { .. })),
                        "{what}: expected a shape error, got {got:?}"
                    );
                    count += 1;
                    valid = Some(false);
                    break; // one case tuple is enough for an invalid shape
                }
                Some(want) => {
                    valid = Some(true);
                    for &out in op.outs {
                        let got =
                            (op.call)(&dd, out).unwrap_or_else(|e| panic!("{what} {out:?}: {e}"));
                        assert_val(&got, &want, &format!("{what} {out:?}"));
                        count += 1;
                    }
                }
            }
        }
        let _ = valid;
    }
    println!("{}: {count} cases", op.name);
    count
}

pub(crate) fn zeros(m: usize, n: usize) -> Ref {
    vec![vec![c64::new(0.0, 0.0); n]; m]
}

pub(crate) fn adj(a: &Ref) -> Ref {
    common::map(&transpose(a), |x| x.conj())
}

pub(crate) fn same(a: &Ref, b: &Ref) -> bool {
    shape(a) == shape(b)
}

pub(crate) fn square(a: &Ref) -> bool {
    let (m, n) = shape(a);
    m == n
}

pub(crate) fn entries(a: &Ref) -> impl Iterator<Item = c64> + '_ {
    a.iter().flatten().copied()
}

/// `a + t·I` for square `a`; other shapes unchanged. Makes the suite's random matrices
/// diagonally dominant (well conditioned, spectrum in the right half-plane).
pub(crate) fn shift(a: Ref, t: f64) -> Ref {
    if !square(&a) {
        return a;
    }
    let mut a = a;
    for (i, row) in a.iter_mut().enumerate() {
        row[i] += c64::new(t, 0.0);
    }
    a
}

pub(crate) fn scale(a: &Ref, s: c64) -> Ref {
    common::map(a, |x| x * s)
}

pub(crate) fn vec_entries(a: &Ref) -> Vec<c64> {
    entries(a).collect()
}

/// The left operand of `inner` / `inner_op` as a bra: a 1×n row as it is, an n×1 column
/// conjugated (QuTiP's convention), `None` for a matrix.
pub(crate) fn bra_entries(a: &Ref) -> Option<Vec<c64>> {
    match shape(a) {
        (1, _) => Some(vec_entries(a)),
        (_, 1) => Some(entries(a).map(|x| x.conj()).collect()),
        _ => None,
    }
}

pub(crate) const S: c64 = c64::new(0.5, -1.25);

impl<'a> Op<'a> {
    /// An operation returning a matrix, checked for every output of [`MATRIX_OUTS`] at size
    /// [`N`] on unchanged inputs.
    pub(crate) fn matrix(
        name: &'a str,
        arity: usize,
        expect: &'a Expect<'a>,
        call: &'a Call<'a>,
    ) -> Self {
        Op {
            name,
            arity,
            n: N,
            outs: &MATRIX_OUTS,
            prep: &no_prep,
            expect,
            call,
        }
    }

    /// An operation returning a plain value (no output kind to request).
    pub(crate) fn value(
        name: &'a str,
        arity: usize,
        expect: &'a Expect<'a>,
        call: &'a Call<'a>,
    ) -> Self {
        Op {
            outs: &VALUE_OUTS,
            ..Op::matrix(name, arity, expect, call)
        }
    }

    /// Runs at size `n` instead of [`N`].
    pub(crate) fn n(mut self, n: usize) -> Self {
        self.n = n;
        self
    }

    /// Transforms each generated input first (argument index, input).
    pub(crate) fn prep(mut self, prep: &'a (dyn Fn(usize, Ref) -> Ref + 'a)) -> Self {
        self.prep = prep;
        self
    }
}

// ---------------------------------------------------------------- every kind, small shapes

pub(crate) const OUTS: [Out; 4] = [Out::Auto, Out::Dense, Out::Csr, Out::Dia];

/// Checks the result's values, and its kind when one was requested.
pub(crate) fn check(got: &Data, out: Out, want: &Ref, what: &str) {
    if let Some(k) = out.kind() {
        assert_eq!(got.kind(), k, "{what}: result kind");
    }
    assert_data_close(got, want, what);
}

/// Runs `f` over every pair of input kinds and every output.
pub(crate) fn binary_cases(a: &Ref, b: &Ref, mut f: impl FnMut(&Data, &Data, Out, String)) {
    for ka in KINDS {
        for kb in KINDS {
            for out in OUTS {
                f(
                    &make(a, ka),
                    &make(b, kb),
                    out,
                    format!("({ka}, {kb}) -> {out}"),
                );
            }
        }
    }
}

pub(crate) fn unary_cases(a: &Ref, mut f: impl FnMut(&Data, Out, String)) {
    for ka in KINDS {
        for out in OUTS {
            f(&make(a, ka), out, format!("({ka}) -> {out}"));
        }
    }
}

pub(crate) fn conj_t(a: &Ref) -> Ref {
    map(&transpose(a), |x| x.conj())
}

pub(crate) fn dot(a: &[c64], b: &[c64]) -> c64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

pub(crate) fn col(a: &Ref) -> Vec<c64> {
    a.iter().map(|r| r[0]).collect()
}
