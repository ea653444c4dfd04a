//! The CUDA kernels of `GpuDense` (`src/gpu/cuda/kernels.cu`) compiled as C++ for the CPU and
//! checked against naive loops (`tests/cuda_emu/`), so their index math is tested on machines
//! without a GPU. Needs a C++17 compiler (`$CXX`, else `c++`); without one the test says so and
//! skips. The GPU itself is tested by `tests/gpu.rs`.

use std::path::Path;
use std::process::Command;

#[test]
fn kernels_match_naive_loops_on_the_cpu() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda_emu");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cuda_kernels_check");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let compiled = Command::new(&cxx)
        .args(["-std=c++17", "-O1", "-include"])
        .arg(dir.join("stub.h"))
        .arg(dir.join("kernels_check.cpp"))
        .arg("-o")
        .arg(&out)
        .output();
    let compiled = match compiled {
        Ok(c) => c,
        Err(e) => {
            eprintln!("skipping: no C++ compiler ({cxx}: {e})");
            return;
        }
    };
    assert!(
        compiled.status.success(),
        "the kernels do not compile as C++:\n{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let run = Command::new(&out).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    eprint!("{stdout}");
    assert!(run.status.success(), "kernel checks failed:\n{stdout}");
    assert!(stdout.contains("all kernel index checks passed"));
}
