//! Every public operation once on the XXZ chain's H of 2ᴺ dimensions (`examples/common/xxz.rs`)
//! and a dense ket: what each returns (a shape, a value or the error) and how long it took.
//! A check by eye that nothing densifies a large operator, hangs or is killed for memory:
//! operations whose result is dense and too large must be an `Error::TooLarge` in
//! microseconds, everything else sparse.
//!
//! ```sh
//! cargo run --profile bench --example scale_sweep -- 18     # 262 144 dimensions
//! ```

#[path = "../../examples/common/xxz.rs"]
mod xxz;
use polymat::ops::ptrace::Ptrace;
use polymat::{Data, Dense, Kind, Out, c64};
use std::time::Instant;

/// Runs `f` once and prints its time and result (or error) on one line.
fn show<T>(name: &str, f: impl FnOnce() -> polymat::Result<T>)
where
    T: std::fmt::Debug,
{
    let s = Instant::now();
    let r = f();
    let t = s.elapsed().as_secs_f64() * 1e3;
    let d = match &r {
        Ok(v) => {
            let s = format!("{v:?}");
            format!("ok {}", &s[..s.len().min(90)])
        }
        Err(e) => format!("ERR {e}"),
    };
    println!("{name:28} {t:10.2} ms  {d}");
}

fn main() -> polymat::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(18);
    let dim = 1usize << n;
    let h = xxz::xxz(n, 1.0, 0.7)?;
    // `-- 18 dia`: the same sweep with H stored as Dia.
    let h = match std::env::args().nth(2).as_deref() {
        Some("dia") => polymat::to(Kind::DIA, &h)?,
        _ => h,
    };
    println!("H {h:#}");
    let psi: Data = Dense::from_fn(dim, 1, |k, _| {
        c64::new((0.1 * k as f64).cos(), (0.37 * k as f64).sin())
    })
    .into();
    let a = Out::Auto;
    let k = |d: polymat::Result<Data>| d.map(|d| format!("{d:#}"));
    show("ptrace keep 0", || {
        k(polymat::ptrace(
            &h,
            &Ptrace {
                dims: vec![2; n],
                keep: vec![0],
            },
            a,
        ))
    });
    show("ptrace keep half", || {
        k(polymat::ptrace(
            &h,
            &Ptrace {
                dims: vec![2; n],
                keep: (0..n / 2).collect(),
            },
            a,
        ))
    });
    show("ptrace psi keep 2", || {
        k(polymat::ptrace(
            &psi,
            &Ptrace {
                dims: vec![2; n],
                keep: vec![0, n - 1],
            },
            a,
        ))
    });
    show("pow 2", || k(polymat::pow(&h, 2, a)));
    show("pow 0", || k(polymat::pow(&h, 0, a)));
    show("expm", || k(polymat::expm(&h, a)));
    show("sqrtm", || k(polymat::sqrtm(&h, a)));
    show("logm", || k(polymat::logm(&h, a)));
    show("inv", || k(polymat::inv(&h, a)));
    show("svd", || polymat::svd(&h, false).map(|_| ()));
    show("isherm", || polymat::isherm(&h, 1e-12));
    show("isdiag", || polymat::isdiag(&h, 1e-12));
    show("iszero", || polymat::iszero(&h, 1e-12));
    show("isequal", || polymat::isequal(&h, &h, 1e-12, 0.0));
    show("tidyup", || k(polymat::tidyup(&h, 1e-12, a)));
    show("reshape", || k(polymat::reshape(&h, (dim / 2, dim * 2), a)));
    show("column_stack", || k(polymat::column_stack(&h, a)));
    show("column_stack+unstack", || {
        k(polymat::column_unstack(
            &polymat::column_stack(&h, a)?,
            dim,
            a,
        ))
    });
    show("split_columns", || {
        polymat::split_columns(&h).map(|v| v.len())
    });
    show("project psi", || k(polymat::project(&psi, a)));
    show("block_extract", || {
        k(polymat::block_extract(&h, (0..dim / 2, 0..dim / 2), a))
    });
    show("kron_transpose", || {
        k(polymat::kron_transpose(&h, &polymat::identity(2, a)?, a))
    });
    show("matmul_dag HH", || k(polymat::matmul_dag(&h, &h, a)));
    show("matmul_dag psi psi", || {
        k(polymat::matmul_dag(&psi, &psi, a))
    });
    show("inner", || polymat::inner(&psi, &psi));
    show("inner_op", || polymat::inner_op(&psi, &h, &psi));
    show("trace_oper_ket", || {
        polymat::trace_oper_ket(&polymat::column_stack(&h, a)?)
    });
    show("mean_nonzero", || polymat::mean_nonzero(&h));
    show("mean_abs_nonzero", || polymat::mean_abs_nonzero(&h));
    show("norm l2 psi", || polymat::ops::norm::l2(&psi));
    show("norm one", || polymat::ops::norm::one(&h));
    show("norm max", || polymat::ops::norm::max(&h));
    show("norm fro", || polymat::ops::norm::frobenius(&h));
    show("norm trace", || polymat::ops::norm::trace(&h));
    show("to Dia", || k(polymat::to(Kind::DIA, &h)));
    show("to Dense", || k(polymat::to(Kind::DENSE, &h)));
    let hd = polymat::to(Kind::DIA, &h);
    if let Ok(hd) = hd {
        show("Dia + Csr", || k(polymat::add(&hd, &h, a)));
        show("Dia * Dia", || k(polymat::matmul(&hd, &hd, a)));
        show("Dia * psi", || k(polymat::matmul(&hd, &psi, a)));
        show("Dia adjoint", || k(polymat::adjoint(&hd, a)));
        show("Dia trace", || polymat::trace(&hd));
        show("Dia expect", || polymat::expect(&hd, &psi));
        show("Dia kron I2", || {
            k(polymat::kron(&hd, &polymat::identity(2, a)?, a))
        });
    }
    let bra = polymat::adjoint(&psi, a)?;
    let small: Data = Dense::from_fn(2, 2, |i, j| c64::new(i as f64 + 1.0, j as f64)).into();
    show("bra * H", || k(polymat::matmul(&bra, &h, a)));
    show("matmul_dag bra H", || k(polymat::matmul_dag(&bra, &h, a)));
    show("matmul_dag H bra", || k(polymat::matmul_dag(&h, &bra, a)));
    show("kron Dense2 H", || k(polymat::kron(&small, &h, a)));
    show("kron H Dense2", || k(polymat::kron(&h, &small, a)));
    show("kron_transpose Dense2 H", || {
        k(polymat::kron_transpose(&small, &h, a))
    });
    show("block_overwrite H Dense2", || {
        k(polymat::block_overwrite(&h, &small, (4, 4), a))
    });
    show("H * psi", || k(polymat::matmul(&h, &psi, a)));
    show("psi^T H", || {
        k(polymat::matmul(&polymat::transpose(&psi, a)?, &h, a))
    });
    show("H*H Dense out", || k(polymat::matmul(&h, &h, Out::Dense)));
    show("multiply H H", || k(polymat::multiply(&h, &h, a)));
    show("expect_super", || {
        polymat::expect_super(&polymat::kron(&h, &h, a)?, &polymat::column_stack(&h, a)?)
    });
    show("kron H H", || k(polymat::kron(&h, &h, a)));
    show("identity_like", || k(polymat::identity_like(&h, a)));
    show("zeros_like", || k(polymat::zeros_like(&h, a)));
    show("expm_multiply", || {
        k(polymat::expm_multiply(&h, &psi, c64::new(0.0, -0.1), a))
    });
    show("eigs default", || {
        polymat::eigs(&h, Default::default()).map(|e| e.values.len())
    });
    Ok(())
}
