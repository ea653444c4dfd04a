//! Times `rayon::join` of two 30 µs busy loops, called from outside the pool, in 40 windows of
//! 20 calls, each window after 2 ms of serial work (as a calibration alternates serial and
//! parallel timings), and prints µs a call per window. With `--pin`, each pool thread is first
//! pinned to a CPU of its own (`polymat::engine::pin_threads`). No polymat kernel runs: this
//! shows how the machine schedules the rayon pool (`docs/benchmarks.md`, "Pool threads stacked
//! on one CPU").
//!
//! With `--in-place`, the calling thread runs one loop itself and hands only the other to the
//! pool.
//!
//! ```sh
//! cargo run --release --example pool_join                 # as the scheduler places them
//! cargo run --release --example pool_join -- --pin        # one CPU a pool thread
//! cargo run --release --example pool_join -- --in-place   # the caller runs one loop
//! ```

use std::time::{Duration, Instant};

fn spin(us: u64) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

fn main() -> polymat::Result<()> {
    if std::env::args().any(|a| a == "--pin") {
        let n = polymat::engine::pin_threads(true)?;
        println!("pinned {n} pool threads");
    }
    // `--in-place`: the calling thread runs one loop itself and hands only the other to the
    // pool (`rayon::in_place_scope`), instead of handing both to the pool and waiting.
    let in_place = std::env::args().any(|a| a == "--in-place");
    let calls = 20;
    let windows: Vec<f64> = (0..40)
        .map(|_| {
            spin(2000);
            let t = Instant::now();
            for _ in 0..calls {
                if in_place {
                    rayon::in_place_scope(|s| {
                        s.spawn(|_| spin(30));
                        spin(30);
                    });
                } else {
                    rayon::join(|| spin(30), || spin(30));
                }
            }
            t.elapsed().as_secs_f64() / f64::from(calls) * 1e6
        })
        .collect();
    let text: Vec<String> = windows.iter().map(|w| format!("{w:.0}")).collect();
    println!("µs a call, per window of {calls}: {}", text.join(" "));
    let stacked = windows.iter().filter(|&&w| w >= 80.0).count();
    println!(
        "{stacked} of {} windows at ≥ 80 µs (both loops on one CPU)",
        windows.len()
    );
    Ok(())
}
