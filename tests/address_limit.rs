//! Under an address-space limit (`ulimit -v`, as batch schedulers and containers set) the
//! requests too large for it return `Error::TooLarge` instead of aborting the process: the
//! memory checks read `RLIMIT_AS` / `RLIMIT_DATA` beside `/proc/meminfo` and cgroups.
//!
//! The parent test runs this binary again as a child under `ulimit -v` (4 GiB), where
//! `under_the_limit` calls each listed operation; an abort there ends the child with a signal,
//! which the parent reports.

use std::process::Command;

use polymat::{Csr, Data, Dense, Error, Out, c64};

/// Set in the child's environment.
const CHILD: &str = "POLYMAT_ADDRESS_LIMIT_CHILD";

/// 4 GiB, in the KiB `ulimit -v` takes.
const LIMIT_KIB: u64 = 4 << 20;

#[test]
fn no_listed_operation_aborts_under_an_address_space_limit() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {LIMIT_KIB} && exec \"$0\" --exact under_the_limit --nocapture --test-threads 1"
        ))
        .arg(&exe)
        .env(CHILD, "1")
        .output()
        .expect("sh runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the child failed: {:?}\n{text}",
        out.status
    );
    assert!(text.contains("every listed operation returned"), "{text}");
}

fn too_large(what: &str, r: polymat::Result<Data>) {
    match r {
        Err(Error::TooLarge { .. }) => println!("{what}: TooLarge"),
        other => panic!("{what}: expected Error::TooLarge, got {other:?}"),
    }
}

/// The child's half: runs only under the parent's limit (a plain run returns at once).
#[test]
fn under_the_limit() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let room = polymat::engine::available_memory().expect("a limit is set");
    assert!(room <= LIMIT_KIB * 1024, "available {room} over the limit");

    // A full Csr ket of 10⁶ entries: its projector has 10¹² (it aborted on a 2 GiB reserve).
    let n = 1_000_000;
    let rows: Vec<usize> = (0..n).collect();
    let ket: Data = Csr::from_triplets((n, 1), &rows, &vec![0; n], &vec![c64::new(1e-3, 0.0); n])
        .unwrap()
        .into();
    too_large("project, Csr", polymat::project(&ket, Out::Csr));
    too_large("project, Dense", polymat::project(&ket, Out::Dense));
    // Outer product and Kronecker products far past 4 GiB, sparse and dense results.
    let bra = polymat::adjoint(&ket, Out::Auto).unwrap();
    too_large("matmul ket·bra", polymat::matmul(&ket, &bra, Out::Auto));
    let d: Data = Dense::from_fn(2000, 2000, |i, j| c64::new((i + j) as f64, 1.0)).into();
    too_large("kron Dense", polymat::kron(&d, &d, Out::Dense));
    too_large("kron Csr", polymat::kron(&d, &d, Out::Csr));
    // Constructors: the fallible ones say TooLarge; an empty shape is not an allocation.
    assert!(matches!(
        Dense::try_zeros(100_000, 100_000),
        Err(Error::TooLarge { .. })
    ));
    assert_eq!(
        Dense::try_zeros(0, usize::MAX).unwrap().shape(),
        (0, usize::MAX)
    );
    assert!(matches!(
        Csr::try_identity(1 << 40),
        Err(Error::TooLarge { .. })
    ));
    println!("every listed operation returned an error");
}
