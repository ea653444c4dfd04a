//! Failures on one MPI rank are errors on every rank, without an abort or a hang (feature
//! `mpi`).
//!
//! Run by `cargo test --features mpi --test mpi_faults`: the test reruns its own binary under
//! `mpirun -n 2` and `mpirun -n 4` (with `--oversubscribe`, so a 2-core machine runs 4 ranks)
//! and fails if a run does not end within its timeout (a hang), ends with a non-zero status (an
//! abort, a panic, or a rank whose calls did not all fail as expected), or a rank does not
//! report. Under `mpirun` each rank runs the scenarios below and checks, for every one, that
//! its call returned `Err` — the failing rank its own error, the others
//! `Error::Distributed` naming it — and that a correct collective call right after gives the
//! right value on every rank (the ranks are still in step).
#![cfg(feature = "mpi")]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use polymat::mpi::{self, DistCsr, DistDense};
use polymat::{Csr, Data, Dense, Dispatcher, Error, Out, Specialisation, c64};

const CHILD: &str = "POLYMAT_MPI_FAULTS_CHILD";
/// Seconds a run may take before it counts as a hang (`POLYMAT_MPI_FAULTS_TIMEOUT` overrides).
const TIMEOUT_S: u64 = 240;

fn main() {
    if std::env::var_os(CHILD).is_some() {
        std::process::exit(child());
    }
    let exe = std::env::current_exe().expect("the test's own path");
    let mut failed = false;
    for ranks in [2, 4] {
        match run_under_mpirun(&exe, ranks) {
            Ok(()) => println!("mpi_faults: {ranks} ranks: every fault was an error on every rank"),
            Err(why) => {
                eprintln!("mpi_faults: {ranks} ranks: {why}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}

/// Runs this binary on `ranks` processes; `Err` with the reason unless every rank reported
/// success within the timeout.
fn run_under_mpirun(exe: &std::path::Path, ranks: usize) -> Result<(), String> {
    let mut child = Command::new("mpirun")
        .args(["--oversubscribe", "--allow-run-as-root", "-x", CHILD, "-n"])
        .arg(ranks.to_string())
        .arg(exe)
        .env(CHILD, "1")
        // One thread per rank: four ranks on two cores must not also start thread pools.
        .env("RAYON_NUM_THREADS", "1")
        .env("POLYMAT_THREADS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start mpirun ({e}); install openmpi-bin"))?;
    let timeout = Duration::from_secs(
        std::env::var("POLYMAT_MPI_FAULTS_TIMEOUT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(TIMEOUT_S),
    );
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > timeout => {
                // SIGTERM first: mpirun then stops its ranks (SIGKILL would orphan them).
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
                std::thread::sleep(Duration::from_secs(3));
                let _ = child.kill();
                let out = child.wait_with_output().map_err(|e| e.to_string())?;
                return Err(format!(
                    "no end after {timeout:?}: a rank hangs\n{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e.to_string()),
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    if !out.status.success() {
        return Err(format!("exit status {}\n{stderr}", out.status));
    }
    for r in 0..ranks {
        let line = format!("rank {r}/{ranks}: all faults were errors");
        if !stdout.contains(&line) {
            return Err(format!("rank {r} did not report\n{stderr}"));
        }
    }
    Ok(())
}

/// One rank's run: the exit status is the number of failed expectations.
fn child() -> i32 {
    let mpi = match mpi::init() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("mpi::init: {e}");
            return 1;
        }
    };
    let (rank, size) = (mpi.rank(), mpi.size());
    let last = size - 1;
    let n = 48;
    let h = chain(n);
    let hd = Data::new(DistCsr::from_global(&h).expect("the operator")).expect("registered");
    let psi = ket(n);
    let want = polymat::expect(&h.clone().into(), &psi.clone().into()).expect("one process");
    let fails = std::cell::Cell::new(0);
    let check = |name: &str, failing: usize, r: polymat::Result<()>| {
        let ok = match (&r, rank == failing) {
            (Err(Error::Distributed { rank: who, .. }), false) => *who == failing,
            (Err(Error::Distributed { .. }), true) => false,
            (Err(_), true) => true,
            _ => false,
        };
        if !ok {
            eprintln!("rank {rank}: {name}: expected an error from rank {failing}, got {r:?}");
            fails.set(fails.get() + 1);
        }
        // The ranks are still in step: a correct collective call agrees with one process.
        match polymat::expect(&hd, &Data::from(psi.clone())) {
            Ok(e) if (e - want).norm() <= 1e-10 * want.norm().max(1.0) => {}
            other => {
                eprintln!("rank {rank}: after {name}: expect gave {other:?}, want {want}");
                fails.set(fails.get() + 1);
            }
        }
    };

    // Mismatched partitions: the last rank believes the vector has one more row. The shape
    // check fails there before the call; the others are converting the vector already.
    let bad = if rank == last {
        ket(n + 1)
    } else {
        psi.clone()
    };
    let r = polymat::matmul(&hd, &Data::from(bad.clone()), Out::Auto).map(drop);
    check("matmul, mismatched vector", last, r);
    // The same disagreement in a constructor: every rank sees the shapes differ.
    let r = DistDense::from_global(&bad).map(drop);
    match r {
        Err(Error::Distributed { .. }) => {}
        other => {
            eprintln!("rank {rank}: from_global with mismatched shapes gave {other:?}");
            fails.set(fails.get() + 1);
        }
    }
    // A local block of the wrong length on rank 0 only.
    let local_rows = mpi::block(n, size, rank).len();
    let local = Dense::from_fn(local_rows + usize::from(rank == 0), 1, |_, _| {
        c64::new(1.0, 0.0)
    });
    check(
        "DistDense::from_local, wrong block on rank 0",
        0,
        DistDense::from_local(n, local).map(drop),
    );

    // The dense limit lowered on one rank only: its gather (and its split of a global vector
    // inside a dispatched call) is too large there, and only there.
    let x = DistDense::from_global(&psi).expect("split");
    polymat::set_dense_limit(if rank == 0 { 64 } else { 0 });
    let gathered = x.gather().map(drop);
    let split = polymat::matmul(&hd, &Data::from(psi.clone()), Out::Auto).map(drop);
    polymat::set_dense_limit(0);
    check("gather over rank 0's dense limit", 0, gathered);
    check("matmul, the split over rank 0's dense limit", 0, split);

    // A user's kernel on a distributed kind that panics on one rank, and one that returns an
    // error on another.
    let failing = 1 % size;
    let boom = Dispatcher::<()>::builder("my_op", 1)
        .specialisation(Specialisation::unary(
            "my_kernel",
            move |a: &DistDense, _: &()| {
                if rank == failing {
                    panic!("my_kernel fails on rank {rank}");
                }
                Ok(a.clone())
            },
        ))
        .build()
        .expect("a user's dispatcher");
    let xd = Data::new(x.clone()).expect("registered");
    let r = boom.call(&[&xd], Out::Auto, &()).map(drop);
    if rank == failing && !matches!(r, Err(Error::KernelPanicked { .. })) {
        eprintln!("rank {rank}: the panic became {r:?}");
        fails.set(fails.get() + 1);
    }
    check("a user's kernel that panics", failing, r);
    let erring = Dispatcher::<()>::builder("my_op2", 1)
        .specialisation(Specialisation::unary(
            "my_kernel2",
            move |a: &DistDense, _: &()| {
                if rank == last {
                    return Err(Error::Numerical {
                        op: "my_op2".into(),
                        reason: "did not converge here".into(),
                    });
                }
                Ok(a.clone())
            },
        ))
        .build()
        .expect("a user's dispatcher");
    let r = erring.call(&[&xd], Out::Auto, &()).map(drop);
    check("a user's kernel that fails", last, r);

    // A row function that panics on the last rank while the operator is being built.
    let r = DistCsr::from_row_fn(n, n, |i| {
        if rank == last && i + 1 == n {
            panic!("row {i} cannot be built");
        }
        vec![(i, c64::new(1.0, 0.0))]
    })
    .map(drop);
    check("from_row_fn, a panicking row", last, r);

    if fails.get() == 0 {
        println!("rank {rank}/{size}: all faults were errors");
    }
    fails.get()
}

/// A Hermitian tridiagonal `n × n` operator.
fn chain(n: usize) -> Csr {
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        r.push(i);
        c.push(i);
        v.push(c64::new(i as f64 / n as f64, 0.0));
        if i + 1 < n {
            r.extend([i, i + 1]);
            c.extend([i + 1, i]);
            v.extend([c64::new(0.5, 0.25), c64::new(0.5, -0.25)]);
        }
    }
    Csr::from_triplets((n, n), &r, &c, &v).expect("a valid operator")
}

fn ket(n: usize) -> Dense {
    Dense::from_fn(n, 1, |i, _| c64::new((i as f64).sin(), 0.1))
}
