//! Reading a large operator takes no hidden copy of it: predicates, norms and the parameters of
//! `expm_multiply` work in place, and results are sized by what they hold. Peak heap memory is
//! measured by a counting global allocator (this file is its own test binary, with one test,
//! so no other test allocates while it measures).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use polymat::ops::ptrace::Ptrace;
use polymat::{Csr, Data, Dense, Kind, Out, c64};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counters only
// observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            PEAK.fetch_max(LIVE.fetch_add(l.size(), Relaxed) + l.size(), Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's pointer, layout and size.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Relaxed);
            PEAK.fetch_max(LIVE.fetch_add(new, Relaxed) + new, Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with (peak bytes above the start, bytes still held by the
/// result when `f` returns).
fn measure<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    let start = LIVE.load(Relaxed);
    PEAK.store(start, Relaxed);
    let r = f();
    let end = LIVE.load(Relaxed);
    (r, PEAK.load(Relaxed) - start, end.saturating_sub(start))
}

fn r(x: f64) -> c64 {
    c64::new(x, 0.0)
}

/// The XXZ chain of `n` spins (open ends), as Csr.
fn xxz(n: usize) -> Data {
    let (o, i) = (r(1.0), c64::new(0.0, 1.0));
    let pauli = |name: char| -> Data {
        let vals = match name {
            'x' => [o, o],
            'y' => [-i, i],
            _ => [o, -o],
        };
        let cols = if name == 'z' { [0, 1] } else { [1, 0] };
        Csr::from_triplets((2, 2), &[0, 1], &cols, &vals)
            .unwrap()
            .into()
    };
    let mut h = polymat::zeros(1 << n, 1 << n, Out::Csr).unwrap();
    for (p, c) in [('x', 1.0), ('y', 1.0), ('z', 0.7)] {
        let pp = polymat::kron(&pauli(p), &pauli(p), Out::Csr).unwrap();
        for s in 0..n - 1 {
            let left = polymat::identity(1 << s, Out::Csr).unwrap();
            let right = polymat::identity(1 << (n - s - 2), Out::Csr).unwrap();
            let term = polymat::kron(
                &polymat::kron(&left, &pp, Out::Csr).unwrap(),
                &right,
                Out::Csr,
            )
            .unwrap();
            h = polymat::add_scaled(&h, &term, r(c), Out::Csr).unwrap();
        }
    }
    h
}

/// A named call, the most it may allocate above its start, and the most its result may hold.
type Call<'a> = (&'a str, Box<dyn Fn() -> Data + 'a>, usize, usize);

#[test]
fn reading_a_large_operator_makes_no_copy() {
    let n = 14;
    let dim = 1usize << n;
    // A diagonal shift, so that expm_multiply's mean of the diagonal is not zero.
    let h = polymat::add_scaled(
        &xxz(n),
        &polymat::identity(dim, Out::Csr).unwrap(),
        r(0.3),
        Out::Auto,
    )
    .unwrap();
    let nnz = h.downcast_ref::<Csr>().unwrap().nnz();
    let csr_bytes = nnz * 24 + (dim + 1) * 8;
    let hd = polymat::to(Kind::DIA, &h).unwrap();
    let dia_bytes = hd.downcast_ref::<polymat::Dia>().unwrap().data().len() * 16;
    let psi: Data = Dense::from_fn(dim, 1, |k, _| c64::new((0.1 * k as f64).cos(), 0.2)).into();
    let ket = dim * 16;
    // What may be allocated besides the operator: n column sums or row cursors (8 bytes
    // each), and a few kilobytes of bookkeeping.
    let small = dim * 8 + (64 << 10);
    let ptrace = Ptrace {
        dims: vec![2; n],
        keep: vec![0],
    };
    // A product state ⊗ₛ (cos θₛ|0⟩ + e^{iφₛ} sin θₛ|1⟩), whose reduced state of spins 1 and
    // 9 is ρ₁ ⊗ ρ₉.
    let spin = |s: usize| (0.3 + 0.2 * s as f64, 0.7 * s as f64);
    let product: Data = Dense::from_fn(dim, 1, |i, _| {
        (0..n).fold(r(1.0), |acc, s| {
            let (theta, phi) = spin(s);
            acc * if i >> (n - 1 - s) & 1 == 0 {
                r(theta.cos())
            } else {
                c64::from_polar(theta.sin(), phi)
            }
        })
    })
    .into();
    let two = Ptrace {
        dims: vec![2; n],
        keep: vec![9, 1],
    };
    let rho = |s: usize| -> Data {
        let (theta, phi) = spin(s);
        let v: Data = Dense::from_fn(2, 1, |i, _| {
            if i == 0 {
                r(theta.cos())
            } else {
                c64::from_polar(theta.sin(), phi)
            }
        })
        .into();
        polymat::project(&v, Out::Dense).unwrap()
    };
    let want = polymat::kron(&rho(1), &rho(9), Out::Dense).unwrap();
    let got = polymat::ptrace(&product, &two, Out::Auto).unwrap();
    assert!(polymat::isequal(&got, &want, 1e-12, 0.0).unwrap());
    let calls: Vec<Call> = vec![
        (
            "isherm Csr",
            Box::new(|| bool_data(polymat::isherm(&h, 1e-12))),
            small,
            4096,
        ),
        (
            "isherm Dia",
            Box::new(|| bool_data(polymat::isherm(&hd, 1e-12))),
            small,
            4096,
        ),
        (
            "isequal Dia",
            Box::new(|| bool_data(polymat::isequal(&hd, &hd, 1e-12, 0.0))),
            small,
            4096,
        ),
        (
            "isdiag Dia",
            Box::new(|| bool_data(polymat::isdiag(&hd, 1e-12))),
            small,
            4096,
        ),
        (
            "norm one Csr",
            Box::new(|| f_data(polymat::ops::norm::one(&h))),
            small,
            4096,
        ),
        (
            "norm one Dia",
            Box::new(|| f_data(polymat::ops::norm::one(&hd))),
            small,
            4096,
        ),
        (
            "norm max Dia",
            Box::new(|| f_data(polymat::ops::norm::max(&hd))),
            small,
            4096,
        ),
        (
            "frobenius Dia",
            Box::new(|| f_data(polymat::ops::norm::frobenius(&hd))),
            small,
            4096,
        ),
        // The result and its working vectors; no copy of the operator (the shifted 1-norm
        // formed h − μI, about 1.2 × csr_bytes).
        (
            "expm_multiply Csr",
            Box::new(|| polymat::expm_multiply(&h, &psi, c64::new(0.0, -0.05), Out::Auto).unwrap()),
            small + 6 * ket,
            ket + 4096,
        ),
        (
            "expm_multiply Dia",
            Box::new(|| {
                polymat::expm_multiply(&hd, &psi, c64::new(0.0, -0.05), Out::Auto).unwrap()
            }),
            small + 6 * ket,
            ket + 4096,
        ),
        // Results sized by what they hold.
        (
            "Dia to Csr",
            Box::new(|| polymat::to(Kind::CSR, &hd).unwrap()),
            csr_bytes + small,
            csr_bytes + 4096,
        ),
        (
            "Dia + Dia",
            Box::new(|| polymat::add(&hd, &hd, Out::Auto).unwrap()),
            dia_bytes + small,
            dia_bytes + 4096,
        ),
        (
            "Csr to Dia",
            Box::new(|| polymat::to(Kind::DIA, &h).unwrap()),
            dia_bytes + nnz * 8 + small,
            dia_bytes + 4096,
        ),
        // The reduced state of two spins of a ket: the ket regrouped, never |ψ⟩⟨ψ|.
        (
            "ptrace ket",
            Box::new(|| polymat::ptrace(&product, &two, Out::Auto).unwrap()),
            2 * ket + small,
            4096,
        ),
        (
            "ptrace Csr",
            Box::new(|| polymat::ptrace(&h, &ptrace, Out::Auto).unwrap()),
            4 * csr_bytes,
            4096,
        ),
    ];
    for (name, f, _, _) in &calls {
        // Warm up: dispatcher tables and lazily built state are allocated once, not per call.
        drop(f());
        let _ = name;
    }
    let mut report = String::new();
    for (name, f, peak_max, held_max) in &calls {
        let (result, peak, held) = measure(f);
        drop(result);
        report += &format!(
            "{name}: peak +{peak} B (at most {peak_max}), held {held} B (at most {held_max})\n"
        );
        assert!(peak <= *peak_max && held <= *held_max, "{report}");
    }
    eprintln!("{report}");
}

fn bool_data(b: polymat::Result<bool>) -> Data {
    f_data(b.map(|b| f64::from(u8::from(b))))
}

fn f_data(x: polymat::Result<f64>) -> Data {
    let x = x.unwrap();
    Dense::from_fn(1, 1, |_, _| r(x)).into()
}
