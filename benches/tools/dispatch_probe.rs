//! Instruction-count probe for the dispatch overhead (deterministic, unlike wall-clock time on
//! a shared machine). Run each mode under callgrind and compare totals:
//!
//! ```sh
//! cargo build --release --example dispatch_probe
//! for m in kernel-add dispatch-add kernel-trace dispatch-trace kernel-trace-csr dispatch-trace-csr \
//!          manual-indirect dispatch-indirect; do
//!   for n in 0 200000; do
//!     valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!       target/release/benches/tools/dispatch_probe $m $n 2>&1 | grep refs
//!   done
//! done
//! ```
//!
//! Each mode makes one warm-up call (which builds the registry and the tables), then as many
//! calls as the second argument says (default 200 000). Run every mode with 0 and with N calls:
//! (total(N) − total(0)) / N is the cost of one call. See docs/benchmarks.md.

use std::hint::black_box;

use polymat::ops::{add, trace};
use polymat::{Csr, Data, Dense, Kind, Out, c64};

fn main() {
    let one = c64::new(1.0, 0.0);
    let d = Dense::from_fn(2, 2, |i, j| c64::new(i as f64, j as f64));
    let s = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[one, one]).expect("valid triplets");
    let (dd, sd): (Data, Data) = (d.clone().into(), s.clone().into());
    let mode = std::env::args().nth(1).unwrap_or_default();
    let run: &dyn Fn() = match mode.as_str() {
        "kernel-add" => &|| {
            black_box(
                add::add_dense(black_box(&d), black_box(&d), one)
                    .map(Data::from)
                    .ok(),
            );
        },
        "dispatch-add" => &|| {
            black_box(polymat::add(black_box(&dd), black_box(&dd), Out::Auto).ok());
        },
        "kernel-trace" => &|| {
            black_box(trace::trace_dense(black_box(&d)).ok());
        },
        "dispatch-trace" => &|| {
            black_box(polymat::trace(black_box(&dd)).ok());
        },
        "kernel-trace-csr" => &|| {
            black_box(trace::trace_csr(black_box(&s)).ok());
        },
        "dispatch-trace-csr" => &|| {
            black_box(polymat::trace(black_box(&sd)).ok());
        },
        "manual-indirect" => &|| {
            let r = add::add_csr_dense(black_box(&s), black_box(&d), one).map(Data::from);
            black_box(r.and_then(|r| polymat::to(Kind::CSR, &r)).ok());
        },
        "dispatch-indirect" => &|| {
            black_box(polymat::add(black_box(&sd), black_box(&dd), Out::Csr).ok());
        },
        other => {
            eprintln!("unknown mode {other:?}; see the file's header for the modes");
            std::process::exit(2);
        }
    };
    let calls: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(200_000);
    run();
    for _ in 0..calls {
        run();
    }
}
